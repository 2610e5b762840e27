"""Run async-copy kernels in numba-cuda's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``).

When the simulator is enabled before ``import numba_asynccopy``, every
public intrinsic name of the package is bound to a pure-Python version from
this package (one module per family, mirroring the device modules), so the
same kernel source runs unchanged.  Each call runs the device intrinsic's
own typing on Numba types made from the Python values (same errors, same
text), then the run-time rules that checked mode traps on, raised as
:class:`SimulatorError` with the trap's text.

Schedules (:func:`set_schedule`, or ``NUMBA_ASYNCCOPY_SIM_SCHEDULE``):

- ``"worst"`` (default): an asynchronous copy lands only when the program
  waits for it correctly: its cp.async group is retired by ``wait_group`` /
  ``wait_all``, or the barrier phase tracking it completes.  Until then
  its destination bytes are :data:`POISON_BYTE` (``0xFF``: NaN for floats,
  all ones for integers).  A kernel that reads too early reads poison.
- ``"eager"``: copies land when issued, as if the memory system were
  infinitely fast; a kernel that passes eagerly but fails in the worst
  schedule depends on timing.

Bulk and tensor (TMA) copies follow the same rules: a load lands when a
wait sees its barrier phase complete (its bytes are exact transaction
bytes); a store or reduction reads its shared source at
``bulk_wait_group(n, read=True)`` (a source overwritten before that raises
:class:`SimulatorError`) and writes global memory at ``bulk_wait_group(n)``
or the end of the block (a store's destination holds poison until then).
``TensorMap`` is a driver-free map over a simulator device array, built
from the same validated spec.

Clusters run: the blocks of one cluster run together, each with its own
shared memory (``cluster_dims`` in the kernel body or ``ac.launch(...,
cluster=)``); DSMEM, the cluster barrier, remote mbarrier operations, the
cluster bulk copy and ``multicast_mask`` have their twins (``sim/cluster.py``
says which orderings the worst-case schedule checks).

Interleaving (:func:`set_seed`, :func:`seed`, or ``NUMBA_ASYNCCOPY_SIM_SEED``):
under a seed every intrinsic call is a scheduling point where the thread
gives up its turn or falls behind as a generator seeded by the seed, the
block and the thread decides (the threads run one at a time, so a seed
replays the same interleaving); the results of a correct kernel do not
depend on it, so running a test under several seeds finds the ones that do.

Rules the simulator adds at issue time: a copy into shared memory that an
earlier copy still writes (or a bulk store may still read) is a
:class:`SimulatorError` naming both copies; transaction bytes beyond what a
phase's ``expect_tx`` announced, once every arrival is in, are reported
with the issue site of each copy of the phase; a bulk or TMA copy that
completes on a barrier whose initialising thread did not fence the init
(``fence_proxy_async`` on shared memory, or ``fence_mbarrier_init``) is an
error.  ``elect_sync`` converges the warp as ``elect.sync`` does, and so do the
warp shuffles, votes and matches (``cuda.shfl_*_sync``, ``cuda.*_sync``,
``sim/warp.py``), which numba-cuda's simulator lacks.  When a
thread stops on an error of its own, that error is raised, not the
deadlock the other threads then run into.

Ordinary element reads of shared memory are seen too (``sim/visibility.py``):
a thread reading what another thread's ``cp_async`` brought, after only that
thread's ``wait_group`` and no barrier, or what another CTA stored with
``dsmem_store`` with no cluster barrier or mbarrier handshake between, is a
:class:`SimulatorError` naming the writer, its line and the missing barrier;
a consumer that reads a tile in flight and releases its slot without the
wait is told the slot was released without a wait.

Barriers keep exact phase, arrival and transaction-byte counts.  A wait
that can never be satisfied (every thread of the cluster blocked) raises
:class:`DeadlockError` naming every blocked wait: the barrier, the CTA that
owns it, its phase, the expected and arrived counts, the transaction bytes
and the source line of the wait, so the barrier that really starved is
visible whichever thread reports.  Blocked threads sleep until what they
wait for changes (``sim/engine.py``): no polling, no timeouts.

The simulator also accepts ``alignment=`` on ``cuda.shared.array`` /
``cuda.local.array`` (numba-cuda's simulator rejects it); a shared array
without it gets only its dtype's alignment, off any larger boundary.

Example::

    # NUMBA_ENABLE_CUDASIM=1 python kernel.py
    import numba_asynccopy as ac
    ac.sim.set_schedule("worst")
    kernel[1, 64](a, b)          # poison or DeadlockError if a wait is missing
"""

from __future__ import annotations

import importlib

from numba.cuda.core import config as _config
from numba.cuda.extending import _Intrinsic

from .. import _forms
from ..host import launch as _host_launch
from . import _numba_sim_internals as _nbsim
from . import engine as _engine
from . import fence as _fence_twins
from . import visibility as _visibility
from . import warp as _warp
from ._runtime import (
    POISON_BYTE,
    SCHEDULES,
    DeadlockError,
    SimulatorError,
    get_schedule,
    get_seed,
    schedule,
    seed,
    set_schedule,
    set_seed,
)

#: True when numba-cuda's simulator is enabled (read at import)
ENABLED: bool = bool(_config.ENABLE_CUDASIM)

