"""The bulk-copy and TMA-tile-copy examples on the GPU: fresh random data,
poisoned outputs, exact comparison with the source.  Sizes cover several
tiles per block (the ring wraps, the parity flips), a tail (a partial chunk;
partial boxes on both axes), inputs smaller than one tile, and checked mode;
run mode (``run`` tiles per block) with whole runs, a partial last run,
runs shorter than the ring and a spare block with no tile.
Small enough for ``make gpu-sanitize``.  The CUDA C++ twins of the
benchmark (``twins_bulk.cu``) are checked the same way when nvcc is there."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.examples import bulk_copy as bc
from numba_asynccopy.examples import bulk_copy_manual as bcm
from numba_asynccopy.examples import tma_copy as tc
from numba_asynccopy.examples import tma_copy_manual as tcm

from ..conftest import SIM, SIM_NVCC, skip_on_sim

pytestmark = pytest.mark.gpu

rng = np.random.default_rng()  # fresh data every run
POISON = np.uint32(0xFFC00000)  # a float32 NaN


def poisoned(shape, dtype=np.uint32):
    out = np.empty(shape, dtype)
    out.view(np.uint32)[...] = POISON
    return out


def multiprocessors():
    """The GPU's SM count; 2 in the simulator (its device has no attributes):
    a persistent grid of the same shape, smaller."""
    return 2 if SIM else cuda.get_current_device().MULTIPROCESSOR_COUNT


def random_words(shape):
    return rng.integers(0, 2**32, shape, dtype=np.uint32)


_kernels = {}


def kernel(kind, stages, shape, checked=False, run=0):
    key = (kind, stages, shape, checked, run)
    if key not in _kernels:
        with ac.checked_mode(checked):
            if kind == "bulk":
                _kernels[key] = cuda.jit(bc.SIGNATURE)(bc.make_bulk_copy(stages, shape, run))
            else:
                _kernels[key] = cuda.jit(tc.SIGNATURE)(tc.make_tma_copy(stages, shape, run))
    return _kernels[key]


# --- bulk copy ------------------------------------------------------------------

BULK_CONFIGS = list(bc.SWEEP) + [(2, 16), (3, 1024)]
# checked mode (bounded waits, view checks) on a few: enough for the logic, quick under the sanitizers
BULK_CASES = [(c, False) for c in BULK_CONFIGS] + [(c, True) for c in (bc.SWEEP[0], (2, 16))]


def bulk_sizes(chunk):
    words = bc.tile_words(chunk)
    return [
        words * int(rng.integers(9, 14)) + int(rng.integers(1, words)),  # whole tiles and a tail
        words * 12,  # whole tiles only
        int(rng.integers(1, words)),  # less than one tile: all tail
    ]


@pytest.mark.parametrize("cfg,checked", BULK_CASES,
                         ids=["s{}_c{}".format(*c) + ("_checked" if k else "") for c, k in BULK_CASES])
def test_bulk_copy(cfg, checked):
    stages, chunk = cfg
    k = kernel("bulk", stages, chunk, checked)
    for n in bulk_sizes(chunk):
        src = random_words(n)
        d_dst = cuda.to_device(poisoned(n))
        k[3, bc.BLOCK](cuda.to_device(src), d_dst)  # 3 blocks: 3-5 tiles each
        np.testing.assert_array_equal(d_dst.copy_to_host(), src, err_msg=f"n={n}")


# run mode: the benchmark's run sweep, runs shorter than the ring (a block's
# count below stages) and runs of one tile
BULK_RUN_CONFIGS = list(bc.RUN_SWEEP) + [(4, 1024, 3), (3, 16, 1), (2, 256, 5), (3, 64, 2), (2, 64, 5)]
BULK_RUN_CASES = [(c, False) for c in BULK_RUN_CONFIGS] + [((4, 1024, 3), True)]


def run_tiles(run):
    """Tiles for whole runs and a partial last run (run 1: whole runs only)."""
    return run * int(rng.integers(2, 5)) + (int(rng.integers(1, run)) if run > 1 else 0)


@pytest.mark.parametrize("cfg,checked", BULK_RUN_CASES,
                         ids=["s{}_c{}_r{}".format(*c) + ("_checked" if k else "") for c, k in BULK_RUN_CASES])
def test_bulk_copy_runs(cfg, checked):
    stages, chunk, run = cfg
    words = bc.tile_words(chunk)
    k = kernel("bulk", stages, chunk, checked, run)
    # whole runs, a partial last run and a tail; then a tail only
    for n in (words * run_tiles(run) + int(rng.integers(1, words)), int(rng.integers(1, words))):
        src = random_words(n)
        d_dst = cuda.to_device(poisoned(n))
        # one spare block: no tiles (count 0), it only helps with the tail
        k[bc.grid_for_runs(n, chunk, run) + 1, bc.BLOCK](cuda.to_device(src), d_dst)
        np.testing.assert_array_equal(d_dst.copy_to_host(), src, err_msg=f"n={n}")


def test_bulk_copy_persistent_grid_and_float_data():
    # the benchmark's launch shape (several blocks per SM); float32 bits copied exactly
    stages, chunk = bc.SWEEP[0]
    sms = multiprocessors()
    n = bc.tile_words(chunk) * (bc.grid_for(stages, chunk, sms) + 5) + 333
    src = rng.standard_normal(n).astype(np.float32)
    d_dst = cuda.to_device(poisoned(n, np.float32))
    kernel("bulk", stages, chunk)[bc.grid_for(stages, chunk, sms), bc.BLOCK](
        cuda.to_device(src).view(np.uint32), d_dst.view(np.uint32))
    np.testing.assert_array_equal(d_dst.copy_to_host(), src)


# --- TMA tile copy -----------------------------------------------------------------

TMA_CONFIGS = list(tc.SWEEP) + [(2, (8, 4)), (3, (1, 256))]
TMA_CASES = [(c, False) for c in TMA_CONFIGS] + [(c, True) for c in (tc.SWEEP[0], (2, (8, 4)))]


def tma_shapes(box):
    br, bc_ = box
    return [
        # partial boxes on both axes (cols: a multiple of 4, TMA's 16-byte row stride)
        (br * int(rng.integers(3, 6)) + int(rng.integers(1, br)) if br > 1 else 7,
         4 * ((bc_ * int(rng.integers(2, 5)) + int(rng.integers(1, bc_))) // 4 + 1)),
        (br * 4, bc_ * 3),  # whole boxes only
        (max(1, br // 2), 4),  # smaller than one box
    ]


@pytest.mark.parametrize("cfg,checked", TMA_CASES,
                         ids=["s{}_b{}x{}".format(c[0], *c[1]) + ("_checked" if k else "") for c, k in TMA_CASES])
def test_tma_copy(cfg, checked):
    stages, box = cfg
    k = kernel("tma", stages, box, checked)
    for rows, cols in tma_shapes(box):
        src = random_words((rows, cols))
        d_src, d_dst = cuda.to_device(src), cuda.to_device(poisoned((rows, cols)))
        smap, dmap = tc.make_maps(d_src, d_dst, box)
        k[3, tc.BLOCK](smap, dmap, rows, cols)
        np.testing.assert_array_equal(d_dst.copy_to_host(), src, err_msg=f"shape {(rows, cols)}")


# run mode: the benchmark's run sweep, a run shorter than the ring, runs of one box
TMA_RUN_CONFIGS = list(tc.RUN_SWEEP) + [(4, (32, 64), 2), (3, (8, 4), 1), (2, (8, 16), 5), (3, (8, 4), 2)]
TMA_RUN_CASES = [(c, False) for c in TMA_RUN_CONFIGS] + [((4, (32, 64), 2), True)]


def tma_run_shape(box, run):
    """A shape of ``run_tiles(run)`` boxes (whole runs and a partial last
    run), partial boxes on both axes where the box allows."""
    br, bc_ = box
    boxes = run_tiles(run)
    # box columns per box row: a divisor of the box count, at least 2 where it can be
    tiles_c = next(d for d in (3, 2, 5, 7, 1) if boxes % d == 0)
    rows = br * (boxes // tiles_c - 1) + (int(rng.integers(1, br + 1)))
    cols = bc_ * (tiles_c - 1) + 4 * int(rng.integers(1, bc_ // 4 + 1))
    return rows, cols


@pytest.mark.parametrize("cfg,checked", TMA_RUN_CASES,
                         ids=["s{}_b{}x{}_r{}".format(c[0], *c[1], c[2]) + ("_checked" if k else "")
                              for c, k in TMA_RUN_CASES])
def test_tma_copy_runs(cfg, checked):
    stages, box, run = cfg
    k = kernel("tma", stages, box, checked, run)
    for rows, cols in (tma_run_shape(box, run), (max(1, box[0] // 2), 4)):
        src = random_words((rows, cols))
        d_src, d_dst = cuda.to_device(src), cuda.to_device(poisoned((rows, cols)))
        smap, dmap = tc.make_maps(d_src, d_dst, box)
        # one spare block: no boxes (count 0), it exits at once
        k[tc.grid_for_runs(rows, cols, box, run) + 1, tc.BLOCK](smap, dmap, rows, cols)
        np.testing.assert_array_equal(d_dst.copy_to_host(), src, err_msg=f"shape {(rows, cols)}")


def test_tma_copy_persistent_grid_float_data_and_strided_views():
    stages, box = tc.SWEEP[0]
    sms = multiprocessors()
    grid = tc.grid_for(stages, box, sms)
    # float32 tensors, more boxes than blocks; destination a column window of a wider array
    rows, cols = box[0] * 7 + 5, box[1] * (grid // 7 + 2) + 12
    src = rng.standard_normal((rows, cols)).astype(np.float32)
    wide = poisoned((rows, cols + 40), np.float32)
    d_wide = cuda.to_device(wide)
    d_dst = d_wide[:, 20:20 + cols]
    smap, dmap = tc.make_maps(cuda.to_device(src), d_dst, box)
    kernel("tma", stages, box)[grid, tc.BLOCK](smap, dmap, rows, cols)
    got = d_wide.copy_to_host()
    np.testing.assert_array_equal(got[:, 20:20 + cols], src)
    # nothing written outside the window (compare bits: the poison is a NaN)
    assert np.array_equal(got[:, :20].view(np.uint32), wide[:, :20].view(np.uint32))
    assert np.array_equal(got[:, 20 + cols:].view(np.uint32), wide[:, 20 + cols:].view(np.uint32))


# the hand-written rings the benchmark compares the pipelines with: the same checks

@pytest.mark.parametrize("stages, chunk, run", [(4, 1024, 0), (3, 256, 5)])
def test_hand_written_bulk_copy(stages, chunk, run):
    k = cuda.jit(bc.SIGNATURE)(bcm.make_bulk_copy(stages, chunk, run))
    words = bc.tile_words(chunk)
    n = words * (run_tiles(run) if run else 11) + int(rng.integers(1, words))
    src = random_words(n)
    d_dst = cuda.to_device(poisoned(n))
    grid = bc.grid_for_runs(n, chunk, run) + 1 if run else 3
    k[grid, bc.BLOCK](cuda.to_device(src), d_dst)
    np.testing.assert_array_equal(d_dst.copy_to_host(), src)


@pytest.mark.parametrize("stages, box, run", [(4, (8, 32), 0), (3, (8, 16), 5)])
def test_hand_written_tma_copy(stages, box, run):
    k = cuda.jit(tc.SIGNATURE)(tcm.make_tma_copy(stages, box, run))
    rows, cols = tma_run_shape(box, run) if run else tma_shapes(box)[0]
    src = random_words((rows, cols))
    d_src, d_dst = cuda.to_device(src), cuda.to_device(poisoned((rows, cols)))
    smap, dmap = tc.make_maps(d_src, d_dst, box)
    grid = tc.grid_for_runs(rows, cols, box, run) + 1 if run else 3
    k[grid, tc.BLOCK](smap, dmap, rows, cols)
    np.testing.assert_array_equal(d_dst.copy_to_host(), src, err_msg=f"shape {(rows, cols)}")


def test_make_maps_rejects_mismatched_tensors():
    a = cuda.to_device(np.zeros((8, 16), np.uint32))
    with pytest.raises(ValueError, match="one shape"):
        tc.make_maps(a, cuda.to_device(np.zeros((8, 20), np.uint32)), (8, 16))
    with pytest.raises(ValueError, match="4-byte"):
        tc.make_maps(cuda.to_device(np.zeros((8, 16), np.float64)),
                     cuda.to_device(np.zeros((8, 16), np.float64)), (8, 16))


# --- the CUDA C++ twins ----------------------------------------------------------

@pytest.fixture(scope="module")
def bulk_twins(twins):
    """The bulk/TMA launchers of the session's twins library (tests/gpu/conftest.py)."""
    from numba_asynccopy.bench.suites_async import _Twin

    return _Twin(twins)


