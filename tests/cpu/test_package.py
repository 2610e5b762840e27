"""The package as a whole: the forms table, the README, the demo."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import numba_asynccopy as ac
from numba_asynccopy._forms import FORMS

ROOT = Path(__file__).resolve().parents[2]


def test_every_form_names_an_exported_documented_api():
    for row in FORMS.values():
        assert row.min_sm in (80, 90), row
        assert row.min_ptx.count(".") == 1, row
        for api in row.apis:
            fn = getattr(ac, api)
            assert api in ac.__all__
            doc = inspect.getdoc(fn) or ""
            assert "Example::" in doc, f"{api} has no docstring example"


def test_every_public_function_has_a_docstring_with_an_example():
    for name in ac.__all__:
        obj = getattr(ac, name)
        if callable(obj) and not isinstance(obj, type):
            assert "Example" in (inspect.getdoc(obj) or ""), name


def test_readme_feature_table_is_generated_from_the_forms_table():
    readme = (ROOT / "README.md").read_text()
    begin, end = "<!-- feature-table:begin -->\n", "\n<!-- feature-table:end -->"
    table = readme.split(begin)[1].split(end)[0]
    assert table == ac.feature_table()


def test_readme_names_the_two_commands_and_ci_calls_the_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", reason="real target only")
def test_demo_runs_without_traceback():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "numba_asynccopy"], capture_output=True,
                          text=True, timeout=600, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Traceback" not in out
    from tests.conftest import HAVE_GPU

    if HAVE_GPU:
        assert out.count("matches numpy") == 5 and "GB/s" in out, out
    else:
        assert "no GPU found" in out
        assert "No GPU was found: kernels were compiled and assembled, not run." in out
        assert out.count("ptxas ok; SASS") == 12, out  # 6 kernels x sm_80/sm_90
        assert "LDGSTS.E.BYPASS.128 x4" in out
