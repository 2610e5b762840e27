"""Checked mode on the barrier view of every local mbarrier function, and
range checks on the full width of run-time values (before the 32-bit
operand): the trap texts in the PTX, their absence in plain mode, and the
compile-time errors of the constants."""

from __future__ import annotations

import re

import pytest
from numba import types

import numba_asynccopy as ac
from numba_asynccopy import toolchain

from .helpers import kernel_from_source, ptx_of
from .test_cluster_ptx import ptx_strings

U32 = types.uint32[::1]


def compile_body(body: str, vty=types.int32, checked: bool = False) -> str:
    src = f"""
    def k(out, v):
        bars = cuda.shared.array(4, np.uint64)
        {body}
    """
    sig = (U32, vty)
    if checked:
        with ac.checked_mode():
            return ptx_of(kernel_from_source(src), sig)
    return ptx_of(kernel_from_source(src), sig)


# every function that takes a barrier of this CTA; bars[v:] is a view whose
# emptiness and address are only known at run time
BARRIER_CALLS = {
    "mbarrier_init": "ac.mbarrier_init(bars[v:], 1)",
    "mbarrier_inval": "ac.mbarrier_inval(bars[v:])",
    "mbarrier_arrive": "out[0] = ac.mbarrier_arrive(bars[v:])",
    "mbarrier_arrive_drop": "out[0] = ac.mbarrier_arrive_drop(bars[v:])",
    "mbarrier_arrive_no_complete": "out[0] = ac.mbarrier_arrive_no_complete(bars[v:], 1)",
    "mbarrier_arrive_drop_no_complete": "out[0] = ac.mbarrier_arrive_drop_no_complete(bars[v:], 1)",
    "mbarrier_expect_tx": "ac.mbarrier_expect_tx(bars[v:], 16)",
    "mbarrier_complete_tx": "ac.mbarrier_complete_tx(bars[v:], 16)",
    "mbarrier_arrive_expect_tx": "out[0] = ac.mbarrier_arrive_expect_tx(bars[v:], 16)",
    "mbarrier_test_wait": "out[0] = ac.mbarrier_test_wait(bars[v:], ac.mbarrier_arrive(bars[3:]))",
    "mbarrier_test_wait_parity": "out[0] = ac.mbarrier_test_wait_parity(bars[v:], 0)",
    "mbarrier_try_wait": "out[0] = ac.mbarrier_try_wait(bars[v:], ac.mbarrier_arrive(bars[3:]))",
    "mbarrier_try_wait_parity": "out[0] = ac.mbarrier_try_wait_parity(bars[v:], 1)",
    "mbarrier_wait": "ac.mbarrier_wait(bars[v:], ac.mbarrier_arrive(bars[3:]))",
    "mbarrier_wait_parity": "ac.mbarrier_wait_parity(bars[v:], 0)",
    "cp_async_mbarrier_arrive": "ac.cp_async_mbarrier_arrive(bars[v:])",
}


@pytest.mark.parametrize("api", list(BARRIER_CALLS))
def test_every_local_barrier_function_checks_the_view(api):
    ptx = compile_body(BARRIER_CALLS[api], checked=True)
    text = ptx_strings(ptx)
    for rule in ("`bar` is an empty view; its first element is the barrier",
                 "`bar` is not in shared memory", "`bar` is not 8-byte aligned (address %p)"):
        assert f"{api}: {rule}" in text, (api, rule)
    assert "isspacep.shared " in ptx
    plain = compile_body(BARRIER_CALLS[api])
    assert "isspacep" not in plain and not re.search(r"\btrap;", plain)
    toolchain.assemble(ptx)