def _ptr(a):
    return a.__cuda_array_interface__["data"][0]


@skip_on_sim(SIM_NVCC)
def test_bulk_twin_matches_the_source(bulk_twins):
    for stages, chunk in bc.SWEEP:
        n = bc.tile_words(chunk) * 11 + 77
        src = random_words(n)
        d_src, d_dst = cuda.to_device(src), cuda.to_device(poisoned(n))
        bulk_twins.bulk_copy(_ptr(d_src), _ptr(d_dst), n, stages, chunk, 3)
        cuda.synchronize()
        np.testing.assert_array_equal(d_dst.copy_to_host(), src, err_msg=f"{(stages, chunk)}")
    # run mode: whole runs, a partial last run, a tail, one spare block
    for stages, chunk, run in bc.RUN_SWEEP:
        n = bc.tile_words(chunk) * (2 * run + 3) + 77
        src = random_words(n)
        d_src, d_dst = cuda.to_device(src), cuda.to_device(poisoned(n))
        grid = bc.grid_for_runs(n, chunk, run) + 1
        bulk_twins.bulk_copy(_ptr(d_src), _ptr(d_dst), n, stages, chunk, grid, run)
        cuda.synchronize()
        np.testing.assert_array_equal(d_dst.copy_to_host(), src, err_msg=f"{(stages, chunk, run)}")


