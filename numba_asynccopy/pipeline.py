"""Pipelines: rings of shared-memory stages filled by asynchronous copies.

Every kernel that overlaps copies with compute runs a ring of ``stages``
slots: a producer waits until a slot is free, issues copies into it and
signals; consumers wait until the slot is full, use it and release it.  This
module writes that protocol once, with the vocabulary of CuTe DSL's
``cutlass.pipeline`` and CCCL's ``cuda::pipeline``, so a kernel never
computes a slot, a phase, a parity or a transaction byte count by hand.

Four kinds, built inside the kernel (the constants are compile-time, the
pipeline value is a tuple whose type carries them):

- :func:`group_pipeline` - cp.async commit/wait groups (Ampere style, no
  barriers): ``producer_commit`` commits a group, ``consumer_wait`` is
  ``wait_group(N)`` with ``N`` fixed by ``stages`` at compile time;
- :func:`cp_async_pipeline` - cp.async tracked by mbarriers: a "full" and an
  "empty" barrier per slot in a shared ``uint64`` array,
  ``cp_async_mbarrier_arrive`` from each of the ``producers`` threads,
  ``consumers`` threads release;
- :func:`tma_pipeline` - bulk and TMA copies on transaction barriers: the
  producer issues its copies *through* the pipeline (:func:`copy_bulk`,
  :func:`copy_tensor`), each arming the slot's barrier with its own byte
  count (the destination view's bytes, a constant when the view's shape is)
  in the same instruction as its arrival, before the copy;
- :func:`cluster_tma_pipeline` - the same across the ``ctas`` CTAs of a
  cluster: each CTA's producer multicasts its part of a stage to every CTA
  (its own barrier armed with the part's bytes times the CTAs), and
  ``consumer_release`` frees the slot in every CTA (a remote arrive with
  ``cta_rank=``, CTA-scope release), so no producer overwrites a slot a
  peer still reads.

The state (:class:`PipelineState`: ``slot``, ``phase`` bit, ``step``
count of advances, all uint32) is a value: ``state = advance(pipe, state)``.
Producers start from :func:`producer_start`, consumers from
:func:`consumer_start`.  The operations are the same for every kind:
:func:`producer_acquire` (:func:`producer_try_acquire`), :func:`producer_commit`,
:func:`consumer_wait` (:func:`consumer_try_wait`), :func:`consumer_release`,
:func:`producer_tail`.

``tma_pipeline(bars, stages, consumers=0)`` is a ring run by ONE thread
(it copies in and consumes, e.g. with bulk stores, and frees each slot by
its own order): full barriers only, and acquire/release emit nothing.

Warp specialization is the same pipelines with the thread counts of the
roles: a producer warp where one elected lane (``ac.elect_sync()``) issues
TMA copies, and ``consumers`` threads in the other warps (or one lane per
consumer warp after a ``cuda.syncwarp()``).

Protocol checks: in checked mode the blocking waits are bounded and their
timeout names the pipeline operation, the slot, the state's step and phase, and
:func:`init` traps on a barrier array or block too small for the pipeline.
The simulator (``NUMBA_ENABLE_CUDASIM=1``) runs the same kernels with every
rule of the protocol checked (``numba_asynccopy.sim.pipeline``).

Example (TMA, one producer thread, the rest of the block consumes)::

    STAGES = 4

    @cuda.jit
    def k(tmap, out):
        bars = cuda.shared.array((2, STAGES), np.uint64)
        ring = cuda.shared.array((STAGES, 32, 64), np.float32, alignment=128)
        pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=96)
        ac.pipeline.init(pipe)
        tid = cuda.threadIdx.x
        if tid < 32:                                  # producer warp
            if ac.elect_sync():
                st = ac.pipeline.producer_start(pipe)
                for t in range(ntiles):
                    ac.pipeline.producer_acquire(pipe, st)
                    ac.pipeline.copy_tensor(pipe, st, ring[st.slot], tmap, (32 * t, 0))
                    ac.pipeline.producer_commit(pipe, st)
                    st = ac.pipeline.advance(pipe, st)
        else:                                         # 96 consumer threads
            st = ac.pipeline.consumer_start(pipe)
            for t in range(ntiles):
                ac.pipeline.consumer_wait(pipe, st)
                use(ring[st.slot])
                ac.pipeline.consumer_release(pipe, st)
                st = ac.pipeline.advance(pipe, st)
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from typing import Callable

import numpy as np
from llvmlite import ir
from numba import cuda
from numba.core import cgutils, types

from . import _rules
from . import checked as _checked
from ._compat import TypingError, compile_cc, intrinsic
from ._lowering import I32, I64, as_i32, block_threads, shared_addr32, trap_if
from ._regions import check_barrier, is_absent, literal_value
from .bulk import cp_async_bulk_g2s, validate_bulk_g2s
from .cp_async import commit_group, wait_all, wait_group
from .cluster import cluster_sync, read_sreg
from .fence import fence_mbarrier_init, fence_proxy_async
from .mbarrier import (
    MAX_COUNT,
    cp_async_mbarrier_arrive,
    emit_bounded_wait,
    mbarrier_arrive,
    mbarrier_arrive_expect_tx,
    mbarrier_init,
    _pred_asm,
    mbarrier_test_wait_parity,
    ptx_wait,
    validate_wait,
)
from .tensor import cp_async_bulk_tensor_load, cp_async_bulk_tensor_load_im2col, validate_load

#: The position in the ring: ``slot`` (0..stages-1), ``phase`` bit (flips at
#: every wrap) and ``step`` (advances so far), all uint32.
PipelineState = namedtuple("PipelineState", ["slot", "phase", "step"])

#: cp.async commit/wait groups; ``shared``: the slots are read by other
#: threads than the ones that copied them (a block barrier publishes them).
GroupPipeline = namedtuple("GroupPipeline", ["stages", "shared"])
#: cp.async on mbarriers: ``bars[0:stages]`` full, ``bars[stages:2*stages]`` empty.
CpAsyncPipeline = namedtuple("CpAsyncPipeline", ["bars", "stages", "producers", "consumers"])
#: bulk/TMA on transaction barriers, same barrier layout; ``copies`` per stage.
TmaPipeline = namedtuple("TmaPipeline", ["bars", "stages", "consumers", "copies"])
#: bulk/TMA multicast to the ``ctas`` CTAs of a cluster, same barrier layout in each CTA.
ClusterTmaPipeline = namedtuple("ClusterTmaPipeline", ["bars", "stages", "consumers", "ctas", "copies"])



def _copies(c: dict) -> str:
    return f"{c['copies']} cop{'y' if c['copies'] == 1 else 'ies'}"


@dataclass(frozen=True)
class PipelineKind:
    """One kind of pipeline and its protocol: which barriers it has, who
    arrives on them, what a release does.  The device operations and their
    simulator twins read these instead of switching on the kind's name, so a
    new kind (a tensor-core consumer, say) is one definition here, and its
    twin's bookkeeping in ``sim/pipeline.py``.

    - ``barriers``: a full and an empty mbarrier per slot (else cp.async
      commit/wait groups, no barriers);
    - ``tx``: transaction barriers: copies go through the pipeline
      (``copy_bulk``/``copy_tensor``), each arming the slot's full barrier
      with its bytes;
    - ``producers``: the constant counting the producing threads (they
      arrive on a full barrier), or None: one thread, whose ``copies`` arrive;
    - ``cluster``: the ring spans the CTAs of a cluster: copies multicast,
      a release arrives on the slot's empty barrier in every CTA.
    """

    name: str
    barriers: bool
    tx: bool
    producers: str | None
    cluster: bool
    describe_as: Callable[[dict], str]

    def full_count(self, c: dict) -> int:
        """Arrivals that fill a slot's full barrier."""
        return c[self.producers] if self.producers else c["copies"]

    def producer_threads(self, c: dict) -> int:
        """Threads of the block that produce."""
        return c[self.producers] if self.producers else 1

    def describe(self, c: dict) -> str:
        """The pipeline as messages name it."""
        return self.describe_as(c)

    def __str__(self) -> str:
        return self.name


