"""The report ``ac.inspect`` returns: its figures and how it prints, as
text and as HTML in Jupyter."""

from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from .._forms import Form
from .match import Instruction
from .parse import PtxLine, Resources, ptx_num
from .parse import ptx_version as _ptx_version


@dataclass
class InspectReport:
    """What ``ac.inspect`` found; ``print`` it, or let Jupyter render it.

    In Jupyter/IPython a report shown as a cell's value renders as an HTML
    table, and its plain-text form is the same text ``print`` gives.
    """

    name: str
    argtypes: tuple
    cc: tuple[int, int]
    ptx: str = field(repr=False)
    instructions: list[Instruction]
    lines: list[PtxLine] = field(repr=False)
    cluster: tuple[int, int, int] | None
    explicit_cluster: bool
    cluster_form: Form | None = field(repr=False)
    static_shared_bytes: int
    dynamic_shared: bool
    resources: Resources | None
    ptxas_log: str | None = field(repr=False)
    ptxas_error: str | None

    @property
    def target(self) -> str:
        return f"sm_{self.cc[0]}{self.cc[1]}{self.cc[2] if len(self.cc) > 2 else ''}"

    @property
    def ptx_version(self) -> str | None:
        return _ptx_version(self.ptx)

    def _needs(self) -> list[tuple[str | None, int | None]]:
        reqs = [(i.min_ptx, i.min_sm) for i in self.instructions if i.min_sm is not None]
        if self.cluster_form is not None:
            reqs.append((self.cluster_form.min_ptx, self.cluster_form.min_sm))
        return reqs

    @property
    def min_sm(self) -> int | None:
        """The oldest sm that runs every asynchronous instruction found."""
        reqs = self._needs()
        return max(s for _, s in reqs) if reqs else None

    @property
    def min_target(self) -> str | None:
        """:attr:`min_sm` as the PTX target (``sm_90a`` where a form needs it)."""
        if self.min_sm is None:
            return None
        arch = max((i.arch for i in self.instructions if i.min_sm == self.min_sm), default="")
        return f"sm_{self.min_sm}{arch}"

    @property
    def min_ptx(self) -> str | None:
        """The oldest PTX ISA that has every asynchronous instruction found."""
        reqs = self._needs()
        return max((p for p, _ in reqs), key=ptx_num) if reqs else None

    @property
    def ptxas_warnings(self) -> list[str]:
        return [ln.strip() for ln in (self.ptxas_log or "").splitlines() if "warning" in ln.lower()]

    def count(self, prefix: str) -> int:
        """How many asynchronous instructions start with ``prefix``.

        Example::

            assert ac.inspect(kernel, a, b).count("cp.async.cg") == 1
        """
        return sum(i.count for i in self.instructions if i.opcode.startswith(prefix))

    def source_listing(self) -> str:
        """The asynchronous PTX lines, grouped under their Python source lines."""
        out: list[str] = []
        last: tuple | None = ()
        for pl in self.lines:
            key = (pl.file, pl.line)
            if key != last:
                where = f"{Path(pl.file).name}:{pl.line}" if pl.file and pl.line else "(no source line)"
                out.append(f"{where}  {pl.source or ''}".rstrip())
                last = key
            out.append(f"    {pl.text}")
        return "\n".join(out)

    def _summary(self) -> list[tuple[str, str]]:
        rows = []
        if self.min_sm is not None:
            need = f"{self.min_target}, PTX ISA {self.min_ptx}"
            ins = [i for i in self.instructions if i.inserted_by and i.min_ptx == self.min_ptx]
            if ins and not any(i.min_ptx == self.min_ptx for i in self.instructions
                               if not i.inserted_by):
                i = ins[0]  # the newest ISA comes from an instruction the kernel never wrote
                need += f" (for {i.opcode}, which ac.{i.inserted_by} inserts)"
            rows.append(("needs", need))
        else:
            rows.append(("needs", "no asynchronous instructions found"))
        if self.cluster:
            rows.append(("cluster", "x".join(map(str, self.cluster)) + " CTAs (declared: "
                         + (".explicitcluster " if self.explicit_cluster else "")
                         + ".reqnctapercluster)"))
        elif self.explicit_cluster:
            rows.append(("cluster", "explicit cluster, shape given at launch"))
        else:
            rows.append(("cluster", "none declared"))
        sh = f"{self.static_shared_bytes} bytes static"
        if self.dynamic_shared:
            sh += " + dynamic (set at launch)"
        rows.append(("shared memory", sh))
        if self.resources is not None:
            r = self.resources
            rows.append((f"ptxas ({self.target})",
                         f"{r.registers} registers, {r.shared_bytes} bytes shared, "
                         f"{r.barriers} barriers, {r.spill_stores} bytes spill stores, "
                         f"{r.spill_loads} bytes spill loads, {r.stack_frame} bytes stack"))
        else:
            rows.append(("ptxas", f"not run: {self.ptxas_error}"))
        for w in self.ptxas_warnings:
            rows.append(("ptxas warning", w))
        return rows

    def __str__(self) -> str:
        args = ", ".join(str(t) for t in self.argtypes)
        head = (f"ac.inspect: {self.name}({args})\n  compiled for {self.target}"
                f" (PTX ISA {self.ptx_version} emitted), not launched")
        out = [head]
        for k, v in self._summary():
            out.append(f"  {k + ':':15} {v}")
        if self.instructions:
            w = max(len(i.opcode) for i in self.instructions)
            out.append("")
            out.append(f"  {'count':>5}  {'instruction':{w}}  {'PTX ISA':7}  {'sm':6}  API")
            for i in self.instructions:
                sm = i.target or "?"
                api = ", ".join(f"ac.{a.strip()}" for a in i.api.split(",")) if i.api else "(not in the forms table)"
                if i.inserted_by:
                    api = "inserted by " + api
                out.append(f"  {i.count:>5}  {i.opcode:{w}}  {i.min_ptx or '?':7}  {sm:6}  {api}")
            out.append("")
            out.append("  source lines and their asynchronous PTX:")
            out.append(textwrap.indent(self.source_listing(), "  "))
        return "\n".join(out)

    def __repr__(self) -> str:
        return (f"<InspectReport {self.name} {self.target}: "
                f"{sum(i.count for i in self.instructions)} async instructions, "
                f"needs {self.min_target}>")

    def _repr_pretty_(self, p, cycle: bool) -> None:
        # IPython's text/plain (terminal IPython, text-only notebook views,
        # saved outputs) shows the full report, as print() does; plain
        # Python's repr() (logs, debuggers) keeps the one-line summary.
        p.text(repr(self) if cycle else str(self))

    def _repr_html_(self) -> str:
        e = html.escape
        args = ", ".join(e(str(t)) for t in self.argtypes)
        parts = [
            "<div class='ac-inspect'>",
            f"<p><b>ac.inspect</b>: <code>{e(self.name)}({args})</code> compiled for "
            f"<b>{e(self.target)}</b> (PTX ISA {e(str(self.ptx_version))} emitted), not launched</p>",
            "<table>",
        ]
        for k, v in self._summary():
            parts.append(f"<tr><th style='text-align:left'>{e(k)}</th><td style='text-align:left'>{e(v)}</td></tr>")
        parts.append("</table>")
        if self.instructions:
            parts.append("<table><tr><th>count</th><th>instruction</th><th>PTX ISA</th>"
                         "<th>sm</th><th>API</th></tr>")
            for i in self.instructions:
                api = ", ".join(f"ac.{a.strip()}" for a in i.api.split(",")) if i.api else "(not in the forms table)"
                parts.append(
                    f"<tr><td>{i.count}</td><td style='text-align:left'><code>{e(i.opcode)}</code></td>"
                    f"<td>{e(i.min_ptx or '?')}</td><td>{e(i.target or '?')}</td>"
                    f"<td style='text-align:left'>{e(api)}</td></tr>")
            parts.append("</table>")
            parts.append("<details><summary>source lines and their asynchronous PTX</summary>"
                         f"<pre>{e(self.source_listing())}</pre></details>")
        parts.append("</div>")
        return "\n".join(parts)
