"""Every numba-cuda 0.30 internal the host side relies on, in one place.

numba-cuda has no cluster launch, never raises a kernel's dynamic shared
memory limit above 48 KB, and cannot tell an intrinsic whether it is being
lowered into a kernel or a device function.  The functions below reach into
its private API for exactly those things; the names they reach are listed
in :data:`NAMES` and :data:`CODE_NAMES`, which a CPU test checks, so a
numba-cuda upgrade that moves one fails loudly in CI.  (The simulator's
internals are in ``sim/_numba_sim_internals.py``.)
"""

from __future__ import annotations

import ctypes
import inspect
import os
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
    ("numba.cuda.dispatcher", "CUDADispatcher._can_compile"),
    ("numba.cuda.compiler", "compile"),
    ("numba.cuda.codegen", "CUDACodeLibrary.get_cufunc"),
    ("numba.cuda.cudadrv.driver", "CudaPythonFunction.handle"),
    ("numba.cuda.cudadrv.driver", "CudaPythonFunction.kernel"),
    ("numba.cuda.cudadrv.driver", "CudaPythonFunction.device"),
    ("numba.cuda.cudadrv.driver", "_to_core_stream"),
    ("numba.cuda.cudadrv.driver", "binding.CUfunction_attribute"),
    ("numba.cuda.cudadrv.driver", "driver"),
    ("numba.cuda.cudadrv.driver", "Stream"),
    ("numba.cuda.cudadrv.devicearray", "DeviceNDArray._numba_type_"),
    ("numba.cuda.cudadrv.devicearray", "DeviceNDArrayBase._strided_memory_view_shim"),
    ("numba.cuda.cudadrv.devicearray", "DeviceRecord"),
    ("numba.cuda.cudadrv.devices", "_runtime._tls"),
    ("numba.cuda.dispatcher", "_LaunchConfiguration"),
    ("cuda.core._kernel_arg_handler", "ParamHolder"),
    ("cuda.core._utils.cuda_utils", "handle_return"),
    ("cuda.bindings.driver", "cuLaunchKernelEx"),
    ("cuda.bindings.driver", "cuCtxGetCurrent"),
    ("cuda.bindings.driver", "CUresult"),
    ("cuda.bindings.driver", "CUlaunchConfig"),
    ("cuda.bindings.driver", "CUlaunchAttribute"),
    ("cuda.bindings.driver", "CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION"),
    ("cuda.bindings.driver", "CUstream"),
)

