"""Every runnable ```python block of README.md and the docs site, the
``# gpu-only`` ones included, runs on the GPU (tests/docs runs them in the
simulator)."""

from __future__ import annotations

import pytest

from tests.conftest import skip_on_sim
from tests.docs.docblocks import blocks
from tests.docs.test_doc_examples import run_page
from tests.docs.docblocks import doc_files

pytestmark = [pytest.mark.gpu, skip_on_sim("tests/docs runs these blocks in the simulator")]

PAGES = [p for p in doc_files() if any(b.kind in ("run", "gpu-only") for b in blocks(p))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_block_of_the_page_runs_on_the_gpu(page):
    want = [b.name for b in blocks(page) if b.kind in ("run", "gpu-only")]
    results = run_page(page, sim=False)
    assert [r["block"] for r in results] == want
    failed = [f"{r['block']}:\n{r['error']}" for r in results if r["error"]]
    assert not failed, "\n".join(failed)
