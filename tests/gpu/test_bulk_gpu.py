"""1-D bulk copies on the GPU: round trips of fresh random data, strided rows,
multicast to a cluster, stores reusing shared memory after
``bulk_wait_group(0, read=True)``, every reduction op against numpy, the L2
prefetch, and checked-mode traps."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy import bulk

from ..conftest import SIM_TRAPS, run_python, skip_on_sim

pytestmark = pytest.mark.gpu
rng = np.random.default_rng()  # fresh data every run

MAX_BYTES = 12288


_jitted = {}


def jit_in_mode(kernel, checked):
    """The kernel compiled in (un)checked mode, once per mode."""
    key = (kernel.py_func, checked)
    if key not in _jitted:
        with ac.checked_mode(checked):
            _jitted[key] = cuda.jit(kernel.py_func)
    return _jitted[key]


def poisoned(like, value=None):
    if value is None:
        value = 0xA5 if like.dtype.itemsize == 1 else 0x7F
    out = np.empty_like(like)
    out.view(np.uint8)[...] = value
    return out


@cuda.jit
def round_trip(A, B, C, off, n):
    # A[off:off + n] -> shared (bulk load) -> B (bulk store); C: generic reads
    sh = cuda.shared.array(MAX_BYTES, np.uint8, alignment=128)
    bar = cuda.shared.array(1, np.uint64)
    tid = cuda.threadIdx.x
    if tid == 0:
        ac.mbarrier_init(bar, 1)
        ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if tid == 0:
        ac.mbarrier_arrive_expect_tx(bar, n)
        ac.cp_async_bulk_g2s(sh[:n], A[off:off + n], bar)
    ac.mbarrier_wait_parity(bar, 0)
    for i in range(tid, n, cuda.blockDim.x):
        C[i] = sh[i]
    if tid == 0:
        ac.cp_async_bulk_s2g(B[off:off + n], sh[:n])
        ac.bulk_commit_group()
        ac.bulk_wait_group(0)


@pytest.mark.parametrize("nbytes", [16, 48, 256, 1008, 4096, MAX_BYTES])
@pytest.mark.parametrize("checked", [False, True])
def test_round_trip_sizes(nbytes, checked):
    a = rng.integers(0, 256, MAX_BYTES + 64, dtype=np.uint8)
    off = 16 * int(rng.integers(0, 4))
    kernel = jit_in_mode(round_trip, checked)
    b = poisoned(a)
    c = poisoned(a[:nbytes])
    db, dc = cuda.to_device(b), cuda.to_device(c)
    kernel[1, 128](cuda.to_device(a), db, dc, off, nbytes)
    expected_b = b.copy()
    expected_b[off:off + nbytes] = a[off:off + nbytes]
    np.testing.assert_array_equal(dc.copy_to_host(), a[off:off + nbytes])
    np.testing.assert_array_equal(db.copy_to_host(), expected_b)  # nothing outside the range


@cuda.jit
def strided_rows(A, out, r0, c0):
    # A[r0:r0 + 8, c0:c0 + 64] (layout "A"): eight 256-byte copies on one barrier
    sh = cuda.shared.array((8, 64), np.float32, alignment=16)
    bar = cuda.shared.array(1, np.uint64)
    tid = cuda.threadIdx.x
    if tid == 0:
        ac.mbarrier_init(bar, 1)
        ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if tid == 0:
        ac.mbarrier_arrive_expect_tx(bar, 8 * 64 * 4)
        ac.cp_async_bulk_g2s(sh, A[r0:r0 + 8, c0:c0 + 64], bar)
    ac.mbarrier_wait_parity(bar, 0)
    cuda.syncthreads()
    if tid == 0:
        ac.cp_async_bulk_s2g(out[r0:r0 + 8, c0:c0 + 64], sh)  # rows again, back out
        ac.bulk_commit_group()
        ac.bulk_wait_group(0)


@pytest.mark.parametrize("checked", [False, True])
def test_strided_rows_load_and_store(checked):
    a = rng.standard_normal((40, 200)).astype(np.float32)
    r0, c0 = int(rng.integers(0, 32)), 4 * int(rng.integers(0, 34))
    kernel = jit_in_mode(strided_rows, checked)
    out = poisoned(a)
    d_out = cuda.to_device(out)
    kernel[1, 64](cuda.to_device(a), d_out, r0, c0)
    expected = out.copy()
    expected[r0:r0 + 8, c0:c0 + 64] = a[r0:r0 + 8, c0:c0 + 64]
    np.testing.assert_array_equal(d_out.copy_to_host(), expected)


CLUSTER = 4
SENTINEL = np.float32(-7.0)


@cuda.jit
def multicast(A, out, mask):
    ac.cluster_dims(CLUSTER)
    sh = cuda.shared.array(1024, np.float32, alignment=128)
    bar = cuda.shared.array(1, np.uint64)
    tid = cuda.threadIdx.x
    rank = ac.cluster_cta_rank()
    cluster = cuda.blockIdx.x // CLUSTER
    for i in range(tid, 1024, cuda.blockDim.x):
        sh[i] = SENTINEL
    if tid == 0:
        ac.mbarrier_init(bar, 1)
        ac.fence_mbarrier_init()
    ac.fence_proxy_async("shared::cta")
    ac.cluster_sync()  # every barrier initialised before any copy targets it
    receives = (mask >> rank) & 1
    if tid == 0 and receives:
        ac.mbarrier_arrive_expect_tx(bar, 4096)
    if tid == 0 and rank == 0:
        ac.cp_async_bulk_g2s(sh, A[cluster], bar, multicast_mask=mask)
    if receives:
        ac.mbarrier_wait_parity(bar, 0)
    cuda.syncthreads()
    for i in range(tid, 1024, cuda.blockDim.x):
        out[cuda.blockIdx.x, i] = sh[i]
    ac.cluster_sync()  # no CTA leaves while a copy may still target it


@pytest.mark.parametrize("mask", [0b1111, 0b0101, 0b1000])
@pytest.mark.parametrize("checked", [False, True])
def test_multicast_load_to_the_cluster(mask, checked):
    nclusters = 3
    a = rng.standard_normal((nclusters, 1024)).astype(np.float32)
    kernel = jit_in_mode(multicast, checked)
    d_out = cuda.to_device(poisoned(np.zeros((nclusters * CLUSTER, 1024), np.float32)))
    kernel[nclusters * CLUSTER, 128](cuda.to_device(a), d_out, np.uint16(mask))
    out = d_out.copy_to_host()
    for b in range(nclusters * CLUSTER):
        rank = b % CLUSTER
        if (mask >> rank) & 1:
            np.testing.assert_array_equal(out[b], a[b // CLUSTER], err_msg=f"block {b}")
        else:
            assert (out[b] == SENTINEL).all(), f"block {b} outside the mask was written"


@cuda.jit
def staged_stores(A, B):
    # one 2 KB staging tile reused for every chunk: the store of chunk k must
    # have READ it before chunk k + 1 is written there
    sh = cuda.shared.array(512, np.float32, alignment=16)
    tid = cuda.threadIdx.x
    for k in range(A.shape[0]):
        for i in range(tid, 512, cuda.blockDim.x):
            sh[i] = A[k, i] * 2.0 + k
        ac.fence_proxy_async("shared::cta")  # generic writes -> async-proxy reads
        cuda.syncthreads()
        if tid == 0:
            ac.cp_async_bulk_s2g(B[k], sh)
            ac.bulk_commit_group()
            ac.bulk_wait_group(0, read=True)
        cuda.syncthreads()
    if tid == 0:
        ac.bulk_wait_group(0)


@pytest.mark.parametrize("checked", [False, True])
def test_stores_reuse_shared_memory_after_read_wait(checked):
    a = rng.standard_normal((37, 512)).astype(np.float32)
    kernel = jit_in_mode(staged_stores, checked)
    d_b = cuda.to_device(poisoned(a))
    kernel[1, 256](cuda.to_device(a), d_b)
    expected = a * np.float32(2.0) + np.arange(37, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(d_b.copy_to_host(), expected)


# --- reductions ------------------------------------------------------------

NP = {"float16": np.float16, "float32": np.float32, "float64": np.float64, "int32": np.int32,
      "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64, "bfloat16": np.uint16}
PTX_T = {"float16": "f16", "float32": "f32", "float64": "f64", "int32": "s32", "uint32": "u32",
         "int64": "s64", "uint64": "u64", "bfloat16": "bf16"}


def allowed(op, dtype):
    t = PTX_T[dtype]
    if op in ("and", "or", "xor") and t[0] in "su":
        t = "b" + t[1:]
    if op == "add" and t == "s64":
        t = "u64"
    return t in bulk.BULK_REDUCE_TYPES[op]


CASES = [(op, d) for op in bulk.REDUCE_OPS for d in NP if allowed(op, d)]
N = 1024  # elements


def reduce_kernel(op, dtype):
    np_name = "uint16" if dtype == "bfloat16" else dtype
    bf = ", bf16=True" if dtype == "bfloat16" else ""
    src = textwrap.dedent(f"""
    def k(D, S):
        sh = cuda.shared.array({N}, np.{np_name}, alignment=16)
        tid = cuda.threadIdx.x
        for i in range(tid, {N}, cuda.blockDim.x):
            sh[i] = S[i]
        ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if tid == 0:
            ac.cp_reduce_async_bulk_s2g(D, sh, {op!r}{bf})
            ac.bulk_commit_group()
            ac.bulk_wait_group(0)
    """)
    g = {"cuda": cuda, "np": np, "ac": ac}
    exec(src, g)
    return cuda.jit(g["k"])


def to_bf16_bits(x):
    return (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def operands(dtype):
    if dtype == "bfloat16":  # small integers: exact in bfloat16, sums too
        return (to_bf16_bits(rng.integers(-100, 100, N)), to_bf16_bits(rng.integers(-100, 100, N)))
    if dtype.startswith("float"):
        return (rng.standard_normal(N).astype(dtype), rng.standard_normal(N).astype(dtype))
    info = np.iinfo(dtype)
    if dtype == "uint32":  # inc/dec thresholds: a mix of small and large values
        return (rng.integers(0, 40, N).astype(dtype), rng.integers(0, 40, N).astype(dtype))
    return (rng.integers(info.min, info.max, N, dtype=dtype, endpoint=True),
            rng.integers(info.min, info.max, N, dtype=dtype, endpoint=True))


def expected_reduce(op, dtype, d, s):
    if dtype == "bfloat16":
        x, y = from_bf16_bits(d), from_bf16_bits(s)
        r = {"add": x + y, "min": np.minimum(x, y), "max": np.maximum(x, y)}[op]
        return to_bf16_bits(r)
    if dtype == "float16" and op == "add":  # one correctly rounded addition
        return (d.astype(np.float64) + s.astype(np.float64)).astype(np.float16)
    if op == "add":
        with np.errstate(over="ignore"):
            return d + s  # integer add wraps, like the hardware
    if op == "min":
        return np.minimum(d, s)
    if op == "max":
        return np.maximum(d, s)
    if op == "inc":
        return np.where(d >= s, 0, d + 1).astype(d.dtype)
    if op == "dec":
        return np.where((d == 0) | (d > s), s, d - 1).astype(d.dtype)
    return {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op](d, s)


@pytest.mark.parametrize("op,dtype", CASES)
def test_every_reduction_against_numpy(op, dtype):
    kernel = reduce_kernel(op, dtype)
    d, s = operands(dtype)
    dd = cuda.to_device(d)
    kernel[1, 128](dd, cuda.to_device(s))
    np.testing.assert_array_equal(dd.copy_to_host(), expected_reduce(op, dtype, d, s))


@cuda.jit
def prefetch_then_load(A, out, r0):
    sh = cuda.shared.array((4, 256), np.float32, alignment=16)
    bar = cuda.shared.array(1, np.uint64)
    tid = cuda.threadIdx.x
    if tid == 0:
        ac.cp_async_bulk_prefetch_l2(A[r0])
        ac.cp_async_bulk_prefetch_l2(A[r0:r0 + 4, :256], cache_policy=ac.createpolicy_fractional("evict_last"))
        ac.mbarrier_init(bar, 1)
        ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if tid == 0:
        ac.mbarrier_arrive_expect_tx(bar, 4 * 256 * 4)
        ac.cp_async_bulk_g2s(sh, A[r0:r0 + 4, :256], bar,
                             cache_policy=ac.createpolicy_fractional("evict_first"))
    ac.mbarrier_wait_parity(bar, 0)
    for i in range(tid, 4 * 256, cuda.blockDim.x):
        out[i // 256, i % 256] = sh[i // 256, i % 256]


@pytest.mark.parametrize("checked", [False, True])
def test_prefetch_and_cache_hints_leave_data_exact(checked):
    a = rng.standard_normal((16, 300)).astype(np.float32)
    r0 = int(rng.integers(0, 12))
    kernel = jit_in_mode(prefetch_then_load, checked)
    out = cuda.to_device(poisoned(np.zeros((4, 256), np.float32)))
    kernel[1, 128](cuda.to_device(a), out, r0)
    np.testing.assert_array_equal(out.copy_to_host(), a[r0:r0 + 4, :256])


# --- checked mode -------------------------------------------------------------

TRAP_KERNEL = """
import numpy as np
from numba import cuda
import numba_asynccopy as ac
ac.set_checked(True, timeout_ns=300_000_000)

