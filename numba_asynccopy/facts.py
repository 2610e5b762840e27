"""What CUDA C++'s compiler knows and Numba's LLVM IR does not say.

nvcc knows that ``threadIdx.x`` is below 1024 and that an ``int`` index
built from it is small and non-negative, so ``tid / 32`` is a shift and an
index never needs Python's negative-index wraparound.  Numba's IR says less:

- its special-register reads (``llvm.nvvm.read.ptx.sreg.*``) carry no
  ``!range``, and are sign-extended to int64;
- it does mark every load of an array's shape with ``!range [0, 2**63-1)``
  (an extent is never negative), but on a load from the array struct's stack
  copy, which LLVM's first promotion pass replaces by the kernel parameter,
  dropping the fact.

When numba-cuda finalizes a code library, :func:`apply` adds, before NVVM
sees the module:

- ``!range`` on each special-register read: ``tid`` in [0, 1024) (z: 64),
  ``ntid`` in [1, 1025) (z: 65), ``ctaid`` in [0, 2**31 - 1), ``nctaid``
  in [1, 2**31), ``laneid`` in [0, 32)
  (the launch limits of every GPU Numba targets; the package's cluster
  registers get theirs where they are read, in :mod:`.cluster`);
- after each load that carries ``!range [lo, hi)``, an ``llvm.assume`` of
  ``lo <= value < hi``: the same fact, in a form that survives promotion
  to registers.

Nothing here changes what a kernel computes: each fact holds on every
launch.  Negative indices keep Python's meaning; only the wraparound
branch of an index that is provably non-negative folds away.

Each fact can be left out, to measure what it buys (an A/B on a GPU), with
the environment variable ``NUMBA_ASYNCCOPY_FACTS``, read once at import:
unset, empty or ``all`` gives every fact; ``none`` gives none; otherwise a
comma-separated subset of ``sreg`` (special-register ranges), ``assume``
(extents as assumes), ``range`` (``range()`` increments without overflow)
and ``unroll`` (no run-time unrolling).  The setting is part of the compile
cache key.

Example::

    NUMBA_ASYNCCOPY_FACTS=sreg,range python my_benchmark.py   # no assumes, run-time unrolling
"""

from __future__ import annotations

import os

from llvmlite import ir

from .pragma import _loops

#: the environment variable that chooses the facts (read once, at import)
FACTS_ENV = "NUMBA_ASYNCCOPY_FACTS"
#: every fact the package can add, by the name ``NUMBA_ASYNCCOPY_FACTS`` gives it
FACT_NAMES = ("sreg", "assume", "range", "unroll")


def parse_facts(raw: str | None) -> frozenset[str]:
    """The facts a value of ``NUMBA_ASYNCCOPY_FACTS`` turns on.

    >>> sorted(parse_facts("range, sreg"))
    ['range', 'sreg']
    >>> parse_facts("none")
    frozenset()
    """
    value = (raw or "").strip().lower()
    if value in ("", "all"):
        return frozenset(FACT_NAMES)
    if value == "none":
        return frozenset()
    names = [n.strip() for n in value.split(",") if n.strip()]
    bad = [n for n in names if n not in FACT_NAMES]
    if bad or not names:
        raise ValueError(f"environment variable {FACTS_ENV}={raw!r}: unknown fact "
                         f"{', '.join(map(repr, bad)) or repr(raw)}; use all, none or a "
                         f"comma-separated subset of {', '.join(FACT_NAMES)}")
    return frozenset(names)


#: the facts this process adds (``NUMBA_ASYNCCOPY_FACTS`` at import)
ENABLED: frozenset[str] = parse_facts(os.environ.get(FACTS_ENV))


def cache_key() -> tuple:
    """The part of the compile cache key the facts own: what a kernel compiled
    under another setting would differ by."""
    return ("facts",) + tuple(sorted(ENABLED))


