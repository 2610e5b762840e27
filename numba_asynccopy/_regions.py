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
from typing import Any

from llvmlite import ir
from numba.core import types
from numba.cuda import cgutils
from numba.cuda.np import numpy_support

from . import _rules
from . import checked as _checked
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
        raise _rules.compile_time_constant.error(TypingError, api, name=name, kind=kind.__name__,
                                                 got=f"a run-time {ty}")
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
        self.layout, self.dtype = ty.layout, ty.dtype
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
    """Call ``issue(outer_idx, chunk_idx)`` for every chunk of ``lead``: the
    loop of :func:`thread_chunks`, nothing in front of it.

    For the slice idiom ``sh[r, 4*q:4*q+4]`` (a run-time length: Numba's
    clamping) NVVM bounds the trip count by one from the special-register
    ranges (``facts.py``: ``q`` below 32, so ``4*q+4`` clamped to 128, minus
    ``4*q``, is at most 4 floats) and the loop becomes one copy predicated on
    the length: the whole-axis view's code plus a predicate.  A one-chunk
    test in front of the loop (the earlier lowering, from before the facts)
    kept two copies behind two branches, because NVVM cannot prove that the
    length is not shorter.  A view of compile-time shape unrolls fully.
    """
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


class Run:
    """A run-time value among a rule's fields: checked mode prints it with
    ``conv`` (a printf conversion, ``"%p"`` for an address), the simulator
    renders the value itself (an address as ``0x...``)."""

    __slots__ = ("value", "conv")

    def __init__(self, value, conv: str = "%lld"):
        self.value, self.conv = value, conv


class _Emit:
    """Checked mode's reading of a contract: every operation an LLVM
    instruction, every broken rule a trap with the rule's words."""

    def __init__(self, context, builder, api: str, intp):
        self.context, self.builder, self.api, self.intp = context, builder, api, intp

    def _v(self, x):
        return ir.Constant(self.intp, x) if isinstance(x, int) else x

    def ne(self, a, b):
        return self.builder.icmp_unsigned("!=", self._v(a), self._v(b))

    def gt(self, a, b):
        return self.builder.icmp_unsigned(">", self._v(a), self._v(b))

    def and_(self, a, b):
        return self.builder.and_(a, b)

    def or_(self, a, b):
        return self.builder.or_(a, b)

    def urem(self, a, b):
        return self.builder.urem(self._v(a), self._v(b))

    def row_bytes(self, v: View):
        return v.row_bytes(self.builder)

    def nchunks(self, v: View, chunk: int):
        return v.nchunks(self.builder, chunk)

    def address(self, v: View):
        return generic_addr64(self.builder, v.data)

    def fail(self, cond, rule: _rules.Rule, **fields) -> None:
        runs = {k: f for k, f in fields.items() if isinstance(f, Run)}
        text = rule(**{k: (f.conv if k in runs else f) for k, f in fields.items()})
        # printf takes the values in the order the rule's text names them
        trap_if(self.context, self.builder, cond, self.api, text,
                [runs[k].value for k in rule.fields if k in runs])


class _Check:
    """The simulator's reading of a contract: Python ints, and the first
    broken rule raised (:class:`Broken`) in the same words."""

    def ne(self, a, b):
        return a != b

    def gt(self, a, b):
        return a > b

    def and_(self, a, b):
        return a and b

    def or_(self, a, b):
        return a | b

    def urem(self, a, b):
        # alignments and chunks are powers of two: Python's modulo of a
        # negative stride agrees with checked mode's unsigned one
        return a % b

    def row_bytes(self, v):
        return v.shape[-1] * v.itemsize

    def nchunks(self, v, chunk: int):
        return v.shape[-1] * v.itemsize // chunk

    def address(self, v):
        return v.address

    def fail(self, cond, rule: _rules.Rule, **fields) -> None:
        if cond:
            raise Broken(rule(**{k: _value_text(f) for k, f in fields.items()}))


def _value_text(f):
    if not isinstance(f, Run):
        return f
    return f"0x{f.value:x}" if f.conv == "%p" else f.value


class Broken(ValueError):
    """A contract's rule that values broke (the simulator's reading); the
    message is the rule's text."""


class ValueView:
    """A numpy view as the simulator's reading of a contract sees it: the
    view's name, shape, byte strides, itemsize and address, its Numba
    type's layout and its dtype (as the rule names it)."""

    def __init__(self, name: str, array, address: int, layout: str = "A"):
        self.name, self.address, self.layout = name, address, layout
        self.shape, self.strides = array.shape, array.strides
        self.itemsize, self.dtype = array.itemsize, array.dtype


