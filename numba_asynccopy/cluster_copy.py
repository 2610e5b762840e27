"""Bulk copy from this CTA's shared memory into another CTA of the cluster:
``cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes``
with the contract of ``seeds/cp-async-bulk-cluster.rst``.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from numba.core import types

from . import checked as _checked
from ._compat import TypingError, intrinsic
from ._forms import form, select
from ._lowering import I32, as_i32, asm, shared_addr32
from ._regions import (
    View,
    barrier_generic,
    check_barrier,
    check_chunk_views,
    check_runtime_scalar,
    check_same_rank,
    check_view,
    literal_value,
    thread_chunks,
)
from ._rules import BULK_ALIGN, MAX_TX  # re-exported: bulk granule, transaction range
from .cluster import check_barrier_runtime, check_rank, check_shared, mapa32


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
    check_view(api, "dst", dst, chunk)
    check_view(api, "src", src, chunk)
    check_same_rank(api, "dst", dst, "src", src)
    check_barrier(api, "mbar", mbar)
    check_runtime_scalar(remote_cta_id, api, "remote_cta_id")
    if isinstance(pred, types.Omitted):
        p = pred.value
    elif isinstance(pred, types.BooleanLiteral):
        p = pred.literal_value
    else:
        check_runtime_scalar(pred, api, "pred", (types.Boolean, types.Integer))
        p = None
    return BulkClusterOptions(chunk, {True: "always", False: "never", None: "runtime"}[p])


def ptx_cp_async_bulk_cluster(o: BulkClusterOptions) -> tuple[str, str]:
    """(asm text, constraints) of one chunk: operands dst (mapped), src, mbar (mapped)."""
    return f"{form('cp.async.bulk.cluster').opcode} [$0], [$1], {o.chunk_bytes}, [$2];", "r,r,r"


def _lower(context, builder, sig, args, o: BulkClusterOptions):
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
            check_rank(context, builder, api, "remote_cta_id", rank)
            check_shared(context, builder, api, "dst", d.data)
            check_shared(context, builder, api, "src", s.data)
            check_barrier_runtime(context, builder, api, "mbar", bar)
            check_chunk_views(context, builder, api, [s, d], o.chunk_bytes, align=BULK_ALIGN)
        rbar = mapa32(builder, shared_addr32(builder, bar), rank)  # once
        with thread_chunks(builder, s, o.chunk_bytes) as (outer, c):
            rdst = mapa32(builder, d.shared_chunk(builder, outer, c, o.chunk_bytes), rank)  # per repeat
            asm(builder, text, constraints, [rdst, s.shared_chunk(builder, outer, c, o.chunk_bytes), rbar])

    if o.pred == "runtime":
        p = as_i32(context, builder, args[5], sig.args[5])
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

    Example (CTA 0 sends 256 bytes to CTA 1)::

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
        return _lower(context, builder, sig, args, o)

    return sig, codegen
