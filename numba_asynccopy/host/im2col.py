"""im2col tensor maps: the description behind ``TensorMap.im2col``.

An im2col map describes a channels-last activation tensor (``(N, W, C)``,
``(N, H, W, C)`` or ``(N, D, H, W, C)``: 1-D, 2-D and 3-D convolutions) so
that one TMA load gathers a *column block* of the implicit-GEMM matrix:
``pixels_per_column`` consecutive output pixels times ``channels_per_pixel``
channels, landing in shared memory as a dense ``(pixels_per_column,
channels_per_pixel)`` tile.

Geometry, per spatial axis ``a`` of extent ``n`` (array axis order, e.g.
``(H, W)`` for NHWC):

- the *bounding box* is the set of pixel positions ``lower_corner[a] ..
  n - 1 + upper_corner[a]`` (both ends included; equivalently the
  half-open range ``[lower_corner[a], n + upper_corner[a])``: the two
  descriptions CUDA's users give are the same set, and the H200 agrees:
  docs/im2col.md);
- a load at ``coords = (n0, [d0, [h0,]] w0, c0)`` starts at that pixel and
  walks the box in raster order (W fastest, then H, D, then the next image
  N), stepping ``element_strides[a]`` positions along each spatial axis and
  wrapping to ``lower_corner`` at the end of a row (the convolution's
  stride); past the last row of an image it goes on at image
  ``n + element_strides[0]`` (on the H200, with ``element_strides[0] = 2``
  the walk did not visit image ``n + 1``);
- the load's ``offsets`` (one per spatial axis, unsigned 16-bit: 65535 is
  far out of bounds, not -1, on the H200) are added to every pixel's
  position: the filter tap times the dilation;
- positions outside the tensor load ``oob_fill`` (zero: the padding);
  each pixel brings channels ``c0 .. c0 + channels_per_pixel - 1``.

For a convolution with filter extent ``R``, padding ``p`` and dilation
``d`` along an axis: ``lower_corner = -p`` and ``upper_corner = p - d * (R - 1)``
(:func:`conv_corners`); the box then holds exactly the output positions
times the stride.

Everything ``cuTensorMapEncodeIm2col`` documents is validated here in pure
Python first, each rule a ``ValueError`` naming the argument, as for the
tiled maps (:func:`numba_asynccopy.host.tensor_map.describe`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from . import _tensor_spec as _tm
from ._tensor_spec import _fail, _int_tuple, _interface_fields, _is_int, _option, _type_fail

#: value of the metadata word ``W_MODE`` (a tiled map's is 0)
MODE_TILE, MODE_IM2COL = 0, 1

#: the signed range of each corner value, by tensor rank (cuTensorMapEncodeIm2col)
CORNER_RANGE = {3: (-(1 << 15), (1 << 15) - 1), 4: (-(1 << 7), (1 << 7) - 1),
                5: (-(1 << 4), (1 << 4) - 1)}
MAX_CHANNELS_PER_PIXEL = 256
MAX_PIXELS_PER_COLUMN = 1024


@dataclass(frozen=True)
class Im2colSpec(_tm.TensorMapSpec):
    """A validated im2col description: the tiled fields (``box`` is the
    shared tile, ``(pixels_per_column, channels_per_pixel)``) and the
    im2col ones, corners in the array's axis order (spatial axes only)."""

    lower_corner: tuple[int, ...] = ()
    upper_corner: tuple[int, ...] = ()
    channels_per_pixel: int = 0
    pixels_per_column: int = 0
    mode: str = "im2col"

    def metadata(self) -> list[int]:
        words = super().metadata()
        words[_tm.W_MODE - 16] = MODE_IM2COL
        for a, (lo, hi) in enumerate(self.spatial_box()):  # checked mode's bounding-box rule
            words[_tm.W_IM2COL_BOX - 16 + a] = ((hi & 0xFFFFFFFF) << 32) | (lo & 0xFFFFFFFF)
        words[_tm.W_IM2COL_CORNERS - 16] = int(not self.zero_corners())  # the stores' rule
        return words

    def zero_corners(self) -> bool:
        """Every pixel-box corner zero: the maps im2col stores and reductions
        accept (measured on the H200)."""
        return not any(self.lower_corner) and not any(self.upper_corner)

    def spatial_box(self) -> tuple[tuple[int, int], ...]:
        """Per spatial axis (array order), the first and last position of
        the bounding box (both included)."""
        spatial = self.shape[1:-1]
        return tuple((lo, n - 1 + up) for n, lo, up in zip(spatial, self.lower_corner,
                                                            self.upper_corner))


