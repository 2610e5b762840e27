"""Which rows of the registry a PTX instruction belongs to.

A row's qualifier sets expand to every concrete opcode it stands for
(``_forms.rows_for_opcode``): an instruction maps to the rows that produce
exactly its text, with no regular expressions over the documented syntax.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from .._forms import FORMS, Form, rows_for_opcode
from .parse import PtxLine, located_statements, ptx_num

#: Opcode prefixes of instructions the report lists even when no row of the
#: forms table names them (forms added on other branches, NVVM's own).
ASYNC_PREFIXES = (
    "cp.async", "cp.reduce.async", "mbarrier.", "fence.", "elect.", "createpolicy.",
    "barrier.cluster", "mapa", "prefetch.tensormap", "getctarank", "multimem.",
    "ld.shared::cluster", "st.shared::cluster", "atom.shared::cluster", "red.shared::cluster",
)


@dataclass(frozen=True)
class Instruction:
    """One asynchronous PTX opcode of the kernel and how often it appears."""

    opcode: str
    count: int
    form: str | None  # key of the forms-table row, None when no row names it
    api: str | None  # the calls of the kernel that emitted it (else every function that may)
    min_ptx: str | None
    min_sm: int | None
    arch: str = ""  # an arch-specific target's suffix ("a": sm_90a)
    #: the package inserted it inside this call (the kernel never calls one of its functions)
    inserted_by: str | None = None

    @property
    def target(self) -> str | None:
        """The PTX target it needs (``sm_90a``), or None when unknown."""
        return f"sm_{self.min_sm}{self.arch}" if self.min_sm else None


#: rows named by a special register operand (``%cluster_ctarank``...)
_SREG_ROWS = [f for f in FORMS.values() if f.opcode.startswith("%")]
#: rows named by a kernel directive (``.reqnctapercluster``...)
_DIRECTIVE_ROWS = [f for f in FORMS.values() if f.opcode.startswith(".")]
_SREG_TOKEN = re.compile(r"%[a-z_]+(?:\.[xyz])?\b")


def _register(row: Form) -> str:
    """The register a special-register row reads, without its axis slot."""
    return row.opcode.split("{")[0]


def match_forms(opcode: str) -> list[Form]:
    """Rows of the registry an emitted opcode belongs to, best first: those
    whose qualifier sets expand to exactly ``opcode`` (the strictest first).

    Example::

        >>> [f.key for f in match_forms("mbarrier.try_wait.parity.shared::cta.b64")][0]
        'mbarrier.try_wait.parity'
    """
    rows = [f for f in rows_for_opcode(opcode) if not f.opcode.startswith((".", "%"))]
    return sorted(rows, key=lambda f: (-f.min_sm, -ptx_num(f.min_ptx)))


def _is_async(opcode: str, text: str) -> tuple[bool, Form | None]:
    rows = match_forms(opcode)
    if rows:
        return True, None
    for token in _SREG_TOKEN.findall(text):
        for f in rows_for_opcode(token):
            if f in _SREG_ROWS:
                return True, f
    return opcode.startswith(ASYNC_PREFIXES), None


def parse_ptx(ptx: str) -> tuple[list[PtxLine], dict[str, Form | None]]:
    """The asynchronous instructions of ``ptx`` in order, with source lines,
    and the special-register rows of the opcodes named after a register.

    Example::

        lines, sregs = parse_ptx(ptx)
        [pl.opcode for pl in lines]   # ['cp.async.cg.shared.global', ...]
    """
    lines: list[PtxLine] = []
    sreg_forms: dict[str, Form | None] = {}
    for text, opcode, file, line in located_statements(ptx):
        ok, sreg = _is_async(opcode, text)
        if not ok:
            continue
        if sreg is not None:  # name the register, not "mov.u32"
            opcode = f"{opcode} {_register(sreg)}"
            sreg_forms[opcode] = sreg
        lines.append(PtxLine(text, opcode, file, line))
    return lines, sreg_forms


_CALL = re.compile(r"\bac\.((?:pipeline\.)?\w+)\s*\(")


def _calls(pls: list[PtxLine]) -> list[str]:
    """The package calls (``cp_async``, ``pipeline.producer_commit``) on the
    source lines of ``pls``, first-seen order."""
    return list(dict.fromkeys(c for pl in pls for c in _CALL.findall(pl.source or "")))


def _owns_other(call: str, opcode: str, lines: list[PtxLine]) -> bool:
    """``call`` emits, on the lines where ``opcode`` is, another instruction
    whose row is its own (the row's first function)."""
    here = {(pl.file, pl.line) for pl in lines if pl.opcode == opcode}
    for pl in lines:
        if pl.opcode != opcode and (pl.file, pl.line) in here:
            rows = match_forms(pl.opcode)
            if rows and rows[0].apis and rows[0].apis[0] == call:
                return True
    return False


def tally(lines: list[PtxLine], sreg_forms: dict[str, Form | None]) -> list[Instruction]:
    """One :class:`Instruction` per distinct opcode, in first-seen order,
    with the strictest PTX ISA and sm of the rows it may belong to, and
    the kernel's calls that emitted it: a call that is one of the row's
    functions, else the call the package inserted it in
    (``inserted_by``: a ``fence.proxy.tensormap`` a TMA load adds)."""
    counts = Counter(pl.opcode for pl in lines)
    out = []
    for opcode in dict.fromkeys(pl.opcode for pl in lines):  # first-seen order
        rows = [sreg_forms[opcode]] if sreg_forms.get(opcode) else match_forms(opcode)
        if rows:
            best = rows[0]
            apis = {a.strip() for r in rows for a in r.apis}
            calls = _calls([pl for pl in lines if pl.opcode == opcode])
            mine = [c for c in calls if c in apis or c.rpartition(".")[2] in apis]
            api, inserted = ", ".join(best.apis), None
            own = best.apis[0] if best.apis else None
            extra = [c for c in mine if c != own and _owns_other(c, opcode, lines)]
            if extra:
                # the call emits an instruction of its own on that line, and this one
                # besides: the package inserted it (a TMA load's fence.proxy.tensormap)
                api = inserted = ", ".join(extra)
            elif mine:
                api = ", ".join(mine)
            elif calls:
                # the package's function behind the call emits it (a pipeline
                # operation's commit_group, a TMA load's tensormap fence)
                api = ", ".join(calls)
                inserted = ", ".join(calls) if not any(
                    c.startswith("pipeline.") for c in calls) else None
            out.append(Instruction(
                opcode, counts[opcode], best.key, api,
                max((r.min_ptx for r in rows), key=ptx_num), max(r.min_sm for r in rows),
                max(r.arch for r in rows), inserted))
        else:
            out.append(Instruction(opcode, counts[opcode], None, None, None, None))
    return out


def directive_form(ptx: str) -> Form | None:
    """The row of the cluster directive the kernel declares, if any."""
    return next((f for f in _DIRECTIVE_ROWS if f.opcode in ptx), None)
