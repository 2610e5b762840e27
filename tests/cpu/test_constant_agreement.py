"""The GPU compile's verdicts on compile-time constants, the ones the
simulator's tests (tests/sim/test_sim_agreement.py) expect of the simulator:
both refuse exactly what Numba types as a run-time value, in the same words."""

from __future__ import annotations

import pytest
from numba import cuda
from numba.core import types
from numba.core.errors import TypingError

from tests.sim.test_sim_agreement import CONSTANT_CASES, RUNTIME, _chunk_source


@pytest.mark.parametrize("expr, refused", CONSTANT_CASES)
def test_gpu_compile_verdict(expr, refused):
    fn = _chunk_source(expr)
    sig = (types.float32[::1], types.float32[::1])
    if refused:
        with pytest.raises(TypingError, match=RUNTIME.replace("(", r"\(").replace(")", r"\)")):
            cuda.compile_ptx(fn, sig, cc=(9, 0))
    else:
        ptx, _ = cuda.compile_ptx(fn, sig, cc=(9, 0))
        assert "cp.async.cg.shared.global" in ptx or "cp.async.ca.shared.global" in ptx
