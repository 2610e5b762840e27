"""The description of a TMA tensor map, validated in pure Python: what
``TensorMap`` and ``TensorMap.im2col`` build on, below both.

Everything ``cuTensorMapEncodeTiled`` documents is checked here first
(:func:`describe`), so a bad map is a ``ValueError`` naming the field and
the rule rather than a bare ``CUDA_ERROR_INVALID_VALUE``; the shared
helpers (``_fail``, ``_int_tuple``...) serve the im2col description too.
It also fixes the layout of the map's device buffer (the ``W_*`` words),
which the device lowering and the simulator read.  Users import these
names from :mod:`numba_asynccopy.host.tensor_map`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NoReturn, Sequence

import numpy as np

from .. import _layout

MAP_WORDS = 16  # the 128-byte CUtensorMap
BUFFER_WORDS = 32
MAGIC = 0x414D54434E594341  # "ACYNCTMA" little-endian: marks a TensorMap buffer
W_MAGIC, W_RANK, W_ITEMSIZE, W_SMEM_ALIGN, W_BOX_BYTES, W_DTYPE, W_BOX = 16, 17, 18, 19, 20, 21, 22
W_MODE = 27  # 0: tiled, 1: im2col (after the five box words)
W_IM2COL_BOX = 28  # im2col: per spatial axis, (last << 32) | (first & 0xFFFFFFFF) of the box
W_IM2COL_CORNERS = 31  # im2col: 1 when a pixel-box corner is not zero (no stores through it)

# CUtensorMapDataType values (cuda.h ABI).
DTYPE_CODES = {
    "uint8": 0, "int8": 0, "bool": 0,  # TMA has no signed 8-bit type: a bit copy
    "uint16": 1, "int16": 1,
    "uint32": 2, "int32": 3,
    "uint64": 4, "int64": 5,
    "float16": 6, "float32": 7, "float64": 8, "bfloat16": 9,
}
FLOAT_CODES = (6, 7, 8, 9)
SWIZZLE_CODES = {None: 0, 32: 1, 64: 2, 128: 3}
INTERLEAVE_CODES = {None: 0, 16: 1, 32: 2}
L2_CODES = {None: 0, 64: 1, 128: 2, 256: 3}
OOB_CODES = {"zero": 0, "nan": 1}  # "nan": CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA


@dataclass(frozen=True)
class TensorMapSpec:
    """The validated description, in both axis orders."""

    dtype: str
    dtype_code: int
    itemsize: int
    rank: int
    address: int
    shape: tuple[int, ...]  # numpy order
    box: tuple[int, ...]  # numpy order
    element_strides: tuple[int, ...]  # numpy order
    global_dim: tuple[int, ...]  # driver order (innermost first)
    global_strides: tuple[int, ...]  # driver order, bytes, rank - 1 of them
    box_dim: tuple[int, ...]  # driver order
    element_strides_dim: tuple[int, ...]  # driver order
    swizzle: int | None
    interleave: int | None
    l2_promotion: int | None
    oob_fill: str
    box_bytes: int  # bytes one copy moves (per CTA)
    smem_alignment: int  # required alignment of the shared tile

    def metadata(self) -> list[int]:
        """Words 16..31 of the device buffer."""
        words = [0] * (BUFFER_WORDS - MAP_WORDS)
        words[W_MAGIC - 16] = MAGIC
        words[W_RANK - 16] = self.rank
        words[W_ITEMSIZE - 16] = self.itemsize
        words[W_SMEM_ALIGN - 16] = self.smem_alignment
        words[W_BOX_BYTES - 16] = self.box_bytes
        words[W_DTYPE - 16] = self.dtype_code
        for i, b in enumerate(self.box):
            words[W_BOX - 16 + i] = b
        return words


#: The most shared memory one block can have on sm_90/sm_100 (227 KB, the
#: opt-in limit): a box must fit in it.  ``TensorMap`` uses the device's value.
MAX_BOX_BYTES = 232448


class TensorMapTypeError(TypeError, ValueError):
    """A ``TensorMap`` argument of the wrong type (``swizzle=32.0``,
    ``box=8``): a ``TypeError``, and a ``ValueError`` like every other
    ``TensorMap`` validation error, so ``except ValueError`` catches all.

    Example::

        try:
            ac.TensorMap(a, (64, 32), swizzle=32.0)
        except ac.TensorMapTypeError as e:
            print(e)
    """

    # its documented home (where users import it, pickles find it, the stub names it)
    __module__ = "numba_asynccopy.host.tensor_map"


def _fail(field: str, rule: str) -> NoReturn:
    sep = "" if rule[:1] in ("=", "[") else " "
    raise ValueError(f"TensorMap: `{field}`{sep}{rule}")


def _type_fail(field: str, expected: str, value: Any) -> NoReturn:
    raise TensorMapTypeError(f"TensorMap: `{field}` must be {expected}, got {value!r} ({type(value).__name__})")


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _int_tuple(field: str, value: Any, rank: int) -> tuple[int, ...]:
    # a tuple or list: a string, dict, set or array is not a per-axis description
    if not isinstance(value, (tuple, list)):
        raise TensorMapTypeError(f"TensorMap: `{field}` must be a sequence of {rank} ints (one per array "
                        f"axis), got {value!r} ({type(value).__name__})")
    vals = tuple(value)
    if len(vals) != rank:
        _fail(field, f"has {len(vals)} entries; the array has {rank} axes, one entry per axis")
    out = []
    for v in vals:
        if not _is_int(v):
            raise TensorMapTypeError(f"TensorMap: `{field}` must hold ints, got {v!r} ({type(v).__name__})")
        out.append(int(v))
    return tuple(out)


def _option(field: str, value: Any, allowed: dict, rule: str) -> None:
    """``swizzle``/``interleave``/``l2_promotion``: None or one of the ints
    in ``allowed`` (``32.0 == 32``, ``True == 1``: the type is checked first)."""
    if value is not None and not _is_int(value):
        _type_fail(field, "None or an int (bytes)", value)
    if value not in allowed:
        _fail(field, f"={value!r} is not supported; {rule}")


def _interface_fields(interface: Any) -> tuple[tuple[int, ...], str, int, tuple[int, ...] | None]:
    """(shape, typestr, address, strides) of a ``__cuda_array_interface__``,
    each of the documented type."""
    if not isinstance(interface, dict) or "shape" not in interface or "data" not in interface:
        raise TensorMapTypeError("TensorMap: `array` must expose __cuda_array_interface__ "
                        "(a Numba device array, CuPy array or PyTorch CUDA tensor)")
    what = "`array`'s __cuda_array_interface__"
    shape, typestr, data = interface["shape"], interface.get("typestr"), interface["data"]
    strides = interface.get("strides")
    if not isinstance(shape, tuple) or not all(_is_int(n) for n in shape):
        raise TensorMapTypeError(f"TensorMap: {what} has shape {shape!r}; it must be a tuple of ints")
    if not isinstance(typestr, str):
        raise TensorMapTypeError(f"TensorMap: {what} has typestr {typestr!r}; it must be a str")
    if not isinstance(data, tuple) or len(data) != 2 or not _is_int(data[0]):
        raise TensorMapTypeError(f"TensorMap: {what} has data {data!r}; it must be (address, read_only)")
    if strides is not None and (not isinstance(strides, tuple) or len(strides) != len(shape)
                                or not all(_is_int(s) for s in strides)):
        raise TensorMapTypeError(f"TensorMap: {what} has strides {strides!r}; they must be None or a "
                        "tuple of ints, one per axis")
    return (tuple(int(n) for n in shape), typestr, int(data[0]),
            None if strides is None else tuple(int(s) for s in strides))


def _dtype_name(typestr: str, override: str | None) -> tuple[str, int]:
    if override is not None and not isinstance(override, str):
        _type_fail("dtype", "None or 'bfloat16'", override)
    try:
        dt = np.dtype(typestr)
    except TypeError:
        _fail("array", f"has typestr {typestr!r}, which is not a numpy type string")
    if override is not None:
        if override != "bfloat16":
            _fail("dtype", f"={override!r} is not supported; only 'bfloat16' (for 16-bit "
                  "integer storage holding bfloat16 bits) may override the array's dtype")
        if dt.itemsize != 2:
            _fail("dtype", f"='bfloat16' needs 2-byte elements; the array holds {dt} ({dt.itemsize} bytes)")
        return "bfloat16", 2
    if dt.byteorder == ">":
        _fail("array", f"is big-endian ({typestr}); TMA moves little-endian elements")
    name = dt.name
    if name not in DTYPE_CODES:
        _fail("array", f"has dtype {name}, which TMA cannot describe; supported: "
              + ", ".join(sorted(DTYPE_CODES)))
    return name, dt.itemsize


def _check_oob_fill(oob_fill: Any, name: str) -> None:
    """``oob_fill`` is 'zero' or 'nan', and 'nan' only for a floating-point dtype ``name``."""
    if not isinstance(oob_fill, str):
        _type_fail("oob_fill", "'zero' or 'nan'", oob_fill)
    if oob_fill not in OOB_CODES:
        _fail("oob_fill", f"={oob_fill!r} is not supported; use 'zero' or 'nan'")
    if oob_fill == "nan" and DTYPE_CODES[name] not in FLOAT_CODES:
        _fail("oob_fill", f"='nan' needs a floating-point tensor; this one holds {name}")


def _check_layout(address: int, shape: tuple[int, ...], strides: tuple[int, ...] | None, isz: int,
                  align: int = 16) -> tuple[int, ...]:
    """The layout TMA holds a global tensor to: the data address ``align``-byte
    aligned, every extent in 1..2**32, the last axis contiguous and the other
    strides positive multiples of ``align`` below 2**40.  Returns the byte
    strides (C-contiguous ones where ``strides`` is None)."""
    rank = len(shape)
    if address % align:
        _fail("array", f"data address 0x{address:x} is not {align}-byte aligned")
    for axis, n in enumerate(shape):
        if not 1 <= n <= 1 << 32:
            _fail("array", f"axis {axis} has extent {n}; each extent must be in 1..2**32")

    if strides is None:  # C-contiguous
        c_strides = [isz] * rank
        for i in range(rank - 2, -1, -1):
            c_strides[i] = c_strides[i + 1] * shape[i + 1]
        strides = tuple(c_strides)
    if strides[-1] != isz and shape[-1] > 1:
        _fail("array", f"last axis has stride {strides[-1]} bytes; TMA needs it contiguous "
              f"(stride = itemsize {isz})")
    for axis in range(rank - 1):
        s = strides[axis]
        if s <= 0 or s % align or s >= 1 << 40:
            _fail("array", f"axis {axis} has stride {s} bytes; strides of all but the last axis "
                  f"must be positive multiples of {align} below 2**40")
    return strides


def describe(interface: dict, box: Sequence[int], *, swizzle: int | None = None,
             interleave: int | None = None, l2_promotion: int | None = None,
             oob_fill: str = "zero", element_strides: Sequence[int] | None = None,
             dtype: str | None = None, max_box_bytes: int = MAX_BOX_BYTES) -> TensorMapSpec:
    """Validate a ``__cuda_array_interface__`` dict and the tiling options.

    Pure Python (no GPU needed): every rule of ``cuTensorMapEncodeTiled``
    and this package's own (last axis contiguous, a supported dtype, the
    box fits ``max_box_bytes`` of shared memory).  A value of the wrong
    type (``swizzle=32.0``, ``box=(8, 4.0)``, ``oob_fill=0``) is a
    :class:`TensorMapTypeError` (a ``TypeError`` and a ``ValueError``), a
    rule broken a ``ValueError``; both name the argument and the rule, and
    nothing else is raised.

    Example::

        >>> spec = describe({"shape": (64, 64), "typestr": "<f4", "data": (1 << 20, False),
        ...                  "strides": None, "version": 3}, (8, 32), swizzle=128)
        >>> spec.box_dim, spec.smem_alignment
        ((32, 8), 1024)
    """
    shape, typestr, address, strides = _interface_fields(interface)
    if interface.get("mask") is not None:
        _fail("array", "has a mask; TMA cannot skip masked elements")
    rank = len(shape)
    if not 1 <= rank <= 5:
        _fail("array", f"has {rank} axes; a tensor map describes 1 to 5")
    name, isz = _dtype_name(typestr, dtype)

    _option("interleave", interleave, INTERLEAVE_CODES, "use None, 16 or 32 (bytes)")
    _option("swizzle", swizzle, SWIZZLE_CODES, "use None, 32, 64 or 128 (bytes)")
    _option("l2_promotion", l2_promotion, L2_CODES, "use None, 64, 128 or 256 (bytes)")
    _check_oob_fill(oob_fill, name)
    if interleave is not None and rank < 3:
        _fail("interleave", f"={interleave} needs a tensor of rank >= 3; this one has rank {rank}")

    strides = _check_layout(address, shape, strides, isz, 32 if interleave == 32 else 16)

    box_t = _int_tuple("box", box, rank)
    for axis, b in enumerate(box_t):
        if not 1 <= b <= 256:
            _fail("box", f"[{axis}]={b} is outside 1..256")
    inner = box_t[-1] * isz
    if inner % 16:  # interleaved maps too: the driver refuses an 8- or 12-byte inner box
        _fail("box", f"[-1]={box_t[-1]} spans {inner} bytes; the innermost box extent must "
              "span a multiple of 16 bytes")
    if interleave is None and swizzle is not None and inner > swizzle:
        _fail("box", f"[-1]={box_t[-1]} spans {inner} bytes, more than the {swizzle}-byte "
              f"swizzle span (swizzle={swizzle} requires at most {swizzle // isz} elements)")

    if element_strides is None:
        es = (1,) * rank
    else:
        es = _int_tuple("element_strides", element_strides, rank)
    for axis, e in enumerate(es):
        if not 1 <= e <= 8:
            _fail("element_strides", f"[{axis}]={e} is outside 1..8")
    if interleave is None and es[-1] != 1:
        _fail("element_strides", f"[-1]={es[-1]}: TMA ignores the innermost element stride "
              "without interleave, so it must be 1")

    box_bytes = _layout.box_bytes(box_t, es, isz)
    span = math.prod(box_t) * isz
    if span > max_box_bytes:
        # the whole box, element strides or not (as NVIDIA's own host-side TMA
        # helper checks it), must fit in one block's shared memory
        _fail("box", f"={box_t} spans {span} bytes, more than the {max_box_bytes} bytes of "
              "shared memory a block can have")
    smem_alignment = _layout.swizzle(swizzle).base_alignment  # the swizzle pattern's repeat

    return TensorMapSpec(
        dtype=name, dtype_code=DTYPE_CODES[name], itemsize=isz, rank=rank, address=address,
        shape=shape, box=box_t, element_strides=es,
        global_dim=tuple(reversed(shape)),
        global_strides=tuple(reversed(strides[:-1])),
        box_dim=tuple(reversed(box_t)),
        element_strides_dim=tuple(reversed(es)),
        swizzle=swizzle, interleave=interleave, l2_promotion=l2_promotion, oob_fill=oob_fill,
        box_bytes=box_bytes, smem_alignment=smem_alignment,
    )


def driver_args(spec: TensorMapSpec) -> tuple:
    """The positional arguments of ``cuda.bindings.driver.cuTensorMapEncodeTiled``."""
    from cuda.bindings import driver

    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    return (
        driver.CUtensorMapDataType(spec.dtype_code),
        spec.rank,
        spec.address,
        [u64(d) for d in spec.global_dim],
        # rank 1 has no strides, but an empty list becomes a NULL pointer: pass one
        # unused entry (the driver reads rank - 1 of them)
        [u64(s) for s in spec.global_strides] or [u64(0)],
        [u32(b) for b in spec.box_dim],
        [u32(e) for e in spec.element_strides_dim],
        driver.CUtensorMapInterleave(INTERLEAVE_CODES[spec.interleave]),
        *_driver_modes(driver, spec),
    )


def _driver_modes(driver, spec: TensorMapSpec) -> tuple:
    """The swizzle, L2 promotion and OOB fill as the driver's enums: the last
    three arguments of both encoders (tiled and im2col)."""
    return (driver.CUtensorMapSwizzle(SWIZZLE_CODES[spec.swizzle]),
            driver.CUtensorMapL2promotion(L2_CODES[spec.l2_promotion]),
            driver.CUtensorMapFloatOOBfill(OOB_CODES[spec.oob_fill]))