@skip_on_sim(SIM_NVCC)
def test_tma_twin_matches_the_source(bulk_twins):
    for stages, box in tc.SWEEP:
        rows, cols = box[0] * 4 + 3, box[1] * 3 + 8
        src = random_words((rows, cols))
        d_src, d_dst = cuda.to_device(src), cuda.to_device(poisoned((rows, cols)))
        smap, dmap = tc.make_maps(d_src, d_dst, box)
        bulk_twins.tma_copy(_ptr(smap), _ptr(dmap), rows, cols, stages, box, 3)
        cuda.synchronize()
        np.testing.assert_array_equal(d_dst.copy_to_host(), src, err_msg=f"{(stages, box)}")
    # run mode: (run + 1) x 3 boxes (partial on both axes): 3 whole runs and a
    # partial one of 3 boxes; one spare block
    for stages, box, run in tc.RUN_SWEEP:
        rows, cols = box[0] * run + 3, box[1] * 2 + 8
        src = random_words((rows, cols))
        d_src, d_dst = cuda.to_device(src), cuda.to_device(poisoned((rows, cols)))
        smap, dmap = tc.make_maps(d_src, d_dst, box)
        grid = tc.grid_for_runs(rows, cols, box, run) + 1
        bulk_twins.tma_copy(_ptr(smap), _ptr(dmap), rows, cols, stages, box, grid, run)
        cuda.synchronize()
        np.testing.assert_array_equal(d_dst.copy_to_host(), src, err_msg=f"{(stages, box, run)}")
