"""ptxas and nvdisasm from the ``nvidia-cuda-nvcc``/``nvidia-cuda-nvdisasm``
wheels (or PATH), for assembling generated PTX and reading machine code on
machines without a GPU."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path


class ToolMissing(RuntimeError):
    pass


def find_tool(name: str) -> Path | None:
    """The tool from the nvidia wheels (preferred: it matches NVVM), else PATH."""
    try:
        import nvidia

        for base in nvidia.__path__:
            for sub in ("cu13", "cuda_nvcc", "cuda_nvdisasm"):
                cand = Path(base) / sub / "bin" / name
                if cand.is_file() and os.access(cand, os.X_OK):
                    return cand
    except ImportError:
        pass
    found = shutil.which(name)
    return Path(found) if found else None


def _run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"{Path(cmd[0]).name} failed:\n{proc.stderr.strip()}")
    return proc.stdout + proc.stderr


def ptx_arch(ptx: str) -> str:
    m = re.search(r"^\s*\.target\s+(sm_\w+)", ptx, re.M)
    if not m:
        raise ValueError("PTX has no .target line")
    return m.group(1)


def assemble(ptx: str, arch: str | None = None, verbose: bool = False) -> tuple[bytes, str]:
    """Assemble PTX with ptxas; returns (cubin bytes, ptxas -v output)."""
    tool = find_tool("ptxas")
    if tool is None:
        raise ToolMissing("ptxas not found (pip install nvidia-cuda-nvcc)")
    arch = arch or ptx_arch(ptx)
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        src.write_text(ptx)
        log = _run([str(tool), f"-arch={arch}", *(["-v"] if verbose else []), str(src), "-o", str(out)])
        return out.read_bytes(), log


def disassemble(cubin: bytes) -> str:
    """SASS text of a cubin (nvdisasm)."""
    tool = find_tool("nvdisasm")
    if tool is None:
        raise ToolMissing("nvdisasm not found (pip install nvidia-cuda-nvdisasm)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        return _run([str(tool), str(path)])


def sass_opcodes(sass: str) -> list[str]:
    """Opcodes (first word of each instruction, predicate stripped)."""
    ops = []
    for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass):
        ops.append(m.group(1))
    return ops
