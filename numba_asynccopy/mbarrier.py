"""mbarrier: split arrive/wait barriers with transaction counts.

A barrier is the first element of a shared-memory ``uint64`` array view:
``bars = cuda.shared.array(4, np.uint64)`` holds four barriers and
``bars[i:]`` names barrier ``i``.  Every function here takes such a view
(other dtypes are a compile-time error).

Memory-order options follow PTX: arrives take ``sem="release"|"relaxed"``
and ``scope="cta"|"cluster"``; waits take ``sem="acquire"|"relaxed"``.
Leaving both out emits the unqualified form (PTX's default, release/acquire
at CTA scope), which also runs on sm_80; naming either emits the qualified
sm_90 form with both written.

``cta_rank=`` (arrive, expect_tx, arrive_expect_tx) targets the same barrier
in another CTA of the cluster (sm_90): the local view is mapped there with
``mapa`` and the ``.shared::cluster`` form is emitted (the lowering is the
cluster family's, shared with the ``*_remote`` spellings).

Typing and validation (``validate_*``) are plain functions over Numba
types that return small option records; PTX text (``ptx_*``) is built from
``_forms`` by plain functions over them; the intrinsics glue the two
together with one codegen per kind of instruction.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from numba.core import types

from . import _rules
from . import checked as _checked
from ._compat import TypingError, compile_cc, intrinsic
from ._forms import FORMS, form, select
from ._lowering import (
    I32,
    I64,
    as_i32,
    as_i64,
    asm,
    check_range_full,
    instruction,
    predicate,
    trap_if,
)
from ._regions import (
    barrier_addr32,
    bool_constant,
    check_barrier,
    check_barrier_view,
    check_runtime_scalar,
    is_absent,
    literal_value,
)
from ._rules import MAX_COUNT, MAX_SUSPEND_HINT, MAX_TX  # re-exported: expected arrivals, transaction bytes
from .cluster import RemoteBarrierOp, check_rank_arg, lower_remote_barrier_op

ARRIVE_SEMS = ("release", "relaxed")
WAIT_SEMS = ("acquire", "relaxed")
SCOPES = ("cta", "cluster")


@dataclass(frozen=True)
class Order:
    """Memory-order qualifiers; ``text`` is "" for PTX's default form."""

    text: str

    @property
    def explicit(self) -> bool:
        return bool(self.text)


def validate_order(api: str, sem, scope, sems, default_sem: str) -> Order:
    s = literal_value(sem, api, "sem", kind=str, allowed=sems, required=False)
    c = literal_value(scope, api, "scope", kind=str, allowed=SCOPES, required=False)
    if s is None and c is None:
        return Order("")
    return Order(f".{s or default_sem}.{c or 'cta'}")


def validate_count(api: str, name: str, ty, lo: int, hi: int):
    """A literal is range-checked now; a run-time value in checked mode."""
    check_runtime_scalar(ty, api, name)
    if isinstance(ty, types.IntegerLiteral):
        v = ty.literal_value
        if not lo <= v <= hi:
            raise TypingError(f"{api}: {_rules.outside_range(name=name, value=v, lo=lo, hi=hi)}")
        return v
    if isinstance(ty, types.Omitted):
        return ty.value
    return None


# checked mode's blocking-wait watchdog: the clock, and the barrier word it reports
_GLOBALTIMER = f"mov.u64 $0, {form('sreg.globaltimer').opcode};"
_LOAD_WORD = f"{form('ld.volatile.shared.b64').opcode} $0, [$1];"


def _addr(context, builder, sig, args, api: str, i=0):
    """32-bit shared address of the barrier argument ``i``; checked mode
    first checks the view (not empty, in this CTA's shared memory, 8-byte
    aligned): an mbarrier instruction on any other address is an illegal
    instruction with no message."""
    if _checked._note_compiled():
        check_barrier_view(context, builder, api, "bar", sig.args[i], args[i])
    return barrier_addr32(context, builder, sig.args[i], args[i])


def _pred_asm(builder, text: str, constraints: str, operands):
    """Run an instruction that sets predicate ``p``; return it as i1."""
    return predicate(builder, text, constraints, operands)


# --- one instruction on a barrier of this CTA: options, PTX text, codegen ------


@dataclass(frozen=True)
class BarrierOp:
    """What typing decided for one mbarrier instruction on a local barrier."""

    key: str  # the registry row
    sem: str = ""  # text of the row's ``{sem}`` slot ("" = PTX's default ordering)
    state: bool = False  # the instruction returns the phase state (``state, [a]``)
    value: str | None = None  # the run-time operand after ``[a]``: "count", "nbytes" or None
    lo: int = 0  # the range of ``value`` that checked mode enforces
    hi: int = 0


