"""Region rules of TVM TIRx's async-copy contract: chunks, repeats, contiguity, dtypes.

A view of shape ``(*repeat, element)`` is split along its last axis into
chunks of ``chunk_bytes``; every other axis, and the chunks of the last
axis, are repeats.  The compile-time half checks what the Numba type tells
(array-ness, rank, layout, itemsize); the run-time half walks the chunks and,
in checked mode, checks what only the values tell (shapes, strides,
alignment, address spaces).
"""

from __future__ import annotations

from contextlib import contextmanager

from llvmlite import ir
from numba.core import types
from numba.cuda import cgutils
from numba.cuda.np import numpy_support

from . import _rules
from ._compat import TypingError
from ._lowering import I32, I64, generic_addr64, is_space, shared_addr32, trap_if

# --- compile time ---------------------------------------------------------


def literal_value(ty, api: str, name: str, *, allowed=None, kind=int, required=True):
    """Value of a compile-time constant argument, or a TypingError naming it."""
    if ty is None or isinstance(ty, types.NoneType):
        val = None
    elif isinstance(ty, types.Omitted):
        val = ty.value
    elif isinstance(ty, types.Literal):
        val = ty.literal_value
    else:
        raise TypingError(f"{api}: " + _rules.compile_time_constant(
            name=name, kind=kind.__name__, got=f"a run-time {ty}"))
    if val is None:
        if required:
            raise TypingError(f"{api}: `{name}` is required")
        return None
    if kind is int and (isinstance(val, bool) or not isinstance(val, int)):
        raise TypingError(f"{api}: `{name}` must be an int constant, got {val!r}")
    if kind is str and not isinstance(val, str):
        raise TypingError(f"{api}: `{name}` must be a str constant, got {val!r}")
    if allowed is not None and val not in allowed:
        raise TypingError(
            f"{api}: `{name}`={val!r} is not supported; allowed: "
            + ", ".join(repr(a) for a in allowed)
        )
    return val


def bool_constant(ty, api: str, name: str, message=_rules.bool_constant) -> bool:
    """Value of a compile-time bool argument, or a TypingError naming it.

    ``message`` renders the error for a constant that is not a bool (fields
    ``name`` and ``value``): the rulebook's ``bool_constant`` unless a
    family words it its own way.
    """
    val = literal_value(ty, api, name, kind=bool)
    if not isinstance(val, bool):
        raise TypingError(f"{api}: {message(name=name, value=repr(val))}")
    return val


def bool_or_runtime(ty, api: str, name: str) -> bool | None:
    """A bool argument that may also be a run-time value (``pred=``): its
    constant value, or None for a run-time bool or integer."""
    if isinstance(ty, types.Omitted):
        return ty.value
    if isinstance(ty, types.BooleanLiteral):
        return ty.literal_value
    check_runtime_scalar(ty, api, name, (types.Boolean, types.Integer))
    return None


def is_absent(ty) -> bool:
    """The caller left an optional argument out (or passed None)."""
    return isinstance(ty, types.NoneType) or (
        isinstance(ty, types.Omitted) and ty.value is None
    )


def check_runtime_scalar(ty, api: str, name: str, kinds=(types.Integer,)):
    if isinstance(ty, types.Omitted):
        return
    base = getattr(ty, "literal_type", ty)
    if not isinstance(base, kinds):
        want = " or ".join(k.__name__.lower() for k in kinds)
        article = "an" if want[0] in "aeiou" else "a"
        raise TypingError(f"{api}: `{name}` must be {article} {want} value, got {ty}")


def itemsize(dtype) -> int:
    return numpy_support.as_dtype(dtype).itemsize


def check_array_view(api: str, name: str, ty, example: str, fortran: str) -> None:
    """The rules every view operand shares: an array with at least one axis
    whose last axis is contiguous.  ``example`` names views that qualify;
    ``fortran`` ends the message for a Fortran-ordered view (what the
    instruction cannot do with it)."""
    if not isinstance(ty, types.Array):
        raise TypingError(
            f"{api}: `{name}` must be a Numba array view (for example "
            f"{example}), got {ty}"
        )
    if ty.ndim == 0:
        raise TypingError(f"{api}: `{name}` must have at least one axis")
    if ty.layout == "F" and ty.ndim > 1:
        raise TypingError(f"{api}: `{name}` is Fortran-ordered{fortran}")


