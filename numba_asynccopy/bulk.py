"""Bulk copies (sm_90): whole views between global and shared memory.

One ``cp.async.bulk`` instruction moves a contiguous run of bytes through
the copy engine.  Loads (global -> shared) complete on an mbarrier as
transaction bytes; stores, reductions and the L2 prefetch complete in bulk
groups (:func:`bulk_commit_group` / :func:`bulk_wait_group`).  The cluster
copy (:func:`cp_async_bulk_cluster`) moves shared-memory chunks of this CTA
into another CTA of the cluster and completes on that CTA's barrier.

How a view pair becomes instructions:

- both views C-contiguous (Numba layout ``"C"``, for example ``sh``,
  ``sh[s]``, ``A[i]`` or ``A[a:b]`` of a C array): ONE copy of all the
  bytes of the shared view (the global view must hold as many bytes);
- otherwise (for example ``A[r:r + 8, c:c + 64]``, layout ``"A"``): the
  views must have the same rank; every row (last axis) is one copy, the
  other axes are repeats walked by the issuing thread.

Every copy's size must be a positive multiple of 16 bytes below 2**32 and
both of its addresses 16-byte aligned; a Fortran-ordered view is refused at
compile time, everything that only the values tell is checked in checked
mode.

Typing and validation (``validate_*``) are plain functions over Numba
types; PTX text (``ptx_*``) is built from ``_forms`` by plain functions;
the intrinsics glue the two together.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from llvmlite import ir
from numba.core import types
from numba.cuda import cgutils

from . import _rules
from . import checked as _checked
from ._compat import TypingError, intrinsic
from ._forms import form, nvvm_ptx_isa as _nvvm_ptx_isa, select
from ._lowering import (
    I16,
    I32,
    I64,
    as_i32,
    as_i64,
    asm,
    generic_addr64,
    instruction,
    is_space,
    shared_addr32,
    trap_if,
    statement,
    truth_i32,
)
from ._regions import (
    CHUNKED_VIEWS,
    View,
    barrier_addr32,
    barrier_generic,
    bool_constant,  # re-exported: the tensor family reads it here
    bool_or_runtime,
    check_array_view,
    check_barrier,
    check_barrier_view,
    check_runtime_scalar,
    is_absent,
    literal_value,
    thread_chunks,
)
from ._rules import BULK_ALIGN  # re-exported: size granule and address alignment
from ._rules import MAX_TX  # re-exported: a barrier's transaction range
from .cluster import check_barrier_runtime, check_rank, check_rank_arg, check_shared, mapa32

# --- compile time -----------------------------------------------------------


@functools.cache
def nvvm_ptx_isa() -> tuple[int, int]:
    """PTX ISA version the installed NVVM emits; (8, 0) where there is none.

    The ``shared::cta`` destination form of the bulk load needs PTX ISA 8.6;
    older NVVMs (CUDA < 12.8) get the ``shared::cluster`` form, which the
    PTX ISA defines identically for the executing CTA's own addresses.
    """
    return _nvvm_ptx_isa() or (8, 0)


def check_bulk_view(api: str, name: str, ty) -> None:
    """A bulk-copy operand: a numeric array view whose rows are contiguous."""
    check_array_view(api, name, ty, "`sh` or `A[i]`",
                     ": its last axis is not contiguous, so its rows are not runs of "
                     "bytes a bulk copy can move")
    if not isinstance(ty.dtype, (types.Number, types.Boolean)):
        raise TypingError(
            f"{api}: `{name}` must hold numbers (a bulk copy moves bytes of a "
            f"numeric array), got dtype {ty.dtype}"
        )


def whole_or_rows(api: str, a_name: str, a, b_name: str, b) -> bool:
    """True: one copy of the whole views; False: one copy per row."""
    if a.layout == "C" and b.layout == "C":
        return True
    if a.ndim != b.ndim:
        raise TypingError(
            f"{api}: `{a_name}` ({a.ndim}-D, layout {a.layout}) and `{b_name}` "
            f"({b.ndim}-D, layout {b.layout}) must have the same rank: a view that "
            "is not C-contiguous is copied row by row, and the rows of the two "
            "views are matched one to one"
        )
    return False


def check_mask(api: str, ty) -> bool:
    """multicast_mask: absent, or a 16-bit CTA mask (literal range checked)."""
    if is_absent(ty):
        return False
    check_runtime_scalar(ty, api, "multicast_mask")
    if isinstance(ty, types.IntegerLiteral) and not 0 < ty.literal_value < 1 << 16:
        raise TypingError(
            f"{api}: multicast_mask={ty.literal_value} is outside 1..0xFFFF "
            "(one bit per CTA rank of the cluster, at most 16)"
        )
    return True


def check_policy(api: str, ty) -> bool:
    if is_absent(ty):
        return False
    check_runtime_scalar(ty, api, "cache_policy")
    return True


# --- run time ---------------------------------------------------------------


def total_bytes(builder, v: View):
    n = v.const(v.itemsize)
    for d in v.shape:
        n = builder.mul(n, d)
    return n


def check_size(context, builder, api: str, size, what: str) -> None:
    """Checked mode: a bulk size is a positive multiple of 16 below 2**32."""
    c = ir.Constant(size.type, 0)
    bad = builder.or_(builder.icmp_unsigned("==", size, c),
                      builder.icmp_unsigned("!=", builder.urem(size, ir.Constant(size.type, BULK_ALIGN)), c))
    trap_if(context, builder, bad, api, _rules.bulk_size_multiple(what=what, size="%lld"), [size])
    big = builder.icmp_unsigned(">=", size, ir.Constant(size.type, 1 << 32))
    trap_if(context, builder, big, api, _rules.bulk_size_limit(what=what, size="%lld"), [size])


def check_space(context, builder, api: str, v: View, space: str) -> None:
    bad = builder.not_(is_space(builder, v.data, space))
    trap_if(context, builder, bad, api, _rules.not_in_space(name=v.name, space=space))


def check_aligned(context, builder, api: str, name: str, addr, align: int) -> None:
    mis = builder.urem(addr, ir.Constant(addr.type, align))
    trap_if(context, builder, builder.icmp_unsigned("!=", mis, ir.Constant(addr.type, 0)), api,
            _rules.not_aligned(name=name, align=align, addr="%p"),
            [builder.zext(addr, I64) if addr.type != I64 else addr])


def check_whole_views(context, builder, api: str, lead: View, other: View | None) -> None:
    """Checked mode for C-contiguous views copied whole."""
    size = total_bytes(builder, lead)
    check_size(context, builder, api, size, f"`{lead.name}`")
    for v in (lead, other) if other is not None else (lead,):
        check_aligned(context, builder, api, v.name, generic_addr64(builder, v.data), BULK_ALIGN)
    if other is not None:
        osize = total_bytes(builder, other)
        trap_if(context, builder, builder.icmp_unsigned("!=", size, osize), api,
                _rules.byte_counts_differ(a_name=lead.name, a="%lld", b_name=other.name, b="%lld"),
                [size, osize])


def check_row_views(context, builder, api: str, lead: View, other: View | None) -> None:
    """Checked mode for views copied row by row (16-byte rules per row)."""
    CHUNKED_VIEWS.emit(context, builder, api, [lead] + ([other] if other is not None else []), BULK_ALIGN)
    check_size(context, builder, api, lead.row_bytes(builder), _rules.row_of(name=lead.name))


def check_barrier_value(context, builder, api: str, mbar_ty, mbar) -> None:
    """The ``mbar`` view: the local mbarrier functions' rules on ``bar``."""
    check_barrier_view(context, builder, api, "mbar", mbar_ty, mbar)


