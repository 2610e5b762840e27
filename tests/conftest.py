"""Shared test helpers: GPU detection, the simulator switch, subprocess runs.

The GPU functional tests (``tests/gpu``, marked ``gpu``) run on a GPU and,
under ``NUMBA_ENABLE_CUDASIM=1``, in the CUDA simulator; there only
``skip_on_sim(reason)`` skips one.  Without the simulator, ``gpu`` tests skip
where there is no GPU."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


SIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"

# a user's project, run by tests/cpu/test_pytest_plugin.py and
# tests/gpu/test_pytest_plugin_gpu.py in its own pytest process
collect_ignore = ["user_project"]

# the package's own pytest plugin (tests/test_plugin_pairs.py uses it):
# its entry point loads it where the package is installed; this loads it
# where the tree runs from PYTHONPATH
pytest_plugins = ["numba_asynccopy_pytest"]


def skip_on_sim(reason: str) -> pytest.MarkDecorator:
    """Mark what cannot run in the CUDA simulator, with the reason: a test
    (``@skip_on_sim("...")``), a parametrization
    (``pytest.param(..., marks=skip_on_sim("..."))``) or a module
    (``pytestmark = [pytest.mark.gpu, skip_on_sim("...")]``).  Under the
    simulator it skips with that reason; elsewhere it does nothing."""
    return pytest.mark.skip_on_sim(reason)


# why a GPU test cannot run in the simulator (the groups `pytest -ra` lists)
SIM_TRAPS = ("needs a real GPU trap in a subprocess (checked mode's trap message printed by the device); "
             "the simulator raises the same rules as SimulatorError (tests/sim/test_sim_rules.py, "
             "test_sim_bulk.py)")
SIM_NVCC = "builds the CUDA C++ twins with nvcc and launches them on a GPU"
SIM_DEVICE = "reads device attributes or occupancy of a real GPU (the simulator's device has none)"


def _have_gpu() -> bool:
    if SIM:
        return False
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:
        return False


HAVE_GPU = _have_gpu()

if SIM and os.environ.get("DIFFERENTIAL_RECORD"):
    # the differential census records every simulated launch (tests/differential_kernels.py)
    from tests.differential_kernels import install_if_asked

    install_if_asked()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "skip_on_sim(reason): cannot run in the CUDA simulator (skipped there with the reason)")


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run `make gpu-test` on a machine with a CUDA GPU)")
    for item in items:
        if SIM:
            # in the simulator `gpu` tests run; only skip_on_sim skips
            mark = item.get_closest_marker("skip_on_sim")
            if mark is not None:
                reason = mark.args[0] if mark.args else mark.kwargs.get("reason", "")
                item.add_marker(pytest.mark.skip(reason=f"not in the simulator: {reason}"))
        elif "gpu" in item.keywords and not HAVE_GPU:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _worst_schedule():
    """Under the simulator every test (tests/sim, tests/gpu) starts in the
    default, worst-case schedule: a missing wait reads poison."""
    if not SIM:
        yield
        return
    import numba_asynccopy as ac

    with ac.sim.schedule("worst"):
        yield


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


@functools.lru_cache(maxsize=None)
def plain_demo() -> tuple[int, str]:
    """(exit status, stdout + stderr) of ``python -m numba_asynccopy`` on the
    real target (no simulator), run once per process: tests/cpu/test_package.py
    checks its listing and tests/docs/test_demo.py its closing words
    (``SHARED_WORKER`` runs the two files in one worker)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run([sys.executable, "-m", "numba_asynccopy"], capture_output=True,
                          text=True, timeout=600, env=env, cwd=ROOT)
    return proc.returncode, proc.stdout + proc.stderr


#: ``make test`` and CI set this: there a missing or mismatched ptxas/nvdisasm
#: fails the tests that need it (``tool_missing``) instead of skipping them.
REQUIRE_TOOLCHAIN = os.environ.get("NUMBA_ASYNCCOPY_REQUIRE_TOOLCHAIN") == "1"
TOOL_MISSING = "toolchain missing: "


