"""Tensor (TMA) copies (sm_90): boxes of a tensor described by a map.

The map is an :class:`numba_asynccopy.TensorMap` built on the host and
passed as a kernel argument; in the kernel it is a 1-D uint64 array whose
first 128 bytes are the map (its metadata words are read by checked mode).
The tensor's rank is known at compile time from the length of ``coords``.

``coords`` follow the array's axis order, as the map's ``box`` does:
``coords=(r, c)`` names the box ``array[r:r + box[0], c:c + box[1]]``;
PTX lists them innermost first and the lowering reverses them.
Coordinates are signed 32-bit element indices and may lie outside the
tensor: those elements load as the map's ``oob_fill`` and are not stored.

Because the map sits in global memory, the tensormap proxy must be fenced
before the copy engine reads it: every intrinsic here emits
``fence.proxy.tensormap::generic.acquire.sys [map], 128`` before its
instruction unless ``fence=False`` (then call :func:`fence_proxy_tensormap`
yourself once, before the first use in the issuing thread).
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from numba.core import types

from . import _rules
from . import checked as _checked
from ._compat import TypingError, intrinsic
from ._forms import form, select
from ._lowering import I32, I64, as_i64, asm, generic_addr64, instruction, shared_addr32, trap_if
from ._regions import View, barrier_addr32, check_barrier, literal_value
from .bulk import (
    TENSOR_REDUCE_TYPES,
    REDUCE_OPS,
    bool_constant,
    check_barrier_value,
    check_bulk_view,
    check_mask,
    check_policy,
    check_space,
    mask_value,
    reduce_type,
    total_bytes,
)
from .host._tensor_spec import (
    BUFFER_WORDS,
    DTYPE_CODES,
    MAGIC,
    W_BOX_BYTES,
    W_DTYPE,
    W_ITEMSIZE,
    W_MAGIC,
    W_RANK,
    W_IM2COL_BOX,
    W_IM2COL_CORNERS,
    W_MODE,
    W_SMEM_ALIGN,
)

FENCE_SCOPES = ("cta", "cluster", "gpu", "sys")

# --- compile time -----------------------------------------------------------


def check_tensor_map(api: str, ty) -> None:
    if not (isinstance(ty, types.Array) and ty.ndim == 1 and ty.dtype == types.uint64):
        raise TypingError(
            f"{api}: `tensor_map` must be an ac.TensorMap passed as a kernel argument "
            f"(a 1-D uint64 device array inside the kernel), got {ty}"
        )


def check_coords(api: str, ty, *, store: bool = False) -> int:
    """The rank a coords tuple gives: a tuple of 1..5 integers.  Constants
    must fit the instruction's signed 32-bit coordinates, and a store's or a
    reduction's must be >= 0 (the rule checked mode checks at run time)."""
    if isinstance(ty, types.BaseTuple):
        elems = list(ty)
        if not 1 <= len(elems) <= 5:
            raise TypingError(
                f"{api}: `coords` has {len(elems)} entries; a tensor copy is 1-D to 5-D"
            )
        for i, e in enumerate(elems):
            if not isinstance(getattr(e, "literal_type", e), types.Integer):
                raise TypingError(f"{api}: `coords`[{i}] must be an integer, got {e}")
            if isinstance(e, types.IntegerLiteral):
                v = e.literal_value
                if not -(1 << 31) <= v < 1 << 31:
                    raise TypingError(f"{api}: `coords`[{i}]={v} is outside -2**31..2**31-1 "
                                      "(tensor coordinates are signed 32-bit)")
                if store and v < 0:
                    raise TypingError(f"{api}: {_rules.tensor_negative_coord(axis=i, coord=v)}")
        return len(elems)
    raise TypingError(
        f"{api}: `coords` must be a tuple of 1..5 integer element indices in the array's "
        f"axis order (for a 1-D tensor write `(x,)`), got {ty}"
    )


def check_tile_view(api: str, name: str, ty) -> None:
    check_bulk_view(api, name, ty)


@dataclass(frozen=True)
class TensorOptions:
    rank: int
    fence: bool
    cache_policy: bool
    multicast: bool = False
    op: str | None = None
    ptx_type: str | None = None
    im2col: bool = False  # a store or reduction in .im2col_no_offs mode


def _fence(fence) -> bool:
    return bool_constant(fence, "tensor copy", "fence")


def validate_load(dst, tensor_map, coords, mbar, multicast_mask, cache_policy, fence) -> TensorOptions:
    api = "cp_async_bulk_tensor_load"
    select("cp.async.bulk.tensor.g2s")
    check_tile_view(api, "dst", dst)
    check_tensor_map(api, tensor_map)
    rank = check_coords(api, coords)
    check_barrier(api, "mbar", mbar)
    do_fence = bool_constant(fence, api, "fence")
    if do_fence:
        select("fence.proxy.tensormap")
    return TensorOptions(rank=rank, fence=do_fence,
                         cache_policy=check_policy(api, cache_policy),
                         multicast=check_mask(api, multicast_mask))


def validate_store(api, tensor_map, coords, src, cache_policy, fence, op=None, bf16=None,
                   im2col: bool = False) -> TensorOptions:
    key = "cp.reduce.async.bulk.tensor" if op is not None else "cp.async.bulk.tensor.s2g"
    select(key + (".im2col" if im2col else ""))
    check_tensor_map(api, tensor_map)
    # an im2col column block may start left of the tensor (a negative lower corner)
    rank = check_coords(api, coords, store=not im2col)
    if im2col and rank < 3:
        raise TypingError(f"{api}: `coords` has {rank} entries; an im2col map is 3-D to 5-D: "
                          "(n, [d, [h,]] w, c)")
    check_tile_view(api, "src", src)
    do_fence = bool_constant(fence, api, "fence")
    if do_fence:
        select("fence.proxy.tensormap")
    o = dict(rank=rank, fence=do_fence,
             cache_policy=check_policy(api, cache_policy))
    if op is None:
        return TensorOptions(im2col=im2col, **o)
    name = literal_value(op, api, "op", kind=str, allowed=REDUCE_OPS)
    observed = TENSOR_REDUCE_OBSERVED.get((name, str(src.dtype)))
    if observed is not None and not bool_constant(bf16, api, "bf16"):
        raise TypingError(f"{api}: op={name!r} on {src.dtype} elements is refused: {observed}")
    t = reduce_type(api, name, src.dtype, bool_constant(bf16, api, "bf16"), TENSOR_REDUCE_TYPES)
    return TensorOptions(op=name, ptx_type=t, im2col=im2col, **o)


