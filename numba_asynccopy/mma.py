"""Warp-level tensor-core MMA (Ampere style, sm_80+, also on Hopper):
``mma.sync``, ``ldmatrix``, ``stmatrix`` and fragment helpers.

A *fragment* is an ordinary Numba tuple that lives in registers:

==========  ==================================  ===========================
operand     m16n8k16 (bf16/f16)                 m16n8k8 (tf32)
==========  ==================================  ===========================
A           ``UniTuple(uint32, 4)`` (8 halves)  ``UniTuple(uint32, 4)``
B           ``UniTuple(uint32, 2)`` (4 halves)  ``UniTuple(uint32, 2)``
C / D       ``UniTuple(float32, 4)``            ``UniTuple(float32, 4)``
==========  ==================================  ===========================

:func:`mma_sync` takes and returns them (the accumulator's registers are
tied to the result's, so a k-loop keeps them in registers: no local memory
as long as every access to a fragment is constant-indexed).  The helpers
spare users the lane -> element maps:

- :func:`mma_load_a` / :func:`mma_load_b`: one fragment from a shared 2-D
  tile, given the fragment's origin in the tile (``ldmatrix`` with the row
  address each lane must supply);
- :func:`mma_zeros`: a zero accumulator; :func:`mma_store`: the 16 x 8
  accumulator to a global or shared 2-D array of float32, float16 or bf16
  (uint16 storage), masked at the array's edges.

bf16 data: numpy has no bfloat16, so the package holds bf16 elements as
``uint16`` arrays of the bf16 bits (a torch bf16 tensor passed to
``ac.launch`` / ``ac.as_device_array`` arrives as such a view).
:func:`bf16_to_f32` and :func:`f32_to_bf16` convert single elements.

All collective instructions here are ``.sync.aligned``: every lane of the
warp executes the same call together.  Checked mode traps when the active
mask is not full; the simulator names a missing or divergent lane.

Example::

    acc = ac.mma_zeros()
    for k0 in range(0, K, 16):                 # tiles sa[16, K], sb[K, 8] in shared
        a = ac.mma_load_a(sa, 0, k0)
        b = ac.mma_load_b(sb, k0, 0)
        acc = ac.mma_sync(a, b, acc, "bf16")
    ac.mma_store(C, row0, col0, acc)           # masked at C's edges
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.cuda import cgutils

from . import _rules
from . import checked as _checked
from . import vector as _vec
from ._compat import TypingError, intrinsic
from ._forms import form, select
from ._lowering import I16, I32, asm, is_space, shared_addr32, sreg, trap_if
from ._regions import bool_constant, itemsize, literal_value

F32 = ir.FloatType()
HALF = ir.HalfType()

#: mma.sync input types -> (shape, registry row, PTX type)
MMA_KINDS = {
    "bf16": ("m16n8k16", "mma.sync.m16n8k16", "bf16.bf16"),
    "f16": ("m16n8k16", "mma.sync.m16n8k16", "f16.f16"),
    "tf32": ("m16n8k8", "mma.sync.m16n8k8.tf32", None),
}
#: registers a thread holds of each fragment (A, B, C/D), for every kind
A_REGS, B_REGS, C_REGS = 4, 2, 4
LDMATRIX_NUMS = (1, 2, 4)
#: bytes of the matrix row each lane of ldmatrix/stmatrix points at
ROW_BYTES = 16
#: output dtypes of mma_store, by numpy name
STORE_DTYPES = ("float32", "float16", "uint16 (bf16 bits)")
B_LAYOUTS = ("row", "col")

# --- compile time ----------------------------------------------------------------


def _check_tile(api: str, name: str, tile, *, sizes=(2, 4), ndim=None, writable=False) -> int:
    """``tile``: an array of 2- or 4-byte integer/float elements whose last
    axis is contiguous; returns the itemsize."""
    ok = isinstance(tile, types.Array) and tile.ndim >= 1 and isinstance(
        tile.dtype, (types.Integer, types.Float)) and itemsize(tile.dtype) in sizes
    if not ok:
        want = " or ".join(f"{s}-byte" for s in sizes)
        raise TypingError(f"{api}: `{name}` must be a shared-memory array of {want} elements "
                          f"(float16 or uint16 bf16 bits; float32 for tf32), got {tile}")
    if ndim is not None and tile.ndim != ndim:
        raise TypingError(f"{api}: `{name}` must be a {ndim}-D tile view, got {tile.ndim}-D {tile}")
    if tile.layout == "F" and tile.ndim > 1:
        raise TypingError(f"{api}: `{name}` is Fortran-ordered; each lane's 16-byte matrix row "
                          "must be contiguous along the last axis")
    if writable and not tile.mutable:
        raise TypingError(f"{api}: `{name}` is read-only, got {tile}")
    return itemsize(tile.dtype)


def _check_index(api: str, tile, idx) -> None:
    kinds = list(idx.types) if isinstance(idx, types.BaseTuple) else [idx]
    if len(kinds) != tile.ndim or not all(isinstance(k, types.Integer) for k in kinds):
        raise TypingError(f"{api}: `idx` must be {tile.ndim} integer index(es) of `tile` "
                          f"(this lane's matrix row), got {idx}")


def _check_origin(api: str, **coords) -> None:
    for name, ty in coords.items():
        if not isinstance(getattr(ty, "literal_type", ty), types.Integer):
            raise TypingError(f"{api}: `{name}` must be an integer (the fragment's origin), got {ty}")


def _check_regs(api: str, name: str, ty, n: int, what: str) -> None:
    ok = (isinstance(ty, types.UniTuple) and len(ty) == n and isinstance(ty.dtype, types.Integer)
          and ty.dtype.bitwidth == 32)
    if not ok:
        raise TypingError(f"{api}: `{name}` must be the {what} fragment: a tuple of {n} uint32 "
                          f"registers (from ldmatrix or mma_load_*), got {ty}")


def _check_acc(api: str, name: str, ty) -> None:
    if not (isinstance(ty, types.UniTuple) and len(ty) == C_REGS and ty.dtype == types.float32):
        raise TypingError(f"{api}: `{name}` must be the accumulator fragment: a tuple of "
                          f"{C_REGS} float32 (ac.mma_zeros() or an mma_sync result), got {ty}")


def validate_mma_sync(a, b, c, dtype, shape) -> tuple[str, str]:
    """Compile-time contract of ``mma_sync``; returns (row key, PTX opcode)."""
    api = "mma_sync"
    kind = literal_value(dtype, api, "dtype", kind=str, allowed=tuple(MMA_KINDS))
    want_shape, key, ptype = MMA_KINDS[kind]
    shp = literal_value(shape, api, "shape", kind=str, required=False)
    if shp is not None and shp != want_shape:
        raise TypingError(f"{api}: `shape`={shp!r} is not a shape of dtype={kind!r} inputs "
                          f"with f32 accumulation; it is {want_shape!r}")
    _check_regs(api, "a", a, A_REGS, "A")
    _check_regs(api, "b", b, B_REGS, "B")
    _check_acc(api, "c", c)
    row = select(key)
    opcode = row.opcode.format(type=ptype) if ptype else row.opcode
    return key, opcode


def validate_ldmatrix(tile, idx, num, trans) -> tuple[int, bool]:
    api = "ldmatrix"
    size = _check_tile(api, "tile", tile)
    _check_index(api, tile, idx)
    n = literal_value(num, api, "num", allowed=LDMATRIX_NUMS)
    t = bool_constant(trans, api, "trans")
    if t and size != 2:
        raise TypingError(f"{api}: trans=True transposes 16-bit elements; `tile` has "
                          f"{size}-byte elements ({tile.dtype})")
    select("ldmatrix")
    return n, t


def validate_stmatrix(tile, idx, values, trans) -> tuple[int, bool]:
    api = "stmatrix"
    size = _check_tile(api, "tile", tile, writable=True)
    _check_index(api, tile, idx)
    ok = (isinstance(values, types.UniTuple) and len(values) in LDMATRIX_NUMS
          and isinstance(values.dtype, types.Integer) and values.dtype.bitwidth == 32)
    if not ok:
        raise TypingError(f"{api}: `values` must be a tuple of 1, 2 or 4 uint32 registers "
                          f"(one per 8x8 matrix), got {values}")
    t = bool_constant(trans, api, "trans")
    if t and size != 2:
        raise TypingError(f"{api}: trans=True transposes 16-bit elements; `tile` has "
                          f"{size}-byte elements ({tile.dtype})")
    select("stmatrix")
    return len(values), t


def validate_load_b(tile, row, col, layout) -> tuple[int, str]:
    api = "mma_load_b"
    size = _check_tile(api, "tile", tile, ndim=2)
    _check_origin(api, row=row, col=col)
    lay = literal_value(layout, api, "layout", kind=str, allowed=B_LAYOUTS)
    if not (size == 4 and lay == "row"):  # tf32 from a [K, N] tile: plain loads
        select("ldmatrix")
    return size, lay


def validate_store(out, row, col, acc) -> str:
    api = "mma_store"
    ok = isinstance(out, types.Array) and out.ndim == 2 and out.dtype in (
        types.float32, types.float16, types.uint16)
    if not ok:
        raise TypingError(f"{api}: `out` must be a 2-D array of "
                          f"{', '.join(STORE_DTYPES)}, got {out}")
    if not out.mutable:
        raise TypingError(f"{api}: `out` is read-only, got {out}")
    _check_origin(api, row=row, col=col)
    _check_acc(api, "acc", acc)
    if out.dtype == types.uint16:
        select("cvt.rn.bf16.f32")
        return "bf16"
    return str(out.dtype)


# --- lowering --------------------------------------------------------------------


def _lane(builder):
    return sreg(builder, "laneid")


def _check_converged(context, builder, api: str, instr: str) -> None:
    """Checked mode: trap unless all 32 lanes of the warp are active."""
    mask = asm(builder, f"{form('activemask').opcode} $0;", "=r", ret=I32, clobber_memory=False)
    bad = builder.icmp_unsigned("!=", mask, ir.Constant(I32, 0xFFFFFFFF))
    why = _rules.warp_active_mask(mask="0x%08x")
    trap_if(context, builder, bad, api, _rules.warp_not_converged(instr=instr, why=why), [mask])


def _item_ptr(context, builder, api: str, aty, ary, inds, n: int, checked: bool):
    """Pointer to ``ary[inds]`` (intp indices); in checked mode traps when
    the ``n`` elements from there leave the tile or the address is not
    16-byte aligned or not in shared memory."""
    shape = cgutils.unpack_tuple(builder, ary.shape, aty.ndim)
    strides = cgutils.unpack_tuple(builder, ary.strides, aty.ndim)
    ptr = cgutils.get_item_pointer2(context, builder, data=ary.data, shape=shape,
                                    strides=strides, layout=aty.layout, inds=inds)
    if checked:
        scalar = aty.ndim == 1
        last = aty.ndim - 1
        for k, (i, s) in enumerate(zip(inds, shape)):
            if k < last:
                bad = builder.icmp_unsigned(">=", i, s)
            else:
                end = builder.add(i, ir.Constant(i.type, n))
                bad = builder.or_(builder.icmp_signed("<", i, ir.Constant(i.type, 0)),
                                  builder.icmp_signed(">", end, s))
            trap_if(context, builder, bad, api, _vec._rule_index(k, aty.ndim, scalar, n)
                    .replace("`arr`", "`tile`"), [i, s])
        size = itemsize(aty.dtype)
        if aty.layout not in ("C", "F") and n > 1:
            bad = builder.icmp_unsigned("!=", strides[-1], ir.Constant(strides[-1].type, size))
            trap_if(context, builder, bad, api,
                    _rules.last_axis_strided(name="tile", stride="%lld"), [strides[-1]])
        trap_if(context, builder, builder.not_(is_space(builder, ptr, "shared")), api,
                _rules.not_in_space(name="tile", space="shared"))
        addr = builder.ptrtoint(ptr, ir.IntType(64))
        mis = builder.urem(addr, ir.Constant(addr.type, ROW_BYTES))
        trap_if(context, builder, builder.icmp_unsigned("!=", mis, ir.Constant(addr.type, 0)),
                api, _rules.not_aligned(name="tile", align=ROW_BYTES, addr="%p"), [addr])
    return ptr


def _unpack(builder, r, n: int) -> list:
    return [r] if n == 1 else [builder.extract_value(r, i) for i in range(n)]


def _regs_ret(n: int, ty=I32):
    return ty if n == 1 else ir.LiteralStructType([ty] * n)


def _ldmatrix_asm(context, builder, api: str, addr32, n: int, trans: bool, checked: bool):
    opcode = form("ldmatrix").opcode.format(num=f".x{n}", trans=".trans" if trans else "")
    if checked:
        _check_converged(context, builder, api, opcode)
    outs = ", ".join(f"${i}" for i in range(n))
    text = f"{opcode} {{{outs}}}, [${n}];"
    cons = ",".join(["=r"] * n + ["r"])
    r = asm(builder, text, cons, [addr32], ret=_regs_ret(n))
    return _unpack(builder, r, n)


def _intp(context, builder, val, ty):
    return context.cast(builder, val, ty, types.intp)


def _lane_row_ptr(context, builder, api, aty, aval, r, c, checked):
    """Pointer to ``tile[r, c]`` for this lane (r, c intp values)."""
    ary = context.make_array(aty)(context, builder, aval)
    n = ROW_BYTES // itemsize(aty.dtype)
    return _item_ptr(context, builder, api, aty, ary, [r, c], n, checked)


def _const(v):
    return ir.Constant(ir.IntType(64), v)


# --- the intrinsics --------------------------------------------------------------


@intrinsic
def mma_sync(typingctx, a, b, c, dtype, shape=None):
    """Warp-level matrix multiply-accumulate ``D = A @ B + C`` on the
    tensor cores: ``mma.sync.aligned.{shape}.row.col.f32.{dtype}.{dtype}.f32``.

    ``dtype`` (a constant) names the inputs: ``"bf16"`` or ``"f16"``
    (shape m16n8k16: A is 16 x 16, B is 16 x 8) or ``"tf32"`` (m16n8k8: A is
    16 x 8, B is 8 x 8); the accumulation is float32.  ``a`` is the A
    fragment (4 uint32 registers), ``b`` the B fragment (2 uint32), ``c``
    the accumulator (4 float32); returns the new accumulator.  ``shape``,
    if given, must be the shape ``dtype`` implies (for readability).

    Every lane of the warp executes it together (warp-collective); build
    fragments with :func:`mma_load_a` / :func:`mma_load_b` (or
    :func:`ldmatrix`) and :func:`mma_zeros`.

    Example::

        acc = ac.mma_zeros()
        a = ac.mma_load_a(sa, 0, 0)             # sa: 16 x 16 bf16 (uint16) tile
        b = ac.mma_load_b(sb, 0, 0)             # sb: 16 x 8 tile, B[k, n]
        acc = ac.mma_sync(a, b, acc, "bf16")
    """
    key, opcode = validate_mma_sync(a, b, c, dtype, shape)

    def codegen(context, builder, sig, args):
        av = cgutils.unpack_tuple(builder, args[0], A_REGS)
        bv = cgutils.unpack_tuple(builder, args[1], B_REGS)
        cv = cgutils.unpack_tuple(builder, args[2], C_REGS)
        av = [context.cast(builder, v, sig.args[0].dtype, types.uint32) for v in av]
        bv = [context.cast(builder, v, sig.args[1].dtype, types.uint32) for v in bv]
        if _checked._note_compiled():
            _check_converged(context, builder, "mma_sync", opcode)
        # outputs $0..$3, tied accumulator inputs $4..$7, then A and B
        d = ", ".join(f"${i}" for i in range(4))
        ra = ", ".join(f"${8 + i}" for i in range(4))
        rb = ", ".join(f"${12 + i}" for i in range(2))
        tied = ", ".join(f"${4 + i}" for i in range(4))
        text = f"{opcode} {{{d}}}, {{{ra}}}, {{{rb}}}, {{{tied}}};"
        cons = ",".join(["=f"] * 4 + [str(i) for i in range(4)] + ["r"] * 6)
        r = asm(builder, text, cons, [*cv, *av, *bv], ret=_regs_ret(4, F32),
                clobber_memory=False)
        return context.make_tuple(builder, sig.return_type, _unpack(builder, r, 4))

    return types.UniTuple(types.float32, C_REGS)(a, b, c, dtype, shape), codegen


@intrinsic
def ldmatrix(typingctx, tile, idx, num=4, trans=False):
    """Load ``num`` (1, 2 or 4) 8 x 8 matrices of 16-bit elements from
    shared memory into registers: ``ldmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16``.

    Each lane supplies the address of one 16-byte matrix row,
    ``&tile[idx]``: lanes 8i..8i+7 give the 8 rows of matrix i (for
    ``num`` < 4 the higher lanes' addresses are not read but must still be
    valid indices).  Lane ``l`` receives, for each matrix, the two elements
    of row ``l // 4`` at columns ``2 (l % 4)`` and ``+1`` as one uint32
    (``trans=True``: of the transposed matrix).  A ``tile`` of 4-byte
    elements (tf32) is read as 8 x 4 matrices, one element per register
    (no ``trans``).  Returns a tuple of ``num`` uint32.

    Contract: ``tile`` is in shared memory, each lane's 16 bytes are
    inside it and 16-byte aligned (checked mode traps otherwise), and all
    32 lanes execute the call together.

    Example::

        lane = cuda.threadIdx.x % 32
        a = ac.ldmatrix(sa, (lane % 16, 8 * (lane // 16)), 4)   # an A fragment
    """
    n, t = validate_ldmatrix(tile, idx, num, trans)

    def codegen(context, builder, sig, args):
        aty, ity = sig.args[0], sig.args[1]
        ary = context.make_array(aty)(context, builder, args[0])
        if isinstance(ity, types.BaseTuple):
            vals = cgutils.unpack_tuple(builder, args[1], len(ity.types))
            tys = list(ity.types)
        else:
            vals, tys = [args[1]], [ity]
        inds = [_intp(context, builder, v, k) for v, k in zip(vals, tys)]
        checked = _checked._note_compiled()
        ptr = _item_ptr(context, builder, "ldmatrix", aty, ary, inds,
                        ROW_BYTES // itemsize(aty.dtype), checked)
        regs = _ldmatrix_asm(context, builder, "ldmatrix", shared_addr32(builder, ptr), n, t,
                             checked)
        return context.make_tuple(builder, sig.return_type, regs)

    return types.UniTuple(types.uint32, n)(tile, idx, num, trans), codegen


@intrinsic
def stmatrix(typingctx, tile, idx, values, trans=False):
    """Store ``len(values)`` (1, 2 or 4) 8 x 8 matrices of 16-bit elements
    from registers to shared memory (sm_90):
    ``stmatrix.sync.aligned.m8n8.x{num}{.trans}.shared.b16``.

    The inverse of :func:`ldmatrix`: each lane supplies the address of one
    16-byte matrix row, ``&tile[idx]`` (lanes 8i..8i+7 the rows of matrix
    i), and lane ``l``'s register i holds row ``l // 4``, columns
    ``2 (l % 4)`` and ``+1`` of matrix i (``trans=True``: of its transpose).

    Example::

        lane = cuda.threadIdx.x % 32
        ac.stmatrix(sc, (lane % 16, 8 * (lane // 16)), regs)   # regs: 4 uint32
    """
    n, t = validate_stmatrix(tile, idx, values, trans)

    def codegen(context, builder, sig, args):
        aty, ity = sig.args[0], sig.args[1]
        ary = context.make_array(aty)(context, builder, args[0])
        if isinstance(ity, types.BaseTuple):
            vals = cgutils.unpack_tuple(builder, args[1], len(ity.types))
            tys = list(ity.types)
        else:
            vals, tys = [args[1]], [ity]
        inds = [_intp(context, builder, v, k) for v, k in zip(vals, tys)]
        checked = _checked._note_compiled()
        ptr = _item_ptr(context, builder, "stmatrix", aty, ary, inds,
                        ROW_BYTES // itemsize(aty.dtype), checked)
        regs = cgutils.unpack_tuple(builder, args[2], n)
        regs = [context.cast(builder, v, sig.args[2].dtype, types.uint32) for v in regs]
        opcode = form("stmatrix").opcode.format(num=f".x{n}", trans=".trans" if t else "")
        if checked:
            _check_converged(context, builder, "stmatrix", opcode)
        ins = ", ".join(f"${1 + i}" for i in range(n))
        asm(builder, f"{opcode} [$0], {{{ins}}};", ",".join(["r"] * (1 + n)),
            [shared_addr32(builder, ptr), *regs])
        return context.get_dummy_value()

    return types.void(tile, idx, values, trans), codegen


@intrinsic
def mma_zeros(typingctx):
    """A zero accumulator fragment: a tuple of 4 float32 (m16n8 f32).

    Example::

        acc = ac.mma_zeros()
        acc = ac.mma_sync(a, b, acc, "f16")
    """

    def codegen(context, builder, sig, args):
        z = ir.Constant(F32, 0.0)
        return context.make_tuple(builder, sig.return_type, [z] * C_REGS)

    return types.UniTuple(types.float32, C_REGS)(), codegen


@intrinsic
def mma_load_a(typingctx, tile, row, col):
    """The A fragment of :func:`mma_sync` whose origin is ``tile[row, col]``
    (one ``ldmatrix.x4``; the lanes' row addresses are computed here).

    ``tile`` is a shared 2-D array holding A row-major (``tile[m, k]``):
    16-bit elements (bf16 as uint16, or float16) give the 16 x 16 block
    ``tile[row:row+16, col:col+16]`` of an m16n8k16 MMA; float32 (tf32)
    gives the 16 x 8 block of an m16n8k8 MMA.  Each 16-byte row segment
    must be 16-byte aligned (``col`` a multiple of 8 halves or 4 floats and
    a row pitch that is a multiple of 16 bytes) and inside the tile.

    Example::

        a = ac.mma_load_a(sa, 16 * warp_m, k0)
    """
    api = "mma_load_a"
    size = _check_tile(api, "tile", tile, ndim=2)
    _check_origin(api, row=row, col=col)
    select("ldmatrix")

    def codegen(context, builder, sig, args):
        aty = sig.args[0]
        lane = builder.zext(_lane(builder), ir.IntType(64))
        r = builder.add(_intp(context, builder, args[1], sig.args[1]),
                        builder.urem(lane, _const(16)))
        half = builder.udiv(lane, _const(16))
        c = builder.add(_intp(context, builder, args[2], sig.args[2]),
                        builder.mul(half, _const(ROW_BYTES // size)))
        checked = _checked._note_compiled()
        ptr = _lane_row_ptr(context, builder, api, aty, args[0], r, c, checked)
        regs = _ldmatrix_asm(context, builder, api, shared_addr32(builder, ptr), 4, False, checked)
        return context.make_tuple(builder, sig.return_type, regs)

    return types.UniTuple(types.uint32, A_REGS)(tile, row, col), codegen


@intrinsic
def mma_load_b(typingctx, tile, row, col, layout="row"):
    """The B fragment of :func:`mma_sync` whose origin is ``tile[row, col]``.

    ``layout="row"``: ``tile`` holds B as ``tile[k, n]`` (B row-major, as
    in ``C = A @ B``); the fragment is ``tile[row:row+16, col:col+8]`` for
    16-bit elements (``ldmatrix.x2.trans``) or ``tile[row:row+8, col:col+8]``
    for float32 (tf32; two plain shared loads, ldmatrix cannot transpose
    32-bit elements).  ``layout="col"``: ``tile`` holds B transposed,
    ``tile[n, k]`` (PTX's ``.col`` B); the fragment is
    ``tile[row:row+8, col:col+16]`` (tf32: ``col:col+8``), one
    ``ldmatrix.x2``.  Alignment as for :func:`mma_load_a`.

    Example::

        b = ac.mma_load_b(sb, k0, 8 * warp_n)             # sb[k, n]
        b = ac.mma_load_b(sbt, 8 * warp_n, k0, "col")     # sbt[n, k]
    """
    api = "mma_load_b"
    size, lay = validate_load_b(tile, row, col, layout)

    def codegen(context, builder, sig, args):
        aty = sig.args[0]
        lane = builder.zext(_lane(builder), ir.IntType(64))
        r0 = _intp(context, builder, args[1], sig.args[1])
        c0 = _intp(context, builder, args[2], sig.args[2])
        checked = _checked._note_compiled()
        if size == 4 and lay == "row":
            # b0 = B[k0 + l%4, n0 + l/4], b1 = B[k0 + l%4 + 4, n0 + l/4]
            ary = context.make_array(aty)(context, builder, args[0])
            tig = builder.urem(lane, _const(4))
            gid = builder.udiv(lane, _const(4))
            c = builder.add(c0, gid)
            regs = []
            for dk in (0, 4):
                r = builder.add(builder.add(r0, tig), _const(dk))
                p = _item_ptr(context, builder, api, aty, ary, [r, c], 1, False)
                v = builder.load(p)
                regs.append(builder.bitcast(v, I32) if v.type != I32 else v)
            return context.make_tuple(builder, sig.return_type, regs)
        if lay == "row":  # 16-bit tile[k, n]: the transposed 8x8 blocks, rows k0..k0+15
            r = builder.add(r0, builder.urem(lane, _const(16)))
            c = c0
            trans = True
        else:  # tile[n, k]: rows n0..n0+7, the k halves at +0 and +8 halves (+4 floats)
            r = builder.add(r0, builder.urem(lane, _const(8)))
            k_half = builder.urem(builder.udiv(lane, _const(8)), _const(2))
            c = builder.add(c0, builder.mul(k_half, _const(ROW_BYTES // size)))
            trans = False
        ptr = _lane_row_ptr(context, builder, api, aty, args[0], r, c, checked)
        regs = _ldmatrix_asm(context, builder, api, shared_addr32(builder, ptr), 2, trans, checked)
        return context.make_tuple(builder, sig.return_type, regs)

    return types.UniTuple(types.uint32, B_REGS)(tile, row, col, layout), codegen


def _bf16_bits(builder, v):
    text = f"{form('cvt.rn.bf16.f32').opcode} $0, $1;"
    fnty = ir.FunctionType(I16, [F32])
    return builder.call(ir.InlineAsm(fnty, text, "=h,f", side_effect=False), [v])


@intrinsic
def mma_store(typingctx, out, row, col, acc):
    """Store the 16 x 8 accumulator fragment ``acc`` to
    ``out[row:row+16, col:col+8]``, skipping elements outside ``out``
    (edges that are not multiples of the tile).

    ``out`` is a 2-D global or shared array of float32, float16 (rounded
    to nearest even) or uint16 holding bf16 bits (``cvt.rn.bf16.f32``).
    Lane ``l`` writes rows ``row + l // 4`` and ``+ 8``, columns
    ``col + 2 (l % 4)`` and ``+ 1``.  Not collective: each lane stores its
    own four elements.

    Example::

        ac.mma_store(C, 16 * tile_m, 8 * tile_n, acc)     # C: float32[M, N]
    """
    kind = validate_store(out, row, col, acc)

    def codegen(context, builder, sig, args):
        oty = sig.args[0]
        ary = context.make_array(oty)(context, builder, args[0])
        shape = cgutils.unpack_tuple(builder, ary.shape, 2)
        strides = cgutils.unpack_tuple(builder, ary.strides, 2)
        vals = cgutils.unpack_tuple(builder, args[3], C_REGS)
        lane = builder.zext(_lane(builder), ir.IntType(64))
        r0 = builder.add(_intp(context, builder, args[1], sig.args[1]),
                         builder.udiv(lane, _const(4)))
        c0 = builder.add(_intp(context, builder, args[2], sig.args[2]),
                         builder.mul(builder.urem(lane, _const(4)), _const(2)))
        for i, v in enumerate(vals):
            r = builder.add(r0, _const(8 * (i // 2)))
            c = builder.add(c0, _const(i % 2))
            inside = builder.and_(builder.icmp_unsigned("<", r, shape[0]),
                                  builder.icmp_unsigned("<", c, shape[1]))
            with builder.if_then(inside, likely=True):
                p = cgutils.get_item_pointer2(context, builder, data=ary.data, shape=shape,
                                              strides=strides, layout=oty.layout, inds=[r, c])
                if kind == "float32":
                    builder.store(v, p)
                elif kind == "float16":
                    h = builder.fptrunc(v, HALF)
                    builder.store(h if p.type.pointee == HALF else builder.bitcast(h, I16), p)
                else:
                    builder.store(_bf16_bits(builder, v), p)
        return context.get_dummy_value()

    return types.void(out, row, col, acc), codegen


@intrinsic
def f32_to_bf16(typingctx, x):
    """Round a float to bf16 (nearest even, ``cvt.rn.bf16.f32``) and return
    its bits as a uint16: how a kernel writes an element of a bf16 array
    (which the package holds as uint16).

    Example::

        Y[i] = ac.f32_to_bf16(2.0 * ac.bf16_to_f32(X[i]))
    """
    if not isinstance(getattr(x, "literal_type", x), (types.Float, types.Integer)):
        raise TypingError(f"f32_to_bf16: `x` must be a number, got {x}")
    select("cvt.rn.bf16.f32")

    def codegen(context, builder, sig, args):
        v = context.cast(builder, args[0], sig.args[0], types.float32)
        return _bf16_bits(builder, v)

    return types.uint16(x), codegen


@intrinsic
def bf16_to_f32(typingctx, h):
    """The float32 value of a bf16 element held as uint16 bits (exact: a
    bf16 is the upper half of a float32), how a kernel reads a bf16 array.

    Example::

        x = ac.bf16_to_f32(X[i])        # X: uint16 view of a torch.bfloat16 tensor
    """
    # a uint16 element, or a constant that fits one (the simulator sees every int as one)
    ok = isinstance(h, types.Integer) and h.bitwidth == 16 and not h.signed
    ok = ok or (isinstance(h, types.IntegerLiteral) and 0 <= h.literal_value <= 0xFFFF)
    if not ok:
        raise TypingError(f"bf16_to_f32: `h` must be a uint16 (the bits of a bf16 element), got {h}")

    def codegen(context, builder, sig, args):
        v = context.cast(builder, args[0], sig.args[0], types.uint16)
        w = builder.shl(builder.zext(v, I32), ir.Constant(I32, 16))
        return builder.bitcast(w, F32)

    return types.float32(h), codegen


__all__ = ["bf16_to_f32", "f32_to_bf16", "ldmatrix", "mma_load_a", "mma_load_b", "mma_store",
           "mma_sync", "mma_zeros", "stmatrix"]

# --- what checked mode checks here ---------------------------------------------------

for _api in ("ldmatrix", "stmatrix", "mma_load_a", "mma_load_b"):
    _checked.declare(_api, "tile", _rules.not_in_space, name="tile", space="shared")
    _checked.declare(_api, "tile", _rules.not_aligned, name="tile", align=ROW_BYTES, addr="…")
    _checked.declare(_api, "idx", "each lane's 16-byte row lies inside `tile`")
for _api in ("mma_sync", "ldmatrix", "stmatrix", "mma_load_a", "mma_load_b"):
    _checked.declare(_api, "(warp)", _rules.warp_not_converged, instr="…",
                     why="the active mask is …")
