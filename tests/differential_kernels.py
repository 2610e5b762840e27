"""The differential census of real programs: every kernel that the GPU
functional tests (``tests/gpu``, the examples among them), the ```python
blocks of README.md and the docs, and the notebooks launch, compiled for
the GPU (compile only, sm_90a: no GPU needed) and run in the simulator;
the two must agree on acceptance: what one refuses the other refuses, with
the same words (``tests.differential.words``).

It runs in two layers:

1. the simulator layer runs the programs under ``NUMBA_ENABLE_CUDASIM=1``
   with the recorder installed (``DIFFERENTIAL_RECORD=DIR`` in the
   environment: ``tests/conftest.py``, ``tests/docs/docblocks.py`` and
   ``tests/notebooks/execnb.py`` install it, so the subprocesses the tests
   start record too).  Each launch writes one JSON line: where it ran (the
   test, block or cell), the kernel (its code, and what its code reads from
   its globals and closure: modules and the package's functions by name,
   device functions the same way, constants by value), the Numba types of
   its arguments (what the GPU's dispatcher would compile for) and the
   simulator's verdict: accepted (it ran, or a run-time rule stopped it:
   past typing), or refused with the words of its exception;
2. the compile layer rebuilds each recorded kernel without the simulator
   and compiles it for the recorded argument types (``cuda.compile_ptx``,
   sm_90a, in the checked mode the launch had).

    python -m tests.differential_kernels census [--quick] [--dir=DIR [--rerun=SRC,...]]

runs both and prints one line per disagreement, then the counts; a
kernel whose globals cannot be rebuilt outside the simulator (a Python
object that is neither a constant nor a named function) is inconclusive.
``--dir``: keep the records and the compile verdicts there (a second run
compares them again without running the programs; delete the directory
after changing the package); ``--rerun``: run those sources again first (a test
file or node, a docs page, a notebook, as the records name them).
``--quick``: the README's programs and a few GPU tests (:data:`QUICK`; about
a minute: ``tests/cpu/test_differential_kernels.py``).
"""

from __future__ import annotations

import base64
import functools
import glob
import hashlib
import json
import marshal
import os
import pickle
import subprocess
import sys
import tempfile
import time
import types as pytypes
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = "DIFFERENTIAL_RECORD"

_DATA = (int, float, complex, bool, str, bytes, type(None), range, slice)


# --- freezing a kernel in the simulator, thawing it without ----------------------------

class Unfrozen(Exception):
    """A global or closure value the compile layer cannot rebuild."""


def _is_data(v) -> bool:
    import numpy as np
    from numba.core import types as nbtypes

    if isinstance(v, _DATA) or isinstance(v, (np.generic, np.dtype, nbtypes.Type)):
        return True
    if isinstance(v, type) and issubclass(v, np.generic):
        return True
    if isinstance(v, np.ndarray):
        return v.dtype != object
    if isinstance(v, (tuple, list, frozenset)):
        return all(_is_data(x) for x in v)
    return False


def _names(code) -> set:
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, pytypes.CodeType):
            out |= _names(c)
    return out


def _named(v, prefer: str | None = None):
    """(module, attribute) under which ``v`` is reachable, or None: the
    package's namespaces first (in the simulator its names are bound to the
    simulator's twins, whose own module differs), under the name ``prefer``
    first (the name a kernel imported it as: ``_carve`` is the simulator's
    ``_carve_sim`` too)."""
    import numba_asynccopy as ac

    mods = [ac] + [m for n, m in sorted(sys.modules.items())
                   if n.startswith("numba_asynccopy.") and m is not None]
    if prefer:
        for mod in mods:
            if vars(mod).get(prefer) is v:
                return (mod.__name__, prefer)
    for mod in mods:
        for k, x in vars(mod).items():
            if x is v and not k.startswith("__"):
                return (mod.__name__, k)
    mod, qual = getattr(v, "__module__", None), getattr(v, "__qualname__", None)
    if mod and qual and "<" not in qual and mod in sys.modules:
        obj = sys.modules[mod]
        try:
            for part in qual.split("."):
                obj = getattr(obj, part)
        except AttributeError:
            return None
        if obj is v:
            return (mod, qual)
    return None