def ptx_barrier_op(o: BarrierOp) -> tuple[str, str]:
    """(asm text, constraints): [state (=l)], the barrier (r), [value (r)]."""
    ops, cons = (["$0"], ["=l"]) if o.state else ([], [])
    ops.append(f"[${len(cons)}]")
    cons.append("r")
    if o.value:
        ops.append(f"${len(cons)}")
        cons.append("r")
    return instruction(form(o.key).opcode.format(sem=o.sem), ops, cons)


def lower_barrier_op(o: BarrierOp, api: str):
    """Codegen of ``o``: the barrier is argument 0, the value argument 1."""

    def codegen(context, builder, sig, args):
        ops = [_addr(context, builder, sig, args, api)]
        if o.value:
            if _checked._note_compiled():  # on the full width, before the 32-bit operand
                check_range_full(context, builder, api, o.value, args[1], sig.args[1], o.lo, o.hi)
            ops.append(as_i32(context, builder, args[1], sig.args[1]))
        text, constraints = ptx_barrier_op(o)
        if o.state:
            return asm(builder, text, constraints, ops, ret=I64)
        asm(builder, text, constraints, ops)
        return context.get_dummy_value()

    return codegen


# --- the same operations on the barrier of another CTA (``cta_rank=``) ---------


@dataclass(frozen=True)
class RemoteForm:
    """The ``.shared::cluster`` row an operation emits with ``cta_rank``,
    and the one ordering that row is written with."""

    key: str
    sink: bool  # an arrive (PTX's ``_`` in place of the state)
    sems: tuple[str, ...]  # the ``sem`` values it accepts (() where there is no ``sem``)
    scopes: tuple[str, ...]
    default_value: int | None  # a value PTX leaves out when it is this (a count of 1)
    # (scope, row): a scope other than the first of ``scopes`` emits its own row
    by_scope: tuple[tuple[str, str], ...] = ()


_REMOTE = {
    "mbarrier_arrive": RemoteForm("mbarrier.arrive.remote", True, ("release",), ("cluster", "cta"),
                                  1, by_scope=(("cta", "mbarrier.arrive.remote.cta"),)),
    "mbarrier_expect_tx": RemoteForm("mbarrier.expect_tx.remote", False, (), ("cluster",), None),
    "mbarrier_arrive_expect_tx": RemoteForm("mbarrier.arrive.expect_tx.remote", True, ("release",),
                                            ("cluster",), None),
}


def validate_remote(api: str, bar, value, sem, scope, cta_rank, *, name: str, lo: int,
                    hi: int) -> RemoteBarrierOp:
    """Typing of an operation with ``cta_rank``: the ordering must be the one
    the ``.shared::cluster`` form is written with; ``value`` (``name``) is
    range-checked as for the local form."""
    r = _REMOTE[api]
    check_barrier(api, "bar", bar)
    s = literal_value(sem, api, "sem", kind=str, allowed=ARRIVE_SEMS, required=False)
    c = literal_value(scope, api, "scope", kind=str, allowed=SCOPES, required=False)
    for what, val, allowed in (("sem", s, r.sems), ("scope", c, r.scopes)):
        if val is not None and val not in allowed:
            raise TypingError(
                f"{api}: `{what}`={val!r} is not supported with `cta_rank`: the barrier of "
                f"another CTA is reached by `{FORMS[r.key].opcode}`; allowed: "
                + ", ".join(repr(a) for a in allowed))
    v = validate_count(api, name, value, lo, hi)
    check_rank_arg(api, "cta_rank", cta_rank)
    key = dict(r.by_scope).get(c, r.key)
    select(key)
    has_value = r.default_value is None or v != r.default_value
    return RemoteBarrierOp(key, sink=r.sink, value=has_value, name=name, lo=lo, hi=hi)


def lower_remote(o: RemoteBarrierOp, api: str, rank_at: int):
    """Codegen of a ``cta_rank=`` form: the value is argument 1."""

    def codegen(context, builder, sig, args):
        return lower_remote_barrier_op(context, builder, sig, args, o, api, rank_at, 1)

    return codegen


# --- init / inval -----------------------------------------------------------


