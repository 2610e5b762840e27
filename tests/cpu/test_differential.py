"""The differential check (``tests/differential.py``): every contract's
valid call and one invalid call of each, compiled for the GPU (compile
only, sm_90a) in the test's process and run in the simulator in another,
at the same time; the two must agree on acceptance, with the same words.
The closing line gives the count of programs compared.  Each program's GPU
compile happens once per process: test_adversarial_device.py compiles the
same programs, and ``make test`` runs the two files in one worker
(tests/conftest.py, ``SHARED_WORKER``).

``test_every_case_agrees`` (``slow``) runs every case of every contract."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: disagreements the check found that are not fixed yet (a pattern of the
#: programs' ids), and why; a full run fails when one of them agrees again
KNOWN: dict[str, str] = {}


def _known(pid: str) -> bool:
    return any(re.search(p, pid) for p in KNOWN)


def _simulator(full: bool) -> subprocess.Popen:
    """The simulator's verdicts, in a process of its own (the simulator must
    be on before numba.cuda is imported)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["NUMBA_ENABLE_CUDASIM"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [sys.executable, "-m", "tests.differential", "sim"] + (["--all"] if full else [])
    # into files, not pipes: a run started early writes every verdict
    # before anyone reads them
    out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=err, text=True)
    proc.files = (out, err)
    return proc


def _verdicts(proc: subprocess.Popen, timeout: int) -> dict:
    proc.wait(timeout=timeout)
    out, err = proc.files
    out.seek(0)
    err.seek(0)
    text, errors = out.read(), err.read()
    out.close()
    err.close()
    assert proc.returncode == 0, errors[-3000:]
    return {r["id"]: r for r in map(json.loads, text.splitlines())}


#: the simulator's verdicts of every case by statement, once per process:
#: the quick check reads its programs (a subset) from them where the full
#: check runs in the same session
_SIM_ALL: dict = {}
#: the simulator's run of every case, started early (``start_simulator_run``)
_SIM_RUN: dict[str, subprocess.Popen] = {}


def start_simulator_run() -> None:
    """Start the simulator's run of every case now, once per process, so
    that it runs while this worker compiles the adversarial suite's programs
    (tests/conftest.py starts it with that file where the full check is
    selected)."""
    if not _SIM_ALL and "all" not in _SIM_RUN:
        _SIM_RUN["all"] = _simulator(True)


def stop_simulator_run() -> None:
    """End an early simulator run nobody read (the session ends)."""
    proc = _SIM_RUN.pop("all", None)
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


def compare(full: bool, timeout: int, reuse: bool = False) -> tuple[int, int, dict]:
    """(programs compared, inconclusive, {id: disagreement}).  The GPU
    compile runs in this process (``differential.compile_outcome``: each
    program once per process, shared with test_adversarial_device.py) while
    the simulator runs in its own; with ``reuse`` the simulator runs every
    case (once per process) and the programs' verdicts are read from those."""
    from tests import differential

    every = full or reuse
    if every:
        proc = None if _SIM_ALL else _SIM_RUN.pop("all", None) or _simulator(True)
    else:
        proc = _simulator(False)
    try:
        g = {pid: {"stmt": stmt, **differential.compile_verdict(stmt)}
             for pid, stmt in differential.programs(full)}
        if proc is not None:
            s = _verdicts(proc, timeout)
            if every:
                _SIM_ALL.update({r["stmt"]: r for r in s.values()})
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
    if every:
        s = {pid: _SIM_ALL[a["stmt"]] for pid, a in g.items()}
    assert g.keys() == s.keys()
    compared, inconclusive, bad = 0, 0, {}
    for pid, a in g.items():
        b = s[pid]
        if b["accepted"] is None:  # a call in its arguments stopped the kernel first
            inconclusive += 1
            continue
        compared += 1
        if a["accepted"] != b["accepted"] or (not a["accepted"] and a["words"] != b["words"]):
            bad[pid] = (f"{a['stmt']}\n    GPU compile: {a.get('words', 'accepts')}\n"
                        f"    simulator:   {b.get('words', 'accepts (' + b.get('ran', 'ran') + ')')}")
    return compared, inconclusive, bad


def _check(full: bool, timeout: int, least: int, reuse: bool = False) -> None:
    compared, inconclusive, bad = compare(full, timeout, reuse)
    new = {k: v for k, v in bad.items() if not _known(k)}
    fixed = [p for p in KNOWN if not any(re.search(p, k) for k in bad)]
    print(f"\ndifferential check: {compared} programs compared (GPU compile for sm_90a vs the "
          f"simulator), {compared - len(bad)} agree, {len(bad)} known disagreements, "
          f"{inconclusive} inconclusive (a call in the arguments stopped the simulated kernel "
          "first)")
    assert not new, f"{len(new)} programs disagree:\n" + "\n".join(new.values())
    if full:
        assert not fixed, f"fixed (remove from KNOWN): {fixed}"
    assert compared >= least, compared


def test_gpu_compile_and_simulator_agree(request):
    # where the full check runs in this session too, the simulator runs
    # every case once and this check reads its programs from that run
    full_too = any(item.name == "test_every_case_agrees" for item in request.session.items)
    _check(full=False, timeout=3000 if full_too else 300, least=160, reuse=full_too)


@pytest.mark.slow
def test_every_case_agrees():
    _check(full=True, timeout=3000, least=1700)