def _freeze_value(v, seen, home=None, name=None):
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    if isinstance(v, pytypes.ModuleType):
        return ["module", v.__name__]
    if isinstance(v, FakeCUDAKernel):
        named = _named(v, name)
        if named and not named[0].startswith("numba_asynccopy"):
            return ["attr", *named]
        return ["device", freeze(v.fn, seen), getattr(v, "_differential_options", {})]
    if _is_data(v):
        return ["data", base64.b64encode(pickle.dumps(v)).decode()]
    if home is not None:
        # a global of an importable module, by its name there: where the
        # module binds a different object outside the simulator (an
        # intrinsic there, its simulator twin here), the compile takes that
        return ["attr", *home]
    named = _named(v, name)
    if named is not None:
        return ["attr", *named]
    if isinstance(v, pytypes.FunctionType):
        # a plain function a kernel calls: in the simulator, what the GPU
        # compiles as a device function (``cuda.jit(device=True)`` where
        # not ``ac.sim.ENABLED``)
        return ["device", freeze(v, seen), {}]
    raise Unfrozen(f"{type(v).__name__} {v!r:.60}")


def freeze(fn, seen=None) -> dict:
    """The kernel ``fn`` (a Python function) as JSON: its code, and the
    globals and closure values its code reads."""
    seen = set() if seen is None else seen
    if id(fn) in seen:
        raise Unfrozen(f"recursive {fn.__name__}")
    seen = seen | {id(fn)}
    g, missing = {}, {}
    for n in sorted(_names(fn.__code__)):
        if n in fn.__globals__:
            mod = sys.modules.get(fn.__globals__.get("__name__", ""))
            home = ((mod.__name__, n) if mod is not None and getattr(mod, "__file__", None)
                    and vars(mod).get(n) is fn.__globals__[n] else None)
            try:
                g[n] = _freeze_value(fn.__globals__[n], seen, home, n)
            except Unfrozen as e:
                missing[n] = str(e)  # perhaps an attribute's name only: rebuilt without it
    cells = []
    for name, c in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            cells.append(_freeze_value(c.cell_contents, seen, None, name))
        except ValueError:  # an empty cell
            cells.append(["empty"])
        except Unfrozen as e:
            raise Unfrozen(f"closure {name}: {e}") from None
    return {"name": fn.__name__, "code": base64.b64encode(marshal.dumps(fn.__code__)).decode(),
            "globals": g, "missing": missing, "cells": cells,
            "defaults": _freeze_value(fn.__defaults__, seen) if fn.__defaults__ else None}


def _thaw_value(v):
    import importlib

    kind = v[0]
    if kind == "module":
        return importlib.import_module(v[1])
    if kind == "attr":
        obj = importlib.import_module(v[1])
        for part in v[2].split("."):
            obj = getattr(obj, part)
        return obj
    if kind == "device":
        from numba import cuda

        return cuda.jit(device=True, **(v[2] if len(v) > 2 else {}))(thaw(v[1]))
    if kind == "data":
        return pickle.loads(base64.b64decode(v[1]))
    raise ValueError(kind)


def thaw(frozen: dict):
    """The function :func:`freeze` described, rebuilt in this process."""
    import builtins

    code = marshal.loads(base64.b64decode(frozen["code"]))
    g = {"__builtins__": builtins, "__name__": "__differential__"}
    g.update({n: _thaw_value(v) for n, v in frozen["globals"].items()})
    cells = tuple(pytypes.CellType() if c[0] == "empty" else pytypes.CellType(_thaw_value(c))
                  for c in frozen["cells"])
    defaults = _thaw_value(frozen["defaults"]) if frozen["defaults"] else None
    return pytypes.FunctionType(code, g, frozen["name"], defaults, cells or None)


# --- the simulator layer: the recorder -------------------------------------------------

