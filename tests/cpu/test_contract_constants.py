"""Constants known at compile time are checked at compile time, and the
run-time values behind them in checked mode on their full width: tensor
coordinates, elect.sync masks, integer cache-policy fractions and the value
a DSMEM store writes."""

from __future__ import annotations

import re

import pytest
from numba import cuda, types
from numba.core.errors import NumbaError

import numba_asynccopy as ac

from .helpers import kernel_from_source, ptx_of
from .test_cluster_ptx import ptx_strings

MAP = types.uint64[::1]


def compile_body(body: str, sig=(MAP, types.int64), checked=False):
    src = f"""
    def k(tm, v):
        sh = cuda.shared.array((8, 32), np.float32, alignment=1024)
        bars = cuda.shared.array(2, np.uint64)
        {body}
    """
    with ac.checked_mode(checked):
        return ptx_of(kernel_from_source(src), sig, cc=(9, 0))


@pytest.mark.parametrize("body,message", [
    ("ac.cp_async_bulk_tensor_load(sh, tm, (0, 2147483648), bars[0:])",
     "cp_async_bulk_tensor_load: `coords`[1]=2147483648 is outside -2**31..2**31-1 "
     "(tensor coordinates are signed 32-bit)"),
    ("ac.cp_async_bulk_tensor_load(sh, tm, (-2147483649, 0), bars[0:])",
     "cp_async_bulk_tensor_load: `coords`[0]=-2147483649 is outside -2**31..2**31-1"),
    ("ac.cp_async_bulk_tensor_store(tm, (1099511627776, 0), sh)",
     "cp_async_bulk_tensor_store: `coords`[0]=1099511627776 is outside -2**31..2**31-1"),
    ("ac.cp_async_bulk_tensor_store(tm, (0, -32), sh)",
     "cp_async_bulk_tensor_store: `coords`[1]=-32 is negative; tensor stores and reductions "
     "need coordinates >= 0"),
    ("ac.cp_reduce_async_bulk_tensor(tm, (-8, 0), sh, 'add')",
     "cp_reduce_async_bulk_tensor: `coords`[0]=-8 is negative"),
    ("ac.cp_async_bulk_prefetch_tensor(tm, (0, 8589934592))",
     "cp_async_bulk_prefetch_tensor: `coords`[1]=8589934592 is outside -2**31..2**31-1"),
    ("x = ac.elect_sync(0)", "elect_sync: `mask`=0 is outside 0x1..0xFFFFFFFF"),
    ("x = ac.elect_sync(4294967296)", "elect_sync: `mask`=4294967296 is outside 0x1..0xFFFFFFFF"),
    ("x = ac.elect_sync(-1)", "elect_sync: `mask`=-1 is outside 0x1..0xFFFFFFFF"),
    ("p = ac.createpolicy_fractional('evict_first', None, 0)",
     "createpolicy_fractional: `fraction`=0 must be in (0, 1]"),
    ("p = ac.createpolicy_fractional('evict_first', None, 2)",
     "createpolicy_fractional: `fraction`=2 must be in (0, 1]"),
    ("p = ac.createpolicy_fractional('evict_first', None, -1)",
     "createpolicy_fractional: `fraction`=-1 must be in (0, 1]"),
    ("ac.dsmem_store(sh, 1, (0, 0), 1j)",
     "dsmem_store: `value` must be a real number (int, float or bool) for a float32 view, "
     "got complex128"),
    ("x = ac.dsmem_atomic_add(sh, 1, (0, 0), 2 + 1j)",
     "dsmem_atomic_add: `value` must be a real number"),
])
def test_bad_constants_are_compile_time_errors(body, message):
    with pytest.raises(NumbaError) as e:  # a compile-time error (numba-cuda's typing or lowering)
        compile_body(body)
    assert str(e.value).startswith(message.split(":")[0] + ":"), str(e.value)[:300]
    assert message in str(e.value), str(e.value)[:600]


def test_good_constants_still_compile():
    compile_body("ac.cp_async_bulk_tensor_load(sh, tm, (-8, 2147483647), bars[0:])")
    compile_body("ac.cp_async_bulk_tensor_store(tm, (0, 0), sh)")
    compile_body("x = ac.elect_sync(0xFFFFFFFF)")
    compile_body("p = ac.createpolicy_fractional('evict_first', None, 1)")
    compile_body("ac.dsmem_store(sh, 1, (0, 0), 2)")


@pytest.mark.parametrize("vty,traps", [(types.int64, True), (types.uint32, True),
                                       (types.int32, False), (types.int16, False)])
def test_run_time_coordinates_are_range_checked_on_their_full_width(vty, traps):
    ptx = compile_body("ac.cp_async_bulk_tensor_load(sh, tm, (v, 0), bars[0:])",
                       sig=(MAP, vty), checked=True)
    text = ptx_strings(ptx)
    assert ("`coords`[0]=%ll" in text and "is outside -2**31..2**31-1" in text) == traps


@pytest.mark.parametrize("vty", [types.int64, types.uint32, types.int32])
def test_run_time_elect_mask_is_checked_on_its_full_width(vty):
    ptx = compile_body("x = ac.elect_sync(v)", sig=(MAP, vty), checked=True)
    assert "elect_sync: `mask`=0x%llx is outside 0x1..0xFFFFFFFF" in ptx_strings(ptx)
    plain = compile_body("x = ac.elect_sync(v)", sig=(MAP, vty))
    assert not re.search(r"\btrap;", plain)
