"""im2col TensorMap validation (pure Python, no GPU): every documented rule
of cuTensorMapEncodeIm2col is a ValueError naming the argument and the rule,
a valid description reaches the driver innermost first, and the numpy
reference gather follows the documented geometry."""

from __future__ import annotations

import numpy as np
import pytest

import numba_asynccopy as ac
from numba_asynccopy.host import im2col as ic
from numba_asynccopy.host import tensor_map as tm


def cai(shape, dtype=np.float32, strides=None, address=0x7F0000000000):
    return {"shape": tuple(shape), "typestr": np.dtype(dtype).str, "data": (address, False),
            "strides": strides, "version": 3}


def good(**kw):
    args = dict(channels_per_pixel=16, pixels_per_column=32, lower_corner=(-1, -1),
                upper_corner=(-1, -1))
    args.update(kw)
    return args


def test_spec_of_an_nhwc_float32_tensor():
    spec = ic.describe_im2col(cai((2, 10, 12, 64)), **good())
    assert spec.mode == "im2col" and spec.rank == 4
    assert spec.global_dim == (64, 12, 10, 2)
    assert spec.global_strides == (256, 12 * 256, 10 * 12 * 256)
    assert spec.box == (32, 16) and spec.box_dim == (16, 32)
    assert spec.box_bytes == 32 * 16 * 4 and spec.smem_alignment == 128
    assert spec.spatial_box() == ((-1, 8), (-1, 10))
    words = spec.metadata()
    assert words[tm.W_MODE - 16] == ic.MODE_IM2COL and words[tm.W_RANK - 16] == 4
    assert words[tm.W_BOX_BYTES - 16] == 2048
    # checked mode's bounding-box words: (last << 32) | (first & 0xFFFFFFFF), array order
    assert words[tm.W_IM2COL_BOX - 16] == (8 << 32) | 0xFFFFFFFF
    assert words[tm.W_IM2COL_BOX - 16 + 1] == (10 << 32) | 0xFFFFFFFF
    # a tiled map's mode word is 0
    assert tm.describe(cai((8, 8)), (8, 8)).metadata()[tm.W_MODE - 16] == ic.MODE_TILE


def test_corners_reach_the_driver_innermost_first():
    spec = ic.describe_im2col(cai((2, 4, 6, 8, 16), np.float16),
                              **good(lower_corner=(-1, -2, -3), upper_corner=(1, 2, 3),
                                     element_strides=(1, 2, 3, 4, 1), swizzle=32))
    assert spec.lower_corner == (-1, -2, -3)
    assert spec.element_strides_dim == (1, 4, 3, 2, 1)
    assert spec.smem_alignment == 256
    pytest.importorskip("cuda.bindings")
    args = ic.driver_args(spec)
    assert args[1] == 5 and args[5] == [-3, -2, -1] and args[6] == [3, 2, 1]
    assert args[7] == 16 and args[8] == 32


def test_conv_corners():
    assert ac.conv_corners((3, 3), padding=1) == ((-1, -1), (-1, -1))
    assert ac.conv_corners((3, 5), padding=(0, 2), dilation=(2, 1)) == ((0, -2), (-4, -2))
    with pytest.raises(ValueError, match="one entry per spatial axis"):
        ac.conv_corners((3, 3), padding=(1, 1, 1))