@pytest.mark.parametrize("body,api,name,lo,hi", [
    ("ac.mbarrier_init(bars[0:], v)", "mbarrier_init", "count", 1, 1048575),
    ("out[0] = ac.mbarrier_arrive(bars[0:], v)", "mbarrier_arrive", "count", 1, 1048575),
    ("out[0] = ac.mbarrier_arrive_no_complete(bars[0:], v)", "mbarrier_arrive_no_complete",
     "count", 1, 1048575),
    ("ac.mbarrier_expect_tx(bars[0:], v)", "mbarrier_expect_tx", "nbytes", 0, 1048575),
    ("ac.mbarrier_complete_tx(bars[0:], v)", "mbarrier_complete_tx", "nbytes", 0, 1048575),
    ("out[0] = ac.mbarrier_arrive_expect_tx(bars[0:], v)", "mbarrier_arrive_expect_tx",
     "nbytes", 0, 1048575),
    ("out[0] = ac.mbarrier_try_wait_parity(bars[0:], 0, v)", "mbarrier_try_wait_parity",
     "suspend_hint_ns", 0, 4294967295),
    # the cta_rank= keyword and the *_remote spellings
    ("ac.mbarrier_arrive(bars[0:], v, cta_rank=0)", "mbarrier_arrive", "count", 1, 1048575),
    ("ac.mbarrier_expect_tx(bars[0:], v, cta_rank=0)", "mbarrier_expect_tx", "nbytes", 0, 1048575),
    ("ac.mbarrier_arrive_expect_tx(bars[0:], v, cta_rank=0)", "mbarrier_arrive_expect_tx",
     "nbytes", 0, 1048575),
    ("ac.mbarrier_arrive_remote(bars[0:], 0, v)", "mbarrier_arrive_remote", "count", 1, "2**20-1"),
    ("ac.mbarrier_expect_tx_remote(bars[0:], 0, v)", "mbarrier_expect_tx_remote", "nbytes", 0,
     "2**20-1"),
    ("ac.mbarrier_arrive_expect_tx_remote(bars[0:], 0, v)", "mbarrier_arrive_expect_tx_remote",
     "nbytes", 0, "2**20-1"),
])
@pytest.mark.parametrize("vty,conv", [(types.int64, "%lld"), (types.uint64, "%llu"),
                                      (types.int32, "%lld"), (types.uint32, "%llu")])
def test_run_time_values_are_range_checked_on_their_full_width(body, api, name, lo, hi, vty, conv):
    ptx = compile_body(body, vty, checked=True)
    rule = f"{api}: `{name}`={conv} is outside {lo}..{hi}"
    if vty == types.uint32 and hi == 4294967295:
        assert rule not in ptx_strings(ptx)  # a uint32 cannot be outside: the check folds away
        return
    assert rule in ptx_strings(ptx)
    if vty.bitwidth == 64:
        # the comparison is on the 64-bit register: no 32-bit truncation before it
        assert re.search(r"setp\.\w+\.[su]64", ptx)
    plain = compile_body(body, vty)
    assert not re.search(r"\btrap;", plain)
    toolchain.assemble(ptx)


@pytest.mark.parametrize("body,api", [
    ("ac.mbarrier_wait_parity(bars[0:], v)", "mbarrier_wait_parity"),
    ("out[0] = ac.mbarrier_test_wait_parity(bars[0:], v)", "mbarrier_test_wait_parity"),
    ("out[0] = ac.mbarrier_try_wait_parity(bars[0:], v)", "mbarrier_try_wait_parity"),
])
@pytest.mark.parametrize("vty,conv", [(types.int64, "%lld"), (types.uint32, "%llu")])
def test_run_time_parities_are_checked_on_their_full_width_in_the_compile_time_words(body, api, vty,
                                                                                     conv):
    ptx = compile_body(body, vty, checked=True)
    assert f"{api}: `parity`={conv} must be 0 or 1" in ptx_strings(ptx)


@pytest.mark.parametrize("body,rank_name", [
    ("ac.mbarrier_arrive(bars[0:], cta_rank=v)", "cta_rank"),
    ("ac.mbarrier_arrive_remote(bars[0:], v)", "cta_rank"),
    ("out[0] = ac.dsmem_load(bars, v, 0)", "rank"),
])
@pytest.mark.parametrize("vty,conv", [(types.int64, "%lld"), (types.uint64, "%llu")])
def test_cluster_ranks_are_checked_on_their_full_width(body, rank_name, vty, conv):
    ptx = compile_body(body, vty, checked=True)
    assert f"`{rank_name}`={conv} is outside the cluster (%u CTAs: ranks 0..%u)" in ptx_strings(ptx)