def cluster_nctarank(builder):
    reg = form("sreg.cluster_nctarank").opcode
    return asm(builder, f"mov.u32 $0, {reg};", "=r", [], ret=I32, clobber_memory=False)


def mask_value(context, builder, ty, val, api: str, checked: bool):
    """The 16-bit CTA mask operand; checked mode: non-zero, within the cluster."""
    m = context.cast(builder, val, ty, types.uint64)
    if checked:
        zero = ir.Constant(I64, 0)
        trap_if(context, builder, builder.icmp_unsigned("==", m, zero), api,
                "multicast_mask is 0: the copy would land nowhere")
        n = builder.zext(cluster_nctarank(builder), I64)
        beyond = builder.icmp_unsigned("!=", builder.lshr(m, n), zero)
        trap_if(context, builder, beyond, api,
                "multicast_mask=0x%llx names a CTA rank outside this cluster of %u CTAs",
                [m, builder.trunc(n, I32)])
    return builder.trunc(m, I16)


def walk_rows(builder, lead: View, others, issue) -> None:
    """Call ``issue(lead_ptr_offset, [other offsets], row_bytes)`` per row."""
    nbytes = lead.row_bytes(builder)
    if lead.ty.ndim == 1:
        issue(lead.const(0), [o.const(0) for o in others], nbytes)
        return
    with cgutils.loop_nest(builder, lead.shape[:-1], lead.intp) as idx:
        def offset(v):
            off = v.const(0)
            for i, s in zip(idx, v.strides[:-1]):
                off = builder.add(off, builder.mul(i, s))
            return off
        issue(offset(lead), [offset(o) for o in others], nbytes)


