"""Bulk copies and TMA in the simulator: buggy kernels fail (poison, a
deadlock report, or the overwritten-source error) and the same kernels fixed
pass; checked mode's rules (including the TMA rules measured on the H200)
raise the trap's text; the driver-free TensorMap matches ``describe()``."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda
from numba.cuda.core.errors import TypingError

import numba_asynccopy as ac
from numba_asynccopy._lowering import TRAP_PREFIX
from numba_asynccopy.host import tensor_map as tm

rng = np.random.default_rng()
SIM_PREFIX = "numba_asynccopy simulator: "


def u32(n):
    return rng.integers(0, 2**32 - 1, n, dtype=np.uint32)  # never all ones


# --- 1. reading a bulk-loaded tile before its barrier wait --------------------


def make_load(wait_first: bool, expect: int = 1024):
    @cuda.jit
    def load(A, B):
        sh = cuda.shared.array(256, np.uint32, alignment=16)
        bar = cuda.shared.array(1, np.uint64)
        tid = cuda.threadIdx.x
        if tid == 0:
            ac.mbarrier_init(bar, 1)
            ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if tid == 0:
            ac.mbarrier_arrive_expect_tx(bar, expect)
            ac.cp_async_bulk_g2s(sh, A, bar)
        cuda.syncthreads()
        if wait_first:
            ac.mbarrier_wait_parity(bar, 0)
        for i in range(tid, 256, cuda.blockDim.x):
            B[i] = sh[i]  # BUG when not wait_first: the copy has not completed
        cuda.syncthreads()  # (no thread's wait completes the phase before every read)
        if not wait_first:
            ac.mbarrier_wait_parity(bar, 0)

    return load


def test_bulk_load_read_before_the_barrier_wait_reads_poison():
    a = u32(256)
    out = np.zeros_like(a)
    make_load(False)[1, 64](a, out)
    assert (out == 0xFFFFFFFF).all()
    make_load(True)[1, 64](a, out)
    np.testing.assert_array_equal(out, a)


def test_bulk_load_read_before_wait_passes_in_the_eager_schedule():
    a = u32(256)
    out = np.zeros_like(a)
    with ac.sim.schedule("eager"):
        make_load(False)[1, 64](a, out)
    np.testing.assert_array_equal(out, a)


def test_bulk_load_with_a_wrong_expect_tx_deadlocks_with_the_counts():
    a = u32(256)
    with pytest.raises(ac.sim.DeadlockError) as e:
        make_load(True, expect=1040)[1, 64](a, np.zeros_like(a))
    text = str(e.value)
    assert "mbarrier_wait_parity: deadlock" in text, text
    assert "transaction bytes: expected 1040, completed 0, in flight 1024, tx-count 16" in text, text
    assert "test_sim_bulk.py:" in text, text  # the line of the wait


# --- 2. reusing a store's shared source before bulk_wait_group(read=True) -----


def make_staged(read_wait: bool):
    @cuda.jit
    def staged(A, B):
        sh = cuda.shared.array(128, np.float32, alignment=16)
        tid = cuda.threadIdx.x
        for k in range(A.shape[0]):
            for i in range(tid, 128, cuda.blockDim.x):
                sh[i] = A[k, i] + k
            ac.fence_proxy_async("shared::cta")
            cuda.syncthreads()
            if tid == 0:
                ac.cp_async_bulk_s2g(B[k], sh)
                ac.bulk_commit_group()
                if read_wait:
                    ac.bulk_wait_group(0, read=True)  # missing: the BUG
            cuda.syncthreads()
        if tid == 0:
            ac.bulk_wait_group(0)

    return staged


def test_store_source_overwritten_before_the_read_wait_is_caught():
    a = rng.standard_normal((5, 128)).astype(np.float32)
    with pytest.raises(ac.sim.SimulatorError) as e:
        make_staged(False)[1, 64](a, np.zeros_like(a))
    text = str(e.value)
    assert SIM_PREFIX + "cp_async_bulk_s2g: its shared source `src`" in text, text
    assert "bulk_wait_group(n, read=True)" in text and "Copy issued at" in text, text
    out = np.zeros_like(a)
    make_staged(True)[1, 64](a, out)
    np.testing.assert_array_equal(out, a + np.arange(5, dtype=np.float32)[:, None])


def test_store_source_reuse_depends_on_the_schedule():
    a = rng.standard_normal((5, 128)).astype(np.float32)
    out = np.zeros_like(a)
    with ac.sim.schedule("eager"):
        make_staged(False)[1, 64](a, out)
    np.testing.assert_array_equal(out, a + np.arange(5, dtype=np.float32)[:, None])


def make_store_then_read(full_wait: bool):
    read_only = not full_wait  # a constant for the kernel (`not full_wait` in it is run-time)

    @cuda.jit
    def store_then_read(A, B, C):
        sh = cuda.shared.array(64, np.uint32, alignment=16)
        tid = cuda.threadIdx.x
        sh[tid] = A[tid]
        ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if tid == 0:
            ac.cp_async_bulk_s2g(B, sh)
            ac.bulk_commit_group()
            # read=True only releases the source: BUG to read B afterwards
            ac.bulk_wait_group(0, read=read_only)
        cuda.syncthreads()
        C[tid] = B[tid]

    return store_then_read


def test_global_result_read_after_only_the_read_wait_is_poison():
    a = u32(64)
    b, c = np.zeros_like(a), np.zeros_like(a)
    make_store_then_read(False)[1, 64](a, b, c)
    assert (c == 0xFFFFFFFF).all()
    np.testing.assert_array_equal(b, a)  # the kernel's end completes the store
    c[...] = 0
    make_store_then_read(True)[1, 64](a, b, c)
    np.testing.assert_array_equal(c, a)


@cuda.jit
def reduce_then_read(D, S, C):
    sh = cuda.shared.array(64, np.int32, alignment=16)
    tid = cuda.threadIdx.x
    sh[tid] = S[tid]
    ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if tid == 0:
        ac.cp_reduce_async_bulk_s2g(D, sh, "add")
        ac.bulk_commit_group()
    cuda.syncthreads()
    C[tid] = D[tid]  # BUG: before the group completes, D still holds the old values
    cuda.syncthreads()
    if tid == 0:
        ac.bulk_wait_group(0)


def test_reduction_lands_only_when_its_group_completes():
    d = rng.integers(-1000, 1000, 64).astype(np.int32)
    s = rng.integers(-1000, 1000, 64).astype(np.int32)
    dd, c = d.copy(), np.zeros_like(d)
    reduce_then_read[1, 64](dd, s, c)
    np.testing.assert_array_equal(c, d)
    np.testing.assert_array_equal(dd, d + s)


# --- 3. a TMA tile read before its barrier wait ---------------------------------


def make_tma(wait_first: bool):
    @cuda.jit
    def tma(tmap, out, r, c):
        tile = cuda.shared.array((16, 32), np.float32, alignment=128)
        bar = cuda.shared.array(1, np.uint64)
        tid = cuda.threadIdx.x
        if tid == 0:
            ac.mbarrier_init(bar, 1)
            ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if tid == 0:
            ac.mbarrier_arrive_expect_tx(bar, 16 * 32 * 4)
            ac.cp_async_bulk_tensor_load(tile, tmap, (r, c), bar)
        cuda.syncthreads()
        if wait_first:
            ac.mbarrier_wait_parity(bar, 0)
        for i in range(tid, 512, cuda.blockDim.x):
            out[i // 32, i % 32] = tile[i // 32, i % 32]
        cuda.syncthreads()
        if not wait_first:
            ac.mbarrier_wait_parity(bar, 0)

    return tma


def test_tma_tile_read_before_the_barrier_wait_reads_poison():
    a = rng.standard_normal((40, 64)).astype(np.float32)
    tmap = ac.TensorMap(cuda.to_device(a), (16, 32))
    out = np.zeros((16, 32), np.float32)
    make_tma(False)[1, 64](tmap, out, 30, 32)  # rows 40..45 out of bounds
    assert np.isnan(out).all() and (out.view(np.uint32) == 0xFFFFFFFF).all()
    make_tma(True)[1, 64](tmap, out, 30, 32)
    expected = np.zeros((16, 32), np.float32)
    expected[:10] = a[30:40, 32:64]
    np.testing.assert_array_equal(out, expected)


def test_tma_oob_fill_nan():
    a = rng.standard_normal((20, 32)).astype(np.float32)
    tmap = ac.TensorMap(cuda.to_device(a), (16, 32), oob_fill="nan")
    out = np.zeros((16, 32), np.float32)
    make_tma(True)[1, 64](tmap, out, 10, 0)
    np.testing.assert_array_equal(out[:10], a[10:20])
    assert np.isnan(out[10:]).all()


# --- 4. the driver-free TensorMap -------------------------------------------------


def test_sim_tensor_map_has_the_same_spec_and_metadata_words():
    a = cuda.to_device(rng.standard_normal((64, 96)).astype(np.float32))
    tmap = ac.TensorMap(a, (16, 32), swizzle=128)
    assert isinstance(tmap, tm.TensorMap)
    iface = dict(a.copy_to_host().__array_interface__, data=(0x1000, False))
    spec = tm.describe(iface, (16, 32), swizzle=128)
    assert tmap.spec.box_bytes == spec.box_bytes == 2048
    assert tmap.smem_alignment == 1024
    words = tmap.device.copy_to_host()
    assert len(words) == tm.BUFFER_WORDS
    assert [int(w) for w in words[16:]] == spec.metadata()
    assert int(words[tm.W_MAGIC]) == tm.MAGIC


def test_sim_tensor_map_validates_like_the_gpu():
    a = cuda.to_device(np.zeros((64, 96), np.float32))
    with pytest.raises(ValueError, match=r"TensorMap: `box`\[-1\]=3 spans 12 bytes"):
        ac.TensorMap(a, (16, 3))
    with pytest.raises(ValueError, match="more than the 32-byte swizzle span"):
        ac.TensorMap(a, (16, 32), swizzle=32)
    with pytest.raises(TypeError, match="must expose __cuda_array_interface__"):
        ac.TensorMap(np.zeros((64, 96), np.float32), (16, 32))


# --- 5. checked mode's rules, same text ---------------------------------------------

BULK_CASES = {
    0: (20, "cp_async_bulk_g2s: `dst` is 20 bytes; a bulk copy moves a positive multiple of 16 bytes"),
    1: (32, "cp_async_bulk_g2s: `src` is not 16-byte aligned"),
    2: (64, "cp_async_bulk_g2s: `dst` has 64 bytes, `src` has 48"),
    3: (32, "cp_async_bulk_s2g: `src` is not in shared memory"),
    5: (32, "cp_async_bulk_s2g: a chunk of `dst` is not 16-byte aligned"),
    6: (32, "cp_async_bulk_g2s: `mbar` is not in shared memory"),
    7: (32, "cp_async_bulk_prefetch_l2: the last axis of `src` (8 bytes) is not a whole number "
            "of 16-byte chunks"),
}


@cuda.jit
def bulk_rules(A, B, case, n):
    sh = cuda.shared.array(1024, np.uint8, alignment=128)
    sh2 = cuda.shared.array((2, 16), np.uint8, alignment=16)
    bar = cuda.shared.array(1, np.uint64)
    if cuda.threadIdx.x == 0:
        ac.mbarrier_init(bar, 1)
        ac.fence_proxy_async("shared::cta")
        if case == 0:
            ac.cp_async_bulk_g2s(sh[:n], A[:n], bar)
        elif case == 1:
            ac.cp_async_bulk_g2s(sh[:n], A[4:4 + n], bar)
        elif case == 2:
            ac.cp_async_bulk_g2s(sh[:n], A[:n - 16], bar)
        elif case == 3:
            ac.cp_async_bulk_s2g(sh[:n], A[:n])
        elif case == 5:
            ac.cp_async_bulk_s2g(B[1:3, 4:4 + 16], sh2)
        elif case == 6:
            ac.cp_async_bulk_g2s(sh[:n], A[:n], B[0, 0:8].view(np.uint64))
        elif case == 7:
            ac.cp_async_bulk_prefetch_l2(B[:, 0:8])


@pytest.mark.parametrize("checked", [False, True])
@pytest.mark.parametrize("case", sorted(BULK_CASES))
def test_bulk_checked_mode_rules_raise_the_trap_message(case, checked):
    n, message = BULK_CASES[case]
    a = cuda.to_device(np.zeros(4096, np.uint8))
    b = cuda.to_device(np.zeros((4, 64), np.uint8))
    with ac.checked_mode(checked), pytest.raises(ac.sim.SimulatorError) as e:
        bulk_rules[1, 32](a, b, case, n)
    prefix = TRAP_PREFIX if checked else SIM_PREFIX
    assert prefix + message in str(e.value), str(e.value)
    assert "[block (0,0,0) thread (0,0,0)]" in str(e.value)


TMA_CASES = {
    0: "cp_async_bulk_tensor_load: `dst` (shared address 0x",
    1: "cp_async_bulk_tensor_load: `dst` has 960 bytes but one box of the tensor map has 1024",
    2: "cp_async_bulk_tensor_store: `coords` has 3 entries but the tensor map has rank 2",
    3: "cp_async_bulk_tensor_store: `tensor_map` is not an ac.TensorMap buffer (bad magic word)",
    4: "cp_async_bulk_tensor_load: the innermost coordinate 3 x 2-byte elements is not a "
       "multiple of 16 bytes",
    5: "cp_async_bulk_tensor_store: `coords`[0]=-1 is negative; tensor stores and reductions "
       "need coordinates >= 0",
    6: "cp_reduce_async_bulk_tensor: `coords`[1]=-8 is negative",
    7: "cp_reduce_async_bulk_tensor: the reduction reads `src` as CUtensorMapDataType 9 but the "
       "tensor map holds type 6",
}


@cuda.jit
def tma_rules(tmap, case):
    big = cuda.shared.array((17, 32), np.float16, alignment=1024)
    bf = cuda.shared.array((16, 32), np.int16, alignment=1024)
    bar = cuda.shared.array(1, np.uint64)
    if cuda.threadIdx.x == 0:
        ac.mbarrier_init(bar, 1)
        ac.fence_proxy_async("shared::cta")
        if case == 0:
            ac.cp_async_bulk_tensor_load(big[1:], tmap, (0, 0), bar)
        elif case == 1:
            ac.cp_async_bulk_tensor_load(big[:15], tmap, (0, 0), bar)
        elif case == 2:
            ac.cp_async_bulk_tensor_store(tmap, (0, 0, 0), big[:16])
        elif case == 3:
            ac.cp_async_bulk_tensor_store(tmap, (0, 0), big[:16])
        elif case == 4:
            ac.cp_async_bulk_tensor_load(big[:16], tmap, (0, 3), bar)
        elif case == 5:  # a run-time coordinate (a constant -1 is a compile error)
            ac.cp_async_bulk_tensor_store(tmap, (case - 6, 0), big[:16])
        elif case == 6:
            ac.cp_reduce_async_bulk_tensor(tmap, (0, -(case + 2)), big[:16], "add")
        elif case == 7:  # bfloat16 bits on a float16 map
            ac.cp_reduce_async_bulk_tensor(tmap, (0, 0), bf, "add", bf16=True)


@pytest.mark.parametrize("checked", [False, True])
@pytest.mark.parametrize("case", sorted(TMA_CASES))
def test_tma_checked_mode_rules_raise_the_trap_message(case, checked):
    a = cuda.to_device(np.zeros((64, 64), np.float16))
    tmap = ac.TensorMap(a, (16, 32), swizzle=64)
    bogus = cuda.to_device(np.zeros(32, np.uint64))
    with ac.checked_mode(checked), pytest.raises(ac.sim.SimulatorError) as e:
        tma_rules[1, 32](bogus if case == 3 else tmap, case)
    text = str(e.value)
    prefix = TRAP_PREFIX if checked else SIM_PREFIX
    assert prefix + TMA_CASES[case] in text, text
    if case == 0:
        assert "is not 512-byte aligned as this tensor map needs" in text, text


# --- 6. compile-time errors and clusters --------------------------------------


@cuda.jit
def reduce64(tmap):
    tile = cuda.shared.array((16, 32), np.int64, alignment=128)
    if cuda.threadIdx.x == 0:
        ac.cp_reduce_async_bulk_tensor(tmap, (0, 0), tile, "or")


def test_64_bit_tensor_reductions_are_rejected_like_at_compile_time():
    # `.or` through an INT64 map failed on the H200; through a UINT64 map it works
    tmap = ac.TensorMap(cuda.to_device(np.zeros((32, 32), np.int64)), (16, 32))
    with pytest.raises(TypingError, match=r"op='or' on int64 elements is refused: on the H200 "
                                          r"\(driver 580\) this reduction through an INT64 tensor "
                                          r"map failed the launch"):
        reduce64[1, 32](tmap)


@cuda.jit
def multicast_load(A, tmap, which):
    sh = cuda.shared.array((16, 32), np.float32, alignment=128)
    bar = cuda.shared.array(1, np.uint64)
    if cuda.threadIdx.x == 0:
        ac.mbarrier_init(bar, 1)
        if which == 0:
            ac.cp_async_bulk_g2s(sh, A, bar, multicast_mask=3)
        else:
            ac.cp_async_bulk_tensor_load(sh, tmap, (0, 0), bar, multicast_mask=3)


@pytest.mark.parametrize("which,api", [(0, "cp_async_bulk_g2s"), (1, "cp_async_bulk_tensor_load")])
def test_multicast_outside_the_cluster_is_an_error(which, api):
    # an unclustered launch is a cluster of one CTA: mask 0b11 names rank 1
    a = cuda.to_device(np.zeros((16, 32), np.float32))
    with pytest.raises(ac.sim.SimulatorError) as e:
        multicast_load[1, 32](a, ac.TensorMap(a, (16, 32)), which)
    text = str(e.value)
    assert (f"{SIM_PREFIX}{api}: `multicast_mask`=0x0003 names CTAs outside the cluster "
            "(1 CTAs: ranks 0..0)") in text, text


def test_bulk_and_tma_are_supported():
    names = set(ac.sim.supported())
    assert {"cp_async_bulk_g2s", "cp_async_bulk_s2g", "cp_reduce_async_bulk_s2g",
            "cp_async_bulk_prefetch_l2", "bulk_commit_group", "bulk_wait_group",
            "cp_async_bulk_tensor_load", "cp_async_bulk_tensor_store",
            "cp_reduce_async_bulk_tensor", "prefetch_tensormap", "fence_proxy_tensormap"} <= names
    assert "cp_async_bulk_cluster" in names and "TensorMap" not in names
    assert ac.cp_async_bulk_s2g.__module__ == "numba_asynccopy.sim.bulk"
    assert ac.TensorMap.__module__ == "numba_asynccopy.sim.tensor"



def interleaved_load(dtype):
    @cuda.jit
    def k(tmap, out):
        tile = cuda.shared.array((2, 8, 8), dtype, alignment=128)
        bar = cuda.shared.array(1, np.uint64)
        if cuda.threadIdx.x == 0:
            ac.mbarrier_init(bar, 1)
            ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:
            ac.mbarrier_arrive_expect_tx(bar, 128 * tile.itemsize)
            ac.cp_async_bulk_tensor_load(tile, tmap, (0, 0, 0), bar)
        ac.mbarrier_wait_parity(bar, 0)
        out[cuda.threadIdx.x] = tile[0, 0, cuda.threadIdx.x]
    return k


@pytest.mark.parametrize("interleave,dtype", [(16, np.float16), (32, np.float32)])
def test_interleaved_maps_are_refused_with_the_reason(interleave, dtype):
    """Interleaved maps are not simulated: measured on the H200, their
    addressing is not a plain map's box (README, simulator section)."""
    big = cuda.to_device(np.zeros(4 * 16 * 8 + 8, dtype))
    off = -big._ary.ctypes.data % 32 // big.dtype.itemsize  # interleave=32 needs 32 bytes
    a = big[off:off + 4 * 16 * 8].reshape(4, 16, 8)
    tmap = ac.TensorMap(a, (2, 8, 8), interleave=interleave)
    with pytest.raises(ac.sim.SimulatorError) as e:
        interleaved_load(dtype)[1, 8](tmap, cuda.to_device(np.zeros(8, dtype)))
    assert (f"cp_async_bulk_tensor_load: interleaved tensor maps (interleave={interleave}) are "
            "not simulated (their addressing is undocumented and, measured on the H200, not a "
            "plain map's box") in str(e.value), str(e.value)