def _argtype(a):
    """The Numba type the GPU's dispatcher gives argument ``a`` (the
    simulator's device arrays and tensor maps as the device arrays they are
    on the GPU)."""
    import numpy as np
    from numba import typeof
    from numba.core.typing.typeof import Purpose

    from numba.core import types

    a = getattr(a, "device", a) if hasattr(a, "_ac_sim_buffer") else a  # a tensor map's buffer
    ary = getattr(a, "_ary", None)  # a simulator device array
    if isinstance(ary, np.ndarray):
        a = ary
    cai = None if isinstance(a, np.ndarray) else getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        dtype, shape, strides = np.dtype(cai["typestr"]), tuple(cai["shape"]), cai.get("strides")
        c = strides is None or tuple(strides) == np.empty(shape, dtype).strides
        f = strides is not None and tuple(strides) == np.empty(shape, dtype, order="F").strides
        layout = "C" if c else "F" if f else "A"
        return types.Array(typeof(dtype.type(0)), len(shape), layout)
    return typeof(a, Purpose.argument)


def sim_outcome(exc: BaseException | None) -> dict:
    """The simulator's verdict on one launch."""
    from tests.differential import words

    if exc is None:
        return {"accepted": True}
    from numba.core.errors import TypingError

    import numba_asynccopy as ac

    said = words(str(exc))
    if isinstance(exc, ac.sim.SimulatorError):
        return {"accepted": True, "ran": said}  # a run-time rule: past typing
    if isinstance(exc, ac.ClusterLaunchError) and not said.startswith("cluster_dims"):
        return {"accepted": True, "ran": said}  # the launch's own check (grid, cluster shape)
    if isinstance(exc, TypingError) or isinstance(exc, ac.ClusterLaunchError):
        return {"accepted": False, "kind": type(exc).__name__, "words": said}
    # anything else raised while the threads ran (a Python error of the
    # kernel's code, which the GPU does not check) is the simulator's to explain
    return {"accepted": False, "kind": type(exc).__name__, "words": said, "other": True}


def _where() -> str:
    return (os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
            or os.environ.get("DIFFERENTIAL_SOURCE", "") or " ".join(sys.argv))


def install(directory: str) -> None:
    """Record every simulated launch of this process under ``directory``."""
    from numba.cuda.simulator import kernel as simkernel

    import numba_asynccopy as ac

    cls = simkernel.FakeCUDAKernel
    if getattr(cls.__call__, "_differential", False):
        return
    _keep_jit_options()
    original = cls.__call__
    out = Path(directory) / f"sim-{os.getpid()}.jsonl"

    @functools.wraps(original)
    def call(self, *args):
        if self._device or simkernel._get_kernel_context():
            return original(self, *args)
        rec = {"source": _where(), "kernel": getattr(self.fn, "__qualname__", "?"),
               "line": f"{self.fn.__code__.co_filename}:{self.fn.__code__.co_firstlineno}",
               "checked": bool(ac.is_checked())}
        try:
            frozen = freeze(self.fn)
            argtypes = base64.b64encode(pickle.dumps(tuple(_argtype(a) for a in args))).decode()
            rec.update(frozen=frozen, argtypes=argtypes)
        except Exception as e:  # noqa: BLE001 - an inconclusive program, said so
            rec["unfrozen"] = f"{type(e).__name__}: {e}"
        exc = None
        try:
            return original(self, *args)
        except BaseException as e:
            exc = e
            raise
        finally:
            rec["sim"] = sim_outcome(exc if isinstance(exc, Exception) else None)
            rec["t"] = round(time.time(), 1)
            with open(out, "a") as f:
                f.write(json.dumps(rec) + "\n")

    call._differential = True
    cls.__call__ = call


#: the options of ``cuda.jit`` that change how a call of a device function is
#: typed (``inline="always"``: in the caller, its constants literal there)
_OPTIONS = ("inline", "forceinline")