def shared_at(builder, v: View, off):
    return builder.add(shared_addr32(builder, v.data), builder.trunc(off, I32))


def global_at(builder, v: View, off):
    return builder.add(generic_addr64(builder, v.data), off)


# --- cp.async.bulk global -> shared -------------------------------------------


@dataclass(frozen=True)
class BulkLoadOptions:
    whole: bool
    multicast: bool
    cache_policy: bool
    cta_form: bool  # the shared::cta destination form (PTX ISA 8.6)


def validate_bulk_g2s(dst, src, mbar, multicast_mask, cache_policy) -> BulkLoadOptions:
    api = "cp_async_bulk_g2s"
    select("cp.async.bulk.g2s")
    check_bulk_view(api, "dst", dst)
    check_bulk_view(api, "src", src)
    check_barrier(api, "mbar", mbar)
    whole = whole_or_rows(api, "dst", dst, "src", src)
    mc = check_mask(api, multicast_mask)
    pol = check_policy(api, cache_policy)
    cta = not mc and nvvm_ptx_isa() >= (8, 6)
    return BulkLoadOptions(whole=whole, multicast=mc, cache_policy=pol, cta_form=cta)


def ptx_bulk_g2s(o: BulkLoadOptions) -> tuple[str, str]:
    """Operands: dst(r), src(l), size(r), mbar(r), [mask(h)], [policy(l)]."""
    key = "cp.async.bulk.g2s.multicast" if o.multicast else (
        "cp.async.bulk.g2s.cta" if o.cta_form else "cp.async.bulk.g2s")
    opcode = form(key).opcode.format(hint=".L2::cache_hint" if o.cache_policy else "")
    return instruction(opcode, ["[$0]", "[$1]", "$2", "[$3]"], ["r", "l", "r", "r"],
                       mask=o.multicast, policy=o.cache_policy)


@intrinsic
def cp_async_bulk_g2s(typingctx, dst, src, mbar, *, multicast_mask=None, cache_policy=None):
    """Bulk-copy ``src`` (global) into ``dst`` (shared); completes on ``mbar``.

    PTX: ``cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes``
    (PTX ISA 8.6; the ``shared::cluster`` destination form with older NVVMs)
    or, with ``multicast_mask``, ``cp.async.bulk.shared::cluster.global
    .mbarrier::complete_tx::bytes.multicast::cluster`` (sm_90; ptxas advises
    sm_90a, which the runtime JIT on an H100/H200 targets).

    - ``dst``: shared-memory view; ``src``: global view.  Both C-contiguous:
      one copy of ``dst``'s bytes (``src`` must hold as many); otherwise one
      copy per row (same rank, matching rows).  Sizes are multiples of 16
      bytes, addresses 16-byte aligned (``cuda.shared.array(...,
      alignment=16)``).
    - ``mbar``: the barrier, first element of a shared uint64 view
      (``bars[i:]``).  Each copy performs ``complete_tx`` of its bytes on it:
      arm it first with ``mbarrier_arrive_expect_tx(mbar, total_bytes)``.
    - ``multicast_mask`` (run-time or constant, 16 bits): the data lands at
      the same shared offset in every CTA of the cluster whose rank bit is
      set, and each of them gets the ``complete_tx`` on its barrier at
      ``mbar``'s offset (each CTA arms its own barrier).
    - ``cache_policy``: a uint64 from :func:`createpolicy_fractional`.

    Issue it from one thread: every issuing thread copies the whole view.

    Example::

        @cuda.jit
        def k(A, out):                          # A: float32[1024]
            sh = cuda.shared.array(1024, np.float32, alignment=16)
            bar = cuda.shared.array(1, np.uint64)
            if cuda.threadIdx.x == 0:
                ac.mbarrier_init(bar, 1)
                ac.fence_proxy_async("shared::cta")
            cuda.syncthreads()
            if cuda.threadIdx.x == 0:
                ac.mbarrier_arrive_expect_tx(bar, 4096)
                ac.cp_async_bulk_g2s(sh, A, bar)
            ac.mbarrier_wait_parity(bar, 0)
            out[cuda.threadIdx.x] = sh[cuda.threadIdx.x]
    """
    o = validate_bulk_g2s(dst, src, mbar, multicast_mask, cache_policy)
    sig = types.void(dst, src, mbar, multicast_mask, cache_policy)
    text, constraints = ptx_bulk_g2s(o)
    api = "cp_async_bulk_g2s"

    def codegen(context, builder, sig, args):
        d = View(context, builder, sig.args[0], args[0], "dst")
        s = View(context, builder, sig.args[1], args[1], "src")
        bar = barrier_addr32(context, builder, sig.args[2], args[2])
        checked = _checked._note_compiled()
        if checked:
            check_space(context, builder, api, d, "shared")
            check_space(context, builder, api, s, "global")
            check_barrier_value(context, builder, api, sig.args[2], args[2])
            (check_whole_views if o.whole else check_row_views)(context, builder, api, d, s)
        extra = []
        if o.multicast:
            extra.append(mask_value(context, builder, sig.args[3], args[3], api, checked))
        if o.cache_policy:
            extra.append(as_i64(context, builder, args[4], sig.args[4]))

        def issue(doff, soffs, nbytes):
            asm(builder, text, constraints,
                [shared_at(builder, d, doff), global_at(builder, s, soffs[0]),
                 builder.trunc(nbytes, I32), bar] + extra)

        if o.whole:
            issue(d.const(0), [s.const(0)], total_bytes(builder, d))
        else:
            walk_rows(builder, d, [s], issue)
        return context.get_dummy_value()

    return sig, codegen


