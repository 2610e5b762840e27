"""Adversarial simulator suite: run-time values that break a contract
(counts, byte totals, parities, hints and sizes out of range, on their full
width; barrier views outside shared memory or empty) are drawn by
hypothesis and passed to simulated kernels.  Each must be refused with the
words checked mode's trap uses for the same value: a ``SimulatorError``
for a rule only the values tell, the compile-time error where the
call passes a constant (the simulator reads the kernel's source to tell)."""

from __future__ import annotations

import linecache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import cuda
from numba.cuda.core.errors import TypingError

import numba_asynccopy as ac
from numba_asynccopy import _rules
from numba_asynccopy._lowering import TRAP_PREFIX

SOME = settings(max_examples=12, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

KERNEL = """
def k(out, v, A):
    tid = cuda.threadIdx.x
    bars = cuda.shared.array(4, np.uint64)
    loc = cuda.local.array(2, np.uint64)
    sh = cuda.shared.array((4, 4), np.float32, alignment=16)
    if tid == 0:
        ac.mbarrier_init(bars[1:], 1)
    cuda.syncthreads()
    {body}
"""

# (api, statement with the run-time value v, its argument, lo, hi, the rule for it)
VALUES = [
    ("mbarrier_init", "ac.mbarrier_init(bars[0:], v)", "count", 1, _rules.MAX_COUNT, None),
    ("mbarrier_arrive", "out[0] = ac.mbarrier_arrive(bars[1:], v)", "count", 1, _rules.MAX_COUNT,
     None),
    ("mbarrier_arrive_no_complete", "out[0] = ac.mbarrier_arrive_no_complete(bars[1:], v)",
     "count", 1, _rules.MAX_COUNT, None),
    ("mbarrier_expect_tx", "ac.mbarrier_expect_tx(bars[1:], v)", "nbytes", 0, _rules.MAX_TX, None),
    ("mbarrier_complete_tx", "ac.mbarrier_complete_tx(bars[1:], v)", "nbytes", 0, _rules.MAX_TX,
     None),
    ("mbarrier_arrive_expect_tx", "out[0] = ac.mbarrier_arrive_expect_tx(bars[1:], v)", "nbytes",
     0, _rules.MAX_TX, None),
    ("mbarrier_wait_parity", "ac.mbarrier_wait_parity(bars[1:], v)", "parity", 0, 1,
     _rules.parity_bit),
    ("mbarrier_try_wait_parity", "out[0] = ac.mbarrier_try_wait_parity(bars[1:], 0, v)",
     "suspend_hint_ns", 0, _rules.MAX_SUSPEND_HINT, None),
]


def run(body: str, v, checked: bool = True):
    ns = {"np": np, "cuda": cuda, "ac": ac}
    src = KERNEL.format(body=body)
    name = f"<adversarial sim kernel {abs(hash(src))}>"
    # a source the simulator can read: it tells the run-time value v from a constant
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    exec(compile(src, name, "exec"), ns)
    k = cuda.jit(ns["k"])
    out = cuda.to_device(np.zeros(4, np.uint64))
    A = cuda.to_device(np.zeros((4, 8), np.float32))
    with ac.checked_mode(checked):
        k[1, 1](out, v, A)


def outside(lo: int, hi: int):
    return st.one_of(st.integers(min_value=hi + 1, max_value=2**63 - 1),
                     st.integers(min_value=-2**63, max_value=lo - 1),
                     st.sampled_from([hi + 1, lo - 1, 2**32 + lo, 2**32 + hi, -2**32]))


@pytest.mark.parametrize("api,body,name,lo,hi,rule", VALUES, ids=[v[0] for v in VALUES])
@SOME
@given(data=st.data())
def test_out_of_range_values_are_refused_in_checked_modes_words(api, body, name, lo, hi, rule,
                                                                data):
    v = data.draw(outside(lo, hi), label=name)
    words = rule(name=name, value=v) if rule else _rules.outside_range(name=name, value=v, lo=lo,
                                                                       hi=hi)
    with pytest.raises(ac.sim.SimulatorError) as e:
        run(body, v)
    # v is a kernel parameter: the GPU compiles the call and checked mode traps
    assert f"{TRAP_PREFIX}{api}: {words} [block (0,0,0) thread (0,0,0)]" in str(e.value), str(e.value)


@pytest.mark.parametrize("api,body,name,lo,hi,rule", VALUES, ids=[v[0] for v in VALUES])
def test_an_out_of_range_constant_is_the_compile_time_error(api, body, name, lo, hi, rule):
    v = hi + 1
    words = rule(name=name, value=v) if rule else _rules.outside_range(name=name, value=v, lo=lo,
                                                                       hi=hi)
    with pytest.raises(TypingError) as e:
        run(body.replace("v)", f"{v})"), 0)
    assert f"{api}: {words}" in str(e.value), str(e.value)


# (the other values, at their edges, break the barrier protocol instead: their own error)
EDGES = [v for v in VALUES if v[0] in ("mbarrier_init", "mbarrier_try_wait_parity")]


@pytest.mark.parametrize("api,body,name,lo,hi,rule", EDGES, ids=[v[0] for v in EDGES])
def test_the_edges_of_the_ranges_run(api, body, name, lo, hi, rule):
    for v in (lo, hi):
        run(body, v)


BAR_CALLS = {
    "mbarrier_init": "ac.mbarrier_init({bar}, 1)",
    "mbarrier_inval": "ac.mbarrier_inval({bar})",
    "mbarrier_arrive": "out[0] = ac.mbarrier_arrive({bar})",
    "mbarrier_arrive_drop": "out[0] = ac.mbarrier_arrive_drop({bar})",
    "mbarrier_expect_tx": "ac.mbarrier_expect_tx({bar}, 16)",
    "mbarrier_complete_tx": "ac.mbarrier_complete_tx({bar}, 16)",
    "mbarrier_arrive_expect_tx": "out[0] = ac.mbarrier_arrive_expect_tx({bar}, 16)",
    "mbarrier_test_wait_parity": "out[0] = ac.mbarrier_test_wait_parity({bar}, 0)",
    "mbarrier_try_wait_parity": "out[0] = ac.mbarrier_try_wait_parity({bar}, 0)",
    "mbarrier_wait_parity": "ac.mbarrier_wait_parity({bar}, 0)",
    "mbarrier_test_wait": "out[0] = ac.mbarrier_test_wait({bar}, out[1])",
    "mbarrier_try_wait": "out[0] = ac.mbarrier_try_wait({bar}, out[1])",
    "mbarrier_wait": "ac.mbarrier_wait({bar}, out[1])",
    "cp_async_mbarrier_arrive": "ac.cp_async_mbarrier_arrive({bar})",
}
BAD_BARS = {
    "out[0:]": _rules.not_in_space(name="bar", space="shared"),
    "loc[0:]": _rules.not_in_space(name="bar", space="shared"),
    "bars[4:]": _rules.barrier_empty(name="bar"),
    "bars[v:v]": _rules.barrier_empty(name="bar"),
}


@pytest.mark.parametrize("api", list(BAR_CALLS))
@settings(max_examples=4, deadline=None, derandomize=True)
@given(bar=st.sampled_from(list(BAD_BARS)), checked=st.booleans())
def test_bad_barrier_views_raise_the_trap_words(api, bar, checked):
    with pytest.raises(ac.sim.SimulatorError) as e:
        run(BAR_CALLS[api].format(bar=bar), 1, checked)
    prefix = TRAP_PREFIX if checked else "numba_asynccopy simulator: "
    assert f"{prefix}{api}: {BAD_BARS[bar]} [block (0,0,0) thread (0,0,0)]" in str(e.value)


def test_the_case_count():
    # per layer in the closing note: value cases drawn, barrier-view cases drawn
    assert len(VALUES) * 12 + len(BAR_CALLS) * 4 >= 150
