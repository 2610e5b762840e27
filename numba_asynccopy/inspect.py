"""``ac.inspect``: what a kernel asks of the asynchronous hardware, without running it.

The kernel is compiled to PTX for a chosen compute capability (no GPU
needed) with line information, and the report lists every asynchronous
instruction with its count and the PTX ISA and sm it needs (from the forms
table), the cluster shape and shared memory the kernel declares, ptxas's
resource usage when ptxas is installed, and the PTX lines of those
instructions under the Python source lines they come from.

Under numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``) there is no
compiler in the process, so the kernel's source is compiled in a fresh
interpreter with the simulator off; its globals must then be modules or
picklable constants (arrays, numbers, dtypes).
"""

from __future__ import annotations

import ast
import html
import inspect as _pyinspect  # this module is named like the stdlib one
import json
import linecache
import os
import pickle
import re
import subprocess
import sys
import textwrap
import types as _pytypes
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._forms import FORMS, Form

DEFAULT_CC = (9, 0)

#: Opcode prefixes of instructions the report lists even when no row of the
#: forms table names them (forms added on other branches, NVVM's own).
ASYNC_PREFIXES = (
    "cp.async", "cp.reduce.async", "mbarrier.", "fence.", "elect.", "createpolicy.",
    "barrier.cluster", "mapa", "prefetch.tensormap", "getctarank", "multimem.",
    "ld.shared::cluster", "st.shared::cluster", "atom.shared::cluster", "red.shared::cluster",
)


# --- matching PTX instruction text to rows of the forms table ---------------


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
        by_syntax.sort(key=lambda fm: (_wild(fm[1]), -fm[0].min_sm, -_ptx_num(fm[0].min_ptx)))
        return [f for f, _ in by_syntax]
    return [f for f, _ in cands]


def _ptx_num(v: str | None) -> float:
    if not v:
        return 0.0
    major, _, minor = v.partition(".")
    return int(major) + int(minor or 0) / 100


# --- PTX parsing --------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    """One asynchronous PTX opcode of the kernel and how often it appears."""

    opcode: str
    count: int
    form: str | None  # key of the forms-table row, None when no row names it
    api: str | None  # public function(s) that emit it
    min_ptx: str | None
    min_sm: int | None


@dataclass(frozen=True)
class PtxLine:
    """One asynchronous instruction as emitted, with the source line it came from."""

    text: str
    opcode: str
    file: str | None
    line: int | None

    @property
    def source(self) -> str | None:
        if self.file is None or not self.line:
            return None
        src = linecache.getline(self.file, self.line)
        return src.strip() if src else None


@dataclass(frozen=True)
class Resources:
    """ptxas ``-v`` figures for the kernel."""

    registers: int
    shared_bytes: int
    spill_stores: int
    spill_loads: int
    stack_frame: int
    barriers: int


_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', re.M)


def _statements(line: str) -> list[tuple[str, str]]:
    """(text, opcode) of each instruction of one PTX line (several when an
    asm block is ``{ ...; ...; }``); labels are dropped, a predicate guard
    stays in the text but not in the opcode."""
    line = line.split("//", 1)[0]
    out = []
    for stmt in re.split(r"[;{}]", line):
        s = re.sub(r"\s+", " ", stmt.strip())
        s = re.sub(r"^\$?[\w.]+:(?!:)\s*", "", s)  # a label, not "::"
        bare = re.sub(r"^@!?%?\w+\s+", "", s)
        if bare and not bare.startswith("."):
            out.append((s, bare.split()[0]))
    return out


def _is_async(opcode: str, text: str) -> tuple[bool, Form | None]:
    rows = match_forms(opcode)
    if rows:
        return True, None
    for f in _SREG_ROWS:
        if re.search(re.escape(f.opcode) + r"\b", text):
            return True, f
    return opcode.startswith(ASYNC_PREFIXES), None


def _source_name(path: str) -> str:
    """NVVM prefixes pseudo file names (``<ipython-input-3>``, exec'd
    cells) with the working directory; undo that so linecache finds them."""
    base = os.path.basename(path)
    if base.startswith("<") and not os.path.exists(path):
        return base
    return path


def parse_ptx(ptx: str) -> tuple[list[PtxLine], dict[str, Form | None]]:
    """The asynchronous instructions of ``ptx`` in order, with source lines."""
    files = {int(n): _source_name(p) for n, p in _FILE.findall(ptx)}
    cur: tuple[str | None, int | None] = (None, None)
    lines: list[PtxLine] = []
    sreg_forms: dict[str, Form | None] = {}
    for raw in ptx.splitlines():
        m = _LOC.match(raw)
        if m:
            n, ln = int(m.group(1)), int(m.group(2))
            cur = (files.get(n), ln or None)
            continue
        for text, opcode in _statements(raw):
            ok, sreg = _is_async(opcode, text)
            if not ok:
                continue
            if sreg is not None:  # name the register, not "mov.u32"
                opcode = f"{opcode} {sreg.opcode}"
                sreg_forms[opcode] = sreg
            lines.append(PtxLine(text, opcode, cur[0], cur[1]))
    return lines, sreg_forms


