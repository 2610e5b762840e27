"""Tensor-core MMA on the GPU (and, under NUMBA_ENABLE_CUDASIM=1, in the
simulator): mma.sync for bf16, fp16 and tf32 with both B layouts,
ldmatrix and stmatrix at every width with and without .trans, the masked
converting accumulator store, bf16 element conversions and the
hgemm_sm80 example at several shapes, against numpy on fresh random data
with every output poisoned before the launch."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.examples import hgemm_sm80

from ..conftest import SIM, skip_on_sim

pytestmark = pytest.mark.gpu

rng = np.random.default_rng()  # fresh data every run


def poisoned(shape, dtype) -> np.ndarray:
    out = np.empty(shape, dtype)
    out.view(np.uint8)[...] = 0x7F  # NaN for floats: an element never written shows
    return out


def inputs(dtype: str, shape) -> tuple[np.ndarray, np.ndarray]:
    """(the kernel's array, its exact float64 values) of random ``dtype`` data."""
    x = rng.standard_normal(shape).astype(np.float32)
    if dtype == "bf16":
        bits = ac.bf16_array(x)
        return bits, ac.bf16_values(bits).astype(np.float64)
    if dtype == "f16":
        h = x.astype(np.float16)
        return h, h.astype(np.float64)
    # tf32: the tensor core reads the upper 19 bits of each float32
    return x, x.astype(np.float64)


def assert_gemm_close(got, A, B, rtol: float, what: str) -> None:
    """|got - A @ B| <= rtol * (|A| @ |B|) elementwise (float32 accumulation
    of exact products: the error scales with the sum of |a*b|)."""
    ref = A @ B
    scale = np.abs(A) @ np.abs(B) + 1e-30
    err = np.abs(got.astype(np.float64) - ref) / scale
    assert np.isfinite(got).all(), f"{what}: unwritten (poisoned) or non-finite elements"
    assert err.max() <= rtol, f"{what}: max error {err.max():.3g} of sum|a*b| (allowed {rtol})"


def single_warp_kernel(dtype: str, layout: str, ksteps: int):
    kb = 8 if dtype == "tf32" else 16
    K = kb * ksteps
    elem = np.float32 if dtype == "tf32" else (np.uint16 if dtype == "bf16" else np.float16)
    bshape = (K, 8) if layout == "row" else (8, K)
    row_layout = layout == "row"  # a constant for the kernel (no string compare on the device)

    @cuda.jit
    def k(A, B, C):
        sa = cuda.shared.array((16, K), elem, alignment=16)
        sb = cuda.shared.array(bshape, elem, alignment=16)
        t = cuda.threadIdx.x
        for i in range(t, 16 * K, 32):
            sa[i // K, i % K] = A[i // K, i % K]
        for i in range(t, 8 * K, 32):
            r, c = i // bshape[1], i % bshape[1]
            sb[r, c] = B[r, c]
        cuda.syncthreads()
        acc = ac.mma_zeros()
        for s in range(ksteps):
            a = ac.mma_load_a(sa, 0, s * kb)
            if row_layout:
                b = ac.mma_load_b(sb, s * kb, 0, "row")
            else:
                b = ac.mma_load_b(sb, 0, s * kb, "col")
            acc = ac.mma_sync(a, b, acc, dtype)
        ac.mma_store(C, 0, 0, acc)

    return k, K


@pytest.mark.parametrize("layout", ["row", "col"])
@pytest.mark.parametrize("dtype", ["bf16", "f16", "tf32"])
def test_mma_sync_one_warp_tile_against_numpy(dtype, layout):
    k, K = single_warp_kernel(dtype, layout, 2)
    A, Av = inputs(dtype, (16, K))
    B, Bv = inputs(dtype, (K, 8))
    Bk = B if layout == "row" else np.ascontiguousarray(B.T)
    C = poisoned((16, 8), np.float32)
    k[1, 32](A, Bk, C)
    # bf16/f16 products are exact and summed in float32; tf32 drops 13 mantissa bits
    assert_gemm_close(C, Av, Bv, 2e-3 if dtype == "tf32" else 1e-5, f"mma_sync {dtype} {layout}")


def _ldmatrix_expected(tile: np.ndarray, num: int, trans: bool) -> np.ndarray:
    """regs[lane, i] per the PTX ISA: lane 8i + r gives row r of matrix i
    (here: tile row 8i + r); lane l gets row l // 4, columns 2 (l % 4), +1."""
    out = np.zeros((32, num), np.uint32)
    for i in range(num):
        m = tile[8 * i:8 * i + 8, :8]
        if trans:
            m = m.T
        for lane in range(32):
            g, q = lane // 4, lane % 4
            out[lane, i] = int(m[g, 2 * q]) | (int(m[g, 2 * q + 1]) << 16)
    return out


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("num", [1, 2, 4])
def test_ldmatrix_every_width_against_the_isa_layout(num, trans):
    @cuda.jit
    def k(T, out):
        sh = cuda.shared.array((32, 16), np.uint16, alignment=16)
        lane = cuda.threadIdx.x
        for c in range(16):
            sh[lane, c] = T[lane, c]
        cuda.syncthreads()
        # the rows in reverse order, at column 8: each lane's address is its own
        r = ac.ldmatrix(sh, (31 - lane, 8), num, trans=trans)
        for i in range(num):
            out[lane, i] = r[i]

    T = rng.integers(0, 1 << 16, (32, 16), dtype=np.uint16)
    out = poisoned((32, num), np.uint32)
    k[1, 32](T, out)
    np.testing.assert_array_equal(out, _ldmatrix_expected(T[::-1, 8:], num, trans))


@pytest.mark.skipif(not SIM and cuda.is_available() and cuda.get_current_device().compute_capability < (9, 0),
                    reason="stmatrix needs sm_90")
@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("num", [1, 2, 4])
def test_stmatrix_every_width_against_the_isa_layout(num, trans):
    @cuda.jit
    def k(R, out):
        sh = cuda.shared.array((32, 8), np.uint16, alignment=16)
        lane = cuda.threadIdx.x
        for c in range(8):
            sh[lane, c] = 0xFFFF
        cuda.syncthreads()
        if num == 1:
            ac.stmatrix(sh, (lane, 0), (R[lane, 0],), trans=trans)
        elif num == 2:
            ac.stmatrix(sh, (lane, 0), (R[lane, 0], R[lane, 1]), trans=trans)
        else:
            ac.stmatrix(sh, (lane, 0), (R[lane, 0], R[lane, 1], R[lane, 2], R[lane, 3]),
                        trans=trans)
        cuda.syncthreads()
        for c in range(8):
            out[lane, c] = sh[lane, c]

    R = rng.integers(0, 1 << 32, (32, 4), dtype=np.uint32)
    out = poisoned((32, 8), np.uint16)
    k[1, 32](R, out)
    want = np.full((32, 8), 0xFFFF, np.uint16)
    for i in range(num):
        m = np.zeros((8, 8), np.uint16)
        for lane in range(32):
            g, q = lane // 4, lane % 4
            m[g, 2 * q], m[g, 2 * q + 1] = R[lane, i] & 0xFFFF, R[lane, i] >> 16
        want[8 * i:8 * i + 8] = m.T if trans else m
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("out_dtype", ["float32", "float16", "bf16"])
def test_mma_store_masks_edges_and_converts(out_dtype):
    k, K = single_warp_kernel("bf16", "row", 1)
    A, Av = inputs("bf16", (16, K))
    B, Bv = inputs("bf16", (K, 8))
    ref = Av @ Bv
    # a 13 x 5 view of a 16 x 8 array: the fragment's rows 13..15 and columns
    # 5..7 fall outside the view and must stay poisoned in the array
    np_dt = np.uint16 if out_dtype == "bf16" else np.dtype(out_dtype)
    big = cuda.to_device(poisoned((16, 8), np_dt))
    k[1, 32](A, B, big[:13, :5])
    C = big.copy_to_host()
    got = ac.bf16_values(C) if out_dtype == "bf16" else C.astype(np.float64)
    tol = {"float32": 1e-5, "float16": 1e-3, "bf16": 8e-3}[out_dtype]
    scale = np.abs(Av) @ np.abs(Bv)
    err = np.abs(got[:13, :5] - ref[:13, :5]) / scale[:13, :5]
    assert err.max() <= tol, err.max()
    poison = poisoned((16, 8), np_dt)
    np.testing.assert_array_equal(C[13:].view(np.uint8), poison[13:].view(np.uint8))
    np.testing.assert_array_equal(C[:, 5:].view(np.uint8), poison[:, 5:].view(np.uint8))
    if out_dtype == "float16":  # round to nearest even of the float32 result
        k32, _ = single_warp_kernel("bf16", "row", 1)
        C32 = poisoned((16, 8), np.float32)
        k32[1, 32](A, B, C32)
        np.testing.assert_array_equal(C[:13, :5], C32[:13, :5].astype(np.float16))
    if out_dtype == "bf16":
        k32, _ = single_warp_kernel("bf16", "row", 1)
        C32 = poisoned((16, 8), np.float32)
        k32[1, 32](A, B, C32)
        np.testing.assert_array_equal(C[:13, :5], ac.bf16_array(C32[:13, :5]))


def test_bf16_element_conversions_round_to_nearest_even():
    @cuda.jit
    def k(X, Y):
        i = cuda.grid(1)
        if i < X.size:
            Y[i] = ac.f32_to_bf16(ac.bf16_to_f32(X[i]) * np.float32(1.0 / 3.0))

    X = ac.bf16_array(rng.standard_normal(256).astype(np.float32) * 100)
    Y = poisoned(256, np.uint16)
    k[2, 128](X, Y)
    want = ac.bf16_array(ac.bf16_values(X) * np.float32(1.0 / 3.0))
    np.testing.assert_array_equal(Y, want)


SIM_SHAPES = [(40, 24, 40)]
GPU_SHAPES = [(128, 128, 64), (200, 136, 72), (256, 512, 1024), (1000, 520, 264), (8, 8, 8)]


@pytest.mark.parametrize("dtype", hgemm_sm80.DTYPES)
@pytest.mark.parametrize("shape", SIM_SHAPES if SIM else GPU_SHAPES, ids=str)
def test_hgemm_sm80_matches_numpy(dtype, shape):
    M, N, K = shape
    hgemm_sm80.check_shape(M, N, K)
    A, Av = inputs(dtype, (M, K))
    B, Bv = inputs(dtype, (K, N))
    C = poisoned((M, N), np.float32)
    gemm = cuda.jit(hgemm_sm80.signature(dtype))(hgemm_sm80.make_hgemm(dtype, 3 if SIM else 4))
    gemm[hgemm_sm80.grid(M, N), hgemm_sm80.BLOCK](A, B, C)
    assert_gemm_close(C, Av, Bv, 1e-4, f"hgemm_sm80 {dtype} {shape}")


@pytest.mark.parametrize("out", ["float16", "bf16"])
def test_hgemm_sm80_converting_epilogue(out):
    M, N, K = (40, 24, 40) if SIM else (300, 264, 128)
    A, Av = inputs("bf16", (M, K))
    B, Bv = inputs("bf16", (K, N))
    C = poisoned((M, N), np.uint16 if out == "bf16" else np.float16)
    gemm = cuda.jit(hgemm_sm80.signature("bf16", out))(hgemm_sm80.make_hgemm("bf16", 3))
    gemm[hgemm_sm80.grid(M, N), hgemm_sm80.BLOCK](A, B, C)
    got = ac.bf16_values(C).astype(np.float64) if out == "bf16" else C.astype(np.float64)
    assert_gemm_close(got, Av, Bv, 8e-3 if out == "bf16" else 1e-3, f"hgemm_sm80 -> {out}")


# --- bf16/fp16 data as users hold it: torch tensors ------------------------------------------

SIM_TORCH = "torch CUDA tensors need a GPU"


@skip_on_sim(SIM_TORCH)
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_torch_tensors_launch_the_hgemm_and_view_as_device_arrays(dtype):
    torch = pytest.importorskip("torch")
    tdt = torch.bfloat16 if dtype == "bf16" else torch.float16
    M, N, K = 264, 200, 136
    A = torch.randn(M, K, device="cuda").to(tdt)
    B = torch.randn(K, N, device="cuda").to(tdt)
    C = torch.full((M, N), float("nan"), device="cuda")
    gemm = cuda.jit(hgemm_sm80.signature(dtype))(hgemm_sm80.make_hgemm(dtype))
    ac.launch(gemm, hgemm_sm80.grid(M, N), hgemm_sm80.BLOCK, (A, B, C))
    torch.cuda.synchronize()
    Av, Bv = A.double().cpu().numpy(), B.double().cpu().numpy()
    assert_gemm_close(C.cpu().numpy(), Av, Bv, 1e-4, f"torch {dtype} through ac.launch")
    d = ac.as_device_array(A)
    assert d.shape == (M, K) and d.dtype == (np.uint16 if dtype == "bf16" else np.float16)
    assert d.__cuda_array_interface__["data"][0] == A.data_ptr()  # a view, not a copy
    got = d.copy_to_host()
    want = A.view(torch.int16).cpu().numpy().view(np.uint16) if dtype == "bf16" else A.cpu().numpy()
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


@skip_on_sim(SIM_TORCH)
def test_kernels_read_and_write_torch_bf16_elements_without_bit_tricks():
    torch = pytest.importorskip("torch")

    @cuda.jit
    def axpy(X, Y):
        i = cuda.grid(1)
        if i < X.size:
            Y[i] = ac.f32_to_bf16(np.float32(2.0) * ac.bf16_to_f32(X[i]) + ac.bf16_to_f32(Y[i]))

    X = torch.randn(1000, device="cuda").bfloat16()
    Y = torch.randn(1000, device="cuda").bfloat16()
    want = (2.0 * X.float() + Y.float()).bfloat16()
    ac.launch(axpy, 8, 128, (X, Y))
    torch.cuda.synchronize()
    assert torch.equal(Y, want)


@skip_on_sim(SIM_TORCH)
@pytest.mark.parametrize("tdt", ["bfloat16", "float16"])
def test_tensor_maps_of_torch_bf16_and_fp16_tensors(tdt):
    torch = pytest.importorskip("torch")
    t = torch.randn(256, 128, device="cuda").to(getattr(torch, tdt))
    m = ac.TensorMap(t, (64, 64), swizzle=128)
    assert m.spec.dtype == tdt and m.spec.itemsize == 2

    @cuda.jit
    def copy_box(tmap, out):
        sh = cuda.shared.array((64, 64), np.uint16, alignment=1024)
        bar = cuda.shared.array(1, np.uint64)
        if cuda.threadIdx.x == 0:
            ac.mbarrier_init(bar[0:], 1)
            ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:
            ac.mbarrier_arrive_expect_tx(bar[0:], 64 * 64 * 2)
            ac.cp_async_bulk_tensor_load(sh, tmap, (128, 64), bar[0:])
        ac.mbarrier_wait_parity(bar[0:], 0)
        for i in range(cuda.threadIdx.x, 64 * 64, cuda.blockDim.x):
            out[i // 64, i % 64] = sh[i // 64, i % 64]

    out = poisoned((64, 64), np.uint16)
    ac.launch(copy_box, 1, 128, (m, out))
    bits = t.view(torch.int16).cpu().numpy().view(np.uint16)[128:192, 64:128]
    # the 128-byte swizzle: 16-byte chunk j of box row r lands at chunk j ^ (r % 8)
    want = np.empty_like(bits)
    for r in range(64):
        for j in range(8):
            want[r, 8 * (j ^ (r % 8)):8 * (j ^ (r % 8)) + 8] = bits[r, 8 * j:8 * j + 8]
    np.testing.assert_array_equal(out, want)
