"""Checked mode's barrier-view and full-width checks trap on the GPU with
their rule (each case in a fresh process: a trap ends the CUDA context).
Without them these launches end in CUDA_ERROR_ILLEGAL_INSTRUCTION with no
message, or run with a value truncated to 32 bits.  The simulator reports the
same words (tests/sim/test_sim_checked_words.py runs these cases there)."""

from __future__ import annotations

import pytest

from ..conftest import run_python, skip_on_sim

BIG = 2**32  # truncated to 32 bits, each value below would pass as a small valid one

# name -> (kernel body, n, cluster, the trap's words)
CASES = {
    "init_global": ("ac.mbarrier_init(out[0:], 1)", 0, False,
                    "mbarrier_init: `bar` is not in shared memory"),
    "init_local": ("ac.mbarrier_init(loc[0:], 1)", 0, False,
                   "mbarrier_init: `bar` is not in shared memory"),
    "init_empty": ("ac.mbarrier_init(bars[n:], 1)", 4, False,
                   "mbarrier_init: `bar` is an empty view; its first element is the barrier"),
    "arrive_global": ("st = ac.mbarrier_arrive(out[0:])\n    out[1] = st", 0, False,
                      "mbarrier_arrive: `bar` is not in shared memory"),
    "wait_parity_global": ("ac.mbarrier_wait_parity(out[0:], 0)", 0, False,
                           "mbarrier_wait_parity: `bar` is not in shared memory"),
    "cp_async_arrive_global": ("ac.cp_async_mbarrier_arrive(out[0:])", 0, False,
                               "cp_async_mbarrier_arrive: `bar` is not in shared memory"),
    "count_wide": ("ac.mbarrier_init(bars[0:], n)", BIG + 1, False,
                   f"mbarrier_init: `count`={BIG + 1} is outside 1..1048575"),
    "nbytes_wide": ("ac.mbarrier_init(bars[0:], 1)\n    ac.mbarrier_expect_tx(bars[0:], n)",
                    BIG + 16, False, f"mbarrier_expect_tx: `nbytes`={BIG + 16} is outside 0..1048575"),
    "parity_wide": ("ac.mbarrier_wait_parity(bars[0:], n)", BIG, False,
                    f"mbarrier_wait_parity: `parity`={BIG} must be 0 or 1"),
    "hint_wide": ("out[1] = ac.mbarrier_try_wait_parity(bars[0:], 0, n)", 2 * BIG, False,
                  f"mbarrier_try_wait_parity: `suspend_hint_ns`={2 * BIG} is outside 0..4294967295"),
    "src_size_wide": ("ac.cp_async(sh[tid, :], A[tid, 0:4], 16, src_size=n)\n    ac.wait_all()",
                      BIG + 4, False, f"cp_async: src_size={BIG + 4} is outside 0..chunk_bytes (16)"),
    "fence_tensormap_shared": ("ac.fence_proxy_tensormap(bars)", 0, False,
                               "fence_proxy_tensormap: `tensor_map` is not in global memory"),
    # the remote forms (a cluster of 2)
    "remote_count_wide": ("ac.mbarrier_arrive_remote(bars[0:], 0, n)", BIG + 1, True,
                          f"mbarrier_arrive_remote: `count`={BIG + 1} is outside 1..2**20-1"),
    "remote_nbytes_wide": ("ac.mbarrier_expect_tx(bars[0:], n, cta_rank=0)", BIG + 16, True,
                           f"mbarrier_expect_tx: `nbytes`={BIG + 16} is outside 0..1048575"),
    "remote_rank_wide": ("ac.mbarrier_arrive(bars[0:], cta_rank=n)", BIG, True,
                         f"mbarrier_arrive: `cta_rank`={BIG} is outside the cluster "
                         "(2 CTAs: ranks 0..1)"),
    # a cluster pipeline built for 4 CTAs in a cluster of 2: its multicasts and
    # releases would name ranks 2 and 3
    "pipeline_cluster_size": ("pipe = ac.pipeline.cluster_tma_pipeline(bars, 2, 1, 4)\n"
                              "    ac.pipeline.init(pipe)", 0, True,
                              "pipeline init: the cluster has 2 CTAs; a cluster tma pipeline (2 "
                              "stages, 4 CTAs, 1 copy per stage and CTA, 1 consumers per CTA) "
                              "needs a cluster of exactly 4 CTAs (launch with ac.cluster_dims(4) "
                              "or ac.launch(..., cluster=...))"),
}

KERNEL = """
import numpy as np
from numba import cuda
import numba_asynccopy as ac

@cuda.jit
def k(out, n, A):
    tid = cuda.threadIdx.x
    bars = cuda.shared.array(4, np.uint64)
    loc = cuda.local.array(2, np.uint64)
    sh = cuda.shared.array((32, 4), np.float32, alignment=16)
    {cluster}{body}
"""


def kernel_source(name: str) -> str:
    body, _, cluster, _ = CASES[name]
    return KERNEL.format(body=body, cluster="ac.cluster_dims(2)\n    " if cluster else "")


@pytest.mark.traps
@skip_on_sim("a trap ends the CUDA context: each case runs in a fresh process on the GPU; "
             "tests/sim/test_sim_checked_words.py checks the simulator's words for the same cases")
@pytest.mark.parametrize("name", list(CASES))
def test_checked_mode_traps_with_the_rule(name):
    _, n, cluster, words = CASES[name]
    code = kernel_source(name) + f"""
ac.set_checked(True)
out = cuda.to_device(np.zeros(8, np.uint64))
A = cuda.to_device(np.zeros((32, 8), np.float32))
try:
    k[{2 if cluster else 1}, 32](out, {n}, A)
    cuda.synchronize()
    print("NO TRAP")
except Exception as e:
    print("LAUNCH FAILED:", type(e).__name__)
"""
    proc = run_python(code, timeout=120)
    out = proc.stdout + proc.stderr
    assert "LAUNCH FAILED" in out, out
    assert "numba_asynccopy checked mode: " + words + " [block (" in out, out
