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
yields or falls behind as a generator seeded by the seed, the block and the
thread decides; the results of a correct kernel do not depend on it, so
running a test under several seeds finds the ones that do.

Rules the simulator adds at issue time: a copy into shared memory that an
earlier copy still writes (or a bulk store may still read) is a
:class:`SimulatorError` naming both copies; transaction bytes beyond what a
phase's ``expect_tx`` announced, once every arrival is in, are reported
with the issue site of each copy of the phase; a bulk or TMA copy that
completes on a barrier whose initialising thread did not fence the init
(``fence_proxy_async`` on shared memory, or ``fence_mbarrier_init``) is an
error.  ``elect_sync`` converges the warp as ``elect.sync`` does.  When a
thread stops on an error of its own, that error is raised, not the
deadlock the other threads then run into.

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

from numba.cuda.core import config as _config

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


def _family_modules():
    from . import bulk, cluster, cp_async, fence, mbarrier, mma, pragma, tensor, vector, wgmma

    return (cp_async, fence, mbarrier, bulk, tensor, vector, cluster, pragma, mma, wgmma)


def _family(name: str, dev) -> str:
    """The family of public intrinsic ``name``: its registry row's, else the
    device module it is defined in (intrinsics that emit no PTX form)."""
    from .._forms import family_of

    return family_of(name) or dev.__module__.rsplit(".", 1)[-1]


def _twin_module(family: str):
    """``sim.<family>``: the simulator module mirroring a device family, or None."""
    import importlib

    try:
        return importlib.import_module(f"{__name__}.{family}")
    except ModuleNotFoundError:
        return None


def _host_classes() -> dict:
    """Host-side classes replaced in the simulator (no CUDA driver there)."""
    from .tensor import TensorMap

    return {"TensorMap": TensorMap}


def supported() -> list[str]:
    """Names of the public intrinsics that run in the simulator."""
    return sorted(n for m in _family_modules() for n in vars(m)
                  if not n.startswith("_") and callable(vars(m)[n])
                  and not isinstance(vars(m)[n], type)
                  and getattr(vars(m)[n], "__module__", None) == m.__name__)


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
    from numba.cuda.extending import _Intrinsic

    from ._runtime import install

    install()
    out = {}
    for name in namespace.get("__all__", ()):
        dev = namespace.get(name)
        if not isinstance(dev, _Intrinsic):
            continue
        family = _family(name, dev)
        impl = getattr(_twin_module(family), name, None)
        if impl is None:
            impl = _unsupported(name, family)
        out[name] = impl
    for name, cls in _host_classes().items():
        if name in namespace.get("__all__", ()):
            out[name] = cls
    return out


__all__ = [
    "DeadlockError",
    "ENABLED",
    "POISON_BYTE",
    "SCHEDULES",
    "SimulatorError",
    "UNSUPPORTED_FAMILIES",
    "get_schedule",
    "get_seed",
    "implementations",
    "schedule",
    "seed",
    "set_schedule",
    "set_seed",
    "supported",
]
