"""The cluster side of the mbarrier and bulk families in the simulator: the
``cta_rank=`` forms and the cluster bulk copy act on the barrier (and the
shared memory) of that CTA of the cluster; an unclustered launch is a
cluster of one CTA, so rank 0 is the CTA itself, as on the GPU."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda
from numba.cuda.core.errors import TypingError

import numba_asynccopy as ac


@cuda.jit
def to_self(A, out):
    bars = cuda.shared.array(1, np.uint64, alignment=8)
    src = cuda.shared.array(64, np.uint32, alignment=16)
    dst = cuda.shared.array(64, np.uint32, alignment=16)
    tid = cuda.threadIdx.x
    src[tid] = A[tid]
    if tid == 0:
        ac.mbarrier_init(bars[0:], 2)
        ac.fence_mbarrier_init()
    ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if tid == 0:
        ac.mbarrier_expect_tx(bars[0:], 128, cta_rank=0)
        ac.mbarrier_arrive_expect_tx(bars[0:], 128, cta_rank=0)
        ac.cp_async_bulk_cluster(dst, src, 256, bars[0:], 0)
        ac.mbarrier_arrive(bars[0:], cta_rank=0)
    ac.mbarrier_wait_parity(bars[0:], 0)
    out[tid] = dst[tid]


def test_cluster_forms_act_on_the_ctas_own_barrier_in_an_unclustered_launch():
    a = np.random.default_rng().integers(0, 2**32, 64, dtype=np.uint32)
    out = np.zeros_like(a)
    to_self[1, 64](a, out)
    np.testing.assert_array_equal(out, a)


@cuda.jit
def rank_outside(out, r):
    bars = cuda.shared.array(1, np.uint64, alignment=8)
    ac.mbarrier_init(bars[0:], 1)
    ac.mbarrier_arrive(bars[0:], cta_rank=r)
    out[0] = 1


def test_a_rank_outside_the_cluster_has_checked_modes_text():
    with pytest.raises(ac.sim.SimulatorError, match=r"mbarrier_arrive: `cta_rank`=1 is outside "
                       r"the cluster \(1 CTAs: ranks 0..0\)"):
        rank_outside[1, 1](np.zeros(1, np.int32), 1)


@cuda.jit
def bad_order(out):
    bars = cuda.shared.array(1, np.uint64)
    ac.mbarrier_arrive(bars[0:], sem="relaxed", cta_rank=0)


def test_cta_rank_ordering_is_checked_as_on_the_gpu():
    with pytest.raises(TypingError, match="mbarrier_arrive: `sem`='relaxed' is not supported "
                       "with `cta_rank`"):
        bad_order[1, 1](cuda.to_device(np.zeros(1, np.int32)))


@cuda.jit
def local(out):
    bars = cuda.shared.array(1, np.uint64)
    if cuda.threadIdx.x == 0:
        ac.mbarrier_init(bars[0:], 1)
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        ac.mbarrier_expect_tx(bars[0:], 16, cta_rank=None)
        ac.mbarrier_complete_tx(bars[0:], 16)
        ac.mbarrier_arrive(bars[0:], cta_rank=None)
    ac.mbarrier_wait_parity(bars[0:], 0)
    out[cuda.threadIdx.x] = 1


def test_local_forms_run_with_cta_rank_none():
    out = cuda.to_device(np.zeros(4, np.int32))
    local[1, 4](out)
    assert (out.copy_to_host() == 1).all()