@intrinsic
def mbarrier_init(typingctx, bar, count):
    """Initialise the barrier for ``count`` expected arrivals (1..2^20-1).

    PTX: ``mbarrier.init.shared.b64 [a], count;`` (sm_80).  Initialise from one
    thread, then ``cuda.syncthreads()``.  Before a bulk or TMA copy completes
    on the barrier (the async proxy), that thread calls
    ``fence_proxy_async("shared::cta")`` after the inits; before another CTA
    of the cluster uses it, :func:`fence_mbarrier_init` and a cluster barrier
    (``cluster_sync``) instead of ``cuda.syncthreads()``.

    Example::

        bars = cuda.shared.array(2, np.uint64)
        if cuda.threadIdx.x == 0:
            ac.mbarrier_init(bars[0:], cuda.blockDim.x)
        cuda.syncthreads()
    """
    api = "mbarrier_init"
    select("mbarrier.init")
    check_barrier(api, "bar", bar)
    validate_count(api, "count", count, 1, MAX_COUNT)
    o = BarrierOp("mbarrier.init", value="count", lo=1, hi=MAX_COUNT)
    return types.void(bar, count), lower_barrier_op(o, api)


@intrinsic
def mbarrier_inval(typingctx, bar):
    """Invalidate the barrier (before re-initialising or reusing its memory).

    PTX: ``mbarrier.inval.shared.b64 [a];`` (sm_80).

    Example::

        if cuda.threadIdx.x == 0:
            ac.mbarrier_inval(bars[0:])
    """
    select("mbarrier.inval")
    check_barrier("mbarrier_inval", "bar", bar)
    return types.void(bar), lower_barrier_op(BarrierOp("mbarrier.inval"), "mbarrier_inval")


# --- arrives ----------------------------------------------------------------

# arrive / arrive_drop: (row of one arrival, row with a count, row with an
# explicit ordering, count or not)
_ARRIVE_ROWS = {
    "mbarrier_arrive": ("mbarrier.arrive", "mbarrier.arrive.count", "mbarrier.arrive.sem"),
    "mbarrier_arrive_drop": ("mbarrier.arrive_drop", "mbarrier.arrive_drop.count",
                             "mbarrier.arrive_drop.count"),
}


def validate_arrive(api: str, bar, count, sem, scope) -> BarrierOp:
    """arrive / arrive_drop: PTX's unqualified sm_80 form for one arrival
    with default ordering, else the ``.shared::cta`` form (sm_90)."""
    check_barrier(api, "bar", bar)
    order = validate_order(api, sem, scope, ARRIVE_SEMS, "release")
    c = validate_count(api, "count", count, 1, MAX_COUNT)
    one, counted, ordered = _ARRIVE_ROWS[api]
    key = ordered if order.explicit else one if c == 1 else counted
    select(key)
    return BarrierOp(key, order.text, state=True, value="count" if c != 1 else None,
                     lo=1, hi=MAX_COUNT)


def validate_no_complete(api: str, key: str, bar, count) -> BarrierOp:
    select(key)
    check_barrier(api, "bar", bar)
    validate_count(api, "count", count, 1, MAX_COUNT)
    return BarrierOp(key, state=True, value="count", lo=1, hi=MAX_COUNT)


@intrinsic
def mbarrier_arrive(typingctx, bar, count=1, *, sem=None, scope=None, cta_rank=None):
    """Arrive on the barrier (``count`` arrivals); returns the phase state.

    PTX: ``mbarrier.arrive.shared.b64 state, [a];`` (sm_80) for one arrival
    with default ordering; ``mbarrier.arrive{.sem.scope}.shared::cta.b64
    state, [a], count;`` (sm_90) for a count or explicit ``sem``/``scope``.

    ``cta_rank`` (run time allowed): arrive on the same barrier in CTA
    ``cta_rank`` of the cluster instead (``mapa`` + ``mbarrier.arrive.release
    .cluster.shared::cluster.b64 _, [addr]{, count}``, sm_90, PTX ISA 8.0).
    PTX gives a remote arrive no state, so this form returns nothing; its
    ordering is release at cluster scope (``sem`` may only name it), the
    same as :func:`mbarrier_arrive_remote`.  ``scope="cta"`` with
    ``cta_rank`` emits ``mbarrier.arrive.release.cta.shared::cluster.b64``
    (PTX's default ordering of the remote arrive): ptxas puts no GPU-scope
    fence (``MEMBAR.ALL.GPU``) before it, and it publishes none of this
    thread's writes to the peer CTA; it only counts the arrival, for a
    thread that tells the peer it is done *reading* (its reads completed,
    e.g. by ``wgmma_wait_group``), as ``consumer_release`` of a cluster
    pipeline does.

    Example::

        state = ac.mbarrier_arrive(bars[0:])
        ac.mbarrier_wait(bars[0:], state)
        ac.mbarrier_arrive(bars[1:], cta_rank=0)   # tell CTA 0 of the cluster
        ac.mbarrier_arrive(bars[2:], cta_rank=1, scope="cta")  # done reading
    """
    api = "mbarrier_arrive"
    if not is_absent(cta_rank):
        o = validate_remote(api, bar, count, sem, scope, cta_rank, name="count", lo=1,
                            hi=MAX_COUNT)
        return types.void(bar, count, sem, scope, cta_rank), lower_remote(o, api, 4)
    o = validate_arrive(api, bar, count, sem, scope)
    return types.uint64(bar, count, sem, scope, cta_rank), lower_barrier_op(o, api)


