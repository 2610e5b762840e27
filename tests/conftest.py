"""Shared test helpers: GPU detection, PTX compilation, subprocess runs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _have_gpu() -> bool:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return False
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:
        return False


HAVE_GPU = _have_gpu()


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run `make gpu-test` on the device machine)")
    for item in items:
        if "gpu" in item.keywords and not HAVE_GPU:
            item.add_marker(skip)


def run_python(code: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run a snippet in a fresh interpreter (for kernels that trap or hang)."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in full_env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=timeout, env=full_env,
    )


def pytest_terminal_summary(terminalreporter):
    """Show that the toolchain tests ran (CI has no GPU but must assemble)."""
    stats = terminalreporter.stats
    words = ("ptxas", "nvdisasm", "sass", "ldgsts")

    def count(kind):
        return sum(1 for r in stats.get(kind, [])
                   if getattr(r, "when", "call") == "call" and any(w in r.nodeid.lower() for w in words))

    if count("passed") or count("failed") or count("skipped"):
        from numba_asynccopy import toolchain

        terminalreporter.write_line(
            f"toolchain tests (ptxas/nvdisasm in their names): {count('passed')} passed, "
            f"{count('failed')} failed, {count('skipped')} skipped; "
            f"ptxas={toolchain.find_tool('ptxas')} nvdisasm={toolchain.find_tool('nvdisasm')}")
