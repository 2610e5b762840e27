"""Every tutorial notebook runs top to bottom.

- Without a GPU (CI): each notebook is executed headless by nbclient in an
  IPython kernel running this interpreter; the first cell picks the
  simulator or compile-only mode and says so.
- On the GPU (marked ``gpu``): each notebook's code cells run in a fresh
  interpreter through ``tests/notebooks/execnb.py`` (no Jupyter packages
  needed on a machine with a GPU).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import HAVE_GPU, skip_on_sim

ROOT = Path(__file__).resolve().parents[2]
NB_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(p.name for p in NB_DIR.glob("*.ipynb"))

SAMPLE_BENCH = {
    "title": "numba-asynccopy benchmarks, sample device, 2026-01-01 00:00 UTC", "quick": True,
    "info": {"device": "sample device"},
    "rows": [
        {"benchmark": "staged cp.async copy", "subject": "staged copy", "figure": "3.900 TB/s",
         "ms": "0.5", "work": "2.00 GB", "peer": "torch copy", "peer_figure": "4.100 TB/s",
         "ratio": 0.951, "target": ">= 0.93", "verdict": "met"},
        {"benchmark": "SGEMM 4096^3 pipelined", "subject": "sgemm", "figure": "40.0 TFLOP/s",
         "ms": "3.4", "work": "137 GFLOP", "peer": "cuBLAS", "peer_figure": "52.0 TFLOP/s",
         "ratio": 0.77, "target": ">= 0.8", "verdict": "MISSED"},
        {"benchmark": "bulk copy", "subject": "numba_bulk_copy", "figure": "-", "ms": "-", "work": "-",
         "peer": "torch copy", "peer_figure": "-", "ratio": None, "target": ">= 0.95",
         "verdict": "not yet run"},
    ],
    "measurements": [
        {"key": "numba_staged_copy", "label": "staged copy", "impl": "numba", "unit": "TB/s",
         "status": "ok", "figure": 3.9},
        {"key": "torch_copy", "label": "torch copy", "impl": "torch", "unit": "TB/s",
         "status": "ok", "figure": 4.1},
    ],
}


def test_notebooks_exist_and_are_stripped():
    assert NOTEBOOKS == [
        "01_async_copies.ipynb", "02_pipelines.ipynb", "03_clusters.ipynb",
        "04_bulk_and_tma.ipynb", "05_debugging.ipynb", "06_performance.ipynb",
        "07_tensor_cores.ipynb",
    ]
    for name in NOTEBOOKS:
        nb = json.loads((NB_DIR / name).read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, \
                    f"{name}: outputs must be stripped in the repository"


def _kernel_env(tmp_path: Path, monkeypatch, bench: Path) -> None:
    """A `python3` kernelspec that runs this interpreter, first on JUPYTER_PATH."""
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (numba-asynccopy tests)", "language": "python",
    }))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    monkeypatch.setenv("NUMBA_ASYNCCOPY_BENCH_RESULTS", str(bench))
    monkeypatch.setenv("MPLBACKEND", "Agg")


def _outputs(nb) -> str:
    text = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                text.append(out["text"])
            elif "data" in out:
                text.append(out["data"].get("text/plain", ""))
            elif out.get("output_type") == "error":
                text.append("\n".join(out.get("traceback", [])))
    return "\n".join(text)


def _bench_dir(tmp_path: Path, with_results: bool) -> Path:
    d = tmp_path / "bench-results"
    d.mkdir()
    if with_results:
        (d / "results.json").write_text(json.dumps(SAMPLE_BENCH))
    return d


EXPECTED_MODE = {n: "SIMULATOR" for n in NOTEBOOKS} | {"06_performance.ipynb": "COMPILE-ONLY"}
# lines only a launched kernel prints (the cluster and multicast cells)
RUNS_IN_SIMULATOR = {
    "03_clusters.ipynb": ["[simulator] cluster of 8: ", "[simulator] CTA 1 received CTA 0's 256 bytes"],
    "04_bulk_and_tma.ipynb": ["[simulator] one load, two CTAs received it",
                              "[simulator] im2col: 16 output pixels x 8 channels of tap (1, 2)"],
    "07_tensor_cores.ipynb": ["[simulator] one m64n64k16 MMA equals numpy",
                              "[simulator] f16 accumulation equals numpy",
                              "[simulator] hgemm 136 x 72 x 80 equals numpy",
                              "[simulator] wgmma: reading the accumulator fragment"],
}

CASES = [(n, False) for n in NOTEBOOKS] + [("06_performance.ipynb", True),
                                            ("06_performance.ipynb", "committed")]


@pytest.mark.parametrize("name,with_results", CASES,
                         ids=[n[:2] + ({True: "-with-results", "committed": "-committed"}.get(r, ""))
                              for n, r in CASES])
def test_notebook_runs_headless(name, with_results, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    _kernel_env(tmp_path, monkeypatch, _bench_dir(tmp_path, with_results is True))
    if with_results == "committed":
        if (ROOT / "bench-results").exists():
            pytest.skip("a local bench-results/ run takes precedence over the committed results")
        # no variable and no fresh run: the notebook reads benchmarks/*/results.json
        monkeypatch.delenv("NUMBA_ASYNCCOPY_BENCH_RESULTS")
    nb = nbformat.read(NB_DIR / name, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(NB_DIR)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    text = _outputs(nb)
    # the mode each notebook must choose here: the GPU where there is one,
    # else the simulator for every notebook that runs kernels (clusters and
    # multicast included); 06 only reads benchmark results
    want = "GPU" if HAVE_GPU else EXPECTED_MODE[name]
    assert f"MODE: {want} -- " in text, (name, want, text[:2000])
    assert "not available in this build" not in text, name  # every feature is in the build
    if want == "SIMULATOR" and name in RUNS_IN_SIMULATOR:
        for line in RUNS_IN_SIMULATOR[name]:
            assert line in text, (name, line)
        assert "not run in this mode" not in text, name
    if name == "06_performance.ipynb" and with_results == "committed":
        committed = sorted((ROOT / "benchmarks").glob("*/results.json"))[-1]
        title = json.loads(committed.read_text())["title"]
        assert f"results of {committed.relative_to(ROOT)}: {title}" in text, text[-2000:]
        assert "No benchmark results found" not in text
    elif name == "06_performance.ipynb":
        assert ("sample device" in text) == with_results
        assert ("No benchmark results found" in text) == (not with_results)
    else:
        # every notebook shows an inspection report or says its feature is absent;
        # the compile-only banner ("kernels are compiled for sm_90") does not count
        shown = "\n".join(ln for ln in text.splitlines() if not ln.startswith("MODE: "))
        assert "ac.inspect:" in shown or "compiled for" in shown


@pytest.mark.gpu
@skip_on_sim("runs the notebooks on a real GPU (it drops NUMBA_ENABLE_CUDASIM)")
@pytest.mark.parametrize("name", NOTEBOOKS, ids=[n[:2] for n in NOTEBOOKS])
def test_notebook_runs_on_gpu(name, tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONUNBUFFERED="1",
               NUMBA_ASYNCCOPY_BENCH_RESULTS=str(_bench_dir(tmp_path, False)))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    proc = subprocess.run([sys.executable, "-m", "tests.notebooks.execnb", str(NB_DIR / name)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    if name != "06_performance.ipynb":
        assert "MODE: GPU" in out, out[-3000:]
    assert f"OK: {name}" in out
