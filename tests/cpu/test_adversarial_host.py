"""Adversarial inputs for every public host function.

Hypothesis generates values that break each argument's documented contract
(wrong types that Python would happily convert: floats, bools, strings,
numpy scalars, containers; out-of-range values; device limits) and each
test checks that the call raises a user-facing exception (``TypeError`` /
``ValueError`` / ``ClusterLaunchError`` and their subclasses) whose message
names the function and the argument, before anything reaches the driver.
Compile-time contract errors must lead numba's error with the rule and the
offending call's file and line.
"""

from __future__ import annotations


import importlib.util
import math
import os
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from numba import cuda, types

import numba_asynccopy as ac
from numba_asynccopy import checked as C
from numba_asynccopy._compat import ContractError
from numba_asynccopy.host import _numba_internals as nb
from numba_asynccopy.host import launch as L
from numba_asynccopy.host import tensor_map as tm

from ..conftest import HAVE_GPU
from .test_launch_fastpath import _probe, driver, fake_context, probe  # noqa: F401  (fixtures)

FAST = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
needs_fake_context = pytest.mark.skipif(
    HAVE_GPU or nb.SIMULATOR, reason="fakes the CUDA context: only where there is no GPU")

# --- values Python would convert but the contract does not allow ------------------------------

not_an_int = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=3),
    st.none(),
    st.complex_numbers(max_magnitude=10),
    st.just(np.float32(4.0)),
    st.just(np.float64(2.0)),
    st.just(np.bool_(True)),
    st.just(b"4"),
    st.dictionaries(st.integers(1, 3), st.integers(1, 3), max_size=2),
    st.frozensets(st.integers(1, 4), max_size=2),
)
bad_dim = st.one_of(
    not_an_int,
    st.integers(max_value=0),
    st.tuples(),
    st.lists(st.integers(1, 4), min_size=4, max_size=6).map(tuple),
    st.lists(st.integers(1, 4), min_size=1, max_size=2).flatmap(
        lambda good: not_an_int.map(lambda bad: tuple(good) + (bad,))),
    st.tuples(st.integers(1, 4), st.integers(max_value=0)),
    st.tuples(st.tuples(st.integers(1, 4))),  # nested
)
bad_shared = st.one_of(not_an_int, st.integers(max_value=-1))
bad_bool = st.one_of(st.integers(), st.text(max_size=3), st.none(), st.floats(allow_nan=False),
                     st.just(np.bool_(True)), st.just(np.bool_(False)))
bad_args = st.one_of(st.just(np.zeros(1, np.int32)), st.dictionaries(st.text(max_size=2), st.integers(),
                     max_size=2), st.text(max_size=3), st.integers(), st.none(),
                     st.frozensets(st.integers(), max_size=2), st.just(range(1)))


def names(excinfo, *words: str) -> None:
    message = str(excinfo.value)
    for w in words:
        assert w in message, (w, message)


# --- ac.launch ------------------------------------------------------------------------------


@needs_fake_context
@FAST
@given(field=st.sampled_from(["grid", "block", "cluster"]), value=bad_dim)
def test_launch_rejects_bad_dims(driver, probe, field, value):  # noqa: F811
    assume(not (field == "cluster" and value is None))  # None: no cluster
    kwargs = dict(grid=4, block=32, cluster=None) | {field: value}
    with pytest.raises(ac.ClusterLaunchError) as info:
        ac.launch(probe, kwargs["grid"], kwargs["block"], (0,), cluster=kwargs["cluster"])
    names(info, "ac.launch", f"`{field}`")
    # (the fixture lives across the examples: every one of them failed before the driver)
    assert driver.launches == [] and driver.numba_launches == []


@needs_fake_context
@FAST
@given(value=bad_shared)
def test_launch_rejects_bad_shared_mem(driver, probe, value):  # noqa: F811
    with pytest.raises(ac.ClusterLaunchError) as info:
        ac.launch(probe, 4, 32, (0,), shared_mem=value)
    names(info, "ac.launch", "shared_mem")
    assert driver.launches == []


@needs_fake_context
@FAST
@given(value=bad_bool)
def test_launch_rejects_a_non_bool_non_portable(driver, probe, value):  # noqa: F811
    with pytest.raises(TypeError) as info:
        ac.launch(probe, 16, 32, (0,), cluster=16, non_portable=value)
    names(info, "ac.launch", "`non_portable`")
    assert driver.launches == []


