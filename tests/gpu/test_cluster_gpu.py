"""Clusters on the GPU (sm_90): TVM TIRx's cluster bulk copy, ring exchanges
over cluster sizes 2-16, DSMEM, remote mbarrier operations, special
registers in 1-D and 2-D cluster shapes, 200 KB of dynamic shared memory
through both launch paths, and the launch errors.  Fresh random data every
run; outputs poisoned before each launch."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.examples import cluster as ex

from ..conftest import SIM_DEVICE, SIM_TRAPS, run_python, skip_on_sim

pytestmark = pytest.mark.gpu

rng = np.random.default_rng()  # fresh data every run


def poisoned(like, value=0x7F):
    out = np.empty_like(like)
    out.view(np.uint8)[...] = value
    return out


def dev_poisoned(shape, dtype, value=0x7F):
    return cuda.to_device(poisoned(np.empty(shape, dtype), value))


# --- the seed -------------------------------------------------------------------------


@pytest.mark.parametrize("checked", [False, True])
def test_seed_cta0_sends_256_bytes_to_cta1(checked):
    a = rng.integers(0, 2**32, 64, dtype=np.uint32)
    with ac.checked_mode(checked):
        k = cuda.jit(ex.CLUSTER_COPY_SIG)(ex.cluster_copy)
    out = cuda.to_device(poisoned(a))
    k[2, 1](cuda.to_device(a), out)
    np.testing.assert_array_equal(out.copy_to_host(), a)


@pytest.mark.parametrize("checked", [False, True])
def test_seed_repeated_chunks(checked):
    a = rng.standard_normal((8, 128)).astype(np.float16)
    with ac.checked_mode(checked):
        k = cuda.jit(ex.REPEATED_CHUNKS_SIG)(ex.repeated_chunks)
    out = cuda.to_device(poisoned(a))
    k[2, 64](cuda.to_device(a), out)
    np.testing.assert_array_equal(out.copy_to_host(), a)


# --- ring exchange with the cluster bulk copy -------------------------------------------------


@cuda.jit
def ring_bulk(A, out, ranks):
    # every CTA sends its 64-float32 row to the next rank of its cluster
    tid = cuda.threadIdx.x
    b = cuda.blockIdx.x
    rank = ac.cluster_cta_rank()
    n = ac.cluster_num_ctas()
    src = cuda.shared.array(64, np.float32, alignment=16)
    dst = cuda.shared.array(64, np.float32, alignment=16)
    bar = cuda.shared.array(1, np.uint64, alignment=8)
    if tid == 0:
        ac.mbarrier_init(bar, 1)
        ac.fence_mbarrier_init()
    ac.cluster_sync()
    if tid < 64:
        src[tid] = A[b, tid]
    ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if tid == 0:
        ac.mbarrier_arrive_expect_tx(bar, 256)
        ac.cp_async_bulk_cluster(dst, src, 256, bar, (rank + 1) % n)
    ac.mbarrier_wait_parity(bar, 0)
    if tid < 64:
        out[b, tid] = dst[tid]
    if tid == 0:
        ranks[b] = rank
    ac.cluster_sync()


@pytest.mark.parametrize("size", [2, 4, 8, 16])
@pytest.mark.parametrize("checked", [False, True])
def test_ring_exchange_cluster_sizes(size, checked):
    nclusters = 3
    blocks = nclusters * size
    a = rng.standard_normal((blocks, 64)).astype(np.float32)
    out = cuda.to_device(poisoned(a))
    ranks = dev_poisoned(blocks, np.int32)
    # checked mode is read when the kernel compiles: at its first launch here
    with ac.checked_mode(checked):
        kernel = cuda.jit(ring_bulk.py_func) if checked else ring_bulk
        ac.launch(kernel, blocks, 96, (cuda.to_device(a), out, ranks), cluster=size,
                  non_portable=size > 8)
    # block b receives from its predecessor in the cluster
    expected = a.reshape(nclusters, size, 64)
    expected = np.roll(expected, 1, axis=1).reshape(blocks, 64)
    np.testing.assert_array_equal(out.copy_to_host(), expected)
    np.testing.assert_array_equal(ranks.copy_to_host(), np.tile(np.arange(size), nclusters))


# --- special registers in 1-D and 2-D cluster shapes ----------------------------------------------


@cuda.jit(device=True)
def _sregs_inline(out):
    b = cuda.blockIdx.x + cuda.gridDim.x * cuda.blockIdx.y
    if cuda.threadIdx.x == 0:
        cx, cy, cz = ac.cluster_cta_id()
        dx, dy, dz = ac.cluster_dim()
        ix, iy, iz = ac.cluster_id()
        nx, ny, nz = ac.num_clusters()
        out[b, 0], out[b, 1], out[b, 2] = cx, cy, cz
        out[b, 3], out[b, 4], out[b, 5] = dx, dy, dz
        out[b, 6], out[b, 7], out[b, 8] = ix, iy, iz
        out[b, 9], out[b, 10], out[b, 11] = nx, ny, nz
        out[b, 12] = ac.cluster_cta_rank()
        out[b, 13] = ac.cluster_num_ctas()
        out[b, 14] = 1 if ac.is_explicit_cluster() else 0


@cuda.jit
def sregs(out):
    _sregs_inline(out)


@cuda.jit
def sregs_2x2(out):
    ac.cluster_dims(2, 2)
    _sregs_inline(out)


def expected_sregs(grid, cluster, explicit):
    """Per block (x fastest): cluster_cta_id, cluster_dim, cluster_id,
    num_clusters, rank, cluster size, is_explicit_cluster."""
    gx, gy = grid
    cx, cy = cluster
    exp = np.zeros((gx * gy, 15), np.int32)
    for by in range(gy):
        for bx in range(gx):
            x, y = bx % cx, by % cy
            exp[bx + gx * by] = (x, y, 0, cx, cy, 1, bx // cx, by // cy, 0, gx // cx, gy // cy, 1,
                                 x + cx * y, cx * cy, explicit)
    return exp


def test_special_registers_declared_2x2():
    out = dev_poisoned((16, 15), np.int32)
    sregs_2x2[(4, 4), 32](out)
    np.testing.assert_array_equal(out.copy_to_host(), expected_sregs((4, 4), (2, 2), 1))


@pytest.mark.parametrize("cluster", [(2, 2), (4, 1), (1, 2)])
def test_special_registers_runtime_shapes(cluster):
    out = dev_poisoned((32, 15), np.int32)
    ac.launch(sregs, (8, 4), 32, (out,), cluster=cluster + (1,))
    np.testing.assert_array_equal(out.copy_to_host(), expected_sregs((8, 4), cluster, 1))


def test_special_registers_without_clusters():
    out = dev_poisoned((6, 15), np.int32)
    sregs[(3, 2), 32](out)
    # an unclustered launch: every CTA is its own 1x1x1 cluster, not explicit
    np.testing.assert_array_equal(out.copy_to_host(), expected_sregs((3, 2), (1, 1), 0))


# --- distributed shared memory --------------------------------------------------------------------


@cuda.jit
def dsmem_kernel(A, loads, inbox_out, counts, fsum, grid2d, mapped):
    tid = cuda.threadIdx.x  # 64 threads
    b = cuda.blockIdx.x
    rank = ac.cluster_cta_rank()
    n = ac.cluster_num_ctas()
    nxt = (rank + 1) % n
    mine = cuda.shared.array(64, np.int32)
    inbox = cuda.shared.array(64, np.int32)
    tile = cuda.shared.array((4, 16), np.float32)
    cnt = cuda.shared.array(2, np.int64)
    fcnt = cuda.shared.array(1, np.float64)
    box = cuda.shared.array(64, np.uint32)
    mine[tid] = A[b, tid]
    tile[tid // 16, tid % 16] = A[b, tid] * 0.5
    if tid < 2:
        cnt[tid] = 0
    if tid == 0:
        fcnt[0] = 0.0
    ac.cluster_sync()
    loads[b, tid] = ac.dsmem_load(mine, nxt, tid)                 # read the next CTA
    ac.dsmem_store(inbox, nxt, tid, mine[tid] + 1)                  # write into the next CTA
    grid2d[b, tid] = ac.dsmem_load(tile, nxt, (tid // 16, tid % 16))
    ac.dsmem_atomic_add(cnt, 0, 0, rank + 1)                        # every thread adds into CTA 0
    ac.dsmem_atomic_add(cnt, 0, 1, np.int64(1) << 33)
    ac.dsmem_atomic_add(fcnt, n - 1, 0, 0.25)
    peer = ac.map_shared_rank(box, nxt)
    peer[tid] = np.uint32(b * 1000 + tid)                          # generic store through the view
    ac.cluster_sync()
    inbox_out[b, tid] = inbox[tid]
    mapped[b, tid] = box[tid]
    if tid < 2:
        counts[b, tid] = cnt[tid]
    if tid == 0:
        fsum[b] = fcnt[0]
    ac.cluster_sync()


@pytest.mark.parametrize("size", [2, 4, 8])
def test_dsmem_load_store_atomic(size):
    nclusters = 2
    blocks = size * nclusters
    a = rng.integers(-2**30, 2**30, (blocks, 64), dtype=np.int32)
    outs = [dev_poisoned((blocks, 64), np.int32), dev_poisoned((blocks, 64), np.int32),
            dev_poisoned((blocks, 2), np.int64), dev_poisoned(blocks, np.float64),
            dev_poisoned((blocks, 64), np.float32), dev_poisoned((blocks, 64), np.uint32)]
    ac.launch(dsmem_kernel, blocks, 64, (cuda.to_device(a), *outs), cluster=size)
    loads, inbox, counts, fsum, grid2d, mapped = (o.copy_to_host() for o in outs)
    per = a.reshape(nclusters, size, 64)
    np.testing.assert_array_equal(loads, np.roll(per, -1, axis=1).reshape(blocks, 64))
    np.testing.assert_array_equal(inbox, np.roll(per + 1, 1, axis=1).reshape(blocks, 64))
    np.testing.assert_array_equal(grid2d, np.roll(per.astype(np.float32) * 0.5, -1, axis=1).reshape(blocks, 64))
    src_block = np.roll(np.arange(blocks).reshape(nclusters, size), 1, axis=1).reshape(blocks)
    np.testing.assert_array_equal(mapped, (src_block[:, None] * 1000 + np.arange(64)).astype(np.uint32))
    total = 64 * sum(r + 1 for r in range(size))
    rank = np.tile(np.arange(size), nclusters)
    np.testing.assert_array_equal(counts[rank == 0, 0], total)
    np.testing.assert_array_equal(counts[rank == 0, 1], 64 * size * (1 << 33))
    np.testing.assert_array_equal(counts[rank != 0], 0)
    np.testing.assert_array_equal(fsum[rank == size - 1], 64 * size * 0.25)
    np.testing.assert_array_equal(fsum[rank != size - 1], 0.0)


# --- remote mbarrier operations ----------------------------------------------------------------------


@cuda.jit
def remote_arrive(A, out, out_bulk):
    # CTAs 1..n-1 write their row into CTA 0 (DSMEM) and arrive on CTA 0's
    # barrier twice (count=2); CTA 1 also sends 256 bytes by bulk copy with
    # the transaction bytes announced remotely (expect_tx + arrive_expect_tx).
    tid = cuda.threadIdx.x  # 64 threads
    b = cuda.blockIdx.x
    rank = ac.cluster_cta_rank()
    n = ac.cluster_num_ctas()
    rows = cuda.shared.array((16, 64), np.int32)
    src = cuda.shared.array(64, np.int32, alignment=16)
    dst = cuda.shared.array(64, np.int32, alignment=16)
    bars = cuda.shared.array(2, np.uint64, alignment=8)
    if tid == 0:
        ac.mbarrier_init(bars[0:], 2 * (n - 1))
        ac.mbarrier_init(bars[1:], 1)
        ac.fence_mbarrier_init()
    src[tid] = A[b, tid] * 3
    ac.fence_proxy_async("shared::cta")
    ac.cluster_sync()
    if rank != 0:
        ac.dsmem_store(rows, 0, (rank, tid), A[b, tid])
        cuda.syncthreads()
        if tid == 0:
            ac.mbarrier_arrive_remote(bars[0:], 0, 2)
        if rank == 1 and tid == 0:
            ac.mbarrier_expect_tx_remote(bars[1:], 0, 128)
            ac.mbarrier_arrive_expect_tx_remote(bars[1:], 0, 128)
            ac.cp_async_bulk_cluster(dst, src, 256, bars[1:], 0)
    else:
        while not ac.mbarrier_try_wait_parity(bars[0:], 0, sem="acquire", scope="cluster"):
            pass
        for r in range(1, n):
            out[b + r, tid] = rows[r, tid]
        ac.mbarrier_wait_parity(bars[1:], 0)
        out_bulk[b // n, tid] = dst[tid]
    ac.cluster_sync()


@pytest.mark.parametrize("size", [2, 4, 8, 16])
def test_remote_arrive_and_expect_tx(size):
    nclusters = 2
    blocks = size * nclusters
    a = rng.integers(-2**20, 2**20, (blocks, 64), dtype=np.int32)
    out = dev_poisoned((blocks, 64), np.int32)
    out_bulk = dev_poisoned((nclusters, 64), np.int32)
    ac.launch(remote_arrive, blocks, 64, (cuda.to_device(a), out, out_bulk), cluster=size,
              non_portable=size > 8)
    got = out.copy_to_host()
    rank = np.tile(np.arange(size), nclusters)
    np.testing.assert_array_equal(got[rank != 0], a[rank != 0])
    np.testing.assert_array_equal(out_bulk.copy_to_host(), a[rank == 1] * 3)


# --- dynamic shared memory above 48 KB --------------------------------------------------------------

BIG = 200 * 1024


@cuda.jit
def big_shared(A, out):
    dyn = cuda.shared.array(0, np.uint32)
    n = A.shape[0]
    tid = cuda.threadIdx.x
    for i in range(tid, n, cuda.blockDim.x):
        dyn[i] = A[i]
    cuda.syncthreads()
    for i in range(tid, n, cuda.blockDim.x):
        out[cuda.blockIdx.x, i] = dyn[n - 1 - i] + cuda.blockIdx.x


def _big_case():
    a = rng.integers(0, 2**31, BIG // 4, dtype=np.uint32)
    expected = a[::-1][None, :] + np.arange(4, dtype=np.uint32)[:, None]
    return a, expected


def test_200kb_dynamic_shared_ordinary_launch():
    a, expected = _big_case()
    out = dev_poisoned(expected.shape, np.uint32)
    big_shared[4, 256, 0, BIG](cuda.to_device(a), out)
    np.testing.assert_array_equal(out.copy_to_host(), expected)


@pytest.mark.parametrize("cluster", [None, 2])
def test_200kb_dynamic_shared_ac_launch(cluster):
    a, expected = _big_case()
    out = dev_poisoned(expected.shape, np.uint32)
    ac.launch(big_shared, 4, 256, (cuda.to_device(a), out), cluster=cluster, shared_mem=BIG)
    np.testing.assert_array_equal(out.copy_to_host(), expected)


@skip_on_sim(SIM_DEVICE)
def test_shared_memory_past_the_device_limit():
    optin = cuda.get_current_device().MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    a = cuda.to_device(np.zeros(16, np.uint32))
    out = cuda.device_array((4, 16), np.uint32)
    with pytest.raises(ac.ClusterLaunchError, match=f"opt-in limit of {optin} bytes"):
        big_shared[4, 256, 0, optin + 1024](a, out)
    with pytest.raises(ac.ClusterLaunchError, match=f"opt-in limit of {optin} bytes"):
        ac.launch(big_shared, 4, 256, (a, out), shared_mem=optin + 16)


# --- occupancy -------------------------------------------------------------------------------------


@skip_on_sim(SIM_DEVICE)
def test_max_active_clusters():
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    a = cuda.to_device(np.zeros(16, np.uint32))
    out = cuda.device_array((4, 16), np.uint32)
    n2 = ac.max_active_clusters(big_shared, 256, 2, args=(a, out))
    n2_big = ac.max_active_clusters(big_shared, 256, 2, args=(a, out), shared_mem=BIG)
    n16 = ac.max_active_clusters(big_shared, 256, 16, args=(a, out), non_portable=True)
    assert 1 <= n2_big <= sms // 2  # one 200 KB block per SM at most
    assert n2_big <= n2
    # without the 200 KB several CTAs share an SM; with it, one CTA per SM
    n16_big = ac.max_active_clusters(big_shared, 256, 16, args=(a, out), non_portable=True,
                                     shared_mem=BIG)
    assert n16 >= 1
    assert 0 <= n16_big <= sms // 16
    assert n16_big <= n16
    out2 = cuda.device_array((16, 15), np.int32)
    assert ac.max_active_clusters(sregs_2x2, 32, args=(out2,)) >= 1  # declared shape


# --- launch errors ---------------------------------------------------------------------------------


def test_declared_shape_grid_mismatch():
    out = dev_poisoned((16, 15), np.int32)  # the one good launch must write every element
    with pytest.raises(ac.ClusterLaunchError, match=r"grid \(3, 4, 1\) \(blocks\) is not a multiple "
                                                     r"of the cluster shape \(2, 2, 1\) on axis x"):
        sregs_2x2[(3, 4), 32](out)
    with pytest.raises(ac.ClusterLaunchError, match=r"on axis y"):
        sregs_2x2[(4, 1), 32](out)
    with pytest.raises(ac.ClusterLaunchError, match=r"declares cluster_dims\(2, 2, 1\)"):
        ac.launch(sregs_2x2, (4, 4), 32, (out,), cluster=(4, 1, 1))
    ac.launch(sregs_2x2, (4, 4), 32, (out,))  # the declared shape alone works
    np.testing.assert_array_equal(out.copy_to_host(), expected_sregs((4, 4), (2, 2), 1))


def test_runtime_shape_errors():
    out = cuda.device_array((32, 15), np.int32)
    with pytest.raises(ac.ClusterLaunchError, match=r"grid \(6, 1, 1\) \(blocks\) is not a multiple"):
        ac.launch(sregs, 6, 32, (out,), cluster=4)
    with pytest.raises(ac.ClusterLaunchError, match="non_portable=True"):
        ac.launch(sregs, 16, 32, (out,), cluster=16)
    with pytest.raises(ac.ClusterLaunchError, match="the largest cluster is 16 CTAs"):
        ac.launch(sregs, 32, 32, (out,), cluster=32, non_portable=True)


def test_cluster_dims_in_a_device_function_is_an_error():
    @cuda.jit(device=True)
    def helper():
        ac.cluster_dims(2)

    @cuda.jit
    def k(out):
        helper()
        out[0] = 1

    with pytest.raises(Exception, match=r"cluster_dims\(2, 1, 1\) is called in device function "
                                        r"`helper`; the cluster shape belongs to the kernel"):
        k[2, 1](cuda.device_array(1, np.int32))


# --- checked mode ----------------------------------------------------------------------------------

CHECKED_PRELUDE = """
import numpy as np
from numba import cuda
import numba_asynccopy as ac
ac.set_checked(True)
out = cuda.to_device(np.zeros(64, np.int32))
"""

VIOLATIONS = {
    "remote_cta_id": (
        "ac.cp_async_bulk_cluster(dst, src, 256, bar, n)",
        "cp_async_bulk_cluster: `remote_cta_id`=2 is outside the cluster (2 CTAs: ranks 0..1)"),
    "misaligned": (
        "ac.cp_async_bulk_cluster(dst8[16:272], src8[1:257], 256, bar, 1)",
        "cp_async_bulk_cluster: a chunk of `src` is not 16-byte aligned"),
    "chunk_counts": (
        "ac.cp_async_bulk_cluster(dst8[0:256], src8[0:512], 256, bar, 1)",
        "cp_async_bulk_cluster: chunk counts differ: `src` (uint8) has 2 chunks per row, `dst` (uint8) "
        "has 1"),
    "partial_chunk": (
        "ac.cp_async_bulk_cluster(dst8[0:264], src8[0:264], 256, bar, 1)",
        "cp_async_bulk_cluster: the last axis of `src` (264 bytes) is not a whole number of 256-byte chunks"),
    "dsmem_rank": (
        "out[0] = ac.dsmem_load(src, n + 1, 0)",
        "dsmem_load: `rank`=3 is outside the cluster (2 CTAs: ranks 0..1)"),
    "dsmem_index": (
        "out[0] = ac.dsmem_load(src, 1, n * 40)",
        "dsmem_load: index 80 is out of range for axis 0 of `view` (size 64)"),
    "remote_arrive_rank": (
        "ac.mbarrier_arrive_remote(bar, n)",
        "mbarrier_arrive_remote: `cta_rank`=2 is outside the cluster (2 CTAs: ranks 0..1)"),
}


@pytest.mark.traps
@skip_on_sim(SIM_TRAPS)
@pytest.mark.parametrize("case", list(VIOLATIONS))
def test_checked_mode_traps(case):
    stmt, message = VIOLATIONS[case]
    code = CHECKED_PRELUDE + f"""
