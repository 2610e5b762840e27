"""Staged copy: global -> shared (cp.async) -> global, several stages in flight.

The array is cut into tiles of ``block * per_thread * chunk_bytes`` bytes.
Two ways to hand them to blocks (``run``):

- ``run=0``: a persistent grid (:func:`grid_for`) walks the tiles with a grid
  stride;
- ``run=N``: block ``b`` copies the ``N`` consecutive tiles from ``b * N``
  (grid :func:`grid_for_runs`).  On the H200 this reads and writes about 4 %
  faster than the grid stride (each block streams its own contiguous run).

Each thread owns ``per_thread`` chunks of a tile (chunk
``k * block + tid``, so every warp reads and writes whole 512-byte runs).  A
ring of ``stages`` shared buffers, ``ac.pipeline.group_pipeline(stages)``,
keeps ``stages - 1`` tiles in flight: acquire the producer's slot, issue
tile i+stages-1 into it, commit (a cp.async group), ``consumer_wait``
(``wait_group(stages-1)``) retires tile i, and the thread copies its own
chunks of tile i back to global memory.  A thread only reads shared bytes
that its own cp.async wrote, so ``wait_group`` alone orders them (no block
barrier).  Elements past the last whole tile are copied with plain loads by
the whole grid.  The ring written by hand is
:mod:`numba_asynccopy.examples.staged_copy_manual`.

The store side uses 16-byte vector accesses (``load4``/``store4``) when
``chunk_bytes`` is 16: a quarter of the instructions of element stores.

Example::

    from numba import cuda
    from numba_asynccopy.examples.staged_copy import SIGNATURE, make_staged_copy, grid_for

    copy = cuda.jit(SIGNATURE)(make_staged_copy(stages=4, per_thread=2, block=256))
    copy[grid_for(4, 16, 256, 2), 256](src, dst)     # src, dst: uint32[n] on the device
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, types

import numba_asynccopy as ac
from numba_asynccopy import load4, store4, view4

from ._tiles import block_tiles

#: static shared memory a block may declare without an opt-in
from .._rules import STATIC_SHARED_LIMIT as STATIC_SMEM_LIMIT  # noqa: E402 (one definition)
#: shared memory of one H100/H200 multiprocessor usable by blocks
SM_SMEM = 228 * 1024


@lru_cache(maxsize=None)
def make_staged_copy(stages: int = 4, chunk_bytes: int = 16, block: int = 256, per_thread: int = 2,
                     run: int = 0):
    """Python function ``staged_copy(src, dst)`` over uint32[::1] arrays
    (compile with ``cuda.jit(SIGNATURE)``; launch with ``block`` threads).

    ``stages`` (>= 2) shared buffers, ``chunk_bytes`` (4, 8 or 16) per
    cp.async, ``per_thread`` chunks per thread and stage; ``run`` 0 for a
    grid-stride walk over the tiles, else the tiles per block (launch with
    :func:`grid_for_runs`: blocks past the last tile only help with the tail).
    """
    if stages < 2:
        raise ValueError("stages must be >= 2")
    if chunk_bytes not in (4, 8, 16):
        raise ValueError("chunk_bytes must be 4, 8 or 16")
    if per_thread < 1 or block < 32 or block % 32:
        raise ValueError("per_thread must be >= 1 and block a multiple of 32")
    if run < 0:
        raise ValueError("run must be 0 (grid stride) or the tiles per block")
    smem = smem_bytes(stages, chunk_bytes, block, per_thread)
    if smem > STATIC_SMEM_LIMIT:
        raise ValueError(f"the ring needs {smem} bytes of shared memory; static shared "
                         f"memory is limited to {STATIC_SMEM_LIMIT}")
    words = chunk_bytes // 4
    tile = block * per_thread * words
    vector = chunk_bytes == 16

    def staged_copy(src, dst):
        ring = cuda.shared.array((stages, per_thread, block, words), np.uint32, alignment=16)
        tid = cuda.threadIdx.x
        n = src.shape[0]
        ntiles = n // tile
        first = cuda.blockIdx.x
        step = cuda.gridDim.x
        # the block's tiles: base + i * stride for i < count
        base, stride, count = block_tiles(ntiles, run)
        pipe = ac.pipeline.group_pipeline(stages)
        ps = ac.pipeline.producer_start(pipe)
        cs = ac.pipeline.consumer_start(pipe)
        # prologue: stages-1 tiles in flight (empty stages committed too: the
        # wait counts groups)
        for s in range(stages - 1):
            ac.pipeline.producer_acquire(pipe, ps)
            if s < count:
                t = base + s * stride
                for k in range(per_thread):
                    b = t * tile + (k * block + tid) * words
                    if vector:  # view4: no slice clamping in the address
                        ac.cp_async(ring[ps.slot, k, tid, :], view4(src, b), chunk_bytes)
                    else:
                        ac.cp_async(ring[ps.slot, k, tid, :], src[b:b + words], chunk_bytes)
            ac.pipeline.producer_commit(pipe, ps)
            ps = ac.pipeline.advance(pipe, ps)
        for i in range(count):
            t = base + i * stride
            ac.pipeline.producer_acquire(pipe, ps)
            if i + stages - 1 < count:
                nt = t + (stages - 1) * stride
                for k in range(per_thread):
                    b = nt * tile + (k * block + tid) * words
                    if vector:
                        ac.cp_async(ring[ps.slot, k, tid, :], view4(src, b), chunk_bytes)
                    else:
                        ac.cp_async(ring[ps.slot, k, tid, :], src[b:b + words], chunk_bytes)
            ac.pipeline.producer_commit(pipe, ps)
            ps = ac.pipeline.advance(pipe, ps)
            ac.pipeline.consumer_wait(pipe, cs)  # tile i landed
            for k in range(per_thread):
                b = t * tile + (k * block + tid) * words
                if vector:
                    store4(dst, b, load4(ring, (cs.slot, k, tid, 0)))
                else:
                    for w in range(words):
                        dst[b + w] = ring[cs.slot, k, tid, w]
            ac.pipeline.consumer_release(pipe, cs)
            cs = ac.pipeline.advance(pipe, cs)
        ac.pipeline.producer_tail(pipe, ps)
        # the tail past the last whole tile
        j = ntiles * tile + first * block + tid
        while j < n:
            dst[j] = src[j]
            j += step * block

    return staged_copy


SIGNATURE = (types.uint32[::1], types.uint32[::1])


def smem_bytes(stages: int = 4, chunk_bytes: int = 16, block: int = 256, per_thread: int = 2) -> int:
    """Shared memory of one block's ring."""
    return stages * per_thread * block * chunk_bytes


