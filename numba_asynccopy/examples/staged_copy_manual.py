"""Staged copy with the cp.async ring written by hand: the reference the
pipelined :mod:`~numba_asynccopy.examples.staged_copy` is measured against.

Same factory name, signature, parameters and launch helpers as
:mod:`numba_asynccopy.examples.staged_copy` (imported from there); only the ring
differs: here its slots, parities and byte counts are computed by hand, as
they were before ``ac.pipeline`` existed.  The benchmark measures both in the
same run (rows "pipeline vs hand-written") and the CPU tests compare their
SASS instruction counts.

Example::

    from numba import cuda
    from numba_asynccopy.examples.staged_copy import SIGNATURE
    from numba_asynccopy.examples.staged_copy_manual import make_staged_copy

    kernel = cuda.jit(SIGNATURE)(make_staged_copy())
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy import load4, store4, view4

from ._tiles import block_tiles
from .staged_copy import (  # noqa: F401 (the launch helpers, re-exported)
    STATIC_SMEM_LIMIT, SIGNATURE, grid_for, grid_for_runs, smem_bytes,
    tile_words)

#: the factory, and the launch helpers of the pipelined module, re-exported
__all__ = ["SIGNATURE", "STATIC_SMEM_LIMIT", "grid_for", "grid_for_runs", "make_staged_copy",
           "smem_bytes", "tile_words"]


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
    in_flight = stages - 1  # a closure constant: wait_group needs a literal
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
        # prologue: stages-1 tiles in flight (empty groups keep the count right)
        for s in range(stages - 1):
            if s < count:
                t = base + s * stride
                for k in range(per_thread):
                    b = t * tile + (k * block + tid) * words
                    if vector:  # view4: no slice clamping in the address
                        ac.cp_async(ring[s, k, tid, :], view4(src, b), chunk_bytes)
                    else:
                        ac.cp_async(ring[s, k, tid, :], src[b:b + words], chunk_bytes)
            ac.commit_group()
        for i in range(count):
            t = base + i * stride
            slot = (i + stages - 1) % stages
            if i + stages - 1 < count:
                nt = t + (stages - 1) * stride
                for k in range(per_thread):
                    b = nt * tile + (k * block + tid) * words
                    if vector:
                        ac.cp_async(ring[slot, k, tid, :], view4(src, b), chunk_bytes)
                    else:
                        ac.cp_async(ring[slot, k, tid, :], src[b:b + words], chunk_bytes)
            ac.commit_group()
            ac.wait_group(in_flight)
            cur = i % stages
            for k in range(per_thread):
                b = t * tile + (k * block + tid) * words
                if vector:
                    store4(dst, b, load4(ring, (cur, k, tid, 0)))
                else:
                    for w in range(words):
                        dst[b + w] = ring[cur, k, tid, w]
        ac.wait_all()
        # the tail past the last whole tile
        j = ntiles * tile + first * block + tid
        while j < n:
            dst[j] = src[j]
            j += step * block

    return staged_copy
