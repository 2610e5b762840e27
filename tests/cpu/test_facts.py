"""What the package tells NVVM (``facts.py``): special-register ranges,
Numba's non-negative extents as assumes, ``range`` increments that do not
overflow, loops kept from run-time unrolling.

Correctness first: numba-cuda's IR of device functions, with every fact the
package adds, is optimized by LLVM at O3 and run on the host
(``hostjit``); the results must be what Python says, for negative indices
(wraparound), negative and empty ranges and ranges at the ends of int64.
Then the PTX: the facts fold what they should (no wraparound for an index
built from ``threadIdx.x``) and nothing else (it stays for ``tid - 16``)."""

from __future__ import annotations

import ctypes
import itertools
import re

import numpy as np
import pytest
from numba import cuda, types

import numba_asynccopy as ac  # noqa: F401  (installs the facts)
from numba_asynccopy import facts, toolchain

from ..conftest import tool_missing
from . import hostjit

I64 = ctypes.c_int64


def _caller(addr, restype, nargs_ctypes):
    proto = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(restype), *nargs_ctypes)(addr)

    def call(*args):
        out = restype()
        status = proto(ctypes.byref(out), *args)
        assert status == 0, status
        return out.value
    return call


def _wrap64(x):
    return (x + 2**63) % 2**64 - 2**63


def range_sum(lo, hi, step):
    s = 0
    c = 0
    last = -1
    for i in range(lo, hi, step):
        s += i
        c += 1
        last = i
    return s * 7 + c * 3 + last


EDGES = [0, 1, -1, 5, -5, 17, 2**62, -2**62, 2**63 - 1, -2**63, 2**63 - 2, -2**63 + 1]
STEPS = [1, -1, 2, -3, 7, 2**61, -2**61, 2**62, 2**63 - 1, -2**63]


def _python_range_sum(lo, hi, step):
    r = range(lo, hi, step)
    last = r[-1] if len(r) else -1
    return _wrap64(_wrap64(sum(r)) * 7 + len(r) * 3 + last)


