"""Staged copy: global -> shared (cp.async) -> global, several stages in flight.

Each block walks tiles of ``block * chunk_bytes`` bytes with a grid stride.
A ring of ``stages`` shared buffers keeps ``stages - 1`` tiles in flight:
issue tile i+stages-1, commit, ``wait_group(stages-1)`` retires tile i, and
the thread copies its own chunk of tile i back to global memory.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, types

import numba_asynccopy as ac


@lru_cache(maxsize=None)
def make_staged_copy(stages: int = 4, chunk_bytes: int = 16, block: int = 256):
    """Python function ``copy(src, dst)`` over uint32 arrays (compile with cuda.jit)."""
    if stages < 2:
        raise ValueError("stages must be >= 2")
    words = chunk_bytes // 4
    tile = block * words
    in_flight = stages - 1  # a closure constant: wait_group needs a literal

    def staged_copy(src, dst):
        ring = cuda.shared.array((stages, block, words), np.uint32, alignment=16)
        tid = cuda.threadIdx.x
        ntiles = src.shape[0] // tile
        first = cuda.blockIdx.x
        step = cuda.gridDim.x
        # prologue: stages-1 tiles in flight (empty groups keep the count right)
        for s in range(stages - 1):
            t = first + s * step
            if t < ntiles:
                base = t * tile + tid * words
                ac.cp_async(ring[s, tid, :], src[base:base + words], chunk_bytes)
            ac.commit_group()
        i = 0
        t = first
        while t < ntiles:
            nt = t + (stages - 1) * step
            slot = (i + stages - 1) % stages
            if nt < ntiles:
                nbase = nt * tile + tid * words
                ac.cp_async(ring[slot, tid, :], src[nbase:nbase + words], chunk_bytes)
            ac.commit_group()
            ac.wait_group(in_flight)
            cur = i % stages
            base = t * tile + tid * words
            for w in range(words):
                dst[base + w] = ring[cur, tid, w]
            i += 1
            t += step
        ac.wait_all()

    return staged_copy


SIGNATURE = (types.uint32[::1], types.uint32[::1])


def tile_words(chunk_bytes: int = 16, block: int = 256) -> int:
    return block * chunk_bytes // 4