_PROBE = "benchmarks/h200-2026-12-01/reduce64/ (one process per form)"
_INT64_MAP = ("on the H200 (driver 580) this reduction through an INT64 tensor map failed the "
              "launch with CUDA_ERROR_ILLEGAL_INSTRUCTION, while the same kernel through a UINT64 "
              f"map matched numpy ({_PROBE}); the bits are the same, so build the map over a "
              "uint64 view (ac.TensorMap(x.view(np.uint64), box)) and reduce a uint64 tile")
_INC_DEC_64 = ("PTX lists inc/dec tensor reductions for .u32 only, and on the H200 (driver 580) "
               "the 64-bit forms failed the launch with CUDA_ERROR_ILLEGAL_INSTRUCTION through "
               f"UINT64 and INT64 maps alike ({_PROBE})")
_F64 = ("PTX lists no .f64 tensor reduction; on the H200 (driver 580) min/max/inc/dec/and/or/xor "
        "through a FLOAT64 map failed the launch with CUDA_ERROR_ILLEGAL_INSTRUCTION and add "
        f"matched numpy, but an undocumented form stays refused ({_PROBE}); "
        "cp_reduce_async_bulk_s2g documents add.f64")
#: (op, tile dtype) pairs refused for what the GPU did, with what was observed and how
TENSOR_REDUCE_OBSERVED = {
    **{(op, "int64"): _INT64_MAP for op in ("add", "and", "or", "xor")},
    **{(op, dt): _INC_DEC_64 for op in ("inc", "dec") for dt in ("int64", "uint64")},
    **{(op, "float64"): _F64 for op in REDUCE_OPS},
}


def _coords_text(first: int, rank: int) -> str:
    return "{" + ", ".join(f"${first + i}" for i in range(rank)) + "}"


def ptx_tensor_load(o: TensorOptions) -> tuple[str, str]:
    """Operands: dst(r), map(l), coords innermost first (r...), mbar(r), [mask(h)], [policy(l)]."""
    key = "cp.async.bulk.tensor.g2s.multicast" if o.multicast else "cp.async.bulk.tensor.g2s"
    opcode = form(key).opcode.format(rank=o.rank, mode=".tile",
                                     hint=".L2::cache_hint" if o.cache_policy else "")
    n = 2 + o.rank
    ops = ["[$0]", f"[$1, {_coords_text(2, o.rank)}]", f"[${n}]"]
    cons = ["r", "l"] + ["r"] * o.rank + ["r"]
    return instruction(opcode, ops, cons, mask=o.multicast, policy=o.cache_policy)


def ptx_tensor_store(o: TensorOptions) -> tuple[str, str]:
    """Operands: map(l), coords innermost first (r...), src(r), [policy(l)]."""
    hint = ".L2::cache_hint" if o.cache_policy else ""
    mode, suffix = (".im2col_no_offs", ".im2col") if o.im2col else (".tile", "")
    if o.op is None:
        opcode = form("cp.async.bulk.tensor.s2g" + suffix).opcode.format(rank=o.rank, mode=mode,
                                                                         hint=hint)
    else:
        opcode = form("cp.reduce.async.bulk.tensor" + suffix).opcode.format(
            rank=o.rank, op=o.op, mode=mode, hint=hint)
    ops = [f"[$0, {_coords_text(1, o.rank)}]", f"[${1 + o.rank}]"]
    cons = ["l"] + ["r"] * o.rank + ["r"]
    return instruction(opcode, ops, cons, policy=o.cache_policy)


def ptx_fence(scope: str = "sys") -> tuple[str, str]:
    return f"{form('fence.proxy.tensormap').opcode.format(scope=scope)} [$0], 128;", "l"


# --- run time ---------------------------------------------------------------


def coords_values(context, builder, ty, val, api: str | None = None):
    """The coordinates as i32, innermost first (PTX order).  With ``api``, in
    checked mode, a wider coordinate outside the signed 32-bit range traps
    (checked on the full-width value, before the cast truncates it)."""
    vals = []
    for i in range(len(ty)):
        v, t = builder.extract_value(val, i), ty[i]
        if api is not None and _checked._note_compiled() and isinstance(t, types.Integer) \
                and (t.bitwidth > 32 or (t.bitwidth == 32 and not t.signed)):
            wide = builder.sext(v, I64) if t.bitwidth < 64 and t.signed else \
                builder.zext(v, I64) if t.bitwidth < 64 else v
            lo, hi = ir.Constant(I64, -(1 << 31)), ir.Constant(I64, (1 << 31) - 1)
            if t.signed:
                bad = builder.or_(builder.icmp_signed("<", wide, lo), builder.icmp_signed(">", wide, hi))
            else:
                bad = builder.icmp_unsigned(">", wide, hi)
            fmt = "%lld" if t.signed else "%llu"
            trap_if(context, builder, bad, api,
                    f"`coords`[{i}]={fmt} is outside -2**31..2**31-1 (tensor coordinates are "
                    "signed 32-bit)", [wide])
        vals.append(context.cast(builder, v, t, types.int32))
    return list(reversed(vals))


def emit_fence(builder, map_addr, scope: str = "sys") -> None:
    text, cons = ptx_fence(scope)
    asm(builder, text, cons, [map_addr])


def check_c_contiguous(context, builder, api: str, v: View) -> None:
    """Checked mode: a view whose type does not promise C order has it."""
    if v.ty.layout == "C":
        return
    expect = v.const(v.itemsize)
    one = v.const(1)
    for axis in range(v.ty.ndim - 1, -1, -1):
        bad = builder.and_(builder.icmp_unsigned("!=", v.strides[axis], expect),
                           builder.icmp_unsigned(">", v.shape[axis], one))
        trap_if(context, builder, bad, api,
                _rules.tensor_not_dense(name=v.name, axis=axis, stride="%lld", expect="%lld"),
                [v.strides[axis], expect])
        expect = builder.mul(expect, v.shape[axis])


