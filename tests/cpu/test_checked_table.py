"""The README's checked-mode table is generated from the checks' declarations
(``checked.declare``, next to the code that emits each trap) and cannot drift."""

from __future__ import annotations

import os

import numba_asynccopy as ac
from numba_asynccopy import _rules
from numba_asynccopy import checked as C

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_readme_table_is_current():
    # the table lives in the docs (the Makefile's CHECKED_TABLE_PAGE)
    with open(os.path.join(ROOT, "docs", "tutorial", "checked-mode.md")) as f:
        text = f.read()
    begin, end = "<!-- checked-table:begin -->\n", "\n<!-- checked-table:end -->"
    current = text.split(begin)[1].split(end)[0]
    assert current == C.checks_table(), "README checked-mode table is stale: run `make readme-table`"


def test_every_declared_check_names_a_public_function_and_a_rule():
    assert len(C.CHECKS) > 100
    for c in C.CHECKS:
        if c.api.startswith("pipeline."):  # ac.pipeline's operations
            assert c.api.split(".", 1)[1] in ac.pipeline.__all__, c
        else:
            assert c.api in ac.__all__, c
        assert c.text and c.argument, c
        if c.rule:
            assert c.rule in _rules.RULES, c


def test_the_new_checks_are_listed():
    table = C.checks_table()
    for api in ("mbarrier_init", "mbarrier_wait_parity", "cp_async_mbarrier_arrive",
                "mbarrier_try_wait"):
        assert f"| `{api}` | `bar` | `bar` is an empty view; its first element is the barrier<br>" \
               "`bar` is not in shared memory<br>`bar` is not 8-byte aligned (address …) |" in table
    assert "| `mbarrier_arrive_remote` | `count` | `count`=… is outside 1..2**20-1 |" in table
    assert "| `fence_proxy_tensormap` | `tensor_map` | `tensor_map` is not in global memory |" \
        in table


def test_declare_renders_the_rule_and_keeps_one_record(monkeypatch):
    monkeypatch.setattr(C, "CHECKS", [])
    C.declare(("f", "g"), "count", _rules.outside_range, name="count", value="…", lo=1, hi=3)
    C.declare("f", "count", _rules.outside_range, name="count", value="…", lo=1, hi=3)
    assert [(c.api, c.rule, c.text) for c in C.CHECKS] == [
        ("f", "outside_range", "`count`=… is outside 1..3"),
        ("g", "outside_range", "`count`=… is outside 1..3")]


def test_the_pipeline_protocol_checks_are_listed():
    table = C.checks_table()
    for api, arg, words in (
            ("pipeline.producer_acquire", "state", "second producer_acquire of a slot still in use"),
            ("pipeline.consumer_release", "state", "consumer_release without a consumer_wait"),
            ("pipeline.consumer_wait", "(the wait)", "its producers' commit never came"),
            ("pipeline.init", "(the cluster)", "needs a cluster of exactly N CTAs"),
            ("pipeline.init", "(the block)", "producer and consumer threads")):
        row = next((r for r in table.splitlines() if r.startswith(f"| `{api}` | {arg if arg[0] == '(' else f'`{arg}`'} |")), "")
        assert words in row, (api, arg, row)
