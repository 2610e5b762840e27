"""TMA tensor copies on the GPU: 2-D and 3-D tile loads and stores of random
float32/float16/int8 tensors, out-of-bounds boxes zero-filled (and not
stored), each swizzle mode against the documented pattern, reductions,
multicast, maps over CuPy and PyTorch tensors, and checked-mode traps."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

from ..conftest import SIM_TRAPS, run_python, skip_on_sim

pytestmark = pytest.mark.gpu
rng = np.random.default_rng()


def random_tensor(shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def poisoned(shape, dtype):
    out = np.empty(shape, dtype)
    out.view(np.uint8)[...] = 0xA5
    return out


def box_of(a, coords, box):
    """a[c:c + b] per axis with out-of-bounds elements zero (TMA's zero fill)."""
    out = np.zeros(box, a.dtype)
    src, dst = [], []
    for c, b, n in zip(coords, box, a.shape):
        lo, hi = max(c, 0), min(c + b, n)
        if hi <= lo:
            return out
        src.append(slice(lo, hi))
        dst.append(slice(lo - c, hi - c))
    out[tuple(dst)] = a[tuple(src)]
    return out


def store_box(out, coords, tile):
    """What a TMA store of ``tile`` at ``coords`` writes: the in-bounds part."""
    src, dst = [], []
    for c, b, n in zip(coords, tile.shape, out.shape):
        lo, hi = max(c, 0), min(c + b, n)
        if hi <= lo:
            return
        dst.append(slice(lo, hi))
        src.append(slice(lo - c, hi - c))
    out[tuple(dst)] = tile[tuple(src)]


def swizzled(dense: np.ndarray, swizzle: int | None) -> np.ndarray:
    """The shared-memory byte image of a box under a TMA swizzle mode.

    The documented pattern (CUDA programming guide, TMA swizzle; CUTLASS
    Swizzle<B, 4, 3>): the 16-byte unit at byte offset ``o`` of the tile
    (1024-byte aligned) is stored at ``o ^ (((o >> 7) & (swizzle/16 - 1)) << 4)``.
    """
    raw = np.ascontiguousarray(dense).view(np.uint8).reshape(-1)
    if swizzle is None:
        return raw.copy()
    mask = swizzle // 16 - 1
    out = np.empty_like(raw)
    for o in range(0, raw.size, 16):
        d = o ^ (((o >> 7) & mask) << 4)
        out[d:d + 16] = raw[o:o + 16]
    return out


_kernels = {}


def tile_kernel(box, dtype, checked=False):
    """load box at coords -> raw shared bytes to ``raw``; store it back at ``out_coords``."""
    key = (tuple(box), np.dtype(dtype).name, checked)
    if key in _kernels:
        return _kernels[key]
    rank = len(box)
    cs = ", ".join(f"c[{i}]" for i in range(rank))
    ds = ", ".join(f"d[{i}]" for i in range(rank))
    n = int(np.prod(box))
    nbytes = n * np.dtype(dtype).itemsize
    # tile[idx] by its linear C-order index: the shared bytes in address order
    strides = [int(np.prod(box[i + 1:])) for i in range(rank)]
    idx = ", ".join(f"(i // {s}) % {b}" for s, b in zip(strides, box))
    src = textwrap.dedent(f"""
    def k(tmap, omap, raw, c, d):
        tile = cuda.shared.array({tuple(box)}, np.{np.dtype(dtype).name}, alignment=1024)
        bar = cuda.shared.array(1, np.uint64)
        tid = cuda.threadIdx.x
        if tid == 0:
            ac.mbarrier_init(bar, 1)
            ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if tid == 0:
            ac.prefetch_tensormap(tmap)
            ac.mbarrier_arrive_expect_tx(bar, {nbytes})
            ac.cp_async_bulk_tensor_load(tile, tmap, ({cs},), bar)
        ac.mbarrier_wait_parity(bar, 0)
        for i in range(tid, {n}, cuda.blockDim.x):
            raw[i] = tile[{idx}]
        cuda.syncthreads()
        if tid == 0:
            ac.cp_async_bulk_tensor_store(omap, ({ds},), tile)
            ac.bulk_commit_group()
            ac.bulk_wait_group(0)
    """)
    g = {"cuda": cuda, "np": np, "ac": ac}
    exec(src, g)
    with ac.checked_mode(checked):
        _kernels[key] = cuda.jit(g["k"])
    return _kernels[key]


def run_tile(a_dev, a, box, coords, out_coords, swizzle=None, checked=False):
    """Load the box of ``a_dev`` at ``coords`` (raw shared bytes checked against
    the swizzle pattern) and store it into a poisoned copy at ``out_coords``."""
    dtype = a.dtype
    out = poisoned(a.shape, dtype)
    d_out = cuda.to_device(out)
    tmap = ac.TensorMap(a_dev, box, swizzle=swizzle)
    omap = ac.TensorMap(d_out, box, swizzle=swizzle)
    assert tmap.box_bytes == int(np.prod(box)) * a.dtype.itemsize
    raw = cuda.to_device(poisoned((int(np.prod(box)),), dtype))
    k = tile_kernel(box, dtype, checked)
    k[1, 128](tmap, omap, raw, np.array(coords, np.int32), np.array(out_coords, np.int32))
    dense = box_of(a, coords, box)
    got_raw = raw.copy_to_host().view(np.uint8)
    np.testing.assert_array_equal(got_raw, swizzled(dense, swizzle))
    expected_out = out.copy()
    store_box(expected_out, out_coords, dense)
    np.testing.assert_array_equal(d_out.copy_to_host(), expected_out)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
@pytest.mark.parametrize("where", ["inside", "edge", "negative"])
@pytest.mark.parametrize("checked", [False, True])
def test_2d_tile_load_and_store(dtype, where, checked):
    isz = np.dtype(dtype).itemsize
    box = (16, 64 // isz)  # 64-byte rows
    shape = (int(rng.integers(40, 90)), int(rng.integers(3, 9)) * (16 // isz) * 4 + 16 // isz)
    a = random_tensor(shape, dtype)
    unit = 16 // isz  # box starts on 16-byte boundaries (see tensor.check_inner_coord)
    if where == "inside":
        coords = (int(rng.integers(0, shape[0] - box[0])),
                  int(rng.integers(0, (shape[1] - box[1]) // unit)) * unit)
    elif where == "edge":  # the box runs past both far edges: zero fill, partial store
        coords = (shape[0] - box[0] // 2, shape[1] - box[1] // 2)
    else:  # before the start of both axes
        coords = (-5, -(box[1] // 2))
    # stores need coordinates >= 0 (tensor.cp_async_bulk_tensor_store)
    out_coords = {"inside": (shape[0] - box[0], 0), "edge": coords, "negative": (0, 0)}[where]
    run_tile(cuda.to_device(a), a, box, coords, out_coords, checked=checked)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
@pytest.mark.parametrize("checked", [False, True])
def test_3d_tile_load_and_store_with_oob(dtype, checked):
    isz = np.dtype(dtype).itemsize
    box = (2, 8, 32 // isz)
    shape = (5, int(rng.integers(20, 40)), 48 // isz + 32 // isz)
    a = random_tensor(shape, dtype)
    coords = (3, shape[1] - 5, shape[2] - (16 // isz))  # past the end of all three axes
    run_tile(cuda.to_device(a), a, box, coords, (1, 2, 0), checked=checked)
    coords = (int(rng.integers(0, 3)), int(rng.integers(0, shape[1] - 8)), 16 // isz)
    run_tile(cuda.to_device(a), a, box, coords, coords, checked=checked)


@pytest.mark.parametrize("swizzle,dtype", [
    (32, np.float32), (64, np.float16), (128, np.int8), (128, np.float32), (64, np.float32),
])
@pytest.mark.parametrize("checked", [False, True])
def test_swizzle_modes_match_the_documented_pattern(swizzle, dtype, checked):
    isz = np.dtype(dtype).itemsize
    box = (16, swizzle // isz)  # inner box = the swizzle span: 16 rows = 2+ pattern repeats
    shape = (64, 4 * swizzle // isz)
    a = random_tensor(shape, dtype)
    coords = (int(rng.integers(0, 48)), int(rng.integers(0, 3)) * (swizzle // isz))
    # the store un-swizzles: the tensor written back equals the source box
    run_tile(cuda.to_device(a), a, box, coords, coords, swizzle=swizzle, checked=checked)


def test_swizzle_changes_the_layout():
    # guard against a swizzle that silently does nothing
    dense = np.arange(16 * 128, dtype=np.uint8).reshape(16, 128)
    assert not np.array_equal(swizzled(dense, 128), dense.reshape(-1))
    assert np.array_equal(np.sort(swizzled(dense, 128)), np.sort(dense.reshape(-1)))


@skip_on_sim("a CuPy device array needs a real GPU")
def test_tensor_map_from_cupy():
    cp = pytest.importorskip("cupy")
    a = random_tensor((70, 96), np.float32)
    box = (16, 32)
    run_tile(cp.asarray(a), a, box, (60, 80), (60, 80))


@skip_on_sim("a PyTorch CUDA tensor needs a real GPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
def test_tensor_map_from_torch(dtype):
    torch = pytest.importorskip("torch")
    isz = np.dtype(dtype).itemsize
    a = random_tensor((3, 33, 128 // isz), dtype)
    t = torch.from_numpy(a).cuda()
    box = (2, 8, 64 // isz)
    run_tile(t, a, box, (2, 30, 64 // isz), (0, 0, 0))


def test_tensor_map_of_a_strided_view_keeps_the_tensor_alive():
    import gc

    a = random_tensor((64, 96), np.float32)
    big = cuda.to_device(a)
    view = big[8:56, 32:96]  # row stride 384 bytes, not contiguous
    tmap = ac.TensorMap(view, (16, 32))
    del big, view
    gc.collect()
    assert tmap.array is not None
    out = cuda.to_device(poisoned((48, 64), np.float32))
    omap = ac.TensorMap(out, (16, 32))
    raw = cuda.to_device(poisoned((16 * 32,), np.float32))
    tile_kernel((16, 32), np.float32)[1, 128](tmap, omap, raw, np.array([40, 16], np.int32),
                                             np.array([0, 0], np.int32))
    np.testing.assert_array_equal(raw.copy_to_host().reshape(16, 32), box_of(a[8:56, 32:96], (40, 16), (16, 32)))


def reduce_tile_kernel(op, dtype):
    src = textwrap.dedent(f"""
    def k(omap, S, d):
        tile = cuda.shared.array((8, 32), np.{np.dtype(dtype).name}, alignment=128)
        tid = cuda.threadIdx.x
        for i in range(tid, 256, cuda.blockDim.x):
            tile[i // 32, i % 32] = S[i // 32, i % 32]
        ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if tid == 0:
            ac.cp_reduce_async_bulk_tensor(omap, (d[0], d[1]), tile, {op!r})
            ac.bulk_commit_group()
            ac.bulk_wait_group(0)
    """)
    g = {"cuda": cuda, "np": np, "ac": ac}
    exec(src, g)
    return cuda.jit(g["k"])


@pytest.mark.parametrize("op,dtype", [
    ("add", np.float32), ("add", np.int32), ("add", np.uint32), ("min", np.int32), ("max", np.uint32),
    ("inc", np.uint32), ("dec", np.uint32), ("and", np.int32), ("or", np.uint32), ("xor", np.int32),
    ("max", np.int32),
])
def test_tensor_reduction(op, dtype):
    if np.dtype(dtype).kind == "f":
        dst, src = random_tensor((20, 40), dtype), random_tensor((8, 32), dtype)
    else:
        dst = rng.integers(0, 40, (20, 40)).astype(dtype)
        src = rng.integers(0, 40, (8, 32)).astype(dtype)
    d_dst = cuda.to_device(dst)
    omap = ac.TensorMap(d_dst, (8, 32))
    coords = (15, 20)  # partly out of bounds: those elements are not reduced
    reduce_tile_kernel(op, dtype)[1, 64](omap, cuda.to_device(src), np.array(coords, np.int32))
    expected = dst.copy()
    region = expected[15:20, 20:40]
    s = src[:5, :20]
    fn = {"add": lambda x, y: x + y, "min": np.minimum, "max": np.maximum,
          "inc": lambda x, y: np.where(x >= y, 0, x + 1).astype(x.dtype),
          "dec": lambda x, y: np.where((x == 0) | (x > y), y, x - 1).astype(x.dtype),
          "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
    expected[15:20, 20:40] = fn(region, s)
    np.testing.assert_array_equal(d_dst.copy_to_host(), expected)


CLUSTER = 2


@cuda.jit
def tma_multicast(tmap, out):
    ac.cluster_dims(CLUSTER)
    tile = cuda.shared.array((16, 32), np.float32, alignment=128)
    bar = cuda.shared.array(1, np.uint64)
    tid = cuda.threadIdx.x
    rank = ac.cluster_cta_rank()
    cluster = cuda.blockIdx.x // CLUSTER
    if tid == 0:
        ac.mbarrier_init(bar, 1)
        ac.fence_mbarrier_init()
    ac.fence_proxy_async("shared::cta")
    ac.cluster_sync()
    if tid == 0:
        ac.mbarrier_arrive_expect_tx(bar, 16 * 32 * 4)
        if rank == 0:
            ac.cp_async_bulk_tensor_load(tile, tmap, (16 * cluster, 0), bar, multicast_mask=0b11)
    ac.mbarrier_wait_parity(bar, 0)
    for i in range(tid, 512, cuda.blockDim.x):
        out[cuda.blockIdx.x, i // 32, i % 32] = tile[i // 32, i % 32]
    ac.cluster_sync()


@pytest.mark.parametrize("checked", [False, True])
def test_tma_multicast_to_the_cluster(checked):
    a = random_tensor((48, 32), np.float32)
    with ac.checked_mode(checked):
        kernel = cuda.jit(tma_multicast.py_func)
    out = cuda.to_device(poisoned((6, 16, 32), np.float32))
    kernel[6, 128](ac.TensorMap(cuda.to_device(a), (16, 32)), out)
    got = out.copy_to_host()
    for b in range(6):
        np.testing.assert_array_equal(got[b], a[16 * (b // 2):16 * (b // 2) + 16], err_msg=f"block {b}")


TRAP = """
import numpy as np
from numba import cuda
import numba_asynccopy as ac
ac.set_checked(True, timeout_ns=300_000_000)

@cuda.jit
def k(tmap, case):
    big = cuda.shared.array((17, 32), np.float16, alignment=1024)
    bar = cuda.shared.array(1, np.uint64)
    if cuda.threadIdx.x == 0:
        ac.mbarrier_init(bar, 1)
        ac.fence_proxy_async("shared::cta")
        if case == 0:    # tile 64 bytes past a 1024-byte boundary
            ac.cp_async_bulk_tensor_load(big[1:], tmap, (0, 0), bar)
        elif case == 1:  # 15 rows: not one box
            ac.cp_async_bulk_tensor_load(big[:15], tmap, (0, 0), bar)
        elif case == 2:  # 3 coordinates for a 2-D map
            ac.cp_async_bulk_tensor_store(tmap, (0, 0, 0), big[:16])
        elif case == 3:  # a plain uint64 array, not a TensorMap buffer
            ac.cp_async_bulk_tensor_store(tmap, (0, 0), big[:16])
        elif case == 4:  # innermost coordinate 3 x 2 bytes: not 16-byte aligned
            ac.cp_async_bulk_tensor_load(big[:16], tmap, (0, 3), bar)
        elif case == 5:  # a store at a negative row (a run-time value: a constant is a compile error)
            ac.cp_async_bulk_tensor_store(tmap, (case - 6, 0), big[:16])

a = cuda.to_device(np.zeros((64, 64), np.float16))
tmap = ac.TensorMap(a, (16, 32), swizzle=64)
bogus = cuda.to_device(np.zeros(32, np.uint64))
CASE = {case}
try:
    k[1, 32](bogus if CASE == 3 else tmap, CASE)
    cuda.synchronize()
    print("NO TRAP")
except Exception as e:
    print("LAUNCH FAILED", type(e).__name__)
"""


@pytest.mark.traps
@skip_on_sim(SIM_TRAPS)
@pytest.mark.parametrize("case,message", [
    (0, "cp_async_bulk_tensor_load: `dst` (shared address 0x"),
    (1, "cp_async_bulk_tensor_load: `dst` has 960 bytes but one box of the tensor map has 1024"),
    (2, "cp_async_bulk_tensor_store: `coords` has 3 entries but the tensor map has rank 2"),
    (3, "cp_async_bulk_tensor_store: `tensor_map` is not an ac.TensorMap buffer (bad magic word)"),
    (4, "cp_async_bulk_tensor_load: the innermost coordinate 3 x 2-byte elements is not a "
        "multiple of 16 bytes"),
    (5, "cp_async_bulk_tensor_store: `coords`[0]=-1 is negative; tensor stores and reductions "
        "need coordinates >= 0"),
])
def test_checked_mode_traps(case, message):
    proc = run_python(TRAP.format(case=case), timeout=180)
    out = proc.stdout + proc.stderr
    assert "LAUNCH FAILED" in out, out
    assert "numba_asynccopy checked mode: " + message in out, out
    if case == 0:
        assert "is not 512-byte aligned as this tensor map needs" in out, out


@pytest.mark.parametrize("checked", [False, True])
def test_prefetch_tensor_then_load_reads_the_same_boxes(checked):
    """cp.async.bulk.prefetch.tensor is a hint: boxes prefetched (some past
    the far edge) and then loaded come back exact, in checked mode too."""
    a = random_tensor((64, 96), np.float32)
    box = (16, 32)
    src = textwrap.dedent("""
    def k(tmap, out, coords):
        tile = cuda.shared.array((16, 32), np.float32, alignment=1024)
        bar = cuda.shared.array(1, np.uint64)
        tid = cuda.threadIdx.x
        if tid == 0:
            ac.mbarrier_init(bar, 1)
            ac.fence_proxy_async("shared::cta")
            for j in range(coords.shape[0]):
                ac.cp_async_bulk_prefetch_tensor(tmap, (coords[j, 0], coords[j, 1]))
        cuda.syncthreads()
        for j in range(coords.shape[0]):
            if tid == 0:
                ac.mbarrier_arrive_expect_tx(bar, 16 * 32 * 4)
                ac.cp_async_bulk_tensor_load(tile, tmap, (coords[j, 0], coords[j, 1]), bar)
            ac.mbarrier_wait_parity(bar, j & 1)
            for i in range(tid, 16 * 32, cuda.blockDim.x):
                out[j, i // 32, i % 32] = tile[i // 32, i % 32]
            cuda.syncthreads()
    """)
    g = {"cuda": cuda, "np": np, "ac": ac}
    exec(src, g)
    with ac.checked_mode(checked):
        k = cuda.jit(g["k"])
    coords = np.array([[0, 0], [16, 32], [48, 64], [56, 80]], np.int32)
    out = cuda.to_device(poisoned((len(coords),) + box, np.float32))
    k[1, 128](ac.TensorMap(cuda.to_device(a), box), out, cuda.to_device(coords))
    got = out.copy_to_host()
    for j, c in enumerate(coords):
        np.testing.assert_array_equal(got[j], box_of(a, tuple(c), box))
