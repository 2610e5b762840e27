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
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from numba.core import types

from . import _rules
from . import checked as _checked
from ._compat import TypingError, compile_cc, intrinsic
from ._forms import form
from ._lowering import I32, I64, as_i32, as_i64, asm, predicate, trap_if
from ._regions import barrier_addr32, check_barrier, check_runtime_scalar, is_absent, literal_value
from ._rules import MAX_COUNT, MAX_TX  # re-exported: expected arrivals, transaction bytes

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


def _check_range(context, builder, api, name, value, lo, hi):
    """Checked-mode trap for a run-time count outside lo..hi."""
    bad = builder.or_(builder.icmp_unsigned("<", value, ir.Constant(I32, lo)),
                      builder.icmp_unsigned(">", value, ir.Constant(I32, hi)))
    trap_if(context, builder, bad, api, _rules.outside_range(name=name, value="%u", lo=lo, hi=hi),
            [value])


# checked mode's blocking-wait watchdog: the clock, and the barrier word it reports
_GLOBALTIMER = f"mov.u64 $0, {form('sreg.globaltimer').opcode};"
_LOAD_WORD = f"{form('ld.volatile.shared.b64').opcode} $0, [$1];"


def _addr(context, builder, sig, args, i=0):
    return barrier_addr32(context, builder, sig.args[i], args[i])


def _pred_asm(builder, text: str, constraints: str, operands):
    """Run an instruction that sets predicate ``p``; return it as i1."""
    return predicate(builder, text, constraints, operands)


# --- init / inval -----------------------------------------------------------


@intrinsic
def mbarrier_init(typingctx, bar, count):
    """Initialise the barrier for ``count`` expected arrivals (1..2^20-1).

    PTX: ``mbarrier.init.shared.b64 [a], count;`` (sm_80).  Initialise from one
    thread, then ``cuda.syncthreads()`` (and :func:`fence_mbarrier_init` +
    a cluster barrier before other CTAs use it).

    Example::

        bars = cuda.shared.array(2, np.uint64)
        if cuda.threadIdx.x == 0:
            ac.mbarrier_init(bars[0:], cuda.blockDim.x)
        cuda.syncthreads()
    """
    api = "mbarrier_init"
    f = form("mbarrier.init")
    check_barrier(api, "bar", bar)
    validate_count(api, "count", count, 1, MAX_COUNT)

    def codegen(context, builder, sig, args):
        n = as_i32(context, builder, args[1], sig.args[1])
        if _checked._note_compiled():
            _check_range(context, builder, api, "count", n, 1, MAX_COUNT)
        asm(builder, f"{f.opcode} [$0], $1;", "r,r", [_addr(context, builder, sig, args), n])
        return context.get_dummy_value()

    return types.void(bar, count), codegen


@intrinsic
def mbarrier_inval(typingctx, bar):
    """Invalidate the barrier (before re-initialising or reusing its memory).

    PTX: ``mbarrier.inval.shared.b64 [a];`` (sm_80).

    Example::

        if cuda.threadIdx.x == 0:
            ac.mbarrier_inval(bars[0:])
    """
    f = form("mbarrier.inval")
    check_barrier("mbarrier_inval", "bar", bar)

    def codegen(context, builder, sig, args):
        asm(builder, f"{f.opcode} [$0];", "r", [_addr(context, builder, sig, args)])
        return context.get_dummy_value()

    return types.void(bar), codegen


# --- arrives ----------------------------------------------------------------


def _arrive_intrinsic_body(api, plain_key, counted_key, bar, count, sem, scope,
                           no_complete_key=None):
    """Shared typing+lowering of arrive / arrive_drop."""
    check_barrier(api, "bar", bar)
    order = validate_order(api, sem, scope, ARRIVE_SEMS, "release")
    c = validate_count(api, "count", count, 1, MAX_COUNT)
    if order.explicit:
        f = form("mbarrier.arrive.sem" if plain_key == "mbarrier.arrive" else counted_key)
        with_count = c != 1
    elif c == 1:
        f = form(plain_key)
        with_count = False
    else:
        f = form(counted_key)
        with_count = True
    opcode = f.opcode.format(sem=order.text) if "{sem}" in f.opcode else f.opcode

    def codegen(context, builder, sig, args):
        a = _addr(context, builder, sig, args)
        if with_count:
            n = as_i32(context, builder, args[1], sig.args[1])
            if _checked._note_compiled():
                _check_range(context, builder, api, "count", n, 1, MAX_COUNT)
            return asm(builder, f"{opcode} $0, [$1], $2;", "=l,r,r", [a, n], ret=I64)
        return asm(builder, f"{opcode} $0, [$1];", "=l,r", [a], ret=I64)

    return codegen


