"""Benchmark suite of the tensor-core GEMM (``examples/hgemm.py``) against
cuBLAS (``torch.matmul``) with the same dtypes, bf16 and fp16 in and out,
fp32 accumulation, and against its CUDA C++ twin (``twins_hgemm.cu``: the
same algorithm, tile and instructions through inline PTX).

For each size and dtype it records, timed in alternation in three rounds
(so that clock or temperature drift hits every row alike; the report gives
the spread of each ratio over the rounds), each turn of the alternation in
a new order (so that no row always runs right after the same one):

- ``cublas_hgemm_{d}_{n}``: ``torch.matmul(A, B, out=C)``, and
  ``cublas_solo_hgemm_{d}_{n}`` the same timed alone before the others
  (alternation can cost cuBLAS: the report shows ours against both);
- ``numba_hgemm_{d}_{n}`` / ``twin_hgemm_{d}_{n}``: the kernel in its
  benchmark configuration (:data:`GRID`) and its twin;
- ``numba_hgemm_{grid}_{d}_{n}`` / ``twin_hgemm_{grid}_{d}_{n}``: the other
  grids of :data:`GRIDS` (one block a tile, persistent, 2-CTA clusters),
  for the record;
- ``err_numba_hgemm_{d}_{n}`` / ``err_cublas_hgemm_{d}_{n}``: the largest
  error on :data:`ERR_ROWS` sampled rows against a float64 product of the
  same inputs, relative to ``sum |a * b|`` of the element (the report's
  target: ours at most 1.5x cuBLAS's);
- ``compile_hgemm_first_{d}`` (seconds: building the kernel, compiling it
  and the first launch) and ``compile_hgemm_cached_{d}`` (microseconds of
  host time of a later call of ``hgemm.bind``'s launcher, the GPU idle;
  ``config["hgemm_run_us"]``: the same for ``hgemm.run``, which converts
  the torch tensors and maps on every call).

The kernels are timed through ``hgemm.bind`` launchers: ``hgemm.run``'s
conversions cost as long as a 4096^3 GEMM runs, and timing them measured
the host, not the kernel (the spread of the earlier 4096^3 rows).

Every timed row first checks its output: C poisoned (NaN), then every
element written and the sampled rows within 1e-2 of the float64 product
(bf16 output rounding)."""

from __future__ import annotations

import ctypes
import time
from typing import Callable

import numpy as np

SIZES = {"full": (4096, 8192), "quick": (1000,)}
DTYPES = ("bf16", "f16")
BN = 256
STAGES = 4
#: the grids: one block a tile, persistent (a block per multiprocessor walking
#: the tiles), persistent in 2-CTA clusters multicasting B
GRIDS = {"tile": (False, 1), "persistent": (True, 1), "cluster": (True, 2)}
#: the benchmark configuration's grid (rows ``numba_hgemm_*``, ``twin_hgemm_*``);
#: the others are recorded as ``numba_hgemm_{grid}_*`` / ``twin_hgemm_{grid}_*``
GRID = "persistent"
#: rows of C sampled for the error rows
ERR_ROWS = 64


def suite_keys(quick: bool) -> list[str]:
    keys = [f"{p}_{d}_{n}" for n in SIZES["quick" if quick else "full"] for d in DTYPES
            for p in ("cublas_solo_hgemm", "cublas_hgemm", "numba_hgemm", "twin_hgemm",
                      *[f"{w}_hgemm_{g}" for g in other_grids() for w in ("numba", "twin")],
                      "err_numba_hgemm", "err_cublas_hgemm")]
    return keys + [f"compile_hgemm_{w}_{d}" for d in DTYPES for w in ("first", "cached")]


def other_grids() -> list[str]:
    return [g for g in GRIDS if g != GRID]