def check_map_and_tile(context, builder, api: str, m: View, rank: int, tile: View | None,
                       dtype_code: int | None = None, mode: int = 0) -> None:
    """Checked mode: the map buffer is a TensorMap of this rank and load mode
    (0 tiled, 1 im2col), and the shared tile (if any: a prefetch has none)
    matches its box (bytes, element size) and alignment."""
    c = m.const
    short = builder.icmp_signed("<", m.shape[0], c(BUFFER_WORDS))
    trap_if(context, builder, short, api,
            _rules.tensor_map_words(words="%lld", need=BUFFER_WORDS), [m.shape[0]])

    def word(i):
        return builder.load(builder.gep(m.data, [ir.Constant(I64, i)]))

    magic = word(W_MAGIC)
    trap_if(context, builder, builder.icmp_unsigned("!=", magic, ir.Constant(I64, MAGIC)), api,
            _rules.tensor_map_magic())
    r = word(W_RANK)
    trap_if(context, builder, builder.icmp_unsigned("!=", r, ir.Constant(I64, rank)), api,
            _rules.tensor_rank(rank=rank, map_rank="%lld"), [r])
    md = word(W_MODE)
    trap_if(context, builder, builder.icmp_unsigned("!=", md, ir.Constant(I64, mode)), api,
            _rules.tensor_map_mode(mode="%lld", need=mode), [md])
    if tile is None:
        return
    isz = word(W_ITEMSIZE)
    trap_if(context, builder, builder.icmp_unsigned("!=", isz, ir.Constant(I64, tile.itemsize)), api,
            _rules.tensor_itemsize(name=tile.name, itemsize=tile.itemsize, map_itemsize="%lld"),
            [isz])
    box = word(W_BOX_BYTES)
    nbytes = builder.zext(total_bytes(builder, tile), I64) if tile.intp != I64 else total_bytes(builder, tile)
    trap_if(context, builder, builder.icmp_unsigned("!=", box, nbytes), api,
            _rules.tensor_box_bytes(name=tile.name, nbytes="%lld", box="%lld"), [nbytes, box])
    align = word(W_SMEM_ALIGN)
    addr = builder.zext(shared_addr32(builder, tile.data), I64)
    mis = builder.urem(addr, align)
    trap_if(context, builder, builder.icmp_unsigned("!=", mis, ir.Constant(I64, 0)), api,
            _rules.tensor_smem_align(name=tile.name, addr="0x%llx", align="%lld"), [addr, align])
    if dtype_code is not None:
        code = word(W_DTYPE)
        trap_if(context, builder, builder.icmp_unsigned("!=", code, ir.Constant(I64, dtype_code)), api,
                _rules.tensor_dtype(name=tile.name, code=dtype_code, map_code="%lld"), [code])
    check_c_contiguous(context, builder, api, tile)


def check_inner_coord(context, builder, api: str, m: View, inner) -> None:
    """Checked mode: the innermost coordinate starts on a 16-byte boundary.

    Measured on the H200: a tile load or store whose innermost coordinate
    times the element size is not a multiple of 16 bytes fails the launch
    with CUDA_ERROR_ILLEGAL_INSTRUCTION.
    """
    isz = builder.load(builder.gep(m.data, [ir.Constant(I64, W_ITEMSIZE)]))
    off = builder.mul(builder.sext(inner, I64), isz)
    mis = builder.and_(off, ir.Constant(I64, 15))
    trap_if(context, builder, builder.icmp_unsigned("!=", mis, ir.Constant(I64, 0)), api,
            _rules.tensor_inner_coord(coord="%d", itemsize="%lld"), [inner, isz])


def _map_addr(context, builder, ty, val):
    m = View(context, builder, ty, val, "tensor_map")
    return m, generic_addr64(builder, m.data)


# --- intrinsics ---------------------------------------------------------------


@intrinsic
def cp_async_bulk_tensor_load(typingctx, dst, tensor_map, coords, mbar, *, multicast_mask=None,
                              cache_policy=None, fence=True):
    """Load the box of ``tensor_map`` at ``coords`` into ``dst`` (shared).

    PTX: ``cp.async.bulk.tensor.Nd.shared::cluster.global.tile
    .mbarrier::complete_tx::bytes{.multicast::cluster}{.L2::cache_hint}``
    (sm_90, PTX ISA 8.0; ptxas advises sm_90a for multicast).

    - ``dst``: the shared tile, C-contiguous, exactly one box
      (``tensor_map.box_bytes`` bytes), aligned to
      ``tensor_map.smem_alignment`` (128; 1024 for 128-byte swizzle).
    - ``coords``: tuple of 1..5 integers in the array's axis order; its
      length is the map's rank.  The innermost coordinate times the element
      size must be a multiple of 16 bytes (negative and out-of-bounds
      coordinates are fine): on the H200 anything else fails the launch
      with an illegal instruction, so checked mode traps on it.
    - ``mbar``: completes ``box_bytes`` transaction bytes on this barrier
      (arm it with ``mbarrier_arrive_expect_tx``).  Out-of-bounds elements
      still count: a box always delivers ``box_bytes``.
    - ``multicast_mask``: the box lands at ``dst``'s offset in every CTA of
      the cluster named by the mask, completing on each one's barrier.
    - ``cache_policy``: uint64 from :func:`createpolicy_fractional`.
    - ``fence``: emit the tensormap proxy fence first (see the module notes).

    Issue it from one thread.  Checked mode traps on a buffer that is not an
    ``ac.TensorMap``, a rank/element-size/box-size mismatch, a misaligned
    or non-contiguous tile, and a bad multicast mask.

    Example::

        if cuda.threadIdx.x == 0:
            ac.mbarrier_arrive_expect_tx(bar, 64 * 32 * 4)
            ac.cp_async_bulk_tensor_load(tile, tmap, (row0, col0), bar)
        ac.mbarrier_wait_parity(bar, 0)
    """
    api = "cp_async_bulk_tensor_load"
    o = validate_load(dst, tensor_map, coords, mbar, multicast_mask, cache_policy, fence)
    sig = types.void(dst, tensor_map, coords, mbar, multicast_mask, cache_policy, fence)
    text, constraints = ptx_tensor_load(o)

    def codegen(context, builder, sig, args):
        d = View(context, builder, sig.args[0], args[0], "dst")
        m, maddr = _map_addr(context, builder, sig.args[1], args[1])
        checked = _checked._note_compiled()
        if checked:
            check_space(context, builder, api, d, "shared")
            check_space(context, builder, api, m, "global")
            check_barrier_value(context, builder, api, sig.args[3], args[3])
            check_map_and_tile(context, builder, api, m, o.rank, d)
        extra = []
        if o.multicast:
            extra.append(mask_value(context, builder, sig.args[4], args[4], api, checked))
        if o.cache_policy:
            extra.append(as_i64(context, builder, args[5], sig.args[5]))
        if o.fence:
            emit_fence(builder, maddr)
        bar = barrier_addr32(context, builder, sig.args[3], args[3])
        cs = coords_values(context, builder, sig.args[2], args[2], api)
        if checked:
            check_inner_coord(context, builder, api, m, cs[0])
        asm(builder, text, constraints, [shared_addr32(builder, d.data), maddr] + cs + [bar] + extra)
        return context.get_dummy_value()

    return sig, codegen