@intrinsic
def mbarrier_arrive(typingctx, bar, count=1, *, sem=None, scope=None):
    """Arrive on the barrier (``count`` arrivals); returns the phase state.

    PTX: ``mbarrier.arrive.shared.b64 state, [a];`` (sm_80) for one arrival
    with default ordering; ``mbarrier.arrive{.sem.scope}.shared::cta.b64
    state, [a], count;`` (sm_90) for a count or explicit ``sem``/``scope``.

    Example::

        state = ac.mbarrier_arrive(bars[0:])
        ac.mbarrier_wait(bars[0:], state)
    """
    codegen = _arrive_intrinsic_body("mbarrier_arrive", "mbarrier.arrive",
                                     "mbarrier.arrive.count", bar, count, sem, scope)
    return types.uint64(bar, count, sem, scope), codegen


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
    codegen = _arrive_intrinsic_body("mbarrier_arrive_drop", "mbarrier.arrive_drop",
                                     "mbarrier.arrive_drop.count", bar, count, sem, scope)
    return types.uint64(bar, count, sem, scope), codegen


@intrinsic
def mbarrier_arrive_drop_no_complete(typingctx, bar, count):
    """:func:`mbarrier_arrive_drop` of ``count`` that must not complete the phase.

    PTX: ``mbarrier.arrive_drop.noComplete.shared.b64 state, [a], count;`` (sm_80).

    Example::

        st = ac.mbarrier_arrive_drop_no_complete(bars[0:], 2)
    """
    codegen = _no_complete("mbarrier_arrive_drop_no_complete", "mbarrier.arrive_drop.noComplete",
                           bar, count)
    return types.uint64(bar, count), codegen


def _no_complete(api, key, bar, count):
    f = form(key)
    check_barrier(api, "bar", bar)
    validate_count(api, "count", count, 1, MAX_COUNT)

    def codegen(context, builder, sig, args):
        n = as_i32(context, builder, args[1], sig.args[1])
        if _checked._note_compiled():
            _check_range(context, builder, api, "count", n, 1, MAX_COUNT)
        return asm(builder, f"{f.opcode} $0, [$1], $2;", "=l,r,r",
                   [_addr(context, builder, sig, args), n], ret=I64)

    return codegen


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
    codegen = _no_complete("mbarrier_arrive_no_complete", "mbarrier.arrive.noComplete", bar, count)
    return types.uint64(bar, count), codegen


# --- transaction counts -----------------------------------------------------


def _tx_intrinsic(api, key, bar, nbytes, scope, result: bool, sem=None):
    check_barrier(api, "bar", bar)
    validate_count(api, "nbytes", nbytes, 0, MAX_TX)
    if result:
        order = validate_order(api, sem, scope, ARRIVE_SEMS, "release")
    else:
        c = literal_value(scope, api, "scope", kind=str, allowed=SCOPES, required=False)
        order = Order(f".relaxed.{c}" if c else "")
    f = form(key)
    opcode = f.opcode.format(sem=order.text)

    def codegen(context, builder, sig, args):
        a = _addr(context, builder, sig, args)
        n = as_i32(context, builder, args[1], sig.args[1])
        if _checked._note_compiled():
            _check_range(context, builder, api, "nbytes", n, 0, MAX_TX)
        if result:
            return asm(builder, f"{opcode} $0, [$1], $2;", "=l,r,r", [a, n], ret=I64)
        asm(builder, f"{opcode} [$0], $1;", "r,r", [a, n])
        return context.get_dummy_value()

    return codegen


@intrinsic
def mbarrier_expect_tx(typingctx, bar, nbytes, *, scope=None):
    """Raise the current phase's expected transaction bytes by ``nbytes``.

    PTX: ``mbarrier.expect_tx{.relaxed.scope}.shared::cta.b64 [a], tx;``
    (sm_90, PTX ISA 8.0).

    Example::

        ac.mbarrier_expect_tx(bars[0:], 4096)
    """
    codegen = _tx_intrinsic("mbarrier_expect_tx", "mbarrier.expect_tx", bar, nbytes, scope, False)
    return types.void(bar, nbytes, scope), codegen


@intrinsic
def mbarrier_complete_tx(typingctx, bar, nbytes, *, scope=None):
    """Mark ``nbytes`` transaction bytes of the current phase as done.

    PTX: ``mbarrier.complete_tx{.relaxed.scope}.shared::cta.b64 [a], tx;``
    (sm_90, PTX ISA 8.0).

    Example::

        ac.mbarrier_complete_tx(bars[0:], 256)
    """
    codegen = _tx_intrinsic("mbarrier_complete_tx", "mbarrier.complete_tx", bar, nbytes, scope, False)
    return types.void(bar, nbytes, scope), codegen


@intrinsic
def mbarrier_arrive_expect_tx(typingctx, bar, nbytes, *, sem=None, scope=None):
    """Expect ``nbytes`` transaction bytes and arrive once; returns the state.

    PTX: ``mbarrier.arrive.expect_tx{.sem.scope}.shared::cta.b64 state, [a],
    tx;`` (sm_90, PTX ISA 8.0).  The usual call before a bulk or TMA load.

    Example::

        if cuda.threadIdx.x == 0:
            ac.mbarrier_arrive_expect_tx(bars[0:], 256)
        ac.mbarrier_wait_parity(bars[0:], 0)
    """
    codegen = _tx_intrinsic("mbarrier_arrive_expect_tx", "mbarrier.arrive.expect_tx", bar,
                            nbytes, scope, True, sem)
    return types.uint64(bar, nbytes, sem, scope), codegen


