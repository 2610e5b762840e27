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
``host/_numba_sim_internals.py``; this module re-exports them.
"""

from __future__ import annotations

from ..host import _numba_sim_internals as _nbsim
from ..host._numba_sim_internals import address
from .args import numba_type, unwrap, validate
from .errors import (SIM_PREFIX, DeadlockError, SimulatorError, blocked_waits, caller_line, deadlock,
                     root_cause, violation, where)
from .schedule import (POISON_BYTE, SCHEDULES, eager, get_schedule, get_seed, schedule, seed,
                       set_schedule, set_seed)
from .state import AsyncOp, Barrier, BlockState, ThreadState, barrier_of, current, describe_shared, space_of

# the private names this module had, for code that reached them here
from ..host._numba_sim_internals import _aligned_empty, _lookup, _ranges, _validate_alignment  # noqa: F401,E402
from .args import _typing_cache  # noqa: F401,E402
from .errors import _SIM_DIR  # noqa: F401,E402
from .schedule import _env_schedule, _settings  # noqa: F401,E402
from .state import _create_lock  # noqa: F401,E402


def _sim_kernel():
    from numba.cuda.simulator import kernel as simkernel

    return simkernel


def install() -> None:
    """Patch numba-cuda's simulator for the kernels (``alignment=``, address
    ranges, each block's threads, ``cuda.syncwarp``); uninitialised shared
    memory holds :data:`POISON_BYTE`.  Idempotent."""
    _nbsim.install(POISON_BYTE)
    from numba.cuda.simulator import kernelapi

    if not hasattr(kernelapi.FakeCUDAModule, "syncwarp"):  # numba-cuda's simulator lacks it
        from .fence import _syncwarp

        kernelapi.FakeCUDAModule.syncwarp = staticmethod(_syncwarp)


__all__ = [
    "AsyncOp", "Barrier", "BlockState", "DeadlockError", "POISON_BYTE", "SCHEDULES",
    "SIM_PREFIX", "SimulatorError", "ThreadState", "address", "barrier_of", "blocked_waits",
    "caller_line", "deadlock", "root_cause",
    "current", "describe_shared", "eager", "get_schedule", "get_seed", "install", "numba_type",
    "schedule", "seed", "set_schedule", "set_seed", "space_of", "unwrap", "validate", "violation", "where",
]
