"""``ac.launch`` through Numba's own dispatch, without a GPU.

A fake CUDA context (compute capability 9.0) lets numba-cuda compile real
kernels and resolve them with its C dispatcher; the driver calls (module
load, kernel attributes, the cuda.core launch) are replaced by recorders.
So these tests run the real ``dispatcher.configure`` / ``dispatcher.call``
/ ``_Kernel.launch`` hook path and check what reaches the driver: the
launch configuration, the marshalled arguments, the kernel attributes set,
and that every error is raised before anything is launched.
"""

from __future__ import annotations

import ctypes
import sys
from types import SimpleNamespace

import pytest
from numba import cuda, types

import numba_asynccopy as ac
from numba_asynccopy.host import _numba_internals as nb
from numba_asynccopy.host import launch as L

from ..conftest import HAVE_GPU

pytestmark = pytest.mark.skipif(
    HAVE_GPU or nb.SIMULATOR, reason="fakes the CUDA context: only where there is no GPU")

OPTIN = 232448  # sm_90: 227 KB


class FakeDevice:
    id = 0
    compute_capability = (9, 0)
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = OPTIN
    MAX_BLOCK_DIM_X = MAX_BLOCK_DIM_Y = MAX_THREADS_PER_BLOCK = 1024  # sm_90's launch limits
    MAX_BLOCK_DIM_Z = 64
    MAX_GRID_DIM_X, MAX_GRID_DIM_Y, MAX_GRID_DIM_Z = 2**31 - 1, 65535, 65535


class FakeContext:
    device = FakeDevice()

    def create_module_image(self, cubin, setup, teardown):
        def get_function(name):
            return SimpleNamespace(name=name, attrs=SimpleNamespace(shared=0), device=FakeDevice(),
                                   handle=name, kernel=f"kernel:{name}",
                                   module=SimpleNamespace(initialized=True))
        return SimpleNamespace(get_function=get_function)


@pytest.fixture(scope="module")
def fake_context():
    from numba.cuda.cudadrv import devices

    tls = devices._runtime._tls
    previous = getattr(tls, "attached_context", None)
    tls.attached_context = FakeContext()
    yield
    if previous is None:
        del tls.attached_context
    else:
        tls.attached_context = previous


@pytest.fixture
def driver(fake_context, monkeypatch):
    """Records what reaches the driver; ``declared`` maps a function name to
    the cluster shape its fake cufunc reports."""
    from numba.cuda import dispatcher
    from numba.cuda.cudadrv import driver as numba_driver

    rec = SimpleNamespace(launches=[], numba_launches=[], attrs=[], configs=[], declared={})

    def get_attribute(cufunc, name):
        dims = next((d for f, d in rec.declared.items() if f in cufunc.name), (0, 0, 0))
        return dict(zip(("REQUIRED_CLUSTER_WIDTH", "REQUIRED_CLUSTER_HEIGHT",
                         "REQUIRED_CLUSTER_DEPTH"), dims))[name]

    def launch_config(device_id, grid3, block3, shared_mem, cluster):
        rec.configs.append((device_id, grid3, block3, shared_mem, cluster))
        return ("config", grid3, block3, shared_mem, cluster)

    monkeypatch.setattr(numba_driver, "_to_core_stream", lambda s: ("core stream", s))
    monkeypatch.setattr(nb, "core_launch", lambda stream, config, kernel, *args:
                        rec.launches.append((stream, config, kernel, args)))
    monkeypatch.setattr(dispatcher, "launch", lambda stream, config, kernel, *args:
                        rec.numba_launches.append((tuple(config.grid), kernel, args)))
    monkeypatch.setattr(nb, "kernel_get_attribute", get_attribute)
    monkeypatch.setattr(nb, "kernel_set_attribute", lambda cufunc, name, value:
                        rec.attrs.append((name, value)))
    monkeypatch.setattr(L, "_launch_config", launch_config)
    assert nb.claims.pending is None
    yield rec
    assert nb.claims.pending is None  # every test leaves the thread unclaimed


