"""Tensor (TMA) copies in the simulator, and a driver-free ``TensorMap``.

:class:`TensorMap` validates its arguments with the same pure-Python
:func:`~numba_asynccopy.host.tensor_map.describe` (same ``ValueError``
texts) and builds the same 32-word buffer with the same metadata words
(16..31); words 0..15, the driver's opaque map on the GPU, hold a simulator
marker instead.  Kernels receive the buffer, so checked mode's map rules
(rank, element size, box bytes, alignment, data type, magic word) apply
unchanged, then the copies read and write the described tensor directly.

Loads zero-fill (or NaN-fill, ``oob_fill="nan"``) the elements of the box
outside the tensor, lay the box out in shared memory under the map's
swizzle (16-byte unit at byte offset ``o`` stored at ``o ^ (((o >> 7) &
(swizzle // 16 - 1)) << 4)``) and complete ``box_bytes`` transaction bytes
on the barrier, landing under the schedule like
:func:`~numba_asynccopy.cp_async_bulk_g2s`.  Stores and reductions write
only the in-bounds part of the box and complete in bulk groups like
:func:`~numba_asynccopy.cp_async_bulk_s2g`.  A multicast load
(``multicast_mask``) lands in every CTA of the mask.  Interleaved maps
raise :class:`~numba_asynccopy.sim.SimulatorError`.
"""

from __future__ import annotations

import weakref
from typing import Any, Sequence

import numpy as np

from .. import _layout, _rules
from .. import tensor as _dev
from ..host import im2col as _im2col
from ..host import tensor_map as _tm
from . import _runtime as rt
from . import cp_async as _cp
from ._mirror import mirrors
from .bulk import BulkOp, _check_mbar, _check_space, _combine, _issue
from .cluster import _multicast


#: word 0 of a simulator map buffer (words 0..15 are the driver's map on the GPU)
SIM_MARK = 0x50414D5453494D41  # "AMISTMAP"
_maps: "weakref.WeakValueDictionary[int, TensorMap]" = weakref.WeakValueDictionary()


class TensorMap(_tm.TensorMap):
    """Simulator version of :class:`numba_asynccopy.TensorMap`: same
    arguments, same validation, no CUDA driver.  ``array`` is a simulator
    device array (``cuda.to_device``, ``cuda.device_array``, or a view of one).

    Example::

        A = cuda.to_device(np.random.rand(100, 64).astype(np.float32))
        tmap = ac.TensorMap(A, (16, 32))
        kernel[1, 128](tmap, out)
    """

    __mirrors__ = _tm.TensorMap  # bound in its place (``sim.bind``)

    def __init__(self, array: Any, box: Sequence[int], *, swizzle: int | None = None,
                 interleave: int | None = None, l2_promotion: int | None = None,
                 oob_fill: str = "zero", element_strides: Sequence[int] | None = None,
                 dtype: str | None = None) -> None:
        tensor, interface = self._sim_interface(array)
        self._sim_build(array, tensor, _tm.describe(
            interface, box, swizzle=swizzle, interleave=interleave, l2_promotion=l2_promotion,
            oob_fill=oob_fill, element_strides=element_strides, dtype=dtype))

    @classmethod
    def im2col(cls, array: Any, *, channels_per_pixel: int, pixels_per_column: int,
               lower_corner: Sequence[int], upper_corner: Sequence[int],
               element_strides: Sequence[int] | None = None, swizzle: int | None = None,
               l2_promotion: int | None = None, oob_fill: str = "zero",
               dtype: str | None = None) -> "TensorMap":
        """Simulator version of :meth:`numba_asynccopy.TensorMap.im2col`:
        same arguments and validation, no driver."""
        self = cls.__new__(cls)
        tensor, interface = self._sim_interface(array)
        self._sim_build(array, tensor, _im2col.describe_im2col(
            interface, channels_per_pixel=channels_per_pixel,
            pixels_per_column=pixels_per_column, lower_corner=lower_corner,
            upper_corner=upper_corner, element_strides=element_strides, swizzle=swizzle,
            l2_promotion=l2_promotion, oob_fill=oob_fill, dtype=dtype))
        return self

    @staticmethod
    def _sim_interface(array: Any) -> tuple[np.ndarray, dict]:
        tensor = rt.unwrap(array)
        if isinstance(array, np.ndarray) or not isinstance(tensor, np.ndarray):
            raise TypeError(
                f"TensorMap: `array` must expose __cuda_array_interface__ (a Numba device "
                f"array, CuPy array or PyTorch CUDA tensor), got {type(array).__name__} "
                "(in the CUDA simulator: a simulator device array from cuda.to_device)")
        interface = dict(tensor.__array_interface__)
        interface.pop("mask", None)
        return tensor, interface

    def _sim_build(self, array: Any, tensor: np.ndarray, spec: _tm.TensorMapSpec) -> None:
        self.spec = spec
        self.array = array  # keeps the tensor alive as long as the map
        self.tensor = tensor
        words = [0] * _tm.MAP_WORDS + self.spec.metadata()
        words[0] = SIM_MARK
        from numba import cuda

        self.device = cuda.to_device(np.array(words, dtype=np.uint64))
        self._ac_sim_buffer = rt.unwrap(self.device)
        _maps[rt.address(self._ac_sim_buffer)] = self

    @property
    def __cuda_array_interface__(self) -> dict:
        raise AttributeError("a simulator TensorMap has no device memory")