class ChunkedViews:
    """The contract of views copied chunk by chunk (cp.async; bulk copies
    row by row and the cluster bulk copy, 16-byte aligned), declared once
    for its three layers:

    - :meth:`check_types`, at compile time: each view an array with a
      contiguous last axis whose itemsize divides the chunk; the views of
      one rank (their repeat axes are matched one to one);
    - :meth:`emit`, in checked mode: the run-time rules as traps;
    - :meth:`check_values`, in the simulator: the same rules on numpy
      views, the first broken one's text (or None);
    - :meth:`declare`: the run-time rules' rows of the docs' checked-mode
      table.

    The run-time rules are written once (:meth:`_rules_of`) over an
    evaluator, so checked mode and the simulator cannot drift apart.

    Example::

        CHUNKED_VIEWS.check_types("cp_async", 16, ("dst", dst_ty), ("src", src_ty))
        CHUNKED_VIEWS.emit(context, builder, "cp_async", [d, s], 16)
        CHUNKED_VIEWS.check_values([ValueView("dst", sh, rt.address(sh), "C"), ...], 16)
    """

    def check_types(self, api: str, chunk: int, *views) -> None:
        """``views``: (name, Numba type) pairs, the first the lead."""
        for name, ty in views:
            check_view(api, name, ty, chunk)
        (a_name, a), rest = views[0], views[1:]
        for b_name, b in rest:
            check_same_rank(api, a_name, a, b_name, b)

    def emit(self, context, builder, api: str, views, chunk: int, align: int | None = None) -> None:
        """Checked-mode traps for :class:`View` s sharing one chunk walk."""
        self._rules_of(_Emit(context, builder, api, views[0].intp), views, chunk, align)

    def check_values(self, views, chunk: int, align: int | None = None) -> str | None:
        """The text of the first rule :class:`ValueView` s break, or None."""
        try:
            self._rules_of(_Check(), views, chunk, align)
        except Broken as e:
            return str(e)
        return None

    def declare(self, api: str, names: tuple[str, str], align: Any = "chunk_bytes",
                argument: str | None = None) -> None:
        """Declare the run-time rules of ``api``'s views ``names`` (the lead
        first, as :meth:`emit` takes them) for the checked-mode table;
        ``argument``: the pair's row (default ``"a, b"``)."""
        a, b = names
        for name in names:
            _checked.declare(api, name, _rules.last_axis_strided, name=name, stride="…")
            _checked.declare(api, name, _rules.row_not_whole_chunks, name=name, row="…",
                             chunk="chunk_bytes")
            _checked.declare(api, name, _rules.chunk_misaligned, name=name, align=align, base="…")
        pair = argument or f"{a}, {b}"
        _checked.declare(api, pair, _rules.repeat_axis_differs, axis="k", a_name=a, a="…",
                         b_name=b, b="…")
        _checked.declare(api, pair, _rules.chunk_counts_differ, a_name=a, a_dtype="…", a="…",
                         b_name=b, b_dtype="…", b="…")

    @staticmethod
    def _rules_of(o, views, chunk: int, align: int | None) -> None:
        """Every chunk origin ``align``-byte aligned (default: ``chunk``)."""
        align = chunk if align is None else align
        for v in views:
            if v.layout != "C":
                o.fail(o.and_(o.ne(v.strides[-1], v.itemsize), o.gt(v.shape[-1], 1)),
                       _rules.last_axis_strided, name=v.name, stride=Run(v.strides[-1]))
            o.fail(o.ne(o.urem(o.row_bytes(v), chunk), 0), _rules.row_not_whole_chunks,
                   name=v.name, row=Run(o.row_bytes(v)), chunk=chunk)
            addr = o.address(v)
            mis = o.urem(addr, align)
            for s in v.strides[:-1]:
                mis = o.or_(mis, o.urem(s, align))
            o.fail(o.ne(mis, 0), _rules.chunk_misaligned, name=v.name, align=align,
                   base=Run(addr, "%p"))
        first = views[0]
        for other in views[1:]:
            for axis, (a, b) in enumerate(zip(first.shape[:-1], other.shape[:-1])):
                o.fail(o.ne(a, b), _rules.repeat_axis_differs, axis=axis, a_name=first.name,
                       a=Run(a), b_name=other.name, b=Run(b))
            na, nb = o.nchunks(first, chunk), o.nchunks(other, chunk)
            o.fail(o.ne(na, nb), _rules.chunk_counts_differ, a_name=first.name,
                   a_dtype=first.dtype, a=Run(na), b_name=other.name, b_dtype=other.dtype,
                   b=Run(nb))


#: the chunked views' contract (cp.async, the bulk copies row by row)
CHUNKED_VIEWS = ChunkedViews()


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
