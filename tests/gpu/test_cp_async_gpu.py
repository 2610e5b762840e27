"""cp.async on the GPU: results equal numpy on fresh random data, outputs
poisoned before each launch, and checked mode trapping on each violation."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.examples import seeds

from ..conftest import SIM_TRAPS, run_python, skip_on_sim

pytestmark = pytest.mark.gpu

rng = np.random.default_rng()  # fresh data every run


def poisoned(like, value=None):
    if value is None:
        value = 0xA5 if like.dtype.itemsize == 1 else 0x7F
    out = np.empty_like(like)
    out.view(np.uint8)[...] = value
    return out


@pytest.mark.parametrize("name", list(seeds.SEEDS))
@pytest.mark.parametrize("checked", [False, True])
def test_seed_examples(name, checked):
    fn, sig, (grid, block) = seeds.SEEDS[name]
    inputs, expected = seeds.reference(name, rng)
    with ac.checked_mode(checked):
        kernel = cuda.jit(sig)(fn)
    out = cuda.to_device(poisoned(expected))
    args = [cuda.to_device(x) if isinstance(x, np.ndarray) else x for x in inputs]
    kernel[grid, block](args[0], out, *args[1:])
    np.testing.assert_array_equal(out.copy_to_host(), expected)


@cuda.jit
def cta_tile_3d(A, B, r0, c0):
    # (4, 16, 32) float16 window of A -> shared uint32 (4, 16, 16): a bit copy
    sh = cuda.shared.array((4, 16, 16), np.uint32, alignment=16)
    ac.cp_async(sh, A[r0:r0 + 4, c0:c0 + 16, :], 16, scope="cta")
    ac.commit_group()
    ac.wait_group(0)
    cuda.syncthreads()
    t = cuda.threadIdx.x + 8 * (cuda.threadIdx.y + 4 * cuda.threadIdx.z)
    for k in range(t, 4 * 16 * 16, 64):
        B[k // 256, (k // 16) % 16, k % 16] = sh[k // 256, (k // 16) % 16, k % 16]


def test_cta_scope_tile_3d_block_and_bit_copy():
    a = rng.standard_normal((9, 40, 32)).astype(np.float16)
    r0, c0 = int(rng.integers(0, 5)), int(rng.integers(0, 24))
    expected = np.ascontiguousarray(a[r0:r0 + 4, c0:c0 + 16, :]).view(np.uint32)
    out = cuda.to_device(poisoned(expected))
    cta_tile_3d[1, (8, 4, 2)](cuda.to_device(a), out, r0, c0)
    np.testing.assert_array_equal(out.copy_to_host(), expected)


@cuda.jit
def zfill_sizes(A, B, sizes):
    tid = cuda.threadIdx.x
    sh = cuda.shared.array((64, 16), np.uint8, alignment=16)
    ac.cp_async(sh[tid, :], A[tid, :], 16, src_size=sizes[tid])
    ac.wait_all()
    cuda.syncthreads()
    for j in range(16):
        B[tid, j] = sh[(tid + 5) % 64, j]


def test_src_size_prefix_and_zero_fill():
    a = rng.integers(1, 256, (64, 16), dtype=np.uint8)
    sizes = rng.integers(0, 17, 64).astype(np.int32)
    expected = a.copy()
    for i, s in enumerate(sizes):
        expected[i, s:] = 0
    expected = np.roll(expected, -5, axis=0)
    out = cuda.to_device(poisoned(expected))
    zfill_sizes[1, 64](cuda.to_device(a), out, cuda.to_device(sizes))
    np.testing.assert_array_equal(out.copy_to_host(), expected)


@cuda.jit
def slice_rows(A, B, lo, hi):
    # each of 4 threads copies its row's A[t, lo:hi] into sh[t, lo:hi]: a
    # chunk count the lowering reads from the slice's run-time length
    t = cuda.threadIdx.x
    sh = cuda.shared.array((4, 32), np.float32, alignment=16)
    for j in range(32):
        sh[t, j] = -1.0
    cuda.syncthreads()
    ac.cp_async(sh[t, lo:hi], A[t, lo:hi], 16)
    ac.commit_group()
    ac.wait_group(0)
    cuda.syncthreads()
    for j in range(32):
        B[t, j] = sh[t, j]


@cuda.jit
def slice_chunk_at(A, B, off):
    # the slice idiom sh[r, 4*q:4*q+4] moved by ``off``: with off = -4 thread
    # q = 0 names sh[r, -4:0] (empty, as in Python) and the others the chunk
    # before their own; with off = 0 every thread copies its own chunk
    tid = cuda.threadIdx.x
    r = tid // 8
    q = tid % 8
    sh = cuda.shared.array((4, 32), np.float32, alignment=16)
    for j in range(4):
        sh[r, 4 * q + j] = -1.0
    cuda.syncthreads()
    ac.cp_async(sh[r, 4 * q + off:4 * q + off + 4], A[r, 4 * q + off:4 * q + off + 4], 16)
    ac.commit_group()
    ac.wait_group(0)
    cuda.syncthreads()
    for j in range(4):
        B[r, 4 * q + j] = sh[r, 4 * q + j]


#: (lo, hi) with Python's slice semantics: negative bounds wrap around once,
#: then both clamp to [0, 32); an empty slice copies nothing
SLICE_BOUNDS = [(0, 4), (4, 8), (-4, 32), (-8, -4), (-4, 0), (28, 40), (0, 32), (8, -8),
                (-40, 4), (12, 12), (16, 8), (-32, -28)]


@pytest.mark.parametrize("lo,hi", SLICE_BOUNDS)
def test_slices_with_run_time_bounds_copy_what_python_slices(lo, hi):
    a = rng.standard_normal((4, 32)).astype(np.float32)
    expected = np.full((4, 32), -1.0, np.float32)
    expected[:, lo:hi] = a[:, lo:hi]
    out = cuda.to_device(poisoned(expected))
    slice_rows[1, 4](cuda.to_device(a), out, lo, hi)
    np.testing.assert_array_equal(out.copy_to_host(), expected)


@pytest.mark.parametrize("off", [0, -4, 4])
def test_the_slice_idiom_keeps_negative_bound_wraparound(off):
    a = rng.standard_normal((4, 32)).astype(np.float32)
    expected = np.full((4, 32), -1.0, np.float32)
    for r in range(4):
        for q in range(8):  # numpy slices a row as Python does (q = 0, off = -4: [-4:0], empty)
            s = slice(4 * q + off, 4 * q + off + 4)
            expected[r, s] = a[r, s]
    out = cuda.to_device(poisoned(expected))
    slice_chunk_at[1, 32](cuda.to_device(a), out, off)
    np.testing.assert_array_equal(out.copy_to_host(), expected)


@cuda.jit
def ignore_rows(A, B, flags):
    tid = cuda.threadIdx.x
    sh = cuda.shared.array((64, 8), np.float32, alignment=16)
    for j in range(8):
        sh[tid, j] = -1.0
    cuda.syncthreads()
    ac.cp_async(sh[tid, :], A[tid, :], 8, cache="ca", ignore_src=flags[tid] != 0)
    ac.commit_group()
    ac.wait_group(0)
    cuda.syncthreads()
    for j in range(8):
        B[tid, j] = sh[tid, j]


def test_ignore_src_zero_fills_whole_chunks():
    a = rng.standard_normal((64, 8)).astype(np.float32)
    flags = rng.integers(0, 2, 64).astype(np.int32)
    expected = np.where(flags[:, None] != 0, 0.0, a).astype(np.float32)
    out = cuda.to_device(poisoned(expected))
    ignore_rows[1, 64](cuda.to_device(a), out, cuda.to_device(flags))
    np.testing.assert_array_equal(out.copy_to_host(), expected)


@cuda.jit
def three_groups(A, early, late):
    tid = cuda.threadIdx.x
    sh = cuda.shared.array((3, 128, 16), np.uint32, alignment=16)
    for s in range(3):
        ac.cp_async(sh[s, tid, :], A[s, tid, :], 16)
        ac.commit_group()
    ac.wait_group(1)  # the two older groups have landed; the newest may not
    for s in range(2):
        for j in range(16):
            early[s, tid, j] = sh[s, tid, j]
    ac.wait_group(0)
    for j in range(16):
        late[tid, j] = sh[2, tid, j]


def test_wait_group_retires_the_older_groups():
    a = rng.integers(0, 2**32, (3, 128, 16), dtype=np.uint32)
    early = cuda.to_device(poisoned(a[:2]))
    late = cuda.to_device(poisoned(a[2]))
    three_groups[1, 128](cuda.to_device(a), early, late)
    np.testing.assert_array_equal(early.copy_to_host(), a[:2])
    np.testing.assert_array_equal(late.copy_to_host(), a[2])


@cuda.jit
def policy_copy(A, B, chunk_rows):
    tid = cuda.threadIdx.x
    sh = cuda.shared.array((128, 8), np.float64, alignment=16)
    pol = ac.createpolicy_fractional("evict_first", "evict_unchanged", fraction=0.75)
    ac.cp_async(sh[tid, :], A[tid, :], 16, prefetch=256, cache_policy=pol)
    ac.commit_group()
    ac.wait_group(0)
    cuda.syncthreads()
    for j in range(8):
        B[tid, j] = sh[127 - tid, j]


def test_cache_policy_and_prefetch_copy_exactly():
    a = rng.standard_normal((128, 8))
    out = cuda.to_device(poisoned(a))
    policy_copy[1, 128](cuda.to_device(a), out, 0)
    np.testing.assert_array_equal(out.copy_to_host(), a[::-1])


def test_staged_copy_example():
    from numba_asynccopy.examples.staged_copy import SIGNATURE, make_staged_copy, tile_words

    # more tiles than blocks x stages (4 at most), so the ring wraps; the
    # simulator runs every thread in Python: two blocks and fewer tiles there
    blocks, tiles = (2, (9, 12)) if ac.sim.ENABLED else (7, (50, 90))
    assert tiles[0] > blocks * 4
    for stages, chunk in ((2, 16), (4, 8), (3, 4)):
        n = tile_words(chunk, 128) * int(rng.integers(*tiles))
        src = rng.integers(0, 2**32, n, dtype=np.uint32)
        dst = cuda.to_device(poisoned(src))
        kernel = cuda.jit(SIGNATURE)(make_staged_copy(stages, chunk, 128))
        kernel[blocks, 128](cuda.to_device(src), dst)
        np.testing.assert_array_equal(dst.copy_to_host(), src)


# --- checked mode: each run-time violation traps with its message ----------

CHECKED_PRELUDE = """
import numpy as np
from numba import cuda
import numba_asynccopy as ac
ac.set_checked(True)
A = cuda.to_device(np.arange(64 * 8, dtype=np.float32).reshape(64, 8))
G = cuda.to_device(np.zeros((64, 4), np.float32))
"""

VIOLATIONS = {
    "dst_not_shared": (
        "ac.cp_async(G[tid, :], A[tid, 0:4], 16)", "cp_async: `dst` is not in shared memory"),
    "src_not_global": (
        "ac.cp_async(sh[tid, :], sh2[tid, :], 16)", "cp_async: `src` is not in global memory"),
    "misaligned": (
        "ac.cp_async(sh[tid, :], A[tid, 1:5], 16)", "cp_async: a chunk of `src` is not 16-byte aligned"),
    "chunk_counts": (
        "ac.cp_async(sh[tid, :], A[tid, 0:8], 16)",
        "cp_async: chunk counts differ: `dst` (float32) has 1 chunks per row, `src` (float32) has 2"),
    "partial_chunk": (
        "ac.cp_async(sh[tid, :], A[tid, 0:5], 8, cache='ca')",
        "cp_async: the last axis of `src` (20 bytes) is not a whole number of 8-byte chunks"),
    "src_size_range": (
        "ac.cp_async(sh[tid, :], A[tid, 0:4], 16, src_size=n)",
        "cp_async: src_size=17 is outside 0..chunk_bytes (16)"),
    "policy_fraction": (
        "p = ac.createpolicy_fractional('evict_last', fraction=n / 10.0)",
        "createpolicy_fractional: `fraction`=1.700000 must be in (0, 1]"),
}


@pytest.mark.traps
@skip_on_sim(SIM_TRAPS)
@pytest.mark.parametrize("case", list(VIOLATIONS))
def test_checked_mode_traps(case):
    stmt, message = VIOLATIONS[case]
    code = CHECKED_PRELUDE + f"""
