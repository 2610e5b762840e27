"""Vector register loads and stores (8 and 16 bytes) and zero-cost chunk views.

Numba cannot prove an array view's alignment, so four adjacent float32
accesses ``a[i, j]``, ..., ``a[i, j + 3]`` stay four 4-byte instructions
where CUDA C++ writes one ``float4`` access.  The functions here are plain
LLVM vector accesses with the vector's alignment (no inline PTX): NVVM turns
them into ``ld/st{.global,.shared}.v2/.v4`` when it can prove the address
space (kernel arguments, ``cuda.shared.array``), into generic ``ld/st.v*``
otherwise.

- :func:`load_vec` / :func:`store_vec`: ``n`` elements of 2, 4 or 8 bytes
  making 8 or 16 bytes (``float2``/``float4``, 4 or 8 halves, 2 doubles).
- :func:`load4` / :func:`store4` (16 bytes) and :func:`load2` /
  :func:`store2` (8 bytes): the same for 4-byte elements, like CUDA's
  ``float4`` and ``float2``.
- :func:`chunk_view` (and :func:`view4`): the 1-D view of ``n`` elements
  at ``arr[idx]`` for :func:`~numba_asynccopy.cp_async` and the bulk
  copies: one multiply-add per axis, where a slice ``a[i, j:j + 4]`` costs
  Numba's slice clamping and negative-index wraparound and leaves the
  length a run-time value (so a copy from it walks a run-time chunk loop).

Contract: the elements ``arr[idx]``, ... (``n`` of them along the last
axis) lie inside ``arr`` and are contiguous, and their address is a multiple
of the vector size (``min(n * itemsize, 16)`` bytes for :func:`chunk_view`).
In checked mode a violation traps with a message naming the function, the
argument and the rule; without it, it is a misaligned-address fault (or an
access outside the array).  Loads and stores return and take tuples.

Example::

    a0, a1, a2, a3 = ac.load4(A, (row, 4 * tx))           # ld.global.v4
    ac.store4(sh, (ty, 4 * tx), (a0, a1, a2, a3))        # st.shared.v4
    ac.cp_async(sh[r, :], ac.chunk_view(A, (row, 8 * tx), 8), 16)
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.cuda import cgutils

from . import checked as _checked
from ._compat import TypingError, intrinsic
from ._lowering import I64, generic_addr64, trap_if
from ._regions import itemsize, literal_value

#: bytes one vector load or store moves
VECTOR_BYTES = (8, 16)
#: element sizes a vector access takes (bytes)
VECTOR_ITEMSIZES = (2, 4, 8)
#: byte sizes a chunk view may have besides multiples of 16 (cp.async chunks)
CHUNK_VIEW_SMALL_BYTES = (4, 8)


# --- compile time -----------------------------------------------------------------


def _check_array(api: str, arr, sizes: tuple[int, ...] | None, want: str) -> None:
    """``arr`` is an array whose last axis can be contiguous, of an integer or
    float dtype of ``sizes`` bytes (None: of any dtype)."""
    ok = isinstance(arr, types.Array) and arr.ndim >= 1
    if ok and sizes is not None:
        ok = isinstance(arr.dtype, (types.Integer, types.Float)) and itemsize(arr.dtype) in sizes
    if not ok:
        raise TypingError(f"{api}: `arr` must be an array of {want}, got {arr}")
    if arr.layout == "F" and arr.ndim > 1:
        raise TypingError(f"{api}: `arr` is Fortran-ordered; its last axis is not contiguous")


def _check_index(api: str, arr, idx) -> None:
    """``idx``: one integer per axis of ``arr`` (a bare integer for 1-D)."""
    kinds = list(idx.types) if isinstance(idx, types.BaseTuple) else [idx]
    if len(kinds) != arr.ndim or not all(isinstance(k, types.Integer) for k in kinds):
        raise TypingError(f"{api}: `idx` must be {arr.ndim} integer index(es) of `arr`, got {idx}")


def _check_count(api: str, arr, n) -> int:
    """``n``: a compile-time element count making 8 or 16 bytes of ``arr``."""
    count = literal_value(n, api, "n")
    size = itemsize(arr.dtype)
    if count * size not in VECTOR_BYTES:
        raise TypingError(
            f"{api}: `n`={count} elements of `arr` ({arr.dtype}, {size} bytes each) make "
            f"{count * size} bytes; a vector access moves "
            + " or ".join(str(b) for b in VECTOR_BYTES) + " bytes")
    return count


def _check_values(api: str, values, count: int | None) -> int:
    """``values``: a tuple of ``count`` numbers (None: of any length)."""
    # complex numbers are Numbers too, but no vector register holds one
    ok = (isinstance(values, types.BaseTuple)
          and all(isinstance(t, (types.Number, types.Boolean)) and not isinstance(t, types.Complex)
                  for t in values.types))
    if ok and count is not None:
        ok = len(values.types) == count
    if not ok:
        what = f"{count} numbers" if count is not None else "numbers"
        raise TypingError(f"{api}: `values` must be a tuple of {what}, got {values}")
    return len(values.types)


def _check_writable(api: str, arr) -> None:
    if not arr.mutable:
        raise TypingError(f"{api}: `arr` is read-only, got {arr}")


def _check_store_count(api: str, arr, count: int) -> None:
    size = itemsize(arr.dtype)
    if count * size not in VECTOR_BYTES:
        raise TypingError(
            f"{api}: `values` holds {count} elements of `arr` ({arr.dtype}, {size} bytes each): "
            f"{count * size} bytes; a vector access moves "
            + " or ".join(str(b) for b in VECTOR_BYTES) + " bytes")


def _check_chunk_count(api: str, arr, n) -> int:
    count = literal_value(n, api, "n")
    nbytes = count * itemsize(arr.dtype)
    if count < 1 or not (nbytes in CHUNK_VIEW_SMALL_BYTES or nbytes % 16 == 0):
        raise TypingError(
            f"{api}: `n`={count} elements of `arr` ({arr.dtype}) make {nbytes} bytes; a chunk "
            "view holds 4, 8 or a multiple of 16 bytes (a cp.async chunk or a bulk copy)")
    return count


def _alignment(nbytes: int) -> int:
    """The alignment the contract asks of ``nbytes`` accessed together: the
    vector size, at most 16 bytes (a chunk view of 64 bytes: 16)."""
    return min(nbytes, 16)


# --- the rules checked mode traps on (the simulator raises the same words) ---------


def _index_name(k: int, scalar: bool) -> str:
    return "`idx`" if scalar else f"`idx`[{k}]"


def _rule_index(k: int, ndim: int, scalar: bool, n: int) -> str:
    """Rule (printf form) for index ``k`` outside ``arr``; values: the index
    and the axis length."""
    name = _index_name(k, scalar)
    if k < ndim - 1:
        return f"{name}=%lld is outside axis {k} of `arr` (length %lld)"
    return (f"{name}=%lld: the {n} elements from there are not all inside the last axis "
            "of `arr` (length %lld)")


def _rule_contiguous(size: int) -> str:
    """Rule (printf form) for a strided last axis; value: the stride."""
    return f"the last axis of `arr` is not contiguous (stride %lld bytes, itemsize {size})"


def _rule_aligned(nbytes: int) -> str:
    """Rule (printf form) for a misaligned access; value: the address."""
    return f"the {nbytes} bytes at `arr[idx]` (0x%llx) are not {_alignment(nbytes)}-byte aligned"


# --- lowering --------------------------------------------------------------------------


def _pointer(context, builder, api: str, aty, ary_val, ity, idx_val, n: int):
    """Pointer to ``arr[idx]``; in checked mode, traps on the contract's rules."""
    ary = context.make_array(aty)(context, builder, ary_val)
    shape = cgutils.unpack_tuple(builder, ary.shape, aty.ndim)
    strides = cgutils.unpack_tuple(builder, ary.strides, aty.ndim)
    scalar = not isinstance(ity, types.BaseTuple)
    if scalar:
        vals, tys = [idx_val], [ity]
    else:
        vals = cgutils.unpack_tuple(builder, idx_val, len(ity.types))
        tys = list(ity.types)
    inds = [context.cast(builder, v, t, types.intp) for v, t in zip(vals, tys)]
    ptr = cgutils.get_item_pointer2(context, builder, data=ary.data, shape=shape,
                                    strides=strides, layout=aty.layout, inds=inds)
    if _checked._note_compiled():
        size = itemsize(aty.dtype)
        last = aty.ndim - 1
        for k, (i, s) in enumerate(zip(inds, shape)):
            zero = ir.Constant(i.type, 0)
            if k < last:
                # unsigned compare: a negative index is out of range too
                bad = builder.icmp_unsigned(">=", i, s)
            else:
                end = builder.add(i, ir.Constant(i.type, n))
                bad = builder.or_(builder.icmp_signed("<", i, zero),
                                  builder.icmp_signed(">", end, s))
            trap_if(context, builder, bad, api, _rule_index(k, aty.ndim, scalar, n), [i, s])
        if aty.layout not in ("C", "F") and n > 1:
            bad = builder.icmp_unsigned("!=", strides[-1], ir.Constant(strides[-1].type, size))
            trap_if(context, builder, bad, api, _rule_contiguous(size), [strides[-1]])
        addr = generic_addr64(builder, ptr)
        mis = builder.urem(addr, ir.Constant(I64, _alignment(n * size)))
        trap_if(context, builder, builder.icmp_unsigned("!=", mis, ir.Constant(I64, 0)), api,
                _rule_aligned(n * size), [addr])
    return ptr


