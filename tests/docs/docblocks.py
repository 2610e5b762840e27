"""The ```python blocks of README.md and docs/**/*.md, and how each runs.

Convention (docs/running-tests.md): every block is a complete program with
its imports, data and launch, and runs as it is; a block whose first line
is ``# fragment`` is not run but type-checked: its statements become the
body of a kernel whose parameters and locals are the names fragments use
(:data:`FRAME`), compiled for sm_90a (:func:`compile_fragment`: a misspelled
intrinsic, a wrong keyword or a wrong argument type fails); one whose first
line is ``# gpu-only`` runs only on a GPU (the GPU suite), not in the
simulator.

Run as a script (``python -m tests.docs.docblocks FILE``) it executes the
runnable blocks of FILE, each in a fresh namespace, and prints one JSON
line per block: its line, its kind, and the error if it failed.
"""

from __future__ import annotations

import ast
import builtins
import json
import linecache
import os
import re
import sys
import time
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


# The names a ``# fragment`` may use without defining them, as a kernel
# declares them: the parameters (with their Numba types) and the locals the
# frame sets before the fragment's statements.  A fragment that uses another
# name fails with that name (add it here, with its type).
FRAME_PARAMS = {  # name: Numba type, as text
    "X": "float32[:, ::1]",   # a global input matrix
    "ntiles": "int32",        # a tile count
    "r": "int32",             # a row of a shared tile
    "q": "int32",             # a 16-byte chunk of that row
}
FRAME_LOCALS = {
    "sh": "cuda.shared.array((8, 4, 4), np.float32)",  # a shared tile ring
}
FRAME_GLOBALS = ("ac", "cuda", "np")
FRAGMENT_CC = (9, 0, "a")


def fragment_source(source: str) -> str:
    """The kernel that holds fragment ``source``: its statements (a bare
    ``...`` as ``pass``) inside :data:`FRAME`'s parameters and locals."""
    tree = ast.parse(source)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    defined = {n.id for n in ast.walk(tree)
               if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    free = sorted(names - defined - set(FRAME_PARAMS) - set(FRAME_LOCALS)
                  - set(FRAME_GLOBALS) - set(dir(builtins)))
    if free:
        raise NameError(f"the fragment uses {', '.join(free)}, which neither it nor the "
                        "fragment frame defines (tests/docs/docblocks.py FRAME_PARAMS / "
                        "FRAME_LOCALS)")

    class _Pass(ast.NodeTransformer):  # `...` (the rest of the work) as `pass`
        def visit_Expr(self, node):
            if isinstance(node.value, ast.Constant) and node.value.value is Ellipsis:
                return ast.copy_location(ast.Pass(), node)
            return node

    body = ast.unparse(ast.fix_missing_locations(_Pass().visit(tree)))
    lines = [f"def fragment({', '.join(FRAME_PARAMS)}):"]
    lines += [f"    {name} = {value}" for name, value in FRAME_LOCALS.items()]
    lines += ["    " + line for line in body.splitlines()]
    lines += ["    return"]
    return "\n".join(lines) + "\n"


def compile_fragment(block: Block) -> str:
    """Type-check ``block`` (a ``# fragment``): compile it inside the frame
    for sm_90a and return the PTX.  A Numba ``TypingError`` (an unknown
    intrinsic, keyword or argument type) or a ``NameError`` propagates."""
    import numba
    import numpy as np
    from numba import cuda

    import numba_asynccopy as ac

    src = fragment_source(block.source)
    name = f"<fragment {block.name}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    g = {"ac": ac, "cuda": cuda, "np": np}
    exec(compile(src, name, "exec"), g)
    sig = tuple(eval(t, {"__builtins__": {}}, vars(numba.types)) for t in FRAME_PARAMS.values())
    ptx, _ = cuda.compile_ptx(g["fragment"], sig, cc=FRAGMENT_CC)
    return ptx


def run_file(path: Path, gpu: bool) -> list[dict]:
    """Execute the runnable blocks of ``path`` (``gpu``: the gpu-only ones too)."""
    results = []
    for b in blocks(path):
        kind = b.kind
        if kind == "fragment" or (kind == "gpu-only" and not gpu):
            continue
        t0 = time.perf_counter()
        try:
            # in linecache, as a notebook cell is: the simulator reads a
            # kernel's source (cluster_dims) before its launch
            linecache.cache[b.name] = (len(b.source), None, b.source.splitlines(True), b.name)
            code = compile(b.source, b.name, "exec")
            exec(code, {"__name__": "__docblock__"})
            results.append({"block": b.name, "kind": kind, "error": None})
        except BaseException:  # report the block's own traceback to the test
            results.append({"block": b.name, "kind": kind, "error": traceback.format_exc()})
        results[-1]["seconds"] = round(time.perf_counter() - t0, 2)
    return results


if __name__ == "__main__":
    gpu = os.environ.get("NUMBA_ENABLE_CUDASIM") != "1"
    if not gpu and os.environ.get("DIFFERENTIAL_RECORD"):
        from tests.differential_kernels import install_if_asked

        os.environ["DIFFERENTIAL_SOURCE"] = os.path.relpath(sys.argv[1], ROOT)
        install_if_asked()
    for r in run_file(Path(sys.argv[1]), gpu):
        print("DOCBLOCK " + json.dumps(r), flush=True)
