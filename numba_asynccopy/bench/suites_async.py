"""Benchmark suites of the bulk-copy and TMA-tile-copy examples.

Registered in :data:`numba_asynccopy.bench.suites.SUITES` as ``bulk`` and
``tma``; they record the keys ``numba_bulk_copy``, ``twin_bulk_copy``,
``numba_tma_copy`` and ``twin_tma_copy`` that ``report.comparisons`` compares
with ``torch_copy`` (measured by the ``copy`` suite of the same run, over
the same number of bytes) and with each other.

Each suite first runs its kernel in checked mode on a small input: checked
mode bounds every mbarrier wait, so a pipeline bug traps (and is recorded)
instead of hanging the suite.  Then it sweeps the example's configurations
briefly (``SWEEP``: persistent grid-stride grids; ``RUN_SWEEP``: ``run``
consecutive tiles per block, keys ending ``_r{run}``), times the fastest fully, and runs the CUDA C++ twin
(``twins_bulk.cu``) in that same configuration.  Every row checks its
output (poisoned first) against the fresh random source before timing.

A torch copy of the suite's own buffers is also recorded
(``torch_copy_bulk``, ``torch_copy_tma``: information only, so that a run
with ``--only bulk,tma`` still shows the ceiling beside the rows).
"""

from __future__ import annotations

import ctypes
import numpy as np

# "Recorder" in the annotations is bench/suites.py's, which stands above this
# module (it registers these suites)

SIZES = {
    # the same bytes as the copy suite's 1 GiB torch copy
    "full": {"bulk_words": 1 << 28, "tma_shape": (16384, 16384)},
    # tails: a partial chunk; partial boxes on both axes
    "quick": {"bulk_words": (1 << 24) + 4100, "tma_shape": (4100, 4092)},
}
SMOKE_BULK_WORDS = 3 * 8192 * 7 + 1000
SMOKE_TMA_SHAPE = (200, 700)

#: measurement keys each suite records (for a suite that dies early)
SUITE_KEYS = {
    "bulk": ["numba_bulk_copy", "twin_bulk_copy", "numba_bulk_copy_manual"],
    "tma": ["numba_tma_copy", "twin_tma_copy", "numba_tma_copy_manual"],
}


class _Twin:
    """The bulk/TMA launchers of the twins library (``twins_bulk.cu``)."""

    def __init__(self, twins):
        lib = twins.lib
        P, I, LL = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
        lib.twin_bulk_copy.argtypes = [P, P, LL, I, I, I, I]
        lib.twin_tma_copy.argtypes = [P, P, LL, LL, I, I, I, I, I]
        lib.twin_bulk_copy.restype = lib.twin_tma_copy.restype = I
        self.lib = lib

    @staticmethod
    def _check(name: str, rc: int) -> None:
        from .twins import TwinError

        if rc == -1:
            raise TwinError(f"{name}: configuration not instantiated in twins_bulk.cu")
        if rc:
            raise TwinError(f"{name}: CUDA error {rc}")

    def bulk_copy(self, src: int, dst: int, n: int, stages: int, chunk_bytes: int, grid: int,
                  run: int = 0) -> None:
        self._check("twin_bulk_copy", self.lib.twin_bulk_copy(src, dst, n, stages, chunk_bytes, grid, run))

    def tma_copy(self, src_map: int, dst_map: int, rows: int, cols: int, stages: int,
                 box: tuple[int, int], grid: int, run: int = 0) -> None:
        self._check("twin_tma_copy", self.lib.twin_tma_copy(src_map, dst_map, rows, cols, stages,
                                                            box[0], box[1], grid, run))


def _fail_all(r: "Recorder", suite: str, labels: dict, error: str) -> None:
    for key in SUITE_KEYS[suite]:
        impl = "cuda-c++" if key.startswith("twin_") else "numba"
        r.fail(key, labels[key], impl, "TB/s", error)


def _smoke(a: np.ndarray, cases, launch_case) -> str:
    """Checked mode, small input: ``launch_case(case, d_a, out)`` copies ``a``
    into a fresh poisoned ``out`` for each case; raise unless it arrived."""
    from numba import cuda

    d_a = cuda.to_device(a)
    for case in cases:
        out = cuda.to_device(np.full_like(a, 0xFFC00000))
        launch_case(case, d_a, out)
        got = out.copy_to_host()
        if not np.array_equal(got, a):
            raise AssertionError("checked-mode smoke test ({}, {}, run {}): ".format(*case)
                                 + f"{int((got != a).sum())} words differ")
    return "ok"


