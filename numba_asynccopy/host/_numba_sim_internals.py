"""Every numba-cuda 0.30 simulator internal the package relies on, in one place.

numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``) runs each CUDA thread
of a block as a Python thread (``BlockThread``) under a ``BlockManager``.
It rejects ``alignment=`` on shared/local arrays, and it keeps no record
of which addresses are shared memory or of a block's threads.
:func:`install` patches those in; the accessors below read the
simulator's private attributes for ``numba_asynccopy.sim``.  The names
reached are listed in :data:`NAMES` and :data:`CODE_NAMES`, which a CPU
test checks, so a numba-cuda upgrade that moves one fails loudly.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

#: (module, dotted name) of every simulator internal looked up or replaced here
NAMES: tuple[tuple[str, str], ...] = (
    ("numba.cuda.simulator.kernel", "_get_kernel_context"),
    ("numba.cuda.simulator.kernel", "BlockThread.__init__"),
    ("numba.cuda.simulator.kernel", "BlockManager.run"),
    ("numba.cuda.simulator.kernelapi", "FakeCUDAShared.__init__"),
    ("numba.cuda.simulator.kernelapi", "FakeCUDAShared.array"),
    ("numba.cuda.simulator.kernelapi", "FakeCUDALocal.array"),
    ("numba.cuda.simulator.kernelapi", "FakeCUDAModule.__init__"),
    ("numba.cuda.np.numpy_support", "as_dtype"),
)

#: (module, dotted function, name): instance attributes the simulator's own
#: code sets (read here), and those its shared-array methods rely on (set
#: by the replacement ``FakeCUDAShared.__init__``)
CODE_NAMES: tuple[tuple[str, str, str], ...] = (
    ("numba.cuda.simulator.kernel", "BlockThread.__init__", "_manager"),
    ("numba.cuda.simulator.kernel", "BlockThread.__init__", "blockIdx"),
    ("numba.cuda.simulator.kernel", "BlockThread.__init__", "threadIdx"),
    ("numba.cuda.simulator.kernel", "BlockThread.__init__", "syncthreads_blocked"),
    ("numba.cuda.simulator.kernel", "BlockThread.__init__", "abort"),
    ("numba.cuda.simulator.kernel", "BlockManager.__init__", "_block_dim"),
    ("numba.cuda.simulator.kernelapi", "FakeCUDAModule.__init__", "_shared"),
    ("numba.cuda.simulator.kernelapi", "FakeCUDAModule.__init__", "_local"),
    ("numba.cuda.simulator.kernelapi", "FakeCUDAShared.__init__", "_allocations"),
    ("numba.cuda.simulator.kernelapi", "FakeCUDAShared.__init__", "_dynshared_size"),
    ("numba.cuda.simulator.kernelapi", "FakeCUDAShared.__init__", "_dynshared"),
)


# --- threads and blocks ---------------------------------------------------------


def block_manager(thread: threading.Thread) -> Any:
    """The ``BlockManager`` of a simulated CUDA thread, None for any other thread."""
    return getattr(thread, "_manager", None)


def block_dim(mgr: Any) -> tuple:
    return mgr._block_dim


def block_threads(mgr: Any) -> list:
    """The block's ``BlockThread`` objects created so far (recorded by :func:`install`)."""
    return mgr.__dict__.get("_ac_threads", [])


def block_idx(thread: Any) -> tuple:
    return tuple(thread.blockIdx)


def thread_idx(thread: Any) -> tuple:
    return tuple(thread.threadIdx)


def syncthreads_blocked(thread: Any) -> bool:
    return thread.syncthreads_blocked


def aborted(thread: Any) -> bool:
    """Another thread of the block failed and the manager asked this one to stop."""
    return getattr(thread, "abort", False)


# --- memory ---------------------------------------------------------------------


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _ranges(obj: Any) -> list:
    return obj.__dict__.setdefault("_ac_ranges", [])


def _lookup(obj: Any, addr: int) -> tuple[int, str] | None:
    for start, end, label in _ranges(obj):
        if start <= addr < end:
            return start, label
    return None


def find_range(space: str, addr: int) -> tuple[int, str] | None:
    """(start, label) of the ``"shared"`` or ``"local"`` array of the running
    kernel that holds ``addr``; None when none does or no kernel runs."""
    from numba.cuda.simulator import kernel as simkernel

    mod = simkernel._get_kernel_context()
    if mod is None:
        return None
    return _lookup(mod._shared if space == "shared" else mod._local, addr)


def _aligned_empty(shape, dtype: np.dtype, alignment: int | None, keep: list) -> np.ndarray:
    """An uninitialised array aligned to ``alignment``.

    Without ``alignment=`` an array gets only its dtype's alignment: it is
    placed off every larger boundary (the worst case the GPU allows), so a
    missing ``alignment=16`` shows up as a misaligned chunk.
    """
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buf = np.empty(nbytes + 2048, np.uint8)
    base = address(buf)
    if alignment is not None:
        off = (-base) % alignment
    else:
        natural = dtype.alignment
        off = (-base) % 1024
        if natural < 16:
            off += natural  # a multiple of the dtype's alignment, of nothing larger
    keep.append(buf)
    return buf[off:off + nbytes].view(dtype).reshape(shape)


