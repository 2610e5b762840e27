"""A user's tests of a cp.async pipeline kernel, on the GPU and in the CUDA
simulator, with numba-asynccopy's pytest plugin and helpers only."""

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.testing import assert_close, assert_written, poisoned

STAGES = 3
BLOCK = 32
WORDS = 4  # one 16-byte cp.async per thread and tile


@cuda.jit
def scale(dst, src, factor):
    """dst = factor * src, tile by tile through a 3-stage cp.async ring."""
    ring = cuda.shared.array((STAGES, BLOCK, WORDS), np.float32, alignment=16)
    tid = cuda.threadIdx.x
    ntiles = src.shape[0] // (BLOCK * WORDS)
    pipe = ac.pipeline.group_pipeline(STAGES)
    ps = ac.pipeline.producer_start(pipe)
    cs = ac.pipeline.consumer_start(pipe)
    for t in range(ntiles + STAGES - 1):
        ac.pipeline.producer_acquire(pipe, ps)
        if t < ntiles:
            b = (t * BLOCK + tid) * WORDS
            ac.cp_async(ring[ps.slot, tid, :], src[b:b + WORDS], 16)
        ac.pipeline.producer_commit(pipe, ps)
        ps = ac.pipeline.advance(pipe, ps)
        if t >= STAGES - 1:
            c = t - (STAGES - 1)
            ac.pipeline.consumer_wait(pipe, cs)  # tile c landed
            for w in range(WORDS):
                dst[(c * BLOCK + tid) * WORDS + w] = factor * ring[cs.slot, tid, w]
            ac.pipeline.consumer_release(pipe, cs)
            cs = ac.pipeline.advance(pipe, cs)
    ac.pipeline.producer_tail(pipe, ps)


@pytest.mark.asynccopy_both
def test_scale_matches_numpy(asynccopy):
    n = 6 * BLOCK * WORDS
    src = np.random.default_rng().standard_normal(n).astype(np.float32)
    dst = poisoned(n, np.float32)
    scale[1, BLOCK](dst, cuda.to_device(src), np.float32(3.0))
    assert_written(dst, "dst")
    assert_close(dst, 3.0 * src.astype(np.float64))
    assert asynccopy.side in ("gpu", "sim")


@cuda.jit
def init_in_global(bars):
    """A bug: the mbarrier lives in global memory, not in shared memory."""
    if cuda.threadIdx.x == 0:
        ac.mbarrier_init(bars[0:], 1)


# the GPU side in a fresh process too: a checked-mode trap ends the CUDA context
@pytest.mark.asynccopy_both(isolated=True)
def test_buggy_barrier_kernel():
    bars = cuda.to_device(np.zeros(1, np.uint64))
    init_in_global[1, 32](bars)
    cuda.synchronize()


@pytest.mark.asynccopy_traps("mbarrier_init: `bar` is not in shared memory")
def test_the_bug_traps_with_its_rule():
    bars = cuda.to_device(np.zeros(1, np.uint64))
    init_in_global[1, 32](bars)
    cuda.synchronize()


def test_sanitizer_clean(compute_sanitizer):
    n = 4 * BLOCK * WORDS
    src = np.arange(n, dtype=np.float32)
    dst = poisoned(n, np.float32)
    scale[1, BLOCK](dst, cuda.to_device(src), np.float32(2.0))
    assert_close(dst, 2.0 * src)