# --- run-time rules (checked mode's, same text) ------------------------------

def _check_map(api: str, m: np.ndarray, rank: int, tile: np.ndarray | None, name: str,
               dtype_code: int | None = None, mode: int = 0) -> TensorMap:
    """``check_map_and_tile``, then the map behind the buffer (no tile: a prefetch)."""
    if m.shape[0] < _tm.BUFFER_WORDS:
        raise rt.violation(api, _rules.tensor_map_words(words=m.shape[0], need=_tm.BUFFER_WORDS))
    w = [int(x) for x in m[:_tm.BUFFER_WORDS]]
    if w[_tm.W_MAGIC] != _tm.MAGIC:
        raise rt.violation(api, _rules.tensor_map_magic())
    if w[_tm.W_RANK] != rank:
        raise rt.violation(api, _rules.tensor_rank(rank=rank, map_rank=w[_tm.W_RANK]))
    if w[_tm.W_MODE] != mode:
        raise rt.violation(api, _rules.tensor_map_mode(mode=w[_tm.W_MODE], need=mode))
    if tile is None:
        return _map_behind(api, m, w)
    if w[_tm.W_ITEMSIZE] != tile.itemsize:
        raise rt.violation(api, _rules.tensor_itemsize(
            name=name, itemsize=tile.itemsize, map_itemsize=w[_tm.W_ITEMSIZE]))
    if w[_tm.W_BOX_BYTES] != tile.nbytes:
        raise rt.violation(api, _rules.tensor_box_bytes(
            name=name, nbytes=tile.nbytes, box=w[_tm.W_BOX_BYTES]))
    addr, align = rt.address(tile), w[_tm.W_SMEM_ALIGN]
    if align == 0 or addr % align:
        raise rt.violation(api, _rules.tensor_smem_align(name=name, addr=f"0x{addr:x}", align=align))
    if dtype_code is not None and w[_tm.W_DTYPE] != dtype_code:
        raise rt.violation(api, _rules.tensor_dtype(
            name=name, code=dtype_code, map_code=w[_tm.W_DTYPE]))
    expect = tile.itemsize
    for axis in range(tile.ndim - 1, -1, -1):
        if tile.strides[axis] != expect and tile.shape[axis] > 1:
            raise rt.violation(api, _rules.tensor_not_dense(
                name=name, axis=axis, stride=tile.strides[axis], expect=expect))
        expect *= tile.shape[axis]
    return _map_behind(api, m, w)


def _map_behind(api: str, m: np.ndarray, w: list[int]) -> TensorMap:
    tmap = _maps.get(rt.address(m))
    if tmap is None or w[0] != SIM_MARK:
        raise rt.violation(api, "`tensor_map` is not the buffer of a TensorMap built in "
                           "this simulator process")
    if tmap.spec.interleave is not None:
        raise rt.SimulatorError(
            f"{rt.SIM_PREFIX}{api}: interleaved tensor maps (interleave="
            f"{tmap.spec.interleave}) are not simulated (their addressing is undocumented "
            "and, measured on the H200, not a plain map's box: see docs/tutorial/simulator.md, "
            "\"What does not run there\"); run this kernel on a GPU")
    return tmap


