"""The simulator refuses what the GPU refuses, in the same words: run-time
values where the GPU needs a constant (the compile-time error), barrier
views checked mode traps on (the trap's rule), launches over sm_90's limits
(the launch check's message)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda
from numba.cuda.core.errors import TypingError

import numba_asynccopy as ac
from numba_asynccopy import _rules
from numba_asynccopy._lowering import TRAP_PREFIX

CHUNK = 16  # a global: Numba freezes it, a constant


@cuda.jit
def chunk_from_a_parameter(A, out, n):
    sh = cuda.shared.array((32, 4), np.float32, alignment=16)
    t = cuda.threadIdx.x
    ac.cp_async(sh[t, :], A[t, :], n)


@cuda.jit
def chunk_from_a_loop(A, out, n):
    sh = cuda.shared.array((32, 4), np.float32, alignment=16)
    t = cuda.threadIdx.x
    for c in (4, 8, 16):
        ac.cp_async(sh[t, :], A[t, :], c)


@cuda.jit
def noinc_from_a_comparison(A, out, n):
    bars = cuda.shared.array(1, np.uint64)
    if cuda.threadIdx.x == 0:
        ac.mbarrier_init(bars[0:], 1)
    cuda.syncthreads()
    ac.cp_async_mbarrier_arrive(bars[0:], noinc=n > 0)


@cuda.jit
def bulk_wait_from_an_array(A, out, n):
    depth = int(A[0, 0])
    ac.bulk_wait_group(depth)


@cuda.jit
def constants_in_every_spelling(A, out, n):
    sh = cuda.shared.array((32, 4), np.float32, alignment=16)
    t = cuda.threadIdx.x
    c = 16  # assigned once from a constant: Numba types it as a literal
    # each copy waited before the next reuses its destination
    ac.cp_async(sh[t, :], A[t, :], c)
    ac.wait_all()
    ac.cp_async(sh[t, :], A[t, :], CHUNK)
    ac.wait_all()
    ac.cp_async(sh[t, :], A[t, :], 8 * 2, src_size=n)  # src_size may be a run-time value
    ac.commit_group()
    ac.wait_group(n - n)  # a run-time depth is allowed
    out[t] = sh[t, 0]


@pytest.mark.parametrize("kernel,message", [
    (chunk_from_a_parameter,
     "cp_async: `chunk_bytes` must be a compile-time constant (int literal), got a run-time int64"),
    (chunk_from_a_loop,
     "cp_async: `chunk_bytes` must be a compile-time constant (int literal), got a run-time int64"),
    (noinc_from_a_comparison,
     "cp_async_mbarrier_arrive: `noinc` must be a compile-time constant (bool literal), "
     "got a run-time bool"),
    (bulk_wait_from_an_array,
     "bulk_wait_group: `n` must be a compile-time constant (int literal), got a run-time int64"),
])
def test_a_run_time_value_where_the_gpu_needs_a_constant_is_refused(kernel, message):
    A = np.ones((32, 4), np.float32)
    with pytest.raises(TypingError) as e:
        kernel[1, 4](A, np.zeros(32, np.float32), 16)
    assert message in str(e.value)


def test_constants_in_every_spelling_still_run():
    A = np.arange(128, dtype=np.float32).reshape(32, 4)
    out = np.zeros(32, np.float32)
    constants_in_every_spelling[1, 32](A, out, 4)
    np.testing.assert_array_equal(out, A[:, 0])


# --- barrier views: checked mode's rules, checked mode's words ----------------------------------


@cuda.jit
def barrier_view(A, out, which):
    bars = cuda.shared.array(4, np.uint64)
    raw = cuda.shared.array(8, np.uint8)
    local = cuda.local.array(2, np.uint64)
    if which == 0:
        ac.mbarrier_init(bars[4:], 1)  # empty
    elif which == 1:
        ac.mbarrier_init(local[0:], 1)  # local memory
    elif which == 2:
        ac.mbarrier_init(out[0:], 1)  # global memory
    elif which == 3:
        ac.mbarrier_init(bars[0:], 1)
        ac.mbarrier_arrive(local[0:])
    elif which == 4:
        ac.mbarrier_init(bars[0:], 1)
        ac.mbarrier_wait_parity(out[0:], 0)
    elif which == 5:
        ac.cp_async_mbarrier_arrive(local[0:])
    elif which == 6:
        ac.mbarrier_inval(bars[2:2])
    elif which == 7:
        ac.mbarrier_expect_tx(out[0:], 16)
    raw[0] = 0


@pytest.mark.parametrize("checked", [False, True])
@pytest.mark.parametrize("which,api,rule", [
    (0, "mbarrier_init", _rules.barrier_empty(name="bar")),
    (1, "mbarrier_init", _rules.not_in_space(name="bar", space="shared")),
    (2, "mbarrier_init", _rules.not_in_space(name="bar", space="shared")),
    (3, "mbarrier_arrive", _rules.not_in_space(name="bar", space="shared")),
    (4, "mbarrier_wait_parity", _rules.not_in_space(name="bar", space="shared")),
    (5, "cp_async_mbarrier_arrive", _rules.not_in_space(name="bar", space="shared")),
    (6, "mbarrier_inval", _rules.barrier_empty(name="bar")),
    (7, "mbarrier_expect_tx", _rules.not_in_space(name="bar", space="shared")),
])
def test_barrier_views_raise_the_trap_rule(which, api, rule, checked):
    out = cuda.to_device(np.zeros(4, np.uint64))
    with ac.checked_mode(checked), pytest.raises(ac.sim.SimulatorError) as e:
        barrier_view[1, 1](np.zeros(1), out, which)
    prefix = TRAP_PREFIX if checked else "numba_asynccopy simulator: "
    assert f"{prefix}{api}: {rule} [block (0,0,0) thread (0,0,0)]" in str(e.value)


@cuda.jit
def fence_on(A, tm_shared):
    buf = cuda.shared.array(16, np.uint64)
    ac.fence_proxy_tensormap(buf if tm_shared else A)


def test_fence_proxy_tensormap_on_a_shared_view_is_refused():
    with pytest.raises(ac.sim.SimulatorError,
                       match="fence_proxy_tensormap: `tensor_map` is not in global memory"):
        fence_on[1, 1](cuda.to_device(np.zeros(16, np.uint64)), True)
    fence_on[1, 1](cuda.to_device(np.zeros(16, np.uint64)), False)


# --- launches the GPU refuses ------------------------------------------------------------------


def _trivial():
    @cuda.jit
    def k(out):
        out[0] = 1
    return k


@pytest.mark.parametrize("config,message", [
    ((1, 2048), "`block` (2048, 1, 1) has 2048 threads on axis x; the device's MAX_BLOCK_DIM_X "
                "is 1024"),
    ((1, (32, 33)), "`block` (32, 33, 1) has 1056 threads; the device's MAX_THREADS_PER_BLOCK "
                    "is 1024"),
    ((1, (1, 1, 65)), "has 65 threads on axis z; the device's MAX_BLOCK_DIM_Z is 64"),
    ((1, 32, 0, 227 * 1024 + 1), "232449 bytes of dynamic shared memory plus the kernel's 0 "
                                 "bytes of static shared memory exceed the device's per-block "
                                 "opt-in limit of 232448 bytes (MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)"),
    ((65536 * 32768, 1), "MAX_GRID_DIM_X is 2147483647"),
])
def test_launches_over_sm90_limits_are_refused(config, message):
    out = np.zeros(1)
    with pytest.raises(ac.ClusterLaunchError) as e:
        _trivial()[config](out)
    assert message in str(e.value)
    assert out[0] == 0  # nothing ran


def test_ac_launch_over_the_limits_is_refused_too():
    out = np.zeros(1)
    with pytest.raises(ac.ClusterLaunchError, match="MAX_THREADS_PER_BLOCK is 1024"):
        ac.launch(_trivial(), 1, (64, 32), (out,))
    with pytest.raises(ac.ClusterLaunchError, match="MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"):
        ac.launch(_trivial(), 1, 32, (out,), shared_mem=300_000)
    ac.launch(_trivial(), 1, 1024, (out,), shared_mem=227 * 1024)
    assert out[0] == 1


@cuda.jit
def constants_through_names(A, out, n):
    sh = cuda.shared.array((32, 4), np.float32, alignment=16)
    t = cuda.threadIdx.x
    c, d = 16, 8
    out[c - 16] = 0  # read as an index: still one assignment of a constant
    ac.cp_async(sh[t, :], A[t, :], c)
    ac.wait_all()  # before the next copy reuses the destination
    ac.cp_async(sh[t, 0:2], A[t, 0:2], d)
    ac.wait_all()
    out[t] = sh[t, 0]


def test_names_bound_once_to_constants_are_constants():
    A = np.arange(128, dtype=np.float32).reshape(32, 4)
    out = np.zeros(32, np.float32)
    constants_through_names[1, 32](A, out, 4)
    np.testing.assert_array_equal(out, A[:, 0])