@cuda.jit
def k(A, B, case, n, mask):
    sh = cuda.shared.array(1024, np.uint8, alignment=128)
    sh2 = cuda.shared.array((2, 16), np.uint8, alignment=16)
    bar = cuda.shared.array(1, np.uint64)
    if cuda.threadIdx.x == 0:
        ac.mbarrier_init(bar, 1)
        ac.fence_proxy_async("shared::cta")
        if case == 0:      # 20 bytes: not a multiple of 16
            ac.cp_async_bulk_g2s(sh[:n], A[:n], bar)
        elif case == 1:    # source 4 bytes off 16-byte alignment
            ac.cp_async_bulk_g2s(sh[:n], A[4:4 + n], bar)
        elif case == 2:    # shared view larger than the global one
            ac.cp_async_bulk_g2s(sh[:n], A[:n - 16], bar)
        elif case == 3:    # src and dst swapped: global "shared" view
            ac.cp_async_bulk_s2g(sh[:n], A[:n])
        elif case == 4:    # multicast mask outside a 1-CTA cluster
            ac.cp_async_bulk_g2s(sh[:n], A[:n], bar, multicast_mask=mask)
        elif case == 5:    # strided rows that are not 16-byte aligned
            ac.cp_async_bulk_s2g(B[1:3, 4:4 + 16], sh2)