_I31 = 2**31 - 1
#: special register -> [lo, hi) of its value on every launch (PTX ISA,
#: "Special registers"; CUDA's launch limits: 1024 threads a block, z <= 64;
#: grid x < 2**31; y and z < 65536, stated as x's bound)
SREG_RANGES: dict[str, tuple[int, int]] = {
    "tid.x": (0, 1024), "tid.y": (0, 1024), "tid.z": (0, 64),
    "ntid.x": (1, 1025), "ntid.y": (1, 1025), "ntid.z": (1, 65),
    # y and z get x's bounds, not their own 65535: true, and the tighter
    # bound let NVVM rebuild the plain stencil's neighbour addresses from
    # scratch (66 -> 71 SASS instructions)
    "ctaid.x": (0, _I31), "ctaid.y": (0, _I31), "ctaid.z": (0, _I31),
    "nctaid.x": (1, _I31 + 1), "nctaid.y": (1, _I31 + 1), "nctaid.z": (1, _I31 + 1),
    "laneid": (0, 32), "warpsize": (32, 33),
}
_SREG_PREFIX = "llvm.nvvm.read.ptx.sreg."


def range_md(module: ir.Module, ty: ir.IntType, lo: int, hi: int):
    """``!{ty lo, ty hi}``: the metadata of a half-open value range."""
    return module.add_metadata([ir.Constant(ty, lo), ir.Constant(ty, hi)])


def _assume(module: ir.Module) -> ir.Function:
    fn = module.globals.get("llvm.assume")
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.IntType(1)]), "llvm.assume")
    return fn


def _range_of(md) -> tuple[int, int] | None:
    ops = getattr(md, "operands", ())
    if len(ops) != 2 or not all(isinstance(o, ir.Constant) for o in ops):
        return None
    lo, hi = (int(o.constant) for o in ops)
    return lo, hi


#: the loop property that stops NVVM's run-time unrolling (4 copies of the
#: body plus a remainder loop) and keeps full unrolling of constant-trip loops
RUNTIME_UNROLL_DISABLE = "llvm.loop.unroll.runtime.disable"


def _no_runtime_unroll(module: ir.Module, fn: ir.Function) -> int:
    """Give every loop of ``fn`` without loop metadata of its own (a
    ``pragma_nounroll`` loop has it) ``llvm.loop.unroll.runtime.disable``;
    the number of loops marked."""
    from llvmlite.ir.values import MDValue


    marked = 0
    for _, _, latches in _loops(fn):
        if any("llvm.loop" in u.terminator.metadata for u in latches):
            continue
        prop = module.add_metadata([ir.MetaDataString(module, RUNTIME_UNROLL_DISABLE)])
        lid = MDValue(module, [prop], name=str(len(module.metadata)))
        lid.operands = (lid,) + tuple(lid.operands)  # a loop ID names itself
        for u in latches:
            u.terminator.set_metadata("llvm.loop", lid)
        marked += 1
    return marked


def apply(module: ir.Module, enabled: frozenset[str] | None = None) -> tuple[int, int, int]:
    """Add the facts (``enabled``, default :data:`ENABLED`) to every function
    defined in ``module``; returns (special-register reads given a range,
    assumes added, loops kept from run-time unrolling)."""
    on = ENABLED if enabled is None else enabled
    sregs = assumes = loops = 0
    for fn in module.functions:
        if fn.is_declaration:
            continue
        for block in fn.blocks:
            i = 0
            while i < len(block.instructions):
                instr = block.instructions[i]
                i += 1
                if isinstance(instr, ir.CallInstr) and isinstance(instr.callee, ir.Function):
                    name = instr.callee.name
                    if ("sreg" in on and name.startswith(_SREG_PREFIX)
                            and "range" not in instr.metadata):
                        bounds = SREG_RANGES.get(name[len(_SREG_PREFIX):])
                        if bounds is not None and isinstance(instr.type, ir.IntType):
                            instr.set_metadata("range", range_md(module, instr.type, *bounds))
                            sregs += 1
                    continue
                if "assume" not in on:
                    continue
                if not isinstance(instr, ir.LoadInstr) or "range" not in instr.metadata:
                    continue
                if getattr(instr, "_ac_assumed", False) or not isinstance(instr.type, ir.IntType):
                    continue
                bounds = _range_of(instr.metadata["range"])
                if bounds is None:
                    continue
                lo, hi = bounds
                builder = ir.IRBuilder(block)
                builder.position_after(instr)
                ty = instr.type
                smax = 2 ** (ty.width - 1) - 1
                if lo == 0 and hi == smax:  # numba's shapes: value >= 0 (signed)
                    cond = builder.icmp_signed(">=", instr, ir.Constant(ty, 0))
                else:  # unsigned offset test: (value - lo) <u (hi - lo)
                    off = builder.sub(instr, ir.Constant(ty, lo))
                    cond = builder.icmp_unsigned("<", off, ir.Constant(ty, (hi - lo) % 2**ty.width))
                builder.call(_assume(module), [cond])
                instr._ac_assumed = True
                assumes += 1
                i = block.instructions.index(instr) + 1
        if "unroll" in on:
            loops += _no_runtime_unroll(module, fn)
    return sregs, assumes, loops


