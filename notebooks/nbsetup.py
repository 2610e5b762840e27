"""How the tutorial notebooks run on this machine: GPU, simulator or compile-only.

Import it in the first cell, before anything imports Numba: the choice
decides whether numba-cuda's simulator is switched on, which Numba reads
once, when ``numba.cuda`` is first imported.

- ``gpu``: a CUDA GPU is present; kernels run on it and ``ac.inspect``
  compiles for its compute capability.
- ``simulator``: no GPU, and the package's simulator is installed; kernels
  run in numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``) with the
  worst-case completion schedule, and ``ac.inspect`` compiles in a fresh
  interpreter.
- ``compile-only``: kernels are compiled (``ac.inspect``), not run.

``NUMBA_ASYNCCOPY_NOTEBOOK_MODE=gpu|simulator|compile-only`` forces a mode.

Example::

    import nbsetup
    MODE = nbsetup.start(simulate=True)   # prints the mode
    if MODE.runs:
        kernel[1, 64](a, b)
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

MODES = ("gpu", "simulator", "compile-only")
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mode:
    name: str  # one of MODES
    cc: tuple[int, int]  # what ac.inspect compiles for
    device: str

    @property
    def gpu(self) -> bool:
        return self.name == "gpu"

    @property
    def sim(self) -> bool:
        return self.name == "simulator"

    @property
    def compile_only(self) -> bool:
        return self.name == "compile-only"

    @property
    def runs(self) -> bool:
        """Kernels can be launched (on the GPU or in the simulator)."""
        return self.name != "compile-only"

    def skip(self, what: str) -> None:
        print(f"[{self.name}] {what}: not run in this mode.")


def gpu_count() -> int:
    """CUDA devices visible through the driver, without importing Numba."""
    for lib in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            cu = ctypes.CDLL(lib)
        except OSError:
            continue
        try:
            if cu.cuInit(0) != 0:
                return 0
            n = ctypes.c_int(0)
            return n.value if cu.cuDeviceGetCount(ctypes.byref(n)) == 0 else 0
        except Exception:
            return 0
    return 0


def _ensure_importable() -> Path:
    if importlib.util.find_spec("numba_asynccopy") is None:
        sys.path.insert(0, str(ROOT))  # a checkout that is not pip-installed
    spec = importlib.util.find_spec("numba_asynccopy")
    if spec is None:
        raise ImportError("numba_asynccopy is not installed (pip install -e . in the repository)")
    return Path(list(spec.submodule_search_locations)[0])


def simulator_available() -> bool:
    """The package ships its simulator implementations (``numba_asynccopy.sim``)."""
    return (_ensure_importable() / "sim" / "__init__.py").is_file()


_MODE: Mode | None = None


def start(simulate: bool = False, cc: tuple[int, int] = (9, 0)) -> Mode:
    """Choose the mode (once per kernel process), print it and return it.

    ``simulate``: without a GPU, run kernels in the simulator when it is
    available (notebooks about cp.async and mbarriers); otherwise compile
    only.  ``cc``: the target of compile-only inspection.
    """
    global _MODE
    if _MODE is not None:
        _banner(_MODE)
        return _MODE
    pkg = _ensure_importable()
    have_sim = (pkg / "sim" / "__init__.py").is_file()
    forced = os.environ.get("NUMBA_ASYNCCOPY_NOTEBOOK_MODE", "").strip()
    notes = []
    if forced and forced not in MODES:
        raise ValueError(f"NUMBA_ASYNCCOPY_NOTEBOOK_MODE={forced!r}: use one of {MODES}")
    if "numba.cuda" in sys.modules:  # too late to switch: keep what Numba read
        from numba.core import config

        name = "simulator" if config.ENABLE_CUDASIM else ("gpu" if gpu_count() else "compile-only")
    elif forced:
        name = forced
    elif os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        name = "simulator"
    elif gpu_count():
        name = "gpu"
    elif simulate and have_sim:
        name = "simulator"
    else:
        name = "compile-only"
        if simulate:
            notes.append("this build has no simulator (numba_asynccopy.sim)")
    if name == "simulator" and not have_sim:
        notes.append("the simulator was asked for but this build has none (numba_asynccopy.sim)")
        name = "compile-only"
    if "numba.cuda" not in sys.modules:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1" if name == "simulator" else "0"

    device = "-"
    if name == "gpu":
        from numba import cuda

        dev = cuda.get_current_device()
        cc = tuple(dev.compute_capability)
        device = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    elif name == "simulator":
        import numba_asynccopy as ac

        ac.sim.set_schedule("worst")
        device = "numba-cuda simulator, worst-case completion schedule"
    _MODE = Mode(name, tuple(cc), device)
    _banner(_MODE, notes)
    return _MODE


def _banner(m: Mode, notes=()) -> None:
    what = {
        "gpu": f"kernels run on the GPU ({m.device}); ac.inspect compiles for sm_{m.cc[0]}{m.cc[1]}",
        "simulator": f"no GPU: kernels run in the {m.device}; ac.inspect compiles for "
                     f"sm_{m.cc[0]}{m.cc[1]} in a separate interpreter",
        "compile-only": f"no GPU: kernels are compiled for sm_{m.cc[0]}{m.cc[1]} and inspected, "
                        "NOT run",
    }[m.name]
    print(f"MODE: {m.name.upper()} -- {what}")
    for n in notes:
        print(f"  ({n})")


def has(*names: str) -> bool:
    """True when the package exports every name; otherwise say which are missing.

    Used to guard cells whose feature is not in this build (clusters,
    bulk/TMA copies, ...), so the notebook keeps running.
    """
    import numba_asynccopy as ac

    missing = [n for n in names if not hasattr(ac, n)]
    if missing:
        print("not available in this build: " + ", ".join(f"ac.{n}" for n in missing)
              + " (a feature not merged into this build yet); the code is shown, not compiled or run.")
    return not missing


def pyplot():
    """matplotlib's pyplot with a backend that needs no display, or None."""
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no plot (the numbers are printed above).")
        return None
    if "ipykernel" not in sys.modules:  # headless script run: never open a window
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
