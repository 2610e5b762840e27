"""A two-process ``torch.distributed`` (NCCL) job, started with torchrun:
each rank runs the TMA copy and the cluster exchange on its shard, on its
own GPU and torch's stream; the shards are all-gathered and rank 0 checks
the whole result against numpy."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ..conftest import ROOT

pytestmark = pytest.mark.multigpu


def test_nccl_job_tma_copy_and_cluster_exchange(tmp_path):
    pytest.importorskip("torch")
    result = tmp_path / "result.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
         str(ROOT / "tests" / "multigpu" / "dist_job.py"), str(result)],
        env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"torchrun failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    got = json.loads(result.read_text())
    assert got["world"] == 2
    assert got["devices"] == [0, 1]           # each rank on its own GPU
    assert got["tma_rows"] == 2 * 96 and got["tma_mismatches"] == 0
    assert got["exchange_blocks"] == 2 * 8 and got["exchange_mismatches"] == 0
