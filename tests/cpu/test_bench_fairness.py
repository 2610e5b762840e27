"""The benchmark table as a skeptical reviewer reads it: targets that
bench/NOTES.md shows to be above the hardware are information, the DSMEM
copy row is a reference, the stencil row names both of its changes, and
every suite records the SM clock."""

from __future__ import annotations

from numba_asynccopy.bench import report, suites
from numba_asynccopy.bench.suites import Measurement


def _rows(ms):
    res = {k: Measurement(k, k, "numba", "TB/s", ms=1.0, figure=v) for k, v in ms.items()}
    return {(r.subject, r.peer): r for r in report.build_rows(res, report.comparisons(quick=True))}


def test_above_hardware_targets_are_information():
    rows = _rows({"numba_sgemm_pipe_1024": 46.0, "numba_sgemm_sync_1024": 40.7,
                  "numba_cluster_dsmem": 4.6, "numba_cluster_global": 3.3, "dsmem_ceiling": 4.37})
    sg = rows[("numba_sgemm_pipe_1024", "numba_sgemm_sync_1024")]
    assert sg.target == "-" and sg.verdict == "info" and "information" in sg.benchmark
    ex = rows[("numba_cluster_dsmem", "numba_cluster_global")]
    assert ex.target == "-" and ex.verdict == "info"
    ref = rows[("dsmem_ceiling", "-")]
    assert ref.verdict == "reference" and ref.benchmark == "DSMEM bulk copy (reference)"
    assert rows[("numba_cluster_dsmem", "dsmem_ceiling")].verdict == "info"


def test_the_stencil_row_names_both_changes():
    rows = _rows({"numba_stencil_async": 3.7, "numba_stencil_plain": 2.2})
    row = rows[("numba_stencil_async", "numba_stencil_plain")]
    assert "4x4 patch a thread" in row.benchmark and "one point a thread" in row.benchmark
    assert row.verdict == "met"


def test_every_suite_records_the_sm_clock(monkeypatch):
    import subprocess

    def fake_run(cmd, **kw):
        assert cmd[0] == "nvidia-smi" and "clocks.sm" in cmd[1]
        return subprocess.CompletedProcess(cmd, 0, stdout="1980, 1980, 3201, 0x0000000000000000\n")

    monkeypatch.setattr(subprocess, "run", fake_run)
    assert suites.sm_clocks() == {"sm_mhz": "1980", "max_sm_mhz": "1980", "mem_mhz": "3201",
                                  "throttle": "0x0000000000000000"}
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(FileNotFoundError("x")))
    assert "error" in suites.sm_clocks()
