"""The HGEMM example on the GPU: C = A @ B for bf16 and fp16 at several
shapes, tile multiples and not (TMA zero-fill, masked stores), fp32 and
converted outputs, against numpy on inputs whose fp32 sums are exact;
outputs start as poison."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numba_asynccopy.examples import hgemm

from ..conftest import SIM, skip_on_sim

pytestmark = pytest.mark.gpu
rng = np.random.default_rng()


def inputs(shape, dtype):
    v = (rng.integers(-8, 9, shape) / 8).astype(np.float32)
    if dtype == "bf16":
        return (v.view(np.uint32) >> 16).astype(np.uint16), v.astype(np.float64)
    return v.astype(np.float16), v.astype(np.float64)


def to_bf16_bits(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def check_f32(M, N, K, dtype, blocks=None, **make):
    """C = A @ B (exact sums) through ``make_hgemm(dtype=dtype, **make)`` into
    a NaN-poisoned float32 C, equal to numpy's."""
    a, av = inputs((M, K), dtype)
    b, bv = inputs((K, N), dtype)
    ref = (av @ bv).astype(np.float32)
    g = hgemm.make_hgemm(dtype=dtype, **make)
    c = cuda.to_device(np.full((M, N), np.nan, np.float32))
    hgemm.run(g, cuda.to_device(a), cuda.to_device(b), c, blocks=blocks)
    np.testing.assert_array_equal(c.copy_to_host(), ref)


def check_converted(M, N, K, out, blocks=None, **make):
    """The same in bf16 inputs with a 16-bit ``out`` C (poisoned), compared
    bit for bit with numpy's float32 result rounded to ``out``."""
    a, av = inputs((M, K), "bf16")
    b, bv = inputs((K, N), "bf16")
    ref = (av @ bv).astype(np.float32)
    g = hgemm.make_hgemm(dtype="bf16", out=out, **make)
    dt = np.uint16 if out == "bf16" else np.float16
    c = cuda.to_device(np.full((M, N), 0x7E7E if out == "bf16" else np.nan, dt))
    hgemm.run(g, cuda.to_device(a), cuda.to_device(b), c, blocks=blocks)
    want = to_bf16_bits(ref) if out == "bf16" else ref.astype(np.float16)
    np.testing.assert_array_equal(c.copy_to_host().view(np.uint8), want.view(np.uint8))


LARGE = skip_on_sim("large shape: minutes in the simulator (tests/sim/test_sim_wgmma.py and "
                    "the small shapes here run there)")


@pytest.mark.parametrize("M,N,K", [(128, 128, 64), pytest.param(256, 512, 512, marks=LARGE),
                                   (200, 136, 72), (64, 8, 8),
                                   pytest.param(300, 264, 1000, marks=LARGE)])
@pytest.mark.parametrize("bn,dtype", [(128, "bf16"), (256, "f16"), (64, "bf16")])
def test_hgemm_matches_numpy(M, N, K, bn, dtype):
    check_f32(M, N, K, dtype, bn=bn)


#: K of the converted-output tests: one k-tile in the simulator (the store is
#: what they test; the f32 tests walk several k-tiles there), two on the GPU
CONVERTED_K = 64 if SIM else 128


@pytest.mark.parametrize("out", ["bf16", "float16"])
def test_hgemm_converted_output(out):
    check_converted(192, 200, CONVERTED_K, out, bn=128)


@pytest.mark.parametrize("M,N,K,blocks", [(128, 256, 64, None),
                                           pytest.param(300, 264, 1000, 3, marks=LARGE),
                                           pytest.param(1000, 1000, 200, None, marks=LARGE),
                                           pytest.param(136, 520, 72, 1, marks=LARGE),
                                           pytest.param(4096, 2048, 128, 7, marks=LARGE)])
@pytest.mark.parametrize("bn,dtype", [(256, "bf16"), (128, "f16")])
def test_hgemm_persistent_matches_numpy(M, N, K, blocks, bn, dtype):
    # non-multiples of the tile, a block walking many tiles (blocks < tiles), the default grid
    check_f32(M, N, K, dtype, blocks, bn=bn, persistent=True)