def ints(args):
    return [a.value if isinstance(a, ctypes._SimpleCData) else a for a in args]


@pytest.fixture(scope="module")
def probe(fake_context):
    @cuda.jit("void(int32)")
    def probe(x):
        pass

    return probe


# --- the launch ------------------------------------------------------------------------------


def test_cluster_launch_goes_through_the_hook(driver, probe):
    ac.launch(probe, 8, 32, (5,), cluster=2)
    (stream, config, kernel, args), = driver.launches
    assert stream == ("core stream", 0)  # numba's configure() converted it
    assert config == ("config", (8, 1, 1), (32, 1, 1), 0, (2, 1, 1))
    assert kernel.startswith("kernel:") and "probe" in kernel
    assert ints(args) == [5]
    assert driver.numba_launches == []  # numba's own launch did not run
    assert driver.configs == [(0, (8, 1, 1), (32, 1, 1), 0, (2, 1, 1))]


def test_same_shape_again_skips_every_check(driver, probe, monkeypatch):
    ac.launch(probe, (16, 2), 64, (1,), cluster=(2, 2), shared_mem=1024, stream=0)
    calls = []
    for name in ("dim3", "check_grid", "check_cluster_shape", "_prepare"):
        real = getattr(L, name)
        monkeypatch.setattr(L, name, lambda *a, _r=real, _n=name, **k: calls.append(_n) or _r(*a, **k))
    for value in (2, 3):
        ac.launch(probe, (16, 2), 64, (value,), cluster=(2, 2), shared_mem=1024, stream=0)
    assert calls == []
    assert [ints(a) for _, _, _, a in driver.launches] == [[1], [2], [3]]
    assert len(driver.configs) == 1  # one LaunchConfig for the shape
    # another shape is checked (and gets its own configuration)
    ac.launch(probe, (16, 2), 64, (4,), cluster=(4, 1))
    assert "dim3" in calls and "_prepare" in calls
    assert driver.configs[-1] == (0, (16, 2, 1), (64, 1, 1), 0, (4, 1, 1))


def test_lazy_dispatcher_compiles_once_then_takes_the_c_fast_path(driver, monkeypatch):
    @cuda.jit
    def lazy(x):
        pass

    ac.launch(lazy, 4, 32, (7,), cluster=2)
    assert len(lazy.overloads) == 1
    compiles = []
    real = lazy._compile_for_args
    monkeypatch.setattr(lazy, "_compile_for_args", lambda *a: compiles.append(a) or real(*a))
    ac.launch(lazy, 4, 32, (8,), cluster=2)
    assert compiles == []  # resolved by numba's C dispatcher, no typeof/compile in Python
    assert [ints(a) for _, _, _, a in driver.launches] == [[7], [8]]


def test_kernel_object_and_signature_lists_are_accepted(driver):
    @cuda.jit(["void(int32)", "void(float64)"])
    def two(x):
        pass

    ac.launch(two, 4, 32, (1.5,), cluster=2)
    kernel = two.overloads[(types.float64,)]
    ac.launch(kernel, 4, 32, [2.5], cluster=4)
    launched = [(k, ints(a)) for _, _, k, a in driver.launches]
    assert launched[0][1] == [1.5] and launched[1][1] == [2.5]
    assert launched[0][0] == launched[1][0]  # the float64 overload both times
    assert [c[-1] for c in driver.configs] == [(2, 1, 1), (4, 1, 1)]


def test_shared_memory_above_48kb_is_opted_in_once(driver, probe):
    @cuda.jit("void(int32)")
    def big(x):
        pass

    ac.launch(big, 2, 32, (0,), shared_mem=200 * 1024)
    ac.launch(big, 2, 32, (0,), shared_mem=200 * 1024)
    ac.launch(big, 2, 32, (0,), shared_mem=100 * 1024)
    assert driver.attrs == [("MAX_DYNAMIC_SHARED_SIZE_BYTES", 200 * 1024)]
    assert [c[3] for c in driver.configs] == [200 * 1024, 100 * 1024]
    assert [c[-1] for c in driver.configs] == [None, None]


