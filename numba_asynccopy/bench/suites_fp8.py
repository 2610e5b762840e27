"""Benchmark suite of the fp8 GEMM (``examples/fp8_gemm.py``) against
cuBLAS's fp8 GEMM through ``torch._scaled_mm``: e4m3 inputs, the same
per-tensor scales, fp32 accumulation, bf16 out.  Ours is timed through
``fp8_gemm.bind``'s launcher (``fp8_gemm.run`` converts the torch tensors
and maps on every call; ``config["host_us"]`` holds both host times).
Registered in
:data:`numba_asynccopy.bench.suites.SUITES` as ``fp8``; its comparison is an
information row (the issue sets no target for fp8).  Each row is checked
first: 8 sampled rows of C against a float64 product of the same fp8
values, relative error below 1e-2 (bf16 output rounding); then both are
timed in alternation, three rounds."""

from __future__ import annotations

import time

import numpy as np

from .suites_tc import sampled_check

# ``r`` below is the suites' Recorder (suites imports this module: named, not imported)

SIZES = {"full": (4096, 8192), "quick": (1024,)}
BN = 256
SCALES = (0.5, 0.25)  # powers of two: the scaled result is exact in fp32 before rounding


def suite_keys(quick: bool) -> list[str]:
    return [f"{p}_{n}" for n in SIZES["quick" if quick else "full"]
            for p in ("cublas_fp8_gemm", "numba_fp8_gemm")]


def suite_fp8(r) -> None:
    import torch

    from ..examples import fp8_gemm

    f8 = torch.float8_e4m3fn
    for n in SIZES["quick" if r.quick else "full"]:
        A = torch.randn(n, n, device="cuda").clamp(-448, 448).to(f8)
        Bt = torch.randn(n, n, device="cuda").clamp(-448, 448).to(f8)  # B transposed: (N, K)
        C = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        sa = torch.tensor(SCALES[0], device="cuda")
        sb = torch.tensor(SCALES[1], device="cuda")
        rows = torch.as_tensor(np.sort(np.random.default_rng().choice(n, 8, replace=False)),
                               device="cuda")
        ref = SCALES[0] * SCALES[1] * (A[rows].double() @ Bt.double().t())
        work = fp8_gemm.flops(n, n, n)

        check_of = sampled_check(C, rows, ref)

        def cublas():
            torch._scaled_mm(A, Bt.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, out=C)

        Au, Bu, Cu = A.view(torch.uint8), Bt.view(torch.uint8), C.view(torch.uint16)
        t0 = time.perf_counter()
        g = fp8_gemm.make_fp8_gemm(bn=BN, dtype="e4m3", out="bf16")
        maps = fp8_gemm.tensor_maps(Au, Bu, BN)
        go = None
        try:
            fp8_gemm.run(g, Au, Bu, Cu, *SCALES, maps=maps)
            torch.cuda.synchronize()
            first = time.perf_counter() - t0
            # timed through the bound launcher: run() converts the torch tensors and
            # maps on every call, about as long as the 4096^3 kernel runs
            go = fp8_gemm.bind(g, Au, Bu, Cu, *SCALES, maps=maps)
            host = {"run": [], "bound": []}
            for _ in range(20):
                for how, call in (("run", lambda: fp8_gemm.run(g, Au, Bu, Cu, *SCALES, maps=maps)),
                                  ("bound", go)):
                    t1 = time.perf_counter()
                    call()
                    host[how].append(time.perf_counter() - t1)
                    torch.cuda.synchronize()
            host_us = {k: round(float(np.median(v)) * 1e6, 1) for k, v in host.items()}
        except Exception as e:  # reported by measure below as well
            first = float("nan")
            host_us = {}
            print(f"  fp8 gemm first call failed: {e}", flush=True)
        launch = lambda go=go: go()  # noqa: E731
        # timed in alternation, three rounds (clock drift hits both alike)
        r.measure_pair(
            (f"cublas_fp8_gemm_{n}", f"cuBLAS fp8 e4m3 GEMM {n}^3 (torch._scaled_mm, bf16 out)",
             "cublas", "TFLOP/s", work, cublas, check_of(cublas),
             {"M": n, "N": n, "K": n, "scales": list(SCALES), "use_fast_accum": False}),
            (f"numba_fp8_gemm_{n}", f"fp8 e4m3 GEMM {n}^3 (wgmma k32, TMA pipeline, bn={BN})",
             "numba", "TFLOP/s", work, launch, check_of(launch),
             {"M": n, "N": n, "K": n, "bn": BN, "first_call_s": round(first, 3),
              "launcher": "fp8_gemm.bind", "host_us": host_us}), rounds=3)


SUITES = {"fp8": suite_fp8}
