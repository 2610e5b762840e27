"""TMA tile copy: a 2-D tensor copied box by box through shared memory.

Two :class:`numba_asynccopy.TensorMap` objects describe the source and the
destination (same shape, 4-byte elements, the same ``box``).  The boxes of
the tensor are numbered in row-major order (linear box index ``t``: box row
``t // tiles_c``, box column ``t % tiles_c``).  Two ways to hand them to
blocks (``run``):

- ``run=0``: a persistent grid (:func:`grid_for`) walks the boxes with a
  grid stride;
- ``run=N``: block ``b`` copies boxes ``b * N`` .. ``b * N + N - 1`` (grid
  :func:`grid_for_runs`; the last run may be partial, blocks past the last
  box exit at once).

Both are ``base + i * stride`` for the block-local box counter ``i < count``.
In every block ONE thread runs the ring, an ``ac.pipeline.tma_pipeline(full,
stages, consumers=0)`` of ``stages`` shared tiles of one box each (full
barriers only: the thread frees slots itself).  The data never passes
through registers and the kernel computes no slot, parity or byte count:

- load: ``producer_acquire``, ``copy_tensor(pipe, ps, ring[ps.slot],
  src_map, (r0, c0))`` (the pipeline arms the slot's barrier with the
  tile's bytes in its arrival, then issues the TMA load),
  ``producer_commit``;
- for box i: ``consumer_wait``,
  ``cp_async_bulk_tensor_store(dst_map, (r0, c0), ring[cs.slot])``,
  commit it as a bulk group;
- ``bulk_wait_group(1, read=True)``: the store of box i-1 has read its tile,
  which is released (``consumer_release``) and refilled with box
  i-1+stages.

The ring written by hand is :mod:`numba_asynccopy.examples.tma_copy_manual`.

Edges need no code: a box that runs past the tensor loads zeros there
(``oob_fill="zero"``) and its store writes only the in-bounds elements.
So any shape works whose row stride is a multiple of 16 bytes (TMA's rule:
``cols`` a multiple of 4).

The maps live in global memory (a TensorMap is a ``uint64[::1]`` buffer in
the kernel): the issuing thread fences the tensormap proxy once per map
(``fence_proxy_tensormap``) and the copies pass ``fence=False``.

Example::

    from numba import cuda
    import numba_asynccopy as ac
    from numba_asynccopy.examples.tma_copy import (BLOCK, SIGNATURE, grid_for, grid_for_runs,
                                                    make_tma_copy)

    stages, box = 4, (32, 64)
    copy = cuda.jit(SIGNATURE)(make_tma_copy(stages, box))
    smap, dmap = ac.TensorMap(src, box), ac.TensorMap(dst, box)   # src, dst: uint32[rows, cols]
    copy[grid_for(stages, box), BLOCK](smap, dmap, rows, cols)

    # or 8 consecutive boxes per block
    runs = cuda.jit(SIGNATURE)(make_tma_copy(stages, box, run=8))
    runs[grid_for_runs(rows, cols, box, 8), BLOCK](smap, dmap, rows, cols)
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
#: threads per block: one issuing thread (lane 0)
BLOCK = 32
#: element size the kernels are built for (the tile is uint32; any 4-byte dtype copies bit-exactly)
ITEMSIZE = 4


def box_bytes(box: tuple[int, int]) -> int:
    return box[0] * box[1] * ITEMSIZE


def smem_bytes(stages: int = 4, box: tuple[int, int] = (32, 64)) -> int:
    """Static shared memory of one block: the ring and its barriers."""
    return stages * box_bytes(box) + 8 * stages


def check_config(stages: int, box: tuple[int, int]) -> None:
    if stages < 2:
        raise ValueError(f"stages must be >= 2 (one box loading while one is stored), got {stages}")
    if len(box) != 2 or not all(1 <= b <= 256 for b in box):
        raise ValueError(f"box must be two extents in 1..256 (TMA's limit), got {box}")
    if box[1] * ITEMSIZE % 16:
        raise ValueError(f"box[1]={box[1]} spans {box[1] * ITEMSIZE} bytes; TMA needs a "
                         "multiple of 16 bytes")
    if box_bytes(box) % 128:
        raise ValueError(f"box {box} holds {box_bytes(box)} bytes; every tile of the ring must "
                         "start 128-byte aligned (TMA's rule), so a box must be a multiple of 128 bytes")
    smem = smem_bytes(stages, box)
    if smem > STATIC_SMEM_LIMIT:
        raise ValueError(f"the ring needs {smem} bytes of shared memory; static shared "
                         f"memory is limited to {STATIC_SMEM_LIMIT}")


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

    def tma_copy(src_map, dst_map, rows, cols):
        ring = cuda.shared.array((stages, BR, BC), np.uint32, alignment=128)
        full = cuda.shared.array(stages, np.uint64, alignment=8)
        tiles_c = (cols + BC - 1) // BC
        ntiles = ((rows + BR - 1) // BR) * tiles_c
        # the block's boxes: base + i * stride for i < count
        base, stride, count = block_tiles(ntiles, run)
        if cuda.threadIdx.x == 0 and count > 0:
            pipe = ac.pipeline.tma_pipeline(full, stages, 0)  # one thread runs the ring
            ac.pipeline.init(pipe)
            # the maps were written by the host: one tensormap fence each, then fence=False
            ac.fence_proxy_tensormap(src_map)
            ac.fence_proxy_tensormap(dst_map)
            ac.prefetch_tensormap(src_map, fence=False)
            ac.prefetch_tensormap(dst_map, fence=False)
            ps = ac.pipeline.producer_start(pipe)
            cs = ac.pipeline.consumer_start(pipe)
            # prologue: fill the ring (a block with fewer boxes than stages fills part of it)
            for s in range(stages):
                if s < count:
                    t = base + s * stride
                    tr = t // tiles_c
                    ac.pipeline.producer_acquire(pipe, ps)
                    ac.pipeline.copy_tensor(pipe, ps, ring[ps.slot], src_map,
                                            (tr * BR, (t - tr * tiles_c) * BC), fence=False)
                    ac.pipeline.producer_commit(pipe, ps)
                    ps = ac.pipeline.advance(pipe, ps)
            prev = cs
            for i in range(count):
                ac.pipeline.consumer_wait(pipe, cs)
                t = base + i * stride
                tr = t // tiles_c
                ac.cp_async_bulk_tensor_store(dst_map, (tr * BR, (t - tr * tiles_c) * BC), ring[cs.slot],
                                              fence=False)
                ac.bulk_commit_group()
                if i > 0:
                    # the store of box i-1 has read its tile: release it, refill it
                    ac.bulk_wait_group(1, read=True)
                    ac.pipeline.consumer_release(pipe, prev)
                    if i + stages - 1 < count:
                        nt = t + (stages - 1) * stride
                        nr = nt // tiles_c
                        ac.pipeline.producer_acquire(pipe, ps)
                        ac.pipeline.copy_tensor(pipe, ps, ring[ps.slot], src_map,
                                                (nr * BR, (nt - nr * tiles_c) * BC), fence=False)
                        ac.pipeline.producer_commit(pipe, ps)
                        ps = ac.pipeline.advance(pipe, ps)
                prev = cs
                cs = ac.pipeline.advance(pipe, cs)
            ac.bulk_wait_group(0)  # no store may still read the ring when the block exits

    return tma_copy


SIGNATURE = (types.uint64[::1], types.uint64[::1], types.int64, types.int64)


def blocks_per_sm(stages: int = 4, box: tuple[int, int] = (32, 64)) -> int:
    """Blocks that fit on one multiprocessor at once (shared memory, 32 blocks)."""
    return max(1, min(32, SM_SMEM // (smem_bytes(stages, box) + 1024)))


def grid_for(stages: int = 4, box: tuple[int, int] = (32, 64), sms: int = 132) -> int:
    """A persistent grid: as many blocks as fit on every multiprocessor at once."""
    return sms * blocks_per_sm(stages, box)


def grid_for_runs(rows: int, cols: int, box: tuple[int, int] = (32, 64), run: int = 16) -> int:
    """The grid for ``run`` boxes per block over a ``rows x cols`` tensor: one
    block per run, the last run possibly partial (no occupancy limit)."""
    if run < 1:
        raise ValueError(f"run must be >= 1 for a grid of runs, got {run}")
    ntiles = -(-rows // box[0]) * -(-cols // box[1])
    return max(1, (ntiles + run - 1) // run)


def make_maps(src, dst, box: tuple[int, int]) -> tuple["ac.TensorMap", "ac.TensorMap"]:
    """The two tensor maps of a copy (``src``, ``dst``: 2-D device arrays of
    one shape and a 4-byte dtype)."""
    if tuple(src.shape) != tuple(dst.shape) or len(src.shape) != 2:
        raise ValueError(f"src {tuple(src.shape)} and dst {tuple(dst.shape)} must be 2-D of one shape")
    for name, a in (("src", src), ("dst", dst)):
        if np.dtype(a.dtype).itemsize != ITEMSIZE:
            raise ValueError(f"`{name}` has {np.dtype(a.dtype).itemsize}-byte elements; "
                             f"the kernel copies {ITEMSIZE}-byte ones")
    return ac.TensorMap(src, box), ac.TensorMap(dst, box)


#: configurations the benchmark sweeps: (stages, (box rows, box cols)), a
#: persistent grid with a grid stride
SWEEP = ((4, (32, 64)), (5, (32, 64)), (2, (32, 128)), (2, (64, 64)), (5, (16, 128)), (8, (16, 64)), (4, (8, 256)))
#: and (stages, box, run): ``run`` consecutive boxes per block (shapes of
#: SWEEP, so the twin instantiates them already)
RUN_SWEEP = ((2, (32, 128), 8), (4, (8, 256), 16), (2, (64, 64), 8), (4, (32, 64), 16))
