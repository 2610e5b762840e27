"""The example kernels on the GPU: fresh random inputs, poisoned outputs,
numpy references.  Sizes are small so that the compute-sanitizer runs
(``make gpu-sanitize``) stay quick; the CUDA C++ twins of the benchmark are
checked the same way when nvcc is there."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.examples import exchange as ex
from numba_asynccopy.examples import sgemm as sg
from numba_asynccopy.examples import staged_copy as sc
from numba_asynccopy.examples import stencil as st

from ..conftest import SIM, SIM_NVCC, skip_on_sim

pytestmark = pytest.mark.gpu

rng = np.random.default_rng()  # fresh data every run
POISON = np.uint32(0xFFC00000)  # a float32 NaN


def poisoned(shape, dtype):
    out = np.empty(shape, dtype)
    out.view(np.uint32)[...] = POISON
    return out


COPY_CONFIGS = list(sc.SWEEP) + [(3, 8, 128, 2), (2, 4, 64, 3)]


def sim_twin(checked: bool) -> bool:
    """The checked-mode twin of a test in the simulator: there checked mode
    changes only the words of an error (the kernel runs the same Python
    either way, and the launch is outside ``checked_mode``), so the twin
    runs the smallest shape that keeps the test's launch, and the unchecked
    run keeps the sizes that exercise the schedule."""
    return SIM and checked


@pytest.mark.parametrize("cfg", COPY_CONFIGS, ids=lambda c: "s{}_c{}_b{}_p{}".format(*c))
@pytest.mark.parametrize("checked", [False, True])
def test_staged_copy(cfg, checked):
    stages, chunk, block, pt = cfg
    tile = sc.tile_words(chunk, block, pt)
    # several tiles per block (grid stride), the ring wrapping, and a tail;
    # the fewest of those tiles in the simulator (every thread a Python thread)
    n = tile * (2 if sim_twin(checked) else int(rng.integers(7, 8 if SIM else 12))) \
        + int(rng.integers(1, tile))
    src = rng.integers(0, 2**32, n, dtype=np.uint32)
    with ac.checked_mode(checked):
        kernel = cuda.jit(sc.SIGNATURE)(sc.make_staged_copy(stages, chunk, block, pt))
    d_dst = cuda.to_device(poisoned(n, np.uint32))
    kernel[3, block](cuda.to_device(src), d_dst)
    np.testing.assert_array_equal(d_dst.copy_to_host(), src)


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_sgemm(stages):
    # 9 k-tiles: more than the stages in flight; in the simulator (every
    # thread a Python thread) one 128 x 128 tile and stages + 1 k-tiles
    M, N, K = (sg.BM, sg.BN, sg.BK * (stages + 1)) if SIM else (256, 384, 72)
    AT = rng.uniform(-1, 1, (K, M)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    kernel = cuda.jit(sg.SIGNATURE)(sg.make_sgemm(stages))
    d_c = cuda.to_device(poisoned((M, N), np.float32))
    kernel[sg.grid(M, N), sg.BLOCK](cuda.to_device(AT), cuda.to_device(B), d_c)
    got = d_c.copy_to_host()
    assert not np.isnan(got).any(), "unwritten elements of C"
    ref = AT.T.astype(np.float64) @ B.astype(np.float64)
    err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    assert err < 1e-5, err


@pytest.mark.parametrize("stages", [2, 3])
def test_sgemm_hand_written(stages):
    # the hand-written ring the benchmark compares the pipelined SGEMM with
    from numba_asynccopy.examples import sgemm_manual

    M, N, K = (sg.BM, sg.BN, sg.BK * (stages + 1)) if SIM else (256, 128, 72)
    AT = rng.uniform(-1, 1, (K, M)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    kernel = cuda.jit(sg.SIGNATURE)(sgemm_manual.make_sgemm(stages))
    d_c = cuda.to_device(poisoned((M, N), np.float32))
    kernel[sg.grid(M, N), sg.BLOCK](cuda.to_device(AT), cuda.to_device(B), d_c)
    ref = AT.T.astype(np.float64) @ B.astype(np.float64)
    np.testing.assert_allclose(d_c.copy_to_host(), ref, rtol=1e-4, atol=1e-5)


def test_staged_copy_hand_written():
    from numba_asynccopy.examples import staged_copy_manual

    stages, chunk, block, pt = 3, 8, 64, 2
    tile = sc.tile_words(chunk, block, pt)
    n = tile * 7 + int(rng.integers(1, tile))
    src = rng.integers(0, 2**32, n, dtype=np.uint32)
    kernel = cuda.jit(sc.SIGNATURE)(staged_copy_manual.make_staged_copy(stages, chunk, block, pt))
    d_dst = cuda.to_device(poisoned(n, np.uint32))
    kernel[3, block](cuda.to_device(src), d_dst)
    np.testing.assert_array_equal(d_dst.copy_to_host(), src)


def test_sgemm_checked_mode():
    M, N, K = 128, 128, 24
    AT = rng.uniform(-1, 1, (K, M)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    with ac.checked_mode(True):
        kernel = cuda.jit(sg.SIGNATURE)(sg.make_sgemm(3))
    d_c = cuda.to_device(poisoned((M, N), np.float32))
    kernel[sg.grid(M, N), sg.BLOCK](cuda.to_device(AT), cuda.to_device(B), d_c)
    ref = AT.T.astype(np.float64) @ B.astype(np.float64)
    np.testing.assert_allclose(d_c.copy_to_host(), ref, rtol=1e-4, atol=1e-5)


# (in the simulator the first is 40 x 136: still blocks in both directions
# with partial tiles, at a fifth of the threads)
STENCIL_SHAPES = [(40, 136) if SIM else (70, 264), (33, 128), (1, 4), (3, 8)]


@pytest.mark.parametrize("shape", STENCIL_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("variant", ["async", "plain"])
def test_stencil(variant, shape):
    H, W = shape
    u = rng.uniform(-1, 1, (H, W)).astype(np.float32)
    a, b = float(rng.uniform(0.2, 0.8)), float(rng.uniform(0.05, 0.2))
    fn = st.stencil_async if variant == "async" else st.stencil_plain
    grid = st.grid_async(H, W) if variant == "async" else st.grid_plain(H, W)
    block = st.BLOCK_ASYNC if variant == "async" else st.BLOCK_PLAIN
    kernel = cuda.jit(st.SIGNATURE)(fn)
    d_out = cuda.to_device(poisoned((H, W), np.float32))
    kernel[grid, block](cuda.to_device(u), d_out, np.float32(a), np.float32(b))
    got = d_out.copy_to_host()
    assert not np.isnan(got).any(), "unwritten points"
    ref = st.reference(u, np.float32(a), np.float32(b))
    np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6)


def test_stencil_async_checked_mode():
    H, W = 40, 136
    u = rng.uniform(-1, 1, (H, W)).astype(np.float32)
    with ac.checked_mode(True):
        kernel = cuda.jit(st.SIGNATURE)(st.stencil_async)
    d_out = cuda.to_device(poisoned((H, W), np.float32))
    kernel[st.grid_async(H, W), st.BLOCK_ASYNC](cuda.to_device(u), d_out, np.float32(0.5),
                                                np.float32(0.125))
    np.testing.assert_allclose(d_out.copy_to_host(), st.reference(u, 0.5, 0.125), rtol=0, atol=2e-6)


@pytest.mark.parametrize("cluster,rounds", [(2, 0), (2, 1), (2, 7), (4, 6), (8, 11)])
@pytest.mark.parametrize("variant", ["dsmem", "global"])
@pytest.mark.parametrize("checked", [False, True])
def test_cluster_exchange(variant, cluster, rounds, checked):
    # three clusters; in the simulator one of 8 CTAs (each CTA a block of
    # Python threads: the others repeat it; clusters of 2 and 4 run two,
    # so a cluster index past 0 is there), and one for the checked twin,
    # over two rounds at most (both buffers and a parity flip: the
    # unchecked run keeps every round count but the 8-CTA cluster's, three
    # there: both buffers twice; rounds past the cluster size, a tile coming
    # round again, are the 4-CTA cluster's 6)
    blocks = (1 if SIM and (cluster == 8 or checked) else 2 if SIM else 3) * cluster
    if sim_twin(checked):
        rounds = min(rounds, 2)
    elif SIM and cluster == 8:
        rounds = min(rounds, 3)
    a = rng.uniform(-1, 1, (blocks, ex.TILE)).astype(np.float32)
    with ac.checked_mode(checked):
        if variant == "dsmem":
            kernel = cuda.jit(ex.DSMEM_SIGNATURE)(ex.exchange_dsmem)
        else:
            kernel = cuda.jit(ex.GLOBAL_SIGNATURE)(ex.exchange_global)
    d_out = cuda.to_device(poisoned((blocks, ex.TILE), np.float32))
    args = (cuda.to_device(a), d_out, np.int32(rounds))
    if variant == "global":
        scratch = cuda.to_device(poisoned((2, blocks, ex.TILE), np.float32))
        args = args[:2] + (scratch,) + args[2:]
    ac.launch(kernel, blocks, ex.BLOCK, args, cluster=cluster)
    np.testing.assert_array_equal(d_out.copy_to_host(), ex.expected(a, rounds, cluster))


def test_launch_probe_both_launch_paths():
    blocks = 8
    kernel = cuda.jit(ex.PROBE_SIGNATURE)(ex.launch_probe)
    out = cuda.to_device(np.full(blocks, -1, np.int32))
    ac.launch(kernel, blocks, 128, (out,), cluster=ex.CLUSTER)
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(blocks) % ex.CLUSTER)
    kernel[blocks, 128](out)
    np.testing.assert_array_equal(out.copy_to_host(), np.zeros(blocks, np.int32))


# the benchmark's run sweep, a run longer than the ring, runs of one tile and a
# run shorter than the ring (the last two small: quick in the simulator too)
RUN_CONFIGS = list(sc.RUN_SWEEP) + [(3, 8, 128, 2, 5), (2, 4, 64, 3, 1), (3, 8, 64, 1, 2)]


@pytest.mark.parametrize("cfg", RUN_CONFIGS, ids=lambda c: "s{}_c{}_b{}_p{}_r{}".format(*c))
@pytest.mark.parametrize("checked", [False, True])
def test_staged_copy_runs(cfg, checked):
    stages, chunk, block, pt, run = cfg
    tile = sc.tile_words(chunk, block, pt)
    # whole runs, a partial last run and a tail; one spare block (tail only);
    # one whole run in the simulator (another block of the same schedule
    # adds nothing there)
    whole = 1 if SIM else int(rng.integers(2, 5))
    n = tile * (run * whole + int(rng.integers(1, run + 1))) + int(rng.integers(1, tile))
    src = rng.integers(0, 2**32, n, dtype=np.uint32)
    with ac.checked_mode(checked):
        kernel = cuda.jit(sc.SIGNATURE)(sc.make_staged_copy(stages, chunk, block, pt, run))
    d_dst = cuda.to_device(poisoned(n, np.uint32))
    kernel[sc.grid_for_runs(n, chunk, block, pt, run) + 1, block](cuda.to_device(src), d_dst)
    np.testing.assert_array_equal(d_dst.copy_to_host(), src)


def _ptr(a):
    return a.__cuda_array_interface__["data"][0]


@skip_on_sim(SIM_NVCC)
def test_twins_match_numpy(twins):
    # staged copy, every configuration the benchmark may pick
    for stages, chunk, block, pt in sc.SWEEP:
        n = sc.tile_words(chunk, block, pt) * 5 + 77
        src = rng.integers(0, 2**32, n, dtype=np.uint32)
        d_src, d_dst = cuda.to_device(src), cuda.to_device(poisoned(n, np.uint32))
        twins.staged_copy(_ptr(d_src), _ptr(d_dst), n, stages, block, pt, 2)
        cuda.synchronize()
        np.testing.assert_array_equal(d_dst.copy_to_host(), src)
    for stages, chunk, block, pt, run in sc.RUN_SWEEP:
        n = sc.tile_words(chunk, block, pt) * (2 * run + 1) + 77
        src = rng.integers(0, 2**32, n, dtype=np.uint32)
        d_src, d_dst = cuda.to_device(src), cuda.to_device(poisoned(n, np.uint32))
        grid = sc.grid_for_runs(n, chunk, block, pt, run)
        twins.staged_copy(_ptr(d_src), _ptr(d_dst), n, stages, block, pt, grid, run)
        cuda.synchronize()
        np.testing.assert_array_equal(d_dst.copy_to_host(), src)
    # the plain stencil twin without __restrict__ (a benchmark info row)
    H, W = 33, 100
    u = rng.uniform(-1, 1, (H, W)).astype(np.float32)
    d_u, d_out = cuda.to_device(u), cuda.to_device(poisoned((H, W), np.float32))
    twins.stencil_plain_norestrict(_ptr(d_u), _ptr(d_out), H, W, 0.5, 0.125)
    cuda.synchronize()
    np.testing.assert_allclose(d_out.copy_to_host(), st.reference(u, 0.5, 0.125), rtol=0, atol=2e-6)
    # sgemm
    M, N, K = 128, 256, 40
    AT = rng.uniform(-1, 1, (K, M)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    ref = AT.T.astype(np.float64) @ B.astype(np.float64)
    for stages in (1, 2, 3, 4):
        d_c = cuda.to_device(poisoned((M, N), np.float32))
        d_at, d_b = cuda.to_device(AT), cuda.to_device(B)
        twins.sgemm(_ptr(d_at), _ptr(d_b), _ptr(d_c), M, N, K, stages)
        cuda.synchronize()
        got = d_c.copy_to_host()
        assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-5, stages
    # stencil
    H, W = 70, 264
    u = rng.uniform(-1, 1, (H, W)).astype(np.float32)
    ref = st.reference(u, 0.5, 0.125)
    for f in (twins.stencil_async, twins.stencil_plain):
        d_u, d_out = cuda.to_device(u), cuda.to_device(poisoned((H, W), np.float32))
        f(_ptr(d_u), _ptr(d_out), H, W, 0.5, 0.125)
        cuda.synchronize()
        np.testing.assert_allclose(d_out.copy_to_host(), ref, rtol=0, atol=2e-6)
    # cluster exchange
    for cluster, rounds in ((2, 5), (4, 3)):
        blocks = 3 * cluster
        a = rng.uniform(-1, 1, (blocks, ex.TILE)).astype(np.float32)
        d_a, d_out = cuda.to_device(a), cuda.to_device(poisoned((blocks, ex.TILE), np.float32))
        twins.exchange_dsmem(_ptr(d_a), _ptr(d_out), blocks, rounds, cluster)
        cuda.synchronize()
        np.testing.assert_array_equal(d_out.copy_to_host(), ex.expected(a, rounds, cluster))
