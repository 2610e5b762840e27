"""The pytest plugin (numba_asynccopy_pytest), off the GPU: the sample user
project's simulator items pass and its GPU items skip with the reason, its
buggy kernel fails with the rule's words; item ids, options and their usage
errors; loading the plugin imports no Numba."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import numba_asynccopy as ac
import numba_asynccopy_pytest as plugin

from ..conftest import HAVE_GPU, ROOT
from ..sample_project import BUG_WORDS, run_pytest, run_sample_project

pytestmark = pytest.mark.skipif(HAVE_GPU, reason="the GPU layer runs the sample project "
                                "(tests/gpu/test_pytest_plugin_gpu.py)")


def test_the_sample_project_on_a_machine_without_a_gpu(tmp_path):
    proc, res = run_sample_project(tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out  # the buggy kernel fails
    for seed in (1, 2):
        assert res[f"test_scale_matches_numpy[sim-seed{seed}]"][0] == "passed", out
        outcome, msg = res[f"test_buggy_barrier_kernel[sim-seed{seed}]"]
        assert outcome == "failed", out
        assert "SimulatorError: " in msg.splitlines()[0] and BUG_WORDS in msg.splitlines()[0], msg
    assert res["test_the_bug_traps_with_its_rule[sim]"][0] == "passed", out
    for name in ("test_scale_matches_numpy[gpu]", "test_buggy_barrier_kernel[gpu]",
                 "test_the_bug_traps_with_its_rule[gpu]"):
        outcome, msg = res[name]
        assert outcome == "skipped" and "no CUDA GPU" in msg, (name, msg)
    for tool in ("memcheck", "racecheck", "synccheck"):
        outcome, msg = res[f"test_sanitizer_clean[{tool}]"]
        assert outcome == "skipped" and "compute-sanitizer needs a GPU: no CUDA GPU" in msg, msg
    assert len(res) == 11, sorted(res)


def write(tmp_path, body: str, ini: str = "") -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n" + ini)
    (tmp_path / "test_it.py").write_text(textwrap.dedent(body))


BOTH = """
import pytest

@pytest.mark.asynccopy_both
def test_a():
    pass

def test_plain():
    pass
