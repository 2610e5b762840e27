"""Streams and arrays of other libraries (host side, no GPU): what
``ac.as_stream`` / ``ac.as_device_array`` accept and the errors they name;
the torch custom op's schema and fake (meta) implementation when torch is
installed (its GPU run is in tests/gpu/test_torch_gpu.py)."""

from __future__ import annotations

import numpy as np
import pytest

import numba_asynccopy as ac
from numba_asynccopy.host import interop


class ProtoStream:
    """An object speaking the CUDA stream protocol (as cuda.core, CuPy, torch >= 2.x)."""

    def __init__(self, handle: int, version: int = 0) -> None:
        self.handle, self.version = handle, version

    def __cuda_stream__(self):
        return (self.version, self.handle)


class HostDLPack:
    """A DLPack producer whose memory is on the CPU (DLPack device type 1)."""

    def __dlpack__(self, stream=None):
        raise AssertionError("must not be exported")

    def __dlpack_device__(self):
        return (1, 0)


class CAIObject:
    def __init__(self, typestr: str) -> None:
        self.__cuda_array_interface__ = {"shape": (4,), "strides": None, "typestr": typestr,
                                         "data": (0x1000, False), "version": 3}


def test_default_stream_stays_zero():
    assert ac.as_stream(0) == 0
    assert ac.as_stream(None) == 0
    assert ac.as_stream(ProtoStream(0)) == 0


@pytest.mark.parametrize("make", [lambda h: h, lambda h: np.uint64(h), ProtoStream],
                         ids=["int", "numpy-int", "__cuda_stream__"])
def test_handles_become_one_core_stream_each(make):
    s = ac.as_stream(make(0x4D2))
    assert int(s.handle) == 0x4D2
    # one wrapper per handle: numba caches launch configurations by stream object
    assert ac.as_stream(make(0x4D2)) is s
    assert int(ac.as_stream(make(0x4D3)).handle) == 0x4D3


def test_native_streams_pass_through():
    from cuda.core import Stream

    s = Stream.from_handle(0x99)
    assert ac.as_stream(s) is s


@pytest.mark.parametrize("bad, words", [
    (True, "must be a stream or an int handle"),
    (2.0, "got float"),
    ("s", "got str"),
    (-1, "must be >= 0"),
    (ProtoStream(7, version=1), "returns (0, handle)"),
])
def test_bad_streams_are_named_errors(bad, words):
    with pytest.raises(ac.InteropError) as e:
        ac.as_stream(bad, "ac.launch")
    assert "ac.launch: `stream`" in str(e.value) and words in str(e.value)


def test_host_dlpack_is_refused_with_its_device():
    with pytest.raises(ac.InteropError, match=r"argument 1 \(HostDLPack\) lives on the CPU device"):
        interop.convert_args((np.zeros(2), HostDLPack()), "ac.launch")


@pytest.mark.parametrize("typestr", ["<V2", "|O8", "<M8[s]"])
def test_dtypes_kernels_cannot_take_are_refused(typestr):
    with pytest.raises(ac.InteropError, match="which Numba kernels do not take"):
        ac.as_device_array(CAIObject(typestr))


def test_dlpack_without_its_device_is_a_named_error():
    class HalfDLPack:  # __dlpack__ without __dlpack_device__: not the protocol
        def __dlpack__(self, *args, **kwargs):
            return np.zeros(3).__dlpack__(*args, **kwargs)

    with pytest.raises(ac.InteropError, match=r"argument 0 \(HalfDLPack\) could not be read "
                                              r"through DLPack"):
        interop.convert_args((HalfDLPack(),), "ac.launch")


def test_not_an_array():
    with pytest.raises(ac.InteropError, match="is a list, not a GPU array"):
        ac.as_device_array([1, 2])


def test_plain_arguments_are_not_copied():
    args = (1, 2.5, np.zeros(3), True)
    assert interop.convert_args(args) is args


def test_tensor_map_on_another_device_is_refused(monkeypatch):
    class Map:
        device_id = 1

    monkeypatch.setattr(interop, "current_device_id", lambda: 0)
    with pytest.raises(ac.InteropError, match="argument 0 is a TensorMap encoded on device 1, "
                                              "but the launch runs on device 0"):
        interop.check_tensor_map_device(Map(), "ac.launch", "argument 0")
    Map.device_id = 0
    interop.check_tensor_map_device(Map(), "ac.launch", "argument 0")  # same device: fine


# --- torch (optional peer): the custom op's schema and fake implementation ---


@pytest.fixture(scope="module")
def scale_op():
    torch = pytest.importorskip("torch")
    from numba import cuda

    from numba_asynccopy.torch import LaunchRule, custom_op

    @cuda.jit
    def scale(src, factor, dst, half):
        i = cuda.grid(1)
        if i < src.size:
            dst[i] = src[i] * factor

    def outputs(x, factor: float):
        return torch.empty_like(x), torch.empty(x.shape[0] // 2, dtype=torch.int32, device=x.device)

    op = custom_op("asynccopy_test::scale", scale, outputs=outputs, n_outputs=2,
                   launch=lambda x, factor: LaunchRule(grid=x.numel() // 128, block=128))
    return torch, op


def test_custom_op_fake_implementation_runs_on_meta_tensors(scale_op):
    torch, op = scale_op
    assert str(torch.ops.asynccopy_test.scale.default._schema) == (
        "asynccopy_test::scale(Tensor x, float factor) -> (Tensor, Tensor)")
    y, z = op(torch.empty(1024, dtype=torch.float16, device="meta"), 3.0)
    assert (y.shape, y.dtype, y.device.type) == ((1024,), torch.float16, "meta")
    assert (z.shape, z.dtype) == ((512,), torch.int32)
    # the op has only a CUDA implementation: CPU tensors do not reach the kernel
    with pytest.raises(NotImplementedError, match="CPU"):
        op(torch.ones(4), 1.0)


def test_custom_op_is_one_node_of_a_torch_compile_graph(scale_op):
    """torch.compile traces the op through its fake implementation into one
    graph (fullgraph: no graph break), here on meta tensors."""
    torch, op = scale_op
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    f = torch.compile(lambda x: op(x, 2.0)[0] + 1, backend=backend, fullgraph=True)
    y = f(torch.empty(256, device="meta"))
    assert y.shape == (256,) and y.device.type == "meta"
    assert len(graphs) == 1
    targets = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
    assert any("asynccopy_test.scale" in t for t in targets), targets


def test_torch_cpu_tensor_is_refused_by_launch_conversion():
    torch = pytest.importorskip("torch")
    with pytest.raises(ac.InteropError, match=r"argument 0 \(Tensor\) lives on the CPU device"):
        interop.convert_args((torch.ones(3),), "ac.launch")