@pytest.mark.parametrize("out", ["bf16", "float16"])
@pytest.mark.parametrize("M,N", [pytest.param(512, 512, marks=LARGE), (200, 264)])
def test_hgemm_persistent_converted_output(out, M, N):
    # 16-bit stores: the paired fast path (whole 64 x 256 blocks) and the masked edges
    check_converted(M, N, CONVERTED_K, out, 2, bn=256, persistent=True)


def test_hgemm_store_into_a_strided_view_takes_the_masked_path():
    # C a column slice of a wider array: rows 1028 bytes apart, the first element 4 bytes past
    # an 8-byte boundary, so the float32 pairs are misaligned and the store takes the masked path
    M, N, K = 128, 256, 64
    a, av = inputs((M, K), "bf16")
    b, bv = inputs((K, N), "bf16")
    ref = (av @ bv).astype(np.float32)
    g = hgemm.make_hgemm(bn=256, dtype="bf16", out="float32")
    wide = cuda.to_device(np.full((M, N + 1), np.nan, np.float32))
    hgemm.run(g, cuda.to_device(a), cuda.to_device(b), wide[:, 1:])
    got = wide.copy_to_host()
    np.testing.assert_array_equal(got[:, 1:], ref)
    assert np.isnan(got[:, 0]).all()


@pytest.mark.parametrize("M,N,K,blocks", [(256, 256, 64, None),
                                           pytest.param(300, 264, 1000, 2, marks=LARGE),
                                           pytest.param(1000, 1000, 200, None, marks=LARGE),
                                           pytest.param(136, 520, 72, 4, marks=LARGE),
                                           pytest.param(4096, 2048, 128, 6, marks=LARGE)])
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_hgemm_cluster_matches_numpy(M, N, K, blocks, dtype):
    # 2-CTA clusters multicasting B: an odd count of m-tiles (the pair's second tile empty),
    # pairs walking several tile pairs, the default grid
    check_f32(M, N, K, dtype, blocks, bn=256, persistent=True, cluster=2)


def test_hgemm_run_refuses_blocks_for_a_kernel_that_is_not_persistent():
    g = hgemm.make_hgemm(bn=128, dtype="bf16")
    z = cuda.to_device(np.zeros((64, 64), np.uint16))
    with pytest.raises(ValueError, match="only a persistent kernel"):
        hgemm.run(g, z, z, cuda.to_device(np.zeros((64, 64), np.float32)), blocks=2)
    g2 = hgemm.make_hgemm(bn=256, dtype="bf16", persistent=True, cluster=2)
    with pytest.raises(ValueError, match="a multiple of its cluster"):
        hgemm.run(g2, z, z, cuda.to_device(np.zeros((64, 64), np.float32)), blocks=3)
    with pytest.raises(ValueError, match="persistent=True only"):
        hgemm.make_hgemm(bn=256, cluster=2)


def test_hgemm_rejects_shapes_tma_cannot_map():
    with pytest.raises(ValueError, match="multiples of 8"):
        hgemm.check_shape(128, 100, 64)


@LARGE
@pytest.mark.parametrize("persistent", [False, True])
def test_hgemm_bind_launches_repeatedly_with_device_arrays_and_torch_tensors(persistent):
    M, N, K = 264, 520, 136
    a, av = inputs((M, K), "bf16")
    b, bv = inputs((K, N), "bf16")
    ref = (av @ bv).astype(np.float32)
    g = hgemm.make_hgemm(bn=256, dtype="bf16", persistent=persistent)
    c = cuda.to_device(np.full((M, N), np.nan, np.float32))
    go = hgemm.bind(g, cuda.to_device(a), cuda.to_device(b), c)
    go()
    np.testing.assert_array_equal(c.copy_to_host(), ref)
    c[:] = np.nan
    go()  # the same launcher again
    np.testing.assert_array_equal(c.copy_to_host(), ref)
    torch = pytest.importorskip("torch")
    ta = torch.from_numpy(a.view(np.int16)).cuda().view(torch.bfloat16)
    tb = torch.from_numpy(b.view(np.int16)).cuda().view(torch.bfloat16)
    tc = torch.full((M, N), float("nan"), device="cuda")
    hgemm.bind(g, ta, tb, tc)()
    np.testing.assert_array_equal(tc.cpu().numpy(), ref)
