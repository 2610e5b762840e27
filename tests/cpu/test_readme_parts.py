"""One generator makes every generated part of the docs (``make
readme-table``): each part it holds is current, a stale part is rebuilt
between its markers and nothing else changes, a file without parts is an
error."""

from __future__ import annotations

import os

import pytest

from numba_asynccopy import _readme

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# the pages that hold the generated parts (the Makefile's FEATURE_TABLE_PAGE
# and CHECKED_TABLE_PAGE)
PAGES = {"docs/reference/features.md": ["feature-table"],
         "docs/tutorial/checked-mode.md": ["checked-table"]}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_generated_part_of_the_docs_is_current(page):
    with open(os.path.join(ROOT, page)) as f:
        text = f.read()
    names = _readme.parts_in(text)
    assert names == PAGES[page], (page, names)
    for name in names:
        assert _readme.current(text, name) == _readme.PARTS[name](), \
            f"{page}: part {name} is stale: run `make readme-table`"


def test_the_makefile_rewrites_the_pages_that_hold_the_parts():
    with open(os.path.join(ROOT, "Makefile")) as f:
        text = f.read()
    for page in PAGES:
        assert page in text, page


def test_a_stale_part_is_rebuilt_between_its_markers(tmp_path):
    p = tmp_path / "README.md"
    p.write_text("intro\n<!-- feature-table:begin -->\nold\n<!-- feature-table:end -->\nrest\n")
    assert _readme.write(str(p)) == ["feature-table"]
    text = p.read_text()
    assert text.startswith("intro\n<!-- feature-table:begin -->\n| operation |")
    assert text.endswith("\n<!-- feature-table:end -->\nrest\n")
    assert _readme.write(str(p)) == []  # now up to date


def test_a_file_without_generated_parts_is_an_error(tmp_path):
    p = tmp_path / "README.md"
    p.write_text("no markers here\n")
    with pytest.raises(ValueError, match="holds none of the generated parts"):
        _readme.write(str(p))
