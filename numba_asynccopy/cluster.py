"""Thread-block clusters (sm_90): special registers, the cluster barrier,
distributed shared memory (DSMEM) and mbarrier operations on another CTA.

Addresses: every function here takes *local* shared-memory views and maps
them to the target CTA itself with ``mapa``; never pass an address that was
already mapped.  Ranks are ``%cluster_ctarank`` values (0 ..
``cluster_num_ctas() - 1``), not block indices.  In checked mode a rank
outside the cluster, a view outside shared memory, or a DSMEM index out of
range traps with a message.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from numba.core import types
from numba.cuda import cgutils

from . import _rules
from . import checked as _checked
from ._compat import TypingError, intrinsic
from ._forms import form, select
from ._lowering import (
    I8,
    I16,
    I32,
    I64,
    as_i32,
    asm,
    check_range_full,
    generic_addr64,
    instruction,
    is_space,
    predicate,
    pure_asm,
    shared_addr32,
    statement,
    trap_if,
    wide_int,
)
from ._regions import (
    barrier_generic,
    bool_constant,
    check_barrier,
    check_runtime_scalar,
    literal_value,
)
from .host import _numba_internals as _nb
from .host.launch import ClusterLaunchError, check_cluster_shape

# --- lowering helpers -----------------------------------------------------------


def read_sreg(builder, key: str, axis: str | None = None):
    """u32 special register of form ``key`` (optionally ``.x/.y/.z``)."""
    row = form(key)
    reg = row.opcode.format(axis=f".{axis}") if row.quals else row.opcode
    return pure_asm(builder, f"mov.u32 $0, {reg};", "=r")


def mapa32(builder, addr32, rank32):
    """``mapa.shared::cluster.u32``: the address of the same shared location
    in CTA ``rank`` of the cluster (a ``.shared::cluster`` address)."""
    return pure_asm(builder, f"{form('mapa').opcode} $0, $1, $2;", "=r,r,r", [addr32, rank32])


def cluster_size(builder):
    return read_sreg(builder, "sreg.cluster_nctarank")


def check_rank(context, builder, api: str, name: str, val, ty):
    """Checked mode: trap unless 0 <= rank < cluster_num_ctas(), on the rank's
    full width (a 64-bit ``2**32`` must not pass as rank 0)."""
    n = cluster_size(builder)
    v, signed = wide_int(context, builder, val, ty)
    bad = builder.icmp_unsigned(">=", v, builder.zext(n, I64))  # a negative rank is huge unsigned
    trap_if(context, builder, bad, api,
            _rules.outside_cluster(name=name, value="%lld" if signed else "%llu", n="%u",
                                   last="%u"),
            [v, n, builder.sub(n, ir.Constant(I32, 1))])


#: ranks of the largest (non-portable) cluster: 0..15
MAX_RANK = 15


def check_rank_arg(api: str, name: str, ty) -> None:
    """A rank argument: a run-time integer, or a constant that can name a CTA
    of some cluster (0..15); whether it is inside *this* cluster is checked
    mode's run-time check."""
    check_runtime_scalar(ty, api, name)
    if isinstance(ty, types.IntegerLiteral) and not 0 <= ty.literal_value <= MAX_RANK:
        raise TypingError(f"{api}: " + _rules.outside_range(
            name=name, value=ty.literal_value, lo=0, hi=MAX_RANK) + " (a cluster has at most 16 CTAs)")


def check_shared(context, builder, api: str, name: str, ptr):
    not_shared = builder.not_(is_space(builder, ptr, "shared"))
    trap_if(context, builder, not_shared, api,
            f"`{name}` is not a local shared-memory view (base %p)", [generic_addr64(builder, ptr)])


# --- special registers -------------------------------------------------------------


def _scalar_sreg(api: str, key: str, doc: str):
    def typer(typingctx):
        select(key)

        def codegen(context, builder, sig, args):
            return read_sreg(builder, key)

        return types.int32(), codegen

    typer.__name__ = api
    typer.__doc__ = doc
    return intrinsic(typer)


def _triple_sreg(api: str, key: str, doc: str):
    def typer(typingctx):
        select(key)
        ret = types.UniTuple(types.int32, 3)

        def codegen(context, builder, sig, args):
            vals = [read_sreg(builder, key, a) for a in "xyz"]
            return context.make_tuple(builder, sig.return_type, vals)

        return ret(), codegen

    typer.__name__ = api
    typer.__doc__ = doc
    return intrinsic(typer)


