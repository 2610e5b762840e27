"""``ac.launch`` without a GPU: Numba's dispatch on the first launch, the
prepared fast path after it.

A fake CUDA context (compute capability 9.0) lets numba-cuda compile real
kernels and resolve them with its C dispatcher; the driver calls (module
load, kernel attributes, ``cuLaunchKernelEx``) are replaced by recorders
that read the launch configuration and the parameter bytes the driver
would copy (as many bytes per parameter as the kernel's PTX declares).
So these tests run the real ``dispatcher.configure`` / ``dispatcher.call``
/ ``_Kernel.launch`` hook path, then the prepared launcher, and check:

- the bytes of every parameter equal those of Numba's own marshalling
  (``_Kernel._prepare_args``) converted by cuda.core's ``ParamHolder``
  (what ``cuda.core.launch`` hands the driver), for arrays of every
  layout and dtype, scalars of each type, tuples and device records;
- that every check still fires, and that anything the key does not
  capture (an array's dtype or layout, a tuple's element classes, the
  context, a new overload, a pre-launch callback) goes back to Numba;
- that errors are raised before anything is launched.
"""

from __future__ import annotations

import ctypes
import importlib
import re
import sys
from collections import namedtuple
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest
from numba import cuda, types

import numba_asynccopy as ac
from numba_asynccopy.host import _numba_internals as nb
from numba_asynccopy.host import _prepared as P
from numba_asynccopy.host import launch as L

from ..conftest import HAVE_GPU

pytestmark = pytest.mark.skipif(
    HAVE_GPU or nb.SIMULATOR, reason="fakes the CUDA context: only where there is no GPU")

OPTIN = 232448  # sm_90: 227 KB
REAL_LAUNCH_EX = nb.launch_ex
CTX = 0x7C7C  # the fake context's handle


class FakeDevice:
    id = 0
    compute_capability = (9, 0)
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = OPTIN
    MAX_BLOCK_DIM_X = MAX_BLOCK_DIM_Y = MAX_THREADS_PER_BLOCK = 1024  # sm_90's launch limits
    MAX_BLOCK_DIM_Z = 64
    MAX_GRID_DIM_X, MAX_GRID_DIM_Y, MAX_GRID_DIM_Z = 2**31 - 1, 65535, 65535


class FakeContext:
    device = FakeDevice()
    handle = CTX

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


# --- reading what reaches the driver ------------------------------------------------------------

_PTX_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.([usbf])(\d+)\s+\S+?(?:\[(\d+)\])?\s*[,)]?\s*$")