def _tally(lines: list[PtxLine], sreg_forms: dict[str, Form | None]) -> list[Instruction]:
    counts = Counter(pl.opcode for pl in lines)
    out = []
    for opcode in dict.fromkeys(pl.opcode for pl in lines):  # first-seen order
        rows = [sreg_forms[opcode]] if sreg_forms.get(opcode) else match_forms(opcode)
        if rows:
            best = rows[0]
            out.append(Instruction(
                opcode, counts[opcode], best.key, best.api,
                max((r.min_ptx for r in rows), key=_ptx_num), max(r.min_sm for r in rows)))
        else:
            out.append(Instruction(opcode, counts[opcode], None, None, None, None))
    return out


def _cluster(ptx: str) -> tuple[tuple[int, int, int] | None, bool, Form | None]:
    m = re.search(r"\.reqnctapercluster\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", ptx)
    shape = tuple(int(g or 1) for g in m.groups()) if m else None
    explicit = bool(re.search(r"\.explicitcluster\b", ptx))
    row = next((f for f in _DIRECTIVE_ROWS if f.opcode in ptx), None) if (shape or explicit) else None
    return shape, explicit, row  # type: ignore[return-value]


def _shared(ptx: str) -> tuple[int, bool]:
    static = 0
    dynamic = False
    for m in re.finditer(r"^\s*(\.extern\s+)?(?:\.visible\s+|\.weak\s+)?\.shared\b[^\[;]*\[(\d*)\]", ptx, re.M):
        if m.group(1) or not m.group(2):
            dynamic = True
        else:
            static += int(m.group(2))
    return static, dynamic


def parse_ptxas(log: str) -> Resources | None:
    """Registers, shared memory, spills and barriers from ``ptxas -v``."""
    regs = re.search(r"Used (\d+) registers", log)
    if not regs:
        return None

    def num(pat: str) -> int:
        m = re.search(pat, log)
        return int(m.group(1)) if m else 0

    return Resources(
        registers=int(regs.group(1)),
        shared_bytes=num(r"(\d+) bytes smem"),
        spill_stores=num(r"(\d+) bytes spill stores"),
        spill_loads=num(r"(\d+) bytes spill loads"),
        stack_frame=num(r"(\d+) bytes stack frame"),
        barriers=num(r"used (\d+) barriers"),
    )


# --- the report ---------------------------------------------------------------


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
        return f"sm_{self.cc[0]}{self.cc[1]}"

    @property
    def ptx_version(self) -> str | None:
        m = re.search(r"^\s*\.version\s+(\d+\.\d+)", self.ptx, re.M)
        return m.group(1) if m else None

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
    def min_ptx(self) -> str | None:
        """The oldest PTX ISA that has every asynchronous instruction found."""
        reqs = self._needs()
        return max((p for p, _ in reqs), key=_ptx_num) if reqs else None

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
            rows.append(("needs", f"sm_{self.min_sm}, PTX ISA {self.min_ptx}"))
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
                sm = f"sm_{i.min_sm}" if i.min_sm else "?"
                api = ", ".join(f"ac.{a.strip()}" for a in i.api.split(",")) if i.api else "(not in the forms table)"
                out.append(f"  {i.count:>5}  {i.opcode:{w}}  {i.min_ptx or '?':7}  {sm:6}  {api}")
            out.append("")
            out.append("  source lines and their asynchronous PTX:")
            out.append(textwrap.indent(self.source_listing(), "  "))
        return "\n".join(out)

    def __repr__(self) -> str:
        return (f"<InspectReport {self.name} {self.target}: "
                f"{sum(i.count for i in self.instructions)} async instructions, "
                f"needs sm_{self.min_sm}>")

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
                    f"<td>{e(i.min_ptx or '?')}</td><td>{e(f'sm_{i.min_sm}' if i.min_sm else '?')}</td>"
                    f"<td style='text-align:left'>{e(api)}</td></tr>")
            parts.append("</table>")
            parts.append("<details><summary>source lines and their asynchronous PTX</summary>"
                         f"<pre>{e(self.source_listing())}</pre></details>")
        parts.append("</div>")
        return "\n".join(parts)


# --- compiling ------------------------------------------------------------------


def _pyfunc(kernel: Any):
    for attr in ("py_func", "fn"):  # cuda.jit dispatcher; the simulator's kernel
        f = getattr(kernel, attr, None)
        if isinstance(f, _pytypes.FunctionType):
            return f
    if isinstance(kernel, _pytypes.FunctionType):
        return kernel
    raise TypeError(f"ac.inspect: expected a @cuda.jit kernel or a Python function, "
                    f"got {type(kernel).__name__}")