def _keep_jit_options() -> None:
    """The simulator's ``cuda.jit`` keeps no options: remember those of
    :data:`_OPTIONS` on the kernel it returns."""
    import numba.cuda
    from numba.cuda.simulator import api
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    original = api.jit
    if getattr(original, "_differential", False):
        return

    @functools.wraps(original)
    def jit(func_or_sig=None, **kw):
        opts = {k: kw[k] for k in _OPTIONS if kw.get(k) not in (None, False)}
        out = original(func_or_sig, **kw)

        def tag(k):
            if isinstance(k, FakeCUDAKernel):
                k._differential_options = opts
            return k

        if isinstance(out, FakeCUDAKernel):
            return tag(out)
        return lambda fn: tag(out(fn))

    jit._differential = True
    api.jit = numba.cuda.jit = jit


def install_if_asked() -> None:
    """:func:`install` where ``DIFFERENTIAL_RECORD`` names a directory (and
    the simulator is on)."""
    d = os.environ.get(ENV)
    if d and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        install(d)


# --- the compile layer ----------------------------------------------------------------

def program_key(rec: dict) -> str:
    blob = json.dumps([rec["frozen"], rec["argtypes"], rec["checked"]], sort_keys=True)
    return hashlib.sha1(blob.encode()).hexdigest()


def compile_verdicts(directory: str) -> dict:
    """{program key: the GPU compile's verdict} of every recorded program."""
    import warnings

    from numba import cuda

    import numba_asynccopy as ac
    from tests.differential import words

    warnings.simplefilter("ignore")
    # a device function is compiled for the current device's compute
    # capability: here, with no GPU, for the sm_90a the kernel is compiled for
    import numba.cuda.dispatcher as _dispatcher

    _dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(9, 0))
    cache = os.path.join(directory, "compile-verdicts.json")  # a rerun compiles only what changed
    out = {}
    if os.path.exists(cache):
        with open(cache) as f:
            out = json.load(f)
    for rec in records(directory):
        if "frozen" not in rec:
            continue
        key = program_key(rec)
        if key in out:
            continue
        try:
            fn = thaw(rec["frozen"])
            sig = pickle.loads(base64.b64decode(rec["argtypes"]))
        except Exception as e:  # noqa: BLE001
            out[key] = {"accepted": None, "why": f"not rebuilt: {type(e).__name__}: {e}"}
            continue
        with ac.checked_mode(rec["checked"]):
            try:
                cuda.compile_ptx(fn, sig, cc=(9, 0, "a"))
            except Exception as e:  # noqa: BLE001 - every refusal is a verdict
                said = words(str(e))
                if "NameError" in str(e) or any(n in str(e) for n in rec["frozen"]["missing"]):
                    out[key] = {"accepted": None, "why": f"a global not rebuilt: {said}"}
                else:
                    out[key] = {"accepted": False, "kind": type(e).__name__, "words": said}
                continue
        out[key] = {"accepted": True}
    with open(cache, "w") as f:
        json.dump(out, f)
    return out


def records(directory: str) -> list[dict]:
    recs = []
    for p in sorted(glob.glob(os.path.join(directory, "sim-*.jsonl"))):
        with open(p) as f:
            recs += [json.loads(line) for line in f if line.strip()]
    return recs


# --- the census -----------------------------------------------------------------------

#: what the quick census runs (and the README's programs): hand-written and
#: pipelined async copies, and a kernel both layers refuse
QUICK = ["tests/gpu/test_async_examples_gpu.py::test_hand_written_bulk_copy",
         "tests/gpu/test_async_examples_gpu.py::test_hand_written_tma_copy",
         "tests/gpu/test_async_examples_gpu.py::test_bulk_copy_persistent_grid_and_float_data",
         "tests/gpu/test_async_examples_gpu.py::"
         "test_tma_copy_persistent_grid_float_data_and_strided_views",
         "tests/gpu/test_cluster_gpu.py::test_cluster_dims_in_a_device_function_is_an_error"]


