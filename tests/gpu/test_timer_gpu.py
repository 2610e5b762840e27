"""numba_asynccopy.testing.do_bench on a GPU: it agrees with torch's
CUDA-event timing of the same kernel (numba_asynccopy/bench/timer_check.py),
and times a peer in the same run."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ..conftest import skip_on_sim

pytestmark = [pytest.mark.gpu, skip_on_sim("the simulator records no time"),
              # compute-sanitizer (make gpu-sanitize) and profilers inject themselves so
              pytest.mark.skipif("CUDA_INJECTION64_PATH" in os.environ,
                                 reason="under a CUDA tool (compute-sanitizer, a profiler) the "
                                 "times are the tool's")]


def test_do_bench_agrees_with_torch_events(capsys):
    pytest.importorskip("torch")
    from numba_asynccopy.bench.timer_check import main

    rc = main(["--reps", "100"])
    out = capsys.readouterr().out
    print(out)
    assert rc == 0, out


def test_do_bench_times_a_peer_in_the_same_run():
    from numba import cuda

    from numba_asynccopy.testing import do_bench, report_table

    @cuda.jit
    def add(dst, src, k):
        i = cuda.grid(1)
        while i < src.shape[0]:
            for _ in range(k):
                dst[i] += src[i]
            i += cuda.gridsize(1)

    n = 1 << 22
    src = cuda.to_device(np.ones(n, np.float32))
    dst = cuda.to_device(np.zeros(n, np.float32))
    r = do_bench(lambda: add[528, 256](dst, src, 8), peer=lambda: add[528, 256](dst, src, 1),
                 name="8 adds", peer_name="1 add", reps=40, batches=4)
    assert len(r.subject.times_ms) == 40 and len(r.peer.times_ms) == 40
    assert r.ratio < 1.0, report_table([("adds", r)])  # the peer does less work
    assert all(t > 0 for t in r.subject.times_ms + r.peer.times_ms)
    assert "8 adds" in report_table([("adds", r)])