@needs_fake_context
@FAST
@given(value=bad_args)
def test_launch_rejects_args_that_are_not_a_tuple(driver, probe, value):  # noqa: F811
    with pytest.raises(TypeError) as info:
        ac.launch(probe, 4, 32, value, cluster=2)
    names(info, "ac.launch", "`args`")
    assert driver.launches == []


@needs_fake_context
@pytest.mark.parametrize("grid,block,limit", [
    (4, 1025, "MAX_BLOCK_DIM_X is 1024"),
    (4, (1, 1025), "MAX_BLOCK_DIM_Y is 1024"),
    (4, (1, 1, 65), "MAX_BLOCK_DIM_Z is 64"),
    (4, (32, 33), "MAX_THREADS_PER_BLOCK is 1024"),
    ((2, 65536), 32, "MAX_GRID_DIM_Y is 65535"),
    ((2, 1, 65536), 32, "MAX_GRID_DIM_Z is 65535"),
    (2**31, 32, "MAX_GRID_DIM_X is 2147483647"),
])
@pytest.mark.parametrize("cluster", [None, 2])
def test_launch_checks_the_device_limits(driver, probe, grid, block, limit, cluster):  # noqa: F811
    if cluster and not isinstance(grid, int):
        grid = (grid[0],) + grid[1:]  # x=2 is a multiple of the cluster
    for _ in range(2):  # and again: an invalid shape is never cached
        with pytest.raises(ac.ClusterLaunchError, match=limit) as info:
            ac.launch(probe, grid, block, (0,), cluster=cluster)
        names(info, "ac.launch")
    assert driver.launches == []


@needs_fake_context
def test_equal_but_invalid_values_do_not_hit_the_cache(driver, probe):  # noqa: F811
    ac.launch(probe, (4,), (32,), (0,), cluster=(2,), non_portable=False)
    for kwargs in (dict(grid=(4.0,)), dict(block=(32.0,)), dict(cluster=(2.0,)),
                   dict(cluster=(True, 1)), dict(non_portable=0)):
        call = dict(grid=(4,), block=(32,), cluster=(2,), non_portable=False) | kwargs
        with pytest.raises(ac.ClusterLaunchError):
            ac.launch(probe, call["grid"], call["block"], (0,), cluster=call["cluster"],
                      non_portable=call["non_portable"])
    assert len(driver.launches) == 1


@needs_fake_context
def test_numpy_integers_are_ints(driver, probe):  # noqa: F811
    ac.launch(probe, np.int64(4), (np.int32(32),), [0], cluster=np.uint8(2), shared_mem=np.int64(0))
    assert len(driver.launches) == 1


@needs_fake_context
def test_the_ordinary_launch_of_a_declared_shape_checks_the_device_limits(driver):  # noqa: F811
    @cuda.jit("void(int32)")
    def pairs_2(x):
        ac.cluster_dims(2)

    driver.declared["pairs_2"] = (2, 1, 1)
    with pytest.raises(ac.ClusterLaunchError, match=r"pairs_2.*\[grid, block\]: `block` \(2048, 1, 1\) "
                                                    "has 2048 threads on axis x; the device's "
                                                    "MAX_BLOCK_DIM_X is 1024"):
        pairs_2[4, 2048](0)
    pairs_2[4, 32](0)
    pairs_2[4, 32](0)  # the second launch of the shape is not checked again
    assert len(driver.numba_launches) == 2


# --- ac.max_active_clusters -------------------------------------------------------------------


@needs_fake_context
@FAST
@given(field=st.sampled_from(["block", "cluster", "shared_mem", "non_portable", "args"]),
       data=st.data())
def test_max_active_clusters_rejects_bad_arguments(driver, probe, field, data):  # noqa: F811
    value = data.draw({"block": bad_dim, "cluster": bad_dim, "shared_mem": bad_shared,
                       "non_portable": bad_bool, "args": bad_args}[field])
    kwargs = dict(block=32, cluster=2, args=(0,), shared_mem=0, non_portable=False) | {field: value}
    with pytest.raises((TypeError, ValueError)) as info:
        ac.max_active_clusters(probe, kwargs.pop("block"), kwargs.pop("cluster"), **kwargs)
    names(info, "ac.max_active_clusters", field)


