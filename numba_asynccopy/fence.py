"""Fences (proxy, mbarrier-init, cluster acq_rel) and warp election."""

from __future__ import annotations

from llvmlite import ir
from numba.core import types

from . import _rules
from . import checked as _checked
from ._compat import TypingError, intrinsic
from ._forms import form
from ._lowering import I64, as_i32, predicate, statement, trap_if
from ._regions import check_runtime_scalar, literal_value

PROXY_SPACES = ("global", "shared::cta", "shared::cluster")


@intrinsic
def fence_proxy_async(typingctx, space=None):
    """Order this thread's generic-proxy accesses before later async-proxy
    ones (bulk copies, TMA) on ``space`` (None: all state spaces).

    PTX: ``fence.proxy.async{.global,.shared::cta,.shared::cluster};`` (sm_90).

    Example::

        sh[tid] = x                     # ordinary store to shared memory
        ac.fence_proxy_async("shared::cta")
        # ... then a bulk copy reads sh
    """
    f = form("fence.proxy.async")
    sp = literal_value(space, "fence_proxy_async", "space", kind=str, allowed=PROXY_SPACES,
                       required=False)
    text = f.opcode.format(space=f".{sp}" if sp else "") + ";"

    return types.void(space), statement(text)


@intrinsic
def fence_mbarrier_init(typingctx):
    """Make prior ``mbarrier_init`` visible to the cluster (release.cluster).

    PTX: ``fence.mbarrier_init.release.cluster;`` (sm_90).  Follow it with a
    cluster barrier before other CTAs touch the barrier.

    Example::

        if cuda.threadIdx.x == 0:
            ac.mbarrier_init(bars[0:], 1)
            ac.fence_mbarrier_init()
    """
    f = form("fence.mbarrier_init")

    return types.void(), statement(f.opcode + ";")


@intrinsic
def fence_acq_rel_cluster(typingctx):
    """Acquire-release fence at cluster scope.

    PTX: ``fence.acq_rel.cluster;`` (sm_90).

    Example::

        ac.fence_acq_rel_cluster()
    """
    f = form("fence.acq_rel.cluster")

    return types.void(), statement(f.opcode + ";")


@intrinsic
def elect_sync(typingctx, mask=0xFFFFFFFF):
    """Elect one lane among the active lanes of ``mask``; True in that lane.

    PTX: ``elect.sync _|p, membermask;`` (sm_90, PTX ISA 8.0).  Every lane in
    ``mask`` must execute it.

    Example::

        if ac.elect_sync():
            ac.mbarrier_arrive_expect_tx(bars[0:], 256)
    """
    f = form("elect.sync")
    check_runtime_scalar(mask, "elect_sync", "mask")
    if isinstance(mask, types.IntegerLiteral) and not 1 <= mask.literal_value <= 0xFFFFFFFF:
        # an empty mask elects nobody (undefined in PTX); more than 32 bits is no lane mask
        raise TypingError(f"elect_sync: {_rules.outside_range(name='mask', value=mask.literal_value, lo='0x1', hi='0xFFFFFFFF')}")

    def codegen(context, builder, sig, args):
        ty = sig.args[0]
        if _checked._note_compiled() and isinstance(ty, types.Integer):
            # on the full-width value: an empty mask, or one wider than a warp's 32 lanes
            v = args[0]
            wide = v if ty.bitwidth == 64 else (builder.sext(v, I64) if ty.signed else builder.zext(v, I64))
            bad = builder.or_(builder.icmp_unsigned("==", wide, ir.Constant(I64, 0)),
                              builder.icmp_unsigned(">", wide, ir.Constant(I64, 0xFFFFFFFF)))
            trap_if(context, builder, bad, "elect_sync",
                    _rules.outside_range(name="mask", value="0x%llx", lo="0x1", hi="0xFFFFFFFF"), [wide])
        m = as_i32(context, builder, args[0], sig.args[0])
        return predicate(builder, f"{f.opcode} _|p, $1;", "r", [m])

    return types.boolean(mask), codegen


# --- what checked mode checks here (the README's table is made from these) ------

_checked.declare("elect_sync", "mask", _rules.outside_range, name="mask", value="…", lo="0x1",
                 hi="0xFFFFFFFF")
