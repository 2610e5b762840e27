"""The ```python blocks of README.md and docs/**/*.md, and how each runs.

Convention (docs/running-tests.md): every block is a complete program with
its imports, data and launch, and runs as it is; a block whose first line
is ``# fragment`` is only compiled; one whose first line is ``# gpu-only``
runs only on a GPU (the GPU suite), not in the simulator.

Run as a script (``python -m tests.docs.docblocks FILE``) it executes the
runnable blocks of FILE, each in a fresh namespace, and prints one JSON
line per block: its line, its kind, and the error if it failed.
"""

from __future__ import annotations

import json
import linecache
import os
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```python[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                   re.M | re.S)


@dataclass(frozen=True)
class Block:
    path: str  # relative to the repository root
    line: int  # of the opening fence
    source: str

    @property
    def kind(self) -> str:
        first = self.source.lstrip().split("\n", 1)[0].strip()
        if first == "# fragment":
            return "fragment"
        if first == "# gpu-only":
            return "gpu-only"
        return "run"

    @property
    def name(self) -> str:
        return f"{self.path}:{self.line}"


def doc_files() -> list[Path]:
    """README.md and every Markdown page of the docs site."""
    files = [ROOT / "README.md"]
    files += sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)
    return files


def blocks(path: Path) -> list[Block]:
    path = Path(path).resolve()
    text = path.read_text()
    out = []
    for m in FENCE.finditer(text):
        indent = m.group("indent")
        body = "".join(l[len(indent):] if l.startswith(indent) else l
                       for l in m.group("body").splitlines(keepends=True))
        out.append(Block(str(path.relative_to(ROOT)), text.count("\n", 0, m.start()) + 1, body))
    return out


def all_blocks() -> list[Block]:
    return [b for p in doc_files() for b in blocks(p)]


def run_file(path: Path, gpu: bool) -> list[dict]:
    """Execute the runnable blocks of ``path`` (``gpu``: the gpu-only ones too)."""
    results = []
    for b in blocks(path):
        kind = b.kind
        if kind == "fragment" or (kind == "gpu-only" and not gpu):
            continue
        try:
            # in linecache, as a notebook cell is: the simulator reads a
            # kernel's source (cluster_dims) before its launch
            linecache.cache[b.name] = (len(b.source), None, b.source.splitlines(True), b.name)
            code = compile(b.source, b.name, "exec")
            exec(code, {"__name__": "__docblock__"})
            results.append({"block": b.name, "kind": kind, "error": None})
        except BaseException:  # report the block's own traceback to the test
            results.append({"block": b.name, "kind": kind, "error": traceback.format_exc()})
    return results


if __name__ == "__main__":
    gpu = os.environ.get("NUMBA_ENABLE_CUDASIM") != "1"
    for r in run_file(Path(sys.argv[1]), gpu):
        print("DOCBLOCK " + json.dumps(r), flush=True)