BAD = [
    # (shape, dtype, kwargs, argument, rule text)
    ((4, 16), np.float32, {}, "array", "has 2 axes; an im2col map describes 3 to 5"),
    ((1, 1, 1, 1, 1, 16), np.float32, {}, "array", "has 6 axes"),
    ((2, 8, 8, 16), np.float32, dict(lower_corner=(-1,)), "lower_corner",
     "has 1 entries; a rank-4 im2col map has 2 spatial axes"),
    ((2, 8, 8, 16), np.float32, dict(upper_corner=(0, 128)), "upper_corner",
     "[1]=128 is outside -128..127"),
    ((2, 8, 8, 16), np.float32, dict(lower_corner=(-129, 0)), "lower_corner",
     "[0]=-129 is outside -128..127"),
    ((2, 8, 16), np.float32, dict(lower_corner=(-32769,), upper_corner=(0,)), "lower_corner",
     "[0]=-32769 is outside -32768..32767"),
    ((2, 4, 4, 4, 16), np.float32, dict(lower_corner=(0, 0, 16), upper_corner=(0, 0, 0)),
     "lower_corner", "[2]=16 is outside -16..15"),
    ((2, 8, 8, 16), np.float32, dict(lower_corner=(0, 3), upper_corner=(0, -5)), "upper_corner",
     "[1]=-5 with lower_corner[1]=3 leaves spatial axis 1 (extent 8) an empty bounding box 3..2"),
    ((2, 8, 8, 16), np.float32, dict(channels_per_pixel=0), "channels_per_pixel",
     "=0 is outside 1..256"),
    ((2, 8, 8, 512), np.float32, dict(channels_per_pixel=257), "channels_per_pixel",
     "=257 is outside 1..256"),
    ((2, 8, 8, 16), np.float32, dict(channels_per_pixel=2), "channels_per_pixel",
     "=2 spans 8 bytes; a pixel's channels must span a multiple of 16 bytes"),
    ((2, 8, 8, 64), np.float32, dict(channels_per_pixel=32, swizzle=64), "channels_per_pixel",
     "more than the 64-byte swizzle span"),
    ((2, 8, 8, 16), np.float32, dict(pixels_per_column=0), "pixels_per_column",
     "=0 is outside 1..1024"),
    ((2, 8, 8, 16), np.float32, dict(pixels_per_column=1025), "pixels_per_column",
     "=1025 is outside 1..1024"),
    ((2, 8, 8, 256), np.float32, dict(pixels_per_column=1024, channels_per_pixel=256),
     "pixels_per_column", "more than the 232448 bytes of shared memory"),
    ((2, 8, 8, 16), np.float32, dict(element_strides=(1, 9, 1, 1)), "element_strides",
     "[1]=9 is outside 1..8"),
    ((2, 8, 8, 16), np.float32, dict(element_strides=(1, 1, 1, 2)), "element_strides",
     "[-1]=2: TMA ignores the channels' element stride"),
    ((2, 8, 8, 16), np.float32, dict(element_strides=(1, 1)), "element_strides",
     "has 2 entries; the array has 4 axes"),
    ((2, 8, 8, 16), np.float32, dict(swizzle=16), "swizzle", "=16 is not supported"),
    ((2, 8, 8, 16), np.int32, dict(oob_fill="nan"), "oob_fill", "='nan' needs a floating-point"),
    ((2, 8, 8, 16), np.float32, dict(oob_fill="one"), "oob_fill", "='one' is not supported"),
    ((2, 8, 8, 16), np.float32, dict(l2_promotion=32), "l2_promotion", "=32 is not supported"),
    ((2, 8, 8, 16), np.complex64, {}, "array", "has dtype complex64, which TMA cannot describe"),
    ((2, 8, 8, 3), np.float32, {}, "array", "axis 2 has stride 12 bytes"),
]


@pytest.mark.parametrize("shape, dtype, kw, field, rule", BAD)
def test_each_rule_is_a_named_value_error(shape, dtype, kw, field, rule):
    if len(shape) == 5 and "lower_corner" not in kw:
        kw = dict(kw, lower_corner=(0, 0, 0), upper_corner=(0, 0, 0))
    if len(shape) == 3 and "lower_corner" not in kw:
        kw = dict(kw, lower_corner=(0,), upper_corner=(0,))
    with pytest.raises(ValueError) as e:
        ic.describe_im2col(cai(shape, dtype), **good(**kw))
    msg = str(e.value)
    assert msg.startswith(f"TensorMap: `{field}`"), msg
    assert rule in msg, msg


