"""Compile-only helpers for the CPU layer."""

from __future__ import annotations

import re
import subprocess
import tempfile
import textwrap
from pathlib import Path

import pytest
from numba import cuda, types


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


def compile_twin(name: str | None = None, timeout: int = 600) -> tuple[subprocess.CompletedProcess, bytes]:
    """``nvcc -O3 -cubin -Xptxas -v`` of one benchmark twin source (the file
    ``name`` beside ``bench/twins.cu``, that file itself by default) for
    sm_90a: (the finished process, the cubin's bytes, empty where nvcc
    failed).  Skips the test where nvcc is not found."""
    from numba_asynccopy.bench.twins import SOURCE, find_nvcc

    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found")
    src = SOURCE if name is None else SOURCE.with_name(name)
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "t.cubin"
        proc = subprocess.run([nvcc, "-O3", "-std=c++17", "-cubin", "-Xptxas", "-v",
                               "-gencode=arch=compute_90a,code=sm_90a", "-o", str(cubin),
                               str(src)], capture_output=True, text=True, timeout=timeout)
        return proc, cubin.read_bytes() if proc.returncode == 0 else b""


_OUT_TYPES = {"float32": types.float32, "float16": types.float16, "bf16": types.uint16}


def gemm_sass(kernel, threads: int, out: str, *extra) -> tuple[str, str, str]:
    """(PTX, SASS, ptxas log) of a TMA GEMM example's kernel for sm_90a with
    launch bounds ``threads``: signature (tmap A, tmap B, C of ``out``
    elements, M, *extra)."""
    sig = (types.uint64[::1], types.uint64[::1], _OUT_TYPES[out][:, ::1], types.int64, *extra)
    ptx = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0, "a"), launch_bounds=(threads, 1))[0]
    sass, log = sass_of(ptx, verbose=True)
    return ptx, sass, log


def local_memory_lines(sass: str) -> tuple[list[str], list[int], int]:
    """(the SASS lines, the indices of those with LDL/STL, the index of the
    first wait that drains every wgmma group)."""
    lines = sass.splitlines()
    local = [i for i, l in enumerate(lines) if "LDL" in l or "STL" in l]
    drained = next(i for i, l in enumerate(lines) if "WARPGROUP.DEPBAR.LE gsb0, 0x0" in l)
    return lines, local, drained
