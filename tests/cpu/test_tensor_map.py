"""TensorMap host validation (pure Python, no GPU): every documented rule of
cuTensorMapEncodeTiled is a ValueError naming the field and the rule, and
a valid description reaches the driver in its (innermost-first) order."""

from __future__ import annotations

import numpy as np
import pytest

from numba_asynccopy.host import tensor_map as tm


def cai(shape, dtype=np.float32, strides=None, address=0x7F0000000000, mask=None):
    d = {"shape": tuple(shape), "typestr": np.dtype(dtype).str, "data": (address, False),
         "strides": strides, "version": 3}
    if mask is not None:
        d["mask"] = mask
    return d


def test_spec_of_a_2d_float32_tensor():
    spec = tm.describe(cai((1000, 300)), (64, 32))
    assert spec.rank == 2 and spec.itemsize == 4 and spec.dtype_code == 7
    assert spec.global_dim == (300, 1000)  # innermost first
    assert spec.global_strides == (1200,)
    assert spec.box_dim == (32, 64)
    assert spec.element_strides_dim == (1, 1)
    assert spec.box_bytes == 64 * 32 * 4
    assert spec.smem_alignment == 128


def test_spec_of_a_strided_5d_view_with_element_strides():
    # a (2, 3, 4, 5, 8) int8 window of a larger tensor: padded strides
    strides = (4096, 1024, 256, 32, 1)
    spec = tm.describe(cai((2, 3, 4, 5, 8), np.int8, strides), (1, 2, 4, 5, 16),
                       element_strides=(1, 2, 3, 1, 1), swizzle=32)
    assert spec.dtype == "int8" and spec.dtype_code == 0  # TMA's UINT8: a bit copy
    assert spec.global_dim == (8, 5, 4, 3, 2)
    assert spec.global_strides == (32, 256, 1024, 4096)
    assert spec.box_dim == (16, 5, 4, 2, 1)
    assert spec.element_strides_dim == (1, 1, 3, 2, 1)
    # ceil(box / element stride) elements per axis
    assert spec.box_bytes == 1 * 1 * 2 * 5 * 16
    assert spec.smem_alignment == 256