def tool_missing(err: Exception):
    """What a test does when ``toolchain`` raises ToolMissing: fail where the
    toolchain is required (NUMBA_ASYNCCOPY_REQUIRE_TOOLCHAIN=1: ``make
    test``, CI), otherwise skip with the reason (what to install)."""
    if REQUIRE_TOOLCHAIN:
        pytest.fail(f"{TOOL_MISSING}{err} (NUMBA_ASYNCCOPY_REQUIRE_TOOLCHAIN=1 requires it)",
                    pytrace=False)
    pytest.skip(f"{TOOL_MISSING}{err}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    from numba_asynccopy import toolchain

    item._toolchain_start = dict(toolchain.runs)
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each test's report carries how many times its setup and call ran
    ptxas and nvdisasm (``toolchain.runs``; it travels with the report
    under pytest-xdist)."""
    outcome = yield
    if call.when != "call":
        return
    from numba_asynccopy import toolchain

    start = getattr(item, "_toolchain_start", {})
    ran = {tool: n - start.get(tool, 0) for tool, n in toolchain.runs.items() if n > start.get(tool, 0)}
    rep = outcome.get_result()
    rep.user_properties = [*rep.user_properties, ("toolchain_runs", ran)]


def pytest_terminal_summary(terminalreporter):
    """Show that the toolchain really ran (CI has no GPU but must assemble):
    the tests whose setup or call ran ptxas / nvdisasm (counted by the
    toolchain's functions, not by test names), and those the toolchain
    skipped or failed."""
    stats = terminalreporter.stats
    ran = {"ptxas": [0, 0], "nvdisasm": [0, 0]}  # [tests, runs]
    missing = {"skipped": 0, "failed": 0}
    for kind in ("passed", "failed", "skipped"):
        for r in stats.get(kind, []):
            if kind != "skipped" and getattr(r, "when", "call") != "call":
                continue
            if kind == "skipped":
                text = str(r.longrepr[2] if isinstance(r.longrepr, tuple) else r.longrepr)
                missing["skipped"] += TOOL_MISSING in text
                continue
            if kind == "failed" and TOOL_MISSING in str(r.longrepr):
                missing["failed"] += 1
            if kind != "passed":
                continue
            for key, value in getattr(r, "user_properties", ()):
                if key == "toolchain_runs":
                    for tool, n in value.items():
                        if tool in ran:
                            ran[tool][0] += 1
                            ran[tool][1] += n
    if not (ran["ptxas"][0] or ran["nvdisasm"][0] or missing["skipped"] or missing["failed"]):
        return
    from numba_asynccopy import toolchain

    terminalreporter.write_line(
        f"toolchain: {ran['ptxas'][0]} passed tests ran ptxas ({ran['ptxas'][1]} assemblies), "
        f"{ran['nvdisasm'][0]} ran nvdisasm ({ran['nvdisasm'][1]} disassemblies); "
        f"toolchain missing: {missing['skipped']} skipped, {missing['failed']} failed "
        f"({'required' if REQUIRE_TOOLCHAIN else 'not required'}: NUMBA_ASYNCCOPY_REQUIRE_TOOLCHAIN); "
        f"ptxas={toolchain.find_tool('ptxas')} nvdisasm={toolchain.find_tool('nvdisasm')}")


#: test files that share in-process work and so run in one pytest-xdist
#: worker under ``--dist loadfile``: the differential check reads the GPU
#: compiles of the adversarial suite (the same programs), instead of
#: compiling every one again; the demo's two tests read one run of it
SHARED_WORKER = {
    "tests/cpu/test_differential.py": "tests/cpu/test_adversarial_device.py",
    "tests/docs/test_demo.py": "tests/cpu/test_package.py",  # conftest.plain_demo
}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``, with the files of ``SHARED_WORKER`` sent to the
    worker of the file they share work with."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedFileScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return SHARED_WORKER.get(scope, scope)

    return SharedFileScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """With the adversarial suite's first test, start the differential
    check's simulator run of every case where that check is selected: it
    runs while this worker compiles the suite's programs, which the check
    reads afterwards (``SHARED_WORKER``)."""
    session = item.session
    if item.path.name != "test_adversarial_device.py" or getattr(session, "_sim_run_started", False):
        return
    session._sim_run_started = True
    if any(i.name == "test_every_case_agrees" for i in session.items):
        from tests.cpu import test_differential

        test_differential.start_simulator_run()


def pytest_sessionfinish(session):
    differential = sys.modules.get("tests.cpu.test_differential")
    if differential is not None:
        differential.stop_simulator_run()