def check_view(api: str, name: str, ty, chunk_bytes: int | None = None) -> None:
    """Compile-time rules for a chunked view."""
    check_array_view(api, name, ty, "`sh[tid, :]`",
                     "; its last axis is not contiguous, so it cannot be split into "
                     "contiguous chunks")
    if chunk_bytes is not None:
        size = itemsize(ty.dtype)
        if chunk_bytes % size:
            raise TypingError(
                f"{api}: the itemsize {size} of `{name}` ({ty.dtype}) does not "
                f"divide chunk_bytes={chunk_bytes}"
            )


def check_same_rank(api: str, a_name: str, a, b_name: str, b) -> None:
    if a.ndim != b.ndim:
        raise TypingError(
            f"{api}: `{a_name}` ({a.ndim}-D) and `{b_name}` ({b.ndim}-D) must "
            "have the same rank: their repeat axes are matched one to one"
        )


# --- run time -------------------------------------------------------------


class View:
    """The run-time pieces of an array view: base pointer, shape, strides."""

    def __init__(self, context, builder, ty, value, name: str):
        self.ty, self.name = ty, name
        ary = context.make_array(ty)(context, builder, value)
        self.data = ary.data
        self.shape = cgutils.unpack_tuple(builder, ary.shape, ty.ndim)
        self.strides = cgutils.unpack_tuple(builder, ary.strides, ty.ndim)
        self.itemsize = itemsize(ty.dtype)
        self.intp = self.shape[0].type

    def const(self, v):
        return ir.Constant(self.intp, v)

    def row_bytes(self, builder):
        return builder.mul(self.shape[-1], self.const(self.itemsize))

    def nchunks(self, builder, chunk: int):
        return builder.udiv(self.row_bytes(builder), self.const(chunk))

    def byte_offset(self, builder, outer_idx, chunk_idx, chunk: int):
        off = builder.mul(chunk_idx, self.const(chunk))
        for i, s in zip(outer_idx, self.strides[:-1]):
            off = builder.add(off, builder.mul(i, s))
        return off

    def shared_chunk(self, builder, outer_idx, chunk_idx, chunk: int):
        base = shared_addr32(builder, self.data)
        off = self.byte_offset(builder, outer_idx, chunk_idx, chunk)
        return builder.add(base, builder.trunc(off, I32))

    def global_chunk(self, builder, outer_idx, chunk_idx, chunk: int):
        off = self.byte_offset(builder, outer_idx, chunk_idx, chunk)
        return builder.add(generic_addr64(builder, self.data), builder.zext(off, I64) if off.type != I64 else off)

    def total_chunks(self, builder, chunk: int):
        n = self.nchunks(builder, chunk)
        for d in self.shape[:-1]:
            n = builder.mul(n, d)
        return n

    def unravel(self, builder, k, chunk: int):
        """C-order coordinates (outer..., chunk) of linear chunk index k."""
        dims = list(self.shape[:-1]) + [self.nchunks(builder, chunk)]
        idx = []
        for d in reversed(dims[1:]):
            idx.append(builder.urem(k, d))
            k = builder.udiv(k, d)
        idx.append(k)
        idx.reverse()
        return idx[:-1], idx[-1]


@contextmanager
def thread_chunks(builder, lead: View, chunk: int):
    """Loop over every chunk of ``lead``; yields (outer_idx, chunk_idx).

    The trip counts come from ``lead`` (the shared side when there is one),
    so a statically shaped shared view unrolls to straight-line code.
    """
    dims = list(lead.shape[:-1]) + [lead.nchunks(builder, chunk)]
    with cgutils.loop_nest(builder, dims, lead.intp) as idx:
        yield list(idx[:-1]), idx[-1]


def each_thread_chunk(builder, lead: View, chunk: int, issue) -> None:
    """Call ``issue(outer_idx, chunk_idx)`` for every chunk of ``lead``.

    A view that is one chunk (the slice idiom ``sh[r, 4*q:4*q+4]``, whose
    length NVVM cannot prove from the slice arithmetic) takes one branch to
    one ``issue`` instead of a run-time loop that NVVM unrolls four times;
    the loop of :func:`thread_chunks` is the general path.  For a view of
    compile-time shape the test folds away and only one of the two remains.
    """
    total = lead.total_chunks(builder, chunk)
    one = builder.icmp_unsigned("==", total, lead.const(1))
    with builder.if_else(one, likely=True) as (single, general):
        with single:
            issue([lead.const(0)] * (lead.ty.ndim - 1), lead.const(0))
        with general:
            with thread_chunks(builder, lead, chunk) as (outer, c):
                issue(outer, c)


