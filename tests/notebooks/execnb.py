"""Run a notebook's code cells without Jupyter: ``python -m tests.notebooks.execnb NB.ipynb``.

The GPU machine has no Jupyter packages; this executes each code cell in
one fresh namespace, in order, from the notebook's folder (as a kernel
would), prints each cell's output and the value of its last expression,
and exits non-zero at the first error, naming the cell.
"""

from __future__ import annotations

import ast
import json
import linecache
import os
import sys
import traceback
from pathlib import Path


def _display(*objs) -> None:
    for o in objs:
        print(o)


def run(path: Path) -> int:
    cells = json.loads(path.read_text())["cells"]
    os.chdir(path.parent)
    sys.path.insert(0, str(path.parent))
    ns: dict = {"__name__": "__main__", "display": _display}
    n = 0
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        n += 1
        src = "".join(cell["source"])
        name = f"<{path.name} cell {i}>"
        linecache.cache[name] = (len(src), None, src.splitlines(True), name)  # for inspect.getsource
        print(f"--- [{path.name}] cell {i}", flush=True)
        try:
            tree = ast.parse(src, name)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, name, "exec"), ns)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), name, "eval"), ns)
                if value is not None:
                    print(value)
        except BaseException:
            traceback.print_exc()
            print(f"FAILED: {path.name} cell {i}", flush=True)
            return 1
    print(f"OK: {path.name}, {n} code cells", flush=True)
    return 0


if __name__ == "__main__":
    if os.environ.get("DIFFERENTIAL_RECORD") and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        # the differential census records every simulated launch (tests/differential_kernels.py)
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
        from tests.differential_kernels import install_if_asked

        os.environ["DIFFERENTIAL_SOURCE"] = Path(sys.argv[1]).name
        install_if_asked()
    sys.exit(run(Path(sys.argv[1]).resolve()))
