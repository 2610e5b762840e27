"""Loop pragmas: ``pragma_nounroll()``, CUDA C++'s ``#pragma unroll 1``.

NVVM unrolls a loop it cannot count at compile time four times, with a
remainder loop (for a grid-stride ``range`` loop, 3-5x the instructions of
the loop nvcc emits).  CUDA C++ users stop that with ``#pragma unroll 1``;
Python has no pragmas and Numba has no way to attach LLVM loop metadata, so
this module adds one: :func:`pragma_nounroll` called in a loop's body marks
that loop (the innermost one around the call) with
``!llvm.loop !{..., !{!"llvm.loop.unroll.disable"}}`` on its back edges.
NVVM honours it and writes PTX's ``.pragma "nounroll";`` into the loop, which
ptxas honours too, so neither unrolls it.

Example::

    t = cuda.blockIdx.x
    for t in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
        ac.pragma_nounroll()          # this loop: not unrolled
        ac.cp_async(sh[r], X[t * 8 + r], 16)
        ...

How: the call lowers to a marker (an empty inline-asm statement); when
Numba finalizes the kernel's LLVM module, the marker's block is looked up in
the function's control-flow graph, the innermost natural loop holding it is
found (dominators, back edges), its latches get the loop metadata and the
marker is removed.  A call outside every loop is a compile-time error.
"""

from __future__ import annotations

from llvmlite import ir
from llvmlite.ir.values import MDValue
from numba.core import types

from ._compat import ContractError, intrinsic

#: the marker's asm text (removed before NVVM sees the module)
MARKER = "// numba_asynccopy pragma_nounroll"
#: the LLVM loop property NVVM honours (and turns into PTX's .pragma "nounroll")
UNROLL_DISABLE = "llvm.loop.unroll.disable"


@intrinsic
def pragma_nounroll(typingctx):
    """Do not unroll the loop this call is in (the innermost one around it):
    CUDA C++'s ``#pragma unroll 1``, PTX's ``.pragma "nounroll"``.

    Call it anywhere in the loop's body (first, by convention).  It emits no
    instruction; NVVM and ptxas keep the loop rolled.  Use it on grid-stride
    and pipeline loops whose trip count is a run-time value: NVVM otherwise
    unrolls them four times with a remainder loop.  Outside every loop it is a
    compile-time error.  In the simulator it does nothing.

    Example::

        for t in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
            ac.pragma_nounroll()
            ...
    """
    def codegen(context, builder, sig, args):
        fty = ir.FunctionType(ir.VoidType(), [])
        builder.call(ir.InlineAsm(fty, MARKER, "", side_effect=True), [])
        builder.module._ac_pragma_nounroll = True  # finalize() looks only at marked modules
        return context.get_dummy_value()

    return types.void(), codegen


# --- at finalize: mark the loops -------------------------------------------------


def _successors(block: ir.Block) -> list[ir.Block]:
    term = block.terminator
    if term is None:
        return []
    out = [op for op in term.operands if isinstance(op, ir.Block)]
    if isinstance(term, ir.SwitchInstr):
        out += [term.default] + [b for _, b in term.cases]
    return out


def _dominators(entry: ir.Block, succ: dict) -> tuple[dict, dict]:
    """(immediate dominators, predecessors) of the blocks reachable from
    ``entry`` (Cooper, Harvey and Kennedy's iteration over the reverse
    postorder); unreachable blocks are left out of both."""
    order, seen = [], set()
    stack = [(entry, iter(succ[entry]))]
    seen.add(entry)
    while stack:
        b, it = stack[-1]
        nxt = next((s for s in it if s not in seen), None)
        if nxt is None:
            order.append(b)
            stack.pop()
        else:
            seen.add(nxt)
            stack.append((nxt, iter(succ[nxt])))
    rpo = order[::-1]
    index = {b: i for i, b in enumerate(rpo)}
    preds: dict = {b: [] for b in rpo}
    for b in rpo:
        for s in succ[b]:
            if s in index:
                preds[s].append(b)
    idom = {entry: entry}

    def meet(a, b):
        while a is not b:
            while index[a] > index[b]:
                a = idom[a]
            while index[b] > index[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for b in rpo[1:]:
            done = [p for p in preds[b] if p in idom]
            new = done[0]
            for p in done[1:]:
                new = meet(p, new)
            if idom.get(b) is not new:
                idom[b] = new
                changed = True
    return idom, preds


def _dominates(idom: dict, a: ir.Block, b: ir.Block) -> bool:
    while True:
        if b is a:
            return True
        up = idom[b]
        if up is b:
            return False
        b = up


def _loops(fn: ir.Function) -> list[tuple[ir.Block, set, list]]:
    """(header, body, latches) of every natural loop of ``fn``."""
    blocks = list(fn.blocks)
    succ = {b: _successors(b) for b in blocks}
    idom, preds = _dominators(blocks[0], succ)
    latches: dict = {}
    for u in idom:
        for h in succ[u]:
            if h in idom and _dominates(idom, h, u):
                latches.setdefault(h, []).append(u)
    out = []
    for h, us in latches.items():
        body, work = {h}, list(us)
        while work:
            b = work.pop()
            if b not in body:
                body.add(b)
                work.extend(preds[b])
        out.append((h, body, us))
    return out


def _loop_id(module: ir.Module) -> ir.MDValue:
    """A fresh self-referential loop ID ``!N = !{!N, !{!"llvm.loop.unroll.disable"}}``
    (a loop ID must be unique, so it bypasses the module's metadata cache)."""
    prop = module.add_metadata([ir.MetaDataString(module, UNROLL_DISABLE)])
    md = MDValue(module, [prop], name=str(len(module.metadata)))
    md.operands = (md,) + tuple(md.operands)
    return md


def _is_marker(instr) -> bool:
    return (isinstance(instr, ir.CallInstr) and isinstance(instr.callee, ir.InlineAsm)
            and instr.callee.asm == MARKER)


def apply(module: ir.Module) -> int:
    """Give the loops around each ``pragma_nounroll`` marker of ``module`` the
    unroll-disable metadata and drop the markers; the number of loops marked.
    Raises :class:`ContractError` for a marker outside every loop."""
    marked = 0
    for fn in module.functions:
        if fn.is_declaration:
            continue
        sites = [(b, i) for b in fn.blocks for i in b.instructions if _is_marker(i)]
        if not sites:
            continue
        loops = _loops(fn)
        done = set()
        for block, instr in sites:
            block.instructions.remove(instr)
            around = [lp for lp in loops if block in lp[1]]
            if not around:
                raise ContractError(
                    "pragma_nounroll: the call is not inside a loop; call it in the body of "
                    "the loop that must not be unrolled")
            header, _, latches = min(around, key=lambda lp: len(lp[1]))
            if header in done:
                continue
            done.add(header)
            lid = _loop_id(module)
            for u in latches:
                u.terminator.set_metadata("llvm.loop", lid)
            marked += 1
    module._ac_pragma_nounroll = False
    return marked


def install() -> None:
    """Run :func:`apply` when numba-cuda finalizes a code library (once)."""
    from numba.cuda.codegen import CUDACodeLibrary

    if getattr(CUDACodeLibrary.finalize, "_ac_pragma", False):
        return
    original = CUDACodeLibrary.finalize

    def finalize(self):
        mod = getattr(self, "_module", None)
        if mod is not None and getattr(mod, "_ac_pragma_nounroll", False):
            apply(mod)
        return original(self)

    finalize._ac_pragma = True
    CUDACodeLibrary.finalize = finalize