cluster_cta_rank = _scalar_sreg("cluster_cta_rank", "sreg.cluster_ctarank", """\
Rank of this CTA in its cluster, 0 .. ``cluster_num_ctas() - 1`` (int32).

PTX ``%cluster_ctarank`` (sm_90, PTX ISA 7.8).  This is the ``rank``/
``cta_rank``/``remote_cta_id`` the other cluster functions take.

Example::

    if ac.cluster_cta_rank() == 0:
        ...
""")

cluster_num_ctas = _scalar_sreg("cluster_num_ctas", "sreg.cluster_nctarank", """\
Number of CTAs in this CTA's cluster (int32); 1 when not clustered.

PTX ``%cluster_nctarank`` (sm_90, PTX ISA 7.8).

Example::

    nxt = (ac.cluster_cta_rank() + 1) % ac.cluster_num_ctas()
""")

cluster_cta_id = _triple_sreg("cluster_cta_id", "sreg.cluster_ctaid", """\
(x, y, z) position of this CTA inside its cluster (int32 each).

PTX ``%cluster_ctaid`` (sm_90, PTX ISA 7.8).  For a cluster shape (X, Y, Z),
``cluster_cta_rank() == x + X * (y + Y * z)``.

Example::

    cx, cy, cz = ac.cluster_cta_id()
""")

cluster_dim = _triple_sreg("cluster_dim", "sreg.cluster_nctaid", """\
(x, y, z) shape of this CTA's cluster, in CTAs (int32 each).

PTX ``%cluster_nctaid`` (sm_90, PTX ISA 7.8).

Example::

    cdx, cdy, cdz = ac.cluster_dim()
""")

cluster_id = _triple_sreg("cluster_id", "sreg.clusterid", """\
(x, y, z) position of this CTA's cluster in the grid of clusters (int32 each).

PTX ``%clusterid`` (sm_90, PTX ISA 7.8).

Example::

    kx, ky, kz = ac.cluster_id()
""")

num_clusters = _triple_sreg("num_clusters", "sreg.nclusterid", """\
(x, y, z) number of clusters in the grid (int32 each).

PTX ``%nclusterid`` (sm_90, PTX ISA 7.8).

Example::

    nx, ny, nz = ac.num_clusters()
""")


@intrinsic
def is_explicit_cluster(typingctx):
    """True when the kernel was launched with an explicit cluster shape
    (``cluster_dims`` or ``ac.launch(..., cluster=)``).

    PTX ``%is_explicit_cluster`` (sm_90, PTX ISA 7.8).

    Example::

        if ac.is_explicit_cluster():
            ac.cluster_sync()
    """
    f = form("sreg.is_explicit_cluster")

    def codegen(context, builder, sig, args):
        return predicate(builder, f"mov.pred p, {f.opcode};", pure=True)

    return types.boolean(), codegen


# --- the cluster barrier ---------------------------------------------------------------


# the cluster family's wording of a bool constant that is not one (compile
# time only, so not a rule of the book)
_TRUE_OR_FALSE = _rules.Rule("true_or_false", "`{name}` must be True or False, got {value}")


def _aligned(ty, api: str) -> str:
    return ".aligned" if bool_constant(ty, api, "aligned", _TRUE_OR_FALSE) else ""


def ptx_cluster_arrive(sem: str, aligned: str) -> str:
    return form("barrier.cluster.arrive").opcode.format(sem=f".{sem}", aligned=aligned) + ";"


def ptx_cluster_wait(aligned: str) -> str:
    return form("barrier.cluster.wait").opcode.format(aligned=aligned) + ";"


@intrinsic
def cluster_arrive(typingctx, sem="release", *, aligned=False):
    """Arrive at the cluster barrier without waiting (split barrier).

    PTX ``barrier.cluster.arrive{.release,.relaxed}{.aligned}`` (sm_90, PTX
    ISA 8.0).  Every thread of every CTA in the cluster must arrive before
    :func:`cluster_wait` returns.  ``sem="release"`` (default) makes this
    thread's earlier writes, shared memory included, visible to threads that
    wait; ``"relaxed"`` orders nothing.  ``aligned=True`` emits the
    ``.aligned`` form: every thread of the warp must execute the same call
    (no divergence), which is faster.

    Example::

        ac.cluster_arrive()          # my writes to sh are done
        ...                          # independent work
        ac.cluster_wait()            # everyone's writes are visible
    """
    api = "cluster_arrive"
    select("barrier.cluster.arrive")
    s = literal_value(sem, api, "sem", kind=str, allowed=("release", "relaxed"))
    text = ptx_cluster_arrive(s, _aligned(aligned, api))

    return types.void(sem, aligned), statement(text)