#: (module, dotted function, name): attributes numba-cuda's constructors set
#: on the objects read here, and the local of ``compile`` read from its frame
CODE_NAMES: tuple[tuple[str, str, str], ...] = (
    ("numba.cuda.dispatcher", "_Kernel.__init__", "_codelibrary"),
    ("numba.cuda.dispatcher", "CUDADispatcher.__init__", "targetoptions"),
    ("numba.cuda.dispatcher", "_DispatcherBase.__init__", "overloads"),
    ("numba.cuda.dispatcher", "_DispatcherBase.__init__", "py_func"),
    ("numba.cuda.compiler", "compile", "device"),
    ("numba.cuda.dispatcher", "_Kernel.__init__", "extensions"),
    ("numba.cuda.dispatcher", "_Kernel.__init__", "launch_config_sensitive"),
    ("numba.cuda.dispatcher", "CUDADispatcher.__init__", "_launch_config_sensitive"),
    ("numba.cuda.dispatcher", "_DispatcherBase._reset_overloads", "overloads"),
    ("numba.cuda.dispatcher", "_LaunchConfiguration.__init__", "pre_launch_callbacks"),
    ("numba.cuda.dispatcher", "_Kernel._prepare_args", "strides_in_bytes"),
    ("numba.cuda.cudadrv.devicearray", "_to_strided_memory_view", "_strided_memory_view_shim"),
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
else:
    _KERNEL_INIT = inspect.unwrap(_dispatcher._Kernel.__init__).__code__
    _COMPILE = inspect.unwrap(_compiler.compile).__code__
    _COMPILE_DEVICE = inspect.unwrap(_dispatcher.CUDADispatcher.compile_device).__code__


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
    #: ``(args, claim, stream handle)`` while ``ac.launch`` runs
    #: ``dispatcher.call(args, ...)`` on this thread: the ``_Kernel.launch``
    #: that gets that very ``args`` object is ours.  (Matched by the
    #: arguments, not the kernel: numba picks the kernel, and one rebuilt
    #: from the on-disk cache has no ``py_func``.)
    pending: tuple | None = None
    #: ``(kernel, cufunc, run-time cluster, {stream handle: driver config})``
    #: of the launch the takeover just made
    launched: tuple | None = None


claims = _Claims()


def install_launch_hook(prepare: Callable[..., None], takeover: Callable[..., None]) -> None:
    """Hook numba-cuda's ``_Kernel.launch``, which every
    ``kernel[grid, block, stream, sharedmem](...)`` launch ends in.

    - Ordinarily ``prepare(kernel, griddim, blockdim, sharedmem)`` runs
      first (it raises the kernel's dynamic shared memory limit and rejects
      a grid that does not fit a declared cluster shape), then numba-cuda's
      own launch.  Once ``prepare`` has found that a kernel needs nothing
      from the package without dynamic shared memory (:func:`mark_plain`:
      no declared cluster shape), its launches with ``sharedmem`` 0 go
      straight to numba-cuda's: one attribute read, no context lookup.
    - While ``claims.pending`` is ``(args, claim, handle)`` and the launch
      gets that same ``args`` object, the claim is consumed (``pending``
      becomes None) and ``takeover(kernel, claim, args, stream, handle)``
      launches instead.
      ``ac.launch`` sets it around ``dispatcher.call(args, ...)``, which
      hands ``args`` through unchanged, so numba-cuda picks (and compiles)
      the kernel exactly as for ``kernel[grid, block]``, C fast path
      included, and the launch gets the cluster shape.
    """
    global _original_launch, _hook
    if _original_launch is not None:
        return
    _original_launch = original = _dispatcher._Kernel.launch
    setattr(_dispatcher._Kernel, PLAIN_ATTR, False)  # the default every kernel reads

    def launch(self, args, griddim, blockdim, stream=0, sharedmem=0):
        pending = claims.pending
        if pending is not None and pending[0] is args:
            claims.pending = None
            return takeover(self, pending[1], args, stream, pending[2])
        if sharedmem or not self._asynccopy_plain:
            prepare(self, griddim, blockdim, sharedmem)
        return original(self, args, griddim, blockdim, stream, sharedmem)

    launch.__wrapped__ = original
    _dispatcher._Kernel.launch = _hook = launch


#: the attribute of a compiled kernel (``_Kernel``) that says its ordinary
#: launches without dynamic shared memory need no ``prepare`` (class default False)
PLAIN_ATTR = "_asynccopy_plain"


def mark_plain(kernel: Any) -> None:
    """Let ``kernel``'s later ordinary launches with no dynamic shared memory
    skip ``prepare`` (the hook reads :data:`PLAIN_ATTR`, one attribute)."""
    setattr(kernel, PLAIN_ATTR, True)


def original_launch() -> Callable:
    """numba-cuda's own ``_Kernel.launch`` (the one the hook wraps)."""
    return _original_launch if _original_launch is not None else _dispatcher._Kernel.launch


def launch_hook_installed() -> bool:
    return _hook is not None and _dispatcher._Kernel.launch is _hook


def is_cuda_dispatcher(obj: Any) -> bool:
    return isinstance(obj, _dispatcher.CUDADispatcher)


def is_kernel(obj: Any) -> bool:
    return isinstance(obj, _dispatcher._Kernel)


def launch_kernel(kernel: Any, cufunc: Any, config: tuple, args: Sequence[Any], stream: Any) -> None:
    """Launch ``kernel`` as numba-cuda's ``_Kernel.launch`` does it:
    Numba's argument marshalling, cuda.core's conversion of those values
    into kernel parameters (``ParamHolder``, what ``cuda.core.launch`` uses),
    the driver launch, then the write-backs of host arrays.  ``config`` is
    a :func:`launch_config` on ``stream``'s handle; ``stream`` is the
    cuda.core stream Numba marshals on."""
    kernelargs, retr = marshal_args(kernel, args, stream)
    holder = ParamHolder(kernelargs)
    rc = launch_ex(config[0], launch_handle(kernel, cufunc), holder.ptr, None)
    if rc:
        launch_failed(rc)
    del holder  # the driver has copied the parameters
    for writeback in retr:
        writeback()


# --- the driver launch ----------------------------------------------------------------------
# ac.launch calls cuLaunchKernelEx itself, with the CUlaunchConfig that
# cuda.core's launch builds (cuda.core's ``_to_native_launch_config``: the
# grid in blocks, a cluster shape as the CLUSTER_DIMENSION attribute) and a
# ready array of parameter pointers.  The launch is called through ctypes
# on the very function pointer cuda.bindings' own call uses (see
# :func:`_driver_function`): no Python frame and no CUlaunchConfig object a
# call, though on the H200 the call itself measured the same as
# cuda.bindings' (4.30 against 4.26 us).  CPU tests replace launch_ex,
# launch_handle and current_context_handle.

if SIMULATOR:
    ParamHolder = None
else:
    from cuda.core._kernel_arg_handler import ParamHolder


def native_config(grid: tuple[int, int, int], block: tuple[int, int, int], shared_mem: int,
                  cluster: tuple[int, int, int] | None, stream_handle: int) -> Any:
    """The driver's ``CUlaunchConfig`` for a launch shape (``grid`` in
    blocks; ``cluster`` None for no run-time cluster) on the stream
    ``stream_handle``, built as cuda.core's launch builds it for
    ``LaunchConfig(grid=grid // cluster, cluster=cluster, block=block,
    shmem_size=shared_mem)``.  Never changed once built: one per shape and
    stream, shared by every thread.

    Example::

        cfg = native_config((528, 1, 1), (128, 1, 1), 0, (2, 1, 1), 0)
    """
    from cuda.bindings import driver as binding

    cfg = binding.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
    attrs = []
    if cluster is not None:
        attr = binding.CUlaunchAttribute()
        attr.id = binding.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        dim = attr.value.clusterDim
        dim.x, dim.y, dim.z = cluster
        attrs.append(attr)
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
    cfg.sharedMemBytes = shared_mem
    cfg.numAttrs = len(attrs)
    cfg.attrs = attrs
    cfg.hStream = binding.CUstream(stream_handle)
    return cfg


def launch_config(grid: tuple[int, int, int], block: tuple[int, int, int], shared_mem: int,
                  cluster: tuple[int, int, int] | None, stream_handle: int) -> tuple[int, Any]:
    """``(address, cfg)``: a :func:`native_config` and the address of its C
    struct, which :func:`launch_ex` takes.  Whoever holds the pair holds
    ``cfg`` (and the attribute array the struct points to) alive."""
    cfg = native_config(grid, block, shared_mem, cluster, stream_handle)
    return int(cfg.getPtr()), cfg


def launch_handle(kernel: Any, cufunc: Any) -> int:
    """The handle ``cuLaunchKernelEx`` launches, as an int: the loaded
    kernel (cuda.core's ``CUkernel``, which the driver accepts as a function)."""
    return int(cufunc.handle)


def _ptds() -> bool:
    """Whether cuda.bindings resolves the per-thread-default-stream variants
    of the driver functions (``cuLaunchKernelEx_ptsz``): it reads this
    variable once, when it loads the driver."""
    return bool(int(os.getenv("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", default=0)))


def _bindings_function_pointer(name: str) -> int:
    """The pointer cuda.bindings' own ``cuda.bindings.driver.<name>`` calls
    (cuda.bindings resolves every driver function once, through
    ``cuGetProcAddress`` of the libcuda it loaded, the ``_ptsz`` variant
    where ``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM`` is set), from
    ``cuda.bindings._internal.driver._inspect_function_pointer``; 0 where
    this cuda.bindings has no such helper (13.3 and older: not a name this
    module depends on, so it is not in :data:`NAMES`) or no driver."""
    try:
        from cuda.bindings._internal import driver as _internal

        return int(_internal._inspect_function_pointer(f"__{name}") or 0)
    except Exception:  # noqa: BLE001 - no such module or helper, or no driver
        return 0


def _driver_function(name: str, *argtypes: Any) -> Any:
    """The driver function ``name`` (returning a ``CUresult``) as a ctypes
    function: on :func:`_bindings_function_pointer` where cuda.bindings
    shows it, else on the symbol of ``libcuda.so.1`` (the library
    cuda.bindings opens; loaded already, so the same one), ``_ptsz`` as
    cuda.bindings picks it.  None where libcuda cannot be loaded by ctypes
    at all: then the caller keeps cuda.bindings' own call."""
    proto = ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)
    ptr = _bindings_function_pointer(name)
    if ptr:
        return proto(ptr)
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        if name == "cuLaunchKernelEx" and _ptds():
            return proto(("cuLaunchKernelEx_ptsz", lib))
        return proto((name, lib))
    except (OSError, AttributeError):
        return None