def _coords(api: str, coords, m: np.ndarray, *, store: bool) -> list[int]:
    cs = [int(np.int32(c)) for c in coords]  # signed 32-bit, as the lowering casts
    isz = int(m[_tm.W_ITEMSIZE])
    if (cs[-1] * isz) & 15:
        raise rt.violation(api, _rules.tensor_inner_coord(coord=cs[-1], itemsize=isz))
    if store:
        for axis, c in enumerate(cs):
            if c < 0:
                raise rt.violation(api, _rules.tensor_negative_coord(axis=axis, coord=c))
    return cs


# --- box geometry -----------------------------------------------------------------

def _box_index(spec: _tm.TensorMapSpec, cs: list[int]):
    """(tensor index, box index) for np.ix_ over the in-bounds elements, or None."""
    t_idx, b_idx = [], []
    for c, b, e, n in zip(cs, spec.box, spec.element_strides, spec.shape):
        idx = c + e * np.arange(-(-b // e))
        ok = (idx >= 0) & (idx < n)
        if not ok.any():
            return None
        t_idx.append(idx[ok])
        b_idx.append(np.nonzero(ok)[0])
    return np.ix_(*t_idx), np.ix_(*b_idx)


def _swizzle_bytes(dense: np.ndarray, swizzle: int | None) -> np.ndarray:
    return _layout.swizzle_bytes(dense, _layout.swizzle(swizzle))


def _unswizzle_bytes(raw: np.ndarray, swizzle: int | None) -> np.ndarray:
    return _layout.unswizzle_bytes(raw, _layout.swizzle(swizzle))


def _fill_value(spec: _tm.TensorMapSpec, dtype: np.dtype):
    if spec.oob_fill != "nan":
        return np.zeros((), dtype)
    bits = {2: 0x7FFF, 4: 0x7FFFFFFF, 8: 0x7FFFFFFFFFFFFFFF}[dtype.itemsize]  # canonical NaN
    return np.array(bits, f"u{dtype.itemsize}").view(dtype)


def _tile_bytes(tile: np.ndarray) -> np.ndarray:
    return tile.reshape(-1).view(np.uint8)


# --- intrinsics -------------------------------------------------------------------


@mirrors(
    _dev.cp_async_bulk_tensor_load,
    "the (swizzled, out-of-bounds-filled) box lands when a wait sees ``mbar``'s phase "
    "complete; ``dst`` holds poison until then.")
def cp_async_bulk_tensor_load(dst, tensor_map, coords, mbar, *, multicast_mask=None,
                              cache_policy=None, fence=True):
    api = "cp_async_bulk_tensor_load"
    (d, m, cs, b), kw = rt.validate(_dev.cp_async_bulk_tensor_load, dst, tensor_map, coords, mbar,
                                    multicast_mask=multicast_mask, cache_policy=cache_policy,
                                    fence=fence)
    th, blk = rt.current(api)
    _check_space(api, "dst", d, "shared")
    _check_space(api, "tensor_map", m, "global")
    with blk.cond:
        bar = _check_mbar(api, blk, b)
        tmap = _check_map(api, m, len(cs), d, "dst")
        c = _coords(api, cs, m, store=False)
        spec, t = tmap.spec, tmap.tensor
        dense = np.full(_layout.box_counts(spec.box, spec.element_strides),
                        _fill_value(spec, t.dtype), t.dtype)
        ix = _box_index(spec, c)
        if ix is not None:
            dense[ix[1]] = t[ix[0]]  # read now: a copy of the source
        payload = _swizzle_bytes(dense, spec.swizzle)
        if kw["multicast_mask"] is not None:
            _multicast(api, kw["multicast_mask"], d, b, payload, spec.box_bytes, _tile_bytes)
            return
        rt.check_init_fenced(api, bar)
        tile = _tile_bytes(d)
        _cp._check_reuse(api, "dst", blk, [tile])
        # an MMA may still read the tile; the MMA's descriptor must use its swizzle
        rt.EVENTS.emit("shared_write", api, "dst", blk, tile, rt.address(b), spec.swizzle,
                       f"a TMA load with swizzle={spec.swizzle}")
        op = rt.issued(rt.AsyncOp([(tile, payload)], tx_bytes=spec.box_bytes), api)
        bar.attach(blk, op)
        _cp._track(blk, op, [tile], op.issued_at)
        rt.check_tx_overflow(api, bar)


def _store(api, m, cs, s, o, dtype_code=None):
    th, blk = rt.current(api)
    _check_space(api, "src", s, "shared")
    _check_space(api, "tensor_map", m, "global")
    tmap = _check_map(api, m, len(cs), s, "src", dtype_code)
    c = _coords(api, cs, m, store=True)
    spec, t = tmap.spec, tmap.tensor
    counts = _layout.box_counts(spec.box, spec.element_strides)
    ix = _box_index(spec, c)
    sb = _tile_bytes(s)

    def write(payloads):
        if ix is None:
            return
        dense = _unswizzle_bytes(payloads[0], spec.swizzle).view(t.dtype).reshape(counts)
        if o.op is None:
            t[ix[0]] = dense[ix[1]]
        else:
            new = dense[ix[1]].view(s.dtype)
            t[ix[0]] = _combine(o.op, o.ptx_type, t[ix[0]].view(s.dtype), new).view(t.dtype)

    poison = []
    if o.op is None and ix is not None:
        poison = [_Region(t, ix[0])]
    _issue(th, blk, BulkOp(api, [sb], write, poison))


class _Region:
    """``dst[...] = POISON_BYTE`` for the in-bounds elements of a box."""

    def __init__(self, t: np.ndarray, ix):
        self.t, self.ix = t, ix

    def __setitem__(self, key, value) -> None:
        shape = self.t[self.ix].shape
        self.t[self.ix] = np.full(shape + (self.t.itemsize,), value, np.uint8).view(self.t.dtype).reshape(shape)


def _validate_store(api: str, dev, args: tuple, kw: dict, im2col: bool = False) -> tuple:
    """The operands of a tensor store, or of a reduction (``args`` ending
    with its op), validated as the device intrinsic validates them: (map,
    coords, src, options, the dtype code a reduction gives the map, else None)."""
    vals, kw = rt.validate(dev, *args, **kw)
    m, cs, s = vals[:3]
    tys = [rt.numba_type(x) for x in (m, cs, s, kw["cache_policy"], kw["fence"])]
    tys[1] = rt.last_types()[0][1]  # the coordinates as validate typed them (run-time entries)
    if len(vals) == 3:
        return m, cs, s, _dev.validate_store(api, *tys, im2col=im2col), None
    o = _dev.validate_store(api, *tys, op=rt.numba_type(vals[3]), bf16=rt.numba_type(kw["bf16"]),
                            im2col=im2col)
    if o.ptx_type in ("b32", "b64"):  # as the device intrinsic picks the map's type code
        code = _tm.DTYPE_CODES[str(s.dtype)]
    else:
        code = _tm.DTYPE_CODES[_dev._REDUCE_DTYPE_CODE[o.ptx_type]]
    return m, cs, s, o, code


@mirrors(
    _dev.cp_async_bulk_tensor_store,
    "reads ``src`` at ``bulk_wait_group(n, read=True)``, writes the in-bounds part of the box "
    "at ``bulk_wait_group(n)`` (poison there until then).")
def cp_async_bulk_tensor_store(tensor_map, coords, src, *, cache_policy=None, fence=True):
    api = "cp_async_bulk_tensor_store"
    _store(api, *_validate_store(api, _dev.cp_async_bulk_tensor_store, (tensor_map, coords, src),
                                 dict(cache_policy=cache_policy, fence=fence)))


@mirrors(
    _dev.cp_reduce_async_bulk_tensor,
    "combines ``src`` into the in-bounds part of the box when its group completes.")
def cp_reduce_async_bulk_tensor(tensor_map, coords, src, op, *, bf16=False, cache_policy=None,
                                fence=True):
    api = "cp_reduce_async_bulk_tensor"
    _store(api, *_validate_store(api, _dev.cp_reduce_async_bulk_tensor, (tensor_map, coords, src, op),
                                 dict(bf16=bf16, cache_policy=cache_policy, fence=fence)))


@mirrors(_dev.prefetch_tensormap, "a hint.")
def prefetch_tensormap(tensor_map, *, fence=True):
    api = "prefetch_tensormap"
    (m,), _ = rt.validate(_dev.prefetch_tensormap, tensor_map, fence=fence)
    rt.current(api)
    _check_space(api, "tensor_map", m, "global")


@mirrors(_dev.fence_proxy_tensormap,
         "checks that the map is in global memory as checked mode does; otherwise a no-op "
         "(the simulator's map is read directly).")
def fence_proxy_tensormap(tensor_map, scope="sys"):
    api = "fence_proxy_tensormap"
    (m, _), _ = rt.validate(_dev.fence_proxy_tensormap, tensor_map, scope)
    rt.current(api)
    _check_space(api, "tensor_map", m, "global")


@mirrors(_dev.cp_async_bulk_prefetch_tensor,
         "checks the map and the coordinates as checked mode does; moves nothing (a hint).")
def cp_async_bulk_prefetch_tensor(tensor_map, coords, *, cache_policy=None, fence=True):
    api = "cp_async_bulk_prefetch_tensor"
    (m, cs), _ = rt.validate(_dev.cp_async_bulk_prefetch_tensor, tensor_map, coords,
                             cache_policy=cache_policy, fence=fence)
    rt.current(api)
    _check_space(api, "tensor_map", m, "global")
    _check_map(api, m, len(cs), None, "tensor_map")
    _coords(api, cs, m, store=False)


# --- im2col mode -------------------------------------------------------------------


def _im2col_args(api: str, m: np.ndarray, tmap: "TensorMap", cs, offs) -> tuple[list[int], list[int]]:
    """The coordinates and offsets as the instruction takes them, checked:
    offsets 0..65535, the first channel 16-byte aligned, the first pixel in
    the bounding box."""
    for axis, v in enumerate(offs):
        if not 0 <= int(v) <= 0xFFFF:
            raise rt.violation(api, _rules.im2col_offset(axis=axis, value=int(v)))
    c = _coords(api, cs, m, store=False)
    spec = tmap.spec
    for a, (lo, hi) in enumerate(spec.spatial_box()):
        if not lo <= c[1 + a] <= hi:
            raise rt.violation(api, _rules.im2col_start(axis=1 + a, coord=c[1 + a], lo=lo, hi=hi))
    return c, [int(v) for v in offs]


@mirrors(
    _dev.cp_async_bulk_tensor_load_im2col,
    "gathers the column block (out-of-bounds pixels filled, swizzled) when issued and lands it "
    "when a wait sees ``mbar``'s phase complete; ``dst`` holds poison until then.")
def cp_async_bulk_tensor_load_im2col(dst, tensor_map, coords, offsets, mbar, *,
                                     multicast_mask=None, cache_policy=None, fence=True):
    api = "cp_async_bulk_tensor_load_im2col"
    (d, m, cs, offs, b), kw = rt.validate(
        _dev.cp_async_bulk_tensor_load_im2col, dst, tensor_map, coords, offsets, mbar,
        multicast_mask=multicast_mask, cache_policy=cache_policy, fence=fence)
    th, blk = rt.current(api)
    _check_space(api, "dst", d, "shared")
    _check_space(api, "tensor_map", m, "global")
    with blk.cond:
        bar = _check_mbar(api, blk, b)
        tmap = _check_map(api, m, len(cs), d, "dst", mode=_im2col.MODE_IM2COL)
        c, o = _im2col_args(api, m, tmap, cs, offs)
        dense = _im2col.numpy_im2col(tmap.tensor, c, o, tmap.spec,  # read now: a copy
                                     _fill_value(tmap.spec, tmap.tensor.dtype))
        payload = _swizzle_bytes(dense, tmap.spec.swizzle)
        if kw["multicast_mask"] is not None:
            _multicast(api, kw["multicast_mask"], d, b, payload, tmap.spec.box_bytes, _tile_bytes)
            return
        rt.check_init_fenced(api, bar)
        tile = _tile_bytes(d)
        _cp._check_reuse(api, "dst", blk, [tile])
        op = rt.issued(rt.AsyncOp([(tile, payload)], tx_bytes=tmap.spec.box_bytes), api)
        bar.attach(blk, op)
        _cp._track(blk, op, [tile], op.issued_at)
        rt.check_tx_overflow(api, bar)


@mirrors(_dev.cp_async_bulk_prefetch_tensor_im2col,
         "checks the map, the coordinates and the offsets as checked mode does (and the first "
         "pixel against the bounding box); moves nothing (a hint).")
def cp_async_bulk_prefetch_tensor_im2col(tensor_map, coords, offsets, *, cache_policy=None,
                                         fence=True):
    api = "cp_async_bulk_prefetch_tensor_im2col"
    (m, cs, offs), _ = rt.validate(_dev.cp_async_bulk_prefetch_tensor_im2col, tensor_map, coords,
                                   offsets, cache_policy=cache_policy, fence=fence)
    rt.current(api)
    _check_space(api, "tensor_map", m, "global")
    tmap = _check_map(api, m, len(cs), None, "tensor_map", mode=_im2col.MODE_IM2COL)
    _im2col_args(api, m, tmap, cs, offs)


def _store_im2col(api, m, cs, s, o, dtype_code=None):
    """The im2col store/reduce: the tile's pixels back along the traversal."""
    th, blk = rt.current(api)
    _check_space(api, "src", s, "shared")
    _check_space(api, "tensor_map", m, "global")
    tmap = _check_map(api, m, len(cs), s, "src", dtype_code, mode=_im2col.MODE_IM2COL)
    if not tmap.spec.zero_corners():
        raise rt.violation(api, _rules.im2col_store_corners())
    c, _ = _im2col_args(api, m, tmap, cs, ())
    spec, t = tmap.spec, tmap.tensor
    sb = _tile_bytes(s)
    shape = (spec.pixels_per_column, spec.channels_per_pixel)

    def write(payloads):
        dense = _unswizzle_bytes(payloads[0], spec.swizzle).view(t.dtype).reshape(shape)
        if o.op is None:
            _im2col.numpy_im2col_store(t, dense, c, spec)
        else:
            def combine(old, new):
                return _combine(o.op, o.ptx_type, old.view(s.dtype), new.view(s.dtype)).view(t.dtype)

            _im2col.numpy_im2col_store(t, dense, c, spec, combine)

    poison = [_Pixels(t, spec, c)] if o.op is None else []
    _issue(th, blk, BulkOp(api, [sb], write, poison))


class _Pixels:
    """``dst[...] = POISON_BYTE`` for the elements an im2col store writes."""

    def __init__(self, t: np.ndarray, spec, c):
        self.t, self.spec, self.c = t, spec, c

    def __setitem__(self, key, value) -> None:
        fill = np.full(self.t.itemsize, value, np.uint8).view(self.t.dtype)[0]
        tile = np.full((self.spec.pixels_per_column, self.spec.channels_per_pixel), fill, self.t.dtype)
        _im2col.numpy_im2col_store(self.t, tile, self.c, self.spec)


@mirrors(
    _dev.cp_async_bulk_tensor_store_im2col,
    "reads ``src`` at ``bulk_wait_group(n, read=True)``, writes its pixels along the im2col "
    "traversal (those inside the tensor) at ``bulk_wait_group(n)`` (poison there until then).")
def cp_async_bulk_tensor_store_im2col(tensor_map, coords, src, *, cache_policy=None, fence=True):
    api = "cp_async_bulk_tensor_store_im2col"
    _store_im2col(api, *_validate_store(api, _dev.cp_async_bulk_tensor_store_im2col,
                                        (tensor_map, coords, src),
                                        dict(cache_policy=cache_policy, fence=fence), im2col=True))


@mirrors(
    _dev.cp_reduce_async_bulk_tensor_im2col,
    "combines ``src``'s pixels into the tensor along the im2col traversal when its group "
    "completes.")
def cp_reduce_async_bulk_tensor_im2col(tensor_map, coords, src, op, *, bf16=False,
                                       cache_policy=None, fence=True):
    api = "cp_reduce_async_bulk_tensor_im2col"
    _store_im2col(api, *_validate_store(api, _dev.cp_reduce_async_bulk_tensor_im2col,
                                        (tensor_map, coords, src, op),
                                        dict(bf16=bf16, cache_policy=cache_policy, fence=fence),
                                        im2col=True))