def tile_words(chunk_bytes: int = 16, block: int = 256, per_thread: int = 2) -> int:
    """uint32 words one block moves per stage."""
    return block * per_thread * chunk_bytes // 4


def grid_for(stages: int = 4, chunk_bytes: int = 16, block: int = 256, per_thread: int = 2,
             sms: int = 132) -> int:
    """A persistent grid: as many blocks as fit on every multiprocessor at once."""
    per_sm = min(2048 // block, 32, SM_SMEM // (smem_bytes(stages, chunk_bytes, block, per_thread) + 1024))
    return sms * max(1, per_sm)


def grid_for_runs(n: int, chunk_bytes: int = 16, block: int = 256, per_thread: int = 2,
                  run: int = 8) -> int:
    """The grid for ``run`` tiles per block over ``n`` uint32 words."""
    ntiles = n // tile_words(chunk_bytes, block, per_thread)
    return max(1, (ntiles + run - 1) // run)


#: configurations the benchmark sweeps: (stages, chunk_bytes, block, per_thread),
#: a persistent grid with a grid stride
SWEEP = ((4, 16, 256, 1), (4, 16, 256, 2), (4, 16, 128, 4), (3, 16, 256, 4), (6, 16, 128, 2))
#: and (stages, chunk_bytes, block, per_thread, run): ``run`` tiles per block
RUN_SWEEP = ((3, 16, 128, 2, 4), (4, 16, 128, 1, 16), (4, 16, 128, 2, 8), (4, 16, 256, 1, 8))