def _bindings_launch_ex(cfg: int, func: int, params: int, extra: None) -> int:
    # cuda.bindings' own call, where libcuda cannot be loaded by ctypes: the
    # same C struct, viewed by a CUlaunchConfig
    return int(_cuLaunchKernelEx(_CUlaunchConfig(_ptr=cfg), func, params, 0)[0])


def _first_launch_ex(cfg: int, func: int, params: int, extra: None) -> int:
    """``launch_ex`` until the first launch, which resolves the driver's
    function (cuda.bindings loads the driver when first used) and replaces
    this one with it."""
    global launch_ex
    fn = _driver_function("cuLaunchKernelEx", *(ctypes.c_void_p,) * 4)
    fn = launch_ex = _bindings_launch_ex if fn is None else fn
    return fn(cfg, func, params, extra)


#: ``launch_ex(cfg, func, params, None) -> int``: ``cuLaunchKernelEx(cfg,
#: func, params, extra=NULL)``, returning the ``CUresult`` (0: launched);
#: a non-zero one goes to :func:`launch_failed`.  ``cfg`` is the address of
#: a ``CUlaunchConfig`` (the first of a :func:`launch_config` pair, which
#: the caller keeps alive), ``func`` a :func:`launch_handle`, ``params`` the
#: address of the array of pointers to the parameter values.  From the
#: first launch on it is the ctypes function itself: no Python frame.
launch_ex: Callable[..., int] = _first_launch_ex