"""


def collected(tmp_path, *args):
    proc, _ = run_pytest(tmp_path, "--collect-only", "-q", *args, timeout=120)
    return [ln for ln in proc.stdout.splitlines() if "::" in ln], proc


def test_items_and_their_ids(tmp_path):
    write(tmp_path, BOTH)
    ids, _ = collected(tmp_path)
    assert ids == ["test_it.py::test_a[gpu]", "test_it.py::test_a[sim]", "test_it.py::test_plain"]
    ids, _ = collected(tmp_path, "--asynccopy-sim-seeds", "5, 7")
    assert ids == ["test_it.py::test_a[gpu]", "test_it.py::test_a[sim-seed5]",
                   "test_it.py::test_a[sim-seed7]", "test_it.py::test_plain"]
    write(tmp_path, BOTH + "\ndef test_s(compute_sanitizer):\n    pass\n",
          ini="asynccopy_sanitizer_tools = racecheck\n")
    ids, _ = collected(tmp_path)
    assert ids[-1] == "test_it.py::test_s[racecheck]"


@pytest.mark.parametrize("args,ini,words", [
    (["--asynccopy-sim-seeds", "1,x"], "", "--asynccopy-sim-seeds='1,x' holds 'x', which is not an integer seed"),
    (["--asynccopy-sim-seeds", "1,,2"], "", "is not a comma-separated list of integer seeds"),
    (["--asynccopy-sim-seeds", "3,3"], "", "names a seed twice"),
    ([], "asynccopy_sim_seeds = 1;2\n", "ini option asynccopy_sim_seeds='1;2' holds '1;2'"),
    (["--asynccopy-sim-schedule", "best"], "", "--asynccopy-sim-schedule='best' is not a schedule: use worst or eager"),
    ([], "asynccopy_checked = maybe\n", "ini option asynccopy_checked='maybe' is not a switch"),
    (["--asynccopy-checked", "--asynccopy-wait-timeout-ns", "0"], "",
     "--asynccopy-wait-timeout-ns='0' is not a positive integer (nanoseconds"),
    (["--asynccopy-wait-timeout-ns", "1000"], "",
     "--asynccopy-wait-timeout-ns sets checked mode's watchdog, which only checked mode has"),
    (["--asynccopy-sanitizer-tools", "memcheck,initcheck"], "",
     "is not a list of compute-sanitizer tools: use memcheck, racecheck, synccheck"),
    (["--asynccopy-timeout", "-5"], "", "--asynccopy-timeout='-5' is not a positive number of seconds"),
    (["--asynccopy-timeout", "inf"], "", "is not a positive number of seconds"),
])
def test_a_bad_option_is_a_usage_error(tmp_path, args, ini, words):
    write(tmp_path, BOTH, ini)
    proc, _ = run_pytest(tmp_path, "--collect-only", "-q", *args, timeout=120)
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout + proc.stderr
    first = proc.stderr.strip().splitlines()[0]
    assert first.startswith("ERROR: numba-asynccopy: ") and words in first, proc.stderr


@pytest.mark.parametrize("mark,words", [
    ("asynccopy_both(3)", "asynccopy_both takes keywords only"),
    ("asynccopy_both(skip_sim='')", "asynccopy_both(skip_sim=...) must be a reason"),
    ("asynccopy_both(isolated='yes')", "asynccopy_both(isolated=...) must be True or False"),
    ("asynccopy_both(seeds=[1])", "asynccopy_both takes skip_gpu, skip_sim, isolated, not seeds"),
    ("asynccopy_traps", "asynccopy_traps needs the trap's words once"),
    ("asynccopy_traps('a', checked=1)", "asynccopy_traps(checked=...) must be True or False"),
])
def test_a_bad_marker_is_a_usage_error(tmp_path, mark, words):
    write(tmp_path, f"import pytest\n\n@pytest.mark.{mark}\ndef test_a():\n    pass\n")
    proc, _ = run_pytest(tmp_path, "--collect-only", "-q", timeout=120)
    assert proc.returncode != 0 and words in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_loading_the_plugin_imports_no_numba(tmp_path):
    write(tmp_path, """
    import sys

    def test_plain():
        assert not [m for m in sys.modules if m.split(".")[0] in ("numba", "numba_asynccopy")]
    """)
    proc, res = run_pytest(tmp_path, timeout=120)
    assert res == {"test_plain": ("passed", "")}, proc.stdout + proc.stderr


def test_a_trap_test_that_does_not_trap_fails_and_says_so(tmp_path):
    write(tmp_path, """
    import pytest

    @pytest.mark.asynccopy_traps("some rule")
    def test_t():
        pass

    @pytest.mark.asynccopy_traps("some rule")
    def test_wrong_words():
        raise RuntimeError("another rule")
    """)
    proc, res = run_pytest(tmp_path, "-k", "sim", timeout=300)
    outcome, msg = res["test_t[sim]"]
    assert outcome == "failed" and "the test raised nothing; expected a trap reporting 'some rule'" in msg, msg
    outcome, msg = res["test_wrong_words[sim]"]
    assert outcome == "failed" and "RuntimeError: another rule" in msg and "'some rule'" in msg, msg


def test_in_a_simulator_run_sim_items_run_in_process(tmp_path):
    write(tmp_path, """
    import os
    import pytest

    @pytest.mark.asynccopy_both
    def test_a(asynccopy):
        assert os.environ.get("NUMBA_ASYNCCOPY_PYTEST_CHILD") is None
        assert asynccopy.side == "sim" and asynccopy.seed == 4
        import numba_asynccopy as ac
        assert ac.sim.get_seed() == 4 and ac.sim.get_schedule() == "eager"
    """)
    proc, res = run_pytest(tmp_path, "--asynccopy-sim-seeds=4", "--asynccopy-sim-schedule=eager",
                           env={"NUMBA_ENABLE_CUDASIM": "1"}, timeout=300)
    assert res["test_a[sim-seed4]"] == ("passed", ""), proc.stdout + proc.stderr
    outcome, msg = res["test_a[gpu]"]
    assert outcome == "skipped" and "the CUDA simulator is on in this process" in msg


def test_the_plugin_names_are_the_packages():
    import importlib

    from numba_asynccopy import checked

    schedule = importlib.import_module("numba_asynccopy.sim.schedule")

    assert plugin.CHECKED_ENV == checked.CHECKED_ENV and plugin.TIMEOUT_ENV == checked.TIMEOUT_ENV
    assert plugin.SCHEDULE_ENV == schedule.SCHEDULE_ENV and plugin.SCHEDULES == ac.sim.SCHEDULES
    assert plugin.SIM_CANNOT_RUN in str(ac.sim.unsupported_error("x", None))


def test_the_entry_point_is_declared():
    tomllib = pytest.importorskip("tomllib")
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert data["project"]["entry-points"]["pytest11"] == {"numba_asynccopy_pytest": "numba_asynccopy_pytest"}


def test_the_testing_page_includes_the_sample_project_and_lists_every_option():
    page = (ROOT / "docs" / "testing.md").read_text()
    for f in ("user_project/test_scale_kernel.py", "user_project/pytest.ini"):
        assert f"```{{literalinclude}} ../tests/{f}" in page and (ROOT / "tests" / f).is_file()
    for opt, ini, _ in plugin._OPTIONS:
        assert f"| `{opt}` | `{ini}` |" in page, opt
