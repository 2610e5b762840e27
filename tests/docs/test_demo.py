"""The demo (``python -m numba_asynccopy``) in the simulator and in
compile-only mode: exits 0, says which mode it ran in, ends with what to try
next.  (tests/cpu/test_package.py checks the full compile-only listing; the
GPU suite runs the demo on a GPU.)"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import HAVE_GPU, plain_demo
from tests.docs.docblocks import ROOT


def demo(*, sim: bool, code: str | None = None) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    if sim:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    cmd = [sys.executable, "-m", "numba_asynccopy"] if code is None else [sys.executable, "-c", code]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    return proc.returncode, proc.stdout + proc.stderr


def test_the_demo_runs_the_examples_in_the_simulator():
    rc, out = demo(sim=True)
    assert rc == 0, out
    assert "Traceback" not in out and "demo failed" not in out, out
    assert out.startswith("numba-asynccopy demo: running the examples in the CUDA simulator"), out
    for name in ("shift_rows", "tile_rows", "tile_cta", "zfill_rows", "pred_rows", "cluster_copy",
                 "staged_copy"):
        assert f"  {name:12s} matches numpy" in out, (name, out)
    assert "MISMATCH" not in out
    lines = out.rstrip().splitlines()
    assert "What to try next:" in lines[-6:], out
    assert lines[-1] == "  - the documentation: make docs, then open docs/_build/html/index.html"
    assert "notebooks/01_async_copies.ipynb" in out and "ac.inspect(kernel" in out


def test_a_mismatch_in_the_simulator_fails_the_demo():
    code = ("import sys, numpy as np\n"
            "import numba_asynccopy.examples.seeds as s\n"
            "ref = s.reference\n"
            "def wrong(name, rng):\n"
            "    inputs, expected = ref(name, rng)\n"
            "    return inputs, expected + 1 if name == 'tile_rows' else expected\n"
            "s.reference = wrong\n"
            "import numba_asynccopy.__main__ as m\n"
            "sys.exit(m.main())\n")
    rc, out = demo(sim=True, code=code)
    assert rc == 1, out
    assert "  tile_rows    MISMATCH" in out and "  shift_rows   matches numpy" in out, out


@pytest.mark.skipif(HAVE_GPU, reason="a GPU is there: the demo runs the kernels (the GPU suite checks it)")
def test_without_a_gpu_the_demo_compiles_and_says_what_to_try_next():
    # the demo's run of tests/cpu/test_package.py (once per process): there
    # every kernel's listing is checked, here the mode's flow and its end
    rc, out = plain_demo()
    assert rc == 0, out
    assert out.startswith("numba-asynccopy demo: no GPU found; compiling only."), out
    assert "shift_rows   cp.async" in out and "No GPU was found: kernels were" in out, out
    lines = out.rstrip().splitlines()
    assert "What to try next:" in lines[-6:], out
    assert "NUMBA_ENABLE_CUDASIM=1 python -m numba_asynccopy" in out
    assert lines[-1] == "  - the documentation: make docs, then open docs/_build/html/index.html"
