"""Benchmark suite of the Ampere-style tensor-core GEMM (``examples/hgemm_sm80``).

Registered in :data:`numba_asynccopy.bench.suites.SUITES` as ``hgemm_sm80``.
For bf16 and fp16 inputs at each size it records the Numba kernel
(``numba_hgemm_sm80_{dtype}_{n}``), its CUDA C++ twin in the same
configuration (``twin_hgemm_sm80_{dtype}_{n}``, ``twins_mma.cu``) and
cuBLAS through ``torch.matmul`` with the same input dtypes and a float32
result (``cublas_f32out_hgemm_{dtype}_{n}``: information only; mma.sync cannot
reach wgmma's rate on Hopper).  Every row first checks its output (poisoned)
on sampled rows against a float64 reference of the same inputs.
"""

from __future__ import annotations

import ctypes
from typing import Callable

import numpy as np

# ``r`` below is the suites' Recorder (suites imports this module: named, not imported)

SIZES = {"full": (4096, 8192), "quick": (1000,)}
STAGES = 4
DTYPES = ("bf16", "f16")


def suite_keys(quick: bool) -> list[str]:
    return [f"{p}_{dt}_{n}" for n in SIZES["quick" if quick else "full"] for dt in DTYPES
            for p in ("numba_hgemm_sm80", "twin_hgemm_sm80", "cublas_f32out_hgemm")]


def _twin(twins) -> Callable:
    lib = twins.lib
    P, I = ctypes.c_void_p, ctypes.c_int
    lib.twin_hgemm_sm80.argtypes = [P, P, P, I, I, I, I, I]
    lib.twin_hgemm_sm80.restype = I

    def run(a: int, b: int, c: int, M: int, N: int, K: int, stages: int, bf16: bool) -> None:
        from .twins import TwinError

        rc = lib.twin_hgemm_sm80(a, b, c, M, N, K, stages, int(bf16))
        if rc:
            raise TwinError(f"twin_hgemm_sm80: CUDA error {rc}" if rc != -1 else
                            "twin_hgemm_sm80: stages not instantiated in twins_mma.cu")

    return run


def suite_hgemm_sm80(r) -> None:
    from numba import cuda

    import numba_asynccopy as ac

    from ..examples import hgemm_sm80 as hg
    from . import devutil as du
    from .twins import ptr

    torch = None
    try:
        import torch  # noqa: F811
    except Exception:
        pass
    rng = np.random.default_rng()
    for n in SIZES["quick" if r.quick else "full"]:
        M = N = K = n
        hg.check_shape(M, N, K)
        work = hg.flops(M, N, K)
        for dt in DTYPES:
            x = rng.standard_normal((M, K)).astype(np.float32)
            y = rng.standard_normal((K, N)).astype(np.float32)
            if dt == "bf16":
                a_h, b_h = ac.bf16_array(x), ac.bf16_array(y)
                av, bv = ac.bf16_values(a_h), ac.bf16_values(b_h)
            else:
                a_h, b_h = x.astype(np.float16), y.astype(np.float16)
                av, bv = a_h.astype(np.float32), b_h.astype(np.float32)
            A, B = cuda.to_device(a_h), cuda.to_device(b_h)
            C = cuda.device_array((M, N), np.float32)
            rows = np.sort(rng.choice(M, 8, replace=False))
            ref = av[rows].astype(np.float64) @ bv.astype(np.float64)
            scale = np.abs(av[rows]).astype(np.float64) @ np.abs(bv).astype(np.float64)

            def check_gemm(launch, limit: float = 1e-4) -> Callable[[], str]:
                def check():
                    du.launch_poisoned(launch, C, "elements of C")
                    got = np.stack([C[i].copy_to_host() for i in rows]).astype(np.float64)
                    err = float(np.max(np.abs(got - ref) / scale))
                    if not err < limit:
                        raise AssertionError(f"error {err:.2e} of sum|a*b| on sampled rows (limit {limit})")
                    return f"every element written; max error {err:.1e} of sum|a*b| on 8 sampled rows"
                return check

            cfg = {"M": M, "N": N, "K": K, "dtype": dt, "stages": STAGES}
            key = f"numba_hgemm_sm80_{dt}_{n}"
            label = f"HGEMM sm80 {dt} {n}^3 (cp.async + ldmatrix + mma.sync, {STAGES} stages)"
            try:
                kern = cuda.jit(hg.signature(dt))(hg.make_hgemm(dt, STAGES))
                g = hg.grid(M, N)
                launch = (lambda k=kern: k[g, hg.BLOCK](A, B, C))
                r.measure(key, label, "numba", "TFLOP/s", work, launch, check_gemm(launch),
                          config=cfg, reps=5 if r.quick else 10)
            except Exception as e:
                r.fail(key, label, "numba", "TFLOP/s", f"error: {type(e).__name__}: {e}")
            key = f"twin_hgemm_sm80_{dt}_{n}"
            label = f"HGEMM sm80 {dt} {n}^3 CUDA C++ twin"
            try:
                tw = _twin(r.twins())
                launch = (lambda: tw(ptr(A), ptr(B), ptr(C), M, N, K, STAGES, dt == "bf16"))
                r.measure(key, label, "cuda-c++", "TFLOP/s", work, launch, check_gemm(launch),
                          config=cfg, reps=5 if r.quick else 10)
            except Exception as e:
                r.fail(key, label, "cuda-c++", "TFLOP/s", f"error: {type(e).__name__}: {e}")
            key = f"cublas_f32out_hgemm_{dt}_{n}"
            label = f"cuBLAS {dt} GEMM {n}^3, fp32 out (torch.matmul)"
            try:
                if torch is None:
                    raise RuntimeError("torch not available")
                tdt = torch.bfloat16 if dt == "bf16" else torch.float16
                ta = torch.from_numpy(av).cuda().to(tdt)
                tb = torch.from_numpy(bv).cuda().to(tdt)
                tc = torch.as_tensor(C, device="cuda")
                # cuBLAS's bf16/fp16 GEMM with a bf16/fp16 result, then the fp32 copy the row checks
                launch = (lambda: tc.copy_(torch.matmul(ta, tb)))
                # its result is rounded to the input dtype before the copy: a looser limit
                r.measure(key, label, "cublas", "TFLOP/s", work, launch,
                          check_gemm(launch, 1e-2), config=cfg, reps=5 if r.quick else 10)
            except Exception as e:
                r.fail(key, label, "cublas", "TFLOP/s", f"error: {type(e).__name__}: {e}")
            del A, B, C


SUITES = {"hgemm_sm80": suite_hgemm_sm80}
