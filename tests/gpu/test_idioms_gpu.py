"""The idioms suite's ports (bench/idioms.py) compute ``a * X + b`` exactly,
with block tile counts that are below, at and above the ring depth (so the
rings wrap and the parities flip), and so do their CUDA C++ originals."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numba_asynccopy.bench import idioms as idi

from ..conftest import skip_on_sim

pytestmark = pytest.mark.gpu

rng = np.random.default_rng()  # fresh data every run

# 5 tiles on one block (past the 4-deep rings: the parities flip; the shape
# the simulator runs, 256-thread blocks being slow there); 11 tiles over 2
# blocks (6 and 5) and over 5 blocks (3, 2, 2, 2, 2: fewer tiles than stages)
_SLOW = skip_on_sim("256-thread blocks are slow in the simulator: the 5-tile shape runs there")
SHAPES = [(40, 1), pytest.param(88, 2, marks=_SLOW), pytest.param(88, 5, marks=_SLOW)]


def _check(got, X, a, b):
    """Every element written (no NaN poison left) and equal to a * X + b
    up to the rounding of a contracted FMA (NVVM and nvcc both contract)."""
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements not written"
    ax = np.float64(a) * X.astype(np.float64)
    ref = ax + np.float64(b)
    # fused: one rounding; unfused: two, each at most 2**-24 of |a*x| or |a*x + b|
    bound = 2.0**-22 * (np.abs(ax) + abs(float(b)))
    bad = np.abs(got - ref) > bound
    assert not bad.any(), f"{int(bad.sum())} elements differ from a*X+b (first at {np.argwhere(bad)[0]})"


def _data(rows):
    X = rng.standard_normal((rows, idi.COLS)).astype(np.float32)
    a, b = np.float32(rng.uniform(0.5, 2.0)), np.float32(rng.uniform(-1.0, 1.0))
    return X, a, b


@pytest.mark.parametrize("rows,grid", SHAPES)
@pytest.mark.parametrize("name", list(idi.PORTS))
def test_idiom_port(name, rows, grid):
    X, a, b = _data(rows)
    dX = cuda.to_device(X)
    dY = cuda.to_device(np.full_like(X, np.nan))
    kern = idi.compile_kernel(name)
    kern[grid, idi.BLOCK](*idi.launch_args(name, dX, dY, a, b))
    _check(dY.copy_to_host(), X, a, b)


@skip_on_sim("the CUDA C++ originals run on the device")
@pytest.mark.parametrize("rows,grid", SHAPES)
@pytest.mark.parametrize("name", list(idi.KERNELS))
def test_idiom_original(twins, name, rows, grid):
    import ctypes

    from numba_asynccopy.bench.twins import ptr

    X, a, b = _data(rows)
    dX = cuda.to_device(X)
    dY = cuda.to_device(np.full_like(X, np.nan))
    lib = twins.lib
    P, I, F = ctypes.c_void_p, ctypes.c_int, ctypes.c_float
    lib.twin_idiom.argtypes = [I, P, P, I, F, F, I, I]
    lib.twin_idiom.restype = I
    assert lib.twin_idiom(idi.TWIN_INDEX[name], ptr(dX), ptr(dY), rows, a, b, grid, idi.STAGES) == 0
    cuda.synchronize()
    _check(dY.copy_to_host(), X, a, b)
