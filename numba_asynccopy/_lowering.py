"""Lowering helpers shared by every family: addresses, inline asm, traps.

Nothing here spells an opcode: the text comes from ``_forms``.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.cuda import cgutils, nvvmutils

from . import _rules
from ._forms import form

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
VOID = ir.VoidType()


def asm(builder, text: str, constraints: str, args=(), ret=VOID, clobber_memory: bool = True):
    """Call volatile inline PTX; synchronising/async forms clobber memory."""
    args = list(args)
    fnty = ir.FunctionType(ret, [a.type for a in args])
    if clobber_memory:
        constraints = f"{constraints},~{{memory}}" if constraints else "~{memory}"
    return builder.call(ir.InlineAsm(fnty, text, constraints, side_effect=True), args)


def pure_asm(builder, text: str, constraints: str, args=(), ret=I32):
    """Inline asm without side effects: a value of its operands and the
    launch (special registers, mapa), free to be CSE'd or hoisted."""
    args = list(args)
    fnty = ir.FunctionType(ret, [a.type for a in args])
    return builder.call(ir.InlineAsm(fnty, text, constraints, side_effect=False), args)


def predicate(builder, text: str, constraints: str = "", args=(), *, pure: bool = False,
              clobber_memory: bool = True):
    """Run PTX ``text`` that sets predicate ``p``; return ``p`` as an i1.

    PTX has no predicate outputs for inline asm: ``selp`` turns it into
    ``$0`` (the operands of ``text`` start at ``$1``)."""
    body = f"{{ .reg .pred p; {text} selp.u32 $0, 1, 0, p; }}"
    cons = "=r," + constraints if constraints else "=r"
    if pure:
        r = pure_asm(builder, body, cons, args)
    else:
        r = asm(builder, body, cons, args, ret=I32, clobber_memory=clobber_memory)
    return builder.icmp_unsigned("!=", r, ir.Constant(I32, 0))


def statement(text: str):
    """Codegen of an intrinsic that is one operand-less PTX statement."""

    def codegen(context, builder, sig, args):
        asm(builder, text, "")
        return context.get_dummy_value()

    return codegen


def instruction(opcode: str, ops: list[str], cons: list[str], *, mask: bool = False,
                policy: bool = False) -> tuple[str, str]:
    """``opcode ops;`` and its constraint string, with the optional trailing
    operands the bulk and tensor copies share appended in PTX order: the
    16-bit multicast mask (``h``), then the L2 cache policy (``l``)."""
    ops, cons = list(ops), list(cons)
    for present, c in ((mask, "h"), (policy, "l")):
        if present:
            ops.append(f"${len(cons)}")
            cons.append(c)
    return f"{opcode} {', '.join(ops)};", ",".join(cons)


def shared_addr32(builder, ptr):
    """32-bit shared-window address of a generic pointer into shared memory.

    addrspacecast + ptrtoint lets NVVM fold it to symbol arithmetic (no cvta).
    """
    p3 = builder.addrspacecast(ptr, ir.PointerType(ptr.type.pointee, 3))
    return builder.ptrtoint(p3, I32)


def generic_addr64(builder, ptr):
    return builder.ptrtoint(ptr, I64)


def value_as(context, builder, val, ty, to):
    """Cast an argument to type ``to``; an omitted one gives its default."""
    if isinstance(ty, types.Omitted):
        return context.get_constant(to, ty.value)
    return context.cast(builder, val, ty, to)


def as_i32(context, builder, val, ty):
    """A runtime integer/boolean value as an i32 asm operand."""
    base = ty.value if isinstance(ty, types.Omitted) else ty
    if isinstance(base, (bool, types.Boolean)) or getattr(ty, "literal_type", None) == types.boolean:
        return builder.zext(value_as(context, builder, val, ty, types.boolean), I32)
    return value_as(context, builder, val, ty, types.uint32)


def as_i64(context, builder, val, ty):
    return value_as(context, builder, val, ty, types.uint64)