def _length(lo, hi, st):
    return max(0, (hi - lo + st - (1 if st > 0 else -1)) // st)


def test_range_loops_compute_what_python_says():
    engine, addr, nvvm_ir, _ = hostjit.compile_host(range_sum, types.int64, (types.int64,) * 3)
    assert "add nsw i64" in nvvm_ir  # the package's iternext is the one lowered
    call = _caller(addr, I64, (I64, I64, I64))
    # (numba-cuda's range counts ``stop - start`` in int64: only where that fits)
    cases = [(lo, hi, st) for lo, hi, st in itertools.product(EDGES, EDGES, STEPS)
             if -2**63 <= hi - lo < 2**63 and _length(lo, hi, st) < 5000]
    rng = np.random.default_rng(7)
    cases += [tuple(int(v) for v in rng.integers(-300, 300, 2)) + (int(rng.choice([-7, -2, -1, 1, 3, 9])),)
              for _ in range(300)]
    assert len(cases) > 800
    for lo, hi, st in cases:
        assert call(lo, hi, st) == _python_range_sum(lo, hi, st), (lo, hi, st)
    assert engine


def range_sum32(lo, hi, step):
    s = np.int32(0)
    for i in range(lo, hi, step):
        s += i
    return s


def test_int32_range_loops_compute_what_python_says():
    engine, addr, _, _ = hostjit.compile_host(range_sum32, types.int64, (types.int32,) * 3)
    call = _caller(addr, I64, (ctypes.c_int32,) * 3)
    e32 = [0, 1, -1, 9, -9, 2**30, -2**30, 2**31 - 1, -2**31]
    for lo, hi, st in itertools.product(e32, e32, [1, -1, 3, -4, 2**30, -2**31, 2**31 - 1]):
        if _length(lo, hi, st) < 5000 and -2**31 <= hi - lo < 2**31:
            assert call(lo, hi, st) == sum(range(lo, hi, st)), (lo, hi, st)
    assert engine


def wraparound(a, k):
    t = cuda.threadIdx.x       # [0, 1024) by the package's range
    r = t // 32 - k           # negative for k > t // 32: Python's wraparound
    return a[r] + a[t % 32 - k] * 1000 + a[a.shape[0] - 1 - k] * 1000000


def test_negative_indices_keep_python_semantics():
    engine, addr, nvvm_ir, opt = hostjit.compile_host(
        wraparound, types.int64, (types.int64[::1], types.int64))
    assert re.search(r"sreg\.tid\.x\"?\(\), !range", nvvm_ir)  # the fact is in what NVVM gets
    a = np.arange(40, dtype=np.int64) * 3 + 1
    call = _caller(addr, I64, (ctypes.c_void_p,) * 2 + (I64,) * 2 + (ctypes.c_void_p,) + (I64,) * 3)
    for t in (0, 5, 31, 32, 100, 1023):
        for k in (0, 1, 7, 31, 39):
            hostjit.SREGS["tid.x"] = t
            want = a[t // 32 - k] + a[t % 32 - k] * 1000 + a[a.shape[0] - 1 - k] * 1000000
            assert call(*hostjit.array_args(a), k) == want, (t, k)
    assert engine and opt


def extents(a, b):
    s = 0
    for i in range(-a.shape[0], a.shape[0]):     # negative indices on purpose
        s += a[i] * (i + a.shape[0] + 1)
    return s + b[b.shape[0] // 2 - b.shape[0]]


def test_loops_over_negative_indices_and_extents():
    engine, addr, nvvm_ir, _ = hostjit.compile_host(
        extents, types.int64, (types.int64[::1], types.int64[::1]))
    assert "call void @\"llvm.assume\"" in nvvm_ir or "call void @llvm.assume" in nvvm_ir
    call = _caller(addr, I64, ((ctypes.c_void_p,) * 2 + (I64,) * 2 + (ctypes.c_void_p,) + (I64,) * 2) * 2)
    for n in (1, 2, 7, 64):
        a = np.arange(n, dtype=np.int64) - 3
        b = np.arange(n + 3, dtype=np.int64) * 5
        want = sum(int(a[i]) * (i + n + 1) for i in range(-n, n)) + int(b[b.shape[0] // 2 - b.shape[0]])
        assert call(*hostjit.array_args(a), *hostjit.array_args(b)) == want, n
    assert engine


# --- what NVVM makes of them ------------------------------------------------------------


def _ptx_body(fn, sig):
    ptx = cuda.compile_ptx(fn, sig, cc=(9, 0))[0]
    body = ptx[ptx.index(".entry"):]
    return [ln.strip() for ln in body.splitlines() if ln.strip().endswith(";") and "param" not in ln]


def store_tid(y):
    t = cuda.threadIdx.x
    y[t // 32, t % 32] = 1.0


def store_tid_minus(y):
    t = cuda.threadIdx.x
    y[t // 32 - 16, t % 32] = 1.0


SIG2 = (types.float32[:, ::1],)


def test_an_index_from_threadidx_has_no_wraparound():
    plain = _ptx_body(store_tid, SIG2)
    # neither Python's floor-division/modulo fix-ups nor the negative-index
    # select: an index from tid.x is known to be in [0, 1024)
    assert not [ln for ln in plain if re.match(r"(selp|shr\.s64|setp\.lt\.s64)", ln)], plain


def test_an_index_that_can_be_negative_keeps_it():
    minus = _ptx_body(store_tid_minus, SIG2)
    # t // 32 - 16 is negative for t < 512: the wraparound (index + shape
    # where the index is negative) stays
    assert [ln for ln in minus if re.match(r"(selp|shr\.s64|setp\.lt\.s64)", ln)], minus
    assert len(minus) > len(_ptx_body(store_tid, SIG2))


def test_special_register_ranges_are_the_launch_limits():
    assert facts.SREG_RANGES["tid.x"] == (0, 1024) and facts.SREG_RANGES["tid.z"] == (0, 64)
    assert facts.SREG_RANGES["ntid.x"] == (1, 1025)
    assert facts.SREG_RANGES["ctaid.x"] == (0, 2**31 - 1)
    assert facts.SREG_RANGES["nctaid.y"] == (1, 2**31)


def grid_loop(a, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        a[i] = a[i] * 2.0 + 1.0


def test_range_loops_are_not_unrolled_at_run_time():
    ptx = cuda.compile_ptx(grid_loop, (types.float32[::1], types.int32), cc=(9, 0))[0]
    # NVVM's run-time unrolling would give 4 copies plus a remainder loop
    assert ptx.count("ld.global.f32") == 1, ptx


def fixed_loop(a):
    for j in range(8):
        a[j] += 1.0


def test_constant_trip_loops_are_still_unrolled():
    ptx = cuda.compile_ptx(fixed_loop, (types.float32[::1],), cc=(9, 0))[0]
    assert ptx.count("ld.global.f32") == 8 and "bra" not in ptx.split(".entry")[1], ptx


@pytest.mark.parametrize("sreg", sorted(facts.SREG_RANGES))
def test_each_range_is_sound(sreg):
    lo, hi = facts.SREG_RANGES[sreg]
    assert 0 <= lo < hi <= 2**31


# --- NUMBA_ASYNCCOPY_FACTS: each fact can be left out (the A/B that prices it) ----


def test_the_setting_names_the_facts():
    assert facts.parse_facts(None) == facts.parse_facts("") == facts.parse_facts(" ALL ") \
        == frozenset(facts.FACT_NAMES) == {"sreg", "assume", "range", "unroll"}
    assert facts.parse_facts("none") == frozenset()
    assert facts.parse_facts("unroll, sreg") == {"sreg", "unroll"}
    with pytest.raises(ValueError, match=r"NUMBA_ASYNCCOPY_FACTS='sreg,ranges': unknown fact 'ranges'"):
        facts.parse_facts("sreg,ranges")
    with pytest.raises(ValueError, match=r"unknown fact ','.*all, none or a comma-separated subset"):
        facts.parse_facts(",")


def test_the_setting_is_part_of_the_cache_key():
    from numba.cuda.codegen import JITCUDACodegen

    assert facts.cache_key() == ("facts", "assume", "range", "sreg", "unroll")
    # the key numba-cuda's cache adds to its own (the extra part; the rest
    # asks the device for its compute capability)
    extra = [c.cell_contents for c in JITCUDACodegen.magic_tuple.__closure__ if callable(c.cell_contents)
             and c.cell_contents is not getattr(JITCUDACodegen.magic_tuple, "__wrapped__", None)]
    keys = [f() for f in extra if f.__name__ == "<lambda>"]
    assert keys and keys[0][-len(facts.cache_key()):] == facts.cache_key(), keys


def test_apply_adds_only_the_facts_it_is_given():
    from llvmlite import ir

    def module():
        m = ir.Module()
        fn = ir.Function(m, ir.FunctionType(ir.IntType(32), []), "f")
        tid = ir.Function(m, ir.FunctionType(ir.IntType(32), []), "llvm.nvvm.read.ptx.sreg.tid.x")
        b = ir.IRBuilder(fn.append_basic_block())
        b.ret(b.call(tid, []))
        return m
    assert facts.apply(module(), frozenset()) == (0, 0, 0)
    assert facts.apply(module(), frozenset({"sreg"})) == (1, 0, 0)
    m = module()
    facts.apply(m, frozenset({"assume", "unroll", "range"}))
    assert "!range" not in str(m)


_FRESH = """
import json, re, sys
import numba_asynccopy as ac
from numba import cuda
from numba.cuda.cpython import rangeobj
from numba_asynccopy import facts, toolchain
from numba_asynccopy.bench import idioms
from tests.cpu.test_examples_ptx import sass_loops
fn, sig = idioms.PORTS["slice"][:2]
sass = toolchain.disassemble(toolchain.assemble(cuda.compile_ptx(fn, sig, cc=(9, 0))[0])[0])
main = max(sass_loops(sass), key=len)
stores = [re.search(r"\\[R\\d+\\.64([^\\]]*)\\]", t).group(1) for t in main if t.startswith("STG")]
print(json.dumps({"facts": sorted(facts.ENABLED), "nsw": getattr(rangeobj.registry, "_ac_range_nsw", False),
                  "loop": len(main), "stores": stores}))
"""


def _fresh(setting):
    import json
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "NUMBA_ASYNCCOPY_FACTS": setting,
           "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", _FRESH], env=env, cwd=root, capture_output=True, text=True,
                         timeout=300)
    if "ToolMissing" in out.stderr:
        tool_missing(toolchain.ToolMissing(out.stderr.strip().splitlines()[-1]))
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_process_without_the_range_fact_keeps_numbas_range_loop():
    # measured on the H200 (benchmarks/h200-2026-12-02/ab-facts.jsonl): the
    # slice port ran at 0.963 of nvcc with every fact and 0.986 without the
    # range() increments.  With them NVVM strength-reduces the store address
    # into a pointer that walks the rows (stores at -8..+4 off it, loop 39);
    # without them it recomputes the address from the counter (0..+12, 65)
    every = _fresh("all")
    assert every["nsw"] and every["facts"] == ["assume", "range", "sreg", "unroll"]
    rest = _fresh("sreg,assume,unroll")
    assert not rest["nsw"] and rest["facts"] == ["assume", "sreg", "unroll"]
    assert len(every["stores"]) == len(rest["stores"]) == 4 and rest["loop"] > every["loop"], (every, rest)
    if toolchain.nvvm_release()[1].startswith("13."):  # the counts and offsets measured (NVVM/ptxas 13.x)
        assert every["loop"] <= 44 and every["stores"] == ["+-0x8", "+-0x4", "", "+0x4"], every
        assert rest["stores"] == ["", "+0x4", "+0x8", "+0xc"], rest
