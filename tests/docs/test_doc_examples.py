"""Every ```python block of README.md and the docs site runs in the CUDA
simulator (a subprocess with NUMBA_ENABLE_CUDASIM=1, one per page), or is
a ``# fragment`` that compiles as a kernel for sm_90a (type-checked by
Numba), or is ``# gpu-only`` (run by the GPU suite,
tests/gpu/test_doc_examples_gpu.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from numba.core.errors import TypingError

from tests.docs.docblocks import ROOT, Block, all_blocks, blocks, compile_fragment, doc_files

PAGES = [p for p in doc_files() if any(b.kind == "run" for b in blocks(p))]


def run_page(path, sim: bool) -> list[dict]:
    # the repository first, then whatever the caller's PYTHONPATH holds (a
    # machine may bring its packages that way)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    if sim:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    proc = subprocess.run([sys.executable, "-m", "tests.docs.docblocks", str(path)],
                          capture_output=True, text=True, timeout=900, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [json.loads(l.split(" ", 1)[1]) for l in proc.stdout.splitlines()
            if l.startswith("DOCBLOCK ")]


def test_there_are_examples_and_every_kind_is_known():
    found = all_blocks()
    assert len(found) >= 20, len(found)
    assert {b.kind for b in found} <= {"run", "fragment", "gpu-only"}
    assert sum(b.kind == "run" for b in found) >= 12


@pytest.mark.parametrize("block", [b for b in all_blocks() if b.kind != "run"], ids=lambda b: b.name)
def test_fragments_and_gpu_only_blocks_compile(block):
    compile(block.source, block.name, "exec")


FRAGMENTS = [b for b in all_blocks() if b.kind == "fragment"]


@pytest.mark.parametrize("block", FRAGMENTS, ids=lambda b: b.name)
def test_every_fragment_type_checks_as_a_kernel(block):
    ptx = compile_fragment(block)
    assert ".entry" in ptx and ".target sm_90a" in ptx, ptx[:400]


def test_there_are_fragments_to_check():
    assert len(FRAGMENTS) >= 3, [b.name for b in FRAGMENTS]


def _mutated(block: Block, old: str, new: str) -> Block:
    assert old in block.source, (old, block.source)
    return Block(block.path, block.line, block.source.replace(old, new, 1))


def _copy_fragment() -> Block:
    found = [b for b in FRAGMENTS if "ac.cp_async(" in b.source]
    assert found, "no fragment calls ac.cp_async"
    return found[0]


# what the check must refuse: a mutation of the copy fragment, the error and its words
REFUSED = [
    # numba-cuda resolves a module's attribute with getattr while typing
    pytest.param("ac.cp_async(", "ac.cp_asynk(", AttributeError,
                 "module 'numba_asynccopy' has no attribute 'cp_asynk'", id="misspelled-intrinsic"),
    pytest.param(", 16)", ", 16, cahce='cg')", TypingError, "cahce", id="wrong-keyword"),
    pytest.param(", 16)", ", 12)", TypingError, "chunk_bytes", id="wrong-chunk-size"),
    pytest.param("ntiles", "n_tiles", NameError, "the fragment uses n_tiles, which neither it nor",
                 id="undefined-name"),
]


@pytest.mark.parametrize("old,new,error,words", REFUSED)
def test_the_fragment_check_fails_on_a_broken_fragment(old, new, error, words):
    bad = _mutated(_copy_fragment(), old, new)
    with pytest.raises(error, match=words):
        compile_fragment(bad)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_block_of_the_page_runs_in_the_simulator(page):
    want = [b.name for b in blocks(page) if b.kind == "run"]
    results = run_page(page, sim=True)
    assert [r["block"] for r in results] == want  # each ran, in order
    failed = [f"{r['block']}:\n{r['error']}" for r in results if r["error"]]
    assert not failed, "\n".join(failed)
