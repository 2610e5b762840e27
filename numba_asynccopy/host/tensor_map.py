"""``TensorMap``: a TMA tensor map built on the host, passed to kernels.

Everything ``cuTensorMapEncodeTiled`` documents is validated in pure
Python first (:func:`describe`, defined with the map's description in
``_tensor_spec`` and importable from here), so a bad map is a
``ValueError`` naming the field and the rule rather than a bare
``CUDA_ERROR_INVALID_VALUE``.

Axis order: ``box``, ``element_strides`` and the kernels' ``coords`` follow
the array's own axis order (numpy order, last axis fastest), like
``array[c0:c0 + box[0], c1:c1 + box[1]]``.  The driver and PTX list them
innermost first; the reversal happens here and in the kernel lowering.

The map lives in device memory: a 32-word uint64 buffer holding the
128-byte map (words 0..15) followed by metadata that checked mode reads
(words 16..): a magic word, rank, element size, required shared-memory
alignment, bytes per box, data-type code and the box.  A ``TensorMap``
exposes that buffer's ``__cuda_array_interface__``, so a kernel receives
it as an ordinary ``uint64[::1]`` array argument; it keeps the described
tensor alive.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

# the description and its validation live below this module and im2col's
# (both build on them); their names stay importable from here
from ._tensor_spec import (  # noqa: F401
    MAP_WORDS,
    BUFFER_WORDS,
    MAGIC,
    W_MAGIC,
    W_RANK,
    W_ITEMSIZE,
    W_SMEM_ALIGN,
    W_BOX_BYTES,
    W_DTYPE,
    W_BOX,
    W_MODE,
    W_IM2COL_BOX,
    W_IM2COL_CORNERS,
    DTYPE_CODES,
    FLOAT_CODES,
    SWIZZLE_CODES,
    INTERLEAVE_CODES,
    L2_CODES,
    OOB_CODES,
    MAX_BOX_BYTES,
    TensorMapSpec,
    TensorMapTypeError,
    describe,
    driver_args,
    _fail,
    _type_fail,
    _is_int,
    _int_tuple,
    _option,
    _interface_fields,
    _dtype_name,
)
from .im2col import describe_im2col
from .im2col import driver_args as _im2col_driver_args
from .interop import bf16_interface


def encode(spec: TensorMapSpec) -> list[int]:
    """The 16 words of the map, from the driver (needs a CUDA context)."""
    from cuda.bindings import driver

    if getattr(spec, "mode", "tile") == "im2col":
        call, args = "cuTensorMapEncodeIm2col", _im2col_driver_args(spec)
    else:
        call, args = "cuTensorMapEncodeTiled", driver_args(spec)
    err, tmap = getattr(driver, call)(*args)
    if err != driver.CUresult.CUDA_SUCCESS:
        # describe() passed it: a rule of the driver this package does not know
        raise RuntimeError(f"TensorMap: {call} refused a description that passed "
                           f"this package's validation, with {err!r}, for {spec}")
    words = [int(w) for w in tmap.opaque]
    if len(words) != MAP_WORDS:
        raise RuntimeError(f"TensorMap: expected a {MAP_WORDS}-word map, got {len(words)} words")
    return words


def _pointer_device(ptr: int) -> int | None:
    """The device ordinal of a device pointer (None: unknown, e.g. null or
    managed memory the driver does not attribute to one context).

    Read through the pointer's context: on the H200 host (driver 580,
    cuda-bindings 13) ``CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`` answered 0 for
    memory allocated on device 1, while ``CU_POINTER_ATTRIBUTE_CONTEXT``
    named device 1's context."""
    if not ptr:
        return None
    try:
        from numba.cuda.cudadrv.driver import binding, driver

        attr = binding.CUpointer_attribute.CU_POINTER_ATTRIBUTE_CONTEXT
        pctx = driver.cuPointerGetAttribute(attr, ptr)
    except Exception:  # not a pointer the driver knows: the encode call reports it
        return None
    if not int(pctx):
        return None
    driver.cuCtxPushCurrent(pctx)
    try:
        return int(driver.cuCtxGetDevice())
    finally:
        driver.cuCtxPopCurrent()