@pytest.mark.parametrize("swizzle,align", [(None, 128), (32, 256), (64, 512), (128, 1024)])
def test_smem_alignment_follows_the_swizzle_repeat(swizzle, align):
    box = (8, (swizzle or 64) // 2)
    assert tm.describe(cai((64, 64), np.float16), box, swizzle=swizzle).smem_alignment == align


def test_metadata_words():
    spec = tm.describe(cai((16, 16, 16), np.float16), (2, 4, 8), swizzle=None)
    words = spec.metadata()
    assert len(words) == tm.BUFFER_WORDS - tm.MAP_WORDS
    assert words[tm.W_MAGIC - 16] == tm.MAGIC
    assert words[tm.W_RANK - 16] == 3
    assert words[tm.W_ITEMSIZE - 16] == 2
    assert words[tm.W_SMEM_ALIGN - 16] == 128
    assert words[tm.W_BOX_BYTES - 16] == 2 * 4 * 8 * 2
    assert words[tm.W_DTYPE - 16] == 6
    assert words[tm.W_BOX - 16:tm.W_BOX - 16 + 3] == [2, 4, 8]


def test_bfloat16_override():
    spec = tm.describe(cai((32, 64), np.uint16), (8, 64), dtype="bfloat16")
    assert spec.dtype == "bfloat16" and spec.dtype_code == 9


@pytest.mark.parametrize("kwargs,message", [
    (dict(interface=cai(()), box=()), "`array` has 0 axes; a tensor map describes 1 to 5"),
    (dict(interface=cai((2,) * 6), box=(1,) * 6), "`array` has 6 axes; a tensor map describes 1 to 5"),
    (dict(interface=cai((64,), np.complex64), box=(8,)),
     "`array` has dtype complex64, which TMA cannot describe"),
    (dict(interface=cai((64,), ">f4"), box=(8,)), "`array` is big-endian"),
    (dict(interface=cai((64,), address=0x1008), box=(8,)),
     "`array` data address 0x1008 is not 16-byte aligned"),
    (dict(interface=cai((64, 8, 8), np.float16, address=0x1010), box=(8, 8, 8), interleave=32, swizzle=32),
     "`array` data address 0x1010 is not 32-byte aligned"),
    (dict(interface=cai((0, 16)), box=(1, 4)), "`array` axis 0 has extent 0; each extent must be in 1..2**32"),
    (dict(interface=cai((4, 16), strides=(64, 8)), box=(1, 4)),
     "`array` last axis has stride 8 bytes; TMA needs it contiguous (stride = itemsize 4)"),
    (dict(interface=cai((4, 5), strides=(20, 4)), box=(1, 4)),
     "`array` axis 0 has stride 20 bytes; strides of all but the last axis must be positive "
     "multiples of 16 below 2**40"),
    (dict(interface=cai((4, 4), strides=(1 << 40, 4)), box=(1, 4)), "`array` axis 0 has stride 1099511627776"),
    (dict(interface=cai((4, 4), strides=(-16, 4)), box=(1, 4)), "`array` axis 0 has stride -16 bytes"),
    (dict(interface=cai((8, 8, 16), np.float16, strides=(256, 48, 2)), box=(1, 1, 16), interleave=32,
          swizzle=32), "`array` axis 1 has stride 48 bytes; strides of all but the last axis must be "
     "positive multiples of 32"),
    (dict(interface=cai((4, 16), mask=object()), box=(1, 4)), "`array` has a mask"),
    (dict(interface=cai((64, 64)), box=(8,)), "`box` has 1 entries; the array has 2 axes"),
    (dict(interface=cai((64, 64)), box=8), "`box` must be a sequence of 2 ints"),
    (dict(interface=cai((64, 64)), box=(8, 4.0)), "`box` must hold ints, got 4.0"),
    (dict(interface=cai((64, 64)), box=(0, 4)), "`box`[0]=0 is outside 1..256"),
    (dict(interface=cai((512, 64)), box=(257, 4)), "`box`[0]=257 is outside 1..256"),
    (dict(interface=cai((64, 64)), box=(8, 6)),
     "`box`[-1]=6 spans 24 bytes; the innermost box extent must span a multiple of 16 bytes"),
    (dict(interface=cai((64, 64)), box=(8, 16), swizzle=32),
     "`box`[-1]=16 spans 64 bytes, more than the 32-byte swizzle span (swizzle=32 requires at most 8 elements)"),
    (dict(interface=cai((64, 64)), box=(8, 64), swizzle=128),
     "`box`[-1]=64 spans 256 bytes, more than the 128-byte swizzle span"),
    (dict(interface=cai((64, 64)), box=(8, 4), swizzle=16),
     "`swizzle`=16 is not supported; use None, 32, 64 or 128 (bytes)"),
    (dict(interface=cai((64, 64)), box=(8, 4), interleave=8),
     "`interleave`=8 is not supported; use None, 16 or 32 (bytes)"),
    (dict(interface=cai((64, 64)), box=(8, 4), interleave=16),
     "`interleave`=16 needs a tensor of rank >= 3; this one has rank 2"),
    (dict(interface=cai((64, 64)), box=(8, 4), l2_promotion=32),
     "`l2_promotion`=32 is not supported; use None, 64, 128 or 256 (bytes)"),
    (dict(interface=cai((64, 64)), box=(8, 4), oob_fill="one"),
     "`oob_fill`='one' is not supported; use 'zero' or 'nan'"),
    (dict(interface=cai((64, 64), np.int32), box=(8, 4), oob_fill="nan"),
     "`oob_fill`='nan' needs a floating-point tensor; this one holds int32"),
    (dict(interface=cai((64, 64)), box=(8, 4), element_strides=(1,)),
     "`element_strides` has 1 entries; the array has 2 axes"),
    (dict(interface=cai((64, 64)), box=(8, 4), element_strides=(9, 1)),
     "`element_strides`[0]=9 is outside 1..8"),
    (dict(interface=cai((64, 64)), box=(8, 4), element_strides=(0, 1)),
     "`element_strides`[0]=0 is outside 1..8"),
    (dict(interface=cai((64, 64)), box=(8, 4), element_strides=(1, 2)),
     "`element_strides`[-1]=2: TMA ignores the innermost element stride without interleave"),
    (dict(interface=cai((64, 64)), box=(8, 4), dtype="float8"),
     "`dtype`='float8' is not supported; only 'bfloat16'"),
    (dict(interface=cai((64, 64)), box=(8, 4), dtype="bfloat16"),
     "`dtype`='bfloat16' needs 2-byte elements; the array holds float32 (4 bytes)"),
])
def test_every_validation_error(kwargs, message):
    interface = kwargs.pop("interface")
    box = kwargs.pop("box")
    with pytest.raises(ValueError) as info:
        tm.describe(interface, box, **kwargs)
    assert str(info.value).startswith("TensorMap: `")
    assert message in str(info.value)


def test_not_an_array():
    with pytest.raises(TypeError, match="must expose __cuda_array_interface__"):
        tm.TensorMap(np.zeros((4, 4), np.float32), (4, 4))
    with pytest.raises(TypeError, match="must expose __cuda_array_interface__"):
        tm.describe({"typestr": "<f4"}, (4,))


def test_valid_edge_cases():
    # extent-1 innermost axis of any stride; the largest box; 128-byte swizzle span exactly
    tm.describe(cai((16, 1), strides=(16, 64)), (16, 4))
    tm.describe(cai((256, 256), np.uint8), (256, 256))
    tm.describe(cai((64, 64), np.float16), (8, 64), swizzle=128)
    tm.describe(cai((2, 4, 8, 16), np.float16), (1, 1, 2, 16), interleave=16)
    # measured on the H200: cuTensorMapEncodeTiled encodes an interleaved rank-3 map and
    # interleave=32 with any swizzle (the GPU fuzz test keeps the validator in step)
    tm.describe(cai((8, 8, 16), np.float16), (1, 1, 16), interleave=16)
    tm.describe(cai((8, 8, 16), np.float16), (1, 1, 16), interleave=32, swizzle=64)
    tm.describe(cai((8, 8, 16), np.float16), (1, 1, 16), interleave=32)
    tm.describe(cai((64, 64)), (8, 4), oob_fill="nan", l2_promotion=256)


def test_driver_args_are_accepted_by_cuda_bindings():
    """The argument list converts (no TypeError) in cuda.bindings: with a
    driver the map encodes (CUDA_SUCCESS); without one the call gets as far
    as loading libcuda, and fails there with cuda.pathfinder's error."""
    driver = pytest.importorskip("cuda.bindings.driver")
    spec = tm.describe(cai((1000, 300)), (64, 32), swizzle=128, l2_promotion=128)
    args = tm.driver_args(spec)
    assert int(args[0]) == 7 and args[1] == 2 and args[2] == spec.address
    assert [int(x) for x in args[3]] == [300, 1000]
    assert [int(x) for x in args[4]] == [1200]
    assert [int(x) for x in args[5]] == [32, 64]
    assert [int(x) for x in args[6]] == [1, 1]
    assert int(args[8]) == int(driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B)
    assert int(args[9]) == int(driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B)
    try:
        result = driver.cuTensorMapEncodeTiled(*args)
    except RuntimeError as e:
        from cuda.pathfinder import DynamicLibNotFoundError  # cuda-bindings' own dependency

        if not isinstance(e, DynamicLibNotFoundError):
            raise
        # no driver here: the arguments converted, the driver library was looked for
        assert str(e).startswith('"cuda" is an NVIDIA driver library'), str(e)
    else:
        assert result[0] == driver.CUresult.CUDA_SUCCESS, result
        assert type(result[1]).__name__ == "CUtensorMap"
