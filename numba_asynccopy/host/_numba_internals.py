"""Every numba-cuda 0.30 internal the host side relies on, in one place.

numba-cuda has no cluster launch, never raises a kernel's dynamic shared
memory limit above 48 KB, and cannot tell an intrinsic whether it is being
lowered into a kernel or a device function.  The functions below reach into
its private API for exactly those things; the names they reach are listed
in :data:`NAMES` and :data:`CODE_NAMES`, which a CPU test checks, so a
numba-cuda upgrade that moves one fails loudly in CI.  (The simulator's
internals are in ``_numba_sim_internals``.)
"""

from __future__ import annotations

import inspect
import sys
import threading
from typing import Any, Callable, NamedTuple, Sequence

from numba.cuda import compiler as _compiler
from numba.cuda import dispatcher as _dispatcher

#: (module, dotted name) of every numba-cuda / cuda-core name looked up,
#: called or replaced here (``driver`` is numba-cuda's driver object)
NAMES: tuple[tuple[str, str], ...] = (
    ("numba.cuda.dispatcher", "_Kernel.__init__"),
    ("numba.cuda.dispatcher", "_Kernel.launch"),
    ("numba.cuda.dispatcher", "_Kernel._prepare_args"),
    ("numba.cuda.dispatcher", "_Kernel.argument_types"),
    ("numba.cuda.dispatcher", "CUDADispatcher.compile_device"),
    ("numba.cuda.dispatcher", "CUDADispatcher._compile_for_args"),
    ("numba.cuda.dispatcher", "CUDADispatcher.specialized"),
    ("numba.cuda.compiler", "compile"),
    ("numba.cuda.codegen", "CUDACodeLibrary.get_cufunc"),
    ("numba.cuda.cudadrv.driver", "CudaPythonFunction.handle"),
    ("numba.cuda.cudadrv.driver", "CudaPythonFunction.kernel"),
    ("numba.cuda.cudadrv.driver", "CudaPythonFunction.device"),
    ("numba.cuda.cudadrv.driver", "_to_core_stream"),
    ("numba.cuda.cudadrv.driver", "binding.CUfunction_attribute"),
    ("numba.cuda.cudadrv.driver", "driver"),
    ("cuda.core", "launch"),
)

#: (module, dotted function, name): attributes numba-cuda's constructors set
#: on the objects read here, and the local of ``compile`` read from its frame
CODE_NAMES: tuple[tuple[str, str, str], ...] = (
    ("numba.cuda.dispatcher", "_Kernel.__init__", "_codelibrary"),
    ("numba.cuda.dispatcher", "CUDADispatcher.__init__", "targetoptions"),
    ("numba.cuda.dispatcher", "_DispatcherBase.__init__", "overloads"),
    ("numba.cuda.dispatcher", "_DispatcherBase.__init__", "py_func"),
    ("numba.cuda.compiler", "compile", "device"),
)

# --- kernel or device function? ---------------------------------------------

# The three numba-cuda entry points that lower a Python function: a kernel
# (``_Kernel.__init__``), ``cuda.compile``/``compile_ptx`` (kernel unless
# ``device=True``) and a device function's compile.  The innermost one on
# the Python stack owns the function being lowered.
# Under the CUDA simulator (NUMBA_ENABLE_CUDASIM=1) none of these exist and
# nothing is lowered; the simulator implementations take over.
SIMULATOR = not hasattr(_dispatcher, "_Kernel")
if SIMULATOR:
    _KERNEL_INIT = _COMPILE = _COMPILE_DEVICE = None
    core_launch = None
else:
    _KERNEL_INIT = inspect.unwrap(_dispatcher._Kernel.__init__).__code__
    _COMPILE = inspect.unwrap(_compiler.compile).__code__
    _COMPILE_DEVICE = inspect.unwrap(_dispatcher.CUDADispatcher.compile_device).__code__
    from cuda.core import launch as core_launch  # CPU tests replace it


def compiling_kernel() -> bool | None:
    """True when the function now being lowered is a kernel, False for a
    device function, None when called outside numba-cuda's compilers."""
    f = sys._getframe(1)
    while f is not None:
        code = f.f_code
        if code is _COMPILE_DEVICE:
            return False
        if code is _KERNEL_INIT:
            return True
        if code is _COMPILE:
            return not f.f_locals.get("device", True)
        f = f.f_back
    return None


# --- compiled kernels ---------------------------------------------------------


def kernel_for_args(dispatcher: Any, args: Sequence[Any]) -> Any:
    """The compiled ``_Kernel`` a launch of ``dispatcher`` with ``args`` runs
    (compiling it if needed), as ``Dispatcher.call`` picks it."""
    if isinstance(dispatcher, _dispatcher._Kernel):
        return dispatcher
    if not isinstance(dispatcher, _dispatcher.CUDADispatcher):
        raise TypeError(f"expected a @cuda.jit kernel, got {type(dispatcher).__name__}")
    if dispatcher.targetoptions.get("device"):
        raise TypeError(f"{dispatcher.py_func.__name__} is a device function, not a kernel")
    if dispatcher.specialized:
        return next(iter(dispatcher.overloads.values()))
    return dispatcher._compile_for_args(*args)


def cufunc_of(kernel: Any) -> Any:
    """The loaded function (numba's ``CudaPythonFunction``) in the current context."""
    return kernel._codelibrary.get_cufunc()


