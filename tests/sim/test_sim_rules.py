"""The simulator enforces the same contract with the same messages: the
device typing's errors, and checked mode's run-time rules as exceptions."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda
from numba.cuda.core.errors import TypingError

import numba_asynccopy as ac
from numba_asynccopy._lowering import TRAP_PREFIX

from ..gpu.test_cp_async_gpu import VIOLATIONS


def test_every_public_intrinsic_is_replaced_in_the_simulator():
    from numba.cuda.extending import _Intrinsic

    left = [n for n in ac.__all__ if isinstance(getattr(ac, n), _Intrinsic)]
    assert left == []
    assert ac.cp_async.__module__ == "numba_asynccopy.sim.cp_async"
    assert ac.mbarrier_wait.__module__ == "numba_asynccopy.sim.mbarrier"
    assert {"cp_async", "mbarrier_arrive_expect_tx", "elect_sync"} <= set(ac.sim.supported())


def _violation_kernel(stmt: str):
    ns = {"np": np, "cuda": cuda, "ac": ac}
    exec(f"""
def k(A, G, n):
    tid = cuda.threadIdx.x
    sh = cuda.shared.array((64, 4), np.float32, alignment=16)
    sh2 = cuda.shared.array((64, 4), np.float32, alignment=16)
    {stmt}
    ac.wait_all()
