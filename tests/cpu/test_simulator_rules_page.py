"""docs/simulator-rules.md is generated from the rule book and the
simulator's checks (numba_asynccopy/sim/rules_doc.py): it must be current."""

from __future__ import annotations

import os

from numba_asynccopy import _rules
from numba_asynccopy.sim import rules_doc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "docs", "simulator-rules.md")


def test_simulator_rules_page_is_current():
    with open(PAGE, encoding="utf-8") as f:
        current = f.read()
    assert current == rules_doc.render(), (
        "docs/simulator-rules.md is stale: run "
        "`python -m numba_asynccopy.sim.rules_doc docs/simulator-rules.md`")


def test_every_rule_and_detection_is_on_the_page():
    page = rules_doc.render()
    for name in _rules.RULES:
        assert f"| `{name}` |" in page, name
    for _, path in rules_doc.DETECTIONS:
        assert f"`sim.{path}`" in page, path
    assert "## What it cannot detect" in page and len(rules_doc.BLIND_SPOTS) >= 5