# --- cp.async.bulk shared -> global, reductions --------------------------------


@dataclass(frozen=True)
class BulkStoreOptions:
    whole: bool
    cache_policy: bool
    op: str | None = None  # reductions: ".add", ".add.noftz", ...
    ptx_type: str | None = None


REDUCE_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor")

# The (op, type) pairs PTX ISA 8.x allows for cp.reduce.async.bulk with a
# global destination (every pair was assembled with ptxas 13.5 for sm_90).
BULK_REDUCE_TYPES = {
    "add": ("f16", "bf16", "u32", "s32", "u64", "f32", "f64"),
    "min": ("f16", "bf16", "u32", "s32", "u64", "s64"),
    "max": ("f16", "bf16", "u32", "s32", "u64", "s64"),
    "inc": ("u32",),
    "dec": ("u32",),
    "and": ("b32", "b64"),
    "or": ("b32", "b64"),
    "xor": ("b32", "b64"),
}

# cp.reduce.async.bulk.tensor (the element type comes from the tensor map).
# The 64-bit forms PTX lists (add.u64, min/max.u64/.s64, and/or/xor.b64)
# were each run on the H200 (driver 580) against numpy, one process per
# form (benchmarks/h200-2026-12-01/reduce64/): all pass through a UINT64
# map, min/max also through an INT64 map; add and the bitwise ops through an
# INT64 map fail the launch with an illegal instruction, so int64 tiles are
# refused for them (tensor.TENSOR_REDUCE_OBSERVED says so and how to use a
# uint64 view instead).
TENSOR_REDUCE_TYPES = {
    "add": ("f16", "bf16", "u32", "s32", "f32", "u64"),
    "min": ("f16", "bf16", "u32", "s32", "u64", "s64"),
    "max": ("f16", "bf16", "u32", "s32", "u64", "s64"),
    "inc": ("u32",),
    "dec": ("u32",),
    "and": ("b32", "b64"),
    "or": ("b32", "b64"),
    "xor": ("b32", "b64"),
}

_PTX_TYPES = {
    types.float16: "f16", types.float32: "f32", types.float64: "f64",
    types.int32: "s32", types.uint32: "u32", types.int64: "s64", types.uint64: "u64",
}


def reduce_type(api: str, op: str, dtype, bf16: bool, table: dict) -> str:
    """PTX element type of a reduction, or a TypingError naming the pair."""
    if bf16:
        if dtype not in (types.int16, types.uint16):
            raise TypingError(
                f"{api}: bf16=True reads the views as raw bfloat16 bits: they must "
                f"hold int16 or uint16, got {dtype}"
            )
        t = "bf16"
    elif dtype in _PTX_TYPES:
        t = _PTX_TYPES[dtype]
    else:
        raise TypingError(
            f"{api}: no bulk reduction works on {dtype} elements; supported: "
            "float16, float32, float64, int32, uint32, int64, uint64 "
            "(and bfloat16 bits in int16/uint16 views with bf16=True)"
        )
    if op in ("and", "or", "xor") and t[0] in "su":
        t = "b" + t[1:]
    if op == "add" and t == "s64" and table is BULK_REDUCE_TYPES:
        t = "u64"  # two's-complement addition is the same bit operation
    if t not in table[op]:
        raise TypingError(
            f"{api}: op={op!r} is not supported for {dtype} elements (PTX `.{op}.{t}`); "
            f"{op} is supported on: " + ", ".join(table[op])
        )
    return t


