"""Kernels that measure a ceiling for a benchmark row, not examples.

``dsmem_ceiling``: the DSMEM bulk-copy bandwidth the cluster exchange could
reach if its rounds did not depend on each other.  Every CTA of a 2-CTA (or
larger) cluster sends its own tile ``rounds`` times into the next rank's
receive buffer with ``cp_async_bulk_cluster``, all copies in flight at once
(spread over :data:`NBARS` mbarriers, so no barrier's transaction count
passes 2**20 - 1); then each CTA writes the tile it received.  The result is
the ring shift by one (``exchange.expected(A, 1)``), so the benchmark checks
it like the exchange.  Same grid, block, tile and bytes as the exchange.

Example::

    k = cuda.jit(ceilings.DSMEM_CEILING_SIGNATURE)(ceilings.dsmem_ceiling)
    ac.launch(k, blocks, exchange.BLOCK, (A, out, np.int32(64)), cluster=2)
"""

from __future__ import annotations

import numpy as np
from numba import cuda, types

import numba_asynccopy as ac

from .. import load4, store4
from ..examples.exchange import BLOCK, TILE, TILE_BYTES, VECS

#: mbarriers the copies are spread over; ``rounds`` must be a multiple
NBARS = 8


def dsmem_ceiling(A, out, rounds):
    buf = cuda.shared.array((2, TILE), np.float32, alignment=128)  # 0: own tile, 1: received
    bars = cuda.shared.array(NBARS, np.uint64, alignment=8)
    tid = cuda.threadIdx.x
    b = cuda.blockIdx.x
    nxt = (ac.cluster_cta_rank() + 1) % ac.cluster_num_ctas()
    per = rounds // NBARS
    for v in range(VECS):
        e = 4 * (v * BLOCK + tid)
        store4(buf, (0, e), load4(A, (b, e)))
    ac.fence_proxy_async("shared::cta")  # generic writes -> the bulk copies' reads
    if tid == 0:
        for k in range(NBARS):
            ac.mbarrier_init(bars[k:], 1)
        ac.fence_mbarrier_init()
        for k in range(NBARS):
            ac.mbarrier_arrive_expect_tx(bars[k:], per * TILE_BYTES)
    ac.cluster_sync()  # every receiver expects its bytes before any copy is issued
    if tid == 0:
        for r in range(per * NBARS):
            ac.cp_async_bulk_cluster(buf[1, :], buf[0, :], TILE_BYTES, bars[r % NBARS:], nxt)
    for k in range(NBARS):
        ac.mbarrier_wait_parity(bars[k:], 0)
    for v in range(VECS):
        e = 4 * (v * BLOCK + tid)
        store4(out, (b, e), load4(buf, (1, e)))
    ac.cluster_sync()  # no CTA exits while a copy may still read its tile


DSMEM_CEILING_SIGNATURE = (types.float32[:, ::1], types.float32[:, ::1], types.int32)
