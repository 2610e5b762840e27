"""ptxas and nvdisasm, for assembling generated PTX and reading machine code
on machines without a GPU.

NVVM (from numba-cuda's toolkit wheels) emits PTX of its own release's ISA,
which an older ptxas refuses.  ``find_tool`` therefore picks the first ptxas
that accepts that ISA (the ``nvidia-cuda-nvcc`` wheel of the same release
first, then CUDA_HOME, PATH and /usr/local/cuda*); when none does,
:class:`ToolMissing` says which release is needed and how to install it."""

from __future__ import annotations

import collections
import functools
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ._forms import nvvm_ptx_isa, nvvm_release_name


class ToolMissing(RuntimeError):
    pass


#: How many times this process ran each tool (``ptxas``, ``nvdisasm``)
#: through :func:`assemble` and :func:`disassemble`: the test suite's summary
#: counts the tests that really assembled or disassembled from it.
runs: collections.Counter = collections.Counter()


def _candidates(name: str) -> list[Path]:
    """Every ``name`` here, best first: the nvidia wheels (their release
    matches NVVM's when installed with a flavour, ``[cu12]`` or ``[cu13]``), CUDA_HOME / CUDA_PATH,
    PATH, then /usr/local/cuda*."""
    found: list[Path] = []
    try:
        import nvidia

        for base in nvidia.__path__:
            for sub in ("cu13", "cu12", "cuda_nvcc", "cuda_nvdisasm"):
                found.append(Path(base) / sub / "bin" / name)
    except ImportError:
        pass
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            found.append(Path(os.environ[var]) / "bin" / name)
    on_path = shutil.which(name)
    if on_path:
        found.append(Path(on_path))
    found += sorted(Path("/usr/local").glob(f"cuda*/bin/{name}"), reverse=True)
    seen, out = set(), []
    for cand in found:
        if cand.is_file() and os.access(cand, os.X_OK) and cand.resolve() not in seen:
            seen.add(cand.resolve())
            out.append(cand)
    return out


@functools.lru_cache(maxsize=None)
def tool_release(tool: Path) -> str:
    """``13.5`` of ``ptxas --version`` (the CUDA release the tool belongs to)."""
    proc = subprocess.run([str(tool), "--version"], capture_output=True, text=True)
    m = re.search(r"release (\d+\.\d+)", proc.stdout + proc.stderr)
    return m.group(1) if m else "unknown"


def nvvm_release() -> tuple[tuple[int, int] | None, str]:
    """(PTX ISA, CUDA release) of the NVVM numba-cuda compiles with."""
    return nvvm_ptx_isa(), nvvm_release_name()


@functools.lru_cache(maxsize=None)
def _accepts(tool: Path, isa: tuple[int, int]) -> bool:
    """Whether this ptxas assembles PTX of ISA ``isa`` (tried on a tiny module)."""
    ptx = (f".version {isa[0]}.{isa[1]}\n.target sm_80\n.address_size 64\n"
           ".visible .entry k()\n{\n\tret;\n}\n")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx)
        proc = subprocess.run([str(tool), "-arch=sm_80", str(src), "-o", str(Path(tmp) / "k.cubin")],
                              capture_output=True, text=True)
    return proc.returncode == 0


@functools.lru_cache(maxsize=None)
def find_tool(name: str) -> Path | None:
    """The first ``name`` that can read what NVVM emits: for ptxas, one that
    accepts NVVM's PTX ISA; nvdisasm is taken from the same folder as that
    ptxas when there is one.  None when no candidate fits."""
    cands = _candidates(name)
    isa, _ = nvvm_release()
    if name == "ptxas":
        return next((c for c in cands if isa is None or _accepts(c, isa)), None)
    ptxas = find_tool("ptxas")
    if ptxas is not None:
        same = ptxas.parent / name
        if same.is_file() and os.access(same, os.X_OK):
            return same
        # no nvdisasm beside it (CUDA 12 has no nvdisasm wheel): one of the
        # same or a newer release reads that ptxas's cubins
        want = _release_key(tool_release(ptxas))
        newer = [c for c in cands if _release_key(tool_release(c)) >= want]
        if newer:
            return newer[0]
    return cands[0] if cands else None


def _release_key(release: str) -> tuple[int, ...]:
    """``12.9`` as (12, 9), for comparing releases; ``unknown`` sorts first."""
    return tuple(int(x) for x in release.split(".")) if release[:1].isdigit() else (0,)


def missing_reason(name: str) -> str:
    """What to install, and why, when ``find_tool(name)`` found nothing."""
    isa, release = nvvm_release()
    major = release.split(".")[0] if release[:1].isdigit() else None
    wheel = {"ptxas": "nvidia-cuda-nvcc", "nvdisasm": "nvidia-cuda-nvdisasm"}.get(name, name)
    pin = f"=={release}.*" if major else ""
    if major == "12":  # CUDA 12's ptxas wheel has a -cu12 name; it has no nvdisasm wheel
        wheel, pin = (wheel + "-cu12", pin) if name == "ptxas" else (wheel, "==13.*")
    tried = ", ".join(f"{c} (CUDA {tool_release(c)})" for c in _candidates(name)) or "none"
    need = f" that reads PTX ISA {isa[0]}.{isa[1]}" if isa and name == "ptxas" else ""
    return (f"{name} not found: no {name}{need} (NVVM is CUDA {release}); tried: {tried}. "
            f"Install the matching one: pip install '{wheel}{pin}'"
            + (f" (or numba-asynccopy[cu{major}], which brings it)" if major else ""))


def _run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        # ptxas reports on stdout, nvdisasm on stderr: keep both, whole
        out = "\n".join(x.strip() for x in (proc.stdout, proc.stderr) if x.strip())
        raise RuntimeError(f"{Path(cmd[0]).name} failed (exit {proc.returncode}):\n{out}")
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
        raise ToolMissing(missing_reason("ptxas"))
    arch = arch or ptx_arch(ptx)
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        src.write_text(ptx)
        runs["ptxas"] += 1
        log = _run([str(tool), f"-arch={arch}", *(["-v"] if verbose else []), str(src), "-o", str(out)])
        return out.read_bytes(), log


def disassemble(cubin: bytes) -> str:
    """SASS text of a cubin (nvdisasm)."""
    tool = find_tool("nvdisasm")
    if tool is None:
        raise ToolMissing(missing_reason("nvdisasm"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        runs["nvdisasm"] += 1
        return _run([str(tool), str(path)])


def sass_opcodes(sass: str) -> list[str]:
    """Opcodes (first word of each instruction, predicate stripped)."""
    ops = []
    for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass):
        ops.append(m.group(1))
    return ops
