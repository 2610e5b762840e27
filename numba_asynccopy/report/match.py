"""Which rows of the forms table a PTX instruction belongs to.

The only module of the report that reads a form's ``opcode`` template or
documented ``syntax`` as text (turning them into regular expressions), so
the table's layout can change behind :func:`match_forms`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from .._forms import FORMS, Form
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


def _template_regex(opcode: str) -> re.Pattern:
    """Regex of a form's opcode template; each ``{field}`` is a wildcard."""
    parts = re.split(r"\{\w+\}", opcode)
    return re.compile("".join(re.escape(p) + "([\\w.:]*)" for p in parts[:-1]) + re.escape(parts[-1]) + "$")


def _syntax_regex(syntax: str) -> re.Pattern | None:
    """Regex of a form's documented opcode (first word of ``syntax``).

    ``.{a,b}`` is a choice, ``{.a,.b}`` an optional choice and any other
    ``{...}`` optional dotted words (captured, so a looser match scores
    worse)."""
    head = syntax.split()[0].rstrip(";") if syntax.split() else ""
    if not head or head.startswith((".", "%")):
        return None
    out, pos = [], 0
    for m in re.finditer(r"\{([^{}]*)\}", head):
        out.append(re.escape(head[pos:m.start()]))
        body = m.group(1)
        if "," in body:
            alts = body.split(",")
            group = "(?:" + "|".join(re.escape(a) for a in alts) + ")"
            out.append(group + ("?" if all(a.startswith(".") for a in alts) else ""))
        else:
            out.append(r"((?:\.[\w:]+)*)")
        pos = m.end()
    out.append(re.escape(head[pos:]))
    return re.compile("".join(out) + "$")


_ROWS: list[tuple[Form, re.Pattern, re.Pattern | None]] = [
    (f, _template_regex(f.opcode), _syntax_regex(f.syntax))
    for f in FORMS.values()
    if not f.opcode.startswith((".", "%"))
]
#: rows named by a special register operand (``%cluster_ctarank``...)
_SREG_ROWS = [f for f in FORMS.values() if f.opcode.startswith("%")]
#: rows named by a kernel directive (``.reqnctapercluster``...)
_DIRECTIVE_ROWS = [f for f in FORMS.values() if f.opcode.startswith(".")]


def _wild(m: re.Match) -> int:
    return sum(len(g or "") for g in m.groups())


def match_forms(opcode: str) -> list[Form]:
    """Rows of the forms table an emitted opcode belongs to, best first.

    Candidates are the rows whose opcode template matches; where the
    documented syntax of some of them matches too, only those stay.  The
    best row is the one whose documented syntax needed the fewest
    wildcard characters.  Example::

        >>> [f.key for f in match_forms("mbarrier.try_wait.parity.shared::cta.b64")][0]
        'mbarrier.try_wait.parity'
    """
    cands = [(f, sx) for f, tx, sx in _ROWS if tx.match(opcode)]
    by_syntax = [(f, sx.match(opcode)) for f, sx in cands if sx is not None and sx.match(opcode)]
    if by_syntax:
        by_syntax.sort(key=lambda fm: (_wild(fm[1]), -fm[0].min_sm, -ptx_num(fm[0].min_ptx)))
        return [f for f, _ in by_syntax]
    return [f for f, _ in cands]


def _is_async(opcode: str, text: str) -> tuple[bool, Form | None]:
    rows = match_forms(opcode)
    if rows:
        return True, None
    for f in _SREG_ROWS:
        if re.search(re.escape(f.opcode) + r"\b", text):
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
            opcode = f"{opcode} {sreg.opcode}"
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
                max((r.min_ptx for r in rows), key=ptx_num), max(r.min_sm for r in rows)))
        else:
            out.append(Instruction(opcode, counts[opcode], None, None, None, None))
    return out


def directive_form(ptx: str) -> Form | None:
    """The row of the cluster directive the kernel declares, if any."""
    return next((f for f in _DIRECTIVE_ROWS if f.opcode in ptx), None)
