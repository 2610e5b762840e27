"""Vector loads/stores and chunk views on the GPU: every function, global and
shared memory, every width, against numpy on fresh random data with the
outputs poisoned before each launch; checked mode traps with the rule."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

from ..conftest import SIM_TRAPS, run_python, skip_on_sim

pytestmark = pytest.mark.gpu

rng = np.random.default_rng()  # fresh data every run

NT = 64  # threads, one row each

# (load, store, dtype, n): every function at every width it takes
CASES = [
    ("load4", "store4", "float32", 4),
    ("load4", "store4", "int32", 4),
    ("load4", "store4", "uint32", 4),
    ("load2", "store2", "float32", 2),
    ("load2", "store2", "int32", 2),
    ("load_vec", "store_vec", "float32", 4),
    ("load_vec", "store_vec", "float32", 2),
    ("load_vec", "store_vec", "float16", 8),
    ("load_vec", "store_vec", "float16", 4),
    ("load_vec", "store_vec", "int16", 8),
    ("load_vec", "store_vec", "uint16", 4),
    ("load_vec", "store_vec", "float64", 2),
    ("load_vec", "store_vec", "int64", 2),
]


def case_id(c):
    return f"{c[0]}_{c[2]}x{c[3]}"


def poisoned(like):
    out = np.empty_like(like)
    out.view(np.uint8)[...] = 0x7F
    return out


def random(shape, dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)


def same_bits(got: np.ndarray, expected: np.ndarray) -> None:
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))


_kernels: dict = {}


def kernel(key, src: str, dtype: str):
    """One kernel per source text, compiled on first use."""
    if key not in _kernels:
        g = {"cuda": cuda, "np": np, "ac": ac, "DT": np.dtype(dtype).type, "NT": NT}
        exec(compile(src, f"<vector kernel {key}>", "exec"), g)
        _kernels[key] = cuda.jit(g["k"])
    return _kernels[key]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_round_trip_global_and_shared_2d(case):
    # global -> registers -> shared (rows reversed) -> registers -> global:
    # each function loads from and stores to both spaces
    load, store, dtype, n = case
    extra = f", {n}" if load == "load_vec" else ""
    src = f"""
def k(A, B):
    t = cuda.threadIdx.x
    sh = cuda.shared.array((NT, {2 * n}), DT, alignment=16)
    v = ac.{load}(A, (t, {n}){extra})
    ac.{store}(sh, (NT - 1 - t, {n}), v)
    cuda.syncthreads()
    w = ac.{load}(sh, (t, {n}){extra})
    ac.{store}(B, (t, 0), w)
"""
    k = kernel(("2d",) + case, src, dtype)
    a = random((NT, 2 * n), dtype)
    out = poisoned(a)
    expected = out.copy()
    expected[:, :n] = a[::-1, n:]
    d_out = cuda.to_device(out)
    k[1, NT](cuda.to_device(a), d_out)
    same_bits(d_out.copy_to_host(), expected)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_1d_and_3d_indexing(case):
    # a bare index on 1-D global arrays, a 3-index on a 3-D shared array;
    # thread t reads vector t and writes it to vector (t + 5) % NT
    load, store, dtype, n = case
    extra = f", {n}" if load == "load_vec" else ""
    src = f"""