@intrinsic
def cluster_wait(typingctx, *, aligned=False):
    """Wait until every thread of the cluster has arrived (acquire).

    PTX ``barrier.cluster.wait.acquire{.aligned}`` (sm_90, PTX ISA 8.0).

    Example::

        ac.cluster_arrive(sem="relaxed")
        ac.cluster_wait()
    """
    api = "cluster_wait"
    select("barrier.cluster.wait")
    text = ptx_cluster_wait(_aligned(aligned, api))

    return types.void(aligned), statement(text)


@intrinsic
def cluster_sync(typingctx, *, aligned=False):
    """Barrier over every thread of the cluster: arrive (release) then wait
    (acquire).

    PTX ``barrier.cluster.arrive.release`` + ``barrier.cluster.wait.acquire``
    (sm_90, PTX ISA 8.0).  Use it after ``mbarrier_init`` +
    ``fence_mbarrier_init`` before other CTAs touch the barrier, and before
    a CTA exits while others may still access its shared memory.

    Example::

        sh[tid] = value
        ac.cluster_sync()
        other = ac.dsmem_load(sh, peer, tid)
    """
    api = "cluster_sync"
    select("barrier.cluster.arrive")
    select("barrier.cluster.wait")
    a = _aligned(aligned, api)
    text = ptx_cluster_arrive("release", a) + " " + ptx_cluster_wait(a)

    return types.void(aligned), statement(text)


# --- distributed shared memory --------------------------------------------------------

# dtype -> (ld/st type suffix, register constraint, register type, atom.add type)
_DSMEM_TYPES = {
    types.int8: ("s8", "r", I32, None),
    types.uint8: ("u8", "r", I32, None),
    types.int16: ("s16", "h", I16, None),
    types.uint16: ("u16", "h", I16, None),
    types.float16: ("b16", "h", I16, None),
    types.int32: ("s32", "r", I32, "s32"),
    types.uint32: ("u32", "r", I32, "u32"),
    types.float32: ("f32", "f", ir.FloatType(), "f32"),
    types.int64: ("s64", "l", I64, "u64"),  # two's complement: u64 add is s64 add
    types.uint64: ("u64", "l", I64, "u64"),
    types.float64: ("f64", "d", ir.DoubleType(), "f64"),
}


@dataclass(frozen=True)
class DsmemOptions:
    dtype: object
    suffix: str
    constraint: str
    reg: ir.Type
    atom: str | None
    ndim: int


def validate_dsmem(api: str, view, rank, index, value=None, atomic=False) -> DsmemOptions:
    select({"dsmem_load": "ld.shared::cluster", "dsmem_store": "st.shared::cluster",
          "dsmem_atomic_add": "atom.shared::cluster.add"}[api])
    if not isinstance(view, types.Array):
        raise TypingError(f"{api}: {_rules.local_shared_view(name='view', got=view)}")
    if view.dtype not in _DSMEM_TYPES:
        raise TypingError(
            f"{api}: dtype {view.dtype} of `view` is not supported; supported: "
            + ", ".join(str(t) for t in _DSMEM_TYPES)
        )
    suffix, cons, reg, atom = _DSMEM_TYPES[view.dtype]
    if atomic and atom is None:
        raise TypingError(
            f"{api}: `atom.shared::cluster.add` has no {view.dtype} form; use "
            "int32, uint32, int64, uint64, float32 or float64"
        )
    check_rank_arg(api, "rank", rank)
    if isinstance(index, types.BaseTuple):
        if len(index) != view.ndim or not all(isinstance(t, types.Integer) for t in index):
            raise TypingError(
                f"{api}: `index` must be {view.ndim} integers for a {view.ndim}-D view, got {index}"
            )
    elif isinstance(index, types.Integer):
        if view.ndim != 1:
            raise TypingError(
                f"{api}: a {view.ndim}-D view needs a tuple of {view.ndim} indices, got {index}"
            )
    else:
        raise TypingError(f"{api}: `index` must be an integer or a tuple of integers, got {index}")
    if value is not None:
        check_runtime_scalar(value, api, "value", (types.Number, types.Boolean))
        if isinstance(getattr(value, "literal_type", value), types.Complex):
            # there is no complex DSMEM access: refuse here, not as an LLVM cast error
            raise TypingError(f"{api}: `value` must be a real number (int, float or bool) for a "
                              f"{view.dtype} view, got {value}")
    return DsmemOptions(view.dtype, suffix, cons, reg, atom, view.ndim)


