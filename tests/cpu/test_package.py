"""The package as a whole: the forms table, the README, the demo."""

from __future__ import annotations

import inspect
import re
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
        assert row.min_sm in (75, 80, 90), row
        assert row.min_ptx.count(".") == 1, row
        for api in row.apis:
            fn = getattr(ac, api)
            assert api in ac.__all__
            doc = inspect.getdoc(fn) or ""
            assert re.search(r"Example[^\n]*::", doc), f"{api} has no docstring example"


def test_every_public_function_has_a_docstring_with_an_example():
    for name in ac.__all__:
        obj = getattr(ac, name)
        if callable(obj) and not isinstance(obj, type):
            assert "Example" in (inspect.getdoc(obj) or ""), name


def test_readme_feature_table_is_generated_from_the_forms_table():
    # the table lives in the docs (the Makefile's FEATURE_TABLE_PAGE)
    readme = (ROOT / "docs" / "reference" / "features.md").read_text()
    begin, end = "<!-- feature-table:begin -->\n", "\n<!-- feature-table:end -->"
    table = readme.split(begin)[1].split(end)[0]
    assert table == ac.feature_table()


def test_readme_names_the_two_commands_and_ci_calls_the_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_flavours_follow_numba_cudas_extras_and_ci_tests_both():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    # the base install chooses no toolkit; each flavour brings numba-cuda's own extra
    assert [d for d in project["dependencies"] if d.startswith("numba-cuda")] == ["numba-cuda>=0.30.4,<0.31"]
    assert extras["cu12"][0].startswith("numba-cuda[cu12]")
    assert extras["cu13"][0].startswith("numba-cuda[cu13]")
    # cu13's NVVM-only toolkit gets ptxas and nvdisasm of the same cuda-toolkit release
    assert "cuda-toolkit[nvcc,nvdisasm]==13.*" in extras["cu13"]
    assert extras["test"] == ["numba-asynccopy[cu13,testing]"]  # the development default is cu13
    assert not any("cu1" in d for d in extras["testing"])
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test\n" in ci and "make test-cu12" in ci
    make = (ROOT / "Makefile").read_text()

    def recipe(target: str) -> str:
        return make.split(f"\n{target}:")[1].split("\n\n")[0]

    # test-cu12 is the CPU layer in the cu12 flavour's venv
    assert "FLAVOUR=cu12 test-cpu" in recipe("test-cu12")
    assert "tests/cpu" in recipe("test-cpu")
    assert ".venv-cu12" in make.split("ifeq ($(FLAVOUR),cu12)")[1].split("else")[0] or \
        ".venv-cu12" in make.split("else ifeq ($(FLAVOUR),cu12)")[1].split("else")[0]


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", reason="real target only")
def test_demo_runs_without_traceback():
    from tests.conftest import HAVE_GPU, plain_demo

    rc, out = plain_demo()
    assert rc == 0, out
    assert "Traceback" not in out

    if HAVE_GPU:
        assert out.count("matches numpy") == 6 and "GB/s" in out, out  # 5 + the cluster copy
    else:
        assert "no GPU found" in out
        assert "No GPU was found: kernels were compiled and assembled, not run." in out
        # 6 kernels x sm_80/sm_90, and the cluster copy for sm_90 only
        assert out.count("ptxas ok; SASS") == 13, out
        assert "LDGSTS.E.BYPASS.128 x4" in out
        assert "UBLKCP.S.S x1" in out  # the cluster bulk copy, shared::cta -> shared::cluster


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", reason="real target only")
def test_demo_without_a_matching_ptxas_lists_instructions_and_says_what_to_install(tmp_path):
    """A plain install has NVVM but maybe only an older ptxas (one that
    refuses NVVM's PTX ISA, with its reason on stdout): the demo still lists
    the instructions, says which ptxas it needs, and exits 0."""
    fake = tmp_path / "ptxas"
    fake.write_text("#!/bin/sh\n"
                    "case \"$1\" in --version) echo 'Cuda compilation tools, release 12.0, V12.0.0';"
                    " exit 0;; esac\n"
                    "echo \"ptxas fatal   : Unsupported .version; current version is '8.0'\"; exit 255\n")
    fake.chmod(0o755)
    code = ("import sys, numba_asynccopy.toolchain as t\n"
            f"t._candidates = lambda name: [__import__('pathlib').Path({str(fake)!r})]\n"
            "import numba_asynccopy.__main__ as m\n"
            "sys.exit(m.main())\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "cp.async.cg.shared.global x12" in out and "ptxas ok" not in out, out
    assert "no ptxas that reads PTX ISA" in out and "(CUDA 12.0)" in out, out
    # the ptxas wheel of NVVM's release (CUDA 12's has a -cu12 name)
    assert re.search(r"pip install 'nvidia-cuda-nvcc(-cu12)?==\d+\.\d+\.\*'", out), out
    assert "No GPU was found: kernels were compiled, not run." in out, out


def test_tool_failures_carry_the_whole_message(tmp_path):
    from numba_asynccopy import toolchain

    fake = tmp_path / "tool"
    fake.write_text("#!/bin/sh\necho 'line one on stdout'\necho 'line two on stderr' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(RuntimeError) as e:
        toolchain._run([str(fake)])
    assert str(e.value) == "tool failed (exit 3):\nline one on stdout\nline two on stderr"
