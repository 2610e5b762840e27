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
    api: str | None  # public function(s) that emit it
    min_ptx: str | None
    min_sm: int | None
    arch: str = ""  # an arch-specific target's suffix ("a": sm_90a)

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


def tally(lines: list[PtxLine], sreg_forms: dict[str, Form | None]) -> list[Instruction]:
    """One :class:`Instruction` per distinct opcode, in first-seen order,
    with the strictest PTX ISA and sm of the rows it may belong to."""
    counts = Counter(pl.opcode for pl in lines)
    out = []
    for opcode in dict.fromkeys(pl.opcode for pl in lines):  # first-seen order
        rows = [sreg_forms[opcode]] if sreg_forms.get(opcode) else match_forms(opcode)
        if rows:
            best = rows[0]
            out.append(Instruction(
                opcode, counts[opcode], best.key, ", ".join(best.apis),
                max((r.min_ptx for r in rows), key=ptx_num), max(r.min_sm for r in rows),
                max(r.arch for r in rows)))
        else:
            out.append(Instruction(opcode, counts[opcode], None, None, None, None))
    return out


def directive_form(ptx: str) -> Form | None:
    """The row of the cluster directive the kernel declares, if any."""
    return next((f for f in _DIRECTIVE_ROWS if f.opcode in ptx), None)