def launch_failed(rc: int) -> None:
    """A launch's non-zero ``CUresult``: cuda.core's ``CUDAError`` (with the
    driver's name and text for the error), as ``cuda.core.launch`` raises it."""
    _handle_return((_CUresult(rc),))


def current_context_handle() -> int:
    """The context Numba would launch in now, as an int: the thread's
    attached context, else the driver's current one (0: none yet, or the
    driver refused)."""
    ctx = getattr(_tls, "attached_context", None)
    if ctx is not None:
        return int(ctx.handle)
    return driver_context_handle()


def driver_context_handle() -> int:
    """The driver's current context (``cuCtxGetCurrent``), as an int; 0 for
    none or an error.  cuda.bindings' own call: on the H200 it took 0.13 us
    where the same function through ctypes (a per-thread out-buffer) took
    0.42 us, unlike the launch, where the two cost the same."""
    rc, ctx = _cuCtxGetCurrent()
    return 0 if rc or ctx is None else int(ctx)


if SIMULATOR:
    _tls = _cuLaunchKernelEx = _cuCtxGetCurrent = _handle_return = None
    _CUresult = _CUlaunchConfig = None
else:
    from cuda.bindings.driver import CUlaunchConfig as _CUlaunchConfig
    from cuda.bindings.driver import CUresult as _CUresult
    from cuda.bindings.driver import cuCtxGetCurrent as _cuCtxGetCurrent
    from cuda.bindings.driver import cuLaunchKernelEx as _cuLaunchKernelEx
    from cuda.core._utils.cuda_utils import handle_return as _handle_return
    from numba.cuda.cudadrv.devices import _runtime

    _tls = _runtime._tls


def numba_stream_class() -> type | None:
    """numba-cuda's ``Stream`` (what ``cuda.stream()`` returns)."""
    if SIMULATOR:
        return None
    from numba.cuda.cudadrv.driver import Stream

    return Stream


def device_array_classes() -> tuple[type, type] | None:
    """numba-cuda's ``DeviceNDArray`` and ``DeviceRecord``: device memory
    whose kernel parameters the prepared launch reads itself (from the same
    ``_strided_memory_view_shim`` that Numba's marshalling reads)."""
    if SIMULATOR:
        return None
    from numba.cuda.cudadrv.devicearray import DeviceNDArray, DeviceRecord

    return DeviceNDArray, DeviceRecord


def launch_config_sensitive(dispatcher: Any, kernel: Any) -> bool:
    """numba-cuda compiles a launch-configuration-sensitive kernel per
    launch shape (its dispatcher picks one per ``(grid, block, shared)``)."""
    return bool(getattr(dispatcher, "_launch_config_sensitive", False)
                or getattr(kernel, "launch_config_sensitive", False))


def can_compile(dispatcher: Any) -> bool:
    """Whether the dispatcher compiles a new overload for new argument types
    (then it only launches exact matches) rather than converting arguments
    to one of the signatures it was given."""
    return bool(dispatcher._can_compile)


def kernel_extensions(kernel: Any) -> list:
    """Numba's argument-marshalling extensions of a compiled kernel."""
    return kernel.extensions
