"""The GPU compile's verdicts on compile-time constants, the ones the
simulator's tests (tests/sim/test_sim_agreement.py) expect of the simulator:
both refuse exactly what Numba types as a run-time value, in the same words."""

from __future__ import annotations

import re

import pytest
from numba import cuda
from numba.core import types
from numba.core.errors import TypingError

from tests.sim.test_sim_agreement import (CONSTANT_CASES, COORDS_CASES, NEGATIVE, RUNTIME,
                                          _chunk_source, _coords_source)


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


@pytest.mark.parametrize("expr, refused", COORDS_CASES)
def test_gpu_compile_verdict_on_tuple_entries(expr, refused):
    fn = _coords_source(expr)
    sig = (types.uint64[::1], types.int64)
    if refused == "compile":
        with pytest.raises(TypingError, match=re.escape(NEGATIVE)):
            cuda.compile_ptx(fn, sig, cc=(9, 0, "a"))
    else:
        ptx, _ = cuda.compile_ptx(fn, sig, cc=(9, 0, "a"))
        assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx, ptx[-2000:]