@needs_fake_context
def test_max_active_clusters_checks_the_device_limits(driver, probe):  # noqa: F811
    with pytest.raises(ac.ClusterLaunchError, match="ac.max_active_clusters: `block` "
                                                    r"\(32, 64, 1\) has 2048 threads; the device's "
                                                    "MAX_THREADS_PER_BLOCK is 1024"):
        ac.max_active_clusters(probe, (32, 64), 2, args=(0,))
    with pytest.raises(ac.ClusterLaunchError, match="exceed the device's per-block opt-in limit"):
        ac.max_active_clusters(probe, 32, 2, args=(0,), shared_mem=10**6)


# --- the pure validators, no context needed ---------------------------------------------------


@FAST
@given(value=bad_dim, name=st.sampled_from(["grid", "block", "cluster"]))
def test_dim3_rejects_without_converting(value, name):
    with pytest.raises(ac.ClusterLaunchError) as info:
        L.dim3(value, name, "api")
    names(info, "api: ", f"`{name}`")


def test_launch_type_errors_are_type_errors_and_launch_errors():
    assert issubclass(L.LaunchTypeError, TypeError) and issubclass(L.LaunchTypeError, ac.ClusterLaunchError)
    with pytest.raises(TypeError, match=r"ac.launch: `grid` must be an int or a tuple of 1-3 ints, got 2.5"):
        L.dim3(2.5, "grid", "ac.launch")
    with pytest.raises(TypeError, match="got '3'"):
        L.dim3("3", "grid", "ac.launch")


# --- TensorMap --------------------------------------------------------------------------------


def cai(shape=(64, 64), dtype=np.float32, strides=None, address=1 << 20):
    return {"shape": tuple(shape), "typestr": np.dtype(dtype).str, "data": (address, False),
            "strides": strides, "version": 3}


bad_option = st.one_of(st.floats(allow_nan=False).filter(lambda f: f not in (0.0,)), st.booleans(),
                       st.text(max_size=3), st.just(np.float32(32)), st.integers(-300, 300),
                       st.just(np.bool_(True)), st.just((32,)))
bad_per_axis = st.one_of(not_an_int.filter(lambda v: v is not None), st.integers(1, 4),
                         st.lists(st.one_of(st.integers(-5, 300), not_an_int), min_size=0, max_size=6))


def tensormap_case(field):
    return {
        "swizzle": bad_option.filter(lambda v: not (tm._is_int(v) and v in tm.SWIZZLE_CODES)),
        "interleave": bad_option.filter(lambda v: not (tm._is_int(v) and v in tm.INTERLEAVE_CODES)),
        "l2_promotion": bad_option.filter(lambda v: not (tm._is_int(v) and v in tm.L2_CODES)),
        "oob_fill": st.one_of(st.text(max_size=4).filter(lambda v: v not in tm.OOB_CODES), st.integers(),
                              st.none(), st.booleans(), st.just(b"nan")),
        "element_strides": bad_per_axis,
        "box": bad_per_axis,
        "dtype": st.one_of(st.text(max_size=4).filter(lambda v: v != "bfloat16"), st.integers(),
                           st.just(np.float16)),
    }[field]


@FAST
@given(field=st.sampled_from(["swizzle", "interleave", "l2_promotion", "oob_fill",
                              "element_strides", "box", "dtype"]), data=st.data())
def test_tensor_map_rejects_bad_arguments(field, data):
    value = data.draw(tensormap_case(field))
    kwargs = dict(box=(8, 8)) | {field: value}
    try:
        tm.describe(cai(), **kwargs)
    except (TypeError, ValueError) as e:
        message = str(e)
        assert message.startswith("TensorMap: "), message
        assert f"`{field}`" in message, message
    else:  # a per-axis value that happens to be valid
        assert field in ("box", "element_strides"), (field, value)


@pytest.mark.parametrize("kwargs", [
    dict(swizzle=32.0), dict(swizzle=True), dict(interleave=16.0), dict(l2_promotion=128.0),
    dict(l2_promotion=np.float64(64)), dict(oob_fill=0), dict(box=(8.0, 8)), dict(box="ab"),
    dict(box=np.array([8, 8])), dict(element_strides=(True, 1)), dict(dtype=1),
])
def test_tensor_map_type_errors_are_type_errors_and_value_errors(kwargs):
    kwargs = dict(box=(8, 8)) | kwargs
    with pytest.raises(tm.TensorMapTypeError) as info:
        tm.describe(cai(), **kwargs)
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)
    field = next(iter(k for k in kwargs if k != "box")) if len(kwargs) > 1 else "box"
    names(info, "TensorMap: ", f"`{field}`")


