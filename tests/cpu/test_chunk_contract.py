"""The chunked views' contract (``_regions.CHUNKED_VIEWS``): its simulator
reading on numpy views gives the rulebook's words, rule by rule, in the
order checked mode traps (the trap words themselves are pinned by
test_rules_pinned.py and compared with the simulator's in tests/sim)."""

from __future__ import annotations

import numpy as np
import pytest

from numba_asynccopy import _rules
from numba_asynccopy._regions import CHUNKED_VIEWS, ValueView

BASE = 0x10000  # a 16-byte aligned address


def view(name, a, address=BASE, layout="A"):
    return ValueView(name, a, address, layout)


def test_views_that_keep_the_contract_pass():
    a = np.zeros((4, 8), np.float32)
    b = np.zeros((4, 8), np.float32)
    assert CHUNKED_VIEWS.check_values([view("dst", a, layout="C"), view("src", b)], 16) is None


@pytest.mark.parametrize("layout, expect_strided", [("A", True), ("C", False)])
def test_a_strided_last_axis_is_named_unless_the_type_says_contiguous(layout, expect_strided):
    a = np.zeros((4, 16), np.float32)[:, ::2]  # stride 8 bytes
    got = CHUNKED_VIEWS.check_values([view("dst", a, layout=layout)], 16)
    if expect_strided:
        assert got == _rules.last_axis_strided(name="dst", stride=8)
    else:  # a C-layout type never has a strided last axis, so the rule is not checked
        assert got is None


def test_a_row_of_partial_chunks_is_named_with_its_bytes():
    a = np.zeros((4, 3), np.float32)  # 12-byte rows
    assert CHUNKED_VIEWS.check_values([view("src", a)], 8) == _rules.row_not_whole_chunks(
        name="src", row=12, chunk=8)


def test_a_misaligned_origin_is_named_with_its_address():
    a = np.zeros((4, 8), np.float32)
    assert CHUNKED_VIEWS.check_values([view("dst", a, address=BASE + 4)], 16) == \
        _rules.chunk_misaligned(name="dst", align=16, base=f"0x{BASE + 4:x}")
    # the alignment is the chunk unless the contract says otherwise (bulk copies: 16)
    assert CHUNKED_VIEWS.check_values([view("dst", a, address=BASE + 16)], 32, align=16) is None
    assert CHUNKED_VIEWS.check_values([view("dst", a, address=BASE + 16)], 32) == \
        _rules.chunk_misaligned(name="dst", align=32, base=f"0x{BASE + 16:x}")


def test_views_of_different_repeats_or_chunk_counts_are_named():
    a, b = np.zeros((4, 8), np.float32), np.zeros((2, 8), np.float32)
    assert CHUNKED_VIEWS.check_values([view("dst", a), view("src", b)], 16) == \
        _rules.repeat_axis_differs(axis=0, a_name="dst", a=4, b_name="src", b=2)
    c = np.zeros((4, 8), np.float64)
    assert CHUNKED_VIEWS.check_values([view("dst", a), view("src", c)], 16) == \
        _rules.chunk_counts_differ(a_name="dst", a_dtype=a.dtype, a=2, b_name="src",
                                   b_dtype=c.dtype, b=4)
