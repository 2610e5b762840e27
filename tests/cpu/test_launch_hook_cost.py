"""What importing the package adds to a plain Numba launch, counted (no
wall clock): the ``_Kernel.launch`` hook must cost an ordinary kernel one
Python call and nothing else once its first launch has been checked, and
numba-cuda's own launch must look its context up once, as without the
package.  A fake CUDA context (``test_launch_fastpath``) stands in for the
GPU; numba-cuda's driver launch is recorded instead of run."""

from __future__ import annotations

import sys

import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.host import _numba_internals as nb
from numba_asynccopy.host import launch as L

from .test_launch_fastpath import HAVE_GPU, _probe, driver, fake_context, probe  # noqa: F401

pytestmark = pytest.mark.skipif(
    HAVE_GPU or nb.SIMULATOR, reason="fakes the CUDA context: only where there is no GPU")

PACKAGE = ac.__file__.rsplit("/", 1)[0]


def calls_during(fn, n):
    """(calls into the package's own code, calls of numba's get_context)
    made by ``n`` calls of ``fn``."""
    ours, contexts = [], []

    def profile(frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        if code.co_filename.startswith(PACKAGE):
            ours.append(code.co_name)
        elif code.co_name == "get_context" and "cudadrv" in code.co_filename:
            contexts.append(code.co_filename)

    sys.setprofile(profile)
    try:
        for _ in range(n):
            fn()
    finally:
        sys.setprofile(None)
    return ours, contexts


def test_plain_kernel_launch_calls_only_the_hook(driver, probe):
    kernel = next(iter(probe.overloads.values()))
    kernel.__dict__.pop(nb.PLAIN_ATTR, None)
    kernel.__dict__.pop("_asynccopy_launch", None)
    first, _ = calls_during(lambda: probe[4, 32](1), 1)
    assert "_prepare" in first  # the first launch checks the kernel once
    assert kernel._asynccopy_plain is True
    ours, contexts = calls_during(lambda: probe[4, 32](2), 10)
    assert ours == ["launch"] * 10, ours  # the hook itself, no _prepare
    assert len(contexts) == 10, contexts  # numba-cuda's own lookup only
    assert len(driver.numba_launches) == 11  # every launch reached numba's


def test_new_shapes_of_a_plain_kernel_stay_free(driver, probe):
    probe[4, 32](1)
    ours, _ = calls_during(lambda: (probe[8, 64](1), probe[(2, 2), (16, 2)](1)), 3)
    assert ours == ["launch"] * 6, ours


def test_dynamic_shared_memory_still_goes_through_prepare(driver, probe):
    probe[4, 32](1)
    ours, _ = calls_during(lambda: probe[4, 32, 0, 1024](1), 1)
    assert "_prepare" in ours, ours
    with pytest.raises(ac.ClusterLaunchError, match="shared_mem must be >= 0"):
        probe[4, 32, 0, -1](1)


def test_declared_cluster_kernel_is_checked_on_every_launch(driver, fake_context):
    @cuda.jit("void(int32)")
    def pairs(x):
        ac.cluster_dims(2)

    kernel = next(iter(pairs.overloads.values()))
    driver.declared[kernel.entry_name] = (2, 1, 1)
    pairs[4, 32](1)
    assert kernel._asynccopy_plain is False
    ours, _ = calls_during(lambda: pairs[4, 32](1), 2)
    assert ours.count("_prepare") == 2, ours
    with pytest.raises(ac.ClusterLaunchError, match="multiple"):
        pairs[3, 32](1)
    assert L  # the module whose _prepare is counted


# --- the launch benchmark's rows for it -----------------------------------------------------


def test_stock_process_script_imports_the_package_only_when_asked():
    import ast
    from pathlib import Path

    from numba_asynccopy.bench import launchprof

    src = Path(launchprof.__file__).with_name("launch_stock.py").read_text()
    tree = ast.parse(src)
    guarded = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "import_package" in ast.unparse(node.test):
            guarded |= {id(n) for n in ast.walk(node)}
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        if any(n.split(".")[0] == "numba_asynccopy" for n in names):
            assert id(node) in guarded, ast.unparse(node)
        assert node.level == 0 if isinstance(node, ast.ImportFrom) else True  # no relative import


def test_the_benchmark_compares_import_cost_and_the_bare_launcher():
    from numba_asynccopy.bench import report, suites
    from numba_asynccopy.bench.suites import Measurement

    keys = suites.suite_keys("cluster", quick=True)
    assert keys[-4:] == ["core_launch_bare", "numba_launch_unhooked", "numba_launch_stock",
                         "numba_launch_imported"]
    ms = {"numba_launch_plain": 0.0346, "ac_launch_plain": 0.0110, "torch_launch_add": 0.0082,
          "core_launch_bare": 0.0050, "numba_launch_unhooked": 0.0333,
          "numba_launch_stock": 0.0300, "numba_launch_imported": 0.0315}
    res = {k: Measurement(k, k, "numba", "ms", ms=v, figure=0.0) for k, v in ms.items()}
    rows = {(r.subject, r.peer): r for r in report.build_rows(res, report.comparisons(quick=True))}
    # the hook's price: one process, the same launch with and without it
    hook = rows[("numba_launch_plain", "numba_launch_unhooked")]
    assert hook.ratio == pytest.approx(0.0346 / 0.0333) and hook.target == "<= 1.03"
    assert hook.verdict == "MISSED"
    # fresh processes: information (processes alone differ by more than 3%)
    imp = rows[("numba_launch_imported", "numba_launch_stock")]
    assert imp.ratio == pytest.approx(1.05) and imp.verdict == "info"
    bare = rows[("ac_launch_plain", "core_launch_bare")]
    assert bare.verdict == "info" and bare.ratio == pytest.approx(2.2)
    assert rows[("torch_launch_add", "core_launch_bare")].verdict == "info"


def test_the_process_rows_keep_each_process_and_its_host_time(monkeypatch):
    """``stock_vs_imported`` runs the two kinds alternately and keeps, per
    process, the median batch, the best batch and the host's own time per
    launch (``launch_stock.py``'s ``host_ms``), so a slow process shows."""
    import json
    import subprocess
    from types import SimpleNamespace

    from numba_asynccopy.bench import launchprof

    ran = []

    def run(cmd, **kw):
        imported = "--import-package" in cmd
        ran.append(imported)
        slow = imported and len(ran) == 4  # the second imported process
        ev = [0.040, 0.042, 0.044] if slow else [0.028, 0.027, 0.029]
        return SimpleNamespace(returncode=0, stderr="", stdout=json.dumps({
            "times_ms": ev, "host_ms": [0.026, 0.026, 0.027], "imported": imported,
            "hooked": imported}) + "\n")

    monkeypatch.setattr(subprocess, "run", run)
    each = []
    out = launchprof.stock_vs_imported(528, 3, rounds=3, processes=each, cpu=None)
    assert ran == [False, True] * 3
    assert [p["key"] for p in each] == ["numba_launch_stock", "numba_launch_imported"] * 3
    assert each[3]["median_ms"] == pytest.approx(0.042) and each[3]["best_ms"] == pytest.approx(0.040)
    assert all(p["host_median_ms"] == pytest.approx(0.026) for p in each)
    assert len(out["numba_launch_imported"]) == 9


def test_the_process_rows_run_every_process_on_one_cpu(monkeypatch):
    """Both kinds of process run pinned to the same CPU (``--cpu``), four
    rounds by default; ``cpu=None`` leaves the placement to the scheduler."""
    import json
    import subprocess
    from types import SimpleNamespace

    from numba_asynccopy.bench import launchprof

    cmds = []

    def run(cmd, **kw):
        cmds.append(cmd)
        imported = "--import-package" in cmd
        return SimpleNamespace(returncode=0, stderr="", stdout=json.dumps({
            "times_ms": [0.03], "host_ms": [0.02], "imported": imported, "hooked": imported,
            "cpu": 5}) + "\n")

    monkeypatch.setattr(subprocess, "run", run)
    each = []
    launchprof.stock_vs_imported(528, 3, processes=each, cpu=5)
    assert len(cmds) == 8
    assert all(c[c.index("--cpu") + 1] == "5" for c in cmds)
    assert [p["cpu"] for p in each] == [5] * 8
    cmds.clear()
    launchprof.stock_vs_imported(528, 3, rounds=1, cpu=None)
    assert len(cmds) == 2 and not any("--cpu" in c for c in cmds)


def test_a_sysfs_cpu_list_is_read_as_linux_writes_it():
    from numba_asynccopy.bench.launchprof import _cpulist

    assert _cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert _cpulist("7") == [7]


def test_the_stock_script_pins_itself_before_it_imports_numba(tmp_path):
    # --cpu is honoured in the script itself (so the stock process stays free
    # of the package): the affinity call comes before numba's import
    from pathlib import Path

    from numba_asynccopy.bench import launchprof

    src = Path(launchprof.__file__).with_name("launch_stock.py").read_text()
    main = src[src.index("def main("):]
    assert main.index("os.sched_setaffinity(0, {args.cpu})") < main.index("import numpy as np")



def test_launch_diag_times_with_the_stock_scripts_loop():
    # one timing loop for every fresh-process launch measurement: the
    # diagnosis script of 2026-12-02 loads launch_stock.py by its path and
    # calls its warm_up / time_batches (no events or clocks of its own), and
    # its stock processes still never import the package
    import ast
    import importlib.util
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    diag = root / "benchmarks" / "h200-2026-12-02b" / "perf" / "launch_diag.py"
    tree = ast.parse(diag.read_text())
    attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert {"time_batches", "warm_up"} <= attrs, sorted(attrs)
    assert not attrs & {"event_elapsed_time", "perf_counter_ns", "record"}, attrs & {
        "event_elapsed_time", "perf_counter_ns", "record"}
    spec = importlib.util.spec_from_file_location("launch_diag_probe", diag)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    before = {m for m in sys.modules if m.split(".")[0] == "numba_asynccopy"}
    stock = mod._launch_stock()
    assert stock.__file__ == str(root / "numba_asynccopy" / "bench" / "launch_stock.py")
    assert callable(stock.time_batches) and stock.BATCH == 64
    # loading the stock script added no module of the package
    assert {m for m in sys.modules if m.split(".")[0] == "numba_asynccopy"} == before