def conv_corners(kernel_size: Sequence[int], padding: Sequence[int] | int = 0,
                 dilation: Sequence[int] | int = 1) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(lower_corner, upper_corner)`` of a convolution's im2col map.

    Per spatial axis: ``lower = -padding``, ``upper = padding - dilation *
    (kernel_size - 1)``: the bounding box is then the set of filter-origin
    positions of the output pixels.

    Example::

        >>> conv_corners((3, 3), padding=1)
        ((-1, -1), (-1, -1))
    """
    k = tuple(int(v) for v in kernel_size)
    p = (padding,) * len(k) if isinstance(padding, int) else tuple(padding)
    d = (dilation,) * len(k) if isinstance(dilation, int) else tuple(dilation)
    if not (len(p) == len(d) == len(k)):
        raise ValueError("conv_corners: `kernel_size`, `padding` and `dilation` need one entry "
                         "per spatial axis")
    return tuple(-a for a in p), tuple(a - b * (c - 1) for a, b, c in zip(p, d, k))


def _corner(field: str, value: Any, rank: int) -> tuple[int, ...]:
    n = rank - 2
    if not isinstance(value, (tuple, list)):
        raise _tm.TensorMapTypeError(
            f"TensorMap: `{field}` must be a sequence of {n} ints (one per spatial axis, "
            f"array order), got {value!r} ({type(value).__name__})")
    if len(value) != n:
        _fail(field, f"has {len(value)} entries; a rank-{rank} im2col map has {n} spatial "
              "axes, one entry per spatial axis")
    out = []
    lo, hi = CORNER_RANGE[rank]
    for i, v in enumerate(value):
        if not _is_int(v):
            raise _tm.TensorMapTypeError(
                f"TensorMap: `{field}` must hold ints, got {v!r} ({type(v).__name__})")
        if not lo <= v <= hi:
            _fail(field, f"[{i}]={int(v)} is outside {lo}..{hi} (the corner range of a rank-{rank} "
                  "im2col map)")
        out.append(int(v))
    return tuple(out)


def _count(field: str, value: Any, hi: int) -> int:
    if not _is_int(value):
        _type_fail(field, "an int", value)
    if not 1 <= value <= hi:
        _fail(field, f"={int(value)} is outside 1..{hi}")
    return int(value)


def describe_im2col(interface: dict, *, channels_per_pixel: int, pixels_per_column: int,
                    lower_corner: Sequence[int], upper_corner: Sequence[int],
                    element_strides: Sequence[int] | None = None, swizzle: int | None = None,
                    l2_promotion: int | None = None, oob_fill: str = "zero",
                    dtype: str | None = None,
                    max_box_bytes: int = _tm.MAX_BOX_BYTES) -> Im2colSpec:
    """Validate an im2col description (pure Python, no GPU).

    The tensor itself follows the tiled maps' rules (supported dtype, last
    axis contiguous, 16-byte aligned data and outer strides, extents
    1..2**32) and has rank 3..5; then every rule of
    ``cuTensorMapEncodeIm2col``, and this package's own: the channels'
    element stride is 1 (TMA ignores it), the tile fits in shared memory.

    Example::

        >>> spec = describe_im2col(
        ...     {"shape": (2, 8, 8, 16), "typestr": "<f4", "data": (1 << 20, False),
        ...      "strides": None, "version": 3},
        ...     channels_per_pixel=16, pixels_per_column=32,
        ...     lower_corner=(-1, -1), upper_corner=(-1, -1))
        >>> spec.box, spec.box_bytes, spec.spatial_box()
        ((32, 16), 2048, ((-1, 6), (-1, 6)))
    """
    shape, typestr, address, strides = _interface_fields(interface)
    if interface.get("mask") is not None:
        _fail("array", "has a mask; TMA cannot skip masked elements")
    rank = len(shape)
    if not 3 <= rank <= 5:
        _fail("array", f"has {rank} axes; an im2col map describes 3 to 5: (N, W, C), "
              "(N, H, W, C) or (N, D, H, W, C), channels last")
    name, isz = _tm._dtype_name(typestr, dtype)
    _option("swizzle", swizzle, _tm.SWIZZLE_CODES, "use None, 32, 64 or 128 (bytes)")
    _option("l2_promotion", l2_promotion, _tm.L2_CODES, "use None, 64, 128 or 256 (bytes)")
    _tm._check_oob_fill(oob_fill, name)

    strides = _tm._check_layout(address, shape, strides, isz)

    lower = _corner("lower_corner", lower_corner, rank)
    upper = _corner("upper_corner", upper_corner, rank)
    for a, (n, lo, up) in enumerate(zip(shape[1:-1], lower, upper)):
        if n + up - lo < 1:  # "the bounding box ... must have non-zero area"
            _fail("upper_corner", f"[{a}]={up} with lower_corner[{a}]={lo} leaves spatial axis {a} "
                  f"(extent {n}) an empty bounding box {lo}..{n - 1 + up}; it must hold at least "
                  "one position (extent + upper - lower >= 1)")
    cpp = _count("channels_per_pixel", channels_per_pixel, MAX_CHANNELS_PER_PIXEL)
    ppc = _count("pixels_per_column", pixels_per_column, MAX_PIXELS_PER_COLUMN)
    inner = cpp * isz
    if inner % 16:
        _fail("channels_per_pixel", f"={cpp} spans {inner} bytes; a pixel's channels must span a "
              "multiple of 16 bytes")
    if swizzle is not None and inner > swizzle:
        _fail("channels_per_pixel", f"={cpp} spans {inner} bytes, more than the {swizzle}-byte "
              f"swizzle span (swizzle={swizzle} allows at most {swizzle // isz} channels)")

    es = (1,) * rank if element_strides is None else _int_tuple("element_strides",
                                                                 element_strides, rank)
    for axis, e in enumerate(es):
        if not 1 <= e <= 8:
            _fail("element_strides", f"[{axis}]={e} is outside 1..8")
    if es[-1] != 1:
        _fail("element_strides", f"[-1]={es[-1]}: TMA ignores the channels' element stride, "
              "so it must be 1")

    box = (ppc, cpp)
    box_bytes = ppc * cpp * isz
    if box_bytes > max_box_bytes:
        _fail("pixels_per_column", f"={ppc} x channels_per_pixel={cpp} x {isz} bytes is "
              f"{box_bytes} bytes, more than the {max_box_bytes} bytes of shared memory a "
              "block can have")
    return Im2colSpec(
        dtype=name, dtype_code=_tm.DTYPE_CODES[name], itemsize=isz, rank=rank, address=address,
        shape=shape, box=box, element_strides=es,
        global_dim=tuple(reversed(shape)), global_strides=tuple(reversed(strides[:-1])),
        box_dim=(cpp, ppc), element_strides_dim=tuple(reversed(es)),
        swizzle=swizzle, interleave=None, l2_promotion=l2_promotion, oob_fill=oob_fill,
        box_bytes=box_bytes, smem_alignment=128 if swizzle is None else 8 * swizzle,
        lower_corner=lower, upper_corner=upper, channels_per_pixel=cpp, pixels_per_column=ppc,
    )


def driver_args(spec: Im2colSpec) -> tuple:
    """The positional arguments of ``cuda.bindings.driver.cuTensorMapEncodeIm2col``
    (corners innermost first, as the driver lists W, H, D)."""
    from cuda.bindings import driver

    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    return (
        driver.CUtensorMapDataType(spec.dtype_code),
        spec.rank,
        spec.address,
        [u64(d) for d in spec.global_dim],
        [u64(s) for s in spec.global_strides],
        list(reversed(spec.lower_corner)),
        list(reversed(spec.upper_corner)),
        spec.channels_per_pixel,
        spec.pixels_per_column,
        [u32(e) for e in spec.element_strides_dim],
        driver.CUtensorMapInterleave(0),
        *_tm._driver_modes(driver, spec),
    )


def numpy_im2col(x: np.ndarray, coords: Sequence[int], offsets: Sequence[int],
                 spec: Im2colSpec, fill: Any = None) -> np.ndarray:
    """What one im2col load of ``spec`` brings, computed with numpy: the
    ``(pixels_per_column, channels_per_pixel)`` tile (the reference the
    simulator and the GPU tests check against; no swizzle applied).

    ``coords`` in array order ``(n, [d, [h,]] w, c)``; ``offsets`` one per
    spatial axis.  Raises ``ValueError`` when the first pixel lies outside
    the bounding box (PTX leaves that undefined; on the H200 such a load
    failed with an illegal instruction).  ``fill``: the value of
    out-of-bounds elements (default: 0, or NaN for ``oob_fill="nan"``).
    """
    x = np.asarray(x)
    nsp = spec.rank - 2
    coords = [int(c) for c in coords]
    offsets = [int(o) for o in offsets]
    n0, pos, c0 = coords[0], coords[1:-1], coords[-1]
    box = spec.spatial_box()
    for a in range(nsp):
        lo, hi = box[a]
        if not lo <= pos[a] <= hi:
            raise ValueError(f"im2col: coords[{a + 1}]={pos[a]} is outside the bounding box "
                             f"{lo}..{hi} of spatial axis {a}")
    if fill is None:
        fill = np.nan if spec.oob_fill == "nan" else 0
    out = np.full((spec.pixels_per_column, spec.channels_per_pixel), fill, dtype=x.dtype)
    ch = np.arange(c0, c0 + spec.channels_per_pixel)
    ch_ok = (ch >= 0) & (ch < x.shape[-1])
    for i, at in _walk(spec, n0, pos, offsets, x.shape):
        out[i, ch_ok] = x[at][ch[ch_ok]]
    return out


def _walk(spec: Im2colSpec, n0: int, pos: Sequence[int], offsets: Sequence[int],
          shape: Sequence[int]):
    """``(i, (n, [d, [h,]] w))`` for each pixel ``i`` of a column block that
    lies inside a tensor of ``shape``: the traversal of the bounding box from
    ``(n0, pos)``, W fastest, each position moved by ``offsets``."""
    nsp = spec.rank - 2
    box = spec.spatial_box()
    steps = spec.element_strides[1:-1]
    n, p = n0, list(pos)
    for i in range(spec.pixels_per_column):
        at = [p[a] + offsets[a] for a in range(nsp)]
        if 0 <= n < shape[0] and all(0 <= at[a] < shape[1 + a] for a in range(nsp)):
            yield i, (n, *at)
        # the next pixel: W fastest, wrapping to the lower corner, then H, D, N
        for a in range(nsp - 1, -1, -1):
            p[a] += steps[a]
            if p[a] <= box[a][1]:
                break
            p[a] = box[a][0]
        else:
            n += spec.element_strides[0]  # the H200 skipped image n + 1 with a stride of 2


def numpy_im2col_store(x: np.ndarray, tile: np.ndarray, coords: Sequence[int], spec: Im2colSpec,
                       combine: Any = None) -> None:
    """What an im2col store (``.im2col_no_offs``) of ``tile`` does to ``x``,
    in place, with numpy: pixel ``i`` of the tile goes to the ``i``-th
    position of the traversal :func:`numpy_im2col` reads (no offsets);
    pixels and channels outside ``x`` are not written.  ``combine(old,
    new)``: a reduction's operation (``None``: a plain store)."""
    coords = [int(c) for c in coords]
    nsp = spec.rank - 2
    n0, pos, c0 = coords[0], coords[1:-1], coords[-1]
    for a, (lo, hi) in enumerate(spec.spatial_box()):
        if not lo <= pos[a] <= hi:
            raise ValueError(f"im2col: coords[{a + 1}]={pos[a]} is outside the bounding box "
                             f"{lo}..{hi} of spatial axis {a}")
    ch = np.arange(c0, c0 + spec.channels_per_pixel)
    ch_ok = (ch >= 0) & (ch < x.shape[-1])
    for i, at in _walk(spec, n0, pos, [0] * nsp, x.shape):
        new = tile[i, ch_ok]
        x[at + (ch[ch_ok],)] = new if combine is None else combine(x[at + (ch[ch_ok],)], new)
