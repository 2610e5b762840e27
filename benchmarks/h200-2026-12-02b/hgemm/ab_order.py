"""The order of the alternation at 8192^3: the persistent hgemm (this tree's,
and the kernel before its tile walk went to uint32 when
``numba_asynccopy/examples/_hgemm_before.py`` holds that version), its CUDA
C++ twin and cuBLAS, timed in alternation in two fixed orders (ours right
after cuBLAS, then the twin right after cuBLAS) and in shuffled turns.  One
JSON line per dtype and order: TFLOP/s of each and the ratios to the twin.

    python3 ab_order.py <twins.so>      (from the repository root, on the GPU)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

from numba_asynccopy.bench import devutil
from numba_asynccopy.bench.suites_tc import _twin
from numba_asynccopy.bench.twins import Twins, ptr
from numba_asynccopy.examples import hgemm

try:
    from numba_asynccopy.examples import _hgemm_before as before
except ImportError:
    before = None

N = 8192


def main() -> None:
    twin = _twin(Twins(Path(sys.argv[1])))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for d in ("f16", "bf16"):
        tdt = torch.bfloat16 if d == "bf16" else torch.float16
        A, B = (torch.randn(N, N, device="cuda", dtype=tdt) for _ in range(2))
        C = torch.empty(N, N, device="cuda", dtype=tdt)
        view = torch.uint16 if d == "bf16" else torch.float16
        Au, Bu, Cu = A.view(view), B.view(view), C.view(view)
        out = "bf16" if d == "bf16" else "float16"
        maps = hgemm.tensor_maps(Au, Bu)
        ta, tb = (ptr(m) for m in maps)
        grid = hgemm.persistent_grid(N, N, 256, sms)
        fns = {"cublas": lambda: torch.matmul(A, B, out=C)}
        g = hgemm.make_hgemm(bn=256, stages=4, dtype=d, out=out, persistent=True)
        fns["numba"] = hgemm.bind(g, Au, Bu, Cu, maps)
        if before is not None:
            g0 = before.make_hgemm(bn=256, stages=4, dtype=d, out=out, persistent=True)
            fns["numba_before"] = before.bind(g0, Au, Bu, Cu, maps)
        fns["twin"] = lambda: twin(ta, tb, ptr(C), N, N, N, d == "bf16", True, 1, grid)
        ref = None
        for name, fn in fns.items():  # the same product from each
            C.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            got = C[:64].float()
            ref = got if ref is None else ref
            err = float((got - ref).abs().max() / ref.abs().max())
            assert not torch.isnan(got).any() and err < 2e-2, (name, err)
        names = list(fns)
        ours = [k for k in names if k.startswith("numba")]
        orders = [("fixed, ours after cuBLAS", ["cublas", *ours, "twin"], False),
                  ("fixed, twin after cuBLAS", ["cublas", "twin", *ours[::-1]], False),
                  ("shuffled", names, True)]
        for label, order, shuffle in orders:
            res = devutil.bench_alternating([fns[k] for k in order], reps=12, warmup=3, rounds=2,
                                            shuffle=shuffle)
            ms = {k: float(np.median([t for rnd in res for t in rnd[i]])) for i, k in enumerate(order)}
            tf = {k: round(2 * N ** 3 / (v * 1e-3) / 1e12, 1) for k, v in ms.items()}
            ratio = {f"{k}/twin": round(ms["twin"] / ms[k], 3) for k in ours}
            ratio["numba/cublas"] = round(ms["cublas"] / ms["numba"], 3)
            print(json.dumps({"dtype": d, "n": N, "order": label, "sequence": order,
                              "tflops": tf, "ratios": ratio}), flush=True)
        del A, B, C, Au, Bu, Cu, maps


if __name__ == "__main__":
    main()