""", ns)
    return cuda.jit(ns["k"])


@pytest.mark.parametrize("checked", [False, True])
@pytest.mark.parametrize("case", list(VIOLATIONS))
def test_checked_mode_rules_raise_the_trap_message(case, checked):
    stmt, message = VIOLATIONS[case]
    k = _violation_kernel(stmt)
    A = cuda.to_device(np.arange(64 * 8, dtype=np.float32).reshape(64, 8))
    G = cuda.to_device(np.zeros((64, 4), np.float32))
    with ac.checked_mode(checked), pytest.raises((ac.sim.SimulatorError, TypingError)) as e:
        k[1, 32](A, G, 17)
    text = str(e.value)
    assert message in text, text
    if isinstance(e.value, ac.sim.SimulatorError):
        prefix = TRAP_PREFIX if checked else "numba_asynccopy simulator: "
        assert prefix + message in text
        assert "[block (0,0,0) thread (" in text


TYPING = {
    "ac.cp_async(sh[tid, :], A[tid, 0:4], 12)":
        "cp_async: `chunk_bytes`=12 is not supported; allowed: 4, 8, 16",
    "ac.cp_async(sh[tid, 0:2], A[tid, 0:2], 8, cache='cg')":
        "cp_async: cache='cg' copies 16-byte chunks only; chunk_bytes=8 needs cache='ca'",
    "ac.cp_async(sh[tid, :], A[tid, :], 16, src_size=4, ignore_src=n > 3)":
        "cp_async: src_size and ignore_src are alternative zero-fill forms",
    "ac.wait_group(-1)": "wait_group: `n` must be >= 0, got -1",
    "ac.mbarrier_init(sh[0:], 1)": "mbarrier_init: `bar` must be a uint64 shared-memory array view",
    "ac.mbarrier_init(bars[0:], 0)": "mbarrier_init: `count`=0 is outside 1..1048575",
    "ac.mbarrier_wait_parity(bars[0:], 2)": "mbarrier_wait_parity: `parity`=2 must be 0 or 1",
    "ac.mbarrier_arrive(bars[0:], sem='acquire')":
        "mbarrier_arrive: `sem`='acquire' is not supported; allowed: 'release', 'relaxed'",
    "ac.fence_proxy_async('local')": "fence_proxy_async: `space`='local' is not supported",
}


@pytest.mark.parametrize("stmt", list(TYPING))
def test_typing_errors_are_the_device_ones(stmt):
    k = _violation_kernel("bars = cuda.shared.array(2, np.uint64)\n    " + stmt)
    A = cuda.to_device(np.zeros((64, 8), np.float32))
    with pytest.raises(TypingError, match=None) as e:
        k[1, 2](A, A, 7)
    assert TYPING[stmt] in str(e.value)


def test_shared_array_without_alignment_is_only_dtype_aligned():
    k = _violation_kernel("""sh3 = cuda.shared.array((64, 4), np.float32)
    ac.cp_async(sh3[tid, :], A[tid, 0:4], 16)""")
    A = cuda.to_device(np.zeros((64, 8), np.float32))
    with pytest.raises(ac.sim.SimulatorError, match="cp_async: a chunk of `dst` is not 16-byte aligned"):
        k[1, 4](A, A, 0)


def test_alignment_is_checked_like_numba_cuda():
    k = _violation_kernel("sh3 = cuda.shared.array(4, np.float32, alignment=12)")
    with pytest.raises(ValueError, match="Alignment must be a power of 2"):
        k[1, 1](np.zeros(1), np.zeros(1), 0)


@pytest.mark.parametrize("stmt, message", [
    ("ac.mbarrier_arrive(bars[0:])", "mbarrier_arrive: the barrier (shared array allocated at"),
    ("ac.mbarrier_init(bars[0:], 1); ac.mbarrier_inval(bars[0:]); ac.mbarrier_wait_parity(bars[0:], 0)",
     "mbarrier_wait_parity: the barrier (shared array allocated at"),
])
def test_uninitialised_barrier_is_an_error(stmt, message):
    k = _violation_kernel("bars = cuda.shared.array(2, np.uint64)\n    " + stmt)
    with pytest.raises(ac.sim.SimulatorError) as e:
        k[1, 1](np.zeros(1), np.zeros(1), 0)
    assert message in str(e.value)
    assert "is not initialised in this block (call mbarrier_init first" in str(e.value)


def test_barrier_outside_shared_memory_is_an_error():
    k = _violation_kernel("ac.mbarrier_init(n[0:], 1)")
    with pytest.raises(ac.sim.SimulatorError, match="mbarrier_init: `bar` is not in shared memory"):
        k[1, 1](np.zeros(1), np.zeros(1), cuda.to_device(np.zeros(2, np.uint64)))


def test_arrive_no_complete_must_not_complete_the_phase():
    k = _violation_kernel("""bars = cuda.shared.array(2, np.uint64)
    ac.mbarrier_init(bars[0:], 2)
    ac.mbarrier_arrive_no_complete(bars[0:], 2)""")
    with pytest.raises(ac.sim.SimulatorError,
                       match="mbarrier_arrive_no_complete: 2 arrival.s. would complete phase 0"):
        k[1, 1](np.zeros(1), np.zeros(1), 0)


def test_intrinsics_outside_a_kernel_are_an_error():
    with pytest.raises(ac.sim.SimulatorError, match="commit_group: called outside a simulated kernel"):
        ac.commit_group()


def test_schedule_option():
    assert ac.sim.get_schedule() == "worst"
    with ac.sim.schedule("eager"):
        assert ac.sim.get_schedule() == "eager"
    assert ac.sim.get_schedule() == "worst"
    with pytest.raises(ValueError, match="ac.sim.set_schedule: `name` must be 'worst' or 'eager'"):
        ac.sim.set_schedule("lazy")
    with pytest.raises(TypeError, match="ac.sim.schedule: `name` must be 'worst' or 'eager'"):
        with ac.sim.schedule(1):
            pass
    assert ac.sim.get_schedule() == "worst"


def test_intrinsics_without_a_simulator_version_raise_a_clear_error():
    import sys

    from numba.cuda.extending import intrinsic

    @intrinsic
    def bulk_thing(typingctx, a, b):  # stands in for an intrinsic of a new family
        return None

    dev = sys.modules["numba_asynccopy.cluster"].cluster_sync
    impls = ac.sim.implementations({"__all__": ["cluster_sync", "bulk_thing"],
                                    "cluster_sync": dev, "bulk_thing": bulk_thing})
    # the cluster family has its twins (UNSUPPORTED_FAMILIES is empty); a twin
    # is found from the device object it mirrors
    assert ac.sim.UNSUPPORTED_FAMILIES == {}
    assert impls["cluster_sync"] is sys.modules["numba_asynccopy.sim.cluster"].cluster_sync
    with pytest.raises(ac.sim.SimulatorError,
                       match="bulk_thing cannot run in the CUDA simulator: it has no simulator "
                       "implementation yet"):
        impls["bulk_thing"](1, 2)


def test_every_simulator_function_documents_an_example():
    import inspect

    for name in ac.sim.supported():
        doc = inspect.getdoc(getattr(ac, name)) or ""
        assert "Example::" in doc, name
        assert getattr(ac, name).__module__.startswith("numba_asynccopy.sim."), name
    for name in ("set_schedule", "schedule", "set_seed", "seed"):
        assert "Example::" in (inspect.getdoc(getattr(ac.sim, name)) or "")
