"""Fences and elect.sync in the simulator.

The simulator's shared and global memory are numpy arrays that every thread
sees at once, and an asynchronous copy writes its data at the moment it
lands, so the fences only validate their arguments.  ``elect_sync`` elects
the lowest lane of ``mask`` that exists in the warp (the GPU elects one
lane of those active; with converged warps that is the lowest).
"""

from __future__ import annotations

import sys

from . import _runtime as rt
from ._mirror import mirrors

_dev = sys.modules["numba_asynccopy.fence"]


@mirrors(_dev.fence_proxy_async, "no-op.")
def fence_proxy_async(space=None):
    rt.validate(_dev.fence_proxy_async, space)


@mirrors(_dev.fence_mbarrier_init, "no-op.")
def fence_mbarrier_init():
    rt.validate(_dev.fence_mbarrier_init)


@mirrors(_dev.fence_acq_rel_cluster, "no-op.")
def fence_acq_rel_cluster():
    rt.validate(_dev.fence_acq_rel_cluster)


@mirrors(_dev.elect_sync, "elects the lowest lane of ``mask`` that exists in the warp.")
def elect_sync(mask=0xFFFFFFFF):
    api = "elect_sync"
    rt.validate(_dev.elect_sync, mask)
    th, blk = rt.current(api)
    m = int(mask) & 0xFFFFFFFF
    tid = th.thread.thread_id
    lane, warp_base = tid % 32, tid - tid % 32
    exists = (1 << min(32, blk.nthreads - warp_base)) - 1
    if not (m >> lane) & 1:
        raise rt.violation(api, f"lane {lane} executes elect.sync but is not in `mask`=0x{m:08x}")
    live = m & exists
    leader = (live & -live).bit_length() - 1
    return lane == leader