def _buffers(r: "Recorder", torch_key: str, shape) -> tuple:
    """Source (fresh random) and destination, their check, the torch row."""
    from numba import cuda

    from . import copyrows
    from . import devutil as du

    src = cuda.device_array(shape, np.uint32)
    dst = cuda.device_array(shape, np.uint32)
    du.fill_random(src)
    nbytes = 2 * src.size * 4  # read + written
    check = copyrows.copy_check(src, dst)
    copyrows.torch_row(r, torch_key, "torch device-to-device copy (this suite's buffers; information)",
                       src, dst, nbytes, check)
    return src, dst, nbytes, check


# --- bulk copy ------------------------------------------------------------------

BULK_LABELS = {"numba_bulk_copy": "bulk copy (cp.async.bulk on mbarriers)",
               "twin_bulk_copy": "bulk copy, CUDA C++",
               "numba_bulk_copy_manual": "bulk copy, ring written by hand"}


def _bulk_smoke() -> str:
    """Checked mode, small input, three configurations (one in run mode):
    traps instead of hanging."""
    from numba import cuda

    import numba_asynccopy as ac

    from ..examples import bulk_copy as bc

    def launch_case(case, d_a, out):
        stages, chunk, run = case
        with ac.checked_mode(True):
            kern = cuda.jit(bc.SIGNATURE)(bc.make_bulk_copy(stages, chunk, run))
        grid = bc.grid_for_runs(d_a.size, chunk, run) + 1 if run else 5
        kern[grid, bc.BLOCK](d_a, out)

    a = np.random.default_rng().integers(0, 2**32, SMOKE_BULK_WORDS, dtype=np.uint32)
    # run mode: 168 tiles in runs of 16 (the last partial), one spare block
    return _smoke(a, ((4, 8192, 0), (2, 4096, 0), (4, 4096, 16)), launch_case)


def suite_bulk(r: "Recorder") -> None:
    from numba import cuda

    from ..examples import bulk_copy as bc
    from . import copyrows
    from .twins import ptr

    try:
        _bulk_smoke()
    except Exception as e:
        _fail_all(r, "bulk", BULK_LABELS, f"error: checked-mode smoke test: {type(e).__name__}: {e}")
        return
    n = SIZES["quick" if r.quick else "full"]["bulk_words"]
    src, dst, nbytes, check = _buffers(r, "torch_copy_bulk", n)
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT

    def entry(stages, chunk, run=0):
        # run 0: the persistent grid (blocks_per_sm a multiprocessor); run N: a block a run
        key = f"bulk_copy_sweep_s{stages}_c{chunk}" + (f"_r{run}" if run else "")
        grid = bc.grid_for_runs(n, chunk, run) if run else bc.grid_for(stages, chunk, sms)

        def make_launch():
            kern = cuda.jit(bc.SIGNATURE)(bc.make_bulk_copy(stages, chunk, run))
            r.dump_code(key, kern)
            return lambda: kern[grid, bc.BLOCK](src, dst)
        config = {"stages": stages, "chunk_bytes": chunk, "run": run, "block": bc.BLOCK, "grid": grid,
                  "blocks_per_sm": bc.blocks_per_sm(stages, chunk)}
        label = f"bulk copy sweep (stages {stages}, chunk {chunk} B" + (f", run {run})" if run else ")")
        return key, label, config, make_launch

    def twin(c):
        tw = _Twin(r.twins())
        return lambda: tw.bulk_copy(ptr(src), ptr(dst), n, c["stages"], c["chunk_bytes"], c["grid"], c["run"])

    def manual(c):
        from ..examples import bulk_copy_manual as bcm

        kern = cuda.jit(bc.SIGNATURE)(bcm.make_bulk_copy(c["stages"], c["chunk_bytes"], c["run"]))
        return lambda: kern[c["grid"], bc.BLOCK](src, dst)

    keys = SUITE_KEYS["bulk"]
    copyrows.fastest_then_twin(r, tuple(keys[:2]), tuple(BULK_LABELS[k] for k in keys[:2]),
                               [entry(*cfg) for cfg in tuple(bc.SWEEP) + tuple(bc.RUN_SWEEP)],
                               nbytes, check, twin, (keys[2], BULK_LABELS[keys[2]], manual))