def _index_list(context, builder, ty, val, ndim):
    intp = types.intp
    if isinstance(ty, types.BaseTuple):
        items = cgutils.unpack_tuple(builder, val, len(ty))
        return [context.cast(builder, v, t, intp) for v, t in zip(items, ty)]
    return [context.cast(builder, val, ty, intp)]


def dsmem_address(context, builder, api, vty, view, rty, rank, ity, index):
    """(remote .shared::cluster address, rank) of ``view[index]`` in CTA ``rank``.

    The index is not wrapped around (no negative indices); checked mode
    traps when it is out of range, when ``view`` is not in shared memory or
    when ``rank`` is outside the cluster.
    """
    ary = context.make_array(vty)(context, builder, view)
    idx = _index_list(context, builder, ity, index, vty.ndim)
    shape = cgutils.unpack_tuple(builder, ary.shape, vty.ndim)
    strides = cgutils.unpack_tuple(builder, ary.strides, vty.ndim)
    r = as_i32(context, builder, rank, rty)
    if _checked._note_compiled():
        check_shared(context, builder, api, "view", ary.data)
        check_rank(context, builder, api, "rank", rank, rty)
        for axis, (i, n) in enumerate(zip(idx, shape)):
            trap_if(context, builder, builder.icmp_unsigned(">=", i, n), api,
                    f"index %lld is out of range for axis {axis} of `view` (size %lld)", [i, n])
    ptr = cgutils.get_item_pointer2(context, builder, ary.data, shape, strides, vty.layout, idx,
                                    wraparound=False)
    return mapa32(builder, shared_addr32(builder, ptr), r)


def _to_reg(context, builder, o: DsmemOptions, val, vty):
    v = context.cast(builder, val, vty, o.dtype)
    if o.dtype == types.float16:
        return builder.bitcast(v, I16)
    if o.reg == I32 and v.type != I32:  # 8-bit values travel in a 32-bit register
        return builder.zext(v, I32)
    return v


def _from_reg(builder, o: DsmemOptions, r):
    if o.dtype == types.float16:
        return builder.bitcast(r, ir.HalfType())
    if o.reg == I32 and o.dtype in (types.int8, types.uint8):
        return builder.trunc(r, I8)
    return r


@intrinsic
def dsmem_load(typingctx, view, rank, index):
    """Read ``view[index]`` from the shared memory of CTA ``rank`` of the cluster.

    PTX ``mapa.shared::cluster.u32`` + ``ld.shared::cluster.T`` (sm_90, PTX
    ISA 7.8).  ``view`` is a *local* shared array (or view of one); every
    CTA of the cluster has the same allocation, and this reads CTA
    ``rank``'s copy.  ``index``: an integer (1-D) or a tuple with one
    integer per axis; no negative indices.  Order it with the writer by a
    cluster barrier (``cluster_sync``) or an mbarrier.

    Example::

        sh = cuda.shared.array(128, np.float32)
        sh[tid] = x
        ac.cluster_sync()
        left = ac.dsmem_load(sh, (rank + n - 1) % n, tid)
        ac.cluster_sync()            # keep sh alive until peers are done
    """
    api = "dsmem_load"
    o = validate_dsmem(api, view, rank, index)
    opcode = form("ld.shared::cluster").opcode.format(type=o.suffix)

    def codegen(context, builder, sig, args):
        addr = dsmem_address(context, builder, api, sig.args[0], args[0], sig.args[1], args[1],
                             sig.args[2], args[2])
        r = asm(builder, f"{opcode} $0, [$1];", f"={o.constraint},r", [addr], ret=o.reg)
        return _from_reg(builder, o, r)

    return view.dtype(view, rank, index), codegen


