"""Fences and elect.sync in the simulator.

The simulator's shared and global memory are numpy arrays that every thread
sees at once, and an asynchronous copy writes its data at the moment it
lands, so the fences only validate their arguments.  ``elect_sync``
converges the warp like ``elect.sync`` does: every lane of ``mask`` waits
until all of them (those that exist and have not exited) execute it, then
the lowest is elected, the same lane for every lane of the call.  Without
that, lanes that were not elected run ahead of the elected one, and a
warp-specialized ring whose whole producer warp waits on a barrier sees a
lane fall a phase behind (a false deadlock).
"""

from __future__ import annotations

import threading

from .. import fence as _dev
from . import _numba_sim_internals as _nbsim
from . import _runtime as rt
from . import proxy as _proxy
from . import visibility as _vis
from ._mirror import mirrors


@mirrors(_dev.fence_proxy_async,
         "orders this thread's earlier ``mbarrier_init`` calls for the async proxy (unless "
         "``space`` is ``\"global\"``); memory needs no fencing in the simulator.")
def fence_proxy_async(space=None):
    rt.validate(_dev.fence_proxy_async, space)
    if space != "global":
        th, blk = rt.current("fence_proxy_async")
        with blk.cond:
            rt.fence_inits(th, blk)
            _proxy.fenced(blk)


@mirrors(_dev.fence_mbarrier_init, "orders this thread's earlier ``mbarrier_init`` calls.")
def fence_mbarrier_init():
    rt.validate(_dev.fence_mbarrier_init)
    th, blk = rt.current("fence_mbarrier_init")
    with blk.cond:
        rt.fence_inits(th, blk, cluster=True)


@mirrors(_dev.fence_acq_rel_cluster, "no-op.")
def fence_acq_rel_cluster():
    rt.validate(_dev.fence_acq_rel_cluster)


class _Election:
    """One execution of ``elect.sync`` by the lanes of ``mask`` in one warp."""

    def __init__(self, mask: int, line: str):
        self.mask, self.line = mask, line
        self.arrived = 0  # lanes that reached it (bit per lane)
        self.leader: int | None = None  # set when it completes
        self.values: dict = {}  # lane -> the value it brought (shuffles, votes, matches)


def _warp_lanes(blk, warp_base: int) -> list:
    """lane -> simulated thread of the warp starting at linear id ``warp_base``
    (None for a lane the block does not have)."""
    lanes = [None] * 32
    for t in _nbsim.block_threads(blk.mgr):
        k = t.thread_id - warp_base
        if 0 <= k < 32:
            lanes[k] = t
    return lanes


@mirrors(_dev.elect_sync,
         "converges the warp as the GPU does: each lane of ``mask`` waits until every lane of "
         "``mask`` that has not exited executes the call, then the lowest of them is elected "
         "(the same lane for the same mask every time); a lane outside ``mask``, or lanes of one "
         "warp meeting in calls with different masks, is a :class:`SimulatorError`, and a lane "
         "of ``mask`` that never comes is a :class:`DeadlockError` naming the missing lanes.")
def elect_sync(mask=0xFFFFFFFF):
    rt.validate(_dev.elect_sync, mask)
    lane, leader = _converge("elect_sync", "elect.sync", mask)
    return lane == leader


class Meetings:
    """A block's slot for the warp-converging instructions: per instruction
    and warp, the meetings still gathering their lanes, by mask.

    A meeting's waiters wait on the meeting (its :class:`_Election` is their
    key), so an arrival re-evaluates only the lanes of that meeting, not
    every waiter of the cluster; a lane that exits wakes the open meetings
    of its warp (they no longer wait for it)."""

    def __init__(self, blk):
        self.blk = blk
        self.by_instr: dict = {}
        self.lanes: dict = {}  # warp base -> lane -> simulated thread (_warp_lanes)
        if blk.cluster is not None:
            blk.cluster.events.on("thread_exit", self.thread_exit)

    def warp_lanes(self, warp_base: int) -> list:
        lanes = self.lanes.get(warp_base)
        if lanes is None:
            lanes = self.lanes[warp_base] = _warp_lanes(self.blk, warp_base)
        return lanes

    def thread_exit(self, t) -> None:
        """(the cluster lock held) ``t`` exited: its warp's open meetings of
        this block may now have every lane they wait for."""
        if _nbsim.block_manager(t) is not self.blk.mgr:
            return
        warp_base = t.thread_id - t.thread_id % 32
        for open_ in self.by_instr.values():
            for e in list(open_.get(warp_base, {}).values()):
                self.blk.changed(e)


def _converge(api: str, instr: str, mask, same_site: bool = False) -> tuple[int, int]:
    """:func:`meet` without values: (this lane, the lowest lane that came)."""
    lane, e = meet(api, instr, mask, same_site=same_site)
    return lane, e.leader


