"""Build the CUDA C++ twins (``twins.cu``) with nvcc and call them via ctypes.

The library is built at benchmark time on the machine that runs it (so it
matches that machine's driver and libraries), for the GPU's own target
(``sm_90a`` on an H200).  Launchers take device pointers (integers) and
return a cudaError_t; a non-zero one raises :class:`TwinError`.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).with_name("twins.cu")


class TwinError(RuntimeError):
    pass


def find_nvcc() -> str | None:
    """``$NVCC``, else ``nvcc`` on PATH, else /usr/local/cuda/bin/nvcc."""
    for cand in (os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return cand
    return None


def gencode(cc: tuple[int, int]) -> str:
    """nvcc target for a compute capability: the arch-specific one on Hopper."""
    sm = f"{cc[0]}{cc[1]}"
    suffix = "a" if cc[0] == 9 else ""
    return f"-gencode=arch=compute_{sm}{suffix},code=sm_{sm}{suffix}"


class Build:
    """An nvcc build started in the background (it overlaps Numba's compiles)."""

    def __init__(self, outdir: Path, cc: tuple[int, int]):
        self.outdir = outdir
        self.so = outdir / "twins.so"
        self.log_path = outdir / "twins-build.log"
        self.error: str | None = None
        self.proc: subprocess.Popen | None = None
        nvcc = find_nvcc()
        if nvcc is None:
            self.error = "nvcc not found ($NVCC, PATH, /usr/local/cuda/bin)"
            return
        outdir.mkdir(parents=True, exist_ok=True)
        self.cmd = [nvcc, "-O3", "-std=c++17", "--shared", "-Xcompiler", "-fPIC", "-lineinfo",
                    gencode(cc), "-Xptxas", "-v", "-o", str(self.so), str(SOURCE),
                    str(SOURCE.with_name("twins_bulk.cu")),  # bulk/TMA twins (suites_async)
                    str(SOURCE.with_name("twins_idioms.cu")),  # the idioms' originals (idioms.py)
                    str(SOURCE.with_name("twins_mma.cu")),  # the sm80 tensor-core GEMM (suites_mma)
                    str(SOURCE.with_name("twins_hgemm.cu")),  # the wgmma GEMM (suites_tc)
                    str(SOURCE.with_name("twins_conv.cu"))]  # the tensor-core conv2d (suites_conv)
        self.log = open(self.log_path, "w")
        self.log.write(" ".join(self.cmd) + "\n")
        self.log.flush()
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT)

    def library(self, timeout: float = 300) -> "Twins":
        if self.error:
            raise TwinError(self.error)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.error = f"nvcc took more than {timeout:.0f} s"
            raise TwinError(self.error) from None
        finally:
            self.log.close()
        if rc:
            tail = self.log_path.read_text().strip().splitlines()[-5:]
            self.error = f"nvcc failed (rc {rc}): " + " | ".join(tail)
            raise TwinError(self.error)
        self._dump_sass()
        return Twins(self.so)

    def _dump_sass(self) -> None:
        """The twins' SASS under ``<out>/code/twins.sass`` (diagnostics only)."""
        tool = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
        try:
            sass = subprocess.run([tool, "--dump-sass", str(self.so)], capture_output=True,
                                  text=True, timeout=120).stdout
            (self.outdir / "code").mkdir(exist_ok=True)
            (self.outdir / "code" / "twins.sass").write_text(sass)
        except Exception:
            pass


class Twins:
    """The loaded library; each method enqueues one launch."""

    def __init__(self, so: Path):
        lib = ctypes.CDLL(str(so))
        P, I, LL, F = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong, ctypes.c_float
        lib.twin_staged_copy.argtypes = [P, P, LL, I, I, I, I, I]
        lib.twin_sgemm.argtypes = [P, P, P, I, I, I, I]
        lib.twin_stencil_async.argtypes = [P, P, I, I, F, F]
        lib.twin_stencil_plain.argtypes = [P, P, I, I, F, F]
        lib.twin_stencil_plain_norestrict.argtypes = [P, P, I, I, F, F]
        lib.twin_exchange_dsmem.argtypes = [P, P, I, I, I]
        for f in (lib.twin_staged_copy, lib.twin_sgemm, lib.twin_stencil_async, lib.twin_stencil_plain,
                  lib.twin_stencil_plain_norestrict, lib.twin_exchange_dsmem):
            f.restype = I
        self.lib = lib
        self.path = so

    @staticmethod
    def _check(name: str, rc: int) -> None:
        if rc == -1:
            raise TwinError(f"{name}: configuration not instantiated in twins.cu")
        if rc:
            raise TwinError(f"{name}: CUDA error {rc}")

    def staged_copy(self, src: int, dst: int, n: int, stages: int, block: int, per_thread: int,
                    grid: int, run: int = 0) -> None:
        self._check("twin_staged_copy",
                    self.lib.twin_staged_copy(src, dst, n, stages, block, per_thread, grid, run))

    def sgemm(self, at: int, b: int, c: int, M: int, N: int, K: int, stages: int) -> None:
        self._check("twin_sgemm", self.lib.twin_sgemm(at, b, c, M, N, K, stages))

    def stencil_async(self, u: int, out: int, H: int, W: int, a: float, b: float) -> None:
        self._check("twin_stencil_async", self.lib.twin_stencil_async(u, out, H, W, a, b))

    def stencil_plain(self, u: int, out: int, H: int, W: int, a: float, b: float) -> None:
        self._check("twin_stencil_plain", self.lib.twin_stencil_plain(u, out, H, W, a, b))

    def stencil_plain_norestrict(self, u: int, out: int, H: int, W: int, a: float, b: float) -> None:
        self._check("twin_stencil_plain_norestrict",
                    self.lib.twin_stencil_plain_norestrict(u, out, H, W, a, b))

    def exchange_dsmem(self, a: int, out: int, blocks: int, rounds: int, cluster: int) -> None:
        self._check("twin_exchange_dsmem",
                    self.lib.twin_exchange_dsmem(a, out, blocks, rounds, cluster))


def ptr(devarray) -> int:
    """Device pointer of anything with ``__cuda_array_interface__``."""
    return int(devarray.__cuda_array_interface__["data"][0])
