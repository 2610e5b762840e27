"""Streams and arrays of other libraries (host side, no GPU): what
``ac.as_stream`` / ``ac.as_device_array`` accept and the errors they name.
The torch tests (the custom op's schema, its fake implementation, CPU
tensors refused) are in tests/gpu/test_interop_gpu.py, which runs where
torch is installed: torch is an optional peer, in no extra of the package
(the CUDA build PyPI serves is gigabytes)."""

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