@intrinsic
def dsmem_store(typingctx, view, rank, index, value):
    """Write ``value`` to ``view[index]`` in the shared memory of CTA ``rank``.

    PTX ``mapa.shared::cluster.u32`` + ``st.shared::cluster.T`` (sm_90, PTX
    ISA 7.8).  Same arguments as :func:`dsmem_load`; ``value`` is cast to the
    view's dtype.

    Example::

        ac.dsmem_store(inbox, (rank + 1) % n, tid, my_value)
        ac.cluster_sync()            # the neighbour may now read inbox
    """
    api = "dsmem_store"
    o = validate_dsmem(api, view, rank, index, value)
    opcode = form("st.shared::cluster").opcode.format(type=o.suffix)

    def codegen(context, builder, sig, args):
        addr = dsmem_address(context, builder, api, sig.args[0], args[0], sig.args[1], args[1],
                             sig.args[2], args[2])
        v = _to_reg(context, builder, o, args[3], sig.args[3])
        asm(builder, f"{opcode} [$0], $1;", f"r,{o.constraint}", [addr, v])
        return context.get_dummy_value()

    return types.void(view, rank, index, value), codegen


@intrinsic
def dsmem_atomic_add(typingctx, view, rank, index, value):
    """Atomically add ``value`` to ``view[index]`` in CTA ``rank``; returns
    the old value.

    PTX ``mapa.shared::cluster.u32`` + ``atom.shared::cluster.add.T``
    (sm_90, PTX ISA 7.8; relaxed, gpu scope).  dtypes: int32, uint32, int64,
    uint64, float32, float64.

    Example::

        ac.dsmem_atomic_add(counts, 0, bucket, 1)    # histogram in CTA 0
        ac.cluster_sync()
    """
    api = "dsmem_atomic_add"
    o = validate_dsmem(api, view, rank, index, value, atomic=True)
    opcode = form("atom.shared::cluster.add").opcode.format(type=o.atom)

    def codegen(context, builder, sig, args):
        addr = dsmem_address(context, builder, api, sig.args[0], args[0], sig.args[1], args[1],
                             sig.args[2], args[2])
        v = _to_reg(context, builder, o, args[3], sig.args[3])
        return asm(builder, f"{opcode} $0, [$1], $2;", f"={o.constraint},r,{o.constraint}",
                   [addr, v], ret=o.reg)

    return view.dtype(view, rank, index, value), codegen


@intrinsic
def map_shared_rank(typingctx, view, rank):
    """The same view, addressing CTA ``rank``'s copy of the shared array.

    PTX ``mapa.u64`` on the generic address (sm_90, PTX ISA 7.8).  The result
    is an ordinary Numba array: index it, slice it, or pass it to
    ``cuda.atomic.add``; the accesses are generic loads/stores into the
    other CTA's shared memory.  Do not pass it to this package's copy or
    barrier functions: they take local views and map them themselves.

    Example::

        peer = ac.map_shared_rank(sh, (rank + 1) % n)
        peer[tid] = x                       # store into the neighbour
        cuda.atomic.add(peer, 0, 1)
        ac.cluster_sync()
    """
    api = "map_shared_rank"
    select("mapa.generic")
    if not isinstance(view, types.Array):
        raise TypingError(f"{api}: {_rules.local_shared_view(name='view', got=view)}")
    check_rank_arg(api, "rank", rank)
    opcode = form("mapa.generic").opcode

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        r = as_i32(context, builder, args[1], sig.args[1])
        if _checked._note_compiled():
            check_shared(context, builder, api, "view", ary.data)
            check_rank(context, builder, api, "rank", args[1], sig.args[1])
        mapped = pure_asm(builder, f"{opcode} $0, $1, $2;", "=l,l,r",
                          [generic_addr64(builder, ary.data), r], ret=I64)
        out = context.make_array(sig.return_type)(context, builder, args[0])
        out.data = builder.inttoptr(mapped, ary.data.type)
        return out._getvalue()

    return view(view, rank), codegen


# --- mbarrier operations on another CTA --------------------------------------------------
# The ``cta_rank=`` forms of mbarrier_arrive, mbarrier_expect_tx and
# mbarrier_arrive_expect_tx lower here too: one PTX text and one codegen for
# both spellings, so they emit the same instructions.