def _lower_store(context, builder, sig, args, o: TensorOptions, api: str, policy_at: int, fence_at: int,
                 dtype_code=None):
    m, maddr = _map_addr(context, builder, sig.args[0], args[0])
    s = View(context, builder, sig.args[2], args[2], "src")
    if _checked._note_compiled():
        check_space(context, builder, api, s, "shared")
        check_space(context, builder, api, m, "global")
        check_map_and_tile(context, builder, api, m, o.rank, s, dtype_code, mode=int(o.im2col))
    extra = [as_i64(context, builder, args[policy_at], sig.args[policy_at])] if o.cache_policy else []
    if o.fence:
        emit_fence(builder, maddr)
    text, constraints = ptx_tensor_store(o)
    cs = coords_values(context, builder, sig.args[1], args[1], api)
    if _checked._note_compiled() and o.im2col:
        check_inner_coord(context, builder, api, m, cs[0])
        # Measured on the H200: a store or reduction through a map with a
        # nonzero pixel-box corner fails the launch with an illegal instruction
        corners = builder.load(builder.gep(m.data, [ir.Constant(I64, W_IM2COL_CORNERS)]))
        trap_if(context, builder, builder.icmp_unsigned("!=", corners, ir.Constant(I64, 0)), api,
                _rules.im2col_store_corners(), [])
        check_im2col_start(context, builder, api, m, cs)
    elif _checked._note_compiled():
        check_inner_coord(context, builder, api, m, cs[0])
        # Measured on the H200: a store or reduce at a negative coordinate
        # fails the launch with an illegal instruction (loads zero-fill).
        for axis, c in enumerate(reversed(cs)):
            trap_if(context, builder, builder.icmp_signed("<", c, ir.Constant(c.type, 0)), api,
                    _rules.tensor_negative_coord(axis=axis, coord="%d"), [c])
    asm(builder, text, constraints, [maddr] + cs + [shared_addr32(builder, s.data)] + extra)
    return context.get_dummy_value()


@intrinsic
def cp_async_bulk_tensor_store(typingctx, tensor_map, coords, src, *, cache_policy=None, fence=True):
    """Store ``src`` (shared tile) into the box of ``tensor_map`` at ``coords``.

    Coordinates must be >= 0 and the innermost one a multiple of 16 bytes
    (measured on the H200: otherwise the launch fails with an illegal
    instruction; checked mode traps first).  Parts of the box past the far
    edges are not written.

    PTX: ``cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group
    {.L2::cache_hint}`` (sm_90, PTX ISA 8.0).  Elements of the box outside
    the tensor are not written.  Tile rules as for
    :func:`cp_async_bulk_tensor_load`.

    Write the tile, ``ac.fence_proxy_async("shared::cta")``,
    ``cuda.syncthreads()``, then one thread stores and completes the bulk
    group (:func:`bulk_commit_group`, :func:`bulk_wait_group`).

    Example::

        ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:
            ac.cp_async_bulk_tensor_store(tmap_out, (row0, col0), tile)
            ac.bulk_commit_group()
            ac.bulk_wait_group(0)
    """
    api = "cp_async_bulk_tensor_store"
    o = validate_store(api, tensor_map, coords, src, cache_policy, fence)
    sig = types.void(tensor_map, coords, src, cache_policy, fence)

    def codegen(context, builder, sig, args):
        return _lower_store(context, builder, sig, args, o, api, 3, 4)

    return sig, codegen


_REDUCE_DTYPE_CODE = {"f16": "float16", "bf16": "bfloat16", "f32": "float32",
                      "u32": "uint32", "s32": "int32", "u64": "uint64", "s64": "int64"}


@intrinsic
def cp_reduce_async_bulk_tensor(typingctx, tensor_map, coords, src, op, *, bf16=False,
                                cache_policy=None, fence=True):
    """Reduce ``src`` (shared tile) into the box of ``tensor_map`` at ``coords``.

    PTX: ``cp.reduce.async.bulk.tensor.Nd.global.shared::cta.op.tile
    .bulk_group`` (sm_90, PTX ISA 8.0); the element type is the map's.
    ``op`` (constant): add (float16, bfloat16, float32, int32, uint32,
    uint64), min/max (float16, bfloat16, int32, uint32, int64, uint64),
    inc/dec (uint32), and/or/xor (int32, uint32, uint64); other pairs are
    compile-time errors, those the H200 refused saying what it did
    (add/and/or/xor through an int64 map: an illegal instruction, so use a
    uint64 view of the tensor).  ``src``'s dtype stands for the map's;
    checked mode compares them.  ``bf16=True`` with an int16/uint16 tile for a
    ``TensorMap(..., dtype="bfloat16")``.  Completion as for
    :func:`cp_async_bulk_tensor_store`.

    Example::

        if cuda.threadIdx.x == 0:
            ac.cp_reduce_async_bulk_tensor(tmap_acc, (r, c), tile, "add")
            ac.bulk_commit_group()
            ac.bulk_wait_group(0)
    """
    api = "cp_reduce_async_bulk_tensor"
    o = validate_store(api, tensor_map, coords, src, cache_policy, fence, op=op, bf16=bf16)
    sig = types.void(tensor_map, coords, src, op, bf16, cache_policy, fence)
    t = o.ptx_type
    if t in ("b32", "b64"):  # bitwise ops: the map holds the view's own integer type
        code = DTYPE_CODES[str(src.dtype)]
    else:
        code = DTYPE_CODES[_REDUCE_DTYPE_CODE[t]]

    def codegen(context, builder, sig, args):
        return _lower_store(context, builder, sig, args, o, api, 5, 6, dtype_code=code)

    return sig, codegen


