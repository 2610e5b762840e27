"""Launch arguments checked against the real device's limits, before the
driver sees the launch: each error names the limit and its value."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

from ..conftest import SIM, SIM_DEVICE, skip_on_sim

pytestmark = pytest.mark.gpu


@cuda.jit
def fill(out):
    if cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0:
        out[cuda.blockIdx.x] = 1


@cuda.jit
def pairs(out):
    ac.cluster_dims(2)
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = 1


@skip_on_sim(SIM_DEVICE)
def test_block_and_grid_past_the_device_limits():
    dev = cuda.get_current_device()
    out = cuda.to_device(np.full(64, -1, np.int32))  # poisoned: the good launches write 1s
    for _ in range(2):  # a refused shape is refused again (never cached)
        with pytest.raises(ac.ClusterLaunchError,
                           match=f"ac.launch: `block` .* the device's MAX_BLOCK_DIM_X is {dev.MAX_BLOCK_DIM_X}"):
            ac.launch(fill, 2, dev.MAX_BLOCK_DIM_X + 1, (out,), cluster=2)
    with pytest.raises(ac.ClusterLaunchError,
                       match=f"has 2048 threads; the device's MAX_THREADS_PER_BLOCK is {dev.MAX_THREADS_PER_BLOCK}"):
        ac.launch(fill, 2, (32, 64), (out,))
    with pytest.raises(ac.ClusterLaunchError, match=f"MAX_GRID_DIM_Y is {dev.MAX_GRID_DIM_Y}"):
        ac.launch(fill, (2, dev.MAX_GRID_DIM_Y + 1), 32, (out,))
    with pytest.raises(ac.ClusterLaunchError, match=f"MAX_BLOCK_DIM_Z is {dev.MAX_BLOCK_DIM_Z}"):
        ac.max_active_clusters(fill, (1, 1, dev.MAX_BLOCK_DIM_Z + 1), 2, args=(out,))
    # the ordinary launch of a kernel that declares a cluster shape: checked by the hook
    with pytest.raises(ac.ClusterLaunchError, match=f"MAX_BLOCK_DIM_X is {dev.MAX_BLOCK_DIM_X}"):
        pairs[2, dev.MAX_BLOCK_DIM_X + 1](out)
    cuda.synchronize()
    ac.launch(fill, 4, 32, (out,), cluster=2)  # a good shape still launches
    pairs[(2,), (32,)](out)
    assert (out.copy_to_host()[:4] == 1).all() and (out.copy_to_host()[4:] == -1).all()


def test_wrong_types_are_refused_not_converted():
    out = cuda.device_array(8, np.int32)
    for kwargs in (dict(grid=2.0), dict(grid="2"), dict(block=(32.0,)), dict(cluster=(2.7,)),
                   dict(shared_mem=1024.0), dict(non_portable="no"), dict(args=np.zeros(1))):
        call = dict(grid=2, block=32, args=(out,), cluster=2) | kwargs
        with pytest.raises(TypeError) as info:
            ac.launch(fill, call.pop("grid"), call.pop("block"), call.pop("args"), **call)
        assert isinstance(info.value, ac.ClusterLaunchError)
        assert f"`{next(iter(kwargs))}`" in str(info.value)


# --- the prepared fast path: the same results as Numba's own launch --------------------------------

rng = np.random.default_rng()


@cuda.jit
def combine(out, x, y, alpha, k, flag, z, pair):
    """out[i, j] = alpha * x[i, j] + y[i, j] + k + flag + z.real - z.imag + pair[0] * pair[1]."""
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = (alpha * x[i, j] + y[i, j] + k + (1.0 if flag else 0.0) + z.real - z.imag
                     + pair[0] * pair[1])


def _expected(x, y, alpha, k, flag, z, pair):
    # as the kernel computes it: the float32 product, then float64 sums in order
    return ((np.float32(alpha) * x).astype(np.float64) + y + np.float64(k)
            + (1.0 if flag else 0.0) + np.float64(z.real) - np.float64(z.imag)
            + pair[0] * pair[1])


def launch_paths(monkeypatch) -> list:
    """The ac.launch calls that go through Numba's dispatch (on a GPU the
    first launch of a shape and argument classes; in the simulator, which
    has no prepared path, every launch): one claim recorded per call.  A
    launch that records nothing took the prepared fast path."""
    from numba_asynccopy.host import launch as L

    calls = []
    real = L._launch_through_numba
    monkeypatch.setattr(L, "_launch_through_numba", lambda *a: calls.append(a[1]) or real(*a))
    return calls


def test_repeated_launches_give_numbas_results(monkeypatch):
    """C, F and strided (A) arrays, float32/int16/bool/complex64 scalars and a
    tuple: on a GPU each repeated ac.launch takes the prepared path (in the
    simulator, its own launch); every result equals what Numba's own launch
    computes."""
    host = rng.standard_normal((33, 40)).astype(np.float32)
    x_c = cuda.to_device(host)
    x_f = cuda.to_device(np.asfortranarray(host))
    wide = cuda.to_device(rng.standard_normal((33, 80)))
    y_strided = wide[:, ::2]  # an 'A' float64 view
    paths = launch_paths(monkeypatch)
    for x in (x_c, x_f):
        for n, (alpha, k, flag, z, pair) in enumerate([
                (np.float32(1.5), np.int16(3), True, np.complex64(2 + 1j), (2, 0.5)),
                (np.float32(-0.25), np.int16(-7), False, np.complex64(-1 - 4j), (3, 1.5)),
                (np.float32(3.0), np.int16(11), True, np.complex64(0.5j), (-1, 2.0))]):
            out = cuda.to_device(np.full((33, 40), np.nan))
            want_numba = cuda.to_device(np.full((33, 40), np.nan))
            args = (out, x, y_strided, alpha, k, flag, z, pair)
            before = len(paths)
            ac.launch(combine, (3, 3), (16, 16), args)
            # the simulator never takes the fast path; a GPU does from the second launch of x
            assert len(paths) - before == (1 if SIM or n == 0 else 0), (n, paths)
            combine[(3, 3), (16, 16)](want_numba, *args[1:])
            got = out.copy_to_host()
            np.testing.assert_array_equal(got, want_numba.copy_to_host())
            np.testing.assert_allclose(got, _expected(host, y_strided.copy_to_host(), alpha, k,
                                                      flag, z, pair), rtol=1e-9, atol=1e-9)


@skip_on_sim("the prepared fast path is not used by the simulator's launch")
def test_the_fast_path_is_taken(monkeypatch):
    from numba_asynccopy.host import launch as L

    out = cuda.device_array(64, np.int32)
    ac.launch(fill, 2, 32, (out,))
    calls = []
    real = L._launch_through_numba
    monkeypatch.setattr(L, "_launch_through_numba", lambda *a: calls.append(a) or real(*a))
    for _ in range(3):
        ac.launch(fill, 2, 32, (out,))
    ac.launch(fill, 2, 32, (cuda.device_array(64, np.int32),))  # another array, same type
    assert calls == []
    ac.launch(fill, 2, 32, (cuda.device_array(64, np.float32),))  # another dtype: Numba dispatches
    assert len(calls) == 1
    cuda.synchronize()


def test_cluster_fast_path_runs_clustered(monkeypatch):
    """Repeated clustered launches (on a GPU through the prepared path, in
    the simulator through its own cluster launch) run each cluster shape."""
    from numba_asynccopy.examples import exchange as ex

    probe = cuda.jit(ex.PROBE_SIGNATURE)(ex.launch_probe)
    out = cuda.to_device(np.full(64, -1, np.int32))
    paths = launch_paths(monkeypatch)
    for cluster in (2, 4, 2, 4, 8):
        out.copy_to_device(np.full(64, -1, np.int32))
        ac.launch(probe, 64, 32, (out,), cluster=cluster)
        np.testing.assert_array_equal(out.copy_to_host(), np.arange(64) % cluster)
        out.copy_to_device(np.full(64, -1, np.int32))
        ac.launch(probe, 64, 32, (out,))  # no cluster: every block is rank 0
        np.testing.assert_array_equal(out.copy_to_host(), np.zeros(64))
    # through Numba: in the simulator all 10 launches; on a GPU only the
    # first of each shape (clusters 2, 4, 8 and none), the rest prepared
    assert [c.cluster for c in paths] == (
        [(2, 1, 1), None, (4, 1, 1), None, (2, 1, 1), None, (4, 1, 1), None, (8, 1, 1), None] if SIM
        else [(2, 1, 1), None, (4, 1, 1), (8, 1, 1)]), paths


@skip_on_sim("launches on a real CUDA stream")
def test_fast_path_on_a_stream():
    s = cuda.stream()
    host = rng.standard_normal((16, 16)).astype(np.float32)
    x = cuda.to_device(host, stream=s)
    y = cuda.to_device(np.zeros((16, 16)), stream=s)
    for alpha in (np.float32(2.0), np.float32(5.0)):
        out = cuda.to_device(np.full((16, 16), np.nan), stream=s)  # poisoned
        ac.launch(combine, 1, (16, 16), (out, x, y, alpha, np.int16(0), False,
                                          np.complex64(0), (0, 0.0)), stream=s)
        got = out.copy_to_host(stream=s)
        s.synchronize()
        np.testing.assert_allclose(got, (alpha * host).astype(np.float64), rtol=1e-9, atol=1e-9)


@skip_on_sim(SIM_DEVICE)
def test_native_config_matches_cuda_cores():
    """The driver configuration ac.launch builds equals the one cuda.core's
    launch builds from a LaunchConfig."""
    from cuda.core import LaunchConfig
    from cuda.core._launch_config import _to_native_launch_config

    from numba_asynccopy.host import _numba_internals as nb

    for grid, block, shmem, cluster in [((8, 2, 1), (128, 1, 1), 1024, (2, 1, 1)),
                                        ((4, 1, 1), (32, 4, 1), 0, None),
                                        ((16, 4, 2), (64, 1, 1), 50000, (4, 2, 1))]:
        ours = nb.native_config(grid, block, shmem, cluster, 0)
        core = _to_native_launch_config(LaunchConfig(
            grid=tuple(g // c for g, c in zip(grid, cluster)) if cluster else grid,
            cluster=cluster, block=block, shmem_size=shmem))
        for f in ("gridDimX", "gridDimY", "gridDimZ", "blockDimX", "blockDimY", "blockDimZ",
                  "sharedMemBytes", "numAttrs"):
            assert getattr(ours, f) == getattr(core, f), f
        for a, b in zip(ours.attrs, core.attrs):
            assert a.id == b.id and a.value.pad == b.value.pad


@skip_on_sim("counts the host work of real launches (the simulator has no prepared path)")
def test_a_prepared_launch_costs_less_than_numbas(monkeypatch):
    """A prepared ac.launch runs fewer Python-level calls than Numba's own
    launch of the same kernel and arguments: counted with sys.setprofile, so
    the same on every run and machine (a timing belongs to the benchmark,
    ``python -m numba_asynccopy.bench.launchprof``)."""
    import sys

    x = cuda.to_device(np.ones((32, 32), np.float32))
    y = cuda.to_device(np.zeros((32, 32)))
    out = cuda.to_device(np.full((32, 32), np.nan))
    args = (out, x, y, np.float32(1), np.int16(0), False, np.complex64(0), (0, 0.0))
    ours = lambda: ac.launch(combine, 4, (16, 16), args)  # noqa: E731
    numbas = lambda: combine[4, (16, 16)](*args)  # noqa: E731

    def python_calls(fn) -> int:
        n = 0

        def count(frame, event, arg):
            nonlocal n
            n += event == "call"

        sys.setprofile(count)
        try:
            fn()
        finally:
            sys.setprofile(None)
        return n

    for _ in range(2):  # compile, then prepare the fast path
        ours(), numbas()
    paths = launch_paths(monkeypatch)
    n_ours, n_numba = python_calls(ours), python_calls(numbas)
    cuda.synchronize()
    assert paths == []  # ours took the prepared path
    # 4 blocks of 16x16 threads cover rows 0-31 of columns 0-15: alpha * 1 there
    want = np.full((32, 32), np.nan)
    want[:, :16] = 1.0
    np.testing.assert_array_equal(out.copy_to_host(), want)
    assert n_ours < 0.8 * n_numba, (n_ours, n_numba)


@skip_on_sim("torch tensors on a real GPU")
def test_host_arrays_and_torch_tensors_take_numbas_marshalling():
    torch = pytest.importorskip("torch")
    host = np.zeros(64, np.int32)
    for _ in range(2):  # copied in and back every time
        host[:] = 0
        ac.launch(fill, 2, 32, (host,))
        assert (host[:2] == 1).all() and (host[2:] == 0).all()
    t = torch.zeros(64, dtype=torch.int32, device="cuda")
    for _ in range(2):
        t.zero_()
        ac.launch(fill, 4, 32, (t,))
        torch.cuda.synchronize()
        assert t[:4].eq(1).all().item() and t[4:].eq(0).all().item()
