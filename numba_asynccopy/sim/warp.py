"""Warp shuffles, votes and matches in the simulator (``cuda.shfl_*_sync``,
``cuda.all_sync`` / ``any_sync`` / ``eq_sync`` / ``ballot_sync``,
``cuda.match_any_sync`` / ``match_all_sync``, ``cuda.activemask``,
``cuda.lanemask_lt``), which numba-cuda's simulator lacks.

Each ``*_sync`` call converges the warp as ``elect_sync`` and
``cuda.syncwarp`` do (``sim/fence.py``): every lane of ``mask`` that exists
and has not exited executes the same instruction before any lane goes on,
then each lane computes its result from the values all of them brought.
The rules are the GPU's: a lane outside ``mask`` that executes the call is
a :class:`SimulatorError`, a lane of ``mask`` that never comes a
:class:`DeadlockError` naming it.  The results are those the PTX ISA
defines for numba-cuda's forms (width 32): the source lane of a shuffle is
``src_lane``, ``lane - delta``, ``lane + delta`` or ``lane ^ lane_mask``
with the operand's low five bits; a source past the warp's ends (up below
lane 0, down above lane 31) gives the lane its own value; a source lane
that is not in ``mask`` (the GPU returns an undefined value) is a
:class:`SimulatorError`.  Votes and matches count the lanes of ``mask``
that have not exited; matches compare the values' bits.

Example::

    # NUMBA_ENABLE_CUDASIM=1
    @cuda.jit
    def warp_sum(x, out):
        v = x[cuda.threadIdx.x]
        for d in (16, 8, 4, 2, 1):
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, d)
        if cuda.threadIdx.x == 0:
            out[0] = v
"""

from __future__ import annotations

import threading

import numpy as np

from . import _numba_sim_internals as _nbsim
from . import _runtime as rt
from .fence import _warp_lanes, meet

FULL = 0xFFFFFFFF


def _i32(bits: int) -> int:
    """A 32-bit lane mask as the int32 numba-cuda types it as."""
    return int(np.array(bits & FULL, np.uint32).view(np.int32))


def _lanes(bits: int) -> list[int]:
    return [k for k in range(32) if (bits >> k) & 1]


def _shfl(api: str, mode: str, mask, value, b):
    b = int(b)
    lane, e = meet(api, f"shfl.sync.{mode}", mask, value)
    bval = b & 0x1F  # the PTX operand's low five bits
    src = {"idx": bval, "up": lane - bval, "down": lane + bval, "bfly": lane ^ bval}[mode]
    if not 0 <= src <= 31:
        return value  # past the warp's end: the lane keeps its value
    if not (e.arrived >> src) & 1:
        m = int(mask) & FULL
        why = (f"is not in `mask`=0x{m:08x}" if not (m >> src) & 1 else
               "has exited or does not exist")
        raise rt.violation(api, f"lane {lane} reads lane {src}, which {why}: on the GPU "
                                "the value it gets is undefined")
    return e.values[src]


def shfl_sync(mask, value, src_lane):
    """``cuda.shfl_sync``: the value of lane ``src_lane % 32``."""
    return _shfl("cuda.shfl_sync", "idx", mask, value, src_lane)


def shfl_up_sync(mask, value, delta):
    """``cuda.shfl_up_sync``: the value of lane ``lane - delta``, or this lane's own below lane 0."""
    return _shfl("cuda.shfl_up_sync", "up", mask, value, delta)


def shfl_down_sync(mask, value, delta):
    """``cuda.shfl_down_sync``: the value of lane ``lane + delta``, or this lane's own past lane 31."""
    return _shfl("cuda.shfl_down_sync", "down", mask, value, delta)


def shfl_xor_sync(mask, value, lane_mask):
    """``cuda.shfl_xor_sync``: the value of lane ``lane ^ lane_mask``."""
    return _shfl("cuda.shfl_xor_sync", "bfly", mask, value, lane_mask)


def _vote(api: str, mode: str, mask, predicate):
    _, e = meet(api, f"vote.sync.{mode}", mask, bool(predicate))
    preds = [e.values[k] for k in _lanes(e.arrived)]
    if mode == "all":
        return all(preds)
    if mode == "any":
        return any(preds)
    if mode == "uni":
        return all(preds) or not any(preds)
    return _i32(sum(1 << k for k in _lanes(e.arrived) if e.values[k]))


def all_sync(mask, predicate):
    """``cuda.all_sync``: True when the predicate of every lane of ``mask`` is true."""
    return _vote("cuda.all_sync", "all", mask, predicate)


def any_sync(mask, predicate):
    """``cuda.any_sync``: True when the predicate of some lane of ``mask`` is true."""
    return _vote("cuda.any_sync", "any", mask, predicate)


def eq_sync(mask, predicate):
    """``cuda.eq_sync``: True when every lane of ``mask`` has the same predicate."""
    return _vote("cuda.eq_sync", "uni", mask, predicate)


def ballot_sync(mask, predicate):
    """``cuda.ballot_sync``: a bit per lane of ``mask`` whose predicate is true (int32)."""
    return _vote("cuda.ballot_sync", "ballot", mask, predicate)


def _bits(value) -> bytes:
    return np.asarray(value).tobytes()


def match_any_sync(mask, value):
    """``cuda.match_any_sync``: the lanes of ``mask`` whose value has this lane's bits (int32)."""
    lane, e = meet("cuda.match_any_sync", "match.any.sync", mask, _bits(value))
    mine = e.values[lane]
    return _i32(sum(1 << k for k in _lanes(e.arrived) if e.values[k] == mine))


def match_all_sync(mask, value):
    """``cuda.match_all_sync``: (the lanes of ``mask``, True) when all of them
    have the same value, else (0, False)."""
    lane, e = meet("cuda.match_all_sync", "match.all.sync", mask, _bits(value))
    if len({e.values[k] for k in _lanes(e.arrived)}) == 1:
        return _i32(e.arrived), True
    return 0, False


def activemask():
    """``cuda.activemask``: the lanes of this warp that exist and have not exited."""
    th, blk = rt.current("cuda.activemask")
    tid = th.thread.thread_id
    lanes = _warp_lanes(blk, tid - tid % 32)
    return sum(1 << k for k, t in enumerate(lanes) if t is not None and not _nbsim.exited(t))


def lanemask_lt():
    """``cuda.lanemask_lt``: the lanes below this one."""
    return (1 << (threading.current_thread().thread_id % 32)) - 1


#: the ``cuda.<name>`` functions this module gives numba-cuda's simulator
FUNCTIONS = {f.__name__: f for f in (
    shfl_sync, shfl_up_sync, shfl_down_sync, shfl_xor_sync,
    all_sync, any_sync, eq_sync, ballot_sync,
    match_any_sync, match_all_sync, activemask, lanemask_lt)}


def install(fake_module: type) -> None:
    """Give ``FakeCUDAModule`` the functions it lacks (idempotent)."""
    for name, fn in FUNCTIONS.items():
        if not hasattr(fake_module, name):
            setattr(fake_module, name, staticmethod(fn))