def remote_barrier(context, builder, api, bty, bar, rty, rank):
    """``.shared::cluster`` address of the barrier ``bar`` (a local view)
    in CTA ``rank``; checked mode traps on a bad rank or barrier."""
    ptr = barrier_generic(context, builder, bty, bar)
    r = as_i32(context, builder, rank, rty)
    if _checked._note_compiled():
        check_barrier_runtime(context, builder, api, "bar", ptr)
        check_rank(context, builder, api, "cta_rank", rank, rty)
    return mapa32(builder, shared_addr32(builder, ptr), r)


def check_barrier_runtime(context, builder, api, name, ptr):
    check_shared(context, builder, api, name, ptr)
    addr = generic_addr64(builder, ptr)
    mis = builder.urem(addr, ir.Constant(I64, 8))
    trap_if(context, builder, builder.icmp_unsigned("!=", mis, ir.Constant(I64, 0)), api,
            _rules.not_aligned(name=name, align=8, addr="%p"), [addr])


@dataclass(frozen=True)
class RemoteBarrierOp:
    """What typing decided for one mbarrier instruction on the barrier of
    another CTA: the row (one fixed ordering, no qualifier slot) and its
    operands."""

    key: str
    sink: bool  # an arrive: PTX's ``_`` stands where a local arrive returns its state
    value: bool  # a run-time count or byte count follows the address
    name: str = "count"  # that value's argument, and the range checked mode enforces
    lo: int = 1
    hi: int = _rules.MAX_COUNT
    hi_text: str | None = None  # how the compile-time message writes ``hi``


def ptx_remote_barrier_op(o: RemoteBarrierOp) -> tuple[str, str]:
    """(asm text, constraints): the mapped barrier (r), then the value (r)."""
    ops = ["_"] * o.sink + ["[$0]"] + ["$1"] * o.value
    return instruction(form(o.key).opcode, ops, ["r"] * (1 + o.value))


def lower_remote_barrier_op(context, builder, sig, args, o: RemoteBarrierOp, api: str,
                            rank_at: int, value_at: int):
    """Codegen: the barrier is argument 0, the rank and the value at the
    given positions (the aliases and the keyword forms order them differently)."""
    addr = remote_barrier(context, builder, api, sig.args[0], args[0], sig.args[rank_at],
                          args[rank_at])
    ops = [addr]
    if _checked._note_compiled():  # a count of 1 left out by PTX is still checked when run time
        check_range_full(context, builder, api, o.name, args[value_at], sig.args[value_at],
                         o.lo, o.hi, o.hi_text)
    if o.value:
        ops.append(as_i32(context, builder, args[value_at], sig.args[value_at]))
    text, constraints = ptx_remote_barrier_op(o)
    asm(builder, text, constraints, ops)
    return context.get_dummy_value()


def validate_arrive_remote(bar, cta_rank, count) -> RemoteBarrierOp:
    api = "mbarrier_arrive_remote"
    select("mbarrier.arrive.remote")
    check_barrier(api, "bar", bar)
    check_rank_arg(api, "cta_rank", cta_rank)
    check_runtime_scalar(count, api, "count")
    if isinstance(count, types.IntegerLiteral) and not 1 <= count.literal_value <= _rules.MAX_COUNT:
        raise TypingError(f"{api}: " + _rules.outside_range(
            name="count", value=count.literal_value, lo=1, hi="2**20-1"))
    # a count of 1 is PTX's default: the operand is left out
    has_count = not (isinstance(count, types.Omitted) or
                     (isinstance(count, types.IntegerLiteral) and count.literal_value == 1))
    return RemoteBarrierOp("mbarrier.arrive.remote", sink=True, value=has_count,
                           hi_text="2**20-1")


def validate_tx_remote(api: str, key: str, arrive: bool, bar, cta_rank, nbytes) -> RemoteBarrierOp:
    """``arrive``: the row also arrives (``_`` sink)."""
    select(key)
    check_barrier(api, "bar", bar)
    check_rank_arg(api, "cta_rank", cta_rank)
    check_runtime_scalar(nbytes, api, "nbytes")
    if isinstance(nbytes, types.IntegerLiteral) and not 0 <= nbytes.literal_value <= _rules.MAX_TX:
        raise TypingError(f"{api}: " + _rules.outside_range(
            name="nbytes", value=nbytes.literal_value, lo=0, hi="2**20-1")
            + " (the transaction-count range)")
    return RemoteBarrierOp(key, sink=arrive, value=True, name="nbytes", lo=0, hi=_rules.MAX_TX,
                           hi_text="2**20-1")


