"""Compile-only helpers for the CPU layer."""

from __future__ import annotations

import re
import textwrap

from numba import cuda


def ptx_of(fn, sig, cc=(9, 0)) -> str:
    ptx, _ = cuda.compile_ptx(fn, sig, cc=cc)
    return ptx


def kernel_from_source(src: str, name: str = "k", extra_globals: dict | None = None):
    """Build a Python function from source text (one kernel per option set)."""
    import numpy as np

    import numba_asynccopy as ac

    g = {"cuda": cuda, "np": np, "ac": ac}
    g.update(extra_globals or {})
    exec(compile(textwrap.dedent(src), f"<kernel {name}>", "exec"), g)
    return g[name]


def instructions(ptx: str, opcode_regex: str) -> list[str]:
    """Every PTX instruction whose text matches ``opcode_regex`` at its start
    (predicate guard stripped; one whitespace-normalised string each)."""
    out = []
    ptx = re.sub(r"//[^\n]*", "", ptx)  # comments
    ptx = re.sub(r"^\s*\$?[\w.]+:(?!:)", "", ptx, flags=re.M)  # labels, not "::"
    for stmt in re.split(r"[;{}]", ptx):
        s = stmt.strip()
        s = re.sub(r"^@!?%?\w+\s+", "", s)
        if re.match(opcode_regex, s):
            out.append(re.sub(r"\s+", " ", s))
    return out
