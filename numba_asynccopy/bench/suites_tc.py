"""Benchmark suite of the tensor-core GEMM (``examples/hgemm.py``) against
cuBLAS (``torch.matmul``) with the same dtypes, bf16 and fp16 in and out,
fp32 accumulation.  Each row is checked first: 8 sampled rows of C against
a float64 product, relative error below 1e-2 (bf16 output rounding)."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

SIZES = {"full": (4096, 8192), "quick": (1024,)}
DTYPES = ("bf16", "f16")
BN = 256


def suite_keys(quick: bool) -> list[str]:
    return [f"{p}_{d}_{n}" for n in SIZES["quick" if quick else "full"] for d in DTYPES
            for p in ("cublas_hgemm", "numba_hgemm")]


def suite_hgemm(r) -> None:
    import torch

    from ..examples import hgemm

    for n in SIZES["quick" if r.quick else "full"]:
        for d in DTYPES:
            tdt = torch.bfloat16 if d == "bf16" else torch.float16
            A = torch.randn(n, n, device="cuda", dtype=tdt)
            B = torch.randn(n, n, device="cuda", dtype=tdt)
            C = torch.empty(n, n, device="cuda", dtype=tdt)
            rows = torch.as_tensor(np.sort(np.random.default_rng().choice(n, 8, replace=False)),
                                   device="cuda")
            ref = (A[rows].double() @ B.double())
            work = hgemm.flops(n, n, n)

            def check_of(launch) -> Callable[[], str]:
                def check():
                    C.fill_(float("nan"))
                    launch()
                    torch.cuda.synchronize()
                    if torch.isnan(C).any():
                        raise AssertionError("elements of C were not written")
                    err = float((C[rows].double() - ref).norm() / ref.norm())
                    if not err < 1e-2:
                        raise AssertionError(f"relative error {err:.2e} on sampled rows (limit 1e-2)")
                    return f"every element written; rel. error {err:.1e} on 8 sampled rows (float64 ref)"
                return check

            cublas = lambda: torch.matmul(A, B, out=C)  # noqa: E731
            r.measure(f"cublas_hgemm_{d}_{n}", f"cuBLAS {d} GEMM {n}^3 (torch.matmul)", "cublas",
                      "TFLOP/s", work, cublas, check_of(cublas), config={"M": n, "N": n, "K": n})
            view = torch.uint16 if d == "bf16" else torch.float16
            Au, Bu, Cu = A.view(view), B.view(view), C.view(view)
            t0 = time.perf_counter()
            g = hgemm.make_hgemm(bn=BN, dtype=d, out="bf16" if d == "bf16" else "float16")
            maps = hgemm.tensor_maps(Au, Bu)
            launch = lambda g=g, maps=maps: hgemm.run(g, Au, Bu, Cu, maps)  # noqa: E731
            try:
                launch()
                torch.cuda.synchronize()
                first = time.perf_counter() - t0
            except Exception as e:  # reported by measure below as well
                first = float("nan")
                print(f"  hgemm first call failed: {e}", flush=True)
            r.measure(f"numba_hgemm_{d}_{n}", f"HGEMM {d} {n}^3 (wgmma, TMA pipeline, bn={BN})",
                      "numba", "TFLOP/s", work, launch, check_of(launch),
                      config={"M": n, "N": n, "K": n, "bn": BN, "first_call_s": round(first, 3)})