@pytest.mark.parametrize("interface,message", [
    ({"shape": (4.0, 4), "typestr": "<f4", "data": (0, False)}, "has shape (4.0, 4)"),
    ({"shape": [4, 4], "typestr": "<f4", "data": (0, False)}, "has shape [4, 4]"),
    ({"shape": (4, 4), "typestr": 4, "data": (0, False)}, "has typestr 4"),
    ({"shape": (4, 4), "typestr": "<f4", "data": 0}, "has data 0"),
    ({"shape": (4, 4), "typestr": "<f4", "data": (0.0, False)}, "has data (0.0, False)"),
    ({"shape": (4, 4), "typestr": "<f4", "data": (0, False), "strides": (16,)}, "has strides (16,)"),
    ({"shape": (4, 4), "typestr": "<f4", "data": (0, False), "strides": (16.0, 4)}, "has strides"),
    ({"shape": (4, 4), "typestr": "<zz", "data": (0, False)}, "not a numpy type string"),
    ("not a dict", "must expose __cuda_array_interface__"),
])
def test_tensor_map_rejects_a_malformed_array_interface(interface, message):
    with pytest.raises((TypeError, ValueError), match="TensorMap: `array`") as info:
        tm.describe(interface, (4, 4))
    names(info, message)


def test_tensor_map_box_must_fit_shared_memory():
    with pytest.raises(ValueError, match=r"TensorMap: `box`=\(256, 256\) spans 262144 bytes, "
                                         "more than the 232448 bytes of shared memory a block can have"):
        tm.describe(cai((256, 256)), (256, 256))
    # the whole box counts, element strides or not
    with pytest.raises(ValueError, match="spans 262144 bytes"):
        tm.describe(cai((256, 256)), (256, 256), element_strides=(2, 1))
    tm.describe(cai((256, 256), np.float16), (256, 256))  # 128 KB fits


def test_an_interleaved_map_needs_rank_3_or_more():
    with pytest.raises(ValueError, match="TensorMap: `interleave`=16 needs a tensor of rank >= 3; "
                                         "this one has rank 2"):
        tm.describe(cai((8, 8), np.float16), (1, 8), interleave=16)
    tm.describe(cai((8, 8, 8), np.float16), (1, 1, 8), interleave=16)


# the CPU fuzz: any description, valid or not, ends in a spec or a documented exception

any_value = st.one_of(st.none(), st.booleans(), st.integers(-2**41, 2**41), st.floats(), st.text(max_size=4),
                      st.tuples(st.integers(-3, 300)), st.lists(st.integers(-3, 300), max_size=6))
fuzz_interface = st.fixed_dictionaries({
    "shape": st.one_of(st.lists(st.integers(-2, 2**33), min_size=0, max_size=6).map(tuple), any_value),
    "typestr": st.one_of(st.sampled_from(["<f4", "<f2", "|u1", "|i1", "<i8", "<c8", ">f4", "|b1", "<V8",
                                          "<f8", "<u2"]), any_value),
    "data": st.one_of(st.tuples(st.integers(0, 2**48), st.booleans()), any_value),
    "strides": st.one_of(st.none(), st.lists(st.integers(-64, 2**41), min_size=0, max_size=6).map(tuple),
                         any_value),
    "version": st.just(3),
})


@settings(max_examples=400, deadline=None, derandomize=True)
@given(interface=fuzz_interface,
       box=st.one_of(st.lists(st.integers(-2, 300), min_size=1, max_size=6).map(tuple), any_value),
       swizzle=st.one_of(st.sampled_from([None, 32, 64, 128]), any_value),
       interleave=st.one_of(st.sampled_from([None, 16, 32]), any_value),
       l2=st.one_of(st.sampled_from([None, 64, 128, 256]), any_value),
       oob=st.one_of(st.sampled_from(["zero", "nan"]), any_value),
       es=st.one_of(st.none(), st.lists(st.integers(-1, 9), min_size=1, max_size=6).map(tuple), any_value),
       dtype=st.one_of(st.none(), st.just("bfloat16"), any_value))
