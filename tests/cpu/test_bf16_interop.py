"""bf16 as users hold it, on the host: the uint16 bit representation
(``ac.bf16_array`` / ``ac.bf16_values`` round-trip and round to nearest
even like ``cvt.rn.bf16.f32``) and a torch bfloat16 tensor described as
uint16 bits for ``ac.launch``, ``ac.as_device_array`` and ``ac.TensorMap``
(a stand-in tensor here; the GPU suite uses real torch tensors)."""

from __future__ import annotations

import numpy as np
import pytest

import numba_asynccopy as ac
from numba_asynccopy.host import interop


def test_bf16_array_rounds_to_nearest_even_and_round_trips():
    x = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-9, -2.5, np.inf, -np.inf, 0.0, -0.0,
                  3.4e38], np.float32)
    h = ac.bf16_array(x)
    assert h.dtype == np.uint16
    # 1 + 2**-8 is a tie between 1 and 1 + 2**-7: even (1.0); 1 + 3*2**-8 ties up to 1 + 2**-6
    np.testing.assert_array_equal(ac.bf16_values(h)[:5], [1.0, 1.0, 1 + 2**-6, 1.0, -2.5])
    assert np.isinf(ac.bf16_values(h)[5:7]).all()
    assert ac.bf16_values(h)[9] == np.inf  # rounds past the largest bf16
    assert np.signbit(ac.bf16_values(h)[8])
    nan = ac.bf16_array(np.array([np.nan], np.float32))
    assert np.isnan(ac.bf16_values(nan)).all()
    r = np.random.default_rng().standard_normal(1000).astype(np.float32)
    np.testing.assert_array_equal(ac.bf16_array(ac.bf16_values(ac.bf16_array(r))), ac.bf16_array(r))
    assert (np.abs(ac.bf16_values(ac.bf16_array(r)) - r) <= np.abs(r) * 2**-8).all()


def test_bf16_values_refuses_other_dtypes():
    with pytest.raises(TypeError, match="ac.bf16_values: `h` must hold uint16 bf16 bits, got dtype float32"):
        ac.bf16_values(np.zeros(4, np.float32))


class _FakeBf16Tensor:
    """What interop reads of a torch bfloat16 CUDA tensor."""

    __module__ = "torch"
    dtype = "torch.bfloat16"

    def __init__(self, shape, stride, ptr=0x7F0000000000, is_cuda=True, requires_grad=False):
        self.shape, self._stride, self._ptr = shape, stride, ptr
        self.is_cuda, self.requires_grad = is_cuda, requires_grad

    def stride(self):
        return self._stride

    def data_ptr(self):
        return self._ptr


_FakeBf16Tensor.__name__ = "Tensor"


def test_a_torch_bf16_tensor_is_described_as_uint16_bits():
    t = _FakeBf16Tensor((64, 32), (40, 1))  # a row-padded view
    desc = interop.bf16_interface(t)
    assert desc == {"shape": (64, 32), "strides": (80, 2), "typestr": "<u2",
                    "data": (0x7F0000000000, False), "version": 3}
    assert interop.bf16_interface(np.zeros(3, np.uint16)) is None


def test_a_torch_bf16_tensor_on_the_cpu_or_needing_grad_is_an_interop_error():
    with pytest.raises(ac.InteropError, match=r"ac.launch: argument 0 \(Tensor, bfloat16\) is not on a GPU"):
        interop.bf16_interface(_FakeBf16Tensor((4,), (1,), is_cuda=False), "ac.launch", "argument 0")
    with pytest.raises(ac.InteropError, match=r"requires grad: pass t.detach\(\)"):
        interop.bf16_interface(_FakeBf16Tensor((4,), (1,), requires_grad=True))


def test_a_bf16_tensor_map_spec_from_the_bits():
    from numba_asynccopy.host import tensor_map as tm

    desc = interop.bf16_interface(_FakeBf16Tensor((256, 128), (128, 1), ptr=1 << 20))
    spec = tm.describe(desc, (64, 64), swizzle=128, dtype="bfloat16")
    assert spec.dtype == "bfloat16" and spec.dtype_code == tm.DTYPE_CODES["bfloat16"] == 9
    assert spec.itemsize == 2 and spec.smem_alignment == 1024
