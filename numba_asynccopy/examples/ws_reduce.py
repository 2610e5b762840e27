"""Warp-specialized, cluster-multicast row-block reduction: ``Y = W @ X``.

``X`` is a tall 2-D float32 array (``n`` rows, ``cols`` columns) streamed
through shared memory once per cluster; ``W`` (``ctas * HEADS`` rows, ``n``
columns) holds the weights.  Each cluster of ``ctas`` CTAs owns one block of
:data:`BC` columns of ``X``; CTA rank ``r`` of the cluster computes rows
``r * HEADS .. r * HEADS + HEADS - 1`` of ``Y`` for those columns, so every
CTA of the cluster needs every row of the column block.

The ring is an ``ac.pipeline.cluster_tma_pipeline``: a tile of ``rows`` rows
is loaded in ``ctas`` parts, CTA ``r`` issuing part ``r`` (a TMA box of
``rows / ctas`` rows) and multicasting it to the same slot in every CTA of
the cluster, so the tile is read from global memory once per cluster and
lands whole in each CTA.  The pipeline arms each CTA's full barrier with its
box bytes times the CTAs (the parts its peers multicast there), and the
consumers release a slot in every CTA of the cluster (a remote arrive on
each CTA's empty barrier): a slot is refilled only when all CTAs are done
with it.

Each block is warp-specialized:

- warp 0 is the producer: one lane (``ac.elect_sync()``) acquires a slot,
  issues its part of the tile with ``copy_tensor`` and commits; the lane
  ends with ``producer_tail`` (no copy or release still in flight);
- warps 1 .. :data:`WARPS` are consumers: each thread owns one column, waits
  for the slot, accumulates ``HEADS`` weighted sums over the tile's rows,
  and after a ``syncwarp`` one lane per warp releases the slot (the
  pipeline counts :data:`WARPS` releases per CTA).

Rows past ``n`` load as zeros (TMA's out-of-bounds fill) and are skipped;
columns past ``cols`` are not written.  ``cols`` must be a multiple of 4
(TMA's 16-byte row stride).

Example::

    from numba import cuda
    import numba_asynccopy as ac
    from numba_asynccopy.examples import ws_reduce as wr

    kernel = cuda.jit(wr.SIGNATURE)(wr.make_ws_reduce(ctas=2))
    xmap = wr.make_map(d_x, ctas=2)                  # d_x: float32[n, cols] on the device
    kernel[wr.grid(cols, 2), wr.BLOCK](xmap, d_w, d_y, n)   # d_w: [2 * HEADS, n], d_y: [2 * HEADS, cols]
    # d_y == W @ X
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, types

import numba_asynccopy as ac

from .._rules import STATIC_SHARED_LIMIT

#: columns of X per cluster: one per consumer thread
BC = 128
#: consumer warps per block (BC / 32)
WARPS = BC // 32
#: threads per block: the producer warp and the consumer warps
BLOCK = 32 * (1 + WARPS)
#: rows of Y each CTA computes
HEADS = 2


def check_config(ctas: int, stages: int, rows: int) -> None:
    if ctas not in (2, 4, 8):
        raise ValueError(f"ctas must be 2, 4 or 8 (a portable cluster), got {ctas}")
    if stages < 2:
        raise ValueError(f"stages must be >= 2, got {stages}")
    if rows % ctas or not 1 <= rows // ctas <= 256:
        raise ValueError(f"rows={rows} must split into {ctas} TMA boxes of 1..256 rows")
    smem = stages * rows * BC * 4 + 16 * stages
    if smem > STATIC_SHARED_LIMIT:
        raise ValueError(f"the ring needs {smem} bytes of shared memory; static shared memory is "
                         f"limited to {STATIC_SHARED_LIMIT}")


@lru_cache(maxsize=None)
def make_ws_reduce(ctas: int = 2, stages: int = 4, rows: int = 16):
    """Python function ``ws_reduce(xmap, W, Y, n)`` (compile with
    ``cuda.jit(SIGNATURE)``; launch ``[grid(cols, ctas), BLOCK]``; ``xmap``
    from :func:`make_map` with the same ``ctas`` and ``rows``): ``Y = W @ X``
    with ``W`` of shape ``(ctas * HEADS, n)``, ``Y`` of ``(ctas * HEADS, cols)``.

    ``stages`` slots of ``rows`` rows each, every tile loaded in ``ctas``
    multicast parts.

    Example::

        kernel = cuda.jit(SIGNATURE)(make_ws_reduce(ctas=4, stages=3, rows=32))
    """
    check_config(ctas, stages, rows)
    sub = rows // ctas

    def ws_reduce(xmap, W, Y, n):
        ac.cluster_dims(ctas)
        bars = cuda.shared.array((2, stages), np.uint64)
        # a slot: the tile's ctas parts, each the box one CTA multicasts
        ring = cuda.shared.array((stages, ctas, sub, BC), np.float32, alignment=128)
        pipe = ac.pipeline.cluster_tma_pipeline(bars, stages, WARPS, ctas)
        ac.pipeline.init(pipe)  # every thread of every CTA: ends with a cluster barrier
        rank = ac.cluster_cta_rank()
        col0 = (cuda.blockIdx.x // ctas) * BC
        tid = cuda.threadIdx.x
        ntiles = np.uint32((n + rows - 1) // rows)
        if tid < 32:
            if ac.elect_sync():  # the producer lane
                ac.fence_proxy_tensormap(xmap)  # the map was written by the host
                st = ac.pipeline.producer_start(pipe)
                t = np.uint32(0)
                while t < ntiles:
                    ac.pipeline.producer_acquire(pipe, st)
                    # this CTA's part of tile t, multicast to the whole cluster
                    ac.pipeline.copy_tensor(pipe, st, ring[st.slot, rank], xmap,
                                            (t * np.uint32(rows) + rank * np.uint32(sub), col0),
                                            fence=False)
                    ac.pipeline.producer_commit(pipe, st)
                    st = ac.pipeline.advance(pipe, st)
                    t = np.uint32(t + np.uint32(1))
                ac.pipeline.producer_tail(pipe, st)
        else:
            c = tid - 32
            acc = cuda.local.array(HEADS, np.float32)
            for h in range(HEADS):
                acc[h] = 0.0
            st = ac.pipeline.consumer_start(pipe)
            t = np.uint32(0)
            while t < ntiles:
                ac.pipeline.consumer_wait(pipe, st)
                base = t * np.uint32(rows)
                for p in range(ctas):
                    for r in range(sub):
                        i = base + np.uint32(p * sub + r)
                        if i < n:
                            x = ring[st.slot, p, r, c]
                            for h in range(HEADS):
                                acc[h] += W[rank * HEADS + h, i] * x
                cuda.syncwarp()  # the warp's reads of the slot are done
                if c % 32 == 0:  # one release per consumer warp
                    ac.pipeline.consumer_release(pipe, st)
                st = ac.pipeline.advance(pipe, st)
                t = np.uint32(t + np.uint32(1))
            if col0 + c < Y.shape[1]:
                for h in range(HEADS):
                    Y[rank * HEADS + h, col0 + c] = acc[h]
        ac.cluster_sync()  # no CTA exits while a peer may still arrive on its barriers

    return ws_reduce


SIGNATURE = (types.uint64[::1], types.float32[:, ::1], types.float32[:, ::1], types.int64)


def grid(cols: int, ctas: int = 2) -> int:
    """Blocks: one cluster of ``ctas`` CTAs per block of :data:`BC` columns."""
    return -(-cols // BC) * ctas


def make_map(x, ctas: int = 2, rows: int = 16) -> "ac.TensorMap":
    """The tensor map of ``X`` (a 2-D float32 device array, ``cols`` a
    multiple of 4): boxes of ``rows / ctas`` rows by :data:`BC` columns."""
    if len(x.shape) != 2 or np.dtype(x.dtype) != np.float32:
        raise ValueError(f"x must be a 2-D float32 array, got {x.dtype} {tuple(x.shape)}")
    check_config(ctas, 2, rows)
    return ac.TensorMap(x, (rows // ctas, BC))


def reference(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``W @ X`` in float64."""
    return w.astype(np.float64) @ x.astype(np.float64)