def test_tensor_map_validator_raises_only_documented_exceptions(interface, box, swizzle, interleave, l2,
                                                               oob, es, dtype):
    try:
        spec = tm.describe(interface, box, swizzle=swizzle, interleave=interleave, l2_promotion=l2,
                           oob_fill=oob, element_strides=es, dtype=dtype)
    except (TypeError, ValueError) as e:
        assert type(e) in (TypeError, ValueError, tm.TensorMapTypeError), repr(e)
        assert str(e).startswith("TensorMap: `"), str(e)
    else:  # what it accepted is what the driver is documented to accept
        assert 1 <= spec.rank <= 5 and all(1 <= b <= 256 for b in spec.box)
        assert spec.box_bytes <= tm.MAX_BOX_BYTES
        assert all(s % 16 == 0 and 0 < s < 2**40 for s in spec.global_strides)
        assert spec.address % 16 == 0


def test_tensor_map_rejects_a_host_array_before_any_driver_call():
    for bad in (np.zeros((4, 4), np.float32), [1, 2], None, "array"):
        with pytest.raises(TypeError, match="TensorMap: `array` must expose __cuda_array_interface__"):
            ac.TensorMap(bad, (4, 4))


# --- checked mode ---------------------------------------------------------------------------


@pytest.fixture
def saved_mode():
    old = dict(C._state)
    yield
    C._state.update(checked=old["checked"], timeout_ns=old["timeout_ns"])


@FAST
@given(value=bad_bool)
def test_set_checked_takes_a_bool_only(value):
    before = dict(C._state)
    for call, api in ((ac.set_checked, "ac.set_checked"), (lambda v: ac.checked_mode(v).__enter__(),
                                                           "ac.checked_mode")):
        with pytest.raises(TypeError) as info:
            call(value)
        names(info, api, "`enabled`")
    assert C._state == before  # nothing switched


@FAST
@given(value=st.one_of(not_an_int.filter(lambda v: v is not None), st.integers(max_value=0)))
def test_timeout_ns_must_be_a_positive_int(value):
    before = dict(C._state)
    with pytest.raises((TypeError, ValueError)) as info:
        ac.set_checked(False, timeout_ns=value)
    names(info, "ac.set_checked", "timeout_ns")
    with pytest.raises((TypeError, ValueError)) as info:
        with ac.checked_mode(True, timeout_ns=value):
            pass
    names(info, "ac.checked_mode", "timeout_ns")
    assert C._state == before


@pytest.mark.parametrize("raw", ["0", "-5", "2s", "1e9", "0x10", "1_000", "+5", "٣", "nan", "１"])
def test_a_bad_wait_timeout_variable_names_itself_when_read(monkeypatch, saved_mode, raw):
    monkeypatch.setenv("NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS", raw)
    C._state["timeout_ns"] = None  # as at import: read when first needed
    with pytest.raises(ValueError, match="NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS=.* is not a positive integer"):
        ac.wait_timeout_ns()
    with pytest.raises(ValueError, match="NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS"):
        C.cache_key()  # what a compile reads
    ac.set_checked(False, timeout_ns=5)  # an explicit timeout does not need the variable
    assert ac.wait_timeout_ns() == 5


@pytest.mark.parametrize("raw,checked", [("1", True), ("0", False), ("", False), (" 1 ", True)])
def test_the_checked_variable(monkeypatch, saved_mode, raw, checked):
    monkeypatch.setenv("NUMBA_ASYNCCOPY_CHECKED", raw)
    C._state["checked"] = None
    assert ac.is_checked() is checked


@pytest.mark.parametrize("raw", ["no", "yes", "true", "2", "on"])
def test_a_bad_checked_variable_names_itself_when_read(monkeypatch, saved_mode, raw):
    monkeypatch.setenv("NUMBA_ASYNCCOPY_CHECKED", raw)
    C._state["checked"] = None
    with pytest.raises(ValueError, match="NUMBA_ASYNCCOPY_CHECKED=.* is not a switch: use 1"):
        ac.is_checked()


@pytest.mark.parametrize("raw", ["lazy", "Worst", "1", "eager,worst"])
def test_a_bad_schedule_variable_names_itself_when_read(monkeypatch, raw):
    S = importlib.import_module("numba_asynccopy.sim.schedule")  # not ac.sim.schedule()

    monkeypatch.setenv("NUMBA_ASYNCCOPY_SIM_SCHEDULE", raw)
    monkeypatch.setitem(S._settings, "schedule", None)  # as at import: read when first needed
    with pytest.raises(ValueError, match="environment variable NUMBA_ASYNCCOPY_SIM_SCHEDULE=.* "
                                         "is not a schedule: use worst or eager"):
        S.get_schedule()
    S.set_schedule("eager")  # an explicit schedule does not need the variable
    assert S.get_schedule() == "eager"


