"""Races the simulator names: shared-memory bytes written by ordinary
stores, then read by the async proxy (a bulk or TMA store) with no
fence_proxy_async between."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

N = 64


@cuda.jit
def store_tile(out, fence):
    sh = cuda.shared.array(N, np.float32, alignment=128)
    t = cuda.threadIdx.x
    sh[t] = t * 2.0  # ordinary stores: the generic proxy
    if fence:  # BUG when 0: the async proxy may not see them
        ac.fence_proxy_async()
    cuda.syncthreads()
    if t == 0:
        ac.cp_async_bulk_s2g(out, sh)
        ac.bulk_commit_group()
        ac.bulk_wait_group(0)


def test_store_without_proxy_fence_is_a_named_race():
    with pytest.raises(ac.sim.SimulatorError,
                       match=r"cp_async_bulk_s2g: race: its shared source `src` \(shared array "
                             r"allocated at .*, byte offset 0, 256 of its 256 bytes\) was written by "
                             r"ordinary stores after the block's last fence_proxy_async\(\), and "
                             r"the async proxy reads it"):
        store_tile[1, N](np.zeros(N, np.float32), 0)


def test_store_with_proxy_fence(interleaving):
    out = np.zeros(N, np.float32)
    store_tile[1, N](out, 1)
    np.testing.assert_array_equal(out, np.arange(N, dtype=np.float32) * 2)


@cuda.jit
def load_then_store(src, out, rewrite):
    # a tile the async proxy loaded (TMA-like bulk load) and stores back: no fence needed,
    # unless ordinary stores change it in between
    sh = cuda.shared.array(N, np.float32, alignment=128)
    bar = cuda.shared.array(1, np.uint64)
    t = cuda.threadIdx.x
    if t == 0:
        ac.mbarrier_init(bar[0:], 1)
        ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if t == 0:
        ac.mbarrier_arrive_expect_tx(bar[0:], N * 4)
        ac.cp_async_bulk_g2s(sh, src, bar[0:])
    ac.mbarrier_wait_parity(bar[0:], 0)
    if rewrite:  # BUG when 1: changed by ordinary stores, no fence before the store
        sh[t] = sh[t] + 1.0
    cuda.syncthreads()
    if t == 0:
        ac.cp_async_bulk_s2g(out, sh)
        ac.bulk_commit_group()
        ac.bulk_wait_group(0)


def test_async_loaded_tile_stored_back(interleaving):
    src = np.arange(N, dtype=np.float32)
    out = np.zeros(N, np.float32)
    load_then_store[1, N](src, out, 0)
    np.testing.assert_array_equal(out, src)


def test_async_loaded_tile_rewritten_without_fence():
    src = np.arange(N, dtype=np.float32)
    with pytest.raises(ac.sim.SimulatorError, match=r"cp_async_bulk_s2g: race: its shared source"):
        load_then_store[1, N](src, np.zeros(N, np.float32), 1)