def validate_bulk_s2g(api, dst, src, cache_policy, op=None, bf16=None) -> BulkStoreOptions:
    select("cp.reduce.async.bulk.s2g" if op is not None else "cp.async.bulk.s2g")
    check_bulk_view(api, "dst", dst)
    check_bulk_view(api, "src", src)
    whole = whole_or_rows(api, "src", src, "dst", dst)
    pol = check_policy(api, cache_policy)
    if op is None:
        return BulkStoreOptions(whole=whole, cache_policy=pol)
    name = literal_value(op, api, "op", kind=str, allowed=REDUCE_OPS)
    use_bf16 = bool_constant(bf16, api, "bf16")
    if dst.dtype != src.dtype:
        raise TypingError(
            f"{api}: `dst` ({dst.dtype}) and `src` ({src.dtype}) must have the same "
            "dtype: the reduction combines element by element"
        )
    t = reduce_type(api, name, dst.dtype, use_bf16, BULK_REDUCE_TYPES)
    suffix = name + (".noftz" if name == "add" and t in ("f16", "bf16") else "")
    return BulkStoreOptions(whole=whole, cache_policy=pol, op=suffix, ptx_type=t)


def ptx_bulk_s2g(o: BulkStoreOptions) -> tuple[str, str]:
    """Operands: dst(l), src(r), size(r), [policy(l)]."""
    hint = ".L2::cache_hint" if o.cache_policy else ""
    if o.op is None:
        opcode = form("cp.async.bulk.s2g").opcode.format(hint=hint)
    else:
        opcode = form("cp.reduce.async.bulk.s2g").opcode.format(hint=hint, op=o.op, type=o.ptx_type)
    return instruction(opcode, ["[$0]", "[$1]", "$2"], ["l", "r", "r"], policy=o.cache_policy)


def _lower_s2g(context, builder, sig, args, o: BulkStoreOptions, api: str, policy_at: int):
    d = View(context, builder, sig.args[0], args[0], "dst")
    s = View(context, builder, sig.args[1], args[1], "src")
    if _checked._note_compiled():
        check_space(context, builder, api, s, "shared")
        check_space(context, builder, api, d, "global")
        (check_whole_views if o.whole else check_row_views)(context, builder, api, s, d)
    extra = [as_i64(context, builder, args[policy_at], sig.args[policy_at])] if o.cache_policy else []
    text, constraints = ptx_bulk_s2g(o)

    def issue(soff, doffs, nbytes):
        asm(builder, text, constraints,
            [global_at(builder, d, doffs[0]), shared_at(builder, s, soff), builder.trunc(nbytes, I32)] + extra)

    if o.whole:
        issue(s.const(0), [d.const(0)], total_bytes(builder, s))
    else:
        walk_rows(builder, s, [d], issue)
    return context.get_dummy_value()


@intrinsic
def cp_async_bulk_s2g(typingctx, dst, src, *, cache_policy=None):
    """Bulk-copy ``src`` (shared) into ``dst`` (global) in a bulk group.

    PTX: ``cp.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint}``
    (sm_90, PTX ISA 8.0).  Views as for :func:`cp_async_bulk_g2s` (the
    shared view leads: its bytes, or its rows).

    Generic-proxy writes to ``src`` must be made visible to the copy engine
    first: ``ac.fence_proxy_async("shared::cta")`` after the writes (and a
    ``cuda.syncthreads()`` when other threads wrote them).  Then
    :func:`bulk_commit_group` and :func:`bulk_wait_group`: ``read=True``
    before overwriting ``src``, ``read=False`` before the results must be
    visible in global memory (kernel end also completes them).

    Example::

        sh[tid] = 2 * A[tid]
        ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if tid == 0:
            ac.cp_async_bulk_s2g(B, sh)
            ac.bulk_commit_group()
            ac.bulk_wait_group(0, read=True)   # sh may be reused now
    """
    api = "cp_async_bulk_s2g"
    o = validate_bulk_s2g(api, dst, src, cache_policy)
    sig = types.void(dst, src, cache_policy)

    def codegen(context, builder, sig, args):
        return _lower_s2g(context, builder, sig, args, o, api, 2)

    return sig, codegen