@pytest.mark.parametrize("vty,conv", [(types.int64, "%lld"), (types.uint64, "%llu"),
                                      (types.int8, "%lld")])
def test_src_size_is_checked_on_its_full_width(vty, conv):
    src = """
    def k(A, v):
        sh = cuda.shared.array((32, 4), np.float32, alignment=16)
        ac.cp_async(sh[0, :], A[0, :], 16, src_size=v)
    """
    with ac.checked_mode():
        ptx = ptx_of(kernel_from_source(src), (types.float32[:, ::1], vty))
    assert f"cp_async: src_size={conv} is outside 0..chunk_bytes (16)" in ptx_strings(ptx)


def test_fence_proxy_tensormap_checks_the_map_is_global():
    src = """
    def k(tm):
        ac.fence_proxy_tensormap(tm)
    """
    with ac.checked_mode():
        ptx = ptx_of(kernel_from_source(src), (types.uint64[::1],))
    assert "fence_proxy_tensormap: `tensor_map` is not in global memory" in ptx_strings(ptx)
    assert "isspacep.global" in ptx
    plain = ptx_of(kernel_from_source(src), (types.uint64[::1],))
    assert "isspacep" not in plain


@pytest.mark.parametrize("body,message", [
    ("out[0] = ac.mbarrier_try_wait_parity(bars[0:], 0, -1)",
     "mbarrier_try_wait_parity: `suspend_hint_ns`=-1 is outside 0..4294967295"),
    ("out[0] = ac.mbarrier_try_wait_parity(bars[0:], 0, 2**40)",
     "mbarrier_try_wait_parity: `suspend_hint_ns`=1099511627776 is outside 0..4294967295"),
    ("out[0] = ac.mbarrier_try_wait(bars[0:], v, 1 << 32)",
     "mbarrier_try_wait: `suspend_hint_ns`=4294967296 is outside 0..4294967295"),
    ("out[0] = ac.mbarrier_try_wait(bars[0:], v, 1.5)",
     "mbarrier_try_wait: `suspend_hint_ns` must be an integer value"),
])
def test_hint_constants_are_compile_time_errors(body, message):
    with pytest.raises(Exception) as e:
        compile_body(body)
    assert message in str(e.value), str(e.value)[:600]


def test_hint_constants_in_range_compile():
    compile_body("out[0] = ac.mbarrier_try_wait_parity(bars[0:], 0, 0)")
    compile_body("out[0] = ac.mbarrier_try_wait_parity(bars[0:], 0, 4294967295)")


@pytest.mark.parametrize("body,message", [
    ("ac.mbarrier_arrive(bars[0:], cta_rank=16)",
     "mbarrier_arrive: `cta_rank`=16 is outside 0..15 (a cluster has at most 16 CTAs)"),
    ("ac.mbarrier_arrive_remote(bars[0:], -1)",
     "mbarrier_arrive_remote: `cta_rank`=-1 is outside 0..15"),
    ("out[0] = ac.dsmem_load(bars, 2**40, 0)", "dsmem_load: `rank`=1099511627776 is outside 0..15"),
    ("p = ac.map_shared_rank(bars, -3)", "map_shared_rank: `rank`=-3 is outside 0..15"),
])
def test_rank_constants_outside_any_cluster_are_compile_time_errors(body, message):
    with pytest.raises(Exception) as e:
        compile_body(body)
    assert message in str(e.value), str(e.value)[:600]


@pytest.mark.parametrize("flag", ["pred", "ignore_src"])
def test_a_64_bit_flag_is_true_on_its_full_width(flag):
    # pred=2**32 is true: the flag is compared with 0 before it becomes a 32-bit operand
    src = f"""
    def k(A, v):
        sh = cuda.shared.array((32, 4), np.float32, alignment=16)
        ac.cp_async(sh[0, :], A[0, :], 16, {flag}=v)
    """
    ptx = ptx_of(kernel_from_source(src), (types.float32[:, ::1], types.int64))
    assert re.search(r"setp\.ne\.s64\s+%p\d+, %rd\d+, 0;", ptx), ptx
    narrow = ptx_of(kernel_from_source(src), (types.float32[:, ::1], types.int32))
    assert not re.search(r"setp\.ne\.s64", narrow)