def meet(api: str, instr: str, mask, value=None, same_site: bool = False) -> tuple[int, _Election]:
    """Every lane of ``mask`` (that exists and has not exited) meets at this
    ``instr`` (``elect.sync``, ``bar.warp.sync``) before any goes on; returns
    (this lane, the lowest lane that came).  ``same_site``: the lanes must
    execute the same instruction (an ``.aligned`` form), not just the same
    kind.  Returns (this lane, the completed meeting): ``arrived`` has a bit
    per lane that came, ``values`` each one's ``value``."""
    line = rt.caller_line()
    th, blk = rt.current(api)
    m = int(mask) & 0xFFFFFFFF
    tid = th.thread.thread_id
    lane, warp_base = tid % 32, tid - tid % 32
    exists = (1 << min(32, blk.nthreads - warp_base)) - 1
    if not (m >> lane) & 1:
        raise rt.violation(api, f"lane {lane} executes {instr} but is not in `mask`=0x{m:08x}")
    with blk.cond:
        # per warp and instruction: the meetings still gathering their lanes, by mask
        meetings = blk.slot(Meetings)
        open_ = meetings.by_instr.setdefault(instr, {}).setdefault(warp_base, {})
        for other in open_.values():
            if other.mask != m and (other.mask >> lane) & 1:
                waiting = [k for k in range(32) if (other.arrived >> k) & 1]
                raise rt.violation(
                    api, f"lane {lane} executes {instr} with `mask`=0x{m:08x} at {line} while "
                    f"lanes {waiting} of its warp wait in {instr} with `mask`=0x{other.mask:08x} "
                    f"at {other.line}: every lane of a membermask must execute the same {instr} "
                    "with the same mask")
        e = open_.get(m)
        if e is not None and same_site and e.line != line:
            waiting = [k for k in range(32) if (e.arrived >> k) & 1]
            raise rt.violation(
                api, f"lane {lane} executes {instr} at {line} while lanes {waiting} of its warp "
                f"wait in the {instr} at {e.line}: an .aligned instruction must be executed by "
                "every thread of the warp at the same place (uniform control flow), or drop "
                "aligned=True")
        if e is None:
            e = open_[m] = _Election(m, line)
        e.arrived |= 1 << lane
        e.values[lane] = value
        lanes = meetings.warp_lanes(warp_base)

        def missing(first: bool = False) -> int:
            """Lanes of the mask that exist, have not arrived and have not
            exited (``first``: stop at the first one)."""
            out = 0
            rest = m & exists & ~e.arrived
            while rest:
                k = (rest & -rest).bit_length() - 1
                rest &= rest - 1
                t = lanes[k]
                if t is None or not _nbsim.exited(t):
                    out |= 1 << k
                    if first:
                        break
            return out

        def done() -> bool:
            if e.leader is None and not missing(first=True):
                here = e.arrived
                e.leader = (here & -here).bit_length() - 1  # deterministic: the lowest lane
                if open_.get(m) is e:
                    del open_[m]
                blk.changed(e)
            return e.leader is not None

        def deadlock():
            gone = missing()
            raise rt.deadlock(blk, 
                f"{rt.SIM_PREFIX}{api}: deadlock: every thread of the block is blocked, and lanes "
                f"{[k for k in range(32) if (gone >> k) & 1]} of `mask`=0x{m:08x} never reach "
                f"the {instr} at {line} that lanes "
                f"{[k for k in range(32) if (e.arrived >> k) & 1]} wait in ({instr} waits "
                f"until every lane of its membermask executes it) {rt.where()}")

        done.line = line
        done.describe = lambda: f"{instr} (`mask`=0x{m:08x}, warp {warp_base // 32})"
        done.key = e  # only this meeting's arrivals and its warp's exits change it
        blk.changed(e)
        blk.block_until(done, deadlock)
        return lane, e


def _syncwarp(mask=0xFFFFFFFF) -> None:
    """``cuda.syncwarp(mask)``, which numba-cuda's simulator lacks: the lanes
    of ``mask`` wait for each other (bar.warp.sync); a lane of ``mask``
    that never comes is a :class:`DeadlockError` naming the missing lanes."""
    m = int(mask)
    if not 0 <= m <= 0xFFFFFFFF:
        raise rt.violation("cuda.syncwarp", f"`mask`={m} is not a 32-bit lane mask")
    _converge("cuda.syncwarp", "bar.warp.sync", m)
    _th, blk = rt.current("cuda.syncwarp")
    with blk.cond:  # bar.warp.sync orders memory among the lanes of the mask
        _vis.warp_barrier(threading.current_thread(), m)