@pytest.mark.parametrize("raw,name", [("", "worst"), (" eager ", "eager"), ("worst", "worst")])
def test_the_schedule_variable(monkeypatch, raw, name):
    S = importlib.import_module("numba_asynccopy.sim.schedule")  # not ac.sim.schedule()

    monkeypatch.setenv("NUMBA_ASYNCCOPY_SIM_SCHEDULE", raw)
    monkeypatch.setitem(S._settings, "schedule", None)
    assert S.get_schedule() == name


def test_the_import_survives_bad_variables():
    from ..conftest import run_python

    r = run_python("""
        import numba_asynccopy as ac
        try:
            ac.wait_timeout_ns()
        except ValueError as e:
            print("raised:", e)
    """, env={"NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS": "2s", "NUMBA_ASYNCCOPY_CHECKED": "no",
              "NUMBA_ASYNCCOPY_SIM_SCHEDULE": "lazy"})
    assert r.returncode == 0, r.stderr
    assert "raised: environment variable NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS='2s'" in r.stdout


# --- compile-time contract errors lead numba's message ----------------------------------------


KERNEL = '''\
import numpy as np
from numba import cuda
import numba_asynccopy as ac


def k(out, n):
    bar = cuda.shared.array(2, np.uint64)
    sh = cuda.shared.array(64, np.uint32)
    {body}
    out[0] = 1
'''


def compile_user_kernel(tmp_path, body: str) -> ContractError:
    """Compile ``body`` in a kernel of a real file (line 9 is the call)."""
    path = tmp_path / f"user_kernel_{abs(hash(body))}.py"
    path.write_text(KERNEL.format(body=body))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(ContractError) as info:
        cuda.compile_ptx(module.k, (types.uint32[::1], types.int32), cc=(9, 0))
    return info.value


@pytest.mark.parametrize("body,message", [
    ("ac.mbarrier_init(bar, 0)", "mbarrier_init: `count`=0 is outside 1..1048575"),
    ("ac.cluster_dims(0)", "cluster_dims: `x` must be >= 1, got 0"),
    ("ac.cluster_dims(2.5)", "cluster_dims: `x` must be a compile-time constant"),
    ("ac.cluster_dims(n)", "cluster_dims: `x` must be a compile-time constant (int literal), got a run-time"),
    ("ac.cluster_dims(4, 4)", "cluster_dims: a cluster of (4, 4, 1) has 16 CTAs; more than 8 is a "
                              "non-portable cluster size: pass non_portable=True"),
    ("ac.cluster_dims(4, 4, 2, non_portable=True)", "cluster_dims: a cluster of (4, 4, 2) has 32 CTAs; "
                                                    "the largest cluster is 16 CTAs"),
    ("ac.cluster_dims(2, non_portable=1)", "cluster_dims: `non_portable`"),
    ("ac.cluster_dims(True)", "cluster_dims: `x`"),
    ("ac.cluster_dims(2, z=-1)", "cluster_dims: `z` must be >= 1, got -1"),
])
def test_the_contract_error_comes_first_then_the_call_site(tmp_path, body, message):
    err = compile_user_kernel(tmp_path, body)
    text = str(err)
    lines = text.splitlines()
    assert lines[0].startswith(message), text  # the rule first
    # the second line names the user's file and the call's line
    assert lines[1].startswith("File \"") and "user_kernel_" in lines[1] and lines[1].endswith("line 9:"), text
    assert body in text  # numba shows the source line
    assert "No implementation of function" in text  # numba's listing follows
    assert text.index(message) < text.index("No implementation of function")
    assert isinstance(err, ac._compat.core_errors.TypingError)


def test_the_gpu_fuzz_generator_makes_valid_specs_when_unbroken():
    """The GPU comparison's generator, checked here so that its run on the
    device only tests the driver: unbroken descriptions all validate, and
    the mix has plenty of both outcomes."""
    from ..gpu import test_tensor_map_fuzz_gpu as fuzz

    fuzz.test_random_specs_follow_the_documented_rules_when_unbroken()
    specs = fuzz.all_specs()
    verdicts = [fuzz.validator_says(s, 1 << 30, tm.MAX_BOX_BYTES) for s in specs]
    assert len(specs) >= 500
    assert sum(v is None for v in verdicts) >= 150 and sum(v is not None for v in verdicts) >= 150