def k(A, B):
    t = cuda.threadIdx.x
    sh = cuda.shared.array((2, {NT // 2}, {n}), DT, alignment=16)
    u = (t + 5) % NT
    ac.{store}(sh, (u // {NT // 2}, u % {NT // 2}, 0), ac.{load}(A, {n} * t{extra}))
    cuda.syncthreads()
    ac.{store}(B, {n} * t, ac.{load}(sh, (t // {NT // 2}, t % {NT // 2}, 0){extra}))
"""
    k = kernel(("1d",) + case, src, dtype)
    a = random(NT * n, dtype)
    out = cuda.to_device(poisoned(a))
    k[1, NT](cuda.to_device(a), out)
    expected = np.roll(a.reshape(NT, n), 5, axis=0).reshape(-1)
    same_bits(out.copy_to_host(), expected)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_checked_mode_round_trip(case):
    # the same accesses compiled with the checks give the same results
    load, store, dtype, n = case
    extra = f", {n}" if load == "load_vec" else ""
    src = f"""
def k(A, B):
    t = cuda.threadIdx.x
    sh = cuda.shared.array((NT, {n}), DT, alignment=16)
    ac.{store}(sh, (NT - 1 - t, 0), ac.{load}(A, (t, {n}){extra}))
    cuda.syncthreads()
    ac.{store}(B, (t, {n}), ac.{load}(sh, (t, 0){extra}))
"""
    with ac.checked_mode():  # compiled at the launch below
        k = kernel(("checked",) + case, src, dtype)
        a = random((NT, 2 * n), dtype)
        out = poisoned(a)
        expected = out.copy()
        expected[:, n:] = a[::-1, n:]
        d_out = cuda.to_device(out)
        k[1, NT](cuda.to_device(a), d_out)
    same_bits(d_out.copy_to_host(), expected)


def test_store_casts_values_to_the_dtype():
    @cuda.jit
    def k(F, I, x):
        t = cuda.threadIdx.x
        ac.store4(F, (t, 0), (x, t, 2.5, True))             # int64, int, float, bool
        ac.store_vec(I, (t, 0), (2.75 * x, -t, np.int16(7), 1.0, 0, 0, 0, t))

    f = poisoned(np.zeros((NT, 4), np.float32))
    i = poisoned(np.zeros((NT, 8), np.int16))
    d_f, d_i = cuda.to_device(f), cuda.to_device(i)
    x = int(rng.integers(-1000, 1000))
    k[1, NT](d_f, d_i, x)
    t = np.arange(NT)
    ef = np.stack([np.full(NT, x), t, np.full(NT, 2.5), np.ones(NT)], axis=1).astype(np.float32)
    ei = np.stack([np.full(NT, np.trunc(2.75 * x)), -t, np.full(NT, 7), np.ones(NT)]
                  + [np.zeros(NT)] * 3 + [t], axis=1).astype(np.int16)
    np.testing.assert_array_equal(d_f.copy_to_host(), ef)
    np.testing.assert_array_equal(d_i.copy_to_host(), ei)


# (dtype, n): chunk views of 4, 8, 16 and 64 bytes (a run of four cp.async chunks)
CHUNKS = [("float32", 1), ("float32", 2), ("float32", 4), ("float16", 8), ("uint8", 16),
          ("float64", 2), ("float32", 16)]


@pytest.mark.parametrize("dtype,n", CHUNKS, ids=lambda v: str(v))
def test_chunk_view_feeds_cp_async(dtype, n):
    # global chunk -> shared chunk by cp.async (rows reversed), then the
    # thread writes its shared row to global element by element through a view
    nbytes = n * np.dtype(dtype).itemsize
    chunk = min(nbytes, 16)
    cache = ", cache='ca'" if chunk < 16 else ""
    src = f"""
def k(A, B):
    t = cuda.threadIdx.x
    sh = cuda.shared.array((NT, {n}), DT, alignment=16)
    ac.cp_async(ac.chunk_view(sh, (NT - 1 - t, 0), {n}), ac.chunk_view(A, (t, {n}), {n}),
                {chunk}{cache})
    ac.wait_all()
    cuda.syncthreads()
    row = ac.chunk_view(B, (t, 0), {n})
    for j in range({n}):
        row[j] = sh[t, j]
"""
    k = kernel(("chunk", dtype, n), src, dtype)
    a = random((NT, 2 * n), dtype)
    out = poisoned(a)
    expected = out.copy()
    expected[:, :n] = a[::-1, n:]
    d_out = cuda.to_device(out)
    k[1, NT](cuda.to_device(a), d_out)
    same_bits(d_out.copy_to_host(), expected)


def test_view4_feeds_cp_async():
    @cuda.jit
    def k(A, B):
        t = cuda.threadIdx.x
        sh = cuda.shared.array((NT, 4), np.float32, alignment=16)
        ac.cp_async(ac.view4(sh, (t, 0)), ac.view4(A, (t // 2, 4 * (t % 2))), 16)
        ac.wait_all()
        ac.store4(B, 4 * t, ac.load4(sh, (t, 0)))

    a = random((NT // 2, 8), "float32")
    out = cuda.to_device(poisoned(a.reshape(-1)))
    k[1, NT](cuda.to_device(a), out)
    same_bits(out.copy_to_host(), a.reshape(-1))


# --- checked mode: each run-time violation traps with its message -----------------------

VIOLATIONS = {
    "misaligned_load4": ("v = ac.load4(A, (t, 1))",
                         "load4: the 16 bytes at `arr[idx]` (0x"),
    "misaligned_store2": ("ac.store2(G, (t, 1), (1.0, 2.0))",
                          "store2: the 8 bytes at `arr[idx]` (0x"),
    "past_the_row": ("v = ac.load_vec(A, (t, 6), 4)",
                     "load_vec: `idx`[1]=6: the 4 elements from there are not all inside the "
                     "last axis of `arr` (length 8)"),
    "negative_row": ("v = ac.load4(A, (0 * t - 100, 0))",
                     "load4: `idx`[0]=-100 is outside axis 0 of `arr` (length 64)"),
    "strided": ("v = ac.load2(A[:, ::2], (t, 0))",
                "load2: the last axis of `arr` is not contiguous (stride 8 bytes, itemsize 4)"),
    "chunk_view_misaligned": (
        "ac.cp_async(ac.chunk_view(sh, (t, 0), 4), ac.chunk_view(A, (t, 2), 4), 16)",
        "chunk_view: the 16 bytes at `arr[idx]` (0x"),
}


@skip_on_sim(SIM_TRAPS)
@pytest.mark.traps
@pytest.mark.parametrize("case", list(VIOLATIONS))
def test_checked_mode_traps(case):
    stmt, message = VIOLATIONS[case]
    code = f"""
import numpy as np
from numba import cuda
import numba_asynccopy as ac
ac.set_checked(True)
A = cuda.to_device(np.arange(64 * 8, dtype=np.float32).reshape(64, 8))
G = cuda.to_device(np.zeros((64, 4), np.float32))

@cuda.jit
def k(A, G):
    t = cuda.threadIdx.x
    sh = cuda.shared.array((64, 4), np.float32, alignment=16)
    {stmt}
    ac.wait_all()
try:
    k[1, 32](A, G)
    cuda.synchronize()
    print("NO TRAP")
except Exception as e:
    print("LAUNCH FAILED:", type(e).__name__)
"""
    proc = run_python(code, timeout=120)
    out = proc.stdout + proc.stderr
    assert "LAUNCH FAILED" in out, out
    assert "numba_asynccopy checked mode: " + message in out, out
    assert "[block (0,0,0) thread (" in out, out
