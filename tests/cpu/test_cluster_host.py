"""Host side of clusters without a GPU: shape and grid rules, the launch
preparation (attributes, errors) against a fake kernel, and the numba-cuda
internals the host side relies on."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import numba_asynccopy as ac
from numba_asynccopy.host import _numba_internals as nb
from numba_asynccopy.host import launch as L


@pytest.mark.parametrize("value,expected", [
    (4, (4, 1, 1)), ((4,), (4, 1, 1)), ((2, 3), (2, 3, 1)), ([1, 2, 3], (1, 2, 3)),
])
def test_dim3(value, expected):
    assert L.dim3(value, "grid") == expected


@pytest.mark.parametrize("value", [0, (1, 0), (1, 2, 3, 4), (), "x", -2, None])
def test_dim3_rejects(value):
    with pytest.raises(ac.ClusterLaunchError, match="`grid` must be"):
        L.dim3(value, "grid")


def test_grid_not_a_multiple_of_the_cluster():
    L.check_grid((8, 4, 1), (2, 2, 1), "t")
    with pytest.raises(ac.ClusterLaunchError) as info:
        L.check_grid((6, 3, 1), (4, 2, 1), "t")
    assert str(info.value) == (
        "t: grid (6, 3, 1) (blocks) is not a multiple of the cluster shape (4, 2, 1) on axis x, y"
    )


def test_cluster_size_limits():
    L.check_cluster_shape((8, 1, 1), False, "t")
    L.check_cluster_shape((4, 4, 1), True, "t")
    with pytest.raises(ac.ClusterLaunchError, match="16 CTAs; more than 8 is a non-portable"):
        L.check_cluster_shape((16, 1, 1), False, "t")
    with pytest.raises(ac.ClusterLaunchError, match="the largest cluster is 16 CTAs"):
        L.check_cluster_shape((4, 4, 2), True, "t")


def test_cluster_launch_error_is_a_value_error():
    assert issubclass(ac.ClusterLaunchError, ValueError)


# --- _prepare against a fake kernel ----------------------------------------------------


class FakeDevice:
    id = 0
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 232448  # sm_90: 227 KB
    MAX_BLOCK_DIM_X = MAX_BLOCK_DIM_Y = MAX_THREADS_PER_BLOCK = 1024  # sm_90's launch limits
    MAX_BLOCK_DIM_Z = 64
    MAX_GRID_DIM_X, MAX_GRID_DIM_Y, MAX_GRID_DIM_Z = 2**31 - 1, 65535, 65535


def fake_kernel(static_shared=0, declared=(0, 0, 0)):
    cufunc = SimpleNamespace(attrs=SimpleNamespace(shared=static_shared), device=FakeDevice(),
                             handle=1, declared=declared, set={})
    kernel = SimpleNamespace(entry_name="k", cufunc=cufunc)
    return kernel, cufunc


@pytest.fixture
def fake_driver(monkeypatch):
    calls = []

    def get(cufunc, name):
        return dict(zip(("REQUIRED_CLUSTER_WIDTH", "REQUIRED_CLUSTER_HEIGHT",
                         "REQUIRED_CLUSTER_DEPTH"), cufunc.declared))[name]

    def set_(cufunc, name, value):
        calls.append((name, value))
        cufunc.set[name] = value

    monkeypatch.setattr(nb, "cufunc_of", lambda k: k.cufunc)
    monkeypatch.setattr(nb, "kernel_get_attribute", get)
    monkeypatch.setattr(nb, "kernel_set_attribute", set_)
    return calls


def test_prepare_plain_kernel_touches_nothing(fake_driver):
    k, _ = fake_kernel()
    _, st, shape = L._prepare(k, (3, 1, 1), (32, 1, 1), 1024)
    assert shape is None and st.declared is None and fake_driver == []


def test_prepare_declared_shape(fake_driver):
    k, _ = fake_kernel(declared=(2, 2, 1))
    _, st, shape = L._prepare(k, (4, 2, 1), (32, 1, 1), 0)
    assert shape == (2, 2, 1) and fake_driver == []
    with pytest.raises(ac.ClusterLaunchError, match=r"grid \(3, 2, 1\) \(blocks\) is not a multiple"):
        L._prepare(k, (3, 2, 1), (32, 1, 1), 0)
    with pytest.raises(ac.ClusterLaunchError, match=r"declares cluster_dims\(2, 2, 1\); cluster=\(4, 1, 1\)"):
        L._prepare(k, (4, 2, 1), (32, 1, 1), 0, cluster=(4, 1, 1))


def test_prepare_non_portable_sets_the_attribute_once(fake_driver):
    k, _ = fake_kernel()
    with pytest.raises(ac.ClusterLaunchError, match="non_portable=True"):
        L._prepare(k, (16, 1, 1), 32, 0, cluster=(16, 1, 1))
    for _ in range(2):
        L._prepare(k, (32, 1, 1), 32, 0, cluster=(16, 1, 1), non_portable=True)
    assert fake_driver == [("NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)]


def test_prepare_declared_sixteen_is_non_portable(fake_driver):
    k, _ = fake_kernel(declared=(4, 4, 1))
    L._prepare(k, (4, 4, 1), 32, 0)
    assert fake_driver == [("NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)]


def test_prepare_raises_the_dynamic_shared_limit(fake_driver):
    k, _ = fake_kernel(static_shared=1024)
    L._prepare(k, 1, 32, 48 * 1024 - 1024)  # fits the default 48 KB
    assert fake_driver == []
    L._prepare(k, 1, 32, 200 * 1024)
    L._prepare(k, 1, 32, 100 * 1024)  # already allowed: no second call
    assert fake_driver == [("MAX_DYNAMIC_SHARED_SIZE_BYTES", 200 * 1024)]
    with pytest.raises(ac.ClusterLaunchError) as info:
        L._prepare(k, 1, 32, 232448)
    assert "232448 bytes of dynamic shared memory plus the kernel's 1024 bytes of static " \
           "shared memory exceed the device's per-block opt-in limit of 232448 bytes" in str(info.value)
    with pytest.raises(ac.ClusterLaunchError, match="shared_mem must be >= 0"):
        L._prepare(k, 1, 32, -1)


def test_ordinary_launch_runs_the_hook_first(monkeypatch):
    from numba.cuda import dispatcher

    seen = []

    def prepare(kernel, griddim, blockdim, sharedmem, **kw):
        seen.append((griddim, blockdim, sharedmem))
        raise ac.ClusterLaunchError("stop")

    monkeypatch.setattr(L, "_prepare", prepare)
    with pytest.raises(ac.ClusterLaunchError, match="stop"):
        dispatcher._Kernel.launch(SimpleNamespace(entry_name="k"), (), (2, 1, 1), (32, 1, 1), 0, 4096)
    assert seen == [((2, 1, 1), (32, 1, 1), 4096)]


# --- the numba-cuda / cuda-core internals the host side names ------------------------------


def test_numba_cuda_internals_exist():
    from cuda.bindings import driver as binding
    from cuda.core import LaunchConfig
    from cuda.core._module import KernelOccupancy
    from numba.cuda import dispatcher
    from numba.cuda.cudadrv import driver

    assert nb.launch_hook_installed()
    assert dispatcher._Kernel.launch.__wrapped__ is nb._original_launch
    import inspect

    init_names = inspect.unwrap(dispatcher._Kernel.__init__).__code__.co_names
    assert callable(dispatcher._Kernel._prepare_args)
    for name in ("_codelibrary", "entry_name", "cooperative", "debug", "py_func"):
        assert name in init_names, name
    assert "argument_types" in dir(dispatcher._Kernel)
    assert callable(dispatcher.CUDADispatcher._compile_for_args)
    # ac.launch: configure() -> _LaunchConfiguration (core stream), call() -> _Kernel.launch
    call_names = inspect.unwrap(dispatcher.CUDADispatcher.call).__code__.co_names
    for name in ("griddim", "blockdim", "stream", "sharedmem", "_cuda_call", "launch"):
        assert name in call_names, name
    assert "_to_core_stream" in dispatcher._LaunchConfiguration.__init__.__code__.co_names
    assert callable(dispatcher.CUDADispatcher.configure)
    assert inspect.signature(nb._original_launch).parameters.keys() == {
        "self", "args", "griddim", "blockdim", "stream", "sharedmem"}
    assert callable(driver._to_core_stream)
    for attr in ("REQUIRED_CLUSTER_WIDTH", "REQUIRED_CLUSTER_HEIGHT", "REQUIRED_CLUSTER_DEPTH",
                 "NON_PORTABLE_CLUSTER_SIZE_ALLOWED", "MAX_DYNAMIC_SHARED_SIZE_BYTES"):
        assert hasattr(binding.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{attr}")
    assert hasattr(binding.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
    assert callable(KernelOccupancy.max_active_clusters)

    assert "cluster : tuple | int" in LaunchConfig.__doc__


def test_compiling_kernel_outside_a_compile_is_none():
    assert nb.compiling_kernel() is None


def test_the_driver_configuration_is_cuda_cores():
    """``native_config`` builds the ``CUlaunchConfig`` that cuda.core's
    launch builds for a ``LaunchConfig`` (grid in blocks, the cluster shape
    as the CLUSTER_DIMENSION attribute), on the given stream."""
    from cuda.bindings import driver as binding

    cfg = nb.native_config((8, 2, 1), (128, 1, 1), 1024, (2, 1, 1), 0x55)
    assert (cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ) == (8, 2, 1)
    assert (cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ) == (128, 1, 1)
    assert cfg.sharedMemBytes == 1024 and int(cfg.hStream) == 0x55
    (attr,) = cfg.attrs
    assert cfg.numAttrs == 1
    assert attr.id == binding.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    assert (attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z) == (2, 1, 1)
    plain = nb.native_config((4, 1, 1), (32, 1, 1), 0, None, 0)
    assert plain.numAttrs == 0 and plain.attrs == [] and int(plain.hStream) == 0