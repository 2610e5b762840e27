"""What editors, type checkers, help() and the docs see of the public API:
device functions show the call a kernel writes (no ``typingctx``,
keyword-only markers kept), on a real target and in the simulator; the
stub (``__init__.pyi``) is current and the package is marked typed; every
public name has a docstring with an example."""

from __future__ import annotations

import ast
import inspect
import json
import os
import pydoc
import re
import subprocess
import sys
import tomllib

import pytest

import numba_asynccopy as ac
from numba_asynccopy import _stubs
from tests.docs.docblocks import ROOT

DEVICE = [*ac._public_apis(), *ac._VECTOR_API, *ac._PRAGMA_API]


def test_device_functions_show_the_call_a_kernel_writes():
    assert str(inspect.signature(ac.cp_async)) == (
        "(dst, src, chunk_bytes, *, cache=None, prefetch=None, src_size=None, ignore_src=False, "
        "pred=True, cache_policy=None, scope='thread')")
    assert str(inspect.signature(ac.mbarrier_init)) == "(bar, count)"
    assert str(inspect.signature(ac.pragma_nounroll)) == "()"
    for name in DEVICE:
        params = inspect.signature(getattr(ac, name)).parameters
        assert "typingctx" not in params, name
    for name in ac.pipeline.__all__:
        obj = getattr(ac.pipeline, name)
        if not isinstance(obj, type):
            assert "typingctx" not in inspect.signature(obj).parameters, name


def test_keyword_only_markers_match_the_documented_calls():
    # the README/docs spell these keyword-only; the signature says so too
    kinds = {p.name: p.kind for p in inspect.signature(ac.cp_async).parameters.values()}
    for kw in ("cache", "prefetch", "src_size", "ignore_src", "pred", "cache_policy", "scope"):
        assert kinds[kw] is inspect.Parameter.KEYWORD_ONLY, kw
    kinds = {p.name: p.kind for p in inspect.signature(ac.cp_async_bulk_g2s).parameters.values()}
    assert kinds["multicast_mask"] is kinds["cache_policy"] is inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize("name", ["cp_async", "mbarrier_wait_parity", "load4", "pragma_nounroll"])
def test_help_shows_the_signature(name):
    text = pydoc.render_doc(getattr(ac, name), renderer=pydoc.plaintext)
    assert f"\n{name}{inspect.signature(getattr(ac, name))}\n" in text, text[:400]
    assert "typingctx" not in text


def test_the_simulator_twins_show_the_same_signatures():
    code = ("import inspect, json, numba_asynccopy as ac\n"
            f"names = {DEVICE!r}\n"
            "print(json.dumps({n: str(inspect.signature(getattr(ac, n))) for n in names}))\n")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    sim = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sim == {n: str(inspect.signature(getattr(ac, n))) for n in DEVICE}


def test_the_stub_is_current_and_declares_every_public_name():
    path = ROOT / "numba_asynccopy" / "__init__.pyi"
    assert path.read_text() == _stubs.stub_text(), "stale stub: run `python -m numba_asynccopy._stubs`"
    tree = ast.parse(path.read_text())
    declared = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            declared.update({a.asname or a.name: node for a in node.names})
    assert set(ac.__all__) <= set(declared), set(ac.__all__) - set(declared)
    for name in DEVICE:  # the stub's parameters are the signature's
        fn = declared[name]
        want = inspect.signature(getattr(ac, name)).parameters.values()
        P = inspect.Parameter
        assert [a.arg for a in fn.args.args] == [p.name for p in want if p.kind is P.POSITIONAL_OR_KEYWORD]
        assert [a.arg for a in fn.args.kwonlyargs] == [p.name for p in want if p.kind is P.KEYWORD_ONLY]
    literal = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "__all__")
    assert ast.literal_eval(literal.value) == ac.__all__


def test_the_package_is_marked_typed_and_ships_the_stub():
    assert (ROOT / "numba_asynccopy" / "py.typed").is_file()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert {"py.typed", "*.pyi"} <= set(data["numba_asynccopy"])


def test_every_public_name_has_a_docstring_with_an_example():
    missing = []
    for name in ac.__all__:
        if name == "FORMS":  # a dict: documented in the reference ("the registry of PTX forms")
            continue
        doc = inspect.getdoc(getattr(ac, name)) or ""
        if not re.search(r"Example[^\n]*::|>>> ", doc):
            missing.append(name)
    assert not missing, f"public names without a docstring example: {missing}"
