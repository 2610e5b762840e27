"""Kernels on other libraries' memory and streams: torch tensors on a torch
stream, CuPy arrays, DLPack producers, the CUDA stream protocol and raw
stream handles, through ``ac.launch``; a kernel as a torch custom op, eager
and under ``torch.compile``."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.examples import seeds
from numba_asynccopy.examples import tma_copy as tc

from ..conftest import skip_on_sim

SIM_FOREIGN = ("torch/CuPy tensors, their streams and DLPack exports need real CUDA memory "
               "(the simulator's arrays are host numpy arrays)")
pytestmark = [pytest.mark.gpu, skip_on_sim(SIM_FOREIGN)]

rng = np.random.default_rng(16)
_shift = None


def shift_rows():
    """The seeds' cp.async row exchange (A, B: float32[64, 4])."""
    global _shift
    if _shift is None:
        _shift = cuda.jit(seeds.shift_rows)
    return _shift


class DLPackOnly:
    """Exposes a producer's memory through DLPack alone (no
    ``__cuda_array_interface__``), as JAX or a cuda.core buffer would."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, *args, **kwargs):
        return self.t.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


class ProtoStream:
    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def test_torch_tensors_on_a_torch_stream():
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((64, 4)).astype(np.float32)
    s = torch.cuda.Stream()
    for stream in (s, ProtoStream(s.cuda_stream), s.cuda_stream):
        with torch.cuda.stream(s):
            A = torch.from_numpy(a).cuda()
            B = torch.full((64, 4), float("nan"), device="cuda")
        ac.launch(shift_rows(), grid=1, block=64, args=(A, B), stream=stream)
        s.synchronize()
        np.testing.assert_array_equal(B.cpu().numpy(), np.roll(a, -1, axis=0),
                                      err_msg=f"stream given as {type(stream).__name__}")


def test_torch_stream_orders_the_launch_after_torch_work():
    """No synchronisation between torch's fill and the kernel: only the
    stream orders them (a default-stream launch could read the old data)."""
    torch = pytest.importorskip("torch")
    s = torch.cuda.Stream()
    A = torch.zeros((64, 4), device="cuda")
    B = torch.empty((64, 4), device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)     # ~tens of ms of GPU time before the fill
        A.fill_(3.0)
    ac.launch(shift_rows(), grid=1, block=64, args=(A, B), stream=s)
    s.synchronize()
    assert torch.all(B == 3.0).item()


def test_tma_copy_between_torch_tensors():
    torch = pytest.importorskip("torch")
    rows, cols, box, stages = 100, 132, (32, 64), 4
    src = torch.randint(0, 2**31 - 1, (rows, cols), dtype=torch.int32, device="cuda")
    dst = torch.full((rows, cols), -1, dtype=torch.int32, device="cuda")
    k = cuda.jit(tc.SIGNATURE)(tc.make_tma_copy(stages, box))
    smap, dmap = ac.TensorMap(src, box), ac.TensorMap(dst, box)
    s = torch.cuda.Stream()
    ac.launch(k, grid=3, block=tc.BLOCK, args=(smap, dmap, rows, cols), stream=s,
              shared_mem=0)
    s.synchronize()
    assert torch.equal(dst, src)


def test_cupy_arrays_and_stream():
    cp = pytest.importorskip("cupy")
    a = rng.standard_normal((64, 4)).astype(np.float32)
    A, B = cp.asarray(a), cp.full((64, 4), cp.nan, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    ac.launch(shift_rows(), grid=1, block=64, args=(A, B), stream=s.ptr)
    s.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(B), np.roll(a, -1, axis=0))


def test_dlpack_only_producer_is_viewed_not_copied():
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((64, 4)).astype(np.float32)
    A = torch.from_numpy(a).cuda()
    B = torch.full((64, 4), float("nan"), device="cuda")
    torch.cuda.synchronize()
    dB = ac.as_device_array(DLPackOnly(B))
    assert dB.device_ctypes_pointer.value == B.data_ptr()  # same memory
    ac.launch(shift_rows(), grid=1, block=64, args=(DLPackOnly(A), DLPackOnly(B)))
    cuda.synchronize()
    np.testing.assert_array_equal(B.cpu().numpy(), np.roll(a, -1, axis=0))


def test_host_tensors_are_refused_and_bfloat16_travels_as_its_bits():
    torch = pytest.importorskip("torch")
    B = torch.empty((64, 4), device="cuda")
    with pytest.raises(ac.InteropError, match=r"argument 0 \(Tensor\) lives on the CPU device"):
        ac.launch(shift_rows(), grid=1, block=64, args=(torch.ones(64, 4), B))
    # a bfloat16 tensor is a uint16 view of the same memory (ac.bf16_values reads it)
    h = torch.randn(64, 4, device="cuda").to(torch.bfloat16)
    view = ac.as_device_array(h)
    assert view.dtype == np.uint16 and view.shape == (64, 4)
    assert view.__cuda_array_interface__["data"][0] == h.data_ptr()
    np.testing.assert_array_equal(ac.bf16_values(view.copy_to_host()),
                                  h.float().cpu().numpy())


def _scale_op():
    torch = pytest.importorskip("torch")
    from numba_asynccopy.torch import LaunchRule, custom_op

    @cuda.jit
    def staged_scale(src, factor, dst):
        # a cp.async stage through shared memory, then a scaled store
        sh = cuda.shared.array((128, 4), np.float32, alignment=16)
        row = cuda.blockIdx.x * 128 + cuda.threadIdx.x
        ac.cp_async(sh[cuda.threadIdx.x, :], src[row, :], 16)
        ac.commit_group()
        ac.wait_group(0)
        for j in range(4):
            dst[row, j] = sh[cuda.threadIdx.x, j] * factor

    def outputs(x, factor: float):  # annotated: a float input, not a tensor
        return torch.empty_like(x)

    return torch, custom_op(
        "asynccopy_gpu_test::staged_scale", staged_scale,
        outputs=outputs,
        launch=lambda x, factor: LaunchRule(grid=x.shape[0] // 128, block=128))


def test_custom_op_eager_and_compiled_agree():
    torch, op = _scale_op()
    x = torch.randn(1024, 4, device="cuda")
    eager = op(x, 2.0) + 1.0
    np.testing.assert_allclose(eager.cpu().numpy(), x.cpu().numpy() * 2.0 + 1.0, rtol=1e-6)

    @torch.compile(fullgraph=True)
    def f(x):
        return op(x, 2.0) + 1.0

    compiled = f(x)
    torch.cuda.synchronize()
    assert torch.equal(compiled, eager)
    # a second shape recompiles the graph; the fake implementation gives its output shape
    x2 = torch.randn(256, 4, device="cuda")
    assert torch.equal(f(x2), op(x2, 2.0) + 1.0)


# --- torch (optional peer): the custom op's schema and fake implementation, CPU tensors refused
# (no kernel runs; here because the GPU suite runs where torch is installed) ---


@pytest.fixture(scope="module")
def scale_op():
    torch = pytest.importorskip("torch")
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
    from numba_asynccopy.host import interop as _interop

    with pytest.raises(ac.InteropError, match=r"argument 0 \(Tensor\) lives on the CPU device"):
        _interop.convert_args((torch.ones(3),), "ac.launch")