@intrinsic
def cp_async_bulk_tensor_store_im2col(typingctx, tensor_map, coords, src, *, cache_policy=None,
                                      fence=True):
    """Store ``src`` (shared, one im2col column block) back along the
    traversal of an im2col load, without offsets.

    PTX: ``cp.async.bulk.tensor.Nd.global.shared::cta.im2col_no_offs
    .bulk_group{.L2::cache_hint} [map, {coords}], [src]`` (N = 3, 4, 5;
    sm_90, PTX ISA 8.0).

    - ``tensor_map``: an :meth:`ac.TensorMap.im2col <numba_asynccopy.TensorMap.im2col>` map.
    - ``src``: C-contiguous ``(pixels_per_column, channels_per_pixel)``
      (``tensor_map.box_bytes`` bytes), aligned to ``tensor_map.smem_alignment``.
    - ``coords``: ``(n, [d, [h,]] w, c)`` as for
      :func:`cp_async_bulk_tensor_load_im2col`: pixel ``i`` of ``src`` goes
      to the ``i``-th position of the bounding-box traversal from there
      (``numba_asynccopy.host.im2col.numpy_im2col_store``); positions and
      channels outside the tensor are not written.

    Checked mode (and the simulator, with the same words) traps on a map
    that is not an im2col map of this rank, a tile that does not match its
    box, a misaligned first channel and a first pixel outside the bounding
    box (the load's rules).  Completion as for
    :func:`cp_async_bulk_tensor_store`.

    Example::

        ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:
            ac.cp_async_bulk_tensor_store_im2col(tmap, (n, p - 1, q - 1, c0), tile)
            ac.bulk_commit_group()
            ac.bulk_wait_group(0)
    """
    api = "cp_async_bulk_tensor_store_im2col"
    o = validate_store(api, tensor_map, coords, src, cache_policy, fence, im2col=True)
    sig = types.void(tensor_map, coords, src, cache_policy, fence)

    def codegen(context, builder, sig, args):
        return _lower_store(context, builder, sig, args, o, api, 3, 4)

    return sig, codegen


@intrinsic
def cp_reduce_async_bulk_tensor_im2col(typingctx, tensor_map, coords, src, op, *, bf16=False,
                                       cache_policy=None, fence=True):
    """Reduce ``src`` (shared, one im2col column block) into the tensor
    along the traversal of an im2col load, without offsets.

    PTX: ``cp.reduce.async.bulk.tensor.Nd.global.shared::cta.op
    .im2col_no_offs.bulk_group{.L2::cache_hint}`` (N = 3, 4, 5; sm_90, PTX
    ISA 8.0).  ``op``, element types, the refused pairs and ``bf16`` as for
    :func:`cp_reduce_async_bulk_tensor`; ``coords`` and ``src`` as for
    :func:`cp_async_bulk_tensor_store_im2col`.

    Example::

        if cuda.threadIdx.x == 0:
            ac.cp_reduce_async_bulk_tensor_im2col(tmap, (n, h0, w0, c0), tile, "add")
            ac.bulk_commit_group()
            ac.bulk_wait_group(0)
    """
    api = "cp_reduce_async_bulk_tensor_im2col"
    o = validate_store(api, tensor_map, coords, src, cache_policy, fence, op=op, bf16=bf16,
                       im2col=True)
    sig = types.void(tensor_map, coords, src, op, bf16, cache_policy, fence)
    t = o.ptx_type
    if t in ("b32", "b64"):
        code = DTYPE_CODES[str(src.dtype)]
    else:
        code = DTYPE_CODES[_REDUCE_DTYPE_CODE[t]]

    def codegen(context, builder, sig, args):
        return _lower_store(context, builder, sig, args, o, api, 5, 6, dtype_code=code)

    return sig, codegen


@intrinsic
def prefetch_tensormap(typingctx, tensor_map, *, fence=True):
    """Prefetch the tensor map itself into the cache the copy engine reads.

    PTX: ``prefetch.tensormap [map];`` (sm_90, PTX ISA 8.0), after the
    tensormap proxy fence unless ``fence=False``.

    Example::

        if cuda.threadIdx.x == 0:
            ac.prefetch_tensormap(tmap)
    """
    api = "prefetch_tensormap"
    f = form("prefetch.tensormap")
    check_tensor_map(api, tensor_map)
    do_fence = bool_constant(fence, api, "fence")
    if do_fence:
        select("fence.proxy.tensormap")

    def codegen(context, builder, sig, args):
        m, maddr = _map_addr(context, builder, sig.args[0], args[0])
        if _checked._note_compiled():
            check_space(context, builder, api, m, "global")
        if do_fence:
            emit_fence(builder, maddr)
        asm(builder, f"{f.opcode} [$0];", "l", [maddr])
        return context.get_dummy_value()

    return types.void(tensor_map, fence), codegen


@intrinsic
def fence_proxy_tensormap(typingctx, tensor_map, scope="sys"):
    """Acquire-fence the tensormap proxy on the map before the copy engine reads it.

    PTX: ``fence.proxy.tensormap::generic.acquire.{cta,cluster,gpu,sys}
    [map], 128;`` (sm_90, PTX ISA 8.3).  The tensor intrinsics emit it
    themselves (``.sys``: the map was written from the host); call it once
    yourself when you pass ``fence=False`` to them in a loop.

    Example::

        ac.fence_proxy_tensormap(tmap)
        for k in range(n):
            ac.cp_async_bulk_tensor_load(tile[k % 2], tmap, (0, 32 * k), bars[k % 2:],
                                         fence=False)
    """
    api = "fence_proxy_tensormap"
    select("fence.proxy.tensormap")
    check_tensor_map(api, tensor_map)
    sc = literal_value(scope, api, "scope", kind=str, allowed=FENCE_SCOPES)

    def codegen(context, builder, sig, args):
        m, maddr = _map_addr(context, builder, sig.args[0], args[0])
        if _checked._note_compiled():  # the fence names a global (tensormap proxy) address
            check_space(context, builder, api, m, "global")
        emit_fence(builder, maddr, sc)
        return context.get_dummy_value()

    return types.void(tensor_map, scope), codegen