GROUP = PipelineKind(
    "group", barriers=False, tx=False, producers=None, cluster=False,
    describe_as=lambda c: f"group pipeline ({c['stages']} stages{', shared' if c['shared'] else ''})")
CP_ASYNC = PipelineKind(
    "cp_async", barriers=True, tx=False, producers="producers", cluster=False,
    describe_as=lambda c: (f"cp_async pipeline ({c['stages']} stages, {c['producers']} producers, "
                           f"{c['consumers']} consumers)"))
TMA = PipelineKind(
    "tma", barriers=True, tx=True, producers=None, cluster=False,
    describe_as=lambda c: (f"tma pipeline ({c['stages']} stages, {_copies(c)} per stage, "
                           + (f"{c['consumers']} consumers" if c["consumers"] else "run by one thread")
                           + ")"))
CLUSTER_TMA = PipelineKind(
    "cluster", barriers=True, tx=True, producers=None, cluster=True,
    describe_as=lambda c: (f"cluster tma pipeline ({c['stages']} stages, {c['ctas']} CTAs, "
                           f"{_copies(c)} per stage and CTA, {c['consumers']} consumers per CTA)"))

#: the kind of each pipeline value's class
KINDS = {GroupPipeline: GROUP, CpAsyncPipeline: CP_ASYNC, TmaPipeline: TMA,
         ClusterTmaPipeline: CLUSTER_TMA}

__all__ = [
    "ClusterTmaPipeline",
    "CpAsyncPipeline",
    "GroupPipeline",
    "PipelineState",
    "TmaPipeline",
    "advance",
    "barrier_count",
    "cluster_tma_pipeline",
    "consumer_release",
    "consumer_start",
    "consumer_try_wait",
    "consumer_wait",
    "copy_bulk",
    "copy_tensor",
    "copy_tensor_im2col",
    "cp_async_pipeline",
    "group_pipeline",
    "init",
    "producer_acquire",
    "producer_commit",
    "producer_start",
    "producer_tail",
    "producer_try_acquire",
    "tma_pipeline",
]

MAX_STAGES = 64  # keeps the barrier array (2 x 8 bytes a slot) and wait_group's N small


def barrier_count(stages: int) -> int:
    """Barriers (uint64 words) a barrier pipeline of ``stages`` slots needs:
    ``cuda.shared.array((2, STAGES), np.uint64)`` holds them (Numba wants a
    constant or a tuple of constants there, so ``2 * STAGES`` does not type).

    Example::

        NBARS = ac.pipeline.barrier_count(STAGES)          # a module-level constant
        bars = cuda.shared.array(NBARS, np.uint64)
    """
    return 2 * int(stages)


# --- compile time -------------------------------------------------------------


def _count(api: str, name: str, ty, lo: int, hi: int) -> int:
    v = literal_value(ty, api, name)
    if not lo <= v <= hi:
        raise TypingError(f"{api}: `{name}`={v} is outside {lo}..{hi}")
    return v


def _pipe_kind(api: str, pipe) -> PipelineKind:
    cls = getattr(pipe, "instance_class", None)
    if isinstance(pipe, types.BaseNamedTuple) and cls in KINDS:
        return KINDS[cls]
    raise TypingError(
        f"{api}: `pipe` must be a pipeline built in the kernel by ac.pipeline.group_pipeline, "
        f"cp_async_pipeline, tma_pipeline or cluster_tma_pipeline, got {pipe}")


def _consts(pipe) -> dict:
    """The pipeline's compile-time constants by field name."""
    return {f: t.literal_value for f, t in zip(pipe.instance_class._fields, pipe.types)
            if isinstance(t, types.Literal)}


def _solo(pipe) -> bool:
    """A tma pipeline run by one thread (``consumers=0``): no empty barriers."""
    return _consts(pipe).get("consumers", 1) == 0


def _check_state(api: str, state) -> None:
    if not (isinstance(state, types.BaseNamedTuple) and state.instance_class is PipelineState):
        raise TypingError(
            f"{api}: `state` must be a PipelineState from ac.pipeline.producer_start, "
            f"consumer_start or advance, got {state}")


BARS = types.Array(types.uint64, 1, "C")


def _check_bars(api: str, bars) -> None:
    check_barrier(api, "bars", bars)
    if bars.ndim > 1 and bars.layout != "C":
        raise TypingError(f"{api}: `bars` must be a C-contiguous shared uint64 array, "
                          f"for example cuda.shared.array((2, STAGES), np.uint64), got {bars}")


def _flat(context, builder, ty, value):
    """The barrier array as a 1-D C view of all its barriers."""
    src = context.make_array(ty)(context, builder, value)
    out = context.make_array(BARS)(context, builder)
    context.populate_array(out, data=src.data, shape=[src.nitems],
                           strides=[context.get_constant(types.intp, 8)],
                           itemsize=context.get_constant(types.intp, 8), meminfo=None)
    return out._getvalue()


def _build(context, builder, sig, values):
    """A pipeline tuple: the barrier view (if any), then its constants."""
    tup = cgutils.get_null_value(context.get_value_type(sig.return_type))
    for i, (ty, v) in enumerate(zip(sig.return_type.types, values)):
        if isinstance(ty, types.Literal):
            v = context.get_constant(ty.literal_type, ty.literal_value)
        else:
            v = _flat(context, builder, sig.args[0], v)
        tup = builder.insert_value(tup, v, i)
    return tup


# --- constructors ---------------------------------------------------------------


