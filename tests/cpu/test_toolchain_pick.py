"""Which ptxas and nvdisasm the toolchain picks (fake tools, no toolkit
needed): the cu12 flavour has no nvdisasm beside its ptxas (CUDA 12 has no
nvdisasm wheel), so one of the same or a newer release is taken."""

from __future__ import annotations

from pathlib import Path

import pytest

from numba_asynccopy import toolchain


def fake_tool(folder: Path, name: str, release: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / name
    tool.write_text("#!/bin/sh\n"
                    f"case \"$1\" in --version) echo 'Cuda compilation tools, release {release}, V{release}.0';"
                    " exit 0;; esac\nexit 0\n")
    tool.chmod(0o755)
    return tool


@pytest.fixture
def tools(monkeypatch, tmp_path):
    found: dict[str, list[Path]] = {}
    monkeypatch.setattr(toolchain, "_candidates", lambda name: found.get(name, []))
    monkeypatch.setattr(toolchain, "nvvm_release", lambda: ((8, 8), "12.9"))
    for fn in (toolchain.find_tool, toolchain._accepts):
        fn.cache_clear()
    yield found, tmp_path
    for fn in (toolchain.find_tool, toolchain._accepts):
        fn.cache_clear()


def test_nvdisasm_beside_ptxas_wins(tools):
    found, tmp = tools
    ptxas = fake_tool(tmp / "cuda_nvcc" / "bin", "ptxas", "12.9")
    found["ptxas"] = [ptxas]
    found["nvdisasm"] = [fake_tool(tmp / "cu13" / "bin", "nvdisasm", "13.5"),
                         fake_tool(tmp / "cuda_nvcc" / "bin", "nvdisasm", "12.9")]
    assert toolchain.find_tool("nvdisasm") == tmp / "cuda_nvcc" / "bin" / "nvdisasm"


def test_nvdisasm_of_an_older_release_is_passed_over(tools):
    found, tmp = tools
    found["ptxas"] = [fake_tool(tmp / "cuda_nvcc" / "bin", "ptxas", "12.9")]
    old = fake_tool(tmp / "old" / "bin", "nvdisasm", "12.0")
    new = fake_tool(tmp / "cu13" / "bin", "nvdisasm", "13.5")
    found["nvdisasm"] = [old, new]
    assert toolchain.find_tool("nvdisasm") == new
    # only an older one: it is still better than none
    toolchain.find_tool.cache_clear()
    found["nvdisasm"] = [old]
    assert toolchain.find_tool("nvdisasm") == old


def test_missing_ptxas_names_the_cu12_wheel(tools):
    found, tmp = tools
    assert toolchain.find_tool("ptxas") is None
    why = toolchain.missing_reason("ptxas")
    assert "no ptxas that reads PTX ISA 8.8 (NVVM is CUDA 12.9)" in why
    assert "pip install 'nvidia-cuda-nvcc-cu12==12.9.*' (or numba-asynccopy[cu12]" in why
    assert "pip install 'nvidia-cuda-nvdisasm==13.*'" in toolchain.missing_reason("nvdisasm")


# --- a missing toolchain: a failure where required (make test, CI), else a skip ---


def test_a_missing_tool_fails_where_required_and_skips_elsewhere(monkeypatch):
    from .. import conftest

    err = toolchain.ToolMissing("ptxas not found: no ptxas that reads PTX ISA 9.1")
    monkeypatch.setattr(conftest, "REQUIRE_TOOLCHAIN", True)
    with pytest.raises(pytest.fail.Exception, match="toolchain missing: ptxas not found: .*"
                       "NUMBA_ASYNCCOPY_REQUIRE_TOOLCHAIN=1 requires it"):
        conftest.tool_missing(err)
    monkeypatch.setattr(conftest, "REQUIRE_TOOLCHAIN", False)
    with pytest.raises(pytest.skip.Exception, match="^toolchain missing: ptxas not found: "):
        conftest.tool_missing(err)


def test_no_test_turns_a_missing_tool_into_a_plain_skip():
    # a ToolMissing goes through tool_missing (a failure where required) or
    # the helpers of tests/cpu/helpers.py, never straight to pytest.skip
    import re

    from ..conftest import ROOT

    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        text = path.read_text()
        for m in re.finditer(r"except toolchain\.ToolMissing[^:]*:\n(?P<body>(?:[ \t]+.*\n)+)", text):
            if "pytest.skip" in m.group("body"):
                found.append(f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}")
    assert not found, found


def test_make_test_requires_the_toolchain():
    # the CPU layer of `make test` (so CI's) and of `make test-cpu` (so
    # test-cu12's), as make would run them (-n: print only; STAMP= leaves
    # out the venv's set-up)
    import shutil
    import subprocess

    from ..conftest import ROOT

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    for target in ("test", "test-cpu"):
        lines = subprocess.run(["make", "-s", "-n", "-C", str(ROOT), target, "STAMP="],
                               capture_output=True, text=True, check=True).stdout.splitlines()
        cpu = [line for line in lines if "pytest" in line and "CUDASIM" not in line]
        assert cpu and all(line.startswith("NUMBA_ASYNCCOPY_REQUIRE_TOOLCHAIN=1 ") for line in cpu), (
            target, lines)


def test_assemble_and_disassemble_count_their_runs(tools):
    found, tmp = tools
    found["ptxas"] = [fake_tool(tmp / "cu13" / "bin", "ptxas", "13.0")]
    found["nvdisasm"] = [fake_tool(tmp / "cu13" / "bin", "nvdisasm", "13.0")]
    before = dict(toolchain.runs)
    with pytest.raises(FileNotFoundError):  # the fake ptxas writes no cubin
        toolchain.assemble(".version 8.8\n.target sm_90\n")
    toolchain.disassemble(b"")
    assert toolchain.runs["ptxas"] == before.get("ptxas", 0) + 1
    assert toolchain.runs["nvdisasm"] == before.get("nvdisasm", 0) + 1
