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


# the tensor-copy tests' kernel: a tensor map, a multicast mask, a cache
# policy, coordinates; the shared tile and two mbarriers
TMA_SIG = ("uint64[::1]", "uint16", "uint64", "int32[::1]")


def tma_kernel_ptx(body: str, tile_shape: tuple, cc=(9, 0), checked: bool = False) -> str:
    """PTX of ``k(tm, m, pol, c)`` holding ``body`` after ``sh`` (a float32
    shared tile of ``tile_shape``, 1024-byte aligned) and ``bar`` (two
    mbarriers); ``checked``: compiled in checked mode."""
    from numba import types

    import numba_asynccopy as ac

    src = f"""
    def k(tm, m, pol, c):
        sh = cuda.shared.array({tuple(tile_shape)}, np.float32, alignment=1024)
        bar = cuda.shared.array(2, np.uint64)
        {body}
    """
    sig = tuple(eval(t, {"__builtins__": {}}, vars(types)) for t in TMA_SIG)
    with ac.checked_mode(checked):
        return ptx_of(kernel_from_source(src), sig, cc=cc)


def whole_instructions(ptx: str, opcode_regex: str) -> list[str]:
    """Whole instructions (braces kept, whitespace normalised) whose opcode
    matches ``opcode_regex``, a predicate guard stripped."""
    return [re.sub(r"\s+", " ", m.group(1)) for m in
            re.finditer(rf"^\s*(?:@!?%?\w+\s+)?((?:{opcode_regex})[^;]*);", ptx, re.M)]


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


def assemble(ptx: str, verbose: bool = False) -> tuple[bytes, str]:
    """ptxas on ``ptx``: (cubin, log).  A missing or mismatched ptxas fails
    where the toolchain is required (``make test``, CI), else skips
    (``tests/conftest.py`` ``tool_missing``)."""
    from numba_asynccopy import toolchain

    from ..conftest import tool_missing

    try:
        return toolchain.assemble(ptx, verbose=verbose)
    except toolchain.ToolMissing as e:
        tool_missing(e)


def sass_of(ptx: str, verbose: bool = True) -> tuple[str, str]:
    """ptxas then nvdisasm on ``ptx``: (SASS text, ptxas log); a missing
    tool as :func:`assemble` says."""
    from numba_asynccopy import toolchain

    from ..conftest import tool_missing

    cubin, log = assemble(ptx, verbose=verbose)
    try:
        return toolchain.disassemble(cubin), log
    except toolchain.ToolMissing as e:
        tool_missing(e)


def sass_opcodes_of(ptx: str) -> list[str]:
    """The SASS opcodes of ``ptx`` (assembled and disassembled)."""
    from numba_asynccopy import toolchain

    return toolchain.sass_opcodes(sass_of(ptx)[0])
