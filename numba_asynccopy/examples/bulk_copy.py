"""Bulk copy: global -> shared -> global with 1-D ``cp.async.bulk``, no registers.

The array is cut into tiles of ``chunk_bytes`` bytes.  Two ways to hand
them to blocks (``run``):

- ``run=0``: a persistent grid (:func:`grid_for`, sized by
  :func:`blocks_per_sm`) walks the tiles with a grid stride;
- ``run=N``: block ``b`` copies the ``N`` consecutive tiles from ``b * N``
  (grid :func:`grid_for_runs`; the last run may be partial, and blocks past
  the last tile only help with the tail).

Both are ``base + i * stride`` for the block-local tile counter
``i < count``.  In every block ONE thread runs the whole ring, an
``ac.pipeline.tma_pipeline(full, stages, consumers=0)`` (full barriers
only: the thread frees slots itself); the data never passes through
registers, and the kernel computes no slot, parity or byte count:

- load: ``producer_acquire``, ``copy_bulk(pipe, ps, ring[ps.slot],
  src[tile])`` (the pipeline arms the slot's barrier with the chunk's bytes
  in its arrival, then issues ``cp_async_bulk_g2s``), ``producer_commit``;
- for tile i: ``consumer_wait``, store the chunk with ``cp_async_bulk_s2g``
  and commit it as a bulk group;
- then ``bulk_wait_group(1, read=True)``: the store of tile i-1 has *read*
  its chunk, so its slot is released (``consumer_release``) and refilled
  with tile i-1+stages.  ``stages - 1`` loads and one or two stores stay in
  flight.

The ring written by hand (slots, parities and ``expect_tx`` bytes computed
in the kernel) is :mod:`numba_asynccopy.examples.bulk_copy_manual`.

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
    from numba_asynccopy.examples.bulk_copy import (BLOCK, SIGNATURE, grid_for, grid_for_runs,
                                                     make_bulk_copy)

    copy = cuda.jit(SIGNATURE)(make_bulk_copy(stages=4, chunk_bytes=8192))
    copy[grid_for(4, 8192), BLOCK](src, dst)      # src, dst: uint32[n] on the device

    # or 8 consecutive tiles per block
    runs = cuda.jit(SIGNATURE)(make_bulk_copy(stages=4, chunk_bytes=8192, run=8))
    runs[grid_for_runs(n, 8192, 8), BLOCK](src, dst)
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, types

import numba_asynccopy as ac

from ._tiles import block_tiles

#: static shared memory a block may declare without an opt-in
from .._rules import STATIC_SHARED_LIMIT as STATIC_SMEM_LIMIT  # noqa: E402 (one definition)
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
def make_bulk_copy(stages: int = 4, chunk_bytes: int = 8192, run: int = 0):
    """Python function ``bulk_copy(src, dst)`` over uint32[::1] arrays
    (compile with ``cuda.jit(SIGNATURE)``; launch with :data:`BLOCK` threads
    and a grid from :func:`grid_for`, or :func:`grid_for_runs` when ``run``).

    ``stages`` (>= 2) shared chunks of ``chunk_bytes`` (a multiple of 16)
    each; one bulk load and one bulk store per chunk.  ``run`` 0 walks the
    tiles with a grid stride; ``run`` N gives block ``b`` tiles ``b * N`` ..
    ``b * N + N - 1`` (blocks past the last tile only help with the tail).
    Any grid copies everything with ``run`` 0; with ``run`` N the grid needs
    at least ``ceil(tiles / N)`` blocks (:func:`grid_for_runs`).

    Example::

        copy = cuda.jit(SIGNATURE)(make_bulk_copy(6, 4096, run=16))
        copy[grid_for_runs(src.size, 4096, 16), BLOCK](src, dst)
    """
    check_config(stages, chunk_bytes)
    if run < 0:
        raise ValueError(f"run must be 0 (grid stride) or the tiles per block, got {run}")
    words = chunk_bytes // 4

    def bulk_copy(src, dst):
        ring = cuda.shared.array((stages, words), np.uint32, alignment=128)
        full = cuda.shared.array(stages, np.uint64, alignment=8)
        n = src.shape[0]
        ntiles = n // words
        first = cuda.blockIdx.x
        step = cuda.gridDim.x
        # the block's tiles: base + i * stride for i < count
        base, stride, count = block_tiles(ntiles, run)
        if cuda.threadIdx.x == 0:
            pipe = ac.pipeline.tma_pipeline(full, stages, 0)  # one thread runs the ring
            ac.pipeline.init(pipe)
            ps = ac.pipeline.producer_start(pipe)
            cs = ac.pipeline.consumer_start(pipe)
            # prologue: fill the ring (a block with fewer tiles than stages fills part of it)
            for s in range(stages):
                if s < count:
                    b = (base + s * stride) * words
                    ac.pipeline.producer_acquire(pipe, ps)
                    ac.pipeline.copy_bulk(pipe, ps, ring[ps.slot], src[b:b + words])
                    ac.pipeline.producer_commit(pipe, ps)
                    ps = ac.pipeline.advance(pipe, ps)
            prev = cs
            for i in range(count):
                ac.pipeline.consumer_wait(pipe, cs)
                b = (base + i * stride) * words
                ac.cp_async_bulk_s2g(dst[b:b + words], ring[cs.slot])
                ac.bulk_commit_group()
                if i > 0:
                    # the store of tile i-1 has read its chunk: release it, refill it
                    ac.bulk_wait_group(1, read=True)
                    ac.pipeline.consumer_release(pipe, prev)
                    if i + stages - 1 < count:
                        nb = (base + (i + stages - 1) * stride) * words
                        ac.pipeline.producer_acquire(pipe, ps)
                        ac.pipeline.copy_bulk(pipe, ps, ring[ps.slot], src[nb:nb + words])
                        ac.pipeline.producer_commit(pipe, ps)
                        ps = ac.pipeline.advance(pipe, ps)
                prev = cs
                cs = ac.pipeline.advance(pipe, cs)
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


def grid_for_runs(n: int, chunk_bytes: int = 8192, run: int = 16) -> int:
    """The grid for ``run`` tiles per block over ``n`` uint32 words: one block
    per run, the last run possibly partial (no occupancy limit: blocks wait
    for a multiprocessor like any non-persistent grid)."""
    if run < 1:
        raise ValueError(f"run must be >= 1 for a grid of runs, got {run}")
    ntiles = n // tile_words(chunk_bytes)
    return max(1, (ntiles + run - 1) // run)


#: configurations the benchmark sweeps: (stages, chunk_bytes), a persistent
#: grid with a grid stride
SWEEP = ((4, 8192), (5, 8192), (8, 4096), (3, 12288), (2, 16384), (6, 4096))
#: and (stages, chunk_bytes, run): ``run`` consecutive tiles per block
RUN_SWEEP = ((8, 4096, 16), (6, 4096, 16), (4, 8192, 8), (4, 4096, 32))