@contextmanager
def cta_chunks(builder, lead: View, chunk: int, tid, nthreads):
    """Spread the chunks of ``lead`` over the block.

    Linear chunk k (C order over (outer..., chunk)) goes to thread
    ``k % nthreads``: consecutive threads take consecutive chunks of a row,
    so each warp's accesses are coalesced.
    """
    total = lead.total_chunks(builder, chunk)
    start = builder.zext(tid, lead.intp)
    step = builder.zext(nthreads, lead.intp)
    with cgutils.for_range_slice(builder, start, total, step, lead.intp) as (k, _):
        yield lead.unravel(builder, k, chunk)


def check_chunk_views(context, builder, api: str, views, chunk: int, align: int | None = None) -> None:
    """Checked-mode rules for chunked views sharing one chunk walk.

    Every chunk origin must be ``align``-byte aligned (default: ``chunk``).
    """
    align = chunk if align is None else align
    c = views[0].const
    for v in views:
        if v.ty.layout != "C":
            bad = builder.and_(
                builder.icmp_unsigned("!=", v.strides[-1], c(v.itemsize)),
                builder.icmp_unsigned(">", v.shape[-1], c(1)),
            )
            trap_if(context, builder, bad, api,
                    _rules.last_axis_strided(name=v.name, stride="%lld"), [v.strides[-1]])
        rem = builder.urem(v.row_bytes(builder), c(chunk))
        trap_if(context, builder, builder.icmp_unsigned("!=", rem, c(0)), api,
                _rules.row_not_whole_chunks(name=v.name, row="%lld", chunk=chunk),
                [v.row_bytes(builder)])
        addr = generic_addr64(builder, v.data)
        mis = builder.urem(addr, ir.Constant(I64, align))
        for s in v.strides[:-1]:
            mis = builder.or_(mis, builder.urem(s, c(align)))
        trap_if(context, builder, builder.icmp_unsigned("!=", mis, c(0)), api,
                _rules.chunk_misaligned(name=v.name, align=align, base="%p"), [addr])
    first = views[0]
    for other in views[1:]:
        for axis, (a, b) in enumerate(zip(first.shape[:-1], other.shape[:-1])):
            trap_if(context, builder, builder.icmp_unsigned("!=", a, b), api,
                    _rules.repeat_axis_differs(axis=axis, a_name=first.name, a="%lld",
                                               b_name=other.name, b="%lld"), [a, b])
        na, nb = first.nchunks(builder, chunk), other.nchunks(builder, chunk)
        trap_if(context, builder, builder.icmp_unsigned("!=", na, nb), api,
                _rules.chunk_counts_differ(a_name=first.name, a_dtype=first.ty.dtype, a="%lld",
                                           b_name=other.name, b_dtype=other.ty.dtype, b="%lld"),
                [na, nb])


# --- barriers ---------------------------------------------------------------


def check_barrier(api: str, name: str, ty) -> None:
    """An mbarrier is the first element of a shared uint64 array view."""
    if not isinstance(ty, types.Array) or ty.dtype != types.uint64:
        raise TypingError(
            f"{api}: `{name}` must be a uint64 shared-memory array view whose first "
            f"element is the barrier (for example `bars[i:]`), got {ty}"
        )


def barrier_addr32(context, builder, ty, value):
    """32-bit shared address of the barrier (first element of the view)."""
    ary = context.make_array(ty)(context, builder, value)
    return shared_addr32(builder, ary.data)


def barrier_generic(context, builder, ty, value):
    ary = context.make_array(ty)(context, builder, value)
    return ary.data


def check_barrier_view(context, builder, api: str, name: str, ty, value):
    """Checked mode: the barrier view is not empty, its first element is in
    this CTA's shared memory (``isspacep.shared``, i.e. ``shared::cta``) and
    8-byte aligned; the same rules, same words, as the simulator's."""
    ary = context.make_array(ty)(context, builder, value)
    n = ir.Constant(I64, 1)
    for d in cgutils.unpack_tuple(builder, ary.shape, ty.ndim):
        n = builder.mul(n, d)
    trap_if(context, builder, builder.icmp_unsigned("==", n, ir.Constant(I64, 0)), api,
            _rules.barrier_empty(name=name))
    trap_if(context, builder, builder.not_(is_space(builder, ary.data, "shared")), api,
            _rules.not_in_space(name=name, space="shared"))
    addr = generic_addr64(builder, ary.data)
    mis = builder.urem(addr, ir.Constant(I64, 8))
    trap_if(context, builder, builder.icmp_unsigned("!=", mis, ir.Constant(I64, 0)), api,
            _rules.not_aligned(name=name, align=8, addr="%p"), [addr])