def _argtype(value: Any):
    import numpy as np
    from numba import typeof
    from numba.core import types

    if isinstance(value, types.Type):
        return value
    try:
        return typeof(value)
    except Exception:
        pass
    cai = getattr(value, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        dt = np.dtype(cai["typestr"])
        strides = cai.get("strides")
        c_strides = np.empty(shape or (1,), dtype=dt).strides if shape else ()
        layout = "C" if strides is None or tuple(strides) == tuple(c_strides) else "A"
        return types.Array(typeof(dt.type(0)), len(shape), layout)
    if hasattr(value, "copy_to_host"):  # the simulator's device arrays
        return typeof(value.copy_to_host())
    raise TypeError(f"ac.inspect: cannot type argument {value!r}; pass a Numba type instead")


def _signature(kernel: Any, args: tuple) -> tuple:
    if len(args) == 1 and isinstance(args[0], (tuple, list)) and all(_is_type(a) for a in args[0]):
        args = tuple(args[0])
    if not args:
        sigs = list(getattr(kernel, "overloads", {}) or {})
        if sigs:
            return tuple(sigs[0])
        raise TypeError("ac.inspect: give the kernel's argument types or example arguments, "
                        "e.g. ac.inspect(kernel, a, b) or ac.inspect(kernel, types.float32[:, ::1], ...)")
    return tuple(_argtype(a) for a in args)


def _is_type(a: Any) -> bool:
    from numba.core import types

    return isinstance(a, types.Type)


def _simulator_on() -> bool:
    from numba.core import config

    return bool(config.ENABLE_CUDASIM)


def compile_kernel_ptx(pyfunc, argtypes: tuple, cc: tuple[int, int], fastmath: bool = False) -> str:
    """PTX of ``pyfunc`` as a kernel for ``argtypes`` with line information."""
    if _simulator_on():
        return _compile_elsewhere(pyfunc, argtypes, cc, fastmath)
    from numba import cuda

    ptx, _ = cuda.compile_ptx(pyfunc, argtypes, cc=cc, lineinfo=True, fastmath=fastmath)
    return ptx


def inspect(kernel_or_pyfunc: Any, *argtypes_or_args: Any, cc: tuple[int, int] | None = None) -> InspectReport:
    """Compile a kernel for ``cc`` without launching it and report its asynchronous operations.

    - ``kernel_or_pyfunc``: a ``@cuda.jit`` kernel or the plain Python function.
    - ``argtypes_or_args``: Numba types (``types.float32[:, ::1]``) or example
      arguments (NumPy or device arrays, scalars), typed as a launch would
      type them; leave them out for a kernel compiled with a signature.
    - ``cc``: the compute capability to compile for, default (9, 0).  No GPU
      is needed; an instruction the target lacks is the usual compile error.

    The report lists every asynchronous PTX instruction with its count and
    the PTX ISA and sm it needs, the declared cluster shape, static shared
    memory, ptxas's registers/shared memory/spills (when ptxas is
    installed), and the PTX lines of those instructions under their Python
    source lines (``report.source_listing()``).  It prints as text and
    renders as a table in Jupyter.

    Example::

        from numba import cuda, types
        import numba_asynccopy as ac

        @cuda.jit
        def k(A, B):
            sh = cuda.shared.array((64, 4), np.float32, alignment=16)
            ac.cp_async(sh[cuda.threadIdx.x, :], A[cuda.threadIdx.x, :], 16)
            ac.commit_group()
            ac.wait_group(0)
            ...

        report = ac.inspect(k, types.float32[:, ::1], types.float32[:, ::1], cc=(8, 0))
        print(report)                       # or just `report` in a notebook
        report.count("cp.async.cg")         # -> 1
    """
    from . import toolchain

    cc = tuple(cc) if cc is not None else DEFAULT_CC
    if len(cc) != 2:
        raise ValueError(f"ac.inspect: cc must be (major, minor), got {cc!r}")
    pyfunc = _pyfunc(kernel_or_pyfunc)
    argtypes = _signature(kernel_or_pyfunc, argtypes_or_args)
    fastmath = bool(getattr(kernel_or_pyfunc, "targetoptions", {}).get("fastmath", False))
    ptx = compile_kernel_ptx(pyfunc, argtypes, cc, fastmath)

    lines, sreg_forms = parse_ptx(ptx)
    shape, explicit, cluster_form = _cluster(ptx)
    static, dynamic = _shared(ptx)
    resources = log = err = None
    try:
        _, log = toolchain.assemble(ptx, verbose=True)
        resources = parse_ptxas(log)
        if resources is None:
            err = "ptxas printed no resource usage"
    except toolchain.ToolMissing as e:
        err = str(e)
    except RuntimeError as e:  # an older ptxas than NVVM, say: report, don't fail
        err = str(e).strip().splitlines()[-1] if str(e).strip() else "ptxas failed"
    return InspectReport(
        name=pyfunc.__qualname__, argtypes=argtypes, cc=cc, ptx=ptx,
        instructions=_tally(lines, sreg_forms), lines=lines,
        cluster=shape, explicit_cluster=explicit, cluster_form=cluster_form,
        static_shared_bytes=static, dynamic_shared=dynamic,
        resources=resources, ptxas_log=log, ptxas_error=err,
    )


# --- compiling from source in a fresh interpreter (simulator on) ---------------

_CHILD = r"""
import json, pickle, sys
head = sys.stdin.buffer.readline()
sys.path[:0] = [p for p in json.loads(head) if p not in sys.path]
payload = pickle.loads(sys.stdin.buffer.read())
from numba_asynccopy.inspect import _child_compile
sys.stdout.write(json.dumps({"ptx": _child_compile(payload)}))
"""


def _portable(fn) -> dict:
    """The source, globals and closure of ``fn``, to rebuild it elsewhere."""
    try:
        src_lines, first = _pyinspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise RuntimeError(
            f"ac.inspect: the simulator is on (NUMBA_ENABLE_CUDASIM=1), so `{fn.__qualname__}` must "
            f"be compiled from its source in another interpreter, and its source is unavailable: {e}"
        ) from None
    names: set[str] = set()

    def collect(code):
        names.update(code.co_names)
        for c in code.co_consts:
            if isinstance(c, _pytypes.CodeType):
                collect(c)

    collect(fn.__code__)
    env: dict[str, tuple] = {}
    values = {n: fn.__globals__[n] for n in names if n in fn.__globals__}
    if fn.__closure__:
        for n, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            values[n] = cell.cell_contents
    skipped = []
    for n, v in values.items():
        if isinstance(v, _pytypes.ModuleType):
            env[n] = ("module", v.__name__)
            continue
        inner = getattr(v, "fn", None) or getattr(v, "py_func", None)
        if isinstance(inner, _pytypes.FunctionType):  # a device function
            env[n] = ("device", _portable(inner))
            continue
        try:
            pickle.dumps(v)
            env[n] = ("value", v)
        except Exception:
            skipped.append(n)
    return {
        "name": fn.__name__, "source": textwrap.dedent("".join(src_lines)),
        "filename": fn.__code__.co_filename, "first": first, "env": env, "skipped": skipped,
    }


def _rebuild(p: dict):
    import importlib

    from numba import cuda

    g: dict[str, Any] = {"__name__": "__ac_inspect__"}
    for n, (kind, v) in p["env"].items():
        if kind == "module":
            g[n] = importlib.import_module(v)
        elif kind == "device":
            # inlined: a device function compiled on its own asks the current
            # device for its compute capability, and the simulator's machine
            # may have no GPU
            g[n] = cuda.jit(device=True, inline="always")(_rebuild(v))
        else:
            g[n] = v
    tree = ast.parse(p["source"])
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.decorator_list = []  # the function itself, not cuda.jit's wrapper
    ast.increment_lineno(tree, p["first"] - 1)
    exec(compile(tree, p["filename"], "exec"), g)
    return g[p["name"]]


def _child_compile(payload: dict) -> str:
    import numba_asynccopy as ac

    if payload.get("checked") is not None:
        ac.set_checked(payload["checked"])
    fn = _rebuild(payload["fn"])
    try:
        return compile_kernel_ptx(fn, payload["argtypes"], payload["cc"], payload["fastmath"])
    except NameError as e:
        skipped = payload["fn"]["skipped"]
        raise NameError(f"{e} (globals that could not be sent: {skipped})") from None


def _compile_elsewhere(pyfunc, argtypes: tuple, cc: tuple[int, int], fastmath: bool) -> str:
    from . import checked

    payload = {"fn": _portable(pyfunc), "argtypes": argtypes, "cc": cc, "fastmath": fastmath,
               "checked": checked.is_checked()}
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    data = json.dumps([p for p in sys.path if p]).encode() + b"\n" + pickle.dumps(payload)
    proc = subprocess.run([sys.executable, "-c", _CHILD], input=data, capture_output=True,
                          env=env, timeout=600)
    if proc.returncode:
        err = proc.stderr.decode(errors="replace").strip()
        last = err.splitlines()[-1] if err else f"exit status {proc.returncode}"
        raise RuntimeError(f"ac.inspect: compiling `{pyfunc.__qualname__}` outside the simulator "
                           f"failed: {last}")
    return json.loads(proc.stdout.decode())["ptx"]
