"""Vector loads/stores and chunk views compile without a GPU: one vector
instruction per access in the PTX for global and shared memory, one 64- or
128-bit instruction in the SASS, compile-time errors that name the
argument, and checked-mode traps (absent without checked mode)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from numba import cuda, types

import numba_asynccopy as ac
from numba_asynccopy import toolchain

from ..conftest import tool_missing
from .helpers import instructions, kernel_from_source, ptx_of

# (load, store, dtype, n): every function at every width it takes
CASES = [
    ("load4", "store4", "float32", 4),
    ("load4", "store4", "int32", 4),
    ("load2", "store2", "float32", 2),
    ("load2", "store2", "uint32", 2),
    ("load_vec", "store_vec", "float32", 4),
    ("load_vec", "store_vec", "float32", 2),
    ("load_vec", "store_vec", "float16", 8),
    ("load_vec", "store_vec", "int16", 4),
    ("load_vec", "store_vec", "float64", 2),
    ("load_vec", "store_vec", "int64", 2),
]


def case_id(c):
    return f"{c[0]}_{c[2]}x{c[3]}"


def round_trip_source(load: str, store: str, dtype: str, n: int) -> str:
    """global -> registers -> shared -> registers -> global, one access each."""
    extra = f", {n}" if load == "load_vec" else ""
    return f"""
def k(A, B):
    t = cuda.threadIdx.x
    sh = cuda.shared.array((32, {2 * n}), np.{dtype}, alignment=16)
    v = ac.{load}(A, (t, {n}){extra})
    ac.{store}(sh, (31 - t, {n}), v)
    cuda.syncthreads()
    w = ac.{load}(sh, (t, {n}){extra})
    ac.{store}(B, (t, 0), w)
