"""Streams and arrays from other CUDA libraries (PyTorch, CuPy, cuda.core,
anything speaking the CUDA stream protocol or DLPack), for :func:`launch`.

- :func:`as_stream`: a Numba stream, a cuda.core ``Stream``, a
  ``torch.cuda.Stream``, any object with ``__cuda_stream__`` (the CUDA
  stream protocol: ``(version, handle)``), or a raw ``CUstream`` handle
  (an int; ``0`` is the default stream), as a stream Numba launches on.
- :func:`as_device_array`: a Numba device array, an object with
  ``__cuda_array_interface__`` (CuPy, torch CUDA tensors) or a DLPack
  object on the GPU (``__dlpack__``), as a Numba device array viewing the
  same memory (no copy).

Nothing is copied or converted silently: a host (CPU) tensor, a dtype Numba
kernels cannot take or a stream of the wrong kind is an error naming the
function, the argument and why.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _numba_internals as _nb

# DLPack device types (dlpack.h): memory a kernel can read
_DL_CUDA, _DL_CUDA_MANAGED = 2, 13
_DL_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA pinned host", 4: "OpenCL", 7: "Vulkan",
             8: "Metal", 10: "ROCm", 13: "CUDA managed"}
# numpy kinds a Numba kernel takes: bool, ints, unsigned, floats (incl. float16), complex
_KINDS = "biufc"


class InteropError(TypeError):
    """A stream or array from another library that :func:`launch` cannot use
    (a host tensor, an unsupported dtype, an object of an unknown kind).

    Example::

        try:
            ac.launch(kernel, 1, 64, (torch.zeros(64), out))   # a CPU tensor
        except ac.InteropError as e:
            print(e)                                          # names the argument
    """


def _stream_classes() -> tuple[type, ...]:
    from numba.cuda.cudadrv import driver

    return tuple(c for c in (getattr(driver, "Stream", None),
                             getattr(driver, "ExperimentalStream", None),
                             getattr(driver, "GraphBuilder", None)) if c is not None)


_NATIVE_STREAMS: tuple[type, ...] | None = None
# handle -> cuda.core Stream wrapping it (no ownership): numba's configure()
# caches launch configurations by stream object, so one wrapper per handle
_WRAPPED: dict = {}
_WRAPPED_MAX = 256


def as_stream(obj: Any, what: str = "ac.launch") -> Any:
    """``obj`` as a stream Numba launches on (a Numba or cuda.core stream, or 0).

    Accepts a Numba stream, a cuda.core ``Stream`` (returned as is), a
    ``torch.cuda.Stream`` (its ``cuda_stream`` handle), any object with
    ``__cuda_stream__`` (version 0 of the protocol: ``(0, handle)``), or an
    int ``CUstream`` handle (``0``: the default stream).  The handle is
    wrapped, not owned: the caller keeps the stream alive while kernels run
    on it.  A bool, float or other object is an :class:`InteropError`.

    Example::

        s = torch.cuda.Stream()
        ac.launch(copy, grid=4, block=128, args=(src, dst), stream=s)
        ac.as_stream(s.cuda_stream)   # the same stream, from its raw handle
    """
    global _NATIVE_STREAMS
    if obj is None or (obj.__class__ is int and obj == 0):
        return 0
    if _NATIVE_STREAMS is None:
        _NATIVE_STREAMS = _stream_classes()
    if isinstance(obj, _NATIVE_STREAMS):
        return obj
    if isinstance(obj, (bool, np.bool_)):
        raise InteropError(f"{what}: `stream` must be a stream or an int handle, got {obj!r}")
    if isinstance(obj, (int, np.integer)):
        handle = int(obj)
        if handle < 0:
            raise InteropError(f"{what}: `stream` handle must be >= 0, got {handle}")
    elif hasattr(obj, "__cuda_stream__"):
        proto = obj.__cuda_stream__()
        if not (isinstance(proto, tuple) and len(proto) == 2 and proto[0] == 0):
            raise InteropError(f"{what}: `stream`'s __cuda_stream__() returned {proto!r}; "
                               "the CUDA stream protocol (version 0) returns (0, handle)")
        handle = int(proto[1])
    elif hasattr(obj, "cuda_stream") and type(obj).__module__.startswith("torch"):
        handle = int(obj.cuda_stream)  # torch.cuda.Stream / ExternalStream
    else:
        raise InteropError(
            f"{what}: `stream` must be a Numba stream, a cuda.core Stream, a torch.cuda.Stream, "
            f"an object with __cuda_stream__, or an int handle (0: default), "
            f"got {type(obj).__name__}")
    if handle == 0:
        return 0
    wrapped = _WRAPPED.get(handle)
    if wrapped is None:
        from cuda.core import Stream

        if len(_WRAPPED) >= _WRAPPED_MAX:
            _WRAPPED.clear()
        wrapped = _WRAPPED[handle] = Stream.from_handle(handle)
    return wrapped


def _dtype_check(dtype: Any, obj: Any, what: str, name: str) -> None:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt.kind not in _KINDS:
        raise InteropError(f"{what}: {name} ({type(obj).__name__}) has dtype {dtype}, which "
                           "Numba kernels do not take (bool, int, uint, float16/32/64, "
                           "complex64/128 only)")


_DEVICE_ARRAY: tuple[type, ...] | None = None


def _is_device_array(obj: Any) -> bool:
    """A Numba device array (or the simulator's)."""
    global _DEVICE_ARRAY
    if _DEVICE_ARRAY is None:
        if _nb.SIMULATOR:
            from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray as _cls
        else:
            from numba.cuda.cudadrv.devicearray import DeviceNDArrayBase as _cls
        _DEVICE_ARRAY = (_cls,)
    return isinstance(obj, _DEVICE_ARRAY)


def _dlpack_device(obj: Any) -> tuple[int, int] | None:
    dev = getattr(obj, "__dlpack_device__", None)
    return tuple(dev()) if dev is not None else None


def is_foreign_array(obj: Any) -> bool:
    """Whether ``obj`` is an array of another library (DLPack or the CUDA
    array interface) that :func:`as_device_array` handles; a numpy array
    (Numba copies it in and back) or a Numba device array is not."""
    if isinstance(obj, np.ndarray) or _is_device_array(obj):
        return False
    return hasattr(obj, "__dlpack__") or hasattr(obj, "__cuda_array_interface__")


def as_device_array(obj: Any, what: str = "ac.as_device_array", name: str = "the array") -> Any:
    """``obj`` as a Numba device array viewing the same GPU memory (no copy).

    Takes a Numba device array (returned as is), an object with
    ``__cuda_array_interface__`` (CuPy arrays, torch CUDA tensors), or a
    DLPack object on a CUDA device (``__dlpack__``; read through
    cuda.core's ``StridedMemoryView``).  A host (CPU) tensor is an
    :class:`InteropError` (move it with ``.cuda()`` first, or pass a numpy
    array, which a launch copies in and back), and so is a dtype Numba
    kernels cannot take.  A torch ``bfloat16`` tensor becomes a ``uint16``
    array of its bf16 bits (the package's bf16 representation: read and
    write elements with ``ac.bf16_to_f32`` / ``ac.f32_to_bf16``).

    Example::

        t = torch.arange(8, dtype=torch.float32, device="cuda")
        d = ac.as_device_array(t)          # shares t's memory
        d[0] = 5.0                          # t[0] is 5 too
    """
    if _is_device_array(obj):
        return obj
    dev = _dlpack_device(obj) if hasattr(obj, "__dlpack__") else None
    if dev is not None and dev[0] not in (_DL_CUDA, _DL_CUDA_MANAGED):
        kind = _DL_NAMES.get(dev[0], f"DLPack device type {dev[0]}")
        raise InteropError(f"{what}: {name} ({type(obj).__name__}) lives on the {kind} device, "
                           "not on a GPU: move it to the GPU first (torch: .cuda()), or pass "
                           "a numpy array, which the launch copies in and back")
    from numba import cuda

    bf16 = bf16_interface(obj, what, name)
    if bf16 is not None:  # torch has no CUDA array interface for bfloat16: uint16 bits
        return cuda.from_cuda_array_interface(bf16, owner=obj)
    if hasattr(type(obj), "__cuda_array_interface__") or hasattr(obj, "__cuda_array_interface__"):
        try:
            desc = obj.__cuda_array_interface__
        except (TypeError, ValueError, RuntimeError, AttributeError) as e:
            # torch raises here for bfloat16, CPU tensors, tensors needing grad...
            raise InteropError(f"{what}: {name} ({type(obj).__name__}) has no usable "
                               f"__cuda_array_interface__: {e}") from e
        _dtype_check(desc["typestr"], obj, what, name)
        return cuda.from_cuda_array_interface(desc, owner=obj)
    if hasattr(obj, "__dlpack__"):
        from cuda.core.utils import StridedMemoryView

        try:
            view = StridedMemoryView.from_dlpack(obj, stream_ptr=-1)  # -1: no synchronisation
        except (AttributeError, BufferError, TypeError, ValueError) as e:
            raise InteropError(f"{what}: {name} ({type(obj).__name__}) could not be read through "
                               f"DLPack (__dlpack__ and __dlpack_device__): {e}") from e
        if not view.is_device_accessible:
            raise InteropError(f"{what}: {name} ({type(obj).__name__}) is host memory, not on a "
                               "GPU: move it to the GPU first, or pass a numpy array")
        try:
            dtype = view.dtype
        except NotImplementedError as e:  # bfloat16 & co. without ml_dtypes
            raise InteropError(f"{what}: {name} ({type(obj).__name__}) has a dtype Numba kernels "
                               f"do not take: {e}") from e
        _dtype_check(dtype, obj, what, name)
        itemsize = np.dtype(dtype).itemsize
        strides = None if view.strides is None else tuple(s * itemsize for s in view.strides)
        desc = {"shape": tuple(view.shape), "strides": strides, "typestr": np.dtype(dtype).str,
                "data": (int(view.ptr), bool(view.readonly)), "version": 3}
        # the view keeps the DLPack producer's memory alive
        return cuda.from_cuda_array_interface(desc, owner=view)
    raise InteropError(f"{what}: {name} is a {type(obj).__name__}, not a GPU array (Numba "
                       "device array, __cuda_array_interface__ or __dlpack__ object)")


def is_torch_bf16(obj: Any) -> bool:
    """A torch ``bfloat16`` tensor (checked without importing torch)."""
    return (type(obj).__module__.split(".")[0] == "torch"
            and str(getattr(obj, "dtype", "")) == "torch.bfloat16")


def bf16_interface(obj: Any, what: str = "ac.as_device_array",
                   name: str = "the array") -> dict | None:
    """The ``__cuda_array_interface__`` of a torch bfloat16 CUDA tensor as
    ``uint16`` elements (the bf16 bits: the package's bf16 representation,
    which numpy and Numba lack a dtype for); None for anything else.

    torch refuses the interface for bfloat16; the tensor's own pointer,
    shape and strides describe the same memory.  A CPU tensor, or one that
    requires grad, is an :class:`InteropError` (as torch's interface is).

    Example::

        t = torch.randn(64, 64, device="cuda").bfloat16()
        d = ac.as_device_array(t)        # uint16[64, 64], the same memory
    """
    if not is_torch_bf16(obj):
        return None
    if not getattr(obj, "is_cuda", False):
        raise InteropError(f"{what}: {name} ({type(obj).__name__}, bfloat16) is not on a GPU: "
                           "move it with .cuda() first, or pass ac.bf16_array(...) of its "
                           "values as a numpy array, which the launch copies in and back")
    if getattr(obj, "requires_grad", False):
        raise InteropError(f"{what}: {name} ({type(obj).__name__}, bfloat16) requires grad: "
                           "pass t.detach() (the kernel writes memory autograd does not see)")
    shape = tuple(int(n) for n in obj.shape)
    strides = tuple(2 * int(s) for s in obj.stride())
    return {"shape": shape, "strides": strides, "typestr": "<u2",
            "data": (int(obj.data_ptr()), False), "version": 3}


def convert_args(args: tuple, what: str = "ac.launch", tensor_maps: tuple[type, ...] = ()) -> tuple:
    """The launch arguments with every foreign array (DLPack or CUDA array
    interface objects other than numpy and Numba arrays) as a Numba device
    array; the tuple itself when there is none (the common case costs one
    class look-up per argument).  An instance of ``tensor_maps`` (the
    caller's ``TensorMap`` class: the map is built above this module) is
    passed on as it is, once its device is checked."""
    out = None
    for i, a in enumerate(args):
        cls = a.__class__
        if cls in _PLAIN:
            continue
        if isinstance(a, tensor_maps):
            check_tensor_map_device(a, what, f"argument {i}")
            continue
        if isinstance(a, np.ndarray) or _is_device_array(a):
            _PLAIN.add(cls)  # Numba's own arrays (numpy: copied in and back)
            continue
        if not is_foreign_array(a):
            if not hasattr(a, "__dlpack__"):  # per class: a torch.Tensor may be CPU or GPU
                _PLAIN.add(cls)
            continue
        if out is None:
            out = list(args)
        out[i] = as_device_array(a, what, f"argument {i}")
    return args if out is None else tuple(out)


# classes seen to need no conversion (ints, floats, numpy and Numba arrays, TensorMap...)
_PLAIN: set = {int, float, complex, bool, np.ndarray}


def current_device_id() -> int:
    """The ordinal of the current CUDA device (the one a launch runs on)."""
    from numba import cuda

    return int(cuda.current_context().device.id)


def check_tensor_map_device(tmap: Any, what: str = "ac.launch", name: str = "the tensor map") -> None:
    """A :class:`TensorMap` holds a global address on the device it was
    encoded on: used from another device, a TMA copy would read or write the
    wrong memory.  Raises :class:`InteropError` naming both devices."""
    made = getattr(tmap, "device_id", None)
    if made is None:  # the simulator's map: one device
        return
    here = current_device_id()
    if made != here:
        raise InteropError(
            f"{what}: {name} is a TensorMap encoded on device {made}, but the launch runs on "
            f"device {here}: a tensor map holds a device address and is valid only on the "
            f"device it was built on; build one per device (with cuda.gpus[{here}]: "
            "ac.TensorMap(...))")