@intrinsic
def mbarrier_arrive_drop(typingctx, bar, count=1, *, sem=None, scope=None):
    """Arrive and lower the expected count of every later phase by ``count``.

    PTX: ``mbarrier.arrive_drop.shared.b64 state, [a];`` (sm_80);
    ``mbarrier.arrive_drop{.sem.scope}.shared::cta.b64 state, [a], count;``
    (sm_90) with a count or explicit ordering.

    Example::

        if done_early:                    # this thread leaves the pipeline
            ac.mbarrier_arrive_drop(bars[0:])
    """
    api = "mbarrier_arrive_drop"
    o = validate_arrive(api, bar, count, sem, scope)
    return types.uint64(bar, count, sem, scope), lower_barrier_op(o, api)


@intrinsic
def mbarrier_arrive_drop_no_complete(typingctx, bar, count):
    """:func:`mbarrier_arrive_drop` of ``count`` that must not complete the phase.

    PTX: ``mbarrier.arrive_drop.noComplete.shared.b64 state, [a], count;`` (sm_80).

    Example::

        st = ac.mbarrier_arrive_drop_no_complete(bars[0:], 2)
    """
    api = "mbarrier_arrive_drop_no_complete"
    o = validate_no_complete(api, "mbarrier.arrive_drop.noComplete", bar, count)
    return types.uint64(bar, count), lower_barrier_op(o, api)


@intrinsic
def mbarrier_arrive_no_complete(typingctx, bar, count):
    """Arrive ``count`` times without completing the phase; returns the state.

    PTX: ``mbarrier.arrive.noComplete.shared.b64 state, [a], count;`` (sm_80).
    The arrivals must leave at least one pending: completing the phase with
    it is undefined behaviour (PTX).  Its state feeds
    :func:`mbarrier_pending_count`.

    Example::

        st = ac.mbarrier_arrive_no_complete(bars[0:], 2)
        left = ac.mbarrier_pending_count(st)
    """
    api = "mbarrier_arrive_no_complete"
    o = validate_no_complete(api, "mbarrier.arrive.noComplete", bar, count)
    return types.uint64(bar, count), lower_barrier_op(o, api)


# --- transaction counts -----------------------------------------------------


def validate_tx(api: str, key: str, bar, nbytes, scope, *, arrive: bool = False,
                sem=None) -> BarrierOp:
    """expect_tx / complete_tx (``scope`` only: relaxed), or with ``arrive``
    arrive_expect_tx (``sem`` and ``scope``, returns the state)."""
    check_barrier(api, "bar", bar)
    validate_count(api, "nbytes", nbytes, 0, MAX_TX)
    if arrive:
        order = validate_order(api, sem, scope, ARRIVE_SEMS, "release")
    else:
        c = literal_value(scope, api, "scope", kind=str, allowed=SCOPES, required=False)
        order = Order(f".relaxed.{c}" if c else "")
    select(key)
    return BarrierOp(key, order.text, state=arrive, value="nbytes", lo=0, hi=MAX_TX)


