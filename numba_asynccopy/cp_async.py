"""cp.async: global -> shared chunk copies, commit/wait groups, createpolicy.

Typing and validation (``validate_*``) are plain functions over Numba
types; PTX text (``ptx_*``) is built from ``_forms`` by plain functions over
the validated options; the intrinsics glue the two together.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from numba.core import types

from . import _rules
from . import checked as _checked
from ._compat import TypingError, intrinsic
from ._forms import form, select
from ._lowering import (
    I32,
    I64,
    as_i32,
    as_i64,
    asm,
    value_as,
    block_threads,
    is_space,
    linear_tid,
    trap_if,
    statement,
    truth_i32,
    wide_int,
)
from ._regions import (
    CHUNKED_VIEWS,
    View,
    bool_or_runtime,
    check_runtime_scalar,
    cta_chunks,
    each_thread_chunk,
    is_absent,
    literal_value,
)

CHUNK_BYTES = (4, 8, 16)
CACHE_MODES = ("ca", "cg")
PREFETCH = (64, 128, 256)
SCOPES = ("thread", "cta")


@dataclass(frozen=True)
class CpAsyncOptions:
    chunk_bytes: int
    cache: str
    prefetch: int | None
    src_size: bool  # a run-time src_size operand
    ignore_src: bool  # a run-time ignore_src operand
    pred: str  # "always", "never" or "runtime"
    cache_policy: bool
    scope: str


def validate_cp_async(dst, src, chunk_bytes, cache, prefetch, src_size, ignore_src,
                      pred, cache_policy, scope) -> CpAsyncOptions:
    """Compile-time contract of ``cp_async``; returns the lowering options."""
    api = "cp_async"
    select("cp.async")
    chunk = literal_value(chunk_bytes, api, "chunk_bytes", allowed=CHUNK_BYTES)
    mode = literal_value(cache, api, "cache", kind=str, allowed=CACHE_MODES, required=False)
    if mode is None:
        mode = "cg" if chunk == 16 else "ca"
    if mode == "cg" and chunk != 16:
        raise TypingError(
            f"{api}: cache='cg' copies 16-byte chunks only; chunk_bytes={chunk} "
            "needs cache='ca'"
        )
    pf = literal_value(prefetch, api, "prefetch", allowed=PREFETCH, required=False)
    sc = literal_value(scope, api, "scope", kind=str, allowed=SCOPES)
    CHUNKED_VIEWS.check_types(api, chunk, ("dst", dst), ("src", src))

    has_size = not is_absent(src_size)
    if has_size:
        check_runtime_scalar(src_size, api, "src_size")
        if isinstance(src_size, types.IntegerLiteral) and not 0 <= src_size.literal_value <= chunk:
            raise TypingError(
                f"{api}: {_rules.src_size_outside(size=src_size.literal_value, chunk=chunk)}"
            )
    has_ignore = bool_or_runtime(ignore_src, api, "ignore_src") is not False
    if has_size and has_ignore:
        raise TypingError(
            f"{api}: src_size and ignore_src are alternative zero-fill forms; "
            "supply one of them, not both"
        )
    p = bool_or_runtime(pred, api, "pred")
    has_policy = not is_absent(cache_policy)
    if has_policy:
        check_runtime_scalar(cache_policy, api, "cache_policy")
    return CpAsyncOptions(
        chunk_bytes=chunk, cache=mode, prefetch=pf, src_size=has_size,
        ignore_src=has_ignore,
        pred={True: "always", False: "never", None: "runtime"}[p],
        cache_policy=has_policy, scope=sc,
    )


def ptx_cp_async(o: CpAsyncOptions) -> tuple[str, str]:
    """(asm text, constraints) of one chunk copy; operands in the order
    dst(r), src(l), [src_size(r)], [ignore_src(r)], [pred(r)], [policy(l)]."""
    opcode = form("cp.async").opcode.format(
        cache=o.cache,
        hint=".L2::cache_hint" if o.cache_policy else "",
        prefetch=f".L2::{o.prefetch}B" if o.prefetch else "",
    )
    operands = ["[$0]", "[$1]", str(o.chunk_bytes)]
    constraints = ["r", "l"]
    decls, setps = [], []
    n = 2
    if o.src_size:
        operands.append(f"${n}")
        constraints.append("r")
        n += 1
    if o.ignore_src:
        decls.append(".reg .pred ign;")
        setps.append(f"setp.ne.b32 ign, ${n}, 0;")
        operands.append("ign")
        constraints.append("r")
        n += 1
    guard = ""
    if o.pred == "runtime":
        decls.append(".reg .pred p;")
        setps.append(f"setp.ne.b32 p, ${n}, 0;")
        guard = "@p "
        constraints.append("r")
        n += 1
    if o.cache_policy:
        operands.append(f"${n}")
        constraints.append("l")
        n += 1
    instr = f"{guard}{opcode} {', '.join(operands)};"
    if decls:
        instr = "{ " + " ".join(decls + setps + [instr]) + " }"
    return instr, ",".join(constraints)


def _lower_cp_async(context, builder, sig, args, o: CpAsyncOptions):
    if o.pred == "never":
        return context.get_dummy_value()
    api = "cp_async"
    dty, sty = sig.args[0], sig.args[1]
    d = View(context, builder, dty, args[0], "dst")
    s = View(context, builder, sty, args[1], "src")
    extra = []
    if o.src_size:
        size = as_i32(context, builder, args[5], sig.args[5])
        extra.append(size)
    if o.ignore_src:
        extra.append(truth_i32(context, builder, args[6], sig.args[6]))
    if o.pred == "runtime":
        extra.append(truth_i32(context, builder, args[7], sig.args[7]))
    if o.cache_policy:
        extra.append(as_i64(context, builder, args[8], sig.args[8]))
    if _checked._note_compiled():
        not_shared = builder.not_(is_space(builder, d.data, "shared"))
        trap_if(context, builder, not_shared, api, _rules.not_in_space(name="dst", space="shared"))
        not_global = builder.not_(is_space(builder, s.data, "global"))
        trap_if(context, builder, not_global, api, _rules.not_in_space(name="src", space="global"))
        CHUNKED_VIEWS.emit(context, builder, api, [d, s], o.chunk_bytes)
        if o.src_size and not isinstance(sig.args[5], types.Literal):
            # on the full width: a 64-bit 2**32 + 4 must not pass as 4, nor -1 as 2**32-1
            v, signed = wide_int(context, builder, args[5], sig.args[5])
            cmp = builder.icmp_signed if signed else builder.icmp_unsigned
            bad = builder.or_(cmp("<", v, ir.Constant(I64, 0)),
                              cmp(">", v, ir.Constant(I64, o.chunk_bytes)))
            trap_if(context, builder, bad, api,
                    _rules.src_size_outside(size="%lld" if signed else "%llu",
                                            chunk=o.chunk_bytes), [v])
    text, constraints = ptx_cp_async(o)

    def issue(outer, c):
        da = d.shared_chunk(builder, outer, c, o.chunk_bytes)
        sa = s.global_chunk(builder, outer, c, o.chunk_bytes)
        asm(builder, text, constraints, [da, sa] + extra)

    if o.scope == "thread":
        each_thread_chunk(builder, d, o.chunk_bytes, issue)
    else:
        with cta_chunks(builder, d, o.chunk_bytes, linear_tid(builder), block_threads(builder)) as (outer, c):
            issue(outer, c)
    return context.get_dummy_value()


@intrinsic
def cp_async(typingctx, dst, src, chunk_bytes, *, cache=None, prefetch=None, src_size=None,
             ignore_src=False, pred=True, cache_policy=None, scope="thread"):
    """Asynchronously copy ``src`` (global) into ``dst`` (shared) in chunks.

    PTX: ``cp.async.{ca,cg}.shared.global{.L2::cache_hint}{.L2::NB}`` (sm_80,
    PTX ISA 7.0; the cache hint and prefetch need PTX ISA 7.4).

    - ``dst``: a view of a shared-memory array; ``src``: a view of a global
      array, of the same rank.  Each view's last axis is split into chunks of
      ``chunk_bytes``; the other axes and the chunks are repeats, one
      instruction per chunk.  The dtypes may differ (a bit copy).
    - ``chunk_bytes``: constant 4, 8 or 16.
    - ``cache``: ``"ca"`` (4/8/16) or ``"cg"`` (16 only).  Default: ``"cg"``
      for 16-byte chunks (streams through L2, skips L1), ``"ca"`` otherwise.
    - ``prefetch``: 64, 128 or 256 (``.L2::NB``), a hint, not a larger copy.
    - ``src_size`` (run time, 0..chunk_bytes): copy that prefix of every
      chunk and zero the rest.  ``ignore_src`` (run-time bool): zero every
      chunk.  They are alternatives.
    - ``pred`` (run-time bool): False issues nothing, leaving ``dst`` as it was.
    - ``cache_policy`` (run-time uint64 from :func:`createpolicy_fractional`).
    - ``scope``: ``"thread"`` (this thread copies every chunk of its views) or
      ``"cta"``: every thread of the block passes the same whole tile and
      linear chunk ``k`` (C order over (repeats..., chunk)) is copied by the
      thread whose linear index is ``k % block_size`` (coalesced).

    Completion: :func:`commit_group` then :func:`wait_group`, then
    ``cuda.syncthreads()`` before other threads read the tile.

    Example::

        @cuda.jit
        def shift_rows(A, B):            # A, B: float32[64, 4]
            tid = cuda.threadIdx.x
            sh = cuda.shared.array((64, 4), np.float32, alignment=16)
            ac.cp_async(sh[tid, :], A[tid, :], 16)
            ac.commit_group()
            ac.wait_group(0)
            cuda.syncthreads()
            for j in range(4):
                B[tid, j] = sh[(tid + 1) % 64, j]
    """
    o = validate_cp_async(dst, src, chunk_bytes, cache, prefetch, src_size, ignore_src,
                          pred, cache_policy, scope)
    sig = types.void(dst, src, chunk_bytes, cache, prefetch, src_size, ignore_src, pred,
                     cache_policy, scope)

    def codegen(context, builder, sig, args):
        return _lower_cp_async(context, builder, sig, args, o)

    return sig, codegen


@intrinsic
def commit_group(typingctx):
    """Commit this thread's uncommitted cp.async copies as one group.

    PTX: ``cp.async.commit_group;`` (sm_80).

    Example::

        ac.cp_async(sh[tid, :], A[tid, :], 16)
        ac.commit_group()
    """
    f = form("cp.async.commit_group")

    return types.void(), statement(f.opcode + ";")


@intrinsic
def wait_group(typingctx, n):
    """Wait until at most ``n`` of this thread's newest groups are pending.

    PTX: ``cp.async.wait_group N;`` (sm_80), whose ``N`` is an immediate.
    A constant ``n`` (0..2**31-1) emits that one instruction.  A run-time
    integer ``n`` (say ``stages - 2`` of a pipeline built for several depths)
    lowers to a switch over ``cp.async.wait_group 0`` .. ``7``: a depth of 7
    or more waits as for 7 (never fewer groups landed than asked).  A
    negative run-time ``n`` traps in checked mode and otherwise waits for
    every group (``0``).

    Example::

        ac.commit_group()        # group of stage s
        ac.wait_group(1)         # all but the newest group have landed
        ac.wait_group(stages - 2)  # a run-time depth
    """
    api = "wait_group"
    f = form("cp.async.wait_group")
    if isinstance(n, (types.IntegerLiteral, types.Omitted)):
        count = literal_value(n, api, "n")
        if count < 0:
            raise TypingError(f"{api}: {_rules.wait_count_negative(count=count)}")
        if count > WAIT_GROUP_MAX:
            raise TypingError(f"{api}: {_rules.outside_range(name='n', value=count, lo=0, hi='2**31-1')}")
        return types.void(n), statement(f"{f.opcode} {count};")
    check_runtime_scalar(n, api, "n", (types.Integer,))

    def codegen(context, builder, sig, args):
        _lower_wait_depth(context, builder, sig.args[0], args[0], f.opcode)
        return context.get_dummy_value()

    return types.void(n), codegen


WAIT_GROUP_MAX = (1 << 31) - 1
# a run-time depth: the immediates 0..RUNTIME_WAIT_DEPTHS-1, deeper waits as the last
RUNTIME_WAIT_DEPTHS = 8


def _lower_wait_depth(context, builder, ty, value, opcode: str) -> None:
    """``switch (clamp(n, 0, 7))`` with one ``cp.async.wait_group k`` per case;
    the comparisons are on the full-width value (no truncation first)."""
    wide = ir.IntType(ty.bitwidth)
    zero, top = ir.Constant(wide, 0), ir.Constant(wide, RUNTIME_WAIT_DEPTHS - 1)
    neg = builder.icmp_signed("<", value, zero) if ty.signed else ir.Constant(ir.IntType(1), 0)
    if ty.signed and _checked._note_compiled():
        trap_if(context, builder, neg, "wait_group",
                _rules.wait_count_negative(count="%lld"), [builder.sext(value, I64)])
    big = (builder.icmp_signed if ty.signed else builder.icmp_unsigned)(">", value, top)
    depth = builder.select(neg, zero, builder.select(big, top, value))
    depth = builder.trunc(depth, I32) if ty.bitwidth > 32 else builder.zext(depth, I32) \
        if ty.bitwidth < 32 else depth
    fn = builder.function
    done = fn.append_basic_block("wait_group.done")
    cases = [fn.append_basic_block(f"wait_group.{k}") for k in range(RUNTIME_WAIT_DEPTHS)]
    switch = builder.switch(depth, cases[-1])
    for k, block in enumerate(cases):
        if k < RUNTIME_WAIT_DEPTHS - 1:
            switch.add_case(ir.Constant(I32, k), block)
        builder.position_at_end(block)
        asm(builder, f"{opcode} {k};", "")
        builder.branch(done)
    builder.position_at_end(done)


@intrinsic
def wait_all(typingctx):
    """Commit and wait for all of this thread's cp.async copies.

    PTX: ``cp.async.wait_all;`` (sm_80).

    Example::

        ac.cp_async(sh[tid, :], A[tid, :], 16)
        ac.wait_all()
        cuda.syncthreads()
    """
    f = form("cp.async.wait_all")

    return types.void(), statement(f.opcode + ";")


POLICY_PRIMARY = ("evict_last", "evict_normal", "evict_first", "evict_unchanged")
POLICY_SECONDARY = ("evict_first", "evict_unchanged")


@intrinsic
def createpolicy_fractional(typingctx, primary="evict_last", secondary=None, fraction=1.0):
    """Build an L2 cache policy (uint64) for ``cp_async(..., cache_policy=)``.

    PTX: ``createpolicy.fractional.L2::primary{.L2::secondary}.b64`` (sm_80,
    PTX ISA 7.4).  ``primary``/``secondary`` are constants; ``fraction``
    (0 < f <= 1, checked in checked mode) is the share of accesses that get the primary priority.

    Example::

        pol = ac.createpolicy_fractional("evict_first")
        ac.cp_async(sh[tid, :], A[tid, :], 16, cache_policy=pol)
    """
    api = "createpolicy_fractional"
    f = form("createpolicy")
    prim = literal_value(primary, api, "primary", kind=str, allowed=POLICY_PRIMARY)
    sec = literal_value(secondary, api, "secondary", kind=str, allowed=POLICY_SECONDARY,
                        required=False)
    # Numba has no float literals: the (0, 1] range is checked in checked mode.
    check_runtime_scalar(fraction, api, "fraction", (types.Float, types.Integer))
    if isinstance(fraction, types.IntegerLiteral) and fraction.literal_value != 1:
        # the one integer in (0, 1]; floats have no literal type, checked mode checks them
        raise TypingError(f"{api}: {_rules.fraction_range(fraction=fraction.literal_value)}")
    opcode = f.opcode.format(primary=prim, secondary=f".L2::{sec}" if sec else "")

    def codegen(context, builder, sig, args):
        frac = value_as(context, builder, args[2], sig.args[2], types.float32)
        if _checked._note_compiled():
            bad = builder.not_(builder.and_(
                builder.fcmp_ordered(">", frac, ir.Constant(frac.type, 0.0)),
                builder.fcmp_ordered("<=", frac, ir.Constant(frac.type, 1.0))))
            trap_if(context, builder, bad, api, _rules.fraction_range(fraction="%f"),
                    [builder.fpext(frac, ir.DoubleType())])
        return asm(builder, f"{opcode} $0, $1;", "=l,f", [frac], ret=I64,
                   clobber_memory=False)

    return types.uint64(primary, secondary, fraction), codegen


# --- what checked mode checks here (the README's table is made from these) ------

_checked.declare("cp_async", "dst", _rules.not_in_space, name="dst", space="shared")
_checked.declare("cp_async", "src", _rules.not_in_space, name="src", space="global")
CHUNKED_VIEWS.declare("cp_async", ("dst", "src"))
_checked.declare("cp_async", "src_size", _rules.src_size_outside, size="…", chunk="chunk_bytes")
_checked.declare("wait_group", "n", _rules.wait_count_negative, count="…")
_checked.declare("createpolicy_fractional", "fraction", _rules.fraction_range, fraction="…")