def marshal_args(kernel: Any, args: Sequence[Any], stream: Any) -> tuple[list, list]:
    """Kernel parameters as ``_Kernel.launch`` builds them, plus the
    write-back callbacks for host arrays that were copied to the device."""
    if len(args) != len(kernel.argument_types):
        raise TypeError(
            f"kernel takes {len(kernel.argument_types)} arguments, got {len(args)}"
        )
    retr: list = []
    kernelargs: list = []
    for ty, val in zip(kernel.argument_types, args):
        kernel._prepare_args(ty, val, stream, retr, kernelargs)
    return kernelargs, retr


def core_stream(stream: Any) -> Any:
    from numba.cuda.cudadrv import driver

    return driver._to_core_stream(stream)


def kernel_get_attribute(cufunc: Any, name: str) -> int:
    from numba.cuda.cudadrv.driver import binding, driver

    attr = getattr(binding.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}")
    return int(driver.cuKernelGetAttribute(attr, cufunc.handle, cufunc.device.id))


def kernel_set_attribute(cufunc: Any, name: str, value: int) -> None:
    from numba.cuda.cudadrv.driver import binding, driver

    attr = getattr(binding.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}")
    driver.cuKernelSetAttribute(attr, int(value), cufunc.handle, cufunc.device.id)


def device_attribute(cufunc: Any, name: str) -> int:
    return int(getattr(cufunc.device, name))


class LaunchLimits(NamedTuple):
    """The device attributes a launch shape must fit."""
    max_block: tuple[int, int, int]  # MAX_BLOCK_DIM_X/Y/Z
    max_threads: int  # MAX_THREADS_PER_BLOCK
    max_grid: tuple[int, int, int]  # MAX_GRID_DIM_X/Y/Z


def device_launch_limits(cufunc: Any) -> LaunchLimits:
    """Block and grid limits of the device ``cufunc`` is loaded on (numba's
    ``Device`` reads each attribute from the driver once, then keeps it).

    Example::

        device_launch_limits(cufunc).max_threads   # 1024 on sm_90
    """
    return LaunchLimits(
        tuple(device_attribute(cufunc, f"MAX_BLOCK_DIM_{a}") for a in "XYZ"),
        device_attribute(cufunc, "MAX_THREADS_PER_BLOCK"),
        tuple(device_attribute(cufunc, f"MAX_GRID_DIM_{a}") for a in "XYZ"),
    )


# --- the ordinary launch path -------------------------------------------------

_original_launch: Callable | None = None
_hook: Callable | None = None


class _Claims(threading.local):
    #: ``(args, claim)`` while ``ac.launch`` runs ``dispatcher.call(args, ...)``
    #: on this thread: the ``_Kernel.launch`` that gets that very ``args``
    #: object is ours.  (Matched by the arguments, not the kernel: numba
    #: picks the kernel, and one rebuilt from the on-disk cache has no
    #: ``py_func``.)
    pending: tuple | None = None


claims = _Claims()


def install_launch_hook(prepare: Callable[..., None], takeover: Callable[..., None]) -> None:
    """Hook numba-cuda's ``_Kernel.launch``, which every
    ``kernel[grid, block, stream, sharedmem](...)`` launch ends in.

    - Ordinarily ``prepare(kernel, griddim, blockdim, sharedmem)`` runs
      first (it raises the kernel's dynamic shared memory limit and rejects
      a grid that does not fit a declared cluster shape), then numba-cuda's
      own launch.
    - While ``claims.pending`` is ``(args, claim)`` and the launch gets
      that same ``args`` object, the claim is consumed (``pending`` becomes
      None) and ``takeover(kernel, claim, args, stream)`` launches instead.
      ``ac.launch`` sets it around ``dispatcher.call(args, ...)``, which
      hands ``args`` through unchanged, so numba-cuda picks (and compiles)
      the kernel exactly as for ``kernel[grid, block]``, C fast path
      included, and the launch gets the cluster shape.
    """
    global _original_launch, _hook
    if _original_launch is not None:
        return
    _original_launch = original = _dispatcher._Kernel.launch

    def launch(self, args, griddim, blockdim, stream=0, sharedmem=0):
        pending = claims.pending
        if pending is not None and pending[0] is args:
            claims.pending = None
            return takeover(self, pending[1], args, stream)
        prepare(self, griddim, blockdim, sharedmem)
        return original(self, args, griddim, blockdim, stream, sharedmem)

    launch.__wrapped__ = original
    _dispatcher._Kernel.launch = _hook = launch


def launch_hook_installed() -> bool:
    return _hook is not None and _dispatcher._Kernel.launch is _hook


def is_cuda_dispatcher(obj: Any) -> bool:
    return isinstance(obj, _dispatcher.CUDADispatcher)


def is_kernel(obj: Any) -> bool:
    return isinstance(obj, _dispatcher._Kernel)


def launch_kernel(kernel: Any, cufunc: Any, config: Any, args: Sequence[Any], stream: Any) -> None:
    """Launch ``kernel`` with a cuda.core ``LaunchConfig`` as numba-cuda's
    ``_Kernel.launch`` does it (argument marshalling, then write-backs of
    host arrays); ``stream`` is a cuda.core stream."""
    kernelargs, retr = marshal_args(kernel, args, stream)
    core_launch(stream, config, cufunc.kernel, *kernelargs)
    for writeback in retr:
        writeback()
