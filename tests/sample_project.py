"""Run the sample user project (tests/user_project) in its own pytest
process, with the installed plugin, and read its results (JUnit XML)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "tests" / "user_project"
PLUGIN = "numba_asynccopy_pytest"


def entry_point_installed() -> bool:
    """True when the installed distribution declares the plugin's entry
    point (an install of this tree); a checkout on PYTHONPATH has none."""
    return any(ep.name == PLUGIN for ep in metadata.entry_points(group="pytest11"))


def run_pytest(where: Path, *args: str, timeout: float = 900, env: dict | None = None):
    """``python -m pytest`` in ``where`` with this tree's package first on
    the path; the plugin comes from its entry point, or ``-p`` where this
    environment's install predates it.  Returns (CompletedProcess, results:
    {test name: (outcome, message)})."""
    full = {k: v for k, v in os.environ.items()
            if not k.startswith(("PYTEST_", "NUMBA_ASYNCCOPY_")) and k != "NUMBA_ENABLE_CUDASIM"}
    full["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    full["PYTHONDONTWRITEBYTECODE"] = "1"
    full.update(env or {})
    xml = where / "results.xml"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", f"--junitxml={xml}"]
    if not entry_point_installed():
        cmd += ["-p", PLUGIN]
    proc = subprocess.run(cmd + list(args), cwd=where, capture_output=True, text=True,
                          timeout=timeout, env=full)
    results = {}
    if xml.exists():
        for case in ET.parse(xml).getroot().iter("testcase"):
            outcome, message = "passed", ""
            for tag in ("failure", "error", "skipped"):
                el = case.find(tag)
                if el is not None:
                    outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                    message = (el.get("message") or "") + "\n" + (el.text or "")
                    break
            results[case.get("name")] = (outcome, message)
    return proc, results


def run_sample_project(tmp: Path, *args: str, **kw):
    """Copy tests/user_project to ``tmp`` and run it (see :func:`run_pytest`)."""
    dest = tmp / "user_project"
    shutil.copytree(PROJECT, dest)
    return run_pytest(dest, *args, **kw)


BUG_WORDS = "numba_asynccopy checked mode: mbarrier_init: `bar` is not in shared memory [block ("