@intrinsic
def group_pipeline(typingctx, stages, shared=False):
    """A ring of ``stages`` slots on cp.async commit/wait groups (no barriers).

    Each thread runs the whole protocol for its own copies.  Every stage is
    committed, empty ones too (predicate the copies, not the commit): the
    wait counts groups.

    - ``shared=False``: a thread reads only what its own copies wrote.
      ``consumer_wait`` is ``wait_group(stages - 1)``: commit the slot
      ``stages - 1`` ahead before waiting (the prologue commits ``stages - 1``).
    - ``shared=True``: threads read each other's copies.  ``consumer_wait``
      is ``wait_group(stages - 2)`` and a block barrier, which also frees
      the slot the consumers used last; acquire the slot ``stages - 1`` ahead
      after the wait (the prologue commits ``stages - 1``).

    Example::

        pipe = ac.pipeline.group_pipeline(4)
        ps, cs = ac.pipeline.producer_start(pipe), ac.pipeline.consumer_start(pipe)
        for t in range(3):                              # prologue: stages - 1 tiles
            ac.pipeline.producer_acquire(pipe, ps)
            ac.cp_async(ring[ps.slot, tid, :], A[t, tid, :], 16)
            ac.pipeline.producer_commit(pipe, ps)
            ps = ac.pipeline.advance(pipe, ps)
        for t in range(n):
            ac.pipeline.producer_acquire(pipe, ps)
            if t + 3 < n:
                ac.cp_async(ring[ps.slot, tid, :], A[t + 3, tid, :], 16)
            ac.pipeline.producer_commit(pipe, ps)
            ps = ac.pipeline.advance(pipe, ps)
            ac.pipeline.consumer_wait(pipe, cs)
            out[t, tid] = ring[cs.slot, tid, 0]
            ac.pipeline.consumer_release(pipe, cs)
            cs = ac.pipeline.advance(pipe, cs)
    """
    api = "group_pipeline"
    s = _count(api, "stages", stages, 1, MAX_STAGES)
    sh = literal_value(shared, api, "shared", kind=bool)
    if not isinstance(sh, bool):
        raise TypingError(f"{api}: `shared` must be a bool constant, got {sh!r}")
    if sh and s < 2:
        raise TypingError(f"{api}: `stages`={s}: a shared group pipeline needs 2 or more stages")
    ret = types.NamedTuple([types.literal(s), types.literal(sh)], GroupPipeline)

    def codegen(context, builder, sig, args):
        return _build(context, builder, sig, [None, None])

    return ret(stages, shared), codegen


@intrinsic
def cp_async_pipeline(typingctx, bars, stages, producers, consumers):
    """A ring of ``stages`` slots filled by cp.async, tracked by mbarriers.

    - ``bars``: a shared ``uint64`` array of ``2 * stages`` barriers,
      ``cuda.shared.array((2, STAGES), np.uint64)`` (full barriers, then
      empty ones); :func:`init` initialises them.
    - ``producers``: threads that copy into every stage; each calls
      ``producer_acquire``/``producer_commit`` (a ``cp.async.mbarrier.arrive``
      that arrives when that thread's copies have landed).
    - ``consumers``: threads that call ``consumer_release`` for every stage
      (or one lane per consumer warp, as for :func:`tma_pipeline`).

    Example::

        bars = cuda.shared.array((2, STAGES), np.uint64)
        pipe = ac.pipeline.cp_async_pipeline(bars, STAGES, producers=32, consumers=96)
        ac.pipeline.init(pipe)
    """
    api = "cp_async_pipeline"
    _check_bars(api, bars)
    s = _count(api, "stages", stages, 1, MAX_STAGES)
    p = _count(api, "producers", producers, 1, MAX_COUNT)
    c = _count(api, "consumers", consumers, 1, MAX_COUNT)
    ret = types.NamedTuple([BARS, types.literal(s), types.literal(p), types.literal(c)],
                           CpAsyncPipeline)

    def codegen(context, builder, sig, args):
        return _build(context, builder, sig, [args[0], None, None, None])

    return ret(bars, stages, producers, consumers), codegen


@intrinsic
def tma_pipeline(typingctx, bars, stages, consumers, copies=1):
    """A ring of ``stages`` slots filled by bulk or TMA copies on transaction
    barriers.

    - ``bars``: a shared ``uint64`` array of ``2 * stages`` barriers,
      ``cuda.shared.array((2, STAGES), np.uint64)``; :func:`init`
      initialises them.
    - ``consumers``: arrivals that release a stage: the threads that call
      ``consumer_release`` for every stage (all consumer threads, or one lane
      per consumer warp after a ``cuda.syncwarp()``: then the warp count).
      ``consumers=0``: ONE thread runs the whole ring (it issues the copies
      and consumes the slots, for example with bulk stores) and frees a slot
      by its own program order (``bulk_wait_group(..., read=True)`` after
      the store that read it), so there are no empty barriers: ``bars``
      needs only ``stages`` barriers (``cuda.shared.array(STAGES,
      np.uint64)``), and ``producer_acquire``, ``consumer_release`` and
      ``producer_tail`` emit nothing (the simulator still checks their
      order: a slot acquired again before its release is an error).
    - ``copies``: copies issued into every stage through :func:`copy_bulk` /
      :func:`copy_tensor` (one thread issues them, usually the elected lane
      of a producer warp).  Each copy arrives on the slot's barrier with its
      byte count before the copy starts, so the stage completes when all
      ``copies`` have arrived and all their bytes have landed.

    Example::

        bars = cuda.shared.array((2, STAGES), np.uint64)
        pipe = ac.pipeline.tma_pipeline(bars, STAGES, consumers=128, copies=2)  # A and B tiles
        ac.pipeline.init(pipe)
    """
    api = "tma_pipeline"
    _check_bars(api, bars)
    s = _count(api, "stages", stages, 1, MAX_STAGES)
    c = _count(api, "consumers", consumers, 0, MAX_COUNT)
    n = _count(api, "copies", copies, 1, MAX_COUNT)
    ret = types.NamedTuple([BARS, types.literal(s), types.literal(c), types.literal(n)], TmaPipeline)

    def codegen(context, builder, sig, args):
        return _build(context, builder, sig, [args[0], None, None, None])

    return ret(bars, stages, consumers, copies), codegen


#: CTAs a cluster pipeline multicasts to (a 16-bit multicast mask)
MAX_CTAS = 16