# --- range(): the step that yields the next value does not overflow -----------------


def _range_iternext(iter_type):
    """numba-cuda's ``iternext`` of a signed ``range`` iterator, with the
    increment ``value + step`` marked ``nsw``: every value a ``range`` yields
    lies between its start and stop, so the increment that produces one
    never overflows (the last increment, after which the count is 0, is
    never read).  With it LLVM knows ``range(cuda.blockIdx.x, n,
    cuda.gridDim.x)`` yields only non-negative values, as nvcc knows of
    ``for (int t = blockIdx.x; t < n; t += gridDim.x)``."""
    from numba.cuda import cgutils
    from numba.cuda.core.imputils import RefType, iternext_impl

    RangeIter = cgutils.create_struct_proxy(iter_type)
    int_type = iter_type.yield_type

    @iternext_impl(RefType.BORROWED)
    def iternext(context, builder, sig, args, result):
        (value,) = args
        it = RangeIter(context, builder, value)
        zero = context.get_constant(int_type, 0)
        one = context.get_constant(int_type, 1)
        count = builder.load(it.count)
        is_valid = builder.icmp_signed(">", count, zero)
        result.set_valid(is_valid)
        current = builder.load(it.iter)
        result.yield_(current)
        # unconditional: numba's stores under ``if valid`` become selects
        # (``t + (valid ? step : 0)``), which no longer read as an
        # induction variable; past the end nothing reads either field
        # (the count only falls further below 1)
        builder.store(builder.sub(count, one, flags=["nsw"]), it.count)
        builder.store(builder.add(current, it.step, flags=["nsw"]), it.iter)

    return iternext


def install_range() -> None:
    """Register :func:`_range_iternext` for numba-cuda's signed range
    iterators (a later registration of the same signature is the one
    numba-cuda's target picks; kernels compiled before keep theirs)."""
    from numba.cuda import types
    from numba.cuda.cpython import rangeobj

    if getattr(rangeobj.registry, "_ac_range_nsw", False):
        return
    for iter_type in (types.range_iter32_type, types.range_iter64_type):
        rangeobj.registry.lower("iternext", iter_type)(_range_iternext(iter_type))
    rangeobj.registry._ac_range_nsw = True


def install() -> None:
    """Run :func:`apply` when numba-cuda finalizes a code library, and use
    :func:`_range_iternext` for ``range`` loops (once)."""
    from numba.cuda.codegen import CUDACodeLibrary

    if "range" in ENABLED:
        install_range()

    if getattr(CUDACodeLibrary.finalize, "_ac_facts", False):
        return
    original = CUDACodeLibrary.finalize

    def finalize(self):
        mod = getattr(self, "_module", None)
        if mod is not None and not getattr(mod, "_ac_facts_done", False):
            apply(mod)
            mod._ac_facts_done = True
        return original(self)

    finalize._ac_facts = True
    CUDACodeLibrary.finalize = finalize
