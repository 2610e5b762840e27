"""TMA tile copy with the ring written by hand: the reference the pipelined
:mod:`~numba_asynccopy.examples.tma_copy` is measured against.

Same factory name, signature, parameters and launch helpers as
:mod:`numba_asynccopy.examples.tma_copy` (imported from there); only the ring
differs: here its slots, parities and byte counts are computed by hand, as
they were before ``ac.pipeline`` existed.  The benchmark measures both in the
same run (rows "pipeline vs hand-written") and the CPU tests compare their
SASS instruction counts.

Example::

    from numba import cuda
    from numba_asynccopy.examples.tma_copy import SIGNATURE
    from numba_asynccopy.examples.tma_copy_manual import make_tma_copy

    kernel = cuda.jit(SIGNATURE)(make_tma_copy())
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda

import numba_asynccopy as ac

from ._tiles import block_tiles
from .tma_copy import (  # noqa: F401 (the launch helpers, re-exported)
    BLOCK, SIGNATURE, box_bytes, check_config, grid_for, grid_for_runs,
    make_maps)

#: the factory, and the launch helpers of the pipelined module, re-exported
__all__ = ["BLOCK", "SIGNATURE", "box_bytes", "check_config", "grid_for", "grid_for_runs",
           "make_maps", "make_tma_copy"]


@lru_cache(maxsize=None)
def make_tma_copy(stages: int = 4, box: tuple[int, int] = (32, 64), run: int = 0):
    """Python function ``tma_copy(src_map, dst_map, rows, cols)``: copy a
    ``rows x cols`` tensor of 4-byte elements from ``src_map``'s tensor to
    ``dst_map``'s (compile with ``cuda.jit(SIGNATURE)``; both maps built with
    this ``box``; launch with :data:`BLOCK` threads, grid from :func:`grid_for`,
    or :func:`grid_for_runs` when ``run``).

    ``run`` 0 walks the boxes with a grid stride (any grid copies
    everything); ``run`` N gives block ``b`` the boxes ``b * N`` ..
    ``b * N + N - 1`` in row-major box order (the grid needs at least
    ``ceil(boxes / N)`` blocks; more exit at once).

    Example::

        copy = cuda.jit(SIGNATURE)(make_tma_copy(4, (8, 256), run=16))
        copy[grid_for_runs(rows, cols, (8, 256), 16), BLOCK](smap, dmap, rows, cols)
    """
    box = tuple(int(b) for b in box)
    check_config(stages, box)
    if run < 0:
        raise ValueError(f"run must be 0 (grid stride) or the boxes per block, got {run}")
    BR, BC = box
    nbytes = box_bytes(box)

    def tma_copy(src_map, dst_map, rows, cols):
        ring = cuda.shared.array((stages, BR, BC), np.uint32, alignment=128)
        full = cuda.shared.array(stages, np.uint64, alignment=8)
        tiles_c = (cols + BC - 1) // BC
        ntiles = ((rows + BR - 1) // BR) * tiles_c
        # the block's boxes: base + i * stride for i < count
        base, stride, count = block_tiles(ntiles, run)
        if cuda.threadIdx.x == 0 and count > 0:
            for s in range(stages):
                ac.mbarrier_init(full[s:], 1)
            ac.fence_proxy_async("shared::cta")  # the inits, before the copy engine sees them
            # the maps were written by the host: one tensormap fence each, then fence=False
            ac.fence_proxy_tensormap(src_map)
            ac.fence_proxy_tensormap(dst_map)
            ac.prefetch_tensormap(src_map, fence=False)
            ac.prefetch_tensormap(dst_map, fence=False)
            # prologue: fill the ring (a block with fewer boxes than stages fills part of it)
            for s in range(stages):
                if s < count:
                    t = base + s * stride
                    tr = t // tiles_c
                    ac.mbarrier_arrive_expect_tx(full[s:], nbytes)
                    ac.cp_async_bulk_tensor_load(ring[s], src_map, (tr * BR, (t - tr * tiles_c) * BC),
                                                 full[s:], fence=False)
            for i in range(count):
                # slot and parity from the block-local counter: slot i % stages
                # is used for the (i // stages)-th time by this block
                slot = i % stages
                ac.mbarrier_wait_parity(full[slot:], (i // stages) & 1)
                t = base + i * stride
                tr = t // tiles_c
                ac.cp_async_bulk_tensor_store(dst_map, (tr * BR, (t - tr * tiles_c) * BC), ring[slot],
                                              fence=False)
                ac.bulk_commit_group()
                if i > 0:
                    # the store of box i-1 has read its tile: refill it with box i-1+stages
                    ac.bulk_wait_group(1, read=True)
                    if i + stages - 1 < count:
                        nt = t + (stages - 1) * stride
                        prev = (i - 1) % stages
                        nr = nt // tiles_c
                        ac.mbarrier_arrive_expect_tx(full[prev:], nbytes)
                        ac.cp_async_bulk_tensor_load(ring[prev], src_map, (nr * BR, (nt - nr * tiles_c) * BC),
                                                     full[prev:], fence=False)
            ac.bulk_wait_group(0)  # no store may still read the ring when the block exits

    return tma_copy
