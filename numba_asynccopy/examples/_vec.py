"""16-byte register loads and stores, and 4-element chunk views, for the
example kernels.

Numba gives no 16-byte access: it cannot prove a view's alignment, so four
adjacent float32 accesses stay four 4-byte instructions.  ``load4`` and
``store4`` are plain LLVM vector accesses with ``align 16`` (no inline PTX):
NVVM turns them into ``ld/st{.shared,.global}.v4.b32``.  The examples use them
where a thread moves 16 contiguous bytes between shared memory, registers and
global memory: fewer instructions per byte is what lets a memory-bound kernel
reach the copy bandwidth.

``view4`` gives the same four elements as a 1-D array view (shape (4,))
for ``cp_async``: the address is one multiply-add per axis, where a slice
``a[i, j:j + 4]`` costs Numba's slice clamping and negative-index
wraparound, and leaves the view's length a run-time value (so a ``cp_async``
from it walks a run-time chunk loop).

Contract: the four elements ``arr[idx...:idx+4]`` along the last axis are
contiguous and their address is a multiple of 16 bytes.  In checked mode a
violation traps with a message; otherwise it is a misaligned access fault.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.cuda import cgutils

from .. import checked as _checked
from .._compat import TypingError, intrinsic
from .._lowering import I64, generic_addr64, trap_if
from .._regions import itemsize


def _check(api: str, arr, idx) -> list:
    if not isinstance(arr, types.Array) or itemsize(arr.dtype) != 4:
        raise TypingError(f"{api}: `arr` must be an array of a 4-byte dtype "
                          f"(float32, int32, uint32), got {arr}")
    if arr.layout == "F" and arr.ndim > 1:
        raise TypingError(f"{api}: `arr` is Fortran-ordered; its last axis is not contiguous")
    if isinstance(idx, types.BaseTuple):
        kinds = list(idx.types)
    else:
        kinds = [idx]
    if len(kinds) != arr.ndim or not all(isinstance(k, types.Integer) for k in kinds):
        raise TypingError(f"{api}: `idx` must be {arr.ndim} integer index(es) of `arr`, got {idx}")
    return kinds


def _pointer(context, builder, api, aty, ary_val, ity, idx_val):
    ary = context.make_array(aty)(context, builder, ary_val)
    shape = cgutils.unpack_tuple(builder, ary.shape, aty.ndim)
    strides = cgutils.unpack_tuple(builder, ary.strides, aty.ndim)
    if isinstance(ity, types.BaseTuple):
        vals = cgutils.unpack_tuple(builder, idx_val, len(ity.types))
        tys = list(ity.types)
    else:
        vals, tys = [idx_val], [ity]
    inds = [context.cast(builder, v, t, types.intp) for v, t in zip(vals, tys)]
    ptr = cgutils.get_item_pointer2(context, builder, data=ary.data, shape=shape,
                                    strides=strides, layout=aty.layout, inds=inds)
    if _checked._note_compiled():
        addr = generic_addr64(builder, ptr)
        mis = builder.urem(addr, ir.Constant(I64, 16))
        trap_if(context, builder, builder.icmp_unsigned("!=", mis, ir.Constant(I64, 0)), api,
                "the 16 bytes at %p are not 16-byte aligned", [addr])
        last = builder.add(inds[-1], ir.Constant(inds[-1].type, 4))
        over = builder.icmp_signed(">", last, shape[-1])
        trap_if(context, builder, over, api,
                "elements idx..idx+3 pass the end of the last axis (%lld elements)", [shape[-1]])
        if aty.layout != "C":
            bad = builder.icmp_unsigned("!=", strides[-1], ir.Constant(strides[-1].type, 4))
            trap_if(context, builder, bad, api,
                    "the last axis is not contiguous (stride %lld bytes)", [strides[-1]])
    return ptr


@intrinsic
def load4(typingctx, arr, idx):
    """Load ``arr[idx]`` and the next three elements of the last axis as one
    16-byte access; returns a 4-tuple.

    Example::

        a0, a1, a2, a3 = load4(sh, (k, 4 * tx))     # ld.shared.v4
    """
    _check("load4", arr, idx)
    ret = types.UniTuple(arr.dtype, 4)

    def codegen(context, builder, sig, args):
        ptr = _pointer(context, builder, "load4", sig.args[0], args[0], sig.args[1], args[1])
        ety = context.get_data_type(sig.args[0].dtype)
        vptr = builder.bitcast(ptr, ir.PointerType(ir.VectorType(ety, 4)))
        vec = builder.load(vptr, align=16)
        vals = [builder.extract_element(vec, ir.Constant(ir.IntType(32), i)) for i in range(4)]
        return context.make_tuple(builder, sig.return_type, vals)

    return ret(arr, idx), codegen


@intrinsic
def store4(typingctx, arr, idx, values):
    """Store a 4-tuple to ``arr[idx]`` and the next three elements of the
    last axis as one 16-byte access.

    Example::

        store4(dst, (row, 4 * tx), (v0, v1, v2, v3))   # st.global.v4
    """
    _check("store4", arr, idx)
    if not (isinstance(values, types.BaseTuple) and len(values.types) == 4
            and all(isinstance(t, (types.Number, types.Boolean)) for t in values.types)):
        raise TypingError(f"store4: `values` must be a tuple of 4 numbers, got {values}")

    def codegen(context, builder, sig, args):
        aty = sig.args[0]
        ptr = _pointer(context, builder, "store4", aty, args[0], sig.args[1], args[1])
        ety = context.get_data_type(aty.dtype)
        vals = cgutils.unpack_tuple(builder, args[2], 4)
        vec = ir.Constant(ir.VectorType(ety, 4), ir.Undefined)
        for i, (v, t) in enumerate(zip(vals, sig.args[2].types)):
            v = context.cast(builder, v, t, aty.dtype)
            vec = builder.insert_element(vec, v, ir.Constant(ir.IntType(32), i))
        vptr = builder.bitcast(ptr, ir.PointerType(ir.VectorType(ety, 4)))
        builder.store(vec, vptr, align=16)
        return context.get_dummy_value()

    return types.void(arr, idx, values), codegen


@intrinsic
def view4(typingctx, arr, idx):
    """The 1-D view of ``arr[idx]`` and the next three elements of the last
    axis (shape ``(4,)``, C layout): a 16-byte chunk for ``cp_async`` without
    slice arithmetic.  ``idx`` must be in range (no negative indices).

    Example::

        ac.cp_async(sh[r, c, :], view4(u, (gy, 4 * gc)), 16)   # one cp.async
    """
    kinds = _check("view4", arr, idx)
    del kinds
    ret = types.Array(arr.dtype, 1, "C")

    def codegen(context, builder, sig, args):
        aty = sig.args[0]
        ptr = _pointer(context, builder, "view4", aty, args[0], sig.args[1], args[1])
        out = context.make_array(sig.return_type)(context, builder)
        intp = context.get_value_type(types.intp)
        size = context.get_abi_sizeof(context.get_data_type(aty.dtype))
        context.populate_array(out, data=ptr, shape=[ir.Constant(intp, 4)],
                               strides=[ir.Constant(intp, size)],
                               itemsize=ir.Constant(intp, size), meminfo=None)
        return out._getvalue()

    return ret(arr, idx), codegen


# --- CUDA simulator (NUMBA_ENABLE_CUDASIM=1): the same contract on numpy views
from .. import sim as _sim  # noqa: E402

if _sim.ENABLED:
    from ..sim import _runtime as _rt

    _device = {"load4": load4, "store4": store4, "view4": view4}

    def _sim_index(api: str, arr, idx, *extra):
        (a, i, *_), _ = _rt.validate(_device[api], arr, idx, *extra)
        i = tuple(int(x) for x in (i if isinstance(i, tuple) else (i,)))
        addr = _rt.address(a) + sum(x * s for x, s in zip(i, a.strides))
        # the simulator always checks what checked mode traps on
        if addr % 16:
            raise _rt.violation(api, f"the 16 bytes at 0x{addr:x} are not 16-byte aligned")
        if i[-1] + 4 > a.shape[-1]:
            raise _rt.violation(
                api, f"elements idx..idx+3 pass the end of the last axis ({a.shape[-1]} elements)")
        if a.strides[-1] != 4 and a.shape[-1] > 1:
            raise _rt.violation(api, f"the last axis is not contiguous (stride {a.strides[-1]} bytes)")
        return a, i[:-1], i[-1]

    def load4(arr, idx):  # noqa: F811
        """Simulator version of ``load4``.

        Example::

            a0, a1, a2, a3 = load4(sh, (k, 4 * tx))
        """
        a, head, j = _sim_index("load4", arr, idx)
        return tuple(a[head + (j + d,)] for d in range(4))

    def store4(arr, idx, values):  # noqa: F811
        """Simulator version of ``store4``.

        Example::

            store4(dst, (row, 4 * tx), (v0, v1, v2, v3))
        """
        a, head, j = _sim_index("store4", arr, idx, values)
        for d in range(4):
            a[head + (j + d,)] = values[d]

    def view4(arr, idx):  # noqa: F811
        """Simulator version of ``view4``.

        Example::

            ac.cp_async(sh[r, c, :], view4(u, (gy, 4 * gc)), 16)
        """
        a, head_, j = _sim_index("view4", arr, idx)
        return a[head_ + (slice(j, j + 4),)]