def _twin(twins) -> Callable:
    lib = twins.lib
    P, I = ctypes.c_void_p, ctypes.c_int
    lib.twin_hgemm.argtypes = [P, P, P, I, I, I, I, I, I, I, I]
    lib.twin_hgemm.restype = I

    def run(ta: int, tb: int, c: int, M: int, N: int, K: int, bf16: bool, persistent: bool,
            cluster: int, grid: int) -> None:
        from .twins import TwinError

        mode = 2 if cluster == 2 else int(persistent)
        rc = lib.twin_hgemm(ta, tb, c, M, N, K, BN, STAGES, int(bf16), mode, grid)
        if rc:
            raise TwinError(f"twin_hgemm: CUDA error {rc}" if rc != -1 else
                            "twin_hgemm: configuration not instantiated in twins_hgemm.cu")

    return run


def written(C, launch: Callable[[], None]) -> None:
    """Launch into a NaN-filled torch ``C``; raise where an element stays NaN."""
    import torch

    C.fill_(float("nan"))
    launch()
    torch.cuda.synchronize()
    if torch.isnan(C).any():
        raise AssertionError("elements of C were not written")


def sampled_check(C, rows, ref) -> Callable[[Callable[[], None]], Callable[[], str]]:
    """``check_of(launch)``: a row's check that every element of ``C`` is
    written and ``C[rows]`` is within 1e-2 relative (Frobenius) error of the
    float64 ``ref``."""
    def check_of(launch: Callable[[], None]) -> Callable[[], str]:
        def check() -> str:
            written(C, launch)
            err = float((C[rows].double() - ref).norm() / ref.norm())
            if not err < 1e-2:
                raise AssertionError(f"relative error {err:.2e} on sampled rows (limit 1e-2)")
            return (f"every element written; rel. error {err:.1e} on {len(rows)} sampled rows "
                    "(float64 ref)")
        return check
    return check_of


