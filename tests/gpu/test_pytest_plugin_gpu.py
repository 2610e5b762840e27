"""The sample user project (tests/user_project) on a GPU: both sides of its
pipeline kernel pass, its buggy kernel fails on the GPU (checked mode's
trap, in a fresh process) and in the simulator with the same rule's words,
its trap test passes on both sides and compute-sanitizer finds its kernel
clean."""

from __future__ import annotations

import pytest

from ..conftest import skip_on_sim
from ..sample_project import BUG_WORDS, run_sample_project

pytestmark = [pytest.mark.gpu, pytest.mark.traps,
              skip_on_sim("runs the sample project in its own pytest processes, GPU side included")]


# child processes: the simulator, four fresh GPU/simulator processes, three
# compute-sanitizer runs (more than `make gpu-test`'s 300 s per test)
@pytest.mark.timeout(1200)
def test_the_sample_project_on_the_gpu(tmp_path):
    import numba_asynccopy_pytest as plugin

    proc, res = run_sample_project(tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out  # the buggy kernel fails, nothing else
    sides = ["gpu", "sim-seed1", "sim-seed2"]
    for side in sides:
        assert res[f"test_scale_matches_numpy[{side}]"] == ("passed", ""), (side, out)
        outcome, msg = res[f"test_buggy_barrier_kernel[{side}]"]
        assert outcome == "failed" and BUG_WORDS in msg, (side, msg)
    assert "SimulatorError: " in res["test_buggy_barrier_kernel[sim-seed1]"][1].splitlines()[0]
    for side in ("gpu", "sim"):
        assert res[f"test_the_bug_traps_with_its_rule[{side}]"] == ("passed", ""), (side, out)
    for tool in ("memcheck", "racecheck", "synccheck"):
        outcome, msg = res[f"test_sanitizer_clean[{tool}]"]
        if plugin.find_sanitizer() is None:
            assert outcome == "skipped" and "compute-sanitizer not found" in msg, msg
        else:
            assert outcome == "passed", (tool, msg)
    assert len(res) == 11, sorted(res)