def _memory_type(ety, n: int, size: int):
    """The LLVM type of the access: the element vector, except for 2-byte
    elements, moved as 32-bit words (NVVM splits an ``<8 x i16>`` access
    into two 8-byte ones; ``<4 x i32>`` is one 16-byte access)."""
    if size == 2:
        return ir.VectorType(ir.IntType(32), n // 2)
    return ir.VectorType(ety, n)


def _load(api: str, n: int):
    def codegen(context, builder, sig, args):
        ptr = _pointer(context, builder, api, sig.args[0], args[0], sig.args[1], args[1], n)
        ety = context.get_data_type(sig.args[0].dtype)
        mty = _memory_type(ety, n, itemsize(sig.args[0].dtype))
        vptr = builder.bitcast(ptr, ir.PointerType(mty))
        vec = builder.load(vptr, align=n * itemsize(sig.args[0].dtype))
        if mty != ir.VectorType(ety, n):
            vec = builder.bitcast(vec, ir.VectorType(ety, n))
        vals = [builder.extract_element(vec, ir.Constant(ir.IntType(32), i)) for i in range(n)]
        return context.make_tuple(builder, sig.return_type, vals)

    return codegen


def _store(api: str, n: int):
    def codegen(context, builder, sig, args):
        aty = sig.args[0]
        ptr = _pointer(context, builder, api, aty, args[0], sig.args[1], args[1], n)
        ety = context.get_data_type(aty.dtype)
        vals = cgutils.unpack_tuple(builder, args[2], n)
        vec = ir.Constant(ir.VectorType(ety, n), ir.Undefined)
        for i, (v, t) in enumerate(zip(vals, sig.args[2].types)):
            v = context.cast(builder, v, t, aty.dtype)
            vec = builder.insert_element(vec, v, ir.Constant(ir.IntType(32), i))
        mty = _memory_type(ety, n, itemsize(aty.dtype))
        if mty != vec.type:
            vec = builder.bitcast(vec, mty)
        vptr = builder.bitcast(ptr, ir.PointerType(mty))
        builder.store(vec, vptr, align=n * itemsize(aty.dtype))
        return context.get_dummy_value()

    return codegen


def _view(api: str, n: int):
    def codegen(context, builder, sig, args):
        aty = sig.args[0]
        ptr = _pointer(context, builder, api, aty, args[0], sig.args[1], args[1], n)
        out = context.make_array(sig.return_type)(context, builder)
        intp = context.get_value_type(types.intp)
        size = context.get_abi_sizeof(context.get_data_type(aty.dtype))
        context.populate_array(out, data=ptr, shape=[ir.Constant(intp, n)],
                               strides=[ir.Constant(intp, size)],
                               itemsize=ir.Constant(intp, size), meminfo=None)
        return out._getvalue()

    return codegen


_VEC_DTYPES = "a 2-, 4- or 8-byte integer or float dtype (float16, float32, int32, float64, ...)"
_FOUR_BYTE = "a 4-byte dtype (float32, int32, uint32)"


# --- the intrinsics ----------------------------------------------------------------------


@intrinsic
def load_vec(typingctx, arr, idx, n):
    """Load ``arr[idx]`` and the next ``n - 1`` elements of the last axis
    as one 8- or 16-byte access; returns an ``n``-tuple of ``arr.dtype``.

    ``n`` is a compile-time constant and ``n * itemsize`` is 8 or 16 bytes
    (2 or 4 float32, 4 or 8 float16, 2 float64); the address must be a
    multiple of ``n * itemsize``.

    PTX: ``ld{.global,.shared}.v2/.v4`` (2-byte elements move as 32-bit
    words: ``.v2.u32``/``.v4.u32``).

    Example::

        h = ac.load_vec(X, (row, 8 * tx), 8)      # 8 float16: ld.global.v4.u32
        d0, d1 = ac.load_vec(D, 2 * tx, 2)        # 2 float64: ld.global.v2.f64
    """
    api = "load_vec"
    _check_array(api, arr, VECTOR_ITEMSIZES, _VEC_DTYPES)
    _check_index(api, arr, idx)
    count = _check_count(api, arr, n)
    return types.UniTuple(arr.dtype, count)(arr, idx, n), _load(api, count)


@intrinsic
def store_vec(typingctx, arr, idx, values):
    """Store the tuple ``values`` to ``arr[idx]`` and the next elements of
    the last axis as one 8- or 16-byte access (each value cast to
    ``arr.dtype``).

    ``len(values) * itemsize`` is 8 or 16 bytes; the address must be a
    multiple of it.

    PTX: ``st{.global,.shared}.v2/.v4`` (2-byte elements move as 32-bit
    words: ``.v2.u32``/``.v4.u32``).

    Example::

        ac.store_vec(Y, (row, 8 * tx), h)         # 8 float16: st.global.v4.u32
        ac.store_vec(D, 2 * tx, (d0, d1))         # 2 float64: st.global.v2.f64
    """
    api = "store_vec"
    _check_array(api, arr, VECTOR_ITEMSIZES, _VEC_DTYPES)
    _check_writable(api, arr)
    _check_index(api, arr, idx)
    count = _check_values(api, values, None)
    _check_store_count(api, arr, count)
    return types.void(arr, idx, values), _store(api, count)


@intrinsic
def load4(typingctx, arr, idx):
    """Load ``arr[idx]`` and the next three elements of the last axis as one
    16-byte access (a ``float4``); returns a 4-tuple.  ``arr`` has a 4-byte
    dtype; the address must be a multiple of 16.

    PTX: ``ld{.global,.shared}.v4.{f32,u32}``.

    Example::

        a0, a1, a2, a3 = ac.load4(sh, (k, 4 * tx))     # ld.shared.v4
    """
    api = "load4"
    _check_array(api, arr, (4,), _FOUR_BYTE)
    _check_index(api, arr, idx)
    return types.UniTuple(arr.dtype, 4)(arr, idx), _load(api, 4)


@intrinsic
def store4(typingctx, arr, idx, values):
    """Store a 4-tuple to ``arr[idx]`` and the next three elements of the
    last axis as one 16-byte access (a ``float4``).  ``arr`` has a 4-byte
    dtype; the address must be a multiple of 16.

    PTX: ``st{.global,.shared}.v4.{f32,u32}``.

    Example::

        ac.store4(dst, (row, 4 * tx), (v0, v1, v2, v3))   # st.global.v4
    """
    api = "store4"
    _check_array(api, arr, (4,), _FOUR_BYTE)
    _check_writable(api, arr)
    _check_index(api, arr, idx)
    _check_values(api, values, 4)
    return types.void(arr, idx, values), _store(api, 4)


@intrinsic
def load2(typingctx, arr, idx):
    """Load ``arr[idx]`` and the next element of the last axis as one 8-byte
    access (a ``float2``); returns a 2-tuple.  ``arr`` has a 4-byte dtype;
    the address must be a multiple of 8.

    PTX: ``ld{.global,.shared}.v2.{f32,u32}``.

    Example::

        x, y = ac.load2(xy, (i, 2 * tx))                # ld.global.v2
    """
    api = "load2"
    _check_array(api, arr, (4,), _FOUR_BYTE)
    _check_index(api, arr, idx)
    return types.UniTuple(arr.dtype, 2)(arr, idx), _load(api, 2)


@intrinsic
def store2(typingctx, arr, idx, values):
    """Store a 2-tuple to ``arr[idx]`` and the next element of the last axis
    as one 8-byte access (a ``float2``).  ``arr`` has a 4-byte dtype; the
    address must be a multiple of 8.

    PTX: ``st{.global,.shared}.v2.{f32,u32}``.

    Example::

        ac.store2(sh, (ty, 2 * tx), (x, y))             # st.shared.v2
    """
    api = "store2"
    _check_array(api, arr, (4,), _FOUR_BYTE)
    _check_writable(api, arr)
    _check_index(api, arr, idx)
    _check_values(api, values, 2)
    return types.void(arr, idx, values), _store(api, 2)


@intrinsic
def chunk_view(typingctx, arr, idx, n):
    """The 1-D view (shape ``(n,)``, C layout) of ``arr[idx]`` and the next
    ``n - 1`` elements of the last axis, with no slice arithmetic: a chunk
    (or row of chunks) for :func:`~numba_asynccopy.cp_async` and the bulk
    copies whose length is a compile-time constant.

    ``n`` is a compile-time constant; ``n * itemsize`` is 4, 8 or a
    multiple of 16 bytes and the address a multiple of
    ``min(n * itemsize, 16)``.  ``idx`` must be in range (no negative
    indices: there is no wraparound).

    Example::

        ac.cp_async(ac.chunk_view(sh, (r, 8 * tx), 8),     # 8 float16: one
                    ac.chunk_view(X, (row, 8 * tx), 8), 16) # 16-byte cp.async
    """
    api = "chunk_view"
    _check_array(api, arr, None, "any dtype")
    _check_index(api, arr, idx)
    count = _check_chunk_count(api, arr, n)
    return types.Array(arr.dtype, 1, "C")(arr, idx, n), _view(api, count)


@intrinsic
def view4(typingctx, arr, idx):
    """The 1-D view of ``arr[idx]`` and the next three elements of the last
    axis (shape ``(4,)``, C layout): ``chunk_view(arr, idx, 4)`` for a
    4-byte dtype, a 16-byte chunk for ``cp_async`` without slice
    arithmetic.  ``idx`` must be in range (no negative indices).

    Example::

        ac.cp_async(sh[r, c, :], ac.view4(u, (gy, 4 * gc)), 16)   # one cp.async
    """
    api = "view4"
    _check_array(api, arr, (4,), _FOUR_BYTE)
    _check_index(api, arr, idx)
    return types.Array(arr.dtype, 1, "C")(arr, idx), _view(api, 4)


__all__ = [
    "chunk_view",
    "load2",
    "load4",
    "load_vec",
    "store2",
    "store4",
    "store_vec",
    "view4",
]


# --- what checked mode checks here (the README's table is made from these) ------

for _api in ("load_vec", "store_vec", "load4", "store4", "load2", "store2", "chunk_view", "view4"):
    _checked.declare(_api, "idx", "`idx`=… is outside axis k of `arr` (length …); the n elements "
                     "from the last index must all be inside the last axis")
    _checked.declare(_api, "arr", "the last axis of `arr` is not contiguous (stride … bytes, "
                     "itemsize …)")
    _checked.declare(_api, "arr", "the n x itemsize bytes at `arr[idx]` (…) are not aligned to "
                     "their size")