CASE = {case}
a = cuda.to_device(np.zeros(4096, np.uint8))
b = cuda.to_device(np.zeros((4, 64), np.uint8))
try:
    k[1, 32](a, b, CASE, {n}, np.uint16({mask}))
    cuda.synchronize()
    print("NO TRAP")
except Exception as e:
    print("LAUNCH FAILED", type(e).__name__)
"""


@pytest.mark.traps
@skip_on_sim(SIM_TRAPS)
@pytest.mark.parametrize("case,n,mask,message", [
    (0, 20, 1, "cp_async_bulk_g2s: `dst` is 20 bytes; a bulk copy moves a positive multiple of 16 bytes"),
    (1, 32, 1, "cp_async_bulk_g2s: `src` is not 16-byte aligned"),
    (2, 64, 1, "cp_async_bulk_g2s: `dst` has 64 bytes, `src` has 48"),
    (3, 32, 1, "cp_async_bulk_s2g: `src` is not in shared memory"),
    (4, 32, 2, "cp_async_bulk_g2s: multicast_mask=0x2 names a CTA rank outside this cluster of 1 CTAs"),
    (5, 32, 1, "cp_async_bulk_s2g: a chunk of `dst` is not 16-byte aligned"),
])
def test_checked_mode_traps(case, n, mask, message):
    proc = run_python(TRAP_KERNEL.format(case=case, n=n, mask=mask), timeout=180)
    out = proc.stdout + proc.stderr
    assert "LAUNCH FAILED" in out, out
    assert "numba_asynccopy checked mode: " + message in out, out