@intrinsic
def cp_async_bulk_prefetch_tensor(typingctx, tensor_map, coords, *, cache_policy=None, fence=True):
    """Prefetch the box of ``tensor_map`` at ``coords`` into L2 (a hint: no
    shared memory, no barrier, nothing to wait for).

    PTX: ``cp.async.bulk.prefetch.tensor.Nd.L2.global.tile{.L2::cache_hint}
    [tmap, {c...}]{, policy};`` (sm_90, PTX ISA 8.0).  Coordinates follow
    :func:`cp_async_bulk_tensor_load` (innermost first in PTX, ours in array
    order; the innermost a multiple of 16 bytes); a box past the tensor's
    edges prefetches only what exists.  Issue it a few tiles ahead of the
    loads that will read the same boxes.

    Example::

        if cuda.threadIdx.x == 0:
            ac.cp_async_bulk_prefetch_tensor(tmap, (row0 + 2 * BOX_ROWS, col0))
    """
    api = "cp_async_bulk_prefetch_tensor"
    select("cp.async.bulk.prefetch.tensor")
    check_tensor_map(api, tensor_map)
    rank = check_coords(api, coords)
    pol = check_policy(api, cache_policy)
    do_fence = bool_constant(fence, api, "fence")
    if do_fence:
        select("fence.proxy.tensormap")
    opcode = form("cp.async.bulk.prefetch.tensor").opcode.format(
        rank=rank, mode=".tile", hint=".L2::cache_hint" if pol else "")
    text, constraints = instruction(opcode, [f"[$0, {_coords_text(1, rank)}]"], ["l"] + ["r"] * rank,
                                    policy=pol)

    def codegen(context, builder, sig, args):
        m, maddr = _map_addr(context, builder, sig.args[0], args[0])
        cs = coords_values(context, builder, sig.args[1], args[1], api)
        if _checked._note_compiled():
            check_space(context, builder, api, m, "global")
            check_map_and_tile(context, builder, api, m, rank, None)
            check_inner_coord(context, builder, api, m, cs[0])
        if do_fence:
            emit_fence(builder, maddr)
        extra = [as_i64(context, builder, args[2], sig.args[2])] if pol else []
        asm(builder, text, constraints, [maddr] + cs + extra)
        return context.get_dummy_value()

    return types.void(tensor_map, coords, cache_policy, fence), codegen


# --- im2col mode -------------------------------------------------------------


def check_offsets(api: str, ty, rank: int) -> int:
    """``offsets``: a tuple of ``rank - 2`` integers (one per spatial axis),
    literals within the instruction's unsigned 16-bit range."""
    if not 3 <= rank <= 5:
        raise TypingError(
            f"{api}: `coords` has {rank} entries; an im2col load is 3-D to 5-D "
            "((n, w, c), (n, h, w, c) or (n, d, h, w, c))")
    need = rank - 2
    if not isinstance(ty, types.BaseTuple):
        raise TypingError(
            f"{api}: `offsets` must be a tuple of {need} integers (one per spatial axis, array "
            f"order: the filter tap times the dilation), got {ty}")
    elems = list(ty)
    if len(elems) != need:
        raise TypingError(
            f"{api}: `offsets` has {len(elems)} entries; a {rank}-D im2col load takes {need} "
            "(one per spatial axis)")
    for i, e in enumerate(elems):
        if not isinstance(getattr(e, "literal_type", e), types.Integer):
            raise TypingError(f"{api}: `offsets`[{i}] must be an integer, got {e}")
        if isinstance(e, types.IntegerLiteral) and not 0 <= e.literal_value < 1 << 16:
            raise TypingError(f"{api}: {_rules.im2col_offset(axis=i, value=e.literal_value)}")
    return need


def offsets_values(context, builder, ty, val, api: str):
    """The offsets as i16, innermost first (PTX order); checked mode traps
    on a value outside 0..65535 (checked on the full-width value)."""
    vals = []
    for i in range(len(ty)):
        v, t = builder.extract_value(val, i), ty[i]
        if _checked._note_compiled() and isinstance(t, types.Integer) and \
                (t.bitwidth > 16 or t.signed):
            wide = (builder.sext if t.signed else builder.zext)(v, I64) if t.bitwidth < 64 else v
            if t.signed:
                bad = builder.or_(builder.icmp_signed("<", wide, ir.Constant(I64, 0)),
                                  builder.icmp_signed(">", wide, ir.Constant(I64, 0xFFFF)))
            else:
                bad = builder.icmp_unsigned(">", wide, ir.Constant(I64, 0xFFFF))
            trap_if(context, builder, bad, api, _rules.im2col_offset(axis=i, value="%lld"), [wide])
        vals.append(context.cast(builder, v, t, types.uint16))
    return list(reversed(vals))


def check_im2col_start(context, builder, api: str, m: View, cs) -> None:
    """Checked mode: the first pixel lies in the map's bounding box (on the
    H200 a load starting outside it failed with an illegal instruction).
    ``cs``: the coordinates innermost first (c, w, [h, [d,]] n)."""
    spatial = list(reversed(cs[1:-1]))  # array order
    for a, c in enumerate(spatial):
        w = builder.load(builder.gep(m.data, [ir.Constant(I64, W_IM2COL_BOX + a)]))
        lo = builder.trunc(w, I32)
        hi = builder.trunc(builder.lshr(w, ir.Constant(I64, 32)), I32)
        bad = builder.or_(builder.icmp_signed("<", c, lo), builder.icmp_signed(">", c, hi))
        trap_if(context, builder, bad, api,
                _rules.im2col_start(axis=1 + a, coord="%d", lo="%d", hi="%d"), [c, lo, hi])


def _braces(first: int, n: int) -> str:
    return "{" + ", ".join(f"${first + i}" for i in range(n)) + "}"