def suite_hgemm(r) -> None:
    import torch

    from ..examples import hgemm
    from .twins import ptr

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    twin: list[Callable] = []  # the twin's launcher, bound once

    def twin_run(*args) -> None:
        if not twin:
            twin.append(_twin(r.twins()))
        twin[0](*args)

    first_done: set[str] = set()
    for n in SIZES["quick" if r.quick else "full"]:
        for d in DTYPES:
            tdt = torch.bfloat16 if d == "bf16" else torch.float16
            A = torch.randn(n, n, device="cuda", dtype=tdt)
            B = torch.randn(n, n, device="cuda", dtype=tdt)
            C = torch.empty(n, n, device="cuda", dtype=tdt)
            rng = np.random.default_rng()
            rows = torch.as_tensor(np.sort(rng.choice(n, ERR_ROWS, replace=False)), device="cuda")
            ref = A[rows].double() @ B.double()
            scale = A[rows].double().abs() @ B.double().abs()
            work = hgemm.flops(n, n, n)

            def max_error(launch) -> float:
                written(C, launch)
                return float(((C[rows].double() - ref).abs() / scale).max())

            check_of = sampled_check(C, rows, ref)

            view = torch.uint16 if d == "bf16" else torch.float16
            Au, Bu, Cu = A.view(view), B.view(view), C.view(view)
            out = "bf16" if d == "bf16" else "float16"
            maps = hgemm.tensor_maps(Au, Bu)
            ta, tb = (ptr(m) for m in maps)
            cfg = {"M": n, "N": n, "K": n, "bn": BN, "stages": STAGES}
            entries = [(f"cublas_hgemm_{d}_{n}", f"cuBLAS {d} GEMM {n}^3 (torch.matmul)", "cublas",
                        "TFLOP/s", work, (lambda: torch.matmul(A, B, out=C)), None, dict(cfg))]
            for gname in [GRID] + other_grids():
                alt = gname != GRID
                pers, cl = GRIDS[gname]
                grid = hgemm.persistent_grid(n, n, BN, sms, cl) if pers else 0
                what = {"tile": "a block a tile", "persistent": "persistent",
                        "cluster": "persistent, 2-CTA clusters, B multicast"}[gname]
                suffix = f"_{gname}" if alt else ""
                g = None
                t0 = time.perf_counter()
                try:
                    g = hgemm.make_hgemm(bn=BN, stages=STAGES, dtype=d, out=out, persistent=pers,
                                         cluster=cl)
                    hgemm.run(g, Au, Bu, Cu, maps)
                    torch.cuda.synchronize()
                    first = time.perf_counter() - t0
                    go = hgemm.bind(g, Au, Bu, Cu, maps)
                    if not alt and d not in first_done:
                        first_done.add(d)
                        r.record_value(f"compile_hgemm_first_{d}",
                                       f"HGEMM {d} first call (make_hgemm, compile, launch)", "numba",
                                       "s", first, config={"bn": BN, "grid": gname})
                        # host time of one call, the GPU idle: run() converts the torch
                        # tensors and maps each time, a bound launcher did so once
                        host = {"run": [], "bound": []}
                        for _ in range(20):
                            for how, call in (("run", lambda: hgemm.run(g, Au, Bu, Cu, maps)),
                                              ("bound", go)):
                                t1 = time.perf_counter()
                                call()
                                host[how].append(time.perf_counter() - t1)
                                torch.cuda.synchronize()
                        run_us = float(np.median(host["run"])) * 1e6
                        r.record_value(f"compile_hgemm_cached_{d}",
                                       f"HGEMM {d} compiled call, host time of hgemm.bind's launcher",
                                       "numba", "us", float(np.median(host["bound"])) * 1e6,
                                       config={"calls": 20, "grid": gname,
                                               "hgemm_run_us": round(run_us, 1)})
                except Exception as e:  # the rows below report it as well
                    first = float("nan")
                    go = None
                    print(f"  hgemm ({what}) first call failed: {e}", flush=True)
                # timed through the bound launcher (hgemm.run's per-call conversions of
                # torch tensors cost about as long as the kernel runs at 4096^3)
                launch = (lambda go=go: go())
                if go is not None:
                    grid = go.grid if pers else 0  # the cluster grid: the pairs resident at once
                c = dict(cfg, grid_kind=gname, grid=grid or list(hgemm.grid(n, n, BN)),
                         first_call_s=round(first, 3))
                entries.append((f"numba_hgemm{suffix}_{d}_{n}",
                                f"HGEMM {d} {n}^3 (wgmma, TMA pipeline, {what})", "numba",
                                "TFLOP/s", work, launch, None, c))

                def twin_launch(pers=pers, cl=cl, grid=grid):
                    twin_run(ta, tb, ptr(C), n, n, n, d == "bf16", pers, cl, grid)
                entries.append((f"twin_hgemm{suffix}_{d}_{n}",
                                f"HGEMM {d} {n}^3 CUDA C++ twin ({what})", "cuda-c++", "TFLOP/s",
                                work, twin_launch, None, dict(c)))
            entries = [e[:6] + (check_of(e[5]),) + e[7:] for e in entries]
            # cuBLAS alone first (no other kernel between its batches), then everything alternated
            r.measure(f"cublas_solo_hgemm_{d}_{n}", f"cuBLAS {d} GEMM {n}^3, timed alone", "cublas",
                      "TFLOP/s", work, entries[0][5], entries[0][6], config=dict(cfg))
            # each turn in a new order: at 8192^3 the GPU is power-limited and a kernel
            # right after cuBLAS (the hottest) runs slower; a fixed order charged that to
            # the row after cuBLAS (ours) in every batch
            r.measure_group(entries, rounds=3, shuffle=True)
            for key, impl, launch in ((f"err_cublas_hgemm_{d}_{n}", "cublas", entries[0][5]),
                                      (f"err_numba_hgemm_{d}_{n}", "numba", entries[1][5])):
                try:
                    err = max_error(launch)
                    r.record_value(key, f"{impl} {d} {n}^3: max |C - ref| / (|A| @ |B|), "
                                        f"{ERR_ROWS} rows", impl, "rel. error", err,
                                   check="float64 reference of the same inputs")
                except Exception as e:
                    r.fail(key, f"{impl} {d} {n}^3 max error", impl, "rel. error",
                           f"error: {type(e).__name__}: {e}")
            del A, B, C, Au, Bu, Cu, maps