@intrinsic
def mbarrier_expect_tx(typingctx, bar, nbytes, *, scope=None, cta_rank=None):
    """Raise the current phase's expected transaction bytes by ``nbytes``.

    PTX: ``mbarrier.expect_tx{.relaxed.scope}.shared::cta.b64 [a], tx;``
    (sm_90, PTX ISA 8.0).

    ``cta_rank`` (run time allowed): raise them on the same barrier in CTA
    ``cta_rank`` of the cluster instead (``mapa`` +
    ``mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64``; ``scope``
    may only be ``"cluster"``).  Same as :func:`mbarrier_expect_tx_remote`.

    Example::

        ac.mbarrier_expect_tx(bars[0:], 4096)
        ac.mbarrier_expect_tx(bars[0:], 4096, cta_rank=peer)
    """
    api = "mbarrier_expect_tx"
    if not is_absent(cta_rank):
        o = validate_remote(api, bar, nbytes, None, scope, cta_rank, name="nbytes", lo=0,
                            hi=MAX_TX)
        return types.void(bar, nbytes, scope, cta_rank), lower_remote(o, api, 3)
    o = validate_tx(api, "mbarrier.expect_tx", bar, nbytes, scope)
    return types.void(bar, nbytes, scope, cta_rank), lower_barrier_op(o, api)


@intrinsic
def mbarrier_complete_tx(typingctx, bar, nbytes, *, scope=None):
    """Mark ``nbytes`` transaction bytes of the current phase as done.

    PTX: ``mbarrier.complete_tx{.relaxed.scope}.shared::cta.b64 [a], tx;``
    (sm_90, PTX ISA 8.0).

    Example::

        ac.mbarrier_complete_tx(bars[0:], 256)
    """
    api = "mbarrier_complete_tx"
    o = validate_tx(api, "mbarrier.complete_tx", bar, nbytes, scope)
    return types.void(bar, nbytes, scope), lower_barrier_op(o, api)


@intrinsic
def mbarrier_arrive_expect_tx(typingctx, bar, nbytes, *, sem=None, scope=None, cta_rank=None):
    """Expect ``nbytes`` transaction bytes and arrive once; returns the state.

    PTX: ``mbarrier.arrive.expect_tx{.sem.scope}.shared::cta.b64 state, [a],
    tx;`` (sm_90, PTX ISA 8.0).  The usual call before a bulk or TMA load.

    ``cta_rank`` (run time allowed): do it on the same barrier in CTA
    ``cta_rank`` of the cluster instead (``mapa`` +
    ``mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _,
    [addr], tx``; ``sem``/``scope`` may only name release/cluster).  PTX
    gives a remote arrive no state, so this form returns nothing.  Same as
    :func:`mbarrier_arrive_expect_tx_remote`.

    Example::

        if cuda.threadIdx.x == 0:
            ac.mbarrier_arrive_expect_tx(bars[0:], 256)
        ac.mbarrier_wait_parity(bars[0:], 0)
    """
    api = "mbarrier_arrive_expect_tx"
    if not is_absent(cta_rank):
        o = validate_remote(api, bar, nbytes, sem, scope, cta_rank, name="nbytes", lo=0,
                            hi=MAX_TX)
        return types.void(bar, nbytes, sem, scope, cta_rank), lower_remote(o, api, 4)
    o = validate_tx(api, "mbarrier.arrive.expect_tx", bar, nbytes, scope, arrive=True, sem=sem)
    return types.uint64(bar, nbytes, sem, scope, cta_rank), lower_barrier_op(o, api)


# --- waits ------------------------------------------------------------------


# (instruction, by parity) -> its row with PTX's default ordering, and its
# text in the ``{op}`` slot of the explicitly ordered row
_WAIT_ROWS = {
    ("test_wait", False): ("mbarrier.test_wait", "test_wait"),
    ("test_wait", True): ("mbarrier.test_wait.parity", "test_wait.parity"),
    ("try_wait", False): ("mbarrier.try_wait", "try_wait"),
    ("try_wait", True): ("mbarrier.try_wait.parity", "try_wait.parity"),
}


@dataclass(frozen=True)
class WaitOptions:
    """What typing decided for one test_wait / try_wait instruction."""

    key: str  # the registry row
    op: str  # its ``{op}`` slot (the explicitly ordered row)
    sem: str  # its ``{sem}`` slot ("" = PTX's default ordering)
    parity: bool  # waits by phase parity (r) rather than by state (l)
    hint: bool = False  # try_wait's suspend-time hint operand


def validate_wait(api: str, op: str, parity: bool, sem, scope, hint: bool = False) -> WaitOptions:
    order = validate_order(api, sem, scope, WAIT_SEMS, "acquire")
    row, op_text = _WAIT_ROWS[(op, parity)]
    key = "mbarrier.wait.sem" if order.explicit else row
    select(key)
    return WaitOptions(key, op_text, order.text, parity, hint)


