"""Bulk copy with the ring written by hand: the reference the pipelined
:mod:`~numba_asynccopy.examples.bulk_copy` is measured against.

Same factory name, signature, parameters and launch helpers as
:mod:`numba_asynccopy.examples.bulk_copy` (imported from there); only the ring
differs: here its slots, parities and byte counts are computed by hand, as
they were before ``ac.pipeline`` existed.  The benchmark measures both in the
same run (rows "pipeline vs hand-written") and the CPU tests compare their
SASS instruction counts.

Example::

    from numba import cuda
    from numba_asynccopy.examples.bulk_copy import SIGNATURE
    from numba_asynccopy.examples.bulk_copy_manual import make_bulk_copy

    kernel = cuda.jit(SIGNATURE)(make_bulk_copy())
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda

import numba_asynccopy as ac

from ._tiles import block_tiles
from .bulk_copy import (  # noqa: F401 (the launch helpers, re-exported)
    BLOCK, SIGNATURE, check_config, grid_for, grid_for_runs, smem_bytes,
    tile_words)

#: the factory, and the launch helpers of the pipelined module, re-exported
__all__ = ["BLOCK", "SIGNATURE", "check_config", "grid_for", "grid_for_runs", "make_bulk_copy",
           "smem_bytes", "tile_words"]


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
            for s in range(stages):
                ac.mbarrier_init(full[s:], 1)
            ac.fence_proxy_async("shared::cta")  # the inits, before the copy engine sees them
            # prologue: fill the ring (a block with fewer tiles than stages fills part of it)
            for s in range(stages):
                if s < count:
                    b = (base + s * stride) * words
                    ac.mbarrier_arrive_expect_tx(full[s:], chunk_bytes)
                    ac.cp_async_bulk_g2s(ring[s], src[b:b + words], full[s:])
            for i in range(count):
                # slot and parity from the block-local counter: slot i % stages
                # is used for the (i // stages)-th time by this block
                slot = i % stages
                ac.mbarrier_wait_parity(full[slot:], (i // stages) & 1)
                b = (base + i * stride) * words
                ac.cp_async_bulk_s2g(dst[b:b + words], ring[slot])
                ac.bulk_commit_group()
                if i > 0:
                    # the store of tile i-1 has read its chunk: refill it with tile i-1+stages
                    ac.bulk_wait_group(1, read=True)
                    if i + stages - 1 < count:
                        prev = (i - 1) % stages
                        nb = (base + (i + stages - 1) * stride) * words
                        ac.mbarrier_arrive_expect_tx(full[prev:], chunk_bytes)
                        ac.cp_async_bulk_g2s(ring[prev], src[nb:nb + words], full[prev:])
            ac.bulk_wait_group(0)  # no store may still read the ring when the block exits
        # the tail past the last whole tile
        j = ntiles * words + first * cuda.blockDim.x + cuda.threadIdx.x
        while j < n:
            dst[j] = src[j]
            j += step * cuda.blockDim.x

    return bulk_copy
