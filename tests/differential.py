"""The differential check: each program is compiled for the GPU (compile
only, sm_90a: no GPU needed) and run in the simulator, and the two must
agree on acceptance: what one refuses the other refuses, with the same
words.

The programs are the contracts of every public device function
(``tests/cpu/adversarial_contracts.py``): each one's valid call and its
invalid calls (an argument replaced by a value its kind never accepts, an
unknown keyword, an argument left out), each in the contracts' kernel.

A program's verdict in each layer is one JSON line: accepted, or refused
with the package's words (the message's lead: for the GPU compile the
``TypingError`` numba reports, for the simulator the exception it raised,
each without the layer's decoration: numba's "Rejected as ..." frame, the
simulator's thread prefix and ``[block .. thread ..]`` suffix, and the
rendering of the refused value's type after ", got", which differs because
the simulator types Python values).  In the simulator a run-time rule
(``SimulatorError``, ``DeadlockError``) or a launch refusal means the
kernel got past typing: accepted, as the compile-only layer accepts it.

    python -m tests.differential compile [--all]
    NUMBA_ENABLE_CUDASIM=1 python -m tests.differential sim [--all]

Without ``--all``: every contract's valid call and one invalid call of each
(a different kind of refusal from contract to contract), which keeps the
check under a minute; ``--all``: every case (about 1800 programs, minutes).
"""

from __future__ import annotations

import json
import linecache
import os
import re
import sys

SIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def programs(full: bool = False) -> list[tuple[str, str]]:
    """(id, statement) of every program: the contracts' calls."""
    from tests.cpu.adversarial_contracts import CONTRACTS, invalid_cases, valid_call

    out = []
    for i, api in enumerate(sorted(CONTRACTS)):
        out.append((f"{api}: valid", valid_call(api)))
        cases = invalid_cases(api)
        pick = cases if full else [cases[(i * 7) % len(cases)]]
        for j, (words, stmt, what) in enumerate(pick):
            out.append((f"{api}: {what} ({words})" + (f" #{j}" if full else ""), stmt))
    return out


_LEAD = re.compile(r"(?:TypingError|ContractError): (.+)")


def words(text: str) -> str:
    """The package's message in ``text``, without the layer's decoration."""
    hits = _LEAD.findall(text)
    # numba's frame around an error raised while lowering: "Failed in cuda
    # mode pipeline (step: ...)" lines before the message
    lines = [ln for ln in text.strip().splitlines() if ln.strip() and not ln.startswith("Failed in ")]
    msg = hits[-1] if hits else lines[0] if lines else ""
    msg = re.sub(r"^tid=\[[^\]]*\] ctaid=\[[^\]]*\]: ", "", msg)
    msg = re.sub(r"^(numba_asynccopy simulator|numba_asynccopy checked mode): ", "", msg)
    msg = re.sub(r" \[block \([\d,]+\) thread \([\d,]+\)\]$", "", msg)
    return re.sub(r", got .*$", "", msg).strip()


def _kernel(stmt: str):
    import numpy as np
    from numba import cuda

    import numba_asynccopy as ac
    from tests.cpu.adversarial_contracts import KERNEL

    src = KERNEL.format(call=stmt)
    name = f"<differential kernel {abs(hash(src))}>"
    # a source the simulator can read: it tells a run-time value from a constant
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    g = {"cuda": cuda, "np": np, "ac": ac}
    exec(compile(src, name, "exec"), g)
    return g["k"]


#: the GPU compile of each statement in this process: its PTX or the
#: exception that refused it (the adversarial suite compiles the same
#: programs; under ``make test`` both files run in one worker and each
#: program is compiled once)
_COMPILED: dict[str, object] = {}


def compile_outcome(stmt: str):
    """The PTX of the contracts' kernel around ``stmt`` compiled for sm_90a
    (the warpgroup MMA's forms need the arch-specific target), or the
    exception that refused it; compiled once per process."""
    if stmt not in _COMPILED:
        import warnings

        from numba import cuda

        from tests.cpu.test_adversarial_device import SIG

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _COMPILED[stmt] = cuda.compile_ptx(_kernel(stmt), SIG, cc=(9, 0, "a"))[0]
        except Exception as e:  # noqa: BLE001 - every refusal is an outcome
            _COMPILED[stmt] = e
    return _COMPILED[stmt]


def compile_verdict(stmt: str) -> dict:
    e = compile_outcome(stmt)
    if isinstance(e, Exception):
        return {"accepted": False, "kind": type(e).__name__, "words": words(str(e))}
    return {"accepted": True}


def sim_verdict(stmt: str) -> dict:
    import numpy as np
    from numba import cuda

    import numba_asynccopy as ac
    from numba_asynccopy.host import tensor_map as _tm
    from numba_asynccopy.host.launch import ClusterLaunchError

    k = cuda.jit(_kernel(stmt))
    # a grid every cluster shape of the contracts divides (the launch's own
    # check must not stop the kernel before its call is typed); one warp, for
    # the warp-collective calls; a tensor map buffer of the right size
    grid = 16 if "cluster_dims" in stmt else 1
    args = (np.zeros(64, np.uint32), np.int32(1), np.float32(1.5), np.zeros((64, 8), np.float32),
            np.zeros(_tm.BUFFER_WORDS, np.uint64), np.int64(2**40))
    api = stmt.split("ac.", 1)[1].split("(", 1)[0]
    try:
        k[grid, 32](*args)
    except ClusterLaunchError as e:
        said = words(str(e))
        if said.startswith(f"{api}: "):  # the cluster shape the kernel declares: refused
            return {"accepted": False, "kind": type(e).__name__, "words": said}
        return {"accepted": True, "ran": said}  # the launch's own check: past typing
    except ac.sim.SimulatorError as e:
        said = words(str(e))
        if said.startswith((f"{api}: ", "block (")):
            # the call itself broke a run-time rule, or the kernel ran to its end
            return {"accepted": True, "ran": said}
        # a call in its arguments stopped first (a barrier not initialised ...):
        # the call itself was never typed
        return {"accepted": None, "ran": said}
    except Exception as e:  # noqa: BLE001 - every refusal is a verdict
        return {"accepted": False, "kind": type(e).__name__, "words": words(str(e))}
    return {"accepted": True}


def main(argv: list[str]) -> int:
    layer, full = argv[0], "--all" in argv
    if (layer == "sim") != SIM:
        print(f"the {layer} layer runs {'with' if layer == 'sim' else 'without'} "
              "NUMBA_ENABLE_CUDASIM=1", file=sys.stderr)
        return 2
    import warnings

    warnings.simplefilter("ignore")
    verdict = sim_verdict if layer == "sim" else compile_verdict
    for pid, stmt in programs(full):
        print(json.dumps({"id": pid, "stmt": stmt, **verdict(stmt)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
