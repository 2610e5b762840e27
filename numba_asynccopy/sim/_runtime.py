"""The simulator's machinery, under the one name the family modules import
(``from . import _runtime as rt``).

The family modules (``sim/cp_async.py``, ``sim/mbarrier.py``, ...) build on
four pieces: :func:`validate` (the device intrinsic's own typing, fed
Numba types made from Python values), :func:`current` (this thread and its
block), :class:`AsyncOp` (a copy that lands later, under the schedule) and
:class:`Barrier` (exact phase/arrival/transaction accounting).  They live
in :mod:`.schedule` (when copies land), :mod:`.state` (thread, block,
barrier and operation state), :mod:`.errors`, :mod:`.args` (argument
typing) and, for what patches or reads numba-cuda's simulator,
``_numba_sim_internals.py``; this module re-exports them.
"""

from __future__ import annotations

from ._numba_sim_internals import address
from .args import last_types, numba_type, unwrap, validate
from .errors import (SIM_PREFIX, DeadlockError, SimulatorError, blocked_waits, caller_line, deadlock,
                     root_cause, violation, where)
from .schedule import (POISON_BYTE, SCHEDULES, eager, get_schedule, get_seed, schedule, seed,
                       set_schedule, set_seed)
from .events import EVENTS, Events, Slots
from .state import (AsyncOp, Barrier, BlockState, ThreadState, barrier_of, check_cluster_fenced,
                    check_init_fenced, check_tx_overflow, current, describe_shared, fence_inits, issued,
                    space_of, threads_of)


__all__ = [
    "EVENTS", "Events", "Slots", "threads_of", "check_cluster_fenced", "check_init_fenced",
    "check_tx_overflow", "fence_inits", "issued",
    "AsyncOp", "Barrier", "BlockState", "DeadlockError", "POISON_BYTE", "SCHEDULES",
    "SIM_PREFIX", "SimulatorError", "ThreadState", "address", "barrier_of", "blocked_waits",
    "caller_line", "deadlock", "root_cause",
    "current", "describe_shared", "eager", "get_schedule", "get_seed", "last_types", "numba_type",
    "schedule", "seed", "set_schedule", "set_seed", "space_of", "unwrap", "validate", "violation", "where",
]