def ptx_wait(o: WaitOptions) -> tuple[str, str]:
    """(asm text, constraints) setting predicate ``p``: the barrier (r), the
    state (l) or parity (r), [the hint (r)]; ``$0`` is the predicate's
    result (see ``_lowering.predicate``)."""
    ops, cons = ["p", "[$1]", "$2"], ["r", "r" if o.parity else "l"]
    if o.hint:
        ops.append("$3")
        cons.append("r")
    return instruction(form(o.key).opcode.format(op=o.op, sem=o.sem), ops, cons)


def _phase_operand(context, builder, sig, args, parity: bool, api: str):
    if parity:
        if _checked._note_compiled():
            check_range_full(context, builder, api, "parity", args[1], sig.args[1], 0, 1,
                             rule=_rules.parity_bit)
        return as_i32(context, builder, args[1], sig.args[1])
    return as_i64(context, builder, args[1], sig.args[1])


def _check_phase_type(api, parity: bool, value):
    if parity:
        check_runtime_scalar(value, api, "parity", (types.Integer, types.Boolean))
        if isinstance(value, types.IntegerLiteral) and value.literal_value not in (0, 1):
            raise TypingError(f"{api}: {_rules.parity_bit(name='parity', value=value.literal_value)}")
    else:
        check_runtime_scalar(value, api, "state")


def _test_wait(api, parity, bar, value, sem, scope):
    check_barrier(api, "bar", bar)
    _check_phase_type(api, parity, value)
    o = validate_wait(api, "test_wait", parity, sem, scope)
    return _lower_poll(o, api)


def _try_wait(api, parity, bar, value, hint, sem, scope):
    check_barrier(api, "bar", bar)
    _check_phase_type(api, parity, value)
    has_hint = not is_absent(hint)
    if has_hint:
        validate_count(api, "suspend_hint_ns", hint, 0, MAX_SUSPEND_HINT)
    o = validate_wait(api, "try_wait", parity, sem, scope, has_hint)
    return _lower_poll(o, api)


def _lower_poll(o: WaitOptions, api: str):
    """Codegen of test_wait / try_wait: barrier, state or parity, [hint]."""

    def codegen(context, builder, sig, args):
        a = _addr(context, builder, sig, args, api)
        ops = [a, _phase_operand(context, builder, sig, args, o.parity, api)]
        if o.hint:
            if _checked._note_compiled():
                check_range_full(context, builder, api, "suspend_hint_ns", args[2], sig.args[2],
                                 0, MAX_SUSPEND_HINT)
            ops.append(as_i32(context, builder, args[2], sig.args[2]))
        return _pred_asm(builder, *ptx_wait(o), ops)

    return codegen


@intrinsic
def mbarrier_test_wait(typingctx, bar, state, *, sem=None, scope=None):
    """Non-blocking: True when the phase that ``state`` came from completed.

    PTX: ``mbarrier.test_wait.shared.b64 p, [a], state;`` (sm_80).

    Example::

        st = ac.mbarrier_arrive(bars[0:])
        while not ac.mbarrier_test_wait(bars[0:], st):
            pass
    """
    codegen = _test_wait("mbarrier_test_wait", False, bar, state, sem, scope)
    return types.boolean(bar, state, sem, scope), codegen


@intrinsic
def mbarrier_test_wait_parity(typingctx, bar, parity, *, sem=None, scope=None):
    """Non-blocking: True when the phase with parity ``parity`` (0/1) completed.

    PTX: ``mbarrier.test_wait.parity.shared.b64 p, [a], parity;`` (sm_80, PTX 7.1).

    Example::

        ready = ac.mbarrier_test_wait_parity(bars[0:], phase & 1)
    """
    codegen = _test_wait("mbarrier_test_wait_parity", True, bar, parity, sem, scope)
    return types.boolean(bar, parity, sem, scope), codegen


@intrinsic
def mbarrier_try_wait(typingctx, bar, state, suspend_hint_ns=None, *, sem=None, scope=None):
    """Potentially blocking test: may suspend up to a system limit (or
    ``suspend_hint_ns``) before returning whether the phase completed.

    PTX: ``mbarrier.try_wait.shared::cta.b64 p, [a], state{, hint};`` (sm_90).

    Example::

        while not ac.mbarrier_try_wait(bars[0:], st):
            pass
    """
    codegen = _try_wait("mbarrier_try_wait", False, bar, state, suspend_hint_ns, sem, scope)
    return types.boolean(bar, state, suspend_hint_ns, sem, scope), codegen