def test_ordinary_launch_is_untouched(driver, probe):
    probe[4, 32](9)
    assert driver.launches == [] and len(driver.numba_launches) == 1
    grid, _, args = driver.numba_launches[0]
    assert grid == (4, 1, 1) and ints(args) == [9]


def test_a_claim_for_other_arguments_is_not_consumed(driver, probe):
    claimed = (1,)
    nb.claims.pending = (claimed, "claim")
    try:
        probe[4, 32](1)  # equal arguments, another tuple: an ordinary launch
        assert nb.claims.pending == (claimed, "claim")
    finally:
        nb.claims.pending = None
    assert driver.launches == [] and len(driver.numba_launches) == 1


def test_a_kernel_rebuilt_from_the_cache_has_no_py_func(driver):
    from numba.cuda.dispatcher import _Kernel

    @cuda.jit("void(int32)")
    def cached(x):
        pass

    sig, kernel = next(iter(cached.overloads.items()))
    rebuilt = _Kernel._rebuild(**kernel._reduce_states())  # as the on-disk cache loads it
    assert not hasattr(rebuilt, "py_func")
    cached.overloads[sig] = rebuilt
    ac.launch(cached, 4, 32, (3,), cluster=2)
    ac.launch(rebuilt, 4, 32, (4,), cluster=2)
    assert [(c[-1], ints(a)) for (_, c, _, a) in driver.launches] == [((2, 1, 1), [3]), ((2, 1, 1), [4])]


def test_declared_shape(driver):
    @cuda.jit("void(int32)")
    def pairs_2x2(x):
        ac.cluster_dims(2, 2)

    driver.declared["pairs_2x2"] = (2, 2, 1)
    ac.launch(pairs_2x2, (4, 4), 32, (0,))
    ac.launch(pairs_2x2, (4, 4), 32, (0,), cluster=(2, 2))  # the same shape given again
    # the shape is part of the kernel: the LaunchConfig counts blocks, no cluster
    assert driver.configs == [(0, (4, 4, 1), (32, 1, 1), 0, None)] * 2
    with pytest.raises(ac.ClusterLaunchError, match=r"ac.launch: the kernel declares "
                                                    r"cluster_dims\(2, 2, 1\); cluster=\(4, 1, 1\)"):
        ac.launch(pairs_2x2, (4, 4), 32, (0,), cluster=(4, 1, 1))
    with pytest.raises(ac.ClusterLaunchError, match=r"ac.launch: grid \(3, 4, 1\) \(blocks\) is not "
                                                    r"a multiple of the cluster shape \(2, 2, 1\)"):
        ac.launch(pairs_2x2, (3, 4), 32, (0,))
    assert len(driver.launches) == 2


# --- errors: all before the driver --------------------------------------------------------------


@pytest.mark.parametrize("kwargs,message", [
    (dict(grid=6, cluster=4), r"ac.launch: grid \(6, 1, 1\) \(blocks\) is not a multiple of the "
                              r"cluster shape \(4, 1, 1\) on axis x"),
    (dict(grid=16, cluster=16),
     "16 CTAs; more than 8 is a non-portable cluster size: pass non_portable=True"),
    (dict(grid=32, cluster=32, non_portable=True), "the largest cluster is 16 CTAs"),
    (dict(grid=4, cluster=(2, 0)), "`cluster` must be 1-3 positive ints"),
    (dict(grid=4.0), "`grid` must be an int or a tuple of 1-3 ints"),
    (dict(grid=True), "`grid` must be an int or a tuple of 1-3 ints"),
    (dict(grid=4, shared_mem=-1), "ac.launch: shared_mem must be >= 0, got -1"),
    (dict(grid=4, shared_mem=OPTIN + 16), f"ac.launch: {OPTIN + 16} bytes of dynamic shared memory "
                                          f"plus the kernel's 0 bytes of static shared memory exceed "
                                          f"the device's per-block opt-in limit of {OPTIN} bytes"),
])
def test_errors_before_the_driver(driver, probe, kwargs, message):
    kwargs = dict(block=32, args=(0,)) | kwargs
    ac.launch(probe, 4, 32, (0,))  # 4 and 4.0, 1 and True hash alike: cached shapes must not leak
    for _ in range(2):  # a cached good shape must not hide the error either
        with pytest.raises(ac.ClusterLaunchError, match=message):
            ac.launch(probe, **kwargs)
    assert len(driver.launches) == 1 and driver.numba_launches == []
    assert driver.attrs == []