def param_sizes(kernel) -> list[int]:
    """Bytes of each parameter of a compiled kernel, read from its PTX (what
    the driver copies from each pointer of the parameter array)."""
    ptx = kernel.inspect_asm(cc=(9, 0))
    entry = ptx[ptx.index(".entry"):]
    header = entry[:entry.index("{")]
    sizes = []
    for line in header.splitlines():
        m = _PTX_PARAM.search(line.strip())
        if m:
            kind, bits, count = m.groups()
            sizes.append(int(bits) // 8 * (int(count) if count else 1))
    return sizes


def read_params(addr: int, sizes: list[int]) -> list[bytes]:
    if not sizes:
        assert addr == 0
        return []
    ptrs = (ctypes.c_void_p * len(sizes)).from_address(addr)
    return [ctypes.string_at(p, n) for p, n in zip(ptrs, sizes)]


def numba_param_bytes(kernel, args, stream=0) -> list[bytes]:
    """The bytes Numba's own launch hands the driver for ``args``: its
    marshalling, then cuda.core's ParamHolder (as ``cuda.core.launch``)."""
    from cuda.core._kernel_arg_handler import ParamHolder

    kernelargs, _ = nb.marshal_args(kernel, args, stream)
    holder = ParamHolder(kernelargs)
    return read_params(holder.ptr, param_sizes(kernel))


def values(kernel, params: list[bytes]) -> list:
    """Parameter bytes as Python values, by the kernel's flattened types."""
    out = []

    def flat(ty):
        if isinstance(ty, types.Array):
            return ["q"] * (5 + 2 * ty.ndim)
        if isinstance(ty, types.BaseTuple):
            return [f for t in ty for f in flat(t)]
        if isinstance(ty, types.Record):
            return ["q"]
        if ty == types.boolean:
            return ["?"]
        if ty == types.float16:
            return ["e"]
        if isinstance(ty, types.Complex):
            return ["f", "f"] if ty == types.complex64 else ["d", "d"]
        if isinstance(ty, types.Float):
            return ["f" if ty == types.float32 else "d"]
        if isinstance(ty, types.Integer):
            return [{8: "b", 16: "h", 32: "i", 64: "q"}[ty.bitwidth].upper()
                    if not ty.signed else {8: "b", 16: "h", 32: "i", 64: "q"}[ty.bitwidth]]
        return ["q"]

    import struct

    codes = [c for t in kernel.argument_types for c in flat(t)]
    for code, raw in zip(codes, params):
        out.append(struct.unpack("<" + code, raw)[0])
    return out


def _kernel_of(func):
    return func[0]


#: every driver configuration built in this module, by its C struct's address
#: (kept alive, so no address is reused; a compiled kernel keeps its own
#: configurations from one test to the next)
_CONFIGS: dict = {}


@pytest.fixture
def driver(fake_context, monkeypatch):
    """Records what reaches the driver.  ``launches``: ``(stream handle,
    ("config", grid, block, shared_mem, cluster), kernel name, parameter
    values)``; ``raw``: the parameter bytes of each; ``paths``: "numba" or
    "fast" for each; ``configs``: each driver configuration built;
    ``declared`` maps a function name to the cluster shape its fake cufunc
    reports."""
    from numba.cuda import dispatcher
    from numba.cuda.cudadrv import driver as numba_driver

    rec = SimpleNamespace(launches=[], raw=[], paths=[], numba_launches=[], attrs=[], configs=[],
                          declared={}, during=None)

    def get_attribute(cufunc, name):
        dims = next((d for f, d in rec.declared.items() if f in cufunc.name), (0, 0, 0))
        return dict(zip(("REQUIRED_CLUSTER_WIDTH", "REQUIRED_CLUSTER_HEIGHT",
                         "REQUIRED_CLUSTER_DEPTH"), dims))[name]

    real_config = nb.native_config
    by_address = _CONFIGS

    def native_config(grid, block, shared_mem, cluster, handle):
        rec.configs.append((grid, block, shared_mem, cluster, handle))
        cfg = real_config(grid, block, shared_mem, cluster, handle)
        by_address[int(cfg.getPtr())] = cfg
        return cfg

    def launch_ex(address, func, params, extra):
        assert extra is None
        cfg = by_address[address]  # what the driver reads at that address
        kernel, name = func
        raw = read_params(params, param_sizes(kernel))
        cluster = None
        if cfg.numAttrs:
            (attr,) = cfg.attrs
            assert attr.id == nb_binding().CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            d = attr.value.clusterDim
            cluster = (d.x, d.y, d.z)
        config = ("config", (cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ),
                  (cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ), cfg.sharedMemBytes, cluster)
        rec.launches.append((int(cfg.hStream), config, name, values(kernel, raw)))
        rec.raw.append(raw)
        rec.paths.append("numba" if in_numba_path() else "fast")
        if rec.during is not None:
            during, rec.during = rec.during, None
            during()
        return 0  # CUDA_SUCCESS

    real_core_stream = numba_driver._to_core_stream

    def core_stream(s):  # cuda.core's streams need a driver; its type errors do not
        if not s or isinstance(s, numba_driver.Stream):
            return ("core stream", s)
        return real_core_stream(s)

    monkeypatch.setattr(numba_driver, "_to_core_stream", core_stream)
    monkeypatch.setattr(nb, "launch_handle", lambda kernel, cufunc: (kernel, cufunc.kernel))
    monkeypatch.setattr(nb, "launch_ex", launch_ex)
    monkeypatch.setattr(nb, "native_config", native_config)
    monkeypatch.setattr(dispatcher, "launch", lambda stream, config, kernel, *args:
                        rec.numba_launches.append((tuple(config.grid), kernel, args)))
    monkeypatch.setattr(nb, "kernel_get_attribute", get_attribute)
    monkeypatch.setattr(nb, "kernel_set_attribute", lambda cufunc, name, value:
                        rec.attrs.append((name, value)))
    assert nb.claims.pending is None
    yield rec
    assert nb.claims.pending is None  # every test leaves the thread unclaimed


def nb_binding():
    from cuda.bindings import driver as binding

    return binding


def in_numba_path() -> bool:
    """Whether the launch now reaching the driver comes from Numba's marshalling."""
    f = sys._getframe(2)
    while f is not None:
        if f.f_code is nb.launch_kernel.__code__:
            return True
        f = f.f_back
    return False


def ints(args):
    return [a.value if isinstance(a, ctypes._SimpleCData) else a for a in args]


@pytest.fixture(scope="module")
def _probe(fake_context):
    @cuda.jit("void(int32)")
    def probe(x):
        pass

    return probe


@pytest.fixture
def probe(_probe):
    """A compiled kernel without prepared launches."""
    P.forget(_probe)
    return _probe


class FakeMem:
    """Device memory at a made-up address (nothing dereferences it)."""

    def __init__(self, ptr: int):
        self.ptr = ptr

    @property
    def device_ctypes_pointer(self):
        return ctypes.c_void_p(self.ptr)


def device_array(shape, dtype, strides=None, ptr=0x7F00_0000_0000, order="C"):
    """A numba DeviceNDArray over fake memory (any strides: views, broadcasts)."""
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    dtype = np.dtype(dtype)
    if strides is None:
        strides = np.empty(shape, dtype, order=order).strides
    return DeviceNDArray(shape, strides, dtype, gpu_data=FakeMem(ptr))


def device_record(dtype, ptr=0x7F00_1000_0000):
    from numba.cuda.cudadrv.devicearray import DeviceRecord

    return DeviceRecord(np.dtype(dtype), gpu_data=FakeMem(ptr))


def twice_then_compare(driver, kernel, args_list, **launch):
    """Launch ``kernel`` with each argument tuple of ``args_list``; the first
    goes through Numba, the others must take the fast path; every launch's
    parameter bytes must equal Numba's marshalling of its arguments."""
    start = len(driver.launches)
    for args in args_list:
        ac.launch(kernel, 4, 32, args, **launch)
    paths = driver.paths[start:]
    assert paths == ["numba"] + ["fast"] * (len(args_list) - 1), paths
    compiled = next(k for k in kernel.overloads.values()
                    if k.entry_name in driver.launches[start][2]) if hasattr(kernel, "overloads") \
        else kernel
    for args, raw in zip(args_list, driver.raw[start:]):
        want = numba_param_bytes(compiled, args)
        assert raw == want, (args, raw, want)
    return compiled


# --- the launch ------------------------------------------------------------------------------


def test_cluster_launch_goes_through_the_hook_then_the_fast_path(driver, probe):
    ac.launch(probe, 8, 32, (5,), cluster=2)
    ac.launch(probe, 8, 32, (6,), cluster=2)
    assert driver.paths == ["numba", "fast"]
    for (stream, config, kernel, args), want in zip(driver.launches, ([5], [6])):
        assert stream == 0
        assert config == ("config", (8, 1, 1), (32, 1, 1), 0, (2, 1, 1))  # grid in blocks
        assert kernel.startswith("kernel:") and "probe" in kernel
        assert args == want
    assert driver.numba_launches == []  # numba's own launch did not run
    # one driver configuration for the shape and stream, built by the first launch
    assert driver.configs == [((8, 1, 1), (32, 1, 1), 0, (2, 1, 1), 0)]


def test_same_shape_again_skips_every_check(driver, probe):
    ac.launch(probe, (16, 2), 64, (1,), cluster=(2, 2), shared_mem=1024, stream=0)
    calls = []
    with pytest.MonkeyPatch.context() as spy:
        for name in ("dim3", "check_grid", "check_cluster_shape", "_prepare", "_launch_through_numba"):
            real = getattr(L, name)
            spy.setattr(L, name, lambda *a, _r=real, _n=name, **k: calls.append(_n) or _r(*a, **k))
        spy.setattr(nb, "marshal_args", lambda *a: calls.append("marshal_args"))
        for value in (2, 3):
            ac.launch(probe, (16, 2), 64, (value,), cluster=(2, 2), shared_mem=1024, stream=0)
    assert calls == []
    assert [a for _, _, _, a in driver.launches] == [[1], [2], [3]]
    assert driver.paths == ["numba", "fast", "fast"]
    # another shape is checked (and gets its own configuration)
    ac.launch(probe, (16, 2), 64, (4,), cluster=(4, 1))
    assert driver.paths[-1] == "numba"
    assert driver.launches[-1][1] == ("config", (16, 2, 1), (64, 1, 1), 0, (4, 1, 1))


def test_lazy_dispatcher_compiles_once_then_launches_without_numba(driver, monkeypatch):
    @cuda.jit
    def lazy(x):
        pass

    ac.launch(lazy, 4, 32, (7,), cluster=2)
    assert len(lazy.overloads) == 1
    compiles = []
    real = lazy._compile_for_args
    monkeypatch.setattr(lazy, "_compile_for_args", lambda *a: compiles.append(a) or real(*a))
    ac.launch(lazy, 4, 32, (8,), cluster=2)
    assert compiles == []
    assert [a for _, _, _, a in driver.launches] == [[7], [8]]
    assert driver.paths == ["numba", "fast"]


def test_kernel_object_and_signature_lists_are_accepted(driver):
    @cuda.jit(["void(int32)", "void(float64)"])
    def two(x):
        pass

    ac.launch(two, 4, 32, (1.5,), cluster=2)
    kernel = two.overloads[(types.float64,)]
    ac.launch(kernel, 4, 32, [2.5], cluster=4)
    ac.launch(kernel, 4, 32, [3.5], cluster=4)
    launched = [(k, a) for _, _, k, a in driver.launches]
    assert [a for _, a in launched] == [[1.5], [2.5], [3.5]]
    assert len({k for k, _ in launched}) == 1  # the float64 overload every time
    assert [c[1][-1] for c in driver.launches] == [(2, 1, 1), (4, 1, 1), (4, 1, 1)]
    assert driver.paths == ["numba", "numba", "fast"]


def test_shared_memory_above_48kb_is_opted_in_once(driver, probe):
    @cuda.jit("void(int32)")
    def big(x):
        pass

    ac.launch(big, 2, 32, (0,), shared_mem=200 * 1024)
    ac.launch(big, 2, 32, (0,), shared_mem=200 * 1024)
    ac.launch(big, 2, 32, (0,), shared_mem=100 * 1024)
    assert driver.attrs == [("MAX_DYNAMIC_SHARED_SIZE_BYTES", 200 * 1024)]
    assert [c[1][3] for c in driver.launches] == [200 * 1024] * 2 + [100 * 1024]
    assert [c[1][4] for c in driver.launches] == [None] * 3
    assert driver.paths == ["numba", "fast", "numba"]


def test_ordinary_launch_is_untouched(driver, probe):
    probe[4, 32](9)
    assert driver.launches == [] and len(driver.numba_launches) == 1
    grid, _, args = driver.numba_launches[0]
    assert grid == (4, 1, 1) and ints(args) == [9]


def test_a_claim_for_other_arguments_is_not_consumed(driver, probe):
    claimed = (1,)
    nb.claims.pending = (claimed, "claim", 0)
    try:
        probe[4, 32](1)  # equal arguments, another tuple: an ordinary launch
        assert nb.claims.pending == (claimed, "claim", 0)
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
    ac.launch(cached, 4, 32, (5,), cluster=2)
    assert [(c[-1], a) for (_, c, _, a) in driver.launches] == [
        ((2, 1, 1), [3]), ((2, 1, 1), [4]), ((2, 1, 1), [5])]
    assert driver.paths == ["numba", "numba", "fast"]


def test_declared_shape(driver):
    @cuda.jit("void(int32)")
    def pairs_2x2(x):
        ac.cluster_dims(2, 2)

    driver.declared["pairs_2x2"] = (2, 2, 1)
    ac.launch(pairs_2x2, (4, 4), 32, (0,))
    ac.launch(pairs_2x2, (4, 4), 32, (0,), cluster=(2, 2))  # the same shape given again
    ac.launch(pairs_2x2, (4, 4), 32, (0,))
    # the shape is part of the kernel: the driver gets the grid in blocks, no cluster attribute
    assert [c for _, c, _, _ in driver.launches] == [("config", (4, 4, 1), (32, 1, 1), 0, None)] * 3
    assert driver.paths == ["numba", "numba", "fast"]
    with pytest.raises(ac.ClusterLaunchError, match=r"ac.launch: the kernel declares "
                                                    r"cluster_dims\(2, 2, 1\); cluster=\(4, 1, 1\)"):
        ac.launch(pairs_2x2, (4, 4), 32, (0,), cluster=(4, 1, 1))
    with pytest.raises(ac.ClusterLaunchError, match=r"ac.launch: grid \(3, 4, 1\) \(blocks\) is not "
                                                    r"a multiple of the cluster shape \(2, 2, 1\)"):
        ac.launch(pairs_2x2, (3, 4), 32, (0,))
    assert len(driver.launches) == 3


def test_a_numba_stream_reaches_the_driver(driver, probe):
    from numba.cuda.cudadrv.driver import Stream

    s = Stream(nb_binding().CUstream(0x77))
    for value in (1, 2):
        ac.launch(probe, 4, 32, (value,), stream=s, cluster=2)
    ac.launch(probe, 4, 32, (3,), cluster=2)
    assert [(h, a) for h, _, _, a in driver.launches] == [(0x77, [1]), (0x77, [2]), (0, [3])]
    assert driver.paths == ["numba", "fast", "fast"]  # the stream is not part of the key
    assert [c[-1] for c in driver.configs] == [0x77, 0]  # a configuration per stream
    # the same refusal on the fast path as on Numba's: an InteropError (a TypeError)
    with pytest.raises(ac.InteropError, match="`stream` must be a Numba stream, .* got str"):
        ac.launch(probe, 4, 32, (4,), stream="s", cluster=2)
    assert len(driver.launches) == 3


# --- the bytes: identical to Numba's marshalling --------------------------------------------------


def arrays_int():  # every integer dtype, layouts C / F / A (strided, broadcast, reversed), 0-3 d
    return [
    device_array((7,), np.int8),
    device_array((3, 5), np.int16, order="F"),
    device_array((6,), np.int32, strides=(8,)),  # every other element: A
    device_array((4, 3), np.int64, strides=(0, 8)),  # broadcast rows: A
    device_array((), np.uint8),
    device_array((2, 3, 4), np.uint16),
    device_array((2, 3, 4), np.uint32, order="F"),
    device_array((3, 4, 2), np.uint64, strides=(8, 48, 24)),  # a transposed view: A
    ]


def arrays_other():  # float, complex and bool dtypes; an empty array
    return [
    device_array((5,), np.float16),
    device_array((5, 2), np.float32),
    device_array((2, 5), np.float64, order="F"),
    device_array((4,), np.complex64, strides=(-8,), ptr=0x7F00_0000_1000),  # reversed
    device_array((3, 3), np.complex128, strides=(16, 0)),
    device_array((1, 1), np.bool_),
    device_array((0,), np.float64),  # empty
    device_array((2, 1, 3), np.float32, strides=(12, 99, 4)),  # a size-1 axis with any stride
    ]


@pytest.mark.parametrize("make", [arrays_int, arrays_other], ids=["int", "float-complex-bool"])
def test_arrays_of_every_layout_and_dtype(driver, make):
    group = make()
    @cuda.jit
    def arrays(a, b, c, d, e, f, g, h):
        pass

    moved = [device_array(a.shape, a.dtype, strides=a.strides, ptr=0x7E00_0000_0000 + 64 * i)
             for i, a in enumerate(group)]
    compiled = twice_then_compare(driver, arrays, [tuple(group), tuple(moved), tuple(group)])
    layouts = {t.layout for t in compiled.argument_types}
    assert layouts == {"C", "F", "A"}, layouts
    # the values: meminfo, parent, nitems, itemsize, data, shape, strides
    first = driver.launches[-3][3]
    at = 0
    for a in group:
        assert first[at:at + 5 + 2 * a.ndim] == [0, 0, a.size, a.dtype.itemsize,
                                                 a.device_ctypes_pointer.value or 0,
                                                 *a.shape, *a.strides]
        at += 5 + 2 * a.ndim
    assert at == len(first)


SCALAR_SIG = ("void(int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, "
              "float64, boolean, complex64, complex128)")


@pytest.mark.parametrize("first,later", [
    # Python scalars: ints wrap as ctypes wraps them, floats round as C does
    ((1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, True, 1 + 2j, 3 - 4j),
     [(-129, 2**15, -(2**31) - 1, 2**63 - 1, -1, 2**16 + 3, 2**32 + 9, 2**64 - 1, 0.1, 0.1,
       1e300, False, 0.1 + 1e40j, -0.0 + 1e-320j),
      (127, -32768, 2**31 - 1, -(2**63), 255, 65535, 0, 1, 65520.0, 1e39, -0.0, True, 1j, 2j)]),
    # numpy scalars of each type
    ((np.int8(1), np.int16(2), np.int32(3), np.int64(4), np.uint8(5), np.uint16(6), np.uint32(7),
      np.uint64(8), np.float16(0.5), np.float32(1.5), np.float64(2.5), np.bool_(True),
      np.complex64(1 + 2j), np.complex128(3 - 4j)),
     [(np.int8(-128), np.int16(-1), np.int32(-5), np.int64(2**62), np.uint8(255), np.uint16(1),
       np.uint32(2**32 - 1), np.uint64(2**64 - 1), np.float16(-65504), np.float32(np.nan),
       np.float64(-np.inf), np.bool_(False), np.complex64(np.nan + 1j), np.complex128(5e-324))]),
    # mixed: numpy ints for floats, Python ints for unsigned, numpy floats for complex
    ((np.int64(1), 2, np.uint8(3), np.int32(4), 5, np.int8(6), 7, np.uint16(8), np.float32(0.25),
      3, np.float32(2.5), True, np.float32(1.5), 2),
     [(np.int64(-300), -1, np.uint8(200), np.int32(-7), 1000, np.int8(-1), -1, np.uint16(9),
       np.float32(1e-8), -3, np.float32(3.5), False, np.float32(-1.5), -(2**70))]),
])
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_scalars_of_each_type(driver, first, later):
    @cuda.jit(SCALAR_SIG)
    def scalars(a, b, c, d, e, f, g, h, i, j, k, l, m, n):  # noqa: E741
        pass

    twice_then_compare(driver, scalars, [first, *later])


def test_scalars_typed_by_numba(driver):
    @cuda.jit
    def lazy_scalars(a, b, c, d, e, f, g):
        pass

    first = (1, 2.5, 3j, True, np.float32(1.5), np.uint16(7), np.bool_(True))
    later = (2**63 + 5, -0.0, -1 - 1j, False, np.float32(-2.5), np.uint16(65535), np.bool_(False))
    compiled = twice_then_compare(driver, lazy_scalars, [first, later])
    assert compiled.argument_types == (types.int64, types.float64, types.complex128, types.boolean,
                                       types.float32, types.uint16, types.boolean)


Pair = namedtuple("Pair", "x y")


def test_tuples_and_device_records(driver):
    @cuda.jit
    def tuples(t, u, v, w, r):
        pass

    rec = np.dtype([("a", np.int32), ("b", np.float64)], align=True)
    arr = device_array((3, 2), np.float32)
    first = ((1, 2, 3), (1.5, np.int16(3)), (arr, (2, 3.0)), Pair(4, 5), device_record(rec))
    later = ((4, -5, 6), (-2.5, np.int16(-3)),
             (device_array((3, 2), np.float32, ptr=0x7D00_0000_0000), (7, -1.0)), Pair(-1, 2**40),
             device_record(rec, ptr=0x7D00_0000_1000))
    compiled = twice_then_compare(driver, tuples, [first, later])
    assert isinstance(compiled.argument_types[4], types.Record)
    assert isinstance(compiled.argument_types[3], types.NamedUniTuple)
    # other element classes: another Numba type, so Numba dispatches (and compiles) again
    other = ((4, 5.0, 6), *later[1:])
    ac.launch(tuples, 4, 32, other)
    ac.launch(tuples, 4, 32, other)
    assert driver.paths[-2:] == ["numba", "fast"]
    assert len(tuples.overloads) == 2
    assert driver.raw[-1] == numba_param_bytes(tuples.overloads[tuple(
        tuples.typeof_pyval(a) for a in other)], other)
    ac.launch(tuples, 4, 32, later)  # the first signature is still prepared
    assert driver.paths[-1] == "fast"
    (bucket,) = tuples.__dict__[P.TABLE_ATTR].values()
    assert len(bucket) == 2  # one launcher per Numba signature of these classes


def test_a_kernel_without_parameters(driver):
    @cuda.jit
    def nothing():
        pass

    for _ in range(3):
        ac.launch(nothing, 4, 32, ())
    assert driver.paths == ["numba", "fast", "fast"]
    assert [a for _, _, _, a in driver.launches] == [[]] * 3


def test_datetime_arguments_always_take_numbas_marshalling(driver):
    @cuda.jit
    def stamp(t, x):
        pass

    day = np.datetime64("2024-01-02", "D")
    for value in (day, day + 1, np.datetime64("2024-01-02T03", "h")):
        ac.launch(stamp, 4, 32, (value, 1))
    assert driver.paths == ["numba"] * 3
    assert len(stamp.overloads) == 2  # days and hours: two Numba types, same class
    assert [a[0] for _, _, _, a in driver.launches] == [
        day.astype(np.int64), day.astype(np.int64) + 1,
        np.datetime64("2024-01-02T03", "h").astype(np.int64)]


# --- what the key does not capture goes back to Numba --------------------------------------------


def test_another_array_type_of_the_same_class_is_dispatched_by_numba(driver):
    @cuda.jit
    def one(a):
        pass

    @cuda.jit("void(float32[::1])")
    def strict(a):
        pass

    c = device_array((8,), np.float32)
    strided = device_array((4,), np.float32, strides=(8,))
    ints_ = device_array((8,), np.int32)
    for arr in (c, c, strided, strided, ints_, c, ints_):
        ac.launch(one, 4, 32, (arr,))
    assert driver.paths == ["numba", "fast", "numba", "fast", "numba", "fast", "fast"]
    assert len(one.overloads) == 3
    ac.launch(strict, 4, 32, (c,))
    ac.launch(strict, 4, 32, (c,))
    ac.launch(strict, 4, 32, (strided,))  # Numba converts an A array to the C signature
    ac.launch(strict, 4, 32, (strided,))
    assert driver.paths[-4:] == ["numba", "fast", "numba", "fast"]
    assert driver.raw[-1] == numba_param_bytes(strict.overloads[next(iter(strict.overloads))],
                                               (strided,))


def test_a_recompiled_dispatcher_goes_back_to_numba(driver):
    @cuda.jit
    def again(x):
        pass

    ac.launch(again, 4, 32, (1,))
    ac.launch(again, 4, 32, (2,))
    first = next(iter(again.overloads.values()))
    again.recompile()  # the same signature, a new compiled kernel
    assert next(iter(again.overloads.values())) is not first
    ac.launch(again, 4, 32, (3,))
    ac.launch(again, 4, 32, (4,))
    assert driver.paths == ["numba", "fast", "numba", "fast"]
    (bucket,) = again.__dict__[P.TABLE_ATTR].values()
    assert len(bucket) == 1  # the stale launcher was dropped


def test_another_context_goes_back_to_numba(driver, probe):
    ac.launch(probe, 4, 32, (1,))
    ac.launch(probe, 4, 32, (2,))
    with pytest.MonkeyPatch.context() as other:
        other.setattr(FakeContext, "handle", CTX + 1)
        ac.launch(probe, 4, 32, (3,))
        ac.launch(probe, 4, 32, (4,))
    ac.launch(probe, 4, 32, (5,))
    assert driver.paths == ["numba", "fast", "numba", "fast", "fast"]


def test_a_new_overload_goes_back_to_numba(driver):
    @cuda.jit(["void(float64)"])
    def conv(x):
        pass

    ac.launch(conv, 4, 32, (1,))  # an int64 converted to the float64 overload
    ac.launch(conv, 4, 32, (2,))
    conv.disable_compile(False)
    conv.compile((types.int64,))  # now an exact match exists: Numba would pick it
    conv.disable_compile()
    ac.launch(conv, 4, 32, (3,))
    ac.launch(conv, 4, 32, (4,))
    assert driver.paths == ["numba", "fast", "numba", "fast"]
    kinds = [k for _, _, k, _ in driver.launches]
    assert kinds[0] == kinds[1] != kinds[2] == kinds[3]
    assert [a for _, _, _, a in driver.launches] == [[1.0], [2.0], [3], [4]]


def test_pre_launch_callbacks_go_back_to_numba(driver, probe):
    ac.launch(probe, 4, 32, (1,))
    ac.launch(probe, 4, 32, (2,))
    seen = []
    probe.configure((4, 1, 1), (32, 1, 1), 0, 0).pre_launch_callbacks.append(
        lambda kernel, config: seen.append(config.griddim))
    try:
        ac.launch(probe, 4, 32, (3,))
    finally:
        probe.configure((4, 1, 1), (32, 1, 1), 0, 0).pre_launch_callbacks.clear()
    ac.launch(probe, 4, 32, (4,))
    assert seen == [(4, 1, 1)]
    assert driver.paths == ["numba", "fast", "numba", "fast"]


def test_a_launch_during_a_launch_gets_its_own_parameter_block(driver, probe):
    """The driver call releases the GIL: another thread may launch the same
    kernel before the driver has copied the parameters."""
    ac.launch(probe, 4, 32, (1,))
    inner = []
    driver.during = lambda: (ac.launch(probe, 4, 32, (99,)), inner.append(driver.raw[-1]))
    ac.launch(probe, 4, 32, (2,))
    assert [a for _, _, _, a in driver.launches] == [[1], [2], [99]]
    assert driver.paths == ["numba", "fast", "fast"]
    entry, = probe.__dict__[P.TABLE_ATTR][next(iter(probe.__dict__[P.TABLE_ATTR]))]
    assert len(entry.pool) == 2  # a second block was made and both came back
    ac.launch(probe, 4, 32, (3,))
    assert driver.launches[-1][3] == [3]


def test_the_last_launcher_is_tried_first_and_only_where_it_fits(driver, probe):
    """ac.launch tries the launcher that launched the kernel last before it
    builds the table's key: another launch shape or other argument classes
    fall through to the table, or to Numba's path where the table has none."""
    ac.launch(probe, 4, 32, (1,))
    ac.launch(probe, 4, 32, (2,))
    ac.launch(probe, 4, 32, (np.int32(3),))  # another class: Numba's path, then prepared
    ac.launch(probe, 4, 32, (4,))  # the table's launcher for ints
    ac.launch(probe, 8, 32, (5,))  # another shape: Numba's path
    ac.launch(probe, 4, 32, (np.int32(6),))
    ac.launch(probe, 4, 32, (np.int32(7),))
    assert [a for _, _, _, a in driver.launches] == [[1], [2], [3], [4], [5], [6], [7]]
    assert [c[1] for _, c, _, _ in driver.launches] == [(4, 1, 1)] * 4 + [(8, 1, 1)] + [(4, 1, 1)] * 2
    assert driver.paths == ["numba", "fast", "numba", "fast", "numba", "fast", "fast"]
    table = probe.__dict__[P.TABLE_ATTR]
    claim, go = probe.__dict__[P.LAST_ATTR]
    (launcher,) = table[(claim, np.int32)]
    assert go is launcher.go
    # a wrong argument count is refused by the launcher's own check, then by Numba
    with pytest.raises(TypeError):
        ac.launch(probe, 4, 32, ())
    with pytest.raises(TypeError):
        ac.launch(probe, 4, 32, (np.int32(8), np.int32(9)))
    assert len(driver.launches) == 7
    assert launcher.go((np.int32(1), np.int32(2)), 0) is False and launcher.go((), 0) is False
    assert launcher.go((1,), 0) is False  # an int is not the launcher's class
    assert len(driver.launches) == 7
    P.forget(probe)
    assert P.TABLE_ATTR not in probe.__dict__ and P.LAST_ATTR not in probe.__dict__
    ac.launch(probe, 4, 32, (np.int32(10),))
    assert driver.paths[-1] == "numba" and driver.launches[-1][3] == [10]


def test_the_generated_writer_reads_numbas_fields(driver):
    @cuda.jit
    def show(a, n):
        pass

    ac.launch(show, 4, 32, (device_array((4, 4), np.float32), 3))
    (bucket,) = show.__dict__[P.TABLE_ATTR].values()
    src = bucket[0].source
    assert P.ARRAY_ATTR in src and "_array_param(a0)" in src and ".value = a1" in src
    # the array's fields: what Numba's marshalling reads, once per array object
    import inspect

    reader = inspect.getsource(P.array_param)
    assert "_numba_type_" in reader and "_strided_memory_view_shim" in reader
    assert "strides_in_bytes" in reader


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
    for _ in range(2):  # 4 and 4.0, 1 and True hash alike: cached shapes must not leak
        ac.launch(probe, 4, 32, (0,))
    for _ in range(2):  # a cached good shape must not hide the error either
        with pytest.raises(ac.ClusterLaunchError, match=message):
            ac.launch(probe, **kwargs)
    assert len(driver.launches) == 2 and driver.numba_launches == []
    assert driver.attrs == []


def test_non_portable_cluster_sets_the_attribute_once(driver, probe):
    for _ in range(3):
        ac.launch(probe, 32, 32, (0,), cluster=16, non_portable=True)
    assert driver.attrs == [("NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)]
    assert len(driver.launches) == 3


def test_a_cluster_needs_sm_90(driver, probe, monkeypatch):
    @cuda.jit("void(int32)")
    def old(x):
        pass

    monkeypatch.setattr(FakeDevice, "compute_capability", (8, 0))
    for _ in range(2):
        with pytest.raises(ac.ClusterLaunchError, match="ac.launch: thread-block clusters need "
                                                        "compute capability 9.0 or newer; this "
                                                        "device is sm_80"):
            ac.launch(old, 4, 32, (0,), cluster=2)
    ac.launch(old, 4, 32, (0,))  # no cluster: fine
    assert len(driver.launches) == 1


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
    with pytest.raises(TypeError, match="expected a @cuda.jit kernel, got int"):
        ac.launch(3, 4, 32, (0,), cluster=2)
    assert driver.launches == []


def test_wrong_argument_count(driver, probe):
    kernel = next(iter(probe.overloads.values()))
    for _ in range(2):
        ac.launch(kernel, 4, 32, (0,), cluster=2)
        ac.launch(probe, 4, 32, (0,), cluster=2)
    with pytest.raises(TypeError, match="kernel takes 1 arguments, got 2"):
        ac.launch(kernel, 4, 32, (0, 1), cluster=2)
    with pytest.raises(TypeError):  # numba's dispatcher: no matching definition
        ac.launch(probe, 4, 32, (0, 1), cluster=2)
    assert len(driver.launches) == 4


def test_without_the_hook_nothing_is_launched(driver, probe, monkeypatch):
    from numba.cuda import dispatcher

    monkeypatch.setattr(dispatcher._Kernel, "launch", nb._original_launch)
    with pytest.raises(RuntimeError, match="_Kernel.launch is not numba_asynccopy's hook"):
        ac.launch(probe, 4, 32, (0,), cluster=2)
    assert driver.launches == [] and driver.numba_launches == []


LAUNCH_PROTO = ctypes.CFUNCTYPE(ctypes.c_int, *(ctypes.c_void_p,) * 4)


def fake_driver_launch(codes: list, seen: list):
    """A ctypes function like the driver's ``cuLaunchKernelEx`` (its
    prototype as ``_numba_internals`` calls it) that records its arguments
    and returns the next of ``codes`` (a ``CUresult`` value)."""
    def launch(cfg, func, params, extra):
        seen.append((cfg, func, params, extra))
        return codes.pop(0)

    return LAUNCH_PROTO(launch)


@pytest.fixture
def driver_calls(driver, monkeypatch):
    """The real ``launch_ex`` resolution, with ``_driver_function`` giving a
    fake ctypes driver function; cuda.core's ``handle_return`` recorded
    (the real one asks the driver for the error's name and text)."""
    from cuda.core._utils.cuda_utils import CUDAError

    rec = SimpleNamespace(codes=[], seen=[], errors=[], fn=None)
    rec.fn = fake_driver_launch(rec.codes, rec.seen)

    def handle_return(result):
        rec.errors.append(result)
        raise CUDAError(f"{result[0].name}: the driver's text")

    monkeypatch.setattr(nb, "launch_ex", REAL_LAUNCH_EX)  # resolves at the first launch
    monkeypatch.setattr(nb, "_driver_function", lambda name, *argtypes: rec.fn)
    monkeypatch.setattr(nb, "launch_handle", lambda kernel, cufunc: 0xF00D)
    monkeypatch.setattr(nb, "_handle_return", handle_return)
    return rec


def test_a_driver_error_is_raised(driver_calls, probe):
    from cuda.core._utils.cuda_utils import CUDAError

    rec = driver_calls
    invalid = nb_binding().CUresult.CUDA_ERROR_INVALID_VALUE
    rec.codes += [int(invalid), 0, int(invalid), 0]
    # the first launch (Numba's marshalling) resolves the driver function
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE: the driver's text"):
        ac.launch(probe, 4, 32, (0,))
    assert nb.launch_ex is rec.fn  # the ctypes function itself from now on
    ac.launch(probe, 4, 32, (1,))  # Numba's path again (the failed launch prepared nothing)
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        ac.launch(probe, 4, 32, (2,))  # the prepared path
    ac.launch(probe, 4, 32, (3,))
    assert rec.codes == []
    # exactly what cuda.bindings' call returns: the CUresult, in a tuple
    assert rec.errors == [(invalid,), (invalid,)]
    assert all(type(e[0]) is type(invalid) for e in rec.errors)
    (entry,) = next(iter(probe.__dict__[P.TABLE_ATTR].values()))
    assert len(entry.pool) == 1  # the block came back
    # the driver got the configuration's C struct, the handle, the parameters
    cfg_address, cfg = entry.configs[0]
    assert cfg_address == int(cfg.getPtr())
    assert [s[0] for s in rec.seen[2:]] == [cfg_address] * 2
    assert {s[1] for s in rec.seen} == {0xF00D} and {s[3] for s in rec.seen} == {None}
    assert rec.seen[2][2] == rec.seen[3][2] == entry.pool[0].addr
    assert read_params(rec.seen[3][2], [4]) == [(3).to_bytes(4, "little")]


def test_without_ctypes_the_bindings_call_launches(driver_calls, probe, monkeypatch):
    from cuda.core._utils.cuda_utils import CUDAError

    rec = driver_calls
    invalid = nb_binding().CUresult.CUDA_ERROR_INVALID_VALUE
    results = [invalid, nb_binding().CUresult.CUDA_SUCCESS]
    seen = []

    def bindings_launch(cfg, func, params, extra):
        seen.append((cfg.gridDimX, cfg.blockDimX, int(cfg.getPtr()), func, extra))
        return (results.pop(0),)

    monkeypatch.setattr(nb, "_driver_function", lambda name, *argtypes: None)
    monkeypatch.setattr(nb, "_cuLaunchKernelEx", bindings_launch)
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        ac.launch(probe, 4, 32, (0,))
    assert nb.launch_ex is nb._bindings_launch_ex
    ac.launch(probe, 4, 32, (1,))
    assert rec.errors == [(invalid,)]
    assert [s[:2] for s in seen] == [(4, 32)] * 2 and {s[3:] for s in seen} == {(0xF00D, 0)}


def test_the_driver_function_is_the_one_cuda_bindings_calls(monkeypatch):
    # a cuda.bindings that shows its pointers (13.5 and newer)
    asked = []
    target = fake_driver_launch([7], [])
    address = ctypes.cast(target, ctypes.c_void_p).value
    fake = ModuleType("cuda.bindings._internal.driver")
    fake._inspect_function_pointer = lambda name: asked.append(name) or address
    monkeypatch.setitem(sys.modules, "cuda.bindings._internal.driver", fake)
    # (``from package import driver`` reads the package's attribute first)
    monkeypatch.setattr(importlib.import_module("cuda.bindings._internal"), "driver", fake, raising=False)
    assert nb._bindings_function_pointer("cuLaunchKernelEx") == address
    fn = nb._driver_function("cuLaunchKernelEx", *(ctypes.c_void_p,) * 4)
    assert asked == ["__cuLaunchKernelEx"] * 2  # cuda.bindings' own pointer for it
    assert fn(1, 2, 3, None) == 7


@pytest.mark.parametrize("ptds", [False, True])
def test_without_the_bindings_pointer_the_libcuda_symbol(monkeypatch, ptds):
    # a cuda.bindings without _internal.driver (13.3 and older): the symbol
    # of libcuda.so.1, the per-thread-stream variant where cuda.bindings uses it
    monkeypatch.setitem(sys.modules, "cuda.bindings._internal.driver", None)  # import fails
    monkeypatch.delattr(importlib.import_module("cuda.bindings._internal"), "driver", raising=False)
    assert nb._bindings_function_pointer("cuLaunchKernelEx") == 0
    target = fake_driver_launch([9], [])
    opened, looked_up = [], []

    class FakeLib:
        def __init__(self, path):
            opened.append(path)

        def __getitem__(self, sym):
            looked_up.append(sym)
            return target

    monkeypatch.setattr(ctypes, "CDLL", FakeLib)
    monkeypatch.setattr(ctypes, "CFUNCTYPE", lambda *types_: (
        lambda spec: spec[1][spec[0]] if isinstance(spec, tuple) else None))
    monkeypatch.setenv("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "1" if ptds else "0")
    fn = nb._driver_function("cuLaunchKernelEx", *(ctypes.c_void_p,) * 4)
    assert opened == ["libcuda.so.1"]
    assert looked_up == ["cuLaunchKernelEx_ptsz" if ptds else "cuLaunchKernelEx"]
    assert fn(1, 2, 3, None) == 9
    # no libcuda at all: None (the caller keeps cuda.bindings' call)
    monkeypatch.setattr(ctypes, "CDLL", lambda path: (_ for _ in ()).throw(OSError(path)))
    assert nb._driver_function("cuLaunchKernelEx", *(ctypes.c_void_p,) * 4) is None


def test_the_current_context(fake_context, monkeypatch):
    from numba.cuda.cudadrv import devices

    binding = nb_binding()
    answers = [(binding.CUresult.CUDA_SUCCESS, binding.CUcontext(0x7373)),
               (binding.CUresult.CUDA_SUCCESS, None),
               (binding.CUresult.CUDA_ERROR_INVALID_CONTEXT, binding.CUcontext(0x7474))]
    monkeypatch.setattr(nb, "_cuCtxGetCurrent", lambda: answers.pop(0))
    assert nb.current_context_handle() == CTX  # Numba's attached context: no driver call
    assert len(answers) == 3
    monkeypatch.delattr(devices._runtime._tls, "attached_context")
    # the driver's current context; none: 0; an error: 0
    assert [nb.current_context_handle() for _ in range(3)] == [0x7373, 0, 0]
    assert answers == []


# --- cost: far less Python work than numba's own launch -------------------------------------------


def python_calls(fn, names: list | None = None) -> int:
    """Python-level function calls one ``fn()`` makes (deterministic, unlike timing)."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event == "call":
            count += 1
            if names is not None:
                names.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def test_the_fast_path_makes_a_few_python_calls(driver, probe, monkeypatch):
    a, b, c = (device_array((1 << 20,), np.float32, ptr=0x7F00_0000_0000 + i * (4 << 20))
               for i in range(3))

    @cuda.jit("void(float32[::1], float32[::1], float32[::1])")
    def add(x, y, z):
        pass

    ours = lambda: ac.launch(add, 528, 128, (a, b, c), cluster=2)  # noqa: E731
    numbas = lambda: add[528, 128](a, b, c)  # noqa: E731
    # the driver's launch: a C function taking its 4 arguments through ctypes,
    # as the driver's is called (libc's memccpy copying 0 bytes: it returns
    # NULL, CUDA_SUCCESS), on an int handle
    libc = ctypes.CDLL(None)
    monkeypatch.setattr(nb, "launch_ex", LAUNCH_PROTO(ctypes.cast(libc.memccpy, ctypes.c_void_p).value))
    monkeypatch.setattr(nb, "launch_handle", lambda kernel, cufunc: 0xF00D)
    ours(), numbas()  # first launches check and cache
    # the lambda, ac.launch and the generated launcher that launched the
    # kernel last (the same shape objects as the last launch: its claim; the
    # argument classes, the default stream and Numba's attached context are
    # read in the launcher)
    names = []
    assert python_calls(ours, names) == 3, " ".join(names)
    assert names == ["<lambda>", "launch", "go"]
    assert python_calls(ours) * 5 <= python_calls(numbas)


def test_launchprof_says_it_needs_a_gpu(capsys):
    from numba_asynccopy.bench import launchprof

    assert launchprof.main(["--n", "10"]) == 2
    assert "launchprof: no CUDA GPU is available; it times real kernel launches" in capsys.readouterr().err


def test_the_benchmark_compares_the_launch_rows_with_torch():
    from numba_asynccopy.bench import report, suites
    from numba_asynccopy.bench.suites import Measurement

    keys = ["numba_launch_plain", "ac_launch_plain", "numba_launch_cluster", "torch_launch_add"]
    assert suites.suite_keys("cluster", quick=True)[-8:-4] == keys
    res = {k: Measurement(k, k, "numba", "ms", ms=ms, figure=0.0)
           for k, ms in zip(keys, (0.0346, 0.0110, 0.0131, 0.0082))}
    rows = {(r.subject, r.peer): r for r in report.build_rows(res, report.comparisons(quick=True))}
    plain = rows[("ac_launch_plain", "torch_launch_add")]
    assert plain.ratio == pytest.approx(0.0110 / 0.0082) and plain.target == "<= 1.5"
    assert plain.verdict == "met"
    cluster = rows[("numba_launch_cluster", "torch_launch_add")]
    assert cluster.ratio == pytest.approx(0.0131 / 0.0082) and cluster.verdict == "MISSED"
    numba = rows[("numba_launch_plain", "torch_launch_add")]
    assert numba.verdict == "info" and numba.ratio == pytest.approx(0.0346 / 0.0082)
    assert rows[("numba_launch_cluster", "numba_launch_plain")].target == "<= 1.2"


def test_a_shape_changed_in_place_or_another_shape_is_read_again(driver, probe):
    # the last launch's claim is reused only for the same immutable objects
    g = [4, 1, 1]
    ac.launch(probe, g, 32, (1,))
    g[0] = 8                      # a list changed in place: validated again
    ac.launch(probe, g, 32, (2,))
    ac.launch(probe, 16, 32, (3,))
    ac.launch(probe, 16, 32, (4,))
    ac.launch(probe, (2, 2), 32, (5,))
    with pytest.raises(L.LaunchTypeError):
        ac.launch(probe, [True, 1, 1], 32, (6,))
    grids = [cfg[1] for _, cfg, _, _ in driver.launches]
    assert grids == [(4, 1, 1), (8, 1, 1), (16, 1, 1), (16, 1, 1), (2, 2, 1)], grids
    assert [v for *_, v in driver.launches] == [[1], [2], [3], [4], [5]]