@intrinsic
def mbarrier_try_wait_parity(typingctx, bar, parity, suspend_hint_ns=None, *, sem=None,
                             scope=None):
    """:func:`mbarrier_try_wait` by phase parity (0/1).

    PTX: ``mbarrier.try_wait.parity.shared::cta.b64 p, [a], parity{, hint};`` (sm_90).

    Example::

        while not ac.mbarrier_try_wait_parity(bars[0:], phase & 1, 1000):
            pass
    """
    codegen = _try_wait("mbarrier_try_wait_parity", True, bar, parity, suspend_hint_ns, sem, scope)
    return types.boolean(bar, parity, suspend_hint_ns, sem, scope), codegen


def _blocking_wait(api: str, parity: bool, bar, value):
    check_barrier(api, "bar", bar)
    _check_phase_type(api, parity, value)
    cc = compile_cc()
    op = "try_wait" if cc is None or cc >= (9, 0) else "test_wait"
    text, constraints = ptx_wait(validate_wait(api, op, parity, None, None))

    def codegen(context, builder, sig, args):
        a = _addr(context, builder, sig, args, api)
        v = _phase_operand(context, builder, sig, args, parity, api)
        what = "parity %u" if parity else "the phase of state 0x%llx"

        def timed_out(word):
            return (api, f"timed out after {_checked.wait_timeout_ns()} ns waiting for {what} "
                    "of the barrier at shared address 0x%x (barrier word 0x%016llx)", [v, a, word])

        emit_bounded_wait(context, builder, api, text, constraints, a, v, timed_out)
        return context.get_dummy_value()

    return codegen


def emit_bounded_wait(context, builder, label: str, text: str, constraints: str, addr, value,
                      timed_out) -> None:
    """Poll ``text`` (a test_wait / try_wait on barrier ``addr`` for ``value``)
    until the phase completes.  In checked mode the loop gives up after
    ``wait_timeout_ns()``: ``timed_out(barrier_word)`` (called in the
    timeout block) returns the trap's ``(api, message, values)``."""
    checked = _checked._note_compiled()
    if checked:
        start = asm(builder, _GLOBALTIMER, "=l", [], ret=I64)
    fn = builder.function
    loop = fn.append_basic_block(f"{label}.loop")
    done = fn.append_basic_block(f"{label}.done")
    builder.branch(loop)
    builder.position_at_end(loop)
    ok = _pred_asm(builder, text, constraints, [addr, value])
    if not checked:
        builder.cbranch(ok, done, loop)
    else:
        timing = fn.append_basic_block(f"{label}.timeout")
        builder.cbranch(ok, done, timing)
        builder.position_at_end(timing)
        now = asm(builder, _GLOBALTIMER, "=l", [], ret=I64)
        late = builder.icmp_unsigned(">", builder.sub(now, start),
                                     ir.Constant(I64, _checked.wait_timeout_ns()))
        word = asm(builder, _LOAD_WORD, "=l,r", [addr], ret=I64)
        api, message, values = timed_out(word)
        trap_if(context, builder, late, api, message, values)
        builder.branch(loop)
    builder.position_at_end(done)


@intrinsic
def mbarrier_wait(typingctx, bar, state):
    """Block until the phase that ``state`` (from an arrive) completes.

    Lowers to a loop over ``mbarrier.try_wait`` on sm_90 (``test_wait`` on
    sm_80).  In checked mode the loop gives up after
    ``ac.wait_timeout_ns()`` and traps with the block, thread, barrier
    address and the phase it waited for, instead of hanging.

    Example::

        st = ac.mbarrier_arrive(bars[0:])
        ac.mbarrier_wait(bars[0:], st)
    """
    codegen = _blocking_wait("mbarrier_wait", False, bar, state)
    return types.void(bar, state), codegen


@intrinsic
def mbarrier_wait_parity(typingctx, bar, parity):
    """Block until the phase with parity ``parity`` (0 or 1) completes.

    Same loop and checked-mode bound as :func:`mbarrier_wait`.

    Example::

        phase = 0
        for k in range(n_tiles):
            ac.mbarrier_wait_parity(full[stage:], phase)
            ...
            if stage == STAGES - 1:
                phase ^= 1
    """
    codegen = _blocking_wait("mbarrier_wait_parity", True, bar, parity)
    return types.void(bar, parity), codegen


