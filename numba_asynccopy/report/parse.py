"""PTX and ptxas text: statements with their source lines, the cluster and
shared memory a kernel declares, ptxas's resource usage.

Nothing here knows the forms table; which statements are asynchronous is
decided in :mod:`.match`.
"""

from __future__ import annotations

import linecache
import os
import re
from dataclasses import dataclass
from typing import Iterator


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


_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+(?:.*\binlined_at\s+(\d+)\s+(\d+))?")
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', re.M)
#: nothing yet of a statement but perhaps its label: a brace here opens or closes a block
_LABEL_ONLY = re.compile(r"\s*(?:\$?[\w.]+:\s*)?$")


def ptx_num(v: str | None) -> float:
    """A PTX ISA version as a number that sorts right (``"8.10"`` > ``"8.3"``)."""
    if not v:
        return 0.0
    major, _, minor = v.partition(".")
    return int(major) + int(minor or 0) / 100


def ptx_version(ptx: str) -> str | None:
    """The ``.version`` the PTX declares, e.g. ``"8.5"``."""
    m = re.search(r"^\s*\.version\s+(\d+\.\d+)", ptx, re.M)
    return m.group(1) if m else None


def _split(line: str) -> list[str]:
    """The statements of one PTX line, split at ``;`` and at the braces of
    an asm block (``{ ...; ...; }``).  A brace inside a statement is an
    operand (a vector ``{%r1, %r2}``, the coordinates of a tensor copy
    ``[tmap, {%r1, %r2}]``) and stays in its text."""
    out, cur = [], ""
    for ch in line:
        if ch == ";" or (ch in "{}" and _LABEL_ONLY.match(cur)):
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def statements(line: str) -> list[tuple[str, str]]:
    """(text, opcode) of each instruction of one PTX line (several when an
    asm block is ``{ ...; ...; }``); labels are dropped, a predicate guard
    stays in the text but not in the opcode."""
    line = line.split("//", 1)[0]
    out = []
    for stmt in _split(line):
        s = re.sub(r"\s+", " ", stmt.strip())
        s = re.sub(r"^\$?[\w.]+:(?!:)\s*", "", s)  # a label, not "::"
        bare = re.sub(r"^@!?%?\w+\s+", "", s)
        if bare and not bare.startswith("."):
            out.append((s, bare.split()[0]))
    return out


def _source_name(path: str) -> str:
    """NVVM prefixes pseudo file names (``<ipython-input-3>``, exec'd
    cells) with the working directory; undo that so linecache finds them."""
    base = os.path.basename(path)
    if base.startswith("<") and not os.path.exists(path):
        return base
    return path


def _in_package(path: str) -> bool:
    return os.path.abspath(path).startswith(_PKG_DIR + os.sep)


def located_statements(ptx: str) -> Iterator[tuple[str, str, str | None, int | None]]:
    """(text, opcode, source file, source line) of every instruction of ``ptx``, in order."""
    files = {int(n): _source_name(p) for n, p in _FILE.findall(ptx)}
    cur: tuple[str | None, int | None] = (None, None)
    for raw in ptx.splitlines():
        m = _LOC.match(raw)
        if m:
            n, ln = int(m.group(1)), int(m.group(2))
            f = files.get(n)
            if m.group(3) and f and _in_package(f):
                # a line of the package inlined into the user's code: the user's call
                n, ln = int(m.group(3)), int(m.group(4))
                f = files.get(n)
            cur = (f, ln or None)
            continue
        for text, opcode in statements(raw):
            yield text, opcode, cur[0], cur[1]


def cluster_shape(ptx: str) -> tuple[tuple[int, int, int] | None, bool]:
    """The ``.reqnctapercluster`` shape (None when absent) and whether the
    kernel is ``.explicitcluster``."""
    m = re.search(r"\.reqnctapercluster\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", ptx)
    shape = tuple(int(g or 1) for g in m.groups()) if m else None
    explicit = bool(re.search(r"\.explicitcluster\b", ptx))
    return shape, explicit  # type: ignore[return-value]


def shared_memory(ptx: str) -> tuple[int, bool]:
    """Bytes of static shared memory, and whether dynamic shared memory is declared."""
    static = 0
    dynamic = False
    for m in re.finditer(r"^\s*(\.extern\s+)?(?:\.visible\s+|\.weak\s+)?\.shared\b[^\[;]*\[(\d*)\]", ptx, re.M):
        if m.group(1) or not m.group(2):
            dynamic = True
        else:
            static += int(m.group(2))
    return static, dynamic


def parse_ptxas(log: str) -> Resources | None:
    """Registers, shared memory, spills and barriers from ``ptxas -v``.

    Example::

        >>> parse_ptxas("ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem").registers
        40
    """
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
