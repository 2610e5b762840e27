"""Cluster neighbour exchange: every CTA of a cluster passes a 16 KB tile to
the next rank of its cluster, ``rounds`` times (a ring shift), through
distributed shared memory with the cluster bulk copy, or through global
memory.

Both kernels load tile ``A[b]`` of block ``b`` into shared memory once, run
``rounds`` exchange rounds, and write the tile they hold at the end to
``out[b]``.  After ``rounds`` rounds, rank ``i`` of a cluster of ``n`` holds
the tile its cluster's rank ``(i - rounds) mod n`` started with
(:func:`expected`).  Each round moves ``TILE_BYTES`` per CTA; the work of a
launch is ``rounds * blocks * TILE_BYTES`` bytes.

- ``exchange_dsmem``: two shared buffers and two mbarriers per CTA.  Round
  ``r`` sends the buffer received in round ``r - 1`` into the next rank's
  buffer ``r % 2`` with one ``cp_async_bulk_cluster`` (one thread, one
  instruction), completing on that rank's barrier ``r % 2``; the receiver
  expects the bytes, waits on the barrier's phase, and one ``cluster_sync``
  per round frees the buffer the next round overwrites (a source is fully
  read once its copy completed at the destination).
- ``exchange_global``: the same rounds through two global slots per block
  (``scratch[r % 2, b]``): each thread stores its 64 bytes of the tile with
  16-byte stores, ``cluster_sync`` (release/acquire at cluster scope) makes
  them visible to the cluster, and each thread loads its 64 bytes of the
  previous rank's slot back into shared memory.  A slot is rewritten two
  rounds later, after a ``cluster_sync`` that follows its last read.

Launch both with a cluster shape (``ac.launch(..., cluster=CLUSTER)``), grid
a multiple of the cluster size, ``BLOCK`` threads.

Example::

    from numba import cuda
    import numba_asynccopy as ac
    from numba_asynccopy.examples import exchange as ex

    k = cuda.jit(ex.DSMEM_SIGNATURE)(ex.exchange_dsmem)
    ac.launch(k, blocks, ex.BLOCK, (A, out, 64), cluster=ex.CLUSTER)
"""

from __future__ import annotations

import numpy as np
from numba import cuda, types

import numba_asynccopy as ac
from numba_asynccopy import load4, store4

TILE = 4096                  # float32 per tile
TILE_BYTES = TILE * 4        # 16 KB, one bulk copy
BLOCK = 256
PER_THREAD = TILE // BLOCK   # 16 floats: four 16-byte vectors
VECS = PER_THREAD // 4
CLUSTER = 2


def exchange_dsmem(A, out, rounds):
    buf = cuda.shared.array((2, TILE), np.float32, alignment=128)
    bars = cuda.shared.array(2, np.uint64, alignment=8)
    tid = cuda.threadIdx.x
    b = cuda.blockIdx.x
    rank = ac.cluster_cta_rank()
    nxt = (rank + 1) % ac.cluster_num_ctas()
    if tid == 0:
        ac.mbarrier_init(bars[0:], 1)
        ac.mbarrier_init(bars[1:], 1)
        ac.fence_mbarrier_init()
    # the tile starts in buffer 1 (round 0 sends buffer (0 - 1) % 2)
    for v in range(VECS):
        e = 4 * (v * BLOCK + tid)
        store4(buf, (1, e), load4(A, (b, e)))
    ac.fence_proxy_async("shared::cta")  # generic writes -> the bulk copy's reads
    ac.cluster_sync()                     # barriers initialised cluster-wide
    for r in range(rounds):
        cur = r % 2
        if tid == 0:
            # expect this round's incoming tile, then send ours onward
            ac.mbarrier_arrive_expect_tx(bars[cur:], TILE_BYTES)
            ac.cp_async_bulk_cluster(buf[cur, :], buf[1 - cur, :], TILE_BYTES, bars[cur:], nxt)
        ac.mbarrier_wait_parity(bars[cur:], (r // 2) % 2)
        # every copy of this round landed: every source of this round is free
        ac.cluster_sync()
    last = (rounds + 1) % 2  # buffer received in round rounds - 1 (1 if none)
    for v in range(VECS):
        e = 4 * (v * BLOCK + tid)
        store4(out, (b, e), load4(buf, (last, e)))


def exchange_global(A, out, scratch, rounds):
    buf = cuda.shared.array(TILE, np.float32, alignment=16)
    tid = cuda.threadIdx.x
    b = cuda.blockIdx.x
    rank = ac.cluster_cta_rank()
    n = ac.cluster_num_ctas()
    prev = b - rank + (rank + n - 1) % n  # block of the previous rank
    for v in range(VECS):
        e = 4 * (v * BLOCK + tid)
        store4(buf, e, load4(A, (b, e)))
    for r in range(rounds):
        slot = r % 2
        for v in range(VECS):
            e = 4 * (v * BLOCK + tid)
            store4(scratch, (slot, b, e), load4(buf, e))
        ac.cluster_sync()  # release our slot, acquire the previous rank's
        for v in range(VECS):
            e = 4 * (v * BLOCK + tid)
            store4(buf, e, load4(scratch, (slot, prev, e)))
    # a thread only ever touches its own elements of buf: no block barrier
    for v in range(VECS):
        e = 4 * (v * BLOCK + tid)
        store4(out, (b, e), load4(buf, e))


DSMEM_SIGNATURE = (types.float32[:, ::1], types.float32[:, ::1], types.int32)
GLOBAL_SIGNATURE = (types.float32[:, ::1], types.float32[:, ::1], types.float32[:, :, ::1],
                    types.int32)


def launch_probe(out):
    """A small kernel for timing launches: block ``b`` writes its cluster rank."""
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = ac.cluster_cta_rank()


PROBE_SIGNATURE = (types.int32[::1],)


def expected(a: np.ndarray, rounds: int, cluster: int = CLUSTER) -> np.ndarray:
    """The tiles the blocks hold after ``rounds`` rounds (numpy)."""
    blocks = a.shape[0]
    if blocks % cluster:
        raise ValueError(f"{blocks} blocks are not a whole number of clusters of {cluster}")
    t = a.reshape(blocks // cluster, cluster, *a.shape[1:])
    return np.roll(t, rounds % cluster, axis=1).reshape(a.shape)


def work_bytes(blocks: int, rounds: int) -> int:
    """Bytes exchanged by one launch."""
    return blocks * rounds * TILE_BYTES
