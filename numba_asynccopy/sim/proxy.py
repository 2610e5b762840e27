"""The generic and the async proxy: shared-memory bytes written by ordinary
stores must be fenced (``fence_proxy_async``) before an async-proxy
operation reads them (the source of ``cp_async_bulk_s2g``, a bulk
reduction, a TMA store); the PTX memory model gives no ordering otherwise,
and on the GPU the copy may read stale data.

Each block keeps :class:`AsyncView`: the bytes of its shared arrays as the
async proxy is known to see them.  A ``fence_proxy_async`` (shared memory)
by a thread of the block takes a picture of all of them; a bulk, TMA or
cluster copy landing in shared memory (an async-proxy write) updates the
bytes it wrote.  A bulk or TMA store whose source bytes differ from the
picture reads bytes that ordinary stores changed after the last fence: a
named race.  What it cannot see (stated in the simulator's rules): which
thread's fence it was (a fence by any thread of the block counts for the
stores of every thread), and whether a block barrier ordered another
thread's fence before the copy's issue.  Checked in the worst schedule.
"""

from __future__ import annotations

import numpy as np

from . import _numba_sim_internals as _nbsim
from . import _runtime as rt
from .events import EVENTS
from .schedule import POISON_BYTE


class AsyncView:
    """A block's slot: allocation start address -> the bytes as the async proxy saw them."""

    def __init__(self, blk):
        self.seen: dict[int, np.ndarray] = {}

    def of(self, start: int, arr: np.ndarray, dynamic: bool) -> np.ndarray:
        s = self.seen.get(start)
        if s is None:
            # a new allocation: what the block started with (poison, or zeros for
            # dynamic shared memory)
            s = self.seen[start] = np.full(arr.nbytes, 0 if dynamic else POISON_BYTE, np.uint8)
        return s


def _bytes(arr: np.ndarray) -> np.ndarray:
    return arr.reshape(-1).view(np.uint8)


def _addresses(v: np.ndarray) -> np.ndarray:
    idx = np.indices(v.shape).reshape(v.ndim, -1)
    starts = rt.address(v) + (idx * np.asarray(v.strides)[:, None]).sum(0)
    return (starts[:, None] + np.arange(v.itemsize)).reshape(-1)


def _allocation(addr: int):
    hit = _nbsim.shared_allocation(addr)
    if hit is None:
        return None
    _, key, _, arr = hit
    return rt.address(arr), arr, key == "dynamic"


def fenced(blk) -> None:
    """A fence_proxy_async on shared memory by a thread of ``blk``."""
    view = blk.slot(AsyncView)
    for key, arr in _nbsim.block_shared_arrays(blk.point):
        view.seen[rt.address(arr)] = _bytes(arr).copy()


@EVENTS.on("async_write")
def _async_write(blk, op) -> None:
    """An async-proxy copy landed its pieces in ``blk``'s shared memory."""
    view = blk.slot(AsyncView)
    for dst, _ in op.pieces:
        if dst.size == 0:
            continue
        a = _allocation(rt.address(dst))
        if a is None:
            continue
        start, arr, dyn = a
        offs = _addresses(dst) - start
        view.of(start, arr, dyn)[offs] = _bytes(arr)[offs]


def check_source(api: str, blk, src: np.ndarray) -> None:
    """An async-proxy read of shared ``src``: its bytes must be what the
    async proxy saw at the last fence (or wrote itself)."""
    if rt.eager() or src.size == 0:
        return
    a = _allocation(rt.address(src))
    if a is None:
        return
    start, arr, dyn = a
    offs = _addresses(src) - start
    seen = blk.slot(AsyncView).of(start, arr, dyn)[offs]
    now = _bytes(arr)[offs]
    bad = np.flatnonzero(seen != now)
    if bad.size:
        addr = start + int(offs[bad[0]])
        raise rt.violation(api, (
            f"race: its shared source `src` ({rt.describe_shared(addr)}, {bad.size} of its "
            f"{offs.size} bytes) was written by ordinary stores after the block's last "
            "fence_proxy_async(), and the async proxy reads it: on the GPU the copy may read "
            "stale data. The threads that wrote it must call ac.fence_proxy_async() after "
            "their stores (then cuda.syncthreads(), when another thread issues the copy)"))
