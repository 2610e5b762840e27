"""One generator makes every generated part of the docs (``make
readme-table``): each part it holds is current, a stale part is rebuilt
between its markers and nothing else changes, a file without parts is an
error."""

from __future__ import annotations

import os

import pytest

from numba_asynccopy import _readme

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# the pages that hold the generated parts (the Makefile's FEATURE_TABLE_PAGE,
# CHECKED_TABLE_PAGE and BENCH_PAGES)
PAGES = {"docs/reference/features.md": ["feature-table"],
         "docs/tutorial/checked-mode.md": ["checked-table"],
         "README.md": ["bench-headline"],
         "docs/benchmarks.md": ["bench-table", "bench-misses", "bench-idioms", "bench-notes-2026-12-02",
                                "bench-facts-ab", "bench-launch"]}


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


# --- the benchmark figures: generated from the results JSON, never quoted by hand ----


def test_the_published_figures_come_from_the_newest_results():
    """Every results file under benchmarks/ that a run wrote is one of the
    published sources, newest first: a new run's JSON left out (or listed
    after an older one) fails here, and the pages' parts then go stale."""
    import glob
    import json

    from numba_asynccopy.bench import published

    runs = {}
    for path in glob.glob(os.path.join(ROOT, "benchmarks", "**", "*.json"), recursive=True):
        with open(path) as f:
            data = json.load(f)
        if "measurements" in data and not data.get("quick"):
            runs[os.path.relpath(path, ROOT)] = data["date"]
    newest = max(runs, key=runs.get)
    assert published.RESULTS[0] == newest, (newest, published.RESULTS)
    dates = [runs[p] for p in published.RESULTS]
    assert dates == sorted(dates, reverse=True), list(zip(published.RESULTS, dates))


def test_a_figure_that_changes_in_the_results_makes_the_page_stale(tmp_path, monkeypatch):
    """The README's part is what the generator makes of the results: the
    same results with one measurement 10 % slower render another part (the
    page would be stale), and its ratio is recomputed, not copied."""
    import json

    from numba_asynccopy.bench import published

    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    assert _readme.current(readme, "bench-headline") == published.headline()
    committed, run = published.row("numba_staged_copy", "torch_copy")
    src = os.path.join(ROOT, run["path"])
    with open(src) as f:
        data = json.load(f)
    for m in data["measurements"]:
        if m["key"] == "numba_staged_copy":
            m["ms"] *= 1.1
            m["figure"] /= 1.1
    changed = tmp_path / "results.json"
    changed.write_text(json.dumps(data))
    monkeypatch.setattr(published, "RESULTS",
                        tuple(str(changed) if p == run["path"] else p for p in published.RESULTS))
    published.load.cache_clear()
    try:
        new = published.headline()
    finally:
        published.load.cache_clear()
    assert new != _readme.current(readme, "bench-headline")
    moved = [ln for ln in new.splitlines() if ln.startswith("| staged cp.async copy | ")]
    assert moved[0].split(" | ")[4] == f"{committed.ratio / 1.1:.3f}", (moved, committed.ratio)


def test_a_template_field_that_names_nothing_is_an_error():
    from numba_asynccopy.bench import published

    with pytest.raises(KeyError, match="no benchmark row compares numba_staged_copy with nothing"):
        published.fill("{ratio:numba_staged_copy/nothing}")
    with pytest.raises(ValueError, match="names no row"):
        published.fill("{ratio:numba_staged_copy}")
