"""The cluster side of the mbarrier and bulk families in the simulator: the
``cta_rank=`` forms and the cluster bulk copy need clusters, which are not
simulated; they raise SimulatorError with the cluster family's reason, and
the local forms of the same functions still run."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda
from numba.cuda.core.errors import TypingError

import numba_asynccopy as ac

REASON = ac.sim.UNSUPPORTED_FAMILIES["cluster"]


@cuda.jit
def remote(out, which):
    bars = cuda.shared.array(2, np.uint64)
    sh = cuda.shared.array(64, np.uint32, alignment=16)
    if cuda.threadIdx.x == 0:
        ac.mbarrier_init(bars[0:], 1)
        if which == 0:
            ac.mbarrier_arrive(bars[0:], cta_rank=0)
        elif which == 1:
            ac.mbarrier_expect_tx(bars[0:], 256, cta_rank=0)
        elif which == 2:
            ac.mbarrier_arrive_expect_tx(bars[0:], 256, cta_rank=0)
        else:
            ac.cp_async_bulk_cluster(sh, sh, 256, bars[1:], 0)
    out[0] = 1


@pytest.mark.parametrize("which,what", [
    (0, "mbarrier_arrive with cta_rank"),
    (1, "mbarrier_expect_tx with cta_rank"),
    (2, "mbarrier_arrive_expect_tx with cta_rank"),
    (3, "cp_async_bulk_cluster"),
])
def test_cluster_forms_raise_the_cluster_reason(which, what):
    out = cuda.to_device(np.zeros(1, np.int32))
    with pytest.raises(ac.sim.SimulatorError) as e:
        remote[1, 1](out, which)
    text = str(e.value)
    assert f"numba_asynccopy simulator: {what} cannot run in the CUDA simulator: {REASON}" in text


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