def test_misaligned_address_and_types():
    with pytest.raises(ValueError, match="data address 0x7f0000000008 is not 16-byte aligned"):
        ic.describe_im2col(cai((2, 8, 8, 16), address=0x7F0000000008), **good())
    with pytest.raises(tm.TensorMapTypeError, match="`channels_per_pixel` must be an int"):
        ic.describe_im2col(cai((2, 8, 8, 16)), **good(channels_per_pixel=16.0))
    with pytest.raises(tm.TensorMapTypeError, match="`lower_corner` must hold ints"):
        ic.describe_im2col(cai((2, 8, 8, 16)), **good(lower_corner=(0, 0.5)))
    with pytest.raises(tm.TensorMapTypeError, match="`upper_corner` must be a sequence of 2"):
        ic.describe_im2col(cai((2, 8, 8, 16)), **good(upper_corner=0))


def conv_im2col(x, R, S, pad, stride, dil):
    """The implicit-GEMM A matrix of a convolution: rows (n, p, q), columns (r, s, c)."""
    N, H, W, C = x.shape
    P = (H + 2 * pad[0] - dil[0] * (R - 1) - 1) // stride[0] + 1
    Q = (W + 2 * pad[1] - dil[1] * (S - 1) - 1) // stride[1] + 1
    xp = np.zeros((N, H + 2 * pad[0] + 16, W + 2 * pad[1] + 16, C), x.dtype)
    xp[:, pad[0]:pad[0] + H, pad[1]:pad[1] + W] = x
    a = np.zeros((N, P, Q, R, S, C), x.dtype)
    for r in range(R):
        for s in range(S):
            h0, w0 = r * dil[0], s * dil[1]
            a[:, :, :, r, s] = xp[:, h0:h0 + stride[0] * P:stride[0], w0:w0 + stride[1] * Q:stride[1]]
    return a.reshape(N * P * Q, R, S, C), (P, Q)


@pytest.mark.parametrize("seed", range(6))
def test_numpy_reference_is_the_convolution_im2col(seed):
    """The reference gather, walked over every output pixel and filter tap,
    rebuilds a convolution's im2col matrix (padding, stride, dilation)."""
    rng = np.random.default_rng(seed)
    N, H, W, C = int(rng.integers(1, 3)), int(rng.integers(3, 9)), int(rng.integers(3, 9)), 4
    R, S = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    pad = tuple(int(v) for v in rng.integers(0, 3, 2))
    stride = tuple(int(v) for v in rng.integers(1, 3, 2))
    dil = tuple(int(v) for v in rng.integers(1, 3, 2))
    if H + 2 * pad[0] < dil[0] * (R - 1) + 1 or W + 2 * pad[1] < dil[1] * (S - 1) + 1:
        pad = (R * dil[0], S * dil[1])
    x = rng.standard_normal((N, H, W, C)).astype(np.float32)
    want, (P, Q) = conv_im2col(x, R, S, pad, stride, dil)
    lo, up = ac.conv_corners((R, S), pad, dil)
    ppc = 8
    spec = ic.describe_im2col(cai(x.shape), channels_per_pixel=C, pixels_per_column=ppc,
                              lower_corner=lo, upper_corner=up,
                              element_strides=(1, stride[0], stride[1], 1))
    M = N * P * Q
    for m0 in range(0, M, ppc):
        n, rem = divmod(m0, P * Q)
        p, q = divmod(rem, Q)
        coords = (n, p * stride[0] + lo[0], q * stride[1] + lo[1], 0)
        for r in range(R):
            for s in range(S):
                got = ic.numpy_im2col(x, coords, (r * dil[0], s * dil[1]), spec)
                rows = min(ppc, M - m0)
                np.testing.assert_array_equal(got[:rows], want[m0:m0 + rows, r, s])
                assert not got[rows:].any()  # past the last image: out of bounds, zero


def test_numpy_reference_refuses_a_start_outside_the_box():
    spec = ic.describe_im2col(cai((1, 4, 4, 4)), channels_per_pixel=4, pixels_per_column=4,
                              lower_corner=(0, 0), upper_corner=(-1, -1))
    with pytest.raises(ValueError, match=r"coords\[2\]=3 is outside the bounding box 0..2"):
        ic.numpy_im2col(np.zeros((1, 4, 4, 4), np.float32), (0, 0, 3, 0), (0, 0), spec)