@intrinsic
def mbarrier_arrive_remote(typingctx, bar, cta_rank, count=1):
    """Arrive on the barrier ``bar`` of CTA ``cta_rank`` (release, cluster scope).

    The spelling of ``mbarrier_arrive(bar, count, cta_rank=cta_rank)`` kept
    under its own name (same PTX; errors name ``mbarrier_arrive_remote``).

    PTX ``mapa.shared::cluster.u32`` + ``mbarrier.arrive.release.cluster.
    shared::cluster.b64 _, [addr]{, count}`` (sm_90, PTX ISA 8.0).  ``bar``
    is the *local* barrier view (first element of a shared uint64 array
    view, as for ``mbarrier_init``); it is mapped to ``cta_rank`` here.  A
    remote arrive returns no state.  ``count`` (default 1, run time allowed)
    arrivals are counted.

    Example::

        # every CTA tells CTA 0 it is done with its part
        ac.mbarrier_arrive_remote(bars[0:], 0)
    """
    o = validate_arrive_remote(bar, cta_rank, count)

    def codegen(context, builder, sig, args):
        return lower_remote_barrier_op(context, builder, sig, args, o, "mbarrier_arrive_remote",
                                       rank_at=1, value_at=2)

    return types.void(bar, cta_rank, count), codegen


@intrinsic
def mbarrier_expect_tx_remote(typingctx, bar, cta_rank, nbytes):
    """Raise the expected transaction bytes of barrier ``bar`` in CTA ``cta_rank``.

    The spelling of ``mbarrier_expect_tx(bar, nbytes, cta_rank=cta_rank)``
    kept under its own name (same PTX; errors name this function).

    PTX ``mapa.shared::cluster.u32`` + ``mbarrier.expect_tx.relaxed.cluster.
    shared::cluster.b64 [addr], nbytes`` (sm_90, PTX ISA 8.0); no arrival.
    ``bar`` is the local barrier view, mapped here.

    Example::

        ac.mbarrier_expect_tx_remote(bars[0:], peer, 256)
    """
    api = "mbarrier_expect_tx_remote"
    o = validate_tx_remote(api, "mbarrier.expect_tx.remote", False, bar, cta_rank, nbytes)

    def codegen(context, builder, sig, args):
        return lower_remote_barrier_op(context, builder, sig, args, o, api, rank_at=1, value_at=2)

    return types.void(bar, cta_rank, nbytes), codegen


@intrinsic
def mbarrier_arrive_expect_tx_remote(typingctx, bar, cta_rank, nbytes):
    """Expect ``nbytes`` transaction bytes and arrive once on barrier ``bar``
    of CTA ``cta_rank`` (release, cluster scope).

    The spelling of ``mbarrier_arrive_expect_tx(bar, nbytes,
    cta_rank=cta_rank)`` kept under its own name (same PTX; errors name this
    function).

    PTX ``mapa.shared::cluster.u32`` + ``mbarrier.arrive.expect_tx.release.
    cluster.shared::cluster.b64 _, [addr], nbytes`` (sm_90, PTX ISA 8.0).

    Example::

        ac.mbarrier_arrive_expect_tx_remote(bars[0:], peer, 8 * 256)
    """
    api = "mbarrier_arrive_expect_tx_remote"
    o = validate_tx_remote(api, "mbarrier.arrive.expect_tx.remote", True, bar, cta_rank, nbytes)

    def codegen(context, builder, sig, args):
        return lower_remote_barrier_op(context, builder, sig, args, o, api, rank_at=1, value_at=2)

    return types.void(bar, cta_rank, nbytes), codegen


# --- compile-time cluster shape -----------------------------------------------


def validate_cluster_dims(x, y, z, non_portable) -> tuple[int, int, int]:
    api = "cluster_dims"
    select("cluster_dims")
    dims = tuple(literal_value(t, api, n) for t, n in ((x, "x"), (y, "y"), (z, "z")))
    for n, d in zip("xyz", dims):
        if d < 1:
            raise TypingError(f"{api}: `{n}` must be >= 1, got {d}")
    np_ = bool_constant(non_portable, api, "non_portable", _TRUE_OR_FALSE)
    try:
        check_cluster_shape(dims, np_, api)
    except ClusterLaunchError as e:
        raise TypingError(str(e)) from None
    return dims


