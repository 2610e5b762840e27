"""Bulk copy: global -> shared -> global with 1-D ``cp.async.bulk``, no registers.

A persistent grid walks tiles of ``chunk_bytes`` bytes with a grid stride.
In every block ONE thread runs the whole pipeline; the data never passes
through registers:

- a ring of ``stages`` shared chunks, each with a "full" mbarrier (one
  expected arrival: the issuing thread's ``arrive.expect_tx``, plus the
  chunk's transaction bytes);
- load: ``mbarrier_arrive_expect_tx(full[s], chunk)`` then
  ``cp_async_bulk_g2s(ring[s], src[tile], full[s])``;
- for tile i: wait for ``full[i % stages]`` at parity ``(i // stages) & 1``,
  store the chunk with ``cp_async_bulk_s2g`` and commit it as a bulk group;
- then ``bulk_wait_group(1, read=True)``: the store of tile i-1 has *read*
  its chunk, so that chunk is refilled with tile i-1+stages.  ``stages - 1``
  loads and one or two stores stay in flight.

The store reads shared bytes the copy engine itself wrote (async proxy to
async proxy, ordered by the mbarrier wait), so no proxy fence is needed
between a load and its store; the refill is ordered after the store's read
by the ``.read`` wait.  A block is one warp: the other 31 threads only help
with the tail (the words past the last whole tile, copied with plain loads).

Several small blocks per multiprocessor (static shared memory, at most
48 KB each) keep ``blocks x (stages - 1) x chunk`` bytes of loads in flight
per SM.

Example::

    from numba import cuda
    from numba_asynccopy.examples.bulk_copy import BLOCK, SIGNATURE, grid_for, make_bulk_copy

    copy = cuda.jit(SIGNATURE)(make_bulk_copy(stages=4, chunk_bytes=8192))
    copy[grid_for(4, 8192), BLOCK](src, dst)      # src, dst: uint32[n] on the device
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, types

import numba_asynccopy as ac

#: static shared memory a block may declare without an opt-in
STATIC_SMEM_LIMIT = 48 * 1024
#: shared memory of one H100/H200 multiprocessor usable by blocks
SM_SMEM = 228 * 1024
#: threads per block: one issuing thread (lane 0); the warp copies the tail
BLOCK = 32
#: largest transaction count one mbarrier operation takes (2**20 - 1)
MAX_TX = (1 << 20) - 1


def smem_bytes(stages: int = 4, chunk_bytes: int = 8192) -> int:
    """Static shared memory of one block: the ring and its barriers."""
    return stages * chunk_bytes + 8 * stages


def check_config(stages: int, chunk_bytes: int) -> None:
    if stages < 2:
        raise ValueError(f"stages must be >= 2 (one chunk loading while one is stored), got {stages}")
    if chunk_bytes < 16 or chunk_bytes % 16 or chunk_bytes > MAX_TX:
        raise ValueError(f"chunk_bytes must be a positive multiple of 16 below 2**20, got {chunk_bytes}")
    smem = smem_bytes(stages, chunk_bytes)
    if smem > STATIC_SMEM_LIMIT:
        raise ValueError(f"the ring needs {smem} bytes of shared memory; static shared "
                         f"memory is limited to {STATIC_SMEM_LIMIT}")


@lru_cache(maxsize=None)
def make_bulk_copy(stages: int = 4, chunk_bytes: int = 8192):
    """Python function ``bulk_copy(src, dst)`` over uint32[::1] arrays
    (compile with ``cuda.jit(SIGNATURE)``; launch with :data:`BLOCK` threads
    and a grid from :func:`grid_for`).

    ``stages`` (>= 2) shared chunks of ``chunk_bytes`` (a multiple of 16)
    each; one bulk load and one bulk store per chunk.
    """
    check_config(stages, chunk_bytes)
    words = chunk_bytes // 4

    def bulk_copy(src, dst):
        ring = cuda.shared.array((stages, words), np.uint32, alignment=128)
        full = cuda.shared.array(stages, np.uint64, alignment=8)
        n = src.shape[0]
        ntiles = n // words
        first = cuda.blockIdx.x
        step = cuda.gridDim.x
        if cuda.threadIdx.x == 0:
            for s in range(stages):
                ac.mbarrier_init(full[s:], 1)
            ac.fence_proxy_async("shared::cta")  # the inits, before the copy engine sees them
            # prologue: fill the ring
            for s in range(stages):
                t = first + s * step
                if t < ntiles:
                    b = t * words
                    ac.mbarrier_arrive_expect_tx(full[s:], chunk_bytes)
                    ac.cp_async_bulk_g2s(ring[s], src[b:b + words], full[s:])
            i = 0
            t = first
            while t < ntiles:
                slot = i % stages
                ac.mbarrier_wait_parity(full[slot:], (i // stages) & 1)
                b = t * words
                ac.cp_async_bulk_s2g(dst[b:b + words], ring[slot])
                ac.bulk_commit_group()
                if i > 0:
                    # the store of tile i-1 has read its chunk: refill it with tile i-1+stages
                    ac.bulk_wait_group(1, read=True)
                    nt = t + (stages - 1) * step
                    if nt < ntiles:
                        prev = (i - 1) % stages
                        nb = nt * words
                        ac.mbarrier_arrive_expect_tx(full[prev:], chunk_bytes)
                        ac.cp_async_bulk_g2s(ring[prev], src[nb:nb + words], full[prev:])
                i += 1
                t += step
            ac.bulk_wait_group(0)  # no store may still read the ring when the block exits
        # the tail past the last whole tile
        j = ntiles * words + first * cuda.blockDim.x + cuda.threadIdx.x
        while j < n:
            dst[j] = src[j]
            j += step * cuda.blockDim.x

    return bulk_copy


SIGNATURE = (types.uint32[::1], types.uint32[::1])


def tile_words(chunk_bytes: int = 8192) -> int:
    """uint32 words one bulk copy moves."""
    return chunk_bytes // 4


def blocks_per_sm(stages: int = 4, chunk_bytes: int = 8192) -> int:
    """Blocks that fit on one multiprocessor at once (shared memory, 32 blocks)."""
    return max(1, min(32, SM_SMEM // (smem_bytes(stages, chunk_bytes) + 1024)))


def grid_for(stages: int = 4, chunk_bytes: int = 8192, sms: int = 132) -> int:
    """A persistent grid: as many blocks as fit on every multiprocessor at once."""
    return sms * blocks_per_sm(stages, chunk_bytes)


#: configurations the benchmark sweeps: (stages, chunk_bytes)
SWEEP = ((4, 8192), (5, 8192), (8, 4096), (3, 12288), (2, 16384), (6, 4096))