@cuda.jit
def k(A, G, n):
    tid = cuda.threadIdx.x
    sh = cuda.shared.array((64, 4), np.float32, alignment=16)
    sh2 = cuda.shared.array((64, 4), np.float32, alignment=16)
    {stmt}
    ac.wait_all()
try:
    k[1, 32](A, G, 17)
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


@pytest.mark.traps
@skip_on_sim("reads the kernel's compiled PTX (inspect_asm), which the simulator does not make")
def test_unchecked_mode_has_no_traps():
    # the same valid kernel compiled without checked mode runs and has no trap
    code = """
import numpy as np
from numba import cuda
import numba_asynccopy as ac
from numba_asynccopy.examples import seeds
fn, sig, _ = seeds.SEEDS["shift_rows"]
k = cuda.jit(sig)(fn)
a = np.random.default_rng().standard_normal((64, 4)).astype(np.float32)
b = cuda.device_array_like(a)
k[1, 64](cuda.to_device(a), b)
assert np.array_equal(b.copy_to_host(), np.roll(a, -1, axis=0))
print("OK", "trap" in k.inspect_asm(sig))
"""
    proc = run_python(code)
    assert proc.stdout.strip().endswith("OK False"), proc.stdout + proc.stderr


def _ring_with_run_time_depth(A, out, stages):
    """A cp.async ring whose stage count (and so wait depth) is a run-time
    value: each tile is read after wait_group(stages - 1 - ahead)."""
    tid = cuda.threadIdx.x
    sh = cuda.shared.array((8, 32, 4), np.float32, alignment=16)
    ntiles = A.shape[0]
    for t in range(min(stages - 1, ntiles)):            # prologue
        ac.cp_async(sh[t % stages, tid, :], A[t, tid, :], 16)
        ac.commit_group()
    for t in range(ntiles):
        nxt = t + stages - 1
        if nxt < ntiles:
            ac.cp_async(sh[nxt % stages, tid, :], A[nxt, tid, :], 16)
        ac.commit_group()                                # one group per step, maybe empty
        ac.wait_group(stages - 1)                        # run-time depth: tile t has landed
        for j in range(4):
            out[t, tid, j] = sh[t % stages, tid, j] * 2.0  # own row: no barrier needed


@pytest.mark.parametrize("stages", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("checked", [False, True])
def test_wait_group_with_a_run_time_depth(stages, checked):
    A = rng.standard_normal((11, 32, 4)).astype(np.float32)
    with ac.checked_mode(checked):
        k = cuda.jit(_ring_with_run_time_depth)
    out = cuda.to_device(poisoned(A))
    k[1, 32](cuda.to_device(A), out, stages)
    np.testing.assert_array_equal(out.copy_to_host(), A * 2.0)