# --- TMA tile copy ----------------------------------------------------------------

TMA_LABELS = {"numba_tma_copy": "TMA tile copy (2-D tensor maps, multi-stage)",
              "twin_tma_copy": "TMA tile copy, CUDA C++",
              "numba_tma_copy_manual": "TMA tile copy, ring written by hand"}


def _tma_smoke() -> str:
    from numba import cuda

    import numba_asynccopy as ac

    from ..examples import tma_copy as tc

    rows, cols = SMOKE_TMA_SHAPE

    def launch_case(case, d_a, out):
        stages, box, run = case
        with ac.checked_mode(True):
            kern = cuda.jit(tc.SIGNATURE)(tc.make_tma_copy(stages, box, run))
        smap, dmap = tc.make_maps(d_a, out, box)
        grid = tc.grid_for_runs(rows, cols, box, run) + 1 if run else 5
        kern[grid, tc.BLOCK](smap, dmap, rows, cols)

    a = np.random.default_rng().integers(0, 2**32, (rows, cols), dtype=np.uint32)
    # run mode: 77 boxes in runs of 16 (the last partial), one spare block
    return _smoke(a, ((4, (32, 64), 0), (2, (16, 128), 0), (4, (32, 64), 16)), launch_case)


def suite_tma(r: "Recorder") -> None:
    from numba import cuda

    from ..examples import tma_copy as tc
    from . import copyrows
    from .twins import ptr

    try:
        _tma_smoke()
    except Exception as e:
        _fail_all(r, "tma", TMA_LABELS, f"error: checked-mode smoke test: {type(e).__name__}: {e}")
        return
    rows, cols = SIZES["quick" if r.quick else "full"]["tma_shape"]
    src, dst, nbytes, check = _buffers(r, "torch_copy_tma", (rows, cols))
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    r.info["tma_shape"] = [rows, cols]
    maps = {}

    def entry(stages, box, run=0):
        # run 0: the persistent grid (blocks_per_sm a multiprocessor); run N: a block a run
        key = f"tma_copy_sweep_s{stages}_b{box[0]}x{box[1]}" + (f"_r{run}" if run else "")
        grid = tc.grid_for_runs(rows, cols, box, run) if run else tc.grid_for(stages, box, sms)

        def make_launch():
            kern = cuda.jit(tc.SIGNATURE)(tc.make_tma_copy(stages, box, run))
            r.dump_code(key, kern)
            if box not in maps:
                maps[box] = tc.make_maps(src, dst, box)
            # the maps' device buffers: no per-launch interface conversion
            sm, dm = (m.device for m in maps[box])
            return lambda: kern[grid, tc.BLOCK](sm, dm, rows, cols)
        config = {"stages": stages, "box": list(box), "run": run, "block": tc.BLOCK, "grid": grid,
                  "blocks_per_sm": tc.blocks_per_sm(stages, box), "shape": [rows, cols]}
        label = f"TMA copy sweep (stages {stages}, box {box[0]}x{box[1]}" + (f", run {run})" if run else ")")
        return key, label, config, make_launch

    def twin(c):
        tw = _Twin(r.twins())
        box = tuple(c["box"])
        sm, dm = (ptr(m) for m in maps[box])
        return lambda: tw.tma_copy(sm, dm, rows, cols, c["stages"], box, c["grid"], c["run"])

    def manual(c):
        from ..examples import tma_copy_manual as tcm

        box = tuple(c["box"])
        kern = cuda.jit(tc.SIGNATURE)(tcm.make_tma_copy(c["stages"], box, c["run"]))
        sm, dm = (m.device for m in maps[box])
        return lambda: kern[c["grid"], tc.BLOCK](sm, dm, rows, cols)

    keys = SUITE_KEYS["tma"]
    copyrows.fastest_then_twin(r, tuple(keys[:2]), tuple(TMA_LABELS[k] for k in keys[:2]),
                               [entry(*cfg) for cfg in tuple(tc.SWEEP) + tuple(tc.RUN_SWEEP)],
                               nbytes, check, twin, (keys[2], TMA_LABELS[keys[2]], manual))


SUITES = {"bulk": suite_bulk, "tma": suite_tma}