@intrinsic
def cluster_tma_pipeline(typingctx, bars, stages, consumers, ctas, copies=1):
    """A ring of ``stages`` slots in each of the ``ctas`` CTAs of a cluster
    (ranks 0 .. ctas-1), filled by multicast bulk or TMA copies: every CTA's
    producer loads its part of a stage and multicasts it to the same slot of
    every CTA, so each CTA's ring receives the whole stage while global
    memory is read once per cluster.

    - ``bars``: a shared ``uint64`` array of ``2 * stages`` barriers in every
      CTA, ``cuda.shared.array((2, STAGES), np.uint64)``; :func:`init` (all
      threads of every CTA) initialises them and synchronises the cluster.
    - ``consumers``: release arrivals per stage *in each CTA* (all consumer
      threads, or one lane per consumer warp).  A slot is free for a
      producer only when the consumers of every CTA released it (its
      multicast overwrites the slot everywhere), so ``consumer_release``
      arrives on the slot's empty barrier of every CTA of the cluster
      (``mbarrier_arrive(..., cta_rank=r, scope="cta")``), and each empty
      barrier counts ``consumers * ctas`` arrivals.  The release is at CTA
      scope (PTX's default for a remote arrive, CUTLASS's as well): it says
      the thread's reads of the slot are done, which is all a producer
      needs before it overwrites the slot, and it costs no GPU-scope fence
      (``MEMBAR.ALL.GPU``, what a cluster-scope release compiles to).  It
      publishes nothing: a consumer's writes that another CTA must see need
      their own cluster-scope release (``mbarrier_arrive(..., cta_rank=r)``).
    - ``copies``: copies each CTA's producer issues into every stage
      (:func:`copy_tensor` / :func:`copy_bulk`).  Every CTA issues the same
      copies (same byte counts, different parts), each multicast to all
      ``ctas`` CTAs: a copy of ``b`` bytes arms the producer's own full
      barrier with ``b * ctas`` bytes (the bytes its peers' copies land
      there), in its arrival, before the copy.

    Launch with a cluster of exactly ``ctas`` CTAs (``ac.cluster_dims``);
    end the kernel with ``producer_tail`` on the producer and
    ``ac.cluster_sync()`` in every thread, so that no CTA exits while a
    peer may still write into it.

    Example::

        bars = cuda.shared.array((2, STAGES), np.uint64)
        pipe = ac.pipeline.cluster_tma_pipeline(bars, STAGES, consumers=4, ctas=2)
        ac.pipeline.init(pipe)                     # every thread of every CTA
        rank = ac.cluster_cta_rank()
        # producer (elected lane): this CTA's half of the tile, to both CTAs
        ac.pipeline.copy_tensor(pipe, st, ring[st.slot, 16 * rank:16 * rank + 16], tmap,
                                (32 * t + 16 * rank, 0))
    """
    api = "cluster_tma_pipeline"
    _check_bars(api, bars)
    s = _count(api, "stages", stages, 1, MAX_STAGES)
    k = _count(api, "ctas", ctas, 1, MAX_CTAS)
    c = _count(api, "consumers", consumers, 1, MAX_COUNT // k)
    n = _count(api, "copies", copies, 1, MAX_COUNT)
    ret = types.NamedTuple([BARS, types.literal(s), types.literal(c), types.literal(k), types.literal(n)],
                           ClusterTmaPipeline)

    def codegen(context, builder, sig, args):
        return _build(context, builder, sig, [args[0], None, None, None, None])

    return ret(bars, stages, consumers, ctas, copies), codegen


# --- lowering helpers -------------------------------------------------------------

#: operations named in checked-mode messages (an int literal selects one)
OPS = ("producer_acquire", "consumer_wait", "producer_tail")


@intrinsic
def _wait(typingctx, bars, k, parity, slot, count, op, what):
    """Block until the phase of parity ``parity`` of barrier ``bars[k]``
    completes: a ``try_wait`` loop (``test_wait`` on sm_80) like
    ``mbarrier_wait_parity``, whose checked-mode timeout names the pipeline
    operation, the slot, the state's step and phase."""
    name = OPS[literal_value(op, "pipeline", "op")]
    desc = literal_value(what, "pipeline", "what", kind=str)
    cc = compile_cc()
    wait_text, wait_cons = ptx_wait(validate_wait(
        name, "try_wait" if cc is None or cc >= (9, 0) else "test_wait", True, None, None))
    side = "its producers' commit" if name == "consumer_wait" else "its consumers' release"

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        kk = as_i32(context, builder, args[1], sig.args[1])
        a = builder.add(shared_addr32(builder, ary.data), builder.mul(kk, ir.Constant(I32, 8)))
        p = as_i32(context, builder, args[2], sig.args[2])

        def timed_out(word):
            slot_v = as_i32(context, builder, args[3], sig.args[3])
            count_v = as_i32(context, builder, args[4], sig.args[4])
            where = _rules.pipeline_where(slot="%u", step="%u", phase="%u", pipeline=desc)
            return (f"pipeline {name}",
                    _rules.pipeline_wait_timeout(ns=_checked.wait_timeout_ns(), where=where, side=side,
                                                 word="0x%016llx"),
                    [slot_v, count_v, p, word])

        emit_bounded_wait(context, builder, name, wait_text, wait_cons, a, p, timed_out)
        return context.get_dummy_value()

    return types.void(bars, k, parity, slot, count, op, what), codegen


#: the protocol checks of checked mode: (operation, the phase must be complete?)
CHECKS = (("producer_acquire", False), ("consumer_release", True))

# the README's checked-mode table (…: a run-time value; the messages name the
# pipeline by its kind and constants, "tma pipeline (4 stages, ...)")
_P = "… pipeline (…)"
_WHERE = _rules.pipeline_where(slot="…", step="…", phase="…", pipeline=_P)
_checked.declare("pipeline.init", "pipe", _rules.pipeline_bars, held="…", pipeline=_P, need="…")
_checked.declare("pipeline.init", "(the block)", _rules.pipeline_threads, threads="…", pipeline=_P,
                 need="…")
_checked.declare("pipeline.init", "(the cluster)", _rules.pipeline_cluster_size, ctas="…",
                 pipeline="cluster tma pipeline (…, N CTAs, …)", need="N")
_checked.declare("pipeline.producer_acquire", "state", _rules.pipeline_slot_in_use, where=_WHERE,
                 why=_rules.pipeline_fill_done(parity="…"))
_checked.declare("pipeline.consumer_release", "state", _rules.pipeline_release_without_wait,
                 where=_WHERE, why=_rules.pipeline_fill_pending(parity="…"))
for _op, _side in (("producer_acquire", "its consumers' release"),
                   ("consumer_wait", "its producers' commit"),
                   ("producer_tail", "its consumers' release")):
    _checked.declare(f"pipeline.{_op}", "(the wait)", _rules.pipeline_wait_timeout,
                     ns="`ac.wait_timeout_ns()`", where=_WHERE, side=_side, word="…")


@intrinsic
def _check_fill(typingctx, bars, slot, parity, count, phase, check, what):
    """Checked mode: the protocol at this operation, read off the slot's full
    barrier with ``mbarrier.test_wait.parity`` (nothing in plain mode).

    - ``producer_acquire`` (``check`` 0): the phase of parity ``parity``
      that this fill completes must still be open, or the slot is being
      acquired a second time (its fill already landed);
    - ``consumer_release`` (``check`` 1): that phase must be complete, or
      the consumer releases a fill it never waited for.

    Neither can fire in a correct program: a fill's phase completes only
    after its producer's arrivals, and the next fill of the slot needs this
    release."""
    op, done = CHECKS[literal_value(check, "pipeline", "check")]
    desc = literal_value(what, "pipeline", "what", kind=str)
    text, cons = ptx_wait(validate_wait(op, "test_wait", True, None, None))
    where = _rules.pipeline_where(slot="%u", step="%u", phase="%u", pipeline=desc)
    if done:
        message = _rules.pipeline_release_without_wait(
            where=where, why=_rules.pipeline_fill_pending(parity="%u"))
    else:
        message = _rules.pipeline_slot_in_use(where=where, why=_rules.pipeline_fill_done(parity="%u"))

    def codegen(context, builder, sig, args):
        if _checked._note_compiled():
            ary = context.make_array(sig.args[0])(context, builder, args[0])
            slot_v = as_i32(context, builder, args[1], sig.args[1])
            a = builder.add(shared_addr32(builder, ary.data), builder.mul(slot_v, ir.Constant(I32, 8)))
            p = as_i32(context, builder, args[2], sig.args[2])
            complete = _pred_asm(builder, text, cons, [a, p])
            bad = builder.not_(complete) if done else complete
            vals = [slot_v, as_i32(context, builder, args[3], sig.args[3]),
                    as_i32(context, builder, args[4], sig.args[4]), p]
            trap_if(context, builder, bad, f"pipeline {op}", message, vals)
        return context.get_dummy_value()

    return types.void(bars, slot, parity, count, phase, check, what), codegen


@intrinsic
def _at(typingctx, bars, k):
    """Barrier ``k`` of the pipeline as a one-element view (``bars[k:]``
    without the slice's bounds clamp: ``k`` is a slot the pipeline made)."""

    def codegen(context, builder, sig, args):
        src = context.make_array(sig.args[0])(context, builder, args[0])
        kk = builder.zext(as_i32(context, builder, args[1], sig.args[1]), I64)
        out = context.make_array(BARS)(context, builder)
        eight = context.get_constant(types.intp, 8)
        context.populate_array(out, data=builder.gep(src.data, [kk]),
                               shape=[context.get_constant(types.intp, 1)], strides=[eight],
                               itemsize=eight, meminfo=None)
        return out._getvalue()

    return BARS(bars, k), codegen


@intrinsic
def _check_init(typingctx, bars, need, threads, what, ctas=0):
    """Checked mode: the barrier array holds ``need`` barriers, the block
    has at least ``threads`` threads and, for a cluster pipeline
    (``ctas`` > 0), the cluster has exactly ``ctas`` CTAs."""
    desc = literal_value(what, "pipeline", "what", kind=str)
    n_need = literal_value(need, "pipeline", "need")
    n_threads = literal_value(threads, "pipeline", "threads")
    n_ctas = 0 if isinstance(ctas, (int, types.Omitted)) else literal_value(ctas, "pipeline", "ctas")

    def codegen(context, builder, sig, args):
        if _checked._note_compiled():
            ary = context.make_array(sig.args[0])(context, builder, args[0])
            size = builder.extract_value(ary.shape, 0)
            trap_if(context, builder, builder.icmp_signed("<", size, ir.Constant(size.type, n_need)),
                    "pipeline init", _rules.pipeline_bars(held="%lld", pipeline=desc, need=n_need), [size])
            nt = block_threads(builder)
            trap_if(context, builder, builder.icmp_unsigned("<", nt, ir.Constant(I32, n_threads)),
                    "pipeline init", _rules.pipeline_threads(threads="%u", pipeline=desc, need=n_threads),
                    [nt])
            if n_ctas:
                # the copies multicast to ranks 0..ctas-1 and the releases arrive
                # there: any other cluster size loses bytes or arrivals
                nc = read_sreg(builder, "sreg.cluster_nctarank")
                trap_if(context, builder, builder.icmp_unsigned("!=", nc, ir.Constant(I32, n_ctas)),
                        "pipeline init",
                        _rules.pipeline_cluster_size(ctas="%u", pipeline=desc, need=n_ctas), [nc])
        return context.get_dummy_value()

    return types.void(bars, need, threads, what, ctas), codegen


# --- operations ----------------------------------------------------------------------
#
# Each operation is an intrinsic whose typing picks a Python implementation
# for the pipeline's kind and constants; lowering compiles it in place (the
# constants are closure values, so every branch on them folds away).

U0, U1 = np.uint32(0), np.uint32(1)
STATE = types.NamedUniTuple(types.uint32, 3, PipelineState)


def _lower(impl):
    """Codegen that compiles ``impl`` for the call's signature.  Not cached:
    the checked mode and the target, which change the intrinsics it calls,
    are not in numba's key for internal functions."""

    def codegen(context, builder, sig, args):
        cres = context.compile_subroutine(builder, impl, sig, caching=False)
        return context.call_internal(builder, cres.fndesc, sig, args)

    return codegen


# implementations without constants (named functions: numba finds their
# source for line info, which it cannot for lambdas)
def _nothing(pipe, state):
    return None


def _no_init(pipe):
    return None


def _producer_start(pipe):
    return PipelineState(U0, U1, U0)


def _consumer_start(pipe):
    return PipelineState(U0, U0, U0)


def _commit(pipe, state):
    commit_group()


def _wait_all(pipe, state):
    wait_all()


@intrinsic
def init(typingctx, pipe):
    """Initialise the pipeline's barriers; call it from every thread of the
    block (thread 0 initialises, then a block barrier publishes them).  A
    group pipeline has nothing to initialise.  A tma pipeline run by one
    thread (``consumers=0``): call it from that thread only (it initialises
    the full barriers itself, no block barrier).

    Example::

        pipe = ac.pipeline.tma_pipeline(bars, 4, consumers=128)
        ac.pipeline.init(pipe)
    """
    kind = _pipe_kind("init", pipe)
    c = _consts(pipe)
    if not kind.barriers:
        return types.void(pipe), _lower(_no_init)
    desc = kind.describe(c)
    stages = c["stages"]
    full = kind.full_count(c)
    empty = c["consumers"] * c.get("ctas", 1)  # a cluster pipeline: every CTA's consumers
    threads = c["consumers"] + kind.producer_threads(c)
    solo = empty == 0  # a tma ring run by one thread: full barriers only
    need = stages if solo else 2 * stages
    tx = kind.tx

    if kind.cluster:
        ctas = c["ctas"]

        def cluster_impl(pipe):
            _check_init(pipe.bars, need, threads, desc, ctas)
            if cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0 and cuda.threadIdx.z == 0:
                for s in range(stages):
                    mbarrier_init(_at(pipe.bars, s), full)
                    mbarrier_init(_at(pipe.bars, stages + s), empty)
                fence_mbarrier_init()  # visible to the cluster's remote arrivals
                fence_proxy_async("shared::cta")  # and to the copy engine
            cluster_sync()  # no peer arrives or multicasts before every CTA initialised

        return types.void(pipe), _lower(cluster_impl)

    if solo:
        def solo_impl(pipe):
            # the ring's one thread initialises and uses the barriers: no block barrier
            _check_init(pipe.bars, need, threads, desc)
            for s in range(stages):
                mbarrier_init(_at(pipe.bars, s), full)
            fence_proxy_async("shared::cta")  # the inits, before the copy engine sees them

        return types.void(pipe), _lower(solo_impl)

    def impl(pipe):
        _check_init(pipe.bars, need, threads, desc)
        if cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0 and cuda.threadIdx.z == 0:
            for s in range(stages):
                mbarrier_init(_at(pipe.bars, s), full)
                mbarrier_init(_at(pipe.bars, stages + s), empty)
            if tx:
                fence_proxy_async("shared::cta")  # the inits, before the copy engine sees them
        cuda.syncthreads()

    return types.void(pipe), _lower(impl)


@intrinsic
def producer_start(typingctx, pipe):
    """The producer's first state: slot 0, phase 1 (every slot starts free).

    Example::

        st = ac.pipeline.producer_start(pipe)
    """
    _pipe_kind("producer_start", pipe)
    return STATE(pipe), _lower(_producer_start)


@intrinsic
def consumer_start(typingctx, pipe):
    """The consumer's first state: slot 0, phase 0 (no slot is full yet).

    Example::

        st = ac.pipeline.consumer_start(pipe)
    """
    _pipe_kind("consumer_start", pipe)
    return STATE(pipe), _lower(_consumer_start)


@intrinsic
def advance(typingctx, pipe, state):
    """The next state: the next slot, the phase flipped when the ring wraps,
    the step plus one (32-bit unsigned arithmetic, no division).

    Example::

        st = ac.pipeline.advance(pipe, st)
    """
    _pipe_kind("advance", pipe)
    _check_state("advance", state)
    last = np.uint32(_consts(pipe)["stages"] - 1)

    def impl(pipe, state):
        wrap = state.slot == last
        index = U0 if wrap else np.uint32(state.slot + U1)
        phase = np.uint32(state.phase ^ U1) if wrap else state.phase
        return PipelineState(index, phase, np.uint32(state.step + U1))

    return STATE(pipe, state), _lower(impl)


@intrinsic
def producer_acquire(typingctx, pipe, state):
    """Wait until slot ``state.slot`` is free (its consumers released the
    previous fill).  A group pipeline does not wait: its threads released
    the slot themselves (and ``shared=True`` freed it in ``consumer_wait``).

    Example::

        ac.pipeline.producer_acquire(pipe, st)
    """
    kind = _pipe_kind("producer_acquire", pipe)
    _check_state("producer_acquire", state)
    sig = types.void(pipe, state)
    if not kind.barriers:
        return sig, _lower(_nothing)
    c = _consts(pipe)
    stages, desc = c["stages"], kind.describe(c)
    if _solo(pipe):
        def solo_impl(pipe, state):
            # checked mode: the fill this acquire starts must not have landed already
            _check_fill(pipe.bars, state.slot, np.uint32(state.phase ^ U1), state.step, state.phase, 0, desc)

        return sig, _lower(solo_impl)

    def impl(pipe, state):
        _wait(pipe.bars, np.uint32(stages + state.slot), state.phase, state.slot, state.step, 0, desc)
        _check_fill(pipe.bars, state.slot, np.uint32(state.phase ^ U1), state.step, state.phase, 0, desc)

    return sig, _lower(impl)


@intrinsic
def producer_try_acquire(typingctx, pipe, state):
    """Non-blocking ``producer_acquire``: True when slot ``state.slot`` is
    free (``mbarrier.test_wait.parity`` on its empty barrier); on True the
    slot is acquired.  Not for a group pipeline (a compile-time error).

    Example::

        if ac.pipeline.producer_try_acquire(pipe, st):
            ac.pipeline.copy_tensor(pipe, st, ring[st.slot], tmap, (r, 0))
            ac.pipeline.producer_commit(pipe, st)
            st = ac.pipeline.advance(pipe, st)
    """
    kind = _pipe_kind("producer_try_acquire", pipe)
    _check_state("producer_try_acquire", state)
    if not kind.barriers or _solo(pipe):
        what = "a group pipeline" if not kind.barriers else "a tma pipeline run by one thread (consumers=0)"
        raise TypingError(f"producer_try_acquire: {what} has nothing to test (its "
                          "producer_acquire never waits); use producer_acquire")
    stages = _consts(pipe)["stages"]

    def impl(pipe, state):
        return mbarrier_test_wait_parity(_at(pipe.bars, np.uint32(stages + state.slot)), state.phase)

    return types.boolean(pipe, state), _lower(impl)


@intrinsic
def producer_commit(typingctx, pipe, state):
    """Signal that this thread's copies into slot ``state.slot`` are issued:
    ``commit_group`` (group pipeline), ``cp.async.mbarrier.arrive.noinc`` on
    the full barrier (cp_async pipeline); nothing for a tma pipeline (its
    copies arrived with their bytes), where it marks the end of the stage
    for the simulator's checks.

    Example::

        ac.pipeline.producer_commit(pipe, st)
    """
    kind = _pipe_kind("producer_commit", pipe)
    _check_state("producer_commit", state)
    sig = types.void(pipe, state)
    if not kind.barriers:
        return sig, _lower(_commit)
    if kind.tx:
        return sig, _lower(_nothing)

    def impl(pipe, state):
        cp_async_mbarrier_arrive(_at(pipe.bars, state.slot), noinc=True)

    return sig, _lower(impl)


@intrinsic
def consumer_wait(typingctx, pipe, state):
    """Wait until slot ``state.slot`` is full: its copies landed.

    Example::

        ac.pipeline.consumer_wait(pipe, st)
        x = ring[st.slot, tid]
    """
    kind = _pipe_kind("consumer_wait", pipe)
    _check_state("consumer_wait", state)
    sig = types.void(pipe, state)
    c = _consts(pipe)
    if not kind.barriers:
        n = c["stages"] - (2 if c["shared"] else 1)

        def wait_shared(pipe, state):
            wait_group(n)
            cuda.syncthreads()  # everyone's copies landed; the slot read last is free

        def wait_own(pipe, state):
            wait_group(n)

        return sig, _lower(wait_shared if c["shared"] else wait_own)
    desc = kind.describe(c)

    def impl(pipe, state):
        _wait(pipe.bars, state.slot, state.phase, state.slot, state.step, 1, desc)

    return sig, _lower(impl)


@intrinsic
def consumer_try_wait(typingctx, pipe, state):
    """Non-blocking ``consumer_wait``: True when slot ``state.slot`` is full
    (``mbarrier.test_wait.parity``).  Not for a group pipeline (a
    compile-time error: cp.async groups have no test).

    Example::

        while not ac.pipeline.consumer_try_wait(pipe, st):
            do_other_work()
    """
    kind = _pipe_kind("consumer_try_wait", pipe)
    _check_state("consumer_try_wait", state)
    if not kind.barriers:
        raise TypingError("consumer_try_wait: a group pipeline cannot test its slots "
                          "(cp.async groups have no non-blocking test); use consumer_wait, "
                          "or a cp_async_pipeline")

    def impl(pipe, state):
        return mbarrier_test_wait_parity(_at(pipe.bars, state.slot), state.phase)

    return types.boolean(pipe, state), _lower(impl)


@intrinsic
def consumer_release(typingctx, pipe, state):
    """This thread is done with slot ``state.slot``: one arrival on its
    empty barrier (nothing for a group pipeline).

    Example::

        ac.pipeline.consumer_release(pipe, st)
    """
    kind = _pipe_kind("consumer_release", pipe)
    _check_state("consumer_release", state)
    sig = types.void(pipe, state)
    if not kind.barriers:
        return sig, _lower(_nothing)
    c = _consts(pipe)
    stages, desc = c["stages"], kind.describe(c)
    if _solo(pipe):
        def solo_impl(pipe, state):
            _check_fill(pipe.bars, state.slot, state.phase, state.step, state.phase, 1, desc)

        return sig, _lower(solo_impl)
    if kind.cluster:
        ctas = c["ctas"]

        def cluster_impl(pipe, state):
            _check_fill(pipe.bars, state.slot, state.phase, state.step, state.phase, 1, desc)
            # every CTA's producer multicasts into this slot: free it in each of them.
            # CTA scope: the arrival publishes nothing, it says this thread's reads of
            # the slot are done (a cluster-scope release costs a GPU-scope fence each time)
            for r in range(ctas):
                mbarrier_arrive(_at(pipe.bars, np.uint32(stages + state.slot)), cta_rank=np.uint32(r),
                                scope="cta")

        return sig, _lower(cluster_impl)

    def impl(pipe, state):
        # checked mode: the fill being released has landed (the consumer waited for it)
        _check_fill(pipe.bars, state.slot, state.phase, state.step, state.phase, 1, desc)
        mbarrier_arrive(_at(pipe.bars, np.uint32(stages + state.slot)))

    return sig, _lower(impl)


@intrinsic
def producer_tail(typingctx, pipe, state):
    """Wait until the consumers have released every slot, so that no copy
    or read of the ring is outstanding (before the block exits or reuses the
    ring's memory); ``wait_all`` for a group pipeline.

    Example::

        ac.pipeline.producer_tail(pipe, st)
    """
    kind = _pipe_kind("producer_tail", pipe)
    _check_state("producer_tail", state)
    sig = types.void(pipe, state)
    if not kind.barriers:
        return sig, _lower(_wait_all)
    if _solo(pipe):
        return sig, _lower(_nothing)
    c = _consts(pipe)
    stages, desc = c["stages"], kind.describe(c)
    last = np.uint32(stages - 1)

    def impl(pipe, state):
        index, phase, count = state.slot, state.phase, state.step
        for _ in range(stages):
            _wait(pipe.bars, np.uint32(stages + index), phase, index, count, 2, desc)
            wrap = index == last
            phase = np.uint32(phase ^ U1) if wrap else phase
            index = U0 if wrap else np.uint32(index + U1)
            count = np.uint32(count + U1)

    return sig, _lower(impl)


def _tma_only(api: str, pipe, state) -> None:
    kind = _pipe_kind(api, pipe)
    if not kind.tx:
        raise TypingError(f"{api}: copies through the pipeline need a tma_pipeline "
                          f"(transaction barriers), got a {kind} pipeline; issue cp_async "
                          "yourself between producer_acquire and producer_commit")
    _check_state(api, state)


def _copy_plan(api: str, pipe) -> tuple[int, int]:
    """(bytes factor, multicast mask) of a copy through ``pipe``: a cluster
    pipeline multicasts to all its CTAs, so the producer's own barrier
    receives every CTA's copy of the same size."""
    c = _consts(pipe)
    if _pipe_kind(api, pipe).cluster:
        return c["ctas"], (1 << c["ctas"]) - 1
    return 1, 0


@intrinsic
def copy_bulk(typingctx, pipe, state, dst, src, cache_policy=None):
    """Bulk-copy ``src`` (global) into ``dst`` (shared) as one of the copies
    of slot ``state.slot`` of a tma pipeline: arrive on the slot's full
    barrier expecting ``dst``'s bytes, then ``cp_async_bulk_g2s``.  In a
    cluster pipeline the copy is multicast to every CTA of the cluster and
    the arrival expects ``dst``'s bytes times the CTAs.  ``cache_policy``:
    a uint64 from ``ac.createpolicy_fractional``, passed to the copy.

    Example::

        ac.pipeline.copy_bulk(pipe, st, ring[st.slot], src[b:b + words])
    """
    _tma_only("copy_bulk", pipe, state)
    validate_bulk_g2s(dst, src, BARS, types.Omitted(None), cache_policy)
    times, mask = _copy_plan("copy_bulk", pipe)
    policy = not is_absent(cache_policy)
    u_times, u_mask = np.uint32(times), np.uint16(mask)

    # one implementation per form (no untaken branch to type)
    def multicast_policy(pipe, state, dst, src, cache_policy):
        bar = _at(pipe.bars, state.slot)
        mbarrier_arrive_expect_tx(bar, np.uint32(np.uint32(dst.size * dst.itemsize) * u_times))
        cp_async_bulk_g2s(dst, src, bar, multicast_mask=u_mask, cache_policy=cache_policy)

    def multicast(pipe, state, dst, src, cache_policy):
        bar = _at(pipe.bars, state.slot)
        mbarrier_arrive_expect_tx(bar, np.uint32(np.uint32(dst.size * dst.itemsize) * u_times))
        cp_async_bulk_g2s(dst, src, bar, multicast_mask=u_mask)

    def local_policy(pipe, state, dst, src, cache_policy):
        bar = _at(pipe.bars, state.slot)
        mbarrier_arrive_expect_tx(bar, np.uint32(dst.size * dst.itemsize))
        cp_async_bulk_g2s(dst, src, bar, cache_policy=cache_policy)

    def local(pipe, state, dst, src, cache_policy):
        bar = _at(pipe.bars, state.slot)
        mbarrier_arrive_expect_tx(bar, np.uint32(dst.size * dst.itemsize))
        cp_async_bulk_g2s(dst, src, bar)

    impl = {(True, True): multicast_policy, (True, False): multicast,
            (False, True): local_policy, (False, False): local}[(bool(mask), policy)]
    return types.void(pipe, state, dst, src, cache_policy), _lower(impl)


@intrinsic
def copy_tensor(typingctx, pipe, state, dst, tensor_map, coords, fence=True, cache_policy=None):
    """TMA-load the box of ``tensor_map`` at ``coords`` into ``dst`` as one of
    the copies of slot ``state.slot`` of a tma pipeline: arrive on the
    slot's full barrier expecting ``dst``'s bytes (a tile is exactly one box:
    checked mode compares them with the map's box bytes), then
    ``cp_async_bulk_tensor_load``.  ``fence=False`` skips the tensormap proxy
    fence (call ``ac.fence_proxy_tensormap`` once first).  In a cluster
    pipeline the box is multicast to every CTA of the cluster and the
    arrival expects its bytes times the CTAs.  ``cache_policy``: a uint64
    from ``ac.createpolicy_fractional``, passed to the load.

    Example::

        ac.pipeline.copy_tensor(pipe, st, ring[st.slot], tmap, (32 * t, 0), fence=False)
    """
    _tma_only("copy_tensor", pipe, state)
    f = literal_value(fence, "copy_tensor", "fence", kind=bool)
    if not isinstance(f, bool):
        raise TypingError(f"copy_tensor: `fence` must be a bool constant, got {f!r}")
    validate_load(dst, tensor_map, coords, BARS, types.Omitted(None), cache_policy, fence)
    times, mask = _copy_plan("copy_tensor", pipe)
    policy = not is_absent(cache_policy)
    u_times, u_mask = np.uint32(times), np.uint16(mask)

    # one implementation per form (no untaken branch to type)
    def multicast_policy(pipe, state, dst, tensor_map, coords, fence, cache_policy):
        bar = _at(pipe.bars, state.slot)
        mbarrier_arrive_expect_tx(bar, np.uint32(np.uint32(dst.size * dst.itemsize) * u_times))
        cp_async_bulk_tensor_load(dst, tensor_map, coords, bar, multicast_mask=u_mask,
                                  cache_policy=cache_policy, fence=f)

    def multicast(pipe, state, dst, tensor_map, coords, fence, cache_policy):
        bar = _at(pipe.bars, state.slot)
        mbarrier_arrive_expect_tx(bar, np.uint32(np.uint32(dst.size * dst.itemsize) * u_times))
        cp_async_bulk_tensor_load(dst, tensor_map, coords, bar, multicast_mask=u_mask, fence=f)

    def local_policy(pipe, state, dst, tensor_map, coords, fence, cache_policy):
        bar = _at(pipe.bars, state.slot)
        mbarrier_arrive_expect_tx(bar, np.uint32(dst.size * dst.itemsize))
        cp_async_bulk_tensor_load(dst, tensor_map, coords, bar, cache_policy=cache_policy, fence=f)

    def local(pipe, state, dst, tensor_map, coords, fence, cache_policy):
        bar = _at(pipe.bars, state.slot)
        mbarrier_arrive_expect_tx(bar, np.uint32(dst.size * dst.itemsize))
        cp_async_bulk_tensor_load(dst, tensor_map, coords, bar, fence=f)

    impl = {(True, True): multicast_policy, (True, False): multicast,
            (False, True): local_policy, (False, False): local}[(bool(mask), policy)]

    return types.void(pipe, state, dst, tensor_map, coords, fence, cache_policy), _lower(impl)


@intrinsic
def copy_tensor_im2col(typingctx, pipe, state, dst, tensor_map, coords, offsets, fence=True,
                       cache_policy=None):
    """:func:`copy_tensor` for an im2col map: arrive on the slot's full
    barrier expecting ``dst``'s bytes, then
    ``cp_async_bulk_tensor_load_im2col(dst, tensor_map, coords, offsets, bar)``
    (multicast to every CTA in a cluster pipeline, as :func:`copy_tensor`).

    Example::

        ac.pipeline.copy_tensor_im2col(pipe, st, a_ring[st.slot], xmap, (n, h0, w0, c0),
                                       (r, s), fence=False)
    """
    api = "copy_tensor_im2col"
    _tma_only(api, pipe, state)
    f = literal_value(fence, api, "fence", kind=bool)
    if not isinstance(f, bool):
        raise TypingError(f"{api}: `fence` must be a bool constant, got {f!r}")
    times, mask = _copy_plan(api, pipe)
    policy = not is_absent(cache_policy)
    u_times, u_mask = np.uint32(times), np.uint16(mask)

    # one implementation per form (no untaken branch to type)
    def multicast_policy(pipe, state, dst, tensor_map, coords, offsets, fence, cache_policy):
        bar = _at(pipe.bars, state.slot)
        mbarrier_arrive_expect_tx(bar, np.uint32(np.uint32(dst.size * dst.itemsize) * u_times))
        cp_async_bulk_tensor_load_im2col(dst, tensor_map, coords, offsets, bar,
                                         multicast_mask=u_mask, cache_policy=cache_policy, fence=f)

    def multicast(pipe, state, dst, tensor_map, coords, offsets, fence, cache_policy):
        bar = _at(pipe.bars, state.slot)
        mbarrier_arrive_expect_tx(bar, np.uint32(np.uint32(dst.size * dst.itemsize) * u_times))
        cp_async_bulk_tensor_load_im2col(dst, tensor_map, coords, offsets, bar,
                                         multicast_mask=u_mask, fence=f)

    def local_policy(pipe, state, dst, tensor_map, coords, offsets, fence, cache_policy):
        bar = _at(pipe.bars, state.slot)
        mbarrier_arrive_expect_tx(bar, np.uint32(dst.size * dst.itemsize))
        cp_async_bulk_tensor_load_im2col(dst, tensor_map, coords, offsets, bar,
                                         cache_policy=cache_policy, fence=f)

    def local(pipe, state, dst, tensor_map, coords, offsets, fence, cache_policy):
        bar = _at(pipe.bars, state.slot)
        mbarrier_arrive_expect_tx(bar, np.uint32(dst.size * dst.itemsize))
        cp_async_bulk_tensor_load_im2col(dst, tensor_map, coords, offsets, bar, fence=f)

    impl = {(True, True): multicast_policy, (True, False): multicast,
            (False, True): local_policy, (False, False): local}[(bool(mask), policy)]

    return (types.void(pipe, state, dst, tensor_map, coords, offsets, fence, cache_policy),
            _lower(impl))