#: families of the package that have no simulator implementation, and why
#: (empty: clusters, DSMEM, the cluster bulk copy and multicast run in the
#: simulator, the blocks of a cluster together)
UNSUPPORTED_FAMILIES: dict[str, str] = {}
# intrinsics of a simulated family that cannot run all the same, and why
_UNSUPPORTED_NAMES: dict[str, str] = {}


def twin_modules() -> tuple:
    """``sim.<family>`` for every family of the registry (``_forms.families``)
    that has one: the simulator's mirror of each device module."""
    out = []
    for family in _forms.families():
        try:
            out.append(importlib.import_module(f"{__name__}.{family}"))
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{family}":
                raise  # a twin module that fails to import is an error, not a gap
    return tuple(out)


def twins() -> dict:
    """``{id(device object): twin}`` of every twin the twin modules declare
    (``@mirrors(device)`` on a function, ``__mirrors__`` on a class)."""
    out = {}
    for m in twin_modules():
        for v in vars(m).values():
            dev = getattr(v, "__mirrors__", None) if getattr(v, "__module__", None) == m.__name__ else None
            if dev is not None:
                out[id(dev)] = v
    return out


def _family(name: str, dev) -> str:
    """The family of public intrinsic ``name``: its registry row's, else the
    device module it is defined in (intrinsics that emit no PTX form)."""
    return _forms.family_of(name) or dev.__module__.rsplit(".", 1)[-1]


def supported() -> list[str]:
    """Names of the public intrinsics of the package (``ac.<name>``) that run
    in the simulator: the functions the twin modules declare, but those of
    the families reached as a namespace (``ac.pipeline``)."""
    skip = {f"{__name__}.{f}" for f in _forms.NAMESPACE_FAMILIES}
    return sorted(name for m in twin_modules() if m.__name__ not in skip
                  for name, v in vars(m).items()
                  if not isinstance(v, type) and getattr(v, "__mirrors__", None) is not None
                  and v.__module__ == m.__name__)


def unsupported_error(what: str, family: str | None) -> SimulatorError:
    """The error of a call ``what`` the simulator cannot run (the reason of
    ``family`` in :data:`UNSUPPORTED_FAMILIES`)."""
    why = _UNSUPPORTED_NAMES.get(what) or UNSUPPORTED_FAMILIES.get(
        family or "", "it has no simulator implementation yet")
    return SimulatorError(
        f"numba_asynccopy simulator: {what} cannot run in the CUDA simulator: {why}. "
        "Run this kernel on a GPU (unset NUMBA_ENABLE_CUDASIM).")


def _unsupported(name: str, family: str | None):
    why = _UNSUPPORTED_NAMES.get(name) or UNSUPPORTED_FAMILIES.get(
        family or "", "it has no simulator implementation yet")

    def stub(*args, **kwargs):
        raise unsupported_error(name, family)

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = f"{name} is not available in the CUDA simulator: {why}."
    return stub


def implementations(namespace: dict) -> dict:
    """Simulator replacements for the public intrinsics in ``namespace``
    (the package's globals): a Python version where one exists, otherwise a
    function that raises :class:`SimulatorError` saying why; and the
    driver-free :class:`~numba_asynccopy.sim.tensor.TensorMap`."""
    found = twins()
    out = {}
    for name in namespace.get("__all__", ()):
        dev = namespace.get(name)
        twin = found.get(id(dev))
        if twin is not None:
            out[name] = twin
        elif isinstance(dev, _Intrinsic):
            out[name] = _unsupported(name, _family(name, dev))
    return out


def install() -> None:
    """Patch numba-cuda's simulator for the kernels (``alignment=``, address
    ranges, each block's threads, the cluster launch loop, ``cuda.syncwarp``)
    and hand ``ac.launch`` to the simulator's launch; uninitialised shared
    memory holds :data:`POISON_BYTE`.  Idempotent."""
    from numba.cuda.simulator import kernelapi

    _nbsim.install(POISON_BYTE, _engine.block_run, _visibility.SharedArray)
    _host_launch.use_simulated_launch(_engine.launch)
    if not hasattr(kernelapi.FakeCUDAModule, "syncwarp"):  # numba-cuda's simulator lacks it
        kernelapi.FakeCUDAModule.syncwarp = staticmethod(_fence_twins._syncwarp)
    _warp.install(kernelapi.FakeCUDAModule)  # shuffles, votes, matches: missing there too


def bind(namespace: dict) -> None:
    """The one place twins are bound (``NUMBA_ENABLE_CUDASIM=1``): installs
    the simulator, then every public name of ``namespace`` (the package's
    globals) and of each namespace family's module (``ac.pipeline``) whose
    device object has a twin becomes the twin; an intrinsic without one
    becomes a function raising :class:`SimulatorError` saying why."""
    install()
    namespace.update(implementations(namespace))
    for family in _forms.NAMESPACE_FAMILIES:
        module = importlib.import_module(f"{__package__.rpartition('.')[0]}.{family}")
        vars(module).update(implementations(vars(module)))


__all__ = [
    "DeadlockError",
    "ENABLED",
    "POISON_BYTE",
    "SCHEDULES",
    "SimulatorError",
    "UNSUPPORTED_FAMILIES",
    "get_schedule",
    "get_seed",
    "bind",
    "implementations",
    "install",
    "schedule",
    "seed",
    "set_schedule",
    "set_seed",
    "supported",
    "twin_modules",
    "twins",
]