class TensorMap:
    """A tiled TMA tensor map over a device tensor, for ``ac.cp_async_bulk_tensor_*``.

    ``TensorMap(array, box, *, swizzle=None, interleave=None,
    l2_promotion=None, oob_fill="zero", element_strides=None, dtype=None)``

    - ``array``: any object exposing ``__cuda_array_interface__`` (Numba
      device array, CuPy array, PyTorch CUDA tensor): rank 1..5, last axis
      contiguous, 16-byte aligned data, other strides multiples of 16 bytes.
    - ``box``: the tile one copy moves, in the array's axis order; each
      extent 1..256, the last one spanning a multiple of 16 bytes (and at
      most the swizzle span when swizzled); one box must fit in a block's
      shared memory (227 KB on sm_90).
    - ``swizzle``: None, 32, 64 or 128 (bytes): shared-memory layout where
      16-byte unit ``u`` of byte offset ``o`` is stored at unit
      ``u ^ ((o >> 7) & (swizzle // 16 - 1))`` (the pattern repeats every
      ``8 * swizzle`` bytes).
    - ``interleave`` (None, 16, 32; rank 3 or more: the NC/8HWC8-style
      layouts, whose box addressing CUDA does not document; measured on the
      H200, only rank-3 maps with 8 elements a chunk moved a plain box,
      rank-4/5 maps faulted: docs/tutorial/simulator.md), ``l2_promotion`` (None,
      64, 128, 256 bytes), ``oob_fill`` ("zero", or "nan" for float tensors: out-of-bounds
      elements of a box read as zero / NaN), ``element_strides`` (1..8 per
      axis, the last one 1), ``dtype="bfloat16"`` to describe 16-bit integer
      storage as bfloat16.

    Every argument is type-checked without conversion (``swizzle=32.0`` or
    ``box=(8, 4.0)`` is a :class:`TensorMapTypeError`) and every rule of
    ``cuTensorMapEncodeTiled`` is checked before the driver is called, each
    a ``ValueError`` naming the argument and the rule.

    Shared-memory tiles for this map must be ``tmap.smem_alignment``-byte
    aligned (128; 256/512/1024 for 32/64/128-byte swizzle): allocate them
    with ``cuda.shared.array(shape, dtype, alignment=tmap.smem_alignment)``
    (a literal in the kernel).  Checked mode traps when they are not.

    The map is built once on the host; pass the object itself to kernels
    (it is a 1-D uint64 device array there).  It keeps ``array`` alive.

    Example::

        A = cuda.to_device(np.random.rand(1000, 300).astype(np.float32))
        tmap = ac.TensorMap(A, (64, 32))     # 64 rows x 32 columns per copy

        @cuda.jit
        def k(tmap, out):
            tile = cuda.shared.array((64, 32), np.float32, alignment=128)
            bar = cuda.shared.array(1, np.uint64)
            if cuda.threadIdx.x == 0:
                ac.mbarrier_init(bar, 1)
                ac.fence_proxy_async("shared::cta")
                ac.mbarrier_arrive_expect_tx(bar, 64 * 32 * 4)
                ac.cp_async_bulk_tensor_load(tile, tmap, (64, 0), bar)  # rows 64..127
            cuda.syncthreads()
            ac.mbarrier_wait_parity(bar, 0)
            ...

        k[1, 128](tmap, out)
    """

    def __init__(self, array: Any, box: Sequence[int], *, swizzle: int | None = None,
                 interleave: int | None = None, l2_promotion: int | None = None,
                 oob_fill: str = "zero", element_strides: Sequence[int] | None = None,
                 dtype: str | None = None) -> None:
        interface, dtype = self._interface(array, dtype)
        self._build(array, interface, describe(interface, box, swizzle=swizzle,
                                               interleave=interleave, l2_promotion=l2_promotion,
                                               oob_fill=oob_fill, element_strides=element_strides,
                                               dtype=dtype))

    @classmethod
    def im2col(cls, array: Any, *, channels_per_pixel: int, pixels_per_column: int,
               lower_corner: Sequence[int], upper_corner: Sequence[int],
               element_strides: Sequence[int] | None = None, swizzle: int | None = None,
               l2_promotion: int | None = None, oob_fill: str = "zero",
               dtype: str | None = None) -> "TensorMap":
        """An im2col map over a channels-last tensor, for
        ``ac.cp_async_bulk_tensor_load_im2col`` (and its prefetch).

        - ``array``: rank 3, 4 or 5, ``(N, W, C)``, ``(N, H, W, C)`` or
          ``(N, D, H, W, C)``, with the tiled maps' layout rules.
        - ``lower_corner``, ``upper_corner``: one int per spatial axis
          (array order, e.g. ``(h, w)``): the bounding box of pixel
          positions is ``lower .. extent - 1 + upper`` along each axis (both
          included); ranges -32768..32767 (rank 3), -128..127 (rank 4),
          -16..15 (rank 5).  For a convolution:
          ``ac.conv_corners(kernel_size, padding, dilation)``.
        - ``channels_per_pixel`` (1..256, spanning a multiple of 16 bytes,
          at most the swizzle span) and ``pixels_per_column`` (1..1024): the
          shared tile of one load is ``(pixels_per_column,
          channels_per_pixel)``, ``box_bytes`` bytes.
        - ``element_strides``: per axis 1..8, the channels' 1: the
          traversal step along each spatial axis (the convolution stride).
        - ``swizzle``, ``l2_promotion``, ``oob_fill``, ``dtype``: as for
          the tiled map (no interleave).

        Validated in Python first (each rule a ``ValueError`` naming the
        argument), then encoded by ``cuTensorMapEncodeIm2col``.

        Example::

            x = cuda.to_device(np.random.rand(2, 8, 8, 16).astype(np.float32))  # NHWC
            lo, up = ac.conv_corners((3, 3), padding=1)
            tmap = ac.TensorMap.im2col(x, channels_per_pixel=16, pixels_per_column=32,
                                       lower_corner=lo, upper_corner=up)
            # in the kernel: tile (32, 16), offsets (r, s) of the filter tap
            # ac.cp_async_bulk_tensor_load_im2col(tile, tmap, (n, h - 1, w - 1, 0), (r, s), bar)
        """
        self = cls.__new__(cls)
        interface, dtype = self._interface(array, dtype)
        self._build(array, interface, describe_im2col(
            interface, channels_per_pixel=channels_per_pixel,
            pixels_per_column=pixels_per_column, lower_corner=lower_corner,
            upper_corner=upper_corner, element_strides=element_strides, swizzle=swizzle,
            l2_promotion=l2_promotion, oob_fill=oob_fill, dtype=dtype))
        return self

    @staticmethod
    def _interface(array: Any, dtype: str | None) -> tuple[dict, str | None]:
        """The array's interface and the dtype to describe it with."""
        interface = bf16_interface(array, "TensorMap", "`array`")
        if interface is not None:  # a torch bfloat16 tensor: its bits, described as bfloat16
            return interface, ("bfloat16" if dtype is None else dtype)
        interface = getattr(array, "__cuda_array_interface__", None)
        if interface is None:
            raise TypeError(
                f"TensorMap: `array` must expose __cuda_array_interface__ (a Numba device "
                f"array, CuPy array or PyTorch CUDA tensor), got {type(array).__name__}"
            )
        return interface, dtype

    def _build(self, array: Any, interface: dict, spec: TensorMapSpec) -> None:
        self.spec = spec
        self.array = array  # keeps the tensor alive as long as the map
        from numba import cuda

        ctx = cuda.current_context()  # the driver call needs an initialised context
        #: the device the map is encoded on (and its buffer lives on): ac.launch
        #: refuses it on another device
        self.device_id: int = int(ctx.device.id)
        owner = _pointer_device(interface["data"][0])
        if owner is not None and owner != self.device_id:
            _fail("array", f"lives on device {owner}, but the current device is "
                  f"{self.device_id}: build the map on the array's device "
                  f"(with cuda.gpus[{owner}]: ac.TensorMap(...))")
        most = int(ctx.device.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        span = math.prod(self.spec.box) * self.spec.itemsize
        if span > most:  # a device with less shared memory than sm_90
            _fail("box", f"={self.spec.box} spans {span} bytes, more than the {most} bytes of "
                  "shared memory a block can have on this device")
        words = encode(self.spec) + self.spec.metadata()
        self.device = cuda.to_device(np.array(words, dtype=np.uint64))

    @property
    def __cuda_array_interface__(self) -> dict:
        return self.device.__cuda_array_interface__

    @property
    def box(self) -> tuple[int, ...]:
        return self.spec.box

    @property
    def mode(self) -> str:
        """``"tile"`` or ``"im2col"``."""
        return getattr(self.spec, "mode", "tile")

    @property
    def box_bytes(self) -> int:
        """Bytes one tensor copy moves: the ``expect_tx`` count per copy."""
        return self.spec.box_bytes

    @property
    def smem_alignment(self) -> int:
        """Required alignment (bytes) of shared-memory tiles for this map."""
        return self.spec.smem_alignment

    def __repr__(self) -> str:
        s = self.spec
        if self.mode == "im2col":
            return (f"TensorMap.im2col({s.dtype}{list(s.shape)}, channels_per_pixel="
                    f"{s.channels_per_pixel}, pixels_per_column={s.pixels_per_column}, "
                    f"lower_corner={s.lower_corner}, upper_corner={s.upper_corner}, "
                    f"element_strides={s.element_strides}, swizzle={s.swizzle}, "
                    f"oob_fill={s.oob_fill!r})")
        return (f"TensorMap({s.dtype}{list(s.shape)}, box={s.box}, swizzle={s.swizzle}, "
                f"interleave={s.interleave}, oob_fill={s.oob_fill!r})")
