"""The package's pytest plugin on the project's own kernels: a staged copy
(the ac.pipeline ring of examples/staged_copy.py) as a [gpu]/[sim] pair, and
two of checked mode's trap cases (tests/gpu/test_checked_traps_gpu.py) as
trap items, each side in a fresh process.  Not marked ``gpu``: off the GPU
the [sim] items run (in a simulator child process) and the [gpu] items skip
with the reason."""

from __future__ import annotations

import numpy as np
import pytest

from numba_asynccopy.testing import assert_written, poisoned

from .gpu.test_checked_traps_gpu import CASES, kernel_source


@pytest.mark.asynccopy_both
def test_staged_copy_pair(asynccopy):
    from numba import cuda

    from numba_asynccopy.examples import staged_copy as sc

    stages, chunk, block, pt = 3, 16, 64, 1
    tile = sc.tile_words(chunk, block, pt)
    n = tile * 5 + 7  # the ring wraps, and a tail
    src = np.random.default_rng().integers(0, 2**32, n, dtype=np.uint32)
    kernel = cuda.jit(sc.SIGNATURE)(sc.make_staged_copy(stages, chunk, block, pt))
    dst = poisoned(n, np.uint32)
    kernel[2, block](cuda.to_device(src), dst)
    assert_written(dst, "dst")
    np.testing.assert_array_equal(dst.copy_to_host(), src)
    assert asynccopy.side in ("gpu", "sim")


def _trap_case(name: str) -> None:
    import linecache

    from numba import cuda

    _, n, cluster, _ = CASES[name]
    src = kernel_source(name)
    filename = f"<trap case {name}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns: dict = {}
    exec(compile(src, filename, "exec"), ns)
    out = cuda.to_device(np.zeros(8, np.uint64))
    A = cuda.to_device(np.zeros((32, 8), np.float32))
    ns["k"][2 if cluster else 1, 32](out, n, A)
    cuda.synchronize()


@pytest.mark.traps
@pytest.mark.asynccopy_traps("numba_asynccopy checked mode: " + CASES["init_global"][3])
def test_trap_init_global():
    _trap_case("init_global")


@pytest.mark.traps
@pytest.mark.asynccopy_traps("numba_asynccopy checked mode: " + CASES["parity_wide"][3])
def test_trap_parity_wide():
    _trap_case("parity_wide")