@intrinsic
def cp_reduce_async_bulk_s2g(typingctx, dst, src, op, *, bf16=False, cache_policy=None):
    """Reduce ``src`` (shared) into ``dst`` (global) element-wise, in a bulk group.

    PTX: ``cp.reduce.async.bulk.global.shared::cta.bulk_group.op.type``
    (sm_90, PTX ISA 8.0).  ``op`` is a constant: ``"add"``, ``"min"``,
    ``"max"``, ``"inc"``, ``"dec"``, ``"and"``, ``"or"`` or ``"xor"``;
    each ``dst[i] = op(dst[i], src[i])`` is atomic per element.

    Types (both views the same dtype), as PTX allows them:
    add: float16 and bfloat16 (``.add.noftz``: no flush of denormals),
    float32, float64, int32, uint32, uint64, and int64 (as ``.add.u64``, the
    same two's-complement bits); min/max: float16, bfloat16, int32, uint32,
    int64, uint64; inc/dec: uint32 (``inc``: ``old >= src ? 0 : old + 1``,
    ``dec``: ``old == 0 or old > src ? src : old - 1``); and/or/xor: 32- and
    64-bit integers.  Any other pair is a compile-time error.  bfloat16:
    pass int16/uint16 views holding the bits and ``bf16=True``.

    Views, fences and completion as for :func:`cp_async_bulk_s2g`.

    Example::

        if tid == 0:
            ac.cp_reduce_async_bulk_s2g(total, partial_sh, "add")
            ac.bulk_commit_group()
            ac.bulk_wait_group(0)
    """
    api = "cp_reduce_async_bulk_s2g"
    o = validate_bulk_s2g(api, dst, src, cache_policy, op=op, bf16=bf16)
    sig = types.void(dst, src, op, bf16, cache_policy)

    def codegen(context, builder, sig, args):
        return _lower_s2g(context, builder, sig, args, o, api, 4)

    return sig, codegen


# --- L2 prefetch, bulk groups -------------------------------------------------------


@intrinsic
def cp_async_bulk_prefetch_l2(typingctx, src, *, cache_policy=None):
    """Prefetch a global view into L2 (a hint: no completion to wait for).

    PTX: ``cp.async.bulk.prefetch.L2.global{.L2::cache_hint} [src], size``
    (sm_90, PTX ISA 8.0).  ``src``: a global view, C-contiguous (one
    prefetch of all its bytes) or with contiguous rows (one per row); sizes
    multiples of 16 bytes, 16-byte aligned.

    Example::

        if cuda.threadIdx.x == 0:
            ac.cp_async_bulk_prefetch_l2(A[next_block])
    """
    api = "cp_async_bulk_prefetch_l2"
    f = form("cp.async.bulk.prefetch.L2")
    check_bulk_view(api, "src", src)
    whole = src.layout == "C"
    pol = check_policy(api, cache_policy)
    opcode = f.opcode.format(hint=".L2::cache_hint" if pol else "")
    text = f"{opcode} [$0], $1{', $2' if pol else ''};"
    constraints = "l,r" + (",l" if pol else "")

    def codegen(context, builder, sig, args):
        s = View(context, builder, sig.args[0], args[0], "src")
        if _checked._note_compiled():
            check_space(context, builder, api, s, "global")
            (check_whole_views if whole else check_row_views)(context, builder, api, s, None)
        extra = [as_i64(context, builder, args[1], sig.args[1])] if pol else []

        def issue(soff, _, nbytes):
            asm(builder, text, constraints,
                [global_at(builder, s, soff), builder.trunc(nbytes, I32)] + extra)

        if whole:
            issue(s.const(0), [], total_bytes(builder, s))
        else:
            walk_rows(builder, s, [], issue)
        return context.get_dummy_value()

    return types.void(src, cache_policy), codegen


@intrinsic
def bulk_commit_group(typingctx):
    """Commit this thread's uncommitted bulk stores/reductions as one group.

    PTX: ``cp.async.bulk.commit_group;`` (sm_90).  Bulk *loads* complete on
    their mbarrier instead and are not part of any group.

    Example::

        ac.cp_async_bulk_s2g(B, sh)
        ac.bulk_commit_group()
    """
    f = form("cp.async.bulk.commit_group")

    return types.void(), statement(f.opcode + ";")


@intrinsic
def bulk_wait_group(typingctx, n, read=False):
    """Wait until at most ``n`` of this thread's newest bulk groups are pending.

    PTX: ``cp.async.bulk.wait_group{.read} N;`` (sm_90).  ``n`` and ``read``
    are constants.  ``read=True`` waits only until the groups have *read*
    their shared sources (so the shared memory can be overwritten); the
    global writes may still be in flight.

    Example::

        ac.bulk_commit_group()
        ac.bulk_wait_group(0, read=True)   # safe to refill the staging tile
    """
    api = "bulk_wait_group"
    f = form("cp.async.bulk.wait_group")
    count = literal_value(n, api, "n")
    if count < 0:
        raise TypingError(f"{api}: {_rules.wait_count_negative(count=count)}")
    if count >= 1 << 31:  # the PTX immediate is a 32-bit signed value
        raise TypingError(f"{api}: {_rules.outside_range(name='n', value=count, lo=0, hi='2**31-1')}")
    rd = bool_constant(read, api, "read")
    text = f"{f.opcode.format(read='.read' if rd else '')} {count};"

    return types.void(n, read), statement(text)