"""


def compile_case(c, checked=False) -> str:
    load, store, dtype, n = c
    fn = kernel_from_source(round_trip_source(*c))
    ty = getattr(types, dtype)[:, ::1]
    with ac.checked_mode(checked):
        return ptx_of(fn, (ty, ty))


def vector_suffix(dtype: str, n: int) -> tuple[str, str]:
    """The PTX vector form: 2-byte elements move as 32-bit words."""
    size = np.dtype(dtype).itemsize
    if size == 2:
        return f"v{n // 2}", "u32"
    kind = {"f": "f", "i": "u", "u": "u"}[np.dtype(dtype).kind]
    return f"v{n}", f"{kind}{8 * size}"


def sass_ops(text: str) -> list[str]:
    try:
        cubin, log = toolchain.assemble(text, verbose=True)
        return toolchain.sass_opcodes(toolchain.disassemble(cubin))
    except toolchain.ToolMissing as e:
        tool_missing(e)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_one_vector_instruction_per_access_ptx_and_sass(case):
    _, _, dtype, n = case
    text = compile_case(case)
    vec, kind = vector_suffix(dtype, n)
    for op in ("ld.global", "st.shared", "ld.shared", "st.global"):
        found = instructions(text, rf"{re.escape(op)}\.")
        assert [i.split()[0] for i in found] == [f"{op}.{vec}.{kind}"], (op, found)
    assert not instructions(text, r"(ld|st)\.(global|shared)\.(f|u|s|b)\d+ ")  # no scalar access
    assert "ld.local" not in text and "st.local" not in text
    assert "trap" not in text
    bits = 8 * np.dtype(dtype).itemsize * n
    ops = [o for o in sass_ops(text) if o.startswith(("LDG", "STG", "LDS", "STS"))]
    want = [f"LDG.E.{bits}", f"STS.{bits}", f"LDS.{bits}", f"STG.E.{bits}"]
    assert sorted(ops) == sorted(want), ops


def test_one_dimensional_arrays_take_a_bare_index():
    def k(A, B):
        t = cuda.threadIdx.x
        ac.store4(B, 4 * t, ac.load4(A, 4 * t))
        ac.store_vec(B, 128 + 2 * t, ac.load_vec(A, 128 + 2 * t, 2))

    text = ptx_of(k, (types.float32[::1], types.float32[::1]))
    assert [i.split()[0] for i in instructions(text, r"ld\.global")] == [
        "ld.global.v4.f32", "ld.global.v2.f32"]
    assert [i.split()[0] for i in instructions(text, r"st\.global")] == [
        "st.global.v4.f32", "st.global.v2.f32"]


def test_store_casts_each_value_to_the_dtype():
    def k(B, x):
        ac.store4(B, (0, 0), (x, 1, 2.5, True))

    text = ptx_of(k, (types.float32[:, ::1], types.int64))
    assert [i.split()[0] for i in instructions(text, r"st\.global")] == ["st.global.v4.f32"]


def test_chunk_view_is_one_chunk_without_slice_arithmetic():
    def k(a, h):
        sh = cuda.shared.array((8, 16), np.float32, alignment=16)
        shh = cuda.shared.array((8, 8), np.float16, alignment=16)
        i = cuda.threadIdx.x
        ac.cp_async(ac.chunk_view(sh, (i, 0), 4), ac.chunk_view(a, (i, 4 * i), 4), 16)
        ac.cp_async(ac.chunk_view(sh, (i, 4), 2), ac.chunk_view(a, (i, 2 * i), 2), 8)
        ac.cp_async(ac.chunk_view(sh, (i, 6), 1), ac.chunk_view(a, (i, i), 1), 4)
        # 8 float16 in one 16-byte chunk
        ac.cp_async(ac.chunk_view(shh, (i, 0), 8), ac.chunk_view(h, (i, 8 * i), 8), 16)
        ac.commit_group()

    text = ptx_of(k, (types.float32[:, ::1], types.float16[:, ::1]))
    copies = [c.split()[0] + c.split(",")[-1] for c in instructions(text, r"cp\.async\.c[ag]")]
    assert copies == ["cp.async.cg.shared.global 16", "cp.async.ca.shared.global 8",
                      "cp.async.ca.shared.global 4", "cp.async.cg.shared.global 16"], copies
    assert not instructions(text, r"bra")  # no chunk loop, no wraparound branches


def test_chunk_view_of_several_chunks_unrolls_the_chunks():
    def k(a):
        sh = cuda.shared.array((8, 16), np.float32, alignment=16)
        i = cuda.threadIdx.x
        # 64 bytes: four 16-byte chunks, a compile-time count
        ac.cp_async(ac.chunk_view(sh, (i, 0), 16), ac.chunk_view(a, (i, 0), 16), 16)
        ac.commit_group()

    text = ptx_of(k, (types.float32[:, ::1],))
    assert len(instructions(text, r"cp\.async\.cg\.shared\.global")) == 4
    assert not instructions(text, r"bra")


def test_view4_is_chunk_view_of_four():
    def k(a):
        sh = cuda.shared.array((8, 4), np.float32, alignment=16)
        i = cuda.threadIdx.x
        ac.cp_async(ac.view4(sh, (i, 0)), ac.view4(a, (i, 4 * i)), 16)
        ac.commit_group()

    def k2(a):
        sh = cuda.shared.array((8, 4), np.float32, alignment=16)
        i = cuda.threadIdx.x
        ac.cp_async(ac.chunk_view(sh, (i, 0), 4), ac.chunk_view(a, (i, 4 * i), 4), 16)
        ac.commit_group()

    sig = (types.float32[:, ::1],)

    def body(fn):  # kernel and shared-array names differ
        return [re.sub(r"_Z\w+|_cudapy_smem_\d+", "NAME", line)
                for line in ptx_of(fn, sig).splitlines()]

    assert body(k) == body(k2)


def test_examples_reach_the_public_functions():
    # the examples' kernels and the package use one set of intrinsics
    from numba_asynccopy.examples import exchange, sgemm, staged_copy, stencil

    assert stencil.load4 is ac.load4 and stencil.view4 is ac.view4
    assert sgemm.store4 is ac.store4 and exchange.load4 is ac.load4
    assert staged_copy.view4 is ac.view4


# --- compile-time errors name the argument ------------------------------------------------

ERRORS = [
    ("ac.load_vec(a, (0, 0), 3)", "float32[:, ::1]",
     "load_vec: `n`=3 elements of `arr` (float32, 4 bytes each) make 12 bytes; "
     "a vector access moves 8 or 16 bytes"),
    ("ac.load_vec(a, (0, 0), x)", "float32[:, ::1]",
     "load_vec: `n` must be a compile-time constant (int literal), got a run-time int64"),
    ("ac.load_vec(a, (0, 0), 4)", "uint8[:, ::1]",
     "load_vec: `arr` must be an array of a 2-, 4- or 8-byte integer or float dtype"),
    ("ac.load_vec(a, (0, 0), 2)", "complex64[:, ::1]",
     "load_vec: `arr` must be an array of a 2-, 4- or 8-byte integer or float dtype"),
    ("ac.load_vec(a, (0,), 4)", "float32[:, ::1]",
     "load_vec: `idx` must be 2 integer index(es) of `arr`"),
    ("ac.load4(a, (0, 0.5))", "float32[:, ::1]",
     "load4: `idx` must be 2 integer index(es) of `arr`"),
    ("ac.load4(a, 0)", "float64[::1]",
     "load4: `arr` must be an array of a 4-byte dtype (float32, int32, uint32)"),
    ("ac.load2(a, 0)", "float16[::1]",
     "load2: `arr` must be an array of a 4-byte dtype (float32, int32, uint32)"),
    ("ac.load4(x, 0)", "float32[::1]",
     "load4: `arr` must be an array of a 4-byte dtype"),
    ("ac.store4(a, (0, 0), (1.0, 2.0, 3.0, 4.0))", "float32[::1, :]",
     "store4: `arr` is Fortran-ordered; its last axis is not contiguous"),
    ("ac.store4(a, 0, (1.0, 2.0))", "float32[::1]",
     "store4: `values` must be a tuple of 4 numbers"),
    ("ac.store_vec(a, 0, (1.0, 2.0))", "Array(types.float32, 1, 'C', readonly=True)",
     "store_vec: `arr` is read-only"),
    ("ac.store2(a, 0, 1.0)", "float32[::1]",
     "store2: `values` must be a tuple of 2 numbers"),
    ("ac.store_vec(a, 0, (1.0, 2.0, 3.0))", "float32[::1]",
     "store_vec: `values` holds 3 elements of `arr` (float32, 4 bytes each): 12 bytes"),
    ("ac.store_vec(a, (0, 0), (1.0, 2.0))", "float32[::1]",
     "store_vec: `idx` must be 1 integer index(es) of `arr`"),
    ("ac.chunk_view(a, 0, 3)", "float32[::1]",
     "chunk_view: `n`=3 elements of `arr` (float32) make 12 bytes; a chunk view holds 4, 8 "
     "or a multiple of 16 bytes"),
    ("ac.chunk_view(a, 0, x)", "float32[::1]",
     "chunk_view: `n` must be a compile-time constant"),
    ("ac.chunk_view(a, (0, 0), 4)", "float32[::1]",
     "chunk_view: `idx` must be 1 integer index(es) of `arr`"),
    ("ac.view4(a, (0.5,))", "float32[::1]",
     "view4: `idx` must be 1 integer index"),
]


@pytest.mark.parametrize("stmt,arr,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_compile_time_errors_name_the_argument(stmt, arr, message):
    fn = kernel_from_source(f"def k(a, x):\n    {stmt}\n")
    aty = eval(f"types.{arr}", {"types": types})
    with pytest.raises(Exception, match=re.escape(message)):
        ptx_of(fn, (aty, types.int64))


# --- checked mode -------------------------------------------------------------------------

def trap_messages(text: str) -> list[str]:
    """The printf texts of a kernel's checked-mode traps."""
    out = []
    for m in re.finditer(r"\.b8 __conststring__\S*\[\d+\] = \{([\d, ]+)\};", text):
        out.append(bytes(int(b) for b in m.group(1).split(",")).decode().rstrip("\x00"))
    return [t for t in out if t.startswith("numba_asynccopy checked mode: ")]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_checked_mode_traps_on_each_rule(case):
    load, store, dtype, n = case
    nbytes = n * np.dtype(dtype).itemsize
    text = compile_case(case, checked=True)
    assert instructions(text, r"trap")
    msgs = trap_messages(text)
    for api in (load, store):
        prefix = f"numba_asynccopy checked mode: {api}: "
        assert any(m.startswith(prefix + f"the {nbytes} bytes at `arr[idx]` (0x%llx) are not "
                                f"{nbytes}-byte aligned") for m in msgs), msgs
        assert any(m.startswith(prefix + "`idx`[0]=%lld is outside axis 0 of `arr` (length %lld)")
                   for m in msgs), msgs
        last = (f"`idx`[1]=%lld: the {n} elements from there are not all inside the last axis "
                "of `arr` (length %lld)")
        assert any(m.startswith(prefix + last) for m in msgs), msgs
    # C-contiguous arrays need no stride check
    assert not [m for m in msgs if "not contiguous" in m], msgs


def test_checked_mode_strided_views_check_the_stride_and_chunk_view_alignment():
    def k(a, b):
        sh = cuda.shared.array((8, 64), np.float32, alignment=16)
        i = cuda.threadIdx.x
        ac.cp_async(ac.chunk_view(sh, (i, 0), 16), ac.chunk_view(a, i, 16), 16)
        v = ac.load2(b, 2 * i)
        ac.store2(b, 2 * i, v)

    with ac.checked_mode():
        text = ptx_of(k, (types.float32[::1], types.Array(types.float32, 1, "A")))
    msgs = trap_messages(text)
    assert any(m.startswith("numba_asynccopy checked mode: chunk_view: the 64 bytes at `arr[idx]` "
                            "(0x%llx) are not 16-byte aligned") for m in msgs), msgs
    assert any(m.startswith("numba_asynccopy checked mode: chunk_view: `idx`=%lld: the 16 elements")
               for m in msgs), msgs
    assert any(m.startswith("numba_asynccopy checked mode: load2: the last axis of `arr` is not "
                            "contiguous (stride %lld bytes, itemsize 4)") for m in msgs), msgs
    # the 1-D C-contiguous chunk_view source needs no stride check
    assert not [m for m in msgs if "chunk_view: the last axis" in m], msgs