def python_name(mangled: str) -> str:
    """The Python name of the function Numba mangled into ``mangled`` (the
    last part of its qualified name: ``helper`` for
    ``_ZN8__main__6helperB2v1B...E``), or ``mangled`` itself."""
    import re

    if not mangled.startswith("_ZN"):
        return mangled
    i, parts = 3, []
    while i < len(mangled) and mangled[i].isdigit():
        m = re.match(r"\d+", mangled[i:])
        n = int(m.group())
        i += len(m.group())
        parts.append(mangled[i:i + n])
        i += n
    # a function's own name is an identifier: Numba escapes nothing in it
    return parts[-1] if parts else mangled


def annotate_cluster_dims(function: ir.Function, dims: tuple[int, int, int]) -> None:
    """Add ``cluster_dim_x/y/z`` to ``nvvm.annotations`` for ``function``:
    NVVM then emits ``.explicitcluster`` and ``.reqnctapercluster``."""
    done = getattr(function, "_asynccopy_cluster_dims", None)
    if done is not None:
        if done != dims:
            raise TypingError(
                f"cluster_dims: the kernel declares two cluster shapes, {done} and {dims}"
            )
        return
    module = function.module
    nmd = module.get_named_metadata("nvvm.annotations") if "nvvm.annotations" in module.namedmetadata \
        else module.add_named_metadata("nvvm.annotations")
    for axis, d in zip("xyz", dims):
        nmd.add(module.add_metadata(
            (function, ir.MetaDataString(module, f"cluster_dim_{axis}"), ir.Constant(ir.IntType(32), d))))
    function._asynccopy_cluster_dims = dims


@intrinsic
def cluster_dims(typingctx, x, y=1, z=1, *, non_portable=False):
    """Declare the kernel's cluster shape: (x, y, z) CTAs per cluster.

    Call it once in the kernel body with constants.  The shape is compiled
    into the kernel (PTX ``.explicitcluster`` and ``.reqnctapercluster``,
    sm_90, PTX ISA 7.8), so an ordinary ``kernel[grid, block]`` launch runs
    clustered; the grid (in blocks) must be a multiple of the shape, which
    is checked before the launch.  More than 8 CTAs needs
    ``non_portable=True`` (16 at most).  Calling it in a device function is
    a compile error: the shape belongs to the kernel.

    Example::

        @cuda.jit
        def pairs(out):
            ac.cluster_dims(2)
            out[cuda.blockIdx.x] = ac.cluster_cta_rank()

        pairs[8, 32](out)          # four clusters of two CTAs
    """
    dims = validate_cluster_dims(x, y, z, non_portable)

    def codegen(context, builder, sig, args):
        where = _nb.compiling_kernel()
        if where is False:
            raise TypingError(_rules.cluster_dims_in_device_function(
                dims=dims, function=python_name(builder.function.name)))
        annotate_cluster_dims(builder.function, dims)
        return context.get_dummy_value()

    return types.void(x, y, z, non_portable), codegen


# --- what checked mode checks here (the README's table is made from these) ------

_REMOTE_BARRIER_APIS = ("mbarrier_arrive_remote", "mbarrier_expect_tx_remote",
                        "mbarrier_arrive_expect_tx_remote")
_checked.declare(_REMOTE_BARRIER_APIS, "bar", "`bar` is not a local shared-memory view (base …)")
_checked.declare(_REMOTE_BARRIER_APIS, "bar", _rules.not_aligned, name="bar", align=8, addr="…")
_checked.declare(_REMOTE_BARRIER_APIS, "cta_rank", _rules.outside_cluster, name="cta_rank",
                 value="…", n="…", last="…")
_checked.declare("mbarrier_arrive_remote", "count", _rules.outside_range, name="count", value="…",
                 lo=1, hi="2**20-1")
_checked.declare(("mbarrier_expect_tx_remote", "mbarrier_arrive_expect_tx_remote"), "nbytes",
                 _rules.outside_range, name="nbytes", value="…", lo=0, hi="2**20-1")
for _api in ("map_shared_rank", "dsmem_load", "dsmem_store", "dsmem_atomic_add"):
    _checked.declare(_api, "view", "`view` is not a local shared-memory view (base …)")
    _checked.declare(_api, "rank", _rules.outside_cluster, name="rank", value="…", n="…", last="…")
_checked.declare(("dsmem_load", "dsmem_store", "dsmem_atomic_add"), "index",
                 "index … is out of range for axis k of `view` (size …)")