# --- cp.async.bulk shared::cta -> shared::cluster (another CTA of the cluster) ----
# The contract is that of TVM TIRx's async-copy documentation for the cluster
# bulk copy: region rule (group, repeat, element), no flattening over gaps,
# the caller owns the barrier protocol.


@dataclass(frozen=True)
class BulkClusterOptions:
    chunk_bytes: int
    pred: str  # "always", "never" or "runtime"


def validate_cp_async_bulk_cluster(dst, src, chunk_bytes, mbar, remote_cta_id, pred) -> BulkClusterOptions:
    """Compile-time contract of ``cp_async_bulk_cluster``."""
    api = "cp_async_bulk_cluster"
    select("cp.async.bulk.cluster")
    chunk = literal_value(chunk_bytes, api, "chunk_bytes")
    if chunk <= 0 or chunk % BULK_ALIGN:
        raise TypingError(
            f"{api}: chunk_bytes={chunk} must be a positive multiple of {BULK_ALIGN}"
        )
    if chunk > MAX_TX:
        raise TypingError(
            f"{api}: chunk_bytes={chunk} exceeds the barrier's transaction range "
            f"({MAX_TX} bytes)"
        )
    CHUNKED_VIEWS.check_types(api, chunk, ("dst", dst), ("src", src))
    check_barrier(api, "mbar", mbar)
    check_rank_arg(api, "remote_cta_id", remote_cta_id)
    p = bool_or_runtime(pred, api, "pred")
    return BulkClusterOptions(chunk, {True: "always", False: "never", None: "runtime"}[p])


def ptx_cp_async_bulk_cluster(o: BulkClusterOptions) -> tuple[str, str]:
    """(asm text, constraints) of one chunk: operands dst (mapped), src, mbar (mapped)."""
    return f"{form('cp.async.bulk.cluster').opcode} [$0], [$1], {o.chunk_bytes}, [$2];", "r,r,r"


def _lower_bulk_cluster(context, builder, sig, args, o: BulkClusterOptions):
    api = "cp_async_bulk_cluster"
    if o.pred == "never":
        return context.get_dummy_value()
    d = View(context, builder, sig.args[0], args[0], "dst")
    s = View(context, builder, sig.args[1], args[1], "src")
    bar = barrier_generic(context, builder, sig.args[3], args[3])
    rank = as_i32(context, builder, args[4], sig.args[4])
    text, constraints = ptx_cp_async_bulk_cluster(o)

    def body():
        if _checked._note_compiled():
            check_rank(context, builder, api, "remote_cta_id", args[4], sig.args[4])
            check_shared(context, builder, api, "dst", d.data)
            check_shared(context, builder, api, "src", s.data)
            check_barrier_runtime(context, builder, api, "mbar", bar)
            CHUNKED_VIEWS.emit(context, builder, api, [s, d], o.chunk_bytes, align=BULK_ALIGN)
        rbar = mapa32(builder, shared_addr32(builder, bar), rank)  # once
        with thread_chunks(builder, s, o.chunk_bytes) as (outer, c):
            rdst = mapa32(builder, d.shared_chunk(builder, outer, c, o.chunk_bytes), rank)  # per repeat
            asm(builder, text, constraints, [rdst, s.shared_chunk(builder, outer, c, o.chunk_bytes), rbar])

    if o.pred == "runtime":
        p = truth_i32(context, builder, args[5], sig.args[5])
        with builder.if_then(builder.icmp_unsigned("!=", p, ir.Constant(I32, 0))):
            body()
    else:
        body()
    return context.get_dummy_value()