# --- waits ------------------------------------------------------------------


@dataclass(frozen=True)
class WaitForm:
    opcode: str  # "mbarrier.test_wait{.parity}{sem}..." formatted
    operand: str  # "l" for a state, "r" for a parity


def _wait_form(api, op: str, parity: bool, sem, scope) -> WaitForm:
    order = validate_order(api, sem, scope, WAIT_SEMS, "acquire")
    name = op + (".parity" if parity else "")
    if order.explicit:
        f = form("mbarrier.wait.sem")
        opcode = f.opcode.format(op=name, sem=order.text)
    else:
        f = form(f"mbarrier.{name}")
        opcode = f.opcode.format(sem="")
    return WaitForm(opcode, "r" if parity else "l")


def _phase_operand(context, builder, sig, args, parity: bool, api: str):
    if parity:
        p = as_i32(context, builder, args[1], sig.args[1])
        if _checked._note_compiled():
            _check_range(context, builder, api, "parity", p, 0, 1)
        return p
    return as_i64(context, builder, args[1], sig.args[1])


def _check_phase_type(api, parity: bool, value):
    if parity:
        check_runtime_scalar(value, api, "parity", (types.Integer, types.Boolean))
        if isinstance(value, types.IntegerLiteral) and value.literal_value not in (0, 1):
            raise TypingError(f"{api}: `parity`={value.literal_value} must be 0 or 1")
    else:
        check_runtime_scalar(value, api, "state")


def _test_wait(api, parity, bar, value, sem, scope):
    check_barrier(api, "bar", bar)
    _check_phase_type(api, parity, value)
    wf = _wait_form(api, "test_wait", parity, sem, scope)

    def codegen(context, builder, sig, args):
        v = _phase_operand(context, builder, sig, args, parity, api)
        return _pred_asm(builder, f"{wf.opcode} p, [$1], $2;", f"r,{wf.operand}",
                         [_addr(context, builder, sig, args), v])

    return codegen


def _try_wait(api, parity, bar, value, hint, sem, scope):
    check_barrier(api, "bar", bar)
    _check_phase_type(api, parity, value)
    has_hint = not is_absent(hint)
    if has_hint:
        check_runtime_scalar(hint, api, "suspend_hint_ns")
    wf = _wait_form(api, "try_wait", parity, sem, scope)

    def codegen(context, builder, sig, args):
        v = _phase_operand(context, builder, sig, args, parity, api)
        ops = [_addr(context, builder, sig, args), v]
        text, cons = f"{wf.opcode} p, [$1], $2;", f"r,{wf.operand}"
        if has_hint:
            ops.append(as_i32(context, builder, args[2], sig.args[2]))
            text, cons = f"{wf.opcode} p, [$1], $2, $3;", cons + ",r"
        return _pred_asm(builder, text, cons, ops)

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
    wf = _wait_form(api, op, parity, None, None)

    def codegen(context, builder, sig, args):
        a = _addr(context, builder, sig, args)
        v = _phase_operand(context, builder, sig, args, parity, api)
        checked = _checked._note_compiled()
        if checked:
            start = asm(builder, _GLOBALTIMER, "=l", [], ret=I64)
        fn = builder.function
        loop = fn.append_basic_block(f"{api}.loop")
        done = fn.append_basic_block(f"{api}.done")
        builder.branch(loop)
        builder.position_at_end(loop)
        ok = _pred_asm(builder, f"{wf.opcode} p, [$1], $2;", f"r,{wf.operand}", [a, v])
        if not checked:
            builder.cbranch(ok, done, loop)
        else:
            timing = fn.append_basic_block(f"{api}.timeout")
            builder.cbranch(ok, done, timing)
            builder.position_at_end(timing)
            now = asm(builder, _GLOBALTIMER, "=l", [], ret=I64)
            late = builder.icmp_unsigned(">", builder.sub(now, start),
                                         ir.Constant(I64, _checked.wait_timeout_ns()))
            word = asm(builder, _LOAD_WORD, "=l,r", [a], ret=I64)
            what = "parity %u" if parity else "the phase of state 0x%llx"
            trap_if(context, builder, late, api,
                    f"timed out after {_checked.wait_timeout_ns()} ns waiting for {what} "
                    "of the barrier at shared address 0x%x (barrier word 0x%016llx)",
                    [v, a, word])
            builder.branch(loop)
        builder.position_at_end(done)
        return context.get_dummy_value()

    return codegen


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
        asm(builder, f"{opcode} [$0];", "r", [_addr(context, builder, sig, args)])
        return context.get_dummy_value()

    return types.void(bar, noinc), codegen
