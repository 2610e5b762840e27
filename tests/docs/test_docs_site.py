"""The documentation site's sources: the generated API reference covers
every public name, every page joins the site, the README stays short and
says nothing about one particular GPU machine."""

from __future__ import annotations

import re
import sys

import numba_asynccopy as ac
from tests.docs.docblocks import ROOT

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import ac_reference  # noqa: E402


def test_the_api_reference_documents_every_public_name(tmp_path):
    documented = ac_reference.write_pages(str(tmp_path))
    assert sorted(documented) == sorted(ac.__all__)
    text = "\n".join(p.read_text() for p in sorted(tmp_path.glob("*.md")))
    for name in ac.__all__:
        assert re.search(rf"^\.\. (autofunction|autoclass|autoexception|py:data|automodule):: "
                         rf"numba_asynccopy\.{name}$", text, re.M), name
    for name in ac.pipeline.__all__:
        assert f"numba_asynccopy.pipeline.{name}" in text, name


def test_device_functions_list_their_forms_and_rules(tmp_path):
    ac_reference.write_pages(str(tmp_path))
    page = (tmp_path / "00-cp_async.md").read_text()
    section = page.split("## `cp_async`")[1].split("\n## ")[0]
    assert "| `cp.async.{ca,cg}.shared.global{.L2::cache_hint}{.L2::NB} [dst], [src], cp{, src_size\\|ignore_src}{, policy}` | 7.0 | sm_80 | - |" in section
    assert "| dst | `not_in_space` | `dst` is not in shared memory |" in section
    mb = (tmp_path / "01-mbarrier.md").read_text().split("## `mbarrier_expect_tx`")[1].split("\n## ")[0]
    assert "| 8.0 | sm_90 |" in mb


def test_every_page_joins_the_site():
    index = (ROOT / "docs" / "index.md").read_text()
    assert ":glob:\n\n*\n```" in index  # every top-level page, whoever writes it
    listed = set(re.findall(r"^((?:tutorial|howto|reference|api)/[\w-]+)$", index, re.M))
    for page in (ROOT / "docs").glob("*/*.md"):
        if page.parent.name in ("tutorial", "howto", "reference"):
            assert f"{page.parent.name}/{page.stem}" in listed, page
    ignored = (ROOT / ".gitignore").read_text()
    assert "docs/_build/" in ignored and "docs/api/generated/" in ignored


def test_the_readme_fits_on_a_few_screens_and_names_no_particular_machine():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text()
        # words of one workplace's GPU access (spelled as patterns so this test
        # does not hold them itself): the docs say `make gpu-test` instead
        for words in (r"car[r]y=", r"\ble[n]t\b", r"devic[e] tool", r"ru[n]\(command="):
            assert not re.search(words, text), (page, words)
    for target in ("docs/tutorial/copies.md", "docs/api/index.md", "docs/running-tests.md"):
        assert f"]({target}" in readme, target