def test_non_portable_cluster_sets_the_attribute_once(driver, probe):
    for _ in range(3):
        ac.launch(probe, 32, 32, (0,), cluster=16, non_portable=True)
    assert driver.attrs == [("NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)]
    assert len(driver.launches) == 3


def test_debug_and_cooperative_kernels_are_rejected(driver, probe, monkeypatch):
    @cuda.jit("void(int32)", debug=True, opt=False)
    def dbg(x):
        pass

    for _ in range(2):
        with pytest.raises(ac.ClusterLaunchError, match="ac.launch: kernels compiled with debug=True "
                                                        "or using grid sync are not supported"):
            ac.launch(dbg, 4, 32, (0,), cluster=2)
    kernel = next(iter(probe.overloads.values()))
    monkeypatch.setattr(kernel, "cooperative", True)
    with pytest.raises(ac.ClusterLaunchError, match="using grid sync are not supported"):
        ac.launch(probe, 2, 32, (0,), cluster=2)
    assert driver.launches == []


def test_device_functions_and_other_objects_are_rejected(driver):
    @cuda.jit(device=True)
    def helper(x):
        return x

    with pytest.raises(TypeError, match="helper is a device function, not a kernel"):
        ac.launch(helper, 4, 32, (0,), cluster=2)
    with pytest.raises(TypeError, match="expected a @cuda.jit kernel, got function"):
        ac.launch(helper.py_func, 4, 32, (0,), cluster=2)
    assert driver.launches == []


def test_wrong_argument_count(driver, probe):
    kernel = next(iter(probe.overloads.values()))
    with pytest.raises(TypeError, match="kernel takes 1 arguments, got 2"):
        ac.launch(kernel, 4, 32, (0, 1), cluster=2)
    with pytest.raises(TypeError):  # numba's dispatcher: no matching definition
        ac.launch(probe, 4, 32, (0, 1), cluster=2)
    assert driver.launches == []


def test_without_the_hook_nothing_is_launched(driver, probe, monkeypatch):
    from numba.cuda import dispatcher

    monkeypatch.setattr(dispatcher._Kernel, "launch", nb._original_launch)
    with pytest.raises(RuntimeError, match="_Kernel.launch is not numba_asynccopy's hook"):
        ac.launch(probe, 4, 32, (0,), cluster=2)
    assert driver.launches == [] and driver.numba_launches == []


# --- cost: no more Python work than numba's own launch --------------------------------------------


def python_calls(fn) -> int:
    """Python-level function calls one ``fn()`` makes (deterministic, unlike timing)."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def test_hot_path_makes_no_more_python_calls_than_numbas_launch(driver, probe):
    ours = lambda: ac.launch(probe, 528, 128, (1,), cluster=2)  # noqa: E731
    numbas = lambda: probe[528, 128](1)  # noqa: E731
    ours(), numbas()  # first launches check and cache
    n_ours, n_numba = python_calls(ours), python_calls(numbas)
    assert n_ours <= n_numba, (n_ours, n_numba)



def test_launchprof_says_it_needs_a_gpu(capsys):
    from numba_asynccopy.bench import launchprof

    assert launchprof.main(["--n", "10"]) == 2
    assert "launchprof: no CUDA GPU is available; it times real kernel launches" in capsys.readouterr().err