@intrinsic
def cp_async_bulk_tensor_load_im2col(typingctx, dst, tensor_map, coords, offsets, mbar, *,
                                     multicast_mask=None, cache_policy=None, fence=True):
    """Load one im2col column block of ``tensor_map`` into ``dst`` (shared).

    PTX: ``cp.async.bulk.tensor.Nd.shared::cluster.global.im2col
    .mbarrier::complete_tx::bytes{.multicast::cluster}{.L2::cache_hint}
    [dst], [map, {coords}], [mbar], {offsets}`` (N = 3, 4, 5; sm_90, PTX
    ISA 8.0; ptxas advises sm_90a for multicast).

    - ``tensor_map``: an :meth:`ac.TensorMap.im2col <numba_asynccopy.TensorMap.im2col>` map.
    - ``dst``: the shared tile, C-contiguous ``(pixels_per_column,
      channels_per_pixel)`` (``tensor_map.box_bytes`` bytes), aligned to
      ``tensor_map.smem_alignment``.
    - ``coords``: ``(n, [d, [h,]] w, c)`` in the array's axis order: the
      first pixel (inside the map's bounding box, e.g. ``(n, p * stride -
      pad, q * stride - pad, c0)`` for output pixel ``(p, q)``) and the
      first channel (``c0`` times the element size a multiple of 16 bytes).
    - ``offsets``: one integer per spatial axis (0..65535), added to every
      pixel's position: ``(r * dilation, s * dilation)`` for filter tap
      ``(r, s)``.  Pixels that land outside the tensor read the map's
      ``oob_fill`` (zero: the convolution's padding).
    - ``mbar``: completes ``box_bytes`` transaction bytes (out-of-bounds
      pixels count too); ``multicast_mask``, ``cache_policy``, ``fence``
      as for :func:`cp_async_bulk_tensor_load`.

    Checked mode (and the simulator, with the same words) traps on a map
    that is not an im2col map of this rank, a tile that does not match its
    box, a misaligned first channel, an offset outside 0..65535 and a first
    pixel outside the bounding box (on the H200 a misaligned first channel
    and a first pixel outside the box each failed the launch with an
    illegal instruction).

    Example::

        # NHWC input, 3x3 filter, padding 1: lo, up = ac.conv_corners((3, 3), 1)
        if cuda.threadIdx.x == 0:
            ac.mbarrier_arrive_expect_tx(bar, tmap.box_bytes)  # a literal in real code
            ac.cp_async_bulk_tensor_load_im2col(tile, tmap, (n, p - 1, q - 1, c0), (r, s), bar)
        ac.mbarrier_wait_parity(bar, 0)
    """
    api = "cp_async_bulk_tensor_load_im2col"
    check_tile_view(api, "dst", dst)
    check_tensor_map(api, tensor_map)
    rank = check_coords(api, coords)
    n_off = check_offsets(api, offsets, rank)
    check_barrier(api, "mbar", mbar)
    multicast = check_mask(api, multicast_mask)
    key = "cp.async.bulk.tensor.g2s.im2col" + (".multicast" if multicast else "")
    row = select(key)
    pol = check_policy(api, cache_policy)
    do_fence = bool_constant(fence, api, "fence")
    if do_fence:
        select("fence.proxy.tensormap")
    sig = types.void(dst, tensor_map, coords, offsets, mbar, multicast_mask, cache_policy, fence)
    opcode = row.opcode.format(rank=rank, mode=".im2col", hint=".L2::cache_hint" if pol else "")
    nb = 2 + rank
    ops = ["[$0]", f"[$1, {_coords_text(2, rank)}]", f"[${nb}]", _braces(nb + 1, n_off)]
    cons = ["r", "l"] + ["r"] * rank + ["r"] + ["h"] * n_off
    text, constraints = instruction(opcode, ops, cons, mask=multicast, policy=pol)

    def codegen(context, builder, sig, args):
        d = View(context, builder, sig.args[0], args[0], "dst")
        m, maddr = _map_addr(context, builder, sig.args[1], args[1])
        checked = _checked._note_compiled()
        if checked:
            check_space(context, builder, api, d, "shared")
            check_space(context, builder, api, m, "global")
            check_barrier_value(context, builder, api, sig.args[4], args[4])
            check_map_and_tile(context, builder, api, m, rank, d, mode=1)
        extra = []
        if multicast:
            extra.append(mask_value(context, builder, sig.args[5], args[5], api, checked))
        if pol:
            extra.append(as_i64(context, builder, args[6], sig.args[6]))
        if do_fence:
            emit_fence(builder, maddr)
        bar = barrier_addr32(context, builder, sig.args[4], args[4])
        cs = coords_values(context, builder, sig.args[2], args[2], api)
        offs = offsets_values(context, builder, sig.args[3], args[3], api)
        if checked:
            check_inner_coord(context, builder, api, m, cs[0])
            check_im2col_start(context, builder, api, m, cs)
        asm(builder, text, constraints,
            [shared_addr32(builder, d.data), maddr] + cs + [bar] + offs + extra)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def cp_async_bulk_prefetch_tensor_im2col(typingctx, tensor_map, coords, offsets, *,
                                         cache_policy=None, fence=True):
    """Prefetch into L2 what :func:`cp_async_bulk_tensor_load_im2col` with
    the same ``coords`` and ``offsets`` would read (a hint: no shared
    memory, no barrier).

    PTX: ``cp.async.bulk.prefetch.tensor.Nd.L2.global.im2col{.L2::cache_hint}
    [map, {coords}], {offsets}{, policy};`` (N = 3, 4, 5; sm_90, PTX ISA 8.0).

    Example::

        if cuda.threadIdx.x == 0:
            ac.cp_async_bulk_prefetch_tensor_im2col(tmap, (n, p - 1, q - 1, c0 + 64), (r, s))
    """
    api = "cp_async_bulk_prefetch_tensor_im2col"
    row = select("cp.async.bulk.prefetch.tensor.im2col")
    check_tensor_map(api, tensor_map)
    rank = check_coords(api, coords)
    n_off = check_offsets(api, offsets, rank)
    pol = check_policy(api, cache_policy)
    do_fence = bool_constant(fence, api, "fence")
    if do_fence:
        select("fence.proxy.tensormap")
    opcode = row.opcode.format(rank=rank, mode=".im2col", hint=".L2::cache_hint" if pol else "")
    text, constraints = instruction(
        opcode, [f"[$0, {_coords_text(1, rank)}]", _braces(1 + rank, n_off)],
        ["l"] + ["r"] * rank + ["h"] * n_off, policy=pol)

    def codegen(context, builder, sig, args):
        m, maddr = _map_addr(context, builder, sig.args[0], args[0])
        cs = coords_values(context, builder, sig.args[1], args[1], api)
        offs = offsets_values(context, builder, sig.args[2], args[2], api)
        if _checked._note_compiled():
            check_space(context, builder, api, m, "global")
            check_map_and_tile(context, builder, api, m, rank, None, mode=1)
            check_inner_coord(context, builder, api, m, cs[0])
            check_im2col_start(context, builder, api, m, cs)
        if do_fence:
            emit_fence(builder, maddr)
        extra = [as_i64(context, builder, args[3], sig.args[3])] if pol else []
        asm(builder, text, constraints, [maddr] + cs + offs + extra)
        return context.get_dummy_value()

    return types.void(tensor_map, coords, offsets, cache_policy, fence), codegen


# --- what checked mode checks here (the README's table is made from these) ------

_MAP_APIS = ("cp_async_bulk_tensor_load", "cp_async_bulk_tensor_store",
             "cp_reduce_async_bulk_tensor", "cp_async_bulk_prefetch_tensor")
_checked.declare(_MAP_APIS + ("prefetch_tensormap", "fence_proxy_tensormap"), "tensor_map",
                 _rules.not_in_space, name="tensor_map", space="global")
_checked.declare(_MAP_APIS, "tensor_map", _rules.tensor_map_words, words="…", need=BUFFER_WORDS)
_checked.declare(_MAP_APIS, "tensor_map", _rules.tensor_map_magic)
_checked.declare(_MAP_APIS, "coords", _rules.tensor_rank, rank="len(coords)", map_rank="…")
_checked.declare(_MAP_APIS, "coords", _rules.tensor_inner_coord, coord="…", itemsize="…")
_checked.declare(_MAP_APIS, "coords",
                 "`coords`[k]=… is outside -2**31..2**31-1 (tensor coordinates are signed 32-bit)")
_checked.declare(("cp_async_bulk_tensor_store", "cp_reduce_async_bulk_tensor"), "coords",
                 _rules.tensor_negative_coord, axis="k", coord="…")
for _api, _tile in (("cp_async_bulk_tensor_load", "dst"), ("cp_async_bulk_tensor_store", "src"),
                    ("cp_reduce_async_bulk_tensor", "src")):
    _checked.declare(_api, _tile, _rules.not_in_space, name=_tile, space="shared")
    _checked.declare(_api, _tile, _rules.tensor_not_dense, name=_tile, axis="k", stride="…",
                     expect="…")
    _checked.declare(_api, _tile, _rules.tensor_itemsize, name=_tile, itemsize="…",
                     map_itemsize="…")
    _checked.declare(_api, _tile, _rules.tensor_box_bytes, name=_tile, nbytes="…", box="…")
    _checked.declare(_api, _tile, _rules.tensor_smem_align, name=_tile, addr="…", align="…")
_checked.declare("cp_reduce_async_bulk_tensor", "src", _rules.tensor_dtype, name="src", code="…",
                 map_code="…")
_checked.declare("cp_async_bulk_tensor_load", "mbar", _rules.barrier_empty, name="mbar")
_checked.declare("cp_async_bulk_tensor_load", "mbar", _rules.not_in_space, name="mbar",
                 space="shared")
_checked.declare("cp_async_bulk_tensor_load", "mbar", _rules.not_aligned, name="mbar", align=8,
                 addr="…")

_IM2COL_APIS = ("cp_async_bulk_tensor_load_im2col", "cp_async_bulk_prefetch_tensor_im2col")
_IM2COL_STORES = ("cp_async_bulk_tensor_store_im2col", "cp_reduce_async_bulk_tensor_im2col")
_checked.declare(_IM2COL_STORES, "tensor_map", _rules.not_in_space, name="tensor_map",
                 space="global")
_checked.declare(_IM2COL_STORES, "tensor_map", _rules.tensor_map_words, words="…",
                 need=BUFFER_WORDS)
_checked.declare(_IM2COL_STORES, "tensor_map", _rules.tensor_map_magic)
_checked.declare(_IM2COL_STORES, "tensor_map", _rules.tensor_map_mode, mode="…", need=1)
_checked.declare(_IM2COL_STORES, "tensor_map", _rules.im2col_store_corners)
_checked.declare(_IM2COL_STORES, "coords", _rules.tensor_rank, rank="len(coords)", map_rank="…")
_checked.declare(_IM2COL_STORES, "coords", _rules.tensor_inner_coord, coord="…", itemsize="…")
_checked.declare(_IM2COL_STORES, "coords", _rules.im2col_start, axis="k", coord="…", lo="…",
                 hi="…")
_checked.declare(_IM2COL_STORES, "coords",
                 "`coords`[k]=… is outside -2**31..2**31-1 (tensor coordinates are signed 32-bit)")
for _api in _IM2COL_STORES:
    _checked.declare(_api, "src", _rules.not_in_space, name="src", space="shared")
    _checked.declare(_api, "src", _rules.tensor_not_dense, name="src", axis="k", stride="…",
                     expect="…")
    _checked.declare(_api, "src", _rules.tensor_itemsize, name="src", itemsize="…",
                     map_itemsize="…")
    _checked.declare(_api, "src", _rules.tensor_box_bytes, name="src", nbytes="…", box="…")
    _checked.declare(_api, "src", _rules.tensor_smem_align, name="src", addr="…", align="…")
_checked.declare("cp_reduce_async_bulk_tensor_im2col", "src", _rules.tensor_dtype, name="src",
                 code="…", map_code="…")
_checked.declare(_IM2COL_APIS, "tensor_map", _rules.not_in_space, name="tensor_map", space="global")
_checked.declare(_IM2COL_APIS, "tensor_map", _rules.tensor_map_words, words="…", need=BUFFER_WORDS)
_checked.declare(_IM2COL_APIS, "tensor_map", _rules.tensor_map_magic)
_checked.declare(_MAP_APIS, "tensor_map", _rules.tensor_map_mode, mode="…", need=0)
_checked.declare(_IM2COL_APIS, "tensor_map", _rules.tensor_map_mode, mode="…", need=1)
_checked.declare(_IM2COL_APIS, "coords", _rules.tensor_rank, rank="len(coords)", map_rank="…")
_checked.declare(_IM2COL_APIS, "coords", _rules.tensor_inner_coord, coord="…", itemsize="…")
_checked.declare(_IM2COL_APIS, "offsets", _rules.im2col_offset, axis="k", value="…")
_checked.declare(_IM2COL_APIS, "coords", _rules.im2col_start, axis="k", coord="…", lo="…", hi="…")
_checked.declare("cp_async_bulk_tensor_load_im2col", "dst", _rules.not_in_space, name="dst",
                 space="shared")
_checked.declare("cp_async_bulk_tensor_load_im2col", "dst", _rules.tensor_not_dense, name="dst",
                 axis="k", stride="…", expect="…")
_checked.declare("cp_async_bulk_tensor_load_im2col", "dst", _rules.tensor_itemsize, name="dst",
                 itemsize="…", map_itemsize="…")
_checked.declare("cp_async_bulk_tensor_load_im2col", "dst", _rules.tensor_box_bytes, name="dst",
                 nbytes="…", box="…")
_checked.declare("cp_async_bulk_tensor_load_im2col", "dst", _rules.tensor_smem_align, name="dst",
                 addr="…", align="…")
_checked.declare("cp_async_bulk_tensor_load_im2col", "mbar", _rules.barrier_empty, name="mbar")
_checked.declare("cp_async_bulk_tensor_load_im2col", "mbar", _rules.not_in_space, name="mbar",
                 space="shared")
_checked.declare("cp_async_bulk_tensor_load_im2col", "mbar", _rules.not_aligned, name="mbar",
                 align=8, addr="…")
_checked.declare(_IM2COL_APIS, "coords",
                 "`coords`[k]=… is outside -2**31..2**31-1 (tensor coordinates are signed 32-bit)")
_checked.declare("cp_async_bulk_tensor_load_im2col", "multicast_mask",
                 "multicast_mask is 0: the copy would land nowhere")
_checked.declare("cp_async_bulk_tensor_load_im2col", "multicast_mask",
                 "multicast_mask=… names a CTA rank outside this cluster of … CTAs")
