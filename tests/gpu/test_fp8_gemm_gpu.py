"""The fp8 GEMM example on the GPU: C = scale_a * scale_b * (A @ Bt.T) for
e4m3 and e5m2 inputs at several shapes, tile multiples and not (TMA
zero-fill, masked stores), float32 and converted outputs, against numpy on
inputs whose sums are exact (fp8 MMAs add with fewer bits than fp32);
random normal inputs against torch._scaled_mm where torch is installed.
Outputs start as poison."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numba_asynccopy.examples import fp8_gemm

from ..conftest import SIM, skip_on_sim

pytestmark = pytest.mark.gpu
rng = np.random.default_rng()

LARGE = skip_on_sim("large shape: minutes in the simulator (tests/sim/test_sim_wgmma.py runs "
                    "a small edge shape there)")


def exact_inputs(shape, dtype):
    """fp8 bits of values in {0, +-1/2, +-1}: every partial sum is exact."""
    s, e = rng.integers(0, 2, shape), rng.integers(0, 3, shape)
    bias, shift = (7, 3) if dtype == "e4m3" else (15, 2)
    bits = np.where(e == 0, 0, (s << 7) | ((bias - 2 + e) << shift)).astype(np.uint8)
    return bits, fp8_gemm.decode(bits, dtype)


@pytest.mark.parametrize("M,N,K", [(128, 128, 128), (200, 136, 80), (64, 8, 16),
                                   pytest.param(300, 264, 1008, marks=LARGE),
                                   pytest.param(512, 512, 2048, marks=LARGE)])
@pytest.mark.parametrize("bn,dtype", [(128, "e4m3"), (256, "e4m3"), (64, "e5m2")])
def test_fp8_gemm_matches_numpy(M, N, K, bn, dtype):
    a, av = exact_inputs((M, K), dtype)
    bt, btv = exact_inputs((N, K), dtype)
    ref = (0.5 * 0.25 * (av @ btv.T)).astype(np.float32)
    g = fp8_gemm.make_fp8_gemm(bn=bn, dtype=dtype, out="float32")
    c = cuda.to_device(np.full((M, N), np.nan, np.float32))
    fp8_gemm.run(g, cuda.to_device(a), cuda.to_device(bt), c, 0.5, 0.25)
    np.testing.assert_array_equal(c.copy_to_host(), ref)


@pytest.mark.parametrize("out", ["bf16", "float16"])
def test_fp8_gemm_converted_output(out):
    M, N, K = 192, 200, 256
    a, av = exact_inputs((M, K), "e4m3")
    bt, btv = exact_inputs((N, K), "e4m3")
    ref = (av @ btv.T).astype(np.float32)  # small integers and halves: exact in bf16 and f16
    g = fp8_gemm.make_fp8_gemm(bn=128, out=out)
    dt = np.uint16 if out == "bf16" else np.float16
    c = cuda.to_device(np.full((M, N), 0x7E7E if out == "bf16" else np.nan, dt))
    fp8_gemm.run(g, cuda.to_device(a), cuda.to_device(bt), c)
    want = (ref.view(np.uint32) >> 16).astype(np.uint16) if out == "bf16" else ref.astype(np.float16)
    np.testing.assert_array_equal(c.copy_to_host(), want)


def test_fp8_gemm_against_torch_scaled_mm():
    """Random normal e4m3 inputs, K = 1024: within bf16 rounding of cuBLAS's
    fp8 GEMM with the same per-tensor scales."""
    torch = pytest.importorskip("torch")
    M, N, K = 256, 384, 1024
    A = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
    Bt = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
    sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(2.0, device="cuda")
    peer = torch._scaled_mm(A, Bt.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    g = fp8_gemm.make_fp8_gemm(bn=128, out="bf16")
    fp8_gemm.run(g, A.view(torch.uint8), Bt.view(torch.uint8), C.view(torch.uint16), 0.5, 2.0)
    torch.cuda.synchronize()
    ref = A.double() @ Bt.double().t()
    got, want = C.double(), peer.double()
    assert not torch.isnan(got).any()
    scale = ref.abs().max().item()
    assert (got - ref).abs().max().item() <= 2.0 ** -7 * scale
    assert (got - want).abs().max().item() <= 2.0 ** -7 * scale


def test_fp8_gemm_bind_launches_repeatedly_with_device_arrays():
    # (one k-tile in the simulator, two on the GPU: the launcher's reuse is
    # the point here; the converted-output and edge-shape tests walk several
    # k-tiles in the simulator)
    M, N, K = 136, 136, 64 if SIM else 160
    a, av = exact_inputs((M, K), "e4m3")
    bt, btv = exact_inputs((N, K), "e4m3")
    ref = (0.5 * 0.25 * (av @ btv.T)).astype(np.float32)
    g = fp8_gemm.make_fp8_gemm(bn=128, out="float32")
    c = cuda.to_device(np.full((M, N), np.nan, np.float32))
    go = fp8_gemm.bind(g, cuda.to_device(a), cuda.to_device(bt), c, 0.5, 0.25)
    assert go.grid == fp8_gemm.grid(M, N, 128) == (2, 2)
    go()
    np.testing.assert_array_equal(c.copy_to_host(), ref)
    c[:] = np.nan
    go()  # the same launcher again
    np.testing.assert_array_equal(c.copy_to_host(), ref)


@skip_on_sim("torch CUDA tensors")
def test_fp8_gemm_bind_takes_torch_tensors():
    torch = pytest.importorskip("torch")
    M, N, K = 200, 264, 272
    a, av = exact_inputs((M, K), "e4m3")
    bt, btv = exact_inputs((N, K), "e4m3")
    ref = (0.5 * 0.25 * (av @ btv.T)).astype(np.float32)
    g = fp8_gemm.make_fp8_gemm(bn=256, out="float32")
    ta, tbt = torch.from_numpy(a).cuda(), torch.from_numpy(bt).cuda()
    tc = torch.full((M, N), float("nan"), device="cuda")
    go = fp8_gemm.bind(g, ta, tbt, tc, 0.5, 0.25)
    go()
    torch.cuda.synchronize()
    np.testing.assert_array_equal(tc.cpu().numpy(), ref)


def test_fp8_gemm_bind_refuses_mismatched_k():
    g = fp8_gemm.make_fp8_gemm(bn=128, out="float32")
    a = cuda.to_device(np.zeros((64, 32), np.uint8))
    bt = cuda.to_device(np.zeros((64, 48), np.uint8))
    with pytest.raises(ValueError, match=r"A is \(M, 32\) but Bt is \(N, 48\)"):
        fp8_gemm.bind(g, a, bt, cuda.to_device(np.zeros((64, 64), np.float32)))