@intrinsic
def cp_async_bulk_cluster(typingctx, dst, src, chunk_bytes, mbar, remote_cta_id, pred=True):
    """Copy shared-memory chunks of this CTA into CTA ``remote_cta_id`` of the
    cluster, completing their bytes on that CTA's barrier.

    PTX ``cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes``
    (sm_90, PTX ISA 8.0), one per chunk, each preceded by a ``mapa`` of its
    destination; the barrier is mapped once.

    - ``dst``, ``src``, ``mbar``: *local* shared-memory views.  ``src`` is
      read here; ``dst`` names the local counterpart of the destination
      allocation and ``mbar`` the local counterpart of the destination's
      barrier (first element of a shared uint64 view); both are mapped to
      ``remote_cta_id``.  Never pass an already mapped address.
    - Region rule: coordinates ``(*group, *repeat, element)``; the last axis
      is split into chunks of ``chunk_bytes`` (a constant positive multiple
      of 16), each consecutive and 16-byte aligned; every other axis is a
      repeat, one copy per chunk.  ``src`` and ``dst`` have the same rank and
      shape and may have different outer strides.  A gap is never flattened
      over; there is no split and no scalar fallback.
    - ``remote_cta_id``: the destination's rank in the cluster
      (``cluster_cta_rank()`` there), not a block index.
    - ``pred`` (run-time bool): False issues nothing; keep it consistent
      with the destination's expected transaction bytes.

    The caller owns the protocol: initialize the barrier (and
    ``fence_mbarrier_init`` + ``cluster_sync``) before use, make ``src``
    visible to the async proxy (``fence_proxy_async("shared::cta")``), have
    the destination expect the total bytes (``mbarrier_arrive_expect_tx``)
    and wait on its phase, and keep both CTAs alive (``cluster_sync``) until
    the copy completed.  In checked mode misaligned chunks, mismatched chunk
    counts, a rank outside the cluster or views outside shared memory trap.

    Example::

        # CTA 0 sends 256 bytes to CTA 1
        @cuda.jit
        def send(A, out):
            ac.cluster_dims(2)
            rank = ac.cluster_cta_rank()
            src = cuda.shared.array(64, np.uint32, alignment=16)
            dst = cuda.shared.array(64, np.uint32, alignment=16)
            bar = cuda.shared.array(1, np.uint64, alignment=8)
            ac.mbarrier_init(bar, 1)
            ac.fence_mbarrier_init()
            ac.cluster_sync()
            if rank == 0:
                for i in range(64):
                    src[i] = A[i]
                ac.fence_proxy_async("shared::cta")
                ac.cp_async_bulk_cluster(dst, src, 256, bar, 1)
            else:
                ac.mbarrier_arrive_expect_tx(bar, 256)
                ac.mbarrier_wait_parity(bar, 0)
                for i in range(64):
                    out[i] = dst[i]
            ac.cluster_sync()
    """
    o = validate_cp_async_bulk_cluster(dst, src, chunk_bytes, mbar, remote_cta_id, pred)
    sig = types.void(dst, src, chunk_bytes, mbar, remote_cta_id, pred)

    def codegen(context, builder, sig, args):
        return _lower_bulk_cluster(context, builder, sig, args, o)

    return sig, codegen


# --- what checked mode checks here (the README's table is made from these) ------

def _declare_bulk(api: str, shared: str | None, glob: str | None, mbar: bool = False) -> None:
    if shared:
        _checked.declare(api, shared, _rules.not_in_space, name=shared, space="shared")
    if glob:
        _checked.declare(api, glob, _rules.not_in_space, name=glob, space="global")
    for name in (n for n in (shared, glob) if n):
        _checked.declare(api, name, _rules.bulk_size_multiple, what=f"`{name}` (or a row of it)",
                         size="…")
        _checked.declare(api, name, _rules.bulk_size_limit, what=f"`{name}` (or a row of it)",
                         size="…")
        _checked.declare(api, name, _rules.not_aligned, name=name, align=BULK_ALIGN, addr="…")
    if shared and glob:
        _checked.declare(api, "dst, src", _rules.byte_counts_differ, a_name="dst", a="…",
                         b_name="src", b="…")
    if mbar:
        _checked.declare(api, "mbar", _rules.barrier_empty, name="mbar")
        _checked.declare(api, "mbar", _rules.not_in_space, name="mbar", space="shared")
        _checked.declare(api, "mbar", _rules.not_aligned, name="mbar", align=8, addr="…")


_declare_bulk("cp_async_bulk_g2s", "dst", "src", mbar=True)
_declare_bulk("cp_async_bulk_s2g", "src", "dst")
_declare_bulk("cp_reduce_async_bulk_s2g", "src", "dst")
_declare_bulk("cp_async_bulk_prefetch_l2", None, "src")
_checked.declare(("cp_async_bulk_g2s", "cp_async_bulk_tensor_load"), "multicast_mask",
                 "multicast_mask is 0: the copy would land nowhere")
_checked.declare(("cp_async_bulk_g2s", "cp_async_bulk_tensor_load"), "multicast_mask",
                 "multicast_mask=… names a CTA rank outside this cluster of … CTAs")
_checked.declare("cp_async_bulk_cluster", "remote_cta_id", _rules.outside_cluster,
                 name="remote_cta_id", value="…", n="…", last="…")
for _name in ("dst", "src"):
    _checked.declare("cp_async_bulk_cluster", _name,
                     f"`{_name}` is not a local shared-memory view (base …)")
CHUNKED_VIEWS.declare("cp_async_bulk_cluster", ("src", "dst"), align=BULK_ALIGN,
                      argument="dst, src")
_checked.declare("cp_async_bulk_cluster", "mbar", "`mbar` is not a local shared-memory view (base …)")
_checked.declare("cp_async_bulk_cluster", "mbar", _rules.not_aligned, name="mbar", align=8,
                 addr="…")