@cuda.jit
def k(out, n):
    ac.cluster_dims(2)
    src = cuda.shared.array(64, np.int32, alignment=16)
    dst = cuda.shared.array(64, np.int32, alignment=16)
    src8 = cuda.shared.array(1024, np.uint8, alignment=16)
    dst8 = cuda.shared.array(1024, np.uint8, alignment=16)
    bar = cuda.shared.array(1, np.uint64, alignment=8)
    ac.mbarrier_init(bar, 1)
    ac.fence_mbarrier_init()
    ac.cluster_sync()
    if ac.cluster_cta_rank() == 0:
        {stmt}
    ac.cluster_sync()
try:
    k[2, 1](out, 2)
    cuda.synchronize()
    print("NO TRAP")
except Exception as e:
    print("LAUNCH FAILED:", type(e).__name__)
"""
    proc = run_python(code, timeout=120)
    text = proc.stdout + proc.stderr
    assert "LAUNCH FAILED" in text, text
    assert "numba_asynccopy checked mode: " + message in text, text
    assert "[block (0,0,0) thread (0,0,0)]" in text, text


@pytest.mark.parametrize("size", [2, 4, 16])
def test_remote_arrive_and_expect_tx_by_cta_rank_keyword(size):
    # test_remote_arrive_and_expect_tx with the cta_rank= keyword of the
    # mbarrier functions, the root's rank a run-time value
    @cuda.jit
    def remote_arrive_kw(A, out, out_bulk, root):
        tid = cuda.threadIdx.x  # 64 threads
        b = cuda.blockIdx.x
        rank = ac.cluster_cta_rank()
        n = ac.cluster_num_ctas()
        rows = cuda.shared.array((16, 64), np.int32)
        src = cuda.shared.array(64, np.int32, alignment=16)
        dst = cuda.shared.array(64, np.int32, alignment=16)
        bars = cuda.shared.array(2, np.uint64, alignment=8)
        if tid == 0:
            ac.mbarrier_init(bars[0:], 2 * (n - 1))
            ac.mbarrier_init(bars[1:], 1)
            ac.fence_mbarrier_init()
        src[tid] = A[b, tid] * 3
        ac.fence_proxy_async("shared::cta")
        ac.cluster_sync()
        if rank != root:
            ac.dsmem_store(rows, root, (rank, tid), A[b, tid])
            cuda.syncthreads()
            if tid == 0:
                ac.mbarrier_arrive(bars[0:], 2, sem="release", scope="cluster", cta_rank=root)
            if rank == 1 and tid == 0:
                ac.mbarrier_expect_tx(bars[1:], 128, cta_rank=root)
                ac.mbarrier_arrive_expect_tx(bars[1:], 128, cta_rank=root)
                ac.cp_async_bulk_cluster(dst, src, 256, bars[1:], root)
        else:
            while not ac.mbarrier_try_wait_parity(bars[0:], 0, sem="acquire", scope="cluster"):
                pass
            for r in range(1, n):
                out[b + r, tid] = rows[r, tid]
            ac.mbarrier_wait_parity(bars[1:], 0)
            out_bulk[b // n, tid] = dst[tid]
        ac.cluster_sync()

    nclusters = 2
    blocks = size * nclusters
    a = rng.integers(-2**20, 2**20, (blocks, 64), dtype=np.int32)
    out = dev_poisoned((blocks, 64), np.int32)
    out_bulk = dev_poisoned((nclusters, 64), np.int32)
    ac.launch(remote_arrive_kw, blocks, 64, (cuda.to_device(a), out, out_bulk, np.int32(0)),
              cluster=size, non_portable=size > 8)
    got = out.copy_to_host()
    rank = np.tile(np.arange(size), nclusters)
    np.testing.assert_array_equal(got[rank != 0], a[rank != 0])
    np.testing.assert_array_equal(out_bulk.copy_to_host(), a[rank == 1] * 3)