@intrinsic
def mbarrier_pending_count(typingctx, state):
    """Pending arrivals recorded in ``state``.  A state records the barrier's
    phase as it was *before* the arrive that returned it, so after
    ``mbarrier_init(bar, 10)`` the state of a first ``arrive_no_complete(bar,
    3)`` gives 10 and the state of a second arrive gives 7.

    PTX: ``mbarrier.pending_count.b64 n, state;`` (sm_80).

    Example::

        st = ac.mbarrier_arrive_no_complete(bars[0:], 1)
        n = ac.mbarrier_pending_count(st)
    """
    f = form("mbarrier.pending_count")
    check_runtime_scalar(state, "mbarrier_pending_count", "state")

    def codegen(context, builder, sig, args):
        st = as_i64(context, builder, args[0], sig.args[0])
        r = asm(builder, f"{f.opcode} $0, $1;", "=r,l", [st], ret=I32, clobber_memory=False)
        return context.cast(builder, r, types.uint32, types.uint32)

    return types.uint32(state), codegen


@intrinsic
def cp_async_mbarrier_arrive(typingctx, bar, noinc=False):
    """Make the barrier track completion of this thread's prior cp.async copies.

    PTX: ``cp.async.mbarrier.arrive{.noinc}.shared.b64 [a];`` (sm_80).  Without
    ``noinc`` the pending count is incremented first, so the net arrival
    count is unchanged (init with the number of threads that arrive
    normally); with ``noinc=True`` the arrival counts, so the init count must
    include it.

    Example::

        ac.cp_async(sh[tid, :], A[tid, :], 16)
        ac.cp_async_mbarrier_arrive(bars[0:], noinc=True)
        ac.mbarrier_wait_parity(bars[0:], 0)
    """
    api = "cp_async_mbarrier_arrive"
    f = form("cp.async.mbarrier.arrive")
    check_barrier(api, "bar", bar)
    flag = bool_constant(noinc, api, "noinc")
    opcode = f.opcode.format(noinc=".noinc" if flag else "")

    def codegen(context, builder, sig, args):
        asm(builder, f"{opcode} [$0];", "r", [_addr(context, builder, sig, args, api)])
        return context.get_dummy_value()

    return types.void(bar, noinc), codegen


# --- what checked mode checks here (the README's table is made from these) ------

_LOCAL_BARRIER_APIS = (
    "mbarrier_init", "mbarrier_inval", "mbarrier_arrive", "mbarrier_arrive_drop",
    "mbarrier_arrive_no_complete", "mbarrier_arrive_drop_no_complete", "mbarrier_expect_tx",
    "mbarrier_complete_tx", "mbarrier_arrive_expect_tx", "mbarrier_test_wait",
    "mbarrier_test_wait_parity", "mbarrier_try_wait", "mbarrier_try_wait_parity", "mbarrier_wait",
    "mbarrier_wait_parity", "cp_async_mbarrier_arrive")
_checked.declare(_LOCAL_BARRIER_APIS, "bar", _rules.barrier_empty, name="bar")
_checked.declare(_LOCAL_BARRIER_APIS, "bar", _rules.not_in_space, name="bar", space="shared")
_checked.declare(_LOCAL_BARRIER_APIS, "bar", _rules.not_aligned, name="bar", align=8, addr="…")
_checked.declare(("mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_drop",
                  "mbarrier_arrive_no_complete", "mbarrier_arrive_drop_no_complete"), "count",
                 _rules.outside_range, name="count", value="…", lo=1, hi=MAX_COUNT)
_checked.declare(("mbarrier_expect_tx", "mbarrier_complete_tx", "mbarrier_arrive_expect_tx"),
                 "nbytes", _rules.outside_range, name="nbytes", value="…", lo=0, hi=MAX_TX)
_checked.declare(("mbarrier_test_wait_parity", "mbarrier_try_wait_parity", "mbarrier_wait_parity"),
                 "parity", _rules.parity_bit, name="parity", value="…")
_checked.declare(("mbarrier_try_wait", "mbarrier_try_wait_parity"), "suspend_hint_ns",
                 _rules.outside_range, name="suspend_hint_ns", value="…", lo=0, hi=MAX_SUSPEND_HINT)
_checked.declare(("mbarrier_wait", "mbarrier_wait_parity"), "(the wait)",
                 "timed out after `ac.wait_timeout_ns()` ns waiting for … of the barrier at shared "
                 "address … (barrier word …)")
# the cta_rank= forms (the *_remote spellings declare theirs in the cluster family)
_checked.declare(tuple(_REMOTE), "cta_rank", _rules.outside_cluster, name="cta_rank", value="…",
                 n="…", last="…")
_checked.declare(tuple(_REMOTE), "bar (with cta_rank)",
                 "`bar` is not a local shared-memory view (base …)")