def truth_i32(context, builder, val, ty):
    """A run-time bool or integer flag (``pred=``, ``ignore_src=``) as an i32
    that is non-zero when it is: a 64-bit ``2**32`` is true, as in Python,
    not truncated to 0."""
    base = getattr(ty, "literal_type", ty)
    if isinstance(base, types.Integer) and base.bitwidth > 32:
        v = context.cast(builder, val, ty, base) if base is not ty else val
        return builder.zext(builder.icmp_unsigned("!=", v, ir.Constant(v.type, 0)), I32)
    return as_i32(context, builder, val, ty)


def wide_int(context, builder, val, ty):
    """(i64, signed) of a run-time integer or bool argument at its full width,
    before any truncation to the operand's 32 bits (a range check on the
    truncated value would let ``2**32 + 1`` pass as 1)."""
    base = getattr(ty, "literal_type", ty)
    if isinstance(base, types.Boolean):
        return builder.zext(context.cast(builder, val, ty, types.boolean), I64), False
    v = context.cast(builder, val, ty, base) if base is not ty else val
    if base.bitwidth < 64:
        v = builder.sext(v, I64) if base.signed else builder.zext(v, I64)
    return v, base.signed


def check_range_full(context, builder, api: str, name: str, val, ty, lo: int, hi: int,
                     hi_text=None, rule=None) -> None:
    """Checked mode: trap when the run-time argument ``name`` (``val`` of
    Numba type ``ty``) is outside ``lo..hi`` on its full width.  Constants
    and omitted arguments are checked at compile time, so they emit nothing.
    ``rule`` (fields ``name`` and ``value``) words it where the compile-time
    check does not say ``outside_range``."""
    if isinstance(ty, (types.Omitted, types.Literal)):
        return
    v, signed = wide_int(context, builder, val, ty)
    cmp = builder.icmp_signed if signed else builder.icmp_unsigned
    bad = builder.or_(cmp("<", v, ir.Constant(I64, lo)), cmp(">", v, ir.Constant(I64, hi)))
    fmt = "%lld" if signed else "%llu"
    text = rule(name=name, value=fmt) if rule is not None else _rules.outside_range(
        name=name, value=fmt, lo=lo, hi=hi if hi_text is None else hi_text)
    trap_if(context, builder, bad, api, text, [v])


def sreg(builder, name: str):
    return nvvmutils.call_sreg(builder, name)


def linear_tid(builder):
    """Thread index within the block, x fastest."""
    tx, ty, tz = (sreg(builder, f"tid.{d}") for d in "xyz")
    nx, ny = sreg(builder, "ntid.x"), sreg(builder, "ntid.y")
    return builder.add(tx, builder.mul(nx, builder.add(ty, builder.mul(ny, tz))))


def block_threads(builder):
    nx, ny, nz = (sreg(builder, f"ntid.{d}") for d in "xyz")
    return builder.mul(builder.mul(nx, ny), nz)


TRAP_PREFIX = "numba_asynccopy checked mode: "


def trap_if(context, builder, cond, api: str, message: str, values=()):
    """If ``cond``: print the broken rule with block and thread, then trap.

    ``message`` may hold printf conversions for ``values`` (i32/i64 values).
    """
    with builder.if_then(cond, likely=False):
        fmt = (
            f"{TRAP_PREFIX}{api}: {message} "
            "[block (%u,%u,%u) thread (%u,%u,%u)]\n"
        )
        where = [sreg(builder, f"ctaid.{d}") for d in "xyz"]
        where += [sreg(builder, f"tid.{d}") for d in "xyz"]
        vals = list(values) + where
        fmtptr = context.insert_string_const_addrspace(builder, fmt)
        struct = cgutils.make_anonymous_struct(builder, vals)
        slot = cgutils.alloca_once_value(builder, struct)
        vprintf = nvvmutils.declare_vprint(builder.module)
        builder.call(vprintf, (fmtptr, builder.bitcast(slot, ir.PointerType(I8))))
        asm(builder, "trap;", "")


def is_space(builder, ptr, space: str):
    """i1: the generic pointer lies in ``space`` (shared/global/...)."""
    return predicate(builder, f"{form('isspacep').opcode.format(space=space)} p, $1;", "l",
                     [generic_addr64(builder, ptr)], clobber_memory=False)
