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