def _env(directory: str | None, sim: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", ENV)}
    if sim:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
        env[ENV] = directory
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def rerun(directory: str, sources: list[str]) -> None:
    """Record ``sources`` again (GPU tests, docs pages, notebooks, as the
    records name them), their earlier records dropped."""
    for p in sorted(glob.glob(os.path.join(directory, "sim-*.jsonl"))):
        with open(p) as f:
            keep = [line for line in f if not any(json.loads(line)["source"].startswith(s)
                                                  for s in sources)]
        with open(p, "w") as f:
            f.writelines(keep)
    env = _env(directory, sim=True)
    tests = [s for s in sources if s.startswith("tests/")]
    if tests:
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                        "-o", "addopts=", *tests], cwd=ROOT, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for s in sources:
        if s.endswith(".md"):
            runner, path = "tests.docs.docblocks", ROOT / s
        elif s.endswith(".ipynb"):
            runner, path = "tests.notebooks.execnb", ROOT / "notebooks" / s
        else:
            continue
        subprocess.run([sys.executable, "-m", runner, str(path)], cwd=ROOT, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_sim_layer(directory: str, quick: bool, jobs: int = 0) -> None:
    """Run the programs in the simulator, recording every launch."""
    env = _env(directory, sim=True)
    tests = QUICK if quick else ["tests/gpu"]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(jobs),
           "-o", "addopts=", *tests]
    subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    from tests.docs.docblocks import blocks, doc_files

    pages = [p for p in doc_files() if any(b.kind == "run" for b in blocks(p))
             and (not quick or p.name == "README.md")]
    nbs = [] if quick else sorted((ROOT / "notebooks").glob("*.ipynb"))
    for p in pages:
        subprocess.run([sys.executable, "-m", "tests.docs.docblocks", str(p)], cwd=ROOT, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for nb in nbs:
        subprocess.run([sys.executable, "-m", "tests.notebooks.execnb", str(nb)], cwd=ROOT,
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def census(quick: bool, directory: str | None = None, jobs: int = 0) -> dict:
    """Both layers; {"compared", "agree", "inconclusive", "disagree": [...], "programs"}."""
    directory = directory or tempfile.mkdtemp(prefix="differential-")
    if not records(directory):
        run_sim_layer(directory, quick, jobs)
    proc = subprocess.run([sys.executable, "-m", "tests.differential_kernels", "compile", directory],
                          cwd=ROOT, env=_env(None, sim=False), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    gpu = json.loads(proc.stdout.splitlines()[-1])
    seen, compared, agree, inconclusive, bad, refused = set(), 0, 0, 0, [], 0
    for rec in records(directory):
        sim = rec["sim"]
        key = program_key(rec) if "frozen" in rec else None
        pair = (key or rec["line"], json.dumps(sim, sort_keys=True))
        if pair in seen:
            continue
        seen.add(pair)
        a = gpu.get(key, {"accepted": None, "why": rec.get("unfrozen")})
        if a["accepted"] is None:
            inconclusive += 1
            continue
        compared += 1
        if a["accepted"] == sim["accepted"] and (a["accepted"] or a["words"] == sim["words"]):
            agree += 1
            refused += not a["accepted"]
        else:
            bad.append({"source": rec["source"], "kernel": rec["kernel"], "line": rec["line"],
                        "gpu": a.get("words", "accepts"),
                        "sim": sim.get("words", "accepts")})
    return {"compared": compared, "agree": agree, "refused": refused, "inconclusive": inconclusive,
            "disagree": bad,
            "launches": len(records(directory)), "directory": directory}


def main(argv: list[str]) -> int:
    if argv[0] == "compile":
        print(json.dumps(compile_verdicts(argv[1])))
        return 0
    quick = "--quick" in argv
    d = next((a.split("=", 1)[1] for a in argv if a.startswith("--dir=")), None)
    again = next((a.split("=", 1)[1] for a in argv if a.startswith("--rerun=")), None)
    if again and d:
        rerun(d, again.split(","))
    r = census(quick, d)
    for b in r["disagree"]:
        print(f"DISAGREE {b['source']} {b['kernel']} ({b['line']})\n    GPU compile: {b['gpu']}\n"
              f"    simulator:   {b['sim']}")
    print(f"differential census: {r['launches']} launches, {r['compared']} programs compared "
          f"(GPU compile for sm_90a vs the simulator), {r['agree']} agree "
          f"({r['refused']} of them refused by both, in the same words), "
          f"{len(r['disagree'])} disagree, {r['inconclusive']} inconclusive "
          f"(records in {r['directory']})")
    return 1 if r["disagree"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