def _validate_alignment(alignment) -> None:
    # numba-cuda's rules and messages (cudaimpl._validate_alignment)
    if alignment is None:
        return
    if not isinstance(alignment, int):
        raise ValueError("Alignment must be an integer")
    if alignment <= 0:
        raise ValueError("Alignment must be positive")
    if alignment & (alignment - 1):
        raise ValueError("Alignment must be a power of 2")
    if alignment % 8:
        raise ValueError("Alignment must be a multiple of 8")


# --- the patches ----------------------------------------------------------------


def install(poison_byte: int) -> None:
    """Teach numba-cuda's simulator what the kernels need: ``alignment=`` on
    shared/local arrays (uninitialised shared memory holds ``poison_byte``),
    a registry of shared/local address ranges (for the address-space rules)
    and a list of each block's threads (for deadlock detection); a finished
    block calls its ``_ac_block`` state's ``at_exit``.  Idempotent.

    Example::

        install(0xFF)   # once, before the first simulated launch
    """
    from numba.core import types
    from numba.cuda.np import numpy_support
    from numba.cuda.simulator import kernel as simkernel
    from numba.cuda.simulator import kernelapi

    Shared, Local = kernelapi.FakeCUDAShared, kernelapi.FakeCUDALocal
    if getattr(Shared, "_ac_installed", False):
        return
    alloc_lock = threading.Lock()

    def as_dtype(dtype):
        return np.dtype(numpy_support.as_dtype(dtype) if isinstance(dtype, types.Type) else dtype)

    orig_shared_init = Shared.__init__

    def shared_init(self, dynshared_size):
        self._allocations = {}
        self._dynshared_size = dynshared_size
        self._ac_keep = []
        # dynamic shared memory: one 1024-byte aligned buffer for every view
        self._dynshared = _aligned_empty((dynshared_size,), np.dtype(np.byte), 1024, self._ac_keep)
        self._dynshared[...] = 0
        if dynshared_size:
            start = address(self._dynshared)
            _ranges(self).append((start, start + dynshared_size, "dynamic shared memory"))

    def shared_array(self, shape, dtype, alignment=None):
        _validate_alignment(alignment)
        dtype = as_dtype(dtype)
        if shape == 0:
            count = self._dynshared_size // dtype.itemsize
            return np.frombuffer(self._dynshared.data, dtype=dtype, count=count)
        f = sys._getframe(1)
        caller = (f.f_code.co_filename, f.f_lineno)
        with alloc_lock:  # threads of a block reach the line together
            res = self._allocations.get(caller)
            if res is None:
                res = _aligned_empty(shape, dtype, alignment, self._ac_keep)
                res.view(np.uint8)[...] = poison_byte  # uninitialised shared memory
                self._allocations[caller] = res
                start = address(res)
                _ranges(self).append(
                    (start, start + max(res.nbytes, 1),
                     f"shared array allocated at {caller[0]}:{caller[1]}"))
        return res

    def local_array(self, shape, dtype, alignment=None):
        _validate_alignment(alignment)
        dtype = as_dtype(dtype)
        keep = self.__dict__.setdefault("_ac_keep", [])
        res = _aligned_empty(shape, dtype, alignment, keep)
        start = address(res)
        with alloc_lock:
            _ranges(self).append((start, start + max(res.nbytes, 1), "local array"))
        return res

    # __wrapped__: the originals stay reachable for the names check
    shared_init.__wrapped__ = orig_shared_init
    shared_array.__wrapped__ = Shared.array
    local_array.__wrapped__ = Local.array
    Shared.__init__ = shared_init
    Shared.array = shared_array
    Local.array = local_array

    orig_thread_init = simkernel.BlockThread.__init__

    def thread_init(self, f, manager, *args, **kwargs):
        orig_thread_init(self, f, manager, *args, **kwargs)
        # created (then started) one by one by the manager's thread
        manager.__dict__.setdefault("_ac_threads", []).append(self)

    thread_init.__wrapped__ = orig_thread_init
    simkernel.BlockThread.__init__ = thread_init

    orig_run = simkernel.BlockManager.run

    def block_run(self, grid_point, *args):
        orig_run(self, grid_point, *args)
        blk = self.__dict__.get("_ac_block")
        if blk is not None:
            blk.at_exit(grid_point)

    block_run.__wrapped__ = orig_run
    simkernel.BlockManager.run = block_run

    from .launch import checking_sim_launch  # a launch the GPU refuses is refused here

    kernelapi.FakeCUDAModule.__init__ = checking_sim_launch(kernelapi.FakeCUDAModule.__init__)
    Shared._ac_installed = True
