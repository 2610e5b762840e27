"""Which 64-bit tensor reductions (cp.reduce.async.bulk.tensor) work on this GPU?

Each (op, element type, variant) runs in a fresh process (an illegal
instruction poisons the whole CUDA context): a minimal kernel copies a
random tile into shared memory and reduces it into a random global tensor
through a tiled map of that element type; the result is compared with
numpy.  The package refuses the 64-bit forms at compile time, so this probe
widens its table of allowed (op, type) pairs in its own process only.

    python3 probe_reduce64.py            # every case, JSON lines on stdout
    python3 probe_reduce64.py one OP DTYPE VARIANT

Variants: ``inbounds`` (box (8, 16) at (0, 0), no swizzle), ``edge`` (box
(8, 32) at (15, 20) of a (20, 40) tensor: partly out of bounds, as the
32-bit reductions' GPU test does), ``swizzle128`` (box (8, 16), 128-byte
swizzle, 1024-byte aligned tile).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor

OPS = ["add", "min", "max", "inc", "dec", "and", "or", "xor"]
DTYPES = ["uint64", "int64", "float64"]
VARIANTS = ["inbounds", "edge", "swizzle128"]
CONTROLS = [("or", "uint32", "inbounds"), ("add", "float32", "edge"), ("xor", "int32", "edge")]


def one(op: str, dtype: str, variant: str) -> dict:
    import numpy as np
    from numba import cuda

    import numba_asynccopy as ac
    from numba_asynccopy import bulk, tensor

    # widen the allowed pairs (this process only): every 64-bit type for every op
    for k in bulk.TENSOR_REDUCE_TYPES:
        bulk.TENSOR_REDUCE_TYPES[k] = tuple(bulk.TENSOR_REDUCE_TYPES[k]) + (
            "u64", "s64", "b64", "f64")
    tensor._REDUCE_DTYPE_CODE.setdefault("f64", "float64")

    shape, box, at, swz = {"inbounds": ((16, 32), (8, 16), (0, 0), None),
                           "edge": ((20, 40), (8, 32), (15, 20), None),
                           "swizzle128": ((16, 32), (8, 16), (0, 0), 128)}[variant]
    align = 1024 if swz else 128
    n = box[0] * box[1]
    src = textwrap.dedent(f"""
    def k(omap, S, d):
        tile = cuda.shared.array({box}, np.{dtype}, alignment={align})
        tid = cuda.threadIdx.x
        for i in range(tid, {n}, cuda.blockDim.x):
            tile[i // {box[1]}, i % {box[1]}] = S[i]
        ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if tid == 0:
            ac.cp_reduce_async_bulk_tensor(omap, (d[0], d[1]), tile, {op!r})
            ac.bulk_commit_group()
            ac.bulk_wait_group(0)
    """)
    g = {"cuda": cuda, "np": np, "ac": ac}
    exec(src, g)
    rng = np.random.default_rng(7)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        dst = rng.standard_normal(shape).astype(dt)
        s = rng.standard_normal(box).astype(dt)
    elif op in ("inc", "dec"):
        dst = rng.integers(0, 40, shape).astype(dt)
        s = rng.integers(0, 40, box).astype(dt)
    else:
        lo = -(1 << 62) if dt.kind == "i" else 0
        dst = rng.integers(lo, 1 << 62, shape, dtype=np.int64).astype(dt)
        s = rng.integers(lo, 1 << 62, box, dtype=np.int64).astype(dt)
        if dt.itemsize == 4:
            dst, s = (rng.integers(0, 1 << 30, shape).astype(dt),
                      rng.integers(0, 1 << 30, box).astype(dt))
    t0 = time.perf_counter()
    try:
        kern = cuda.jit(g["k"])
        d_dst = cuda.to_device(dst)
        omap = ac.TensorMap(d_dst, box, swizzle=swz)
        if swz:  # the shared tile is swizzled: store the source in that layout
            raw = np.ascontiguousarray(s).view(np.uint8).reshape(-1)
            o = np.arange(0, raw.size, 16)
            img = np.empty_like(raw)
            img.reshape(-1, 16)[(o ^ (((o >> 7) & (swz // 16 - 1)) << 4)) // 16] = raw.reshape(-1, 16)
            s_img = img.view(dt)
        else:
            s_img = s.reshape(-1)
        kern[1, 64](omap, cuda.to_device(np.ascontiguousarray(s_img)), np.array(at, np.int32))
        cuda.synchronize()
        got = d_dst.copy_to_host()
    except Exception as e:  # noqa: BLE001 - a probe records every failure
        text = f"{type(e).__name__}: {e}"
        verdict = "illegal_instruction" if "ILLEGAL_INSTRUCTION" in text else "error"
        return dict(op=op, dtype=dtype, variant=variant, verdict=verdict, detail=text[:400])
    r0, c0 = at
    r1, c1 = min(shape[0], r0 + box[0]), min(shape[1], c0 + box[1])
    region, sv = dst[r0:r1, c0:c1], s[:r1 - r0, :c1 - c0]
    with np.errstate(over="ignore"):
        fn = {"add": lambda x, y: x + y, "min": np.minimum, "max": np.maximum,
              "inc": lambda x, y: np.where(x >= y, 0, x + 1).astype(x.dtype),
              "dec": lambda x, y: np.where((x == 0) | (x > y), y, x - 1).astype(x.dtype),
              "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
        if dt.kind == "f" and op in ("and", "or", "xor"):
            return dict(op=op, dtype=dtype, variant=variant, verdict="ran",
                        detail="no numpy reference for a bitwise op on floats",
                        changed=bool((got != dst).any()))
        want = dst.copy()
        want[r0:r1, c0:c1] = fn(region, sv)
    ok = np.array_equal(got, want)
    res = dict(op=op, dtype=dtype, variant=variant, verdict="ok" if ok else "mismatch",
               seconds=round(time.perf_counter() - t0, 3))
    if not ok:
        bad = np.argwhere(got != want)[:3]
        res["detail"] = [dict(at=[int(i) for i in b], got=str(got[tuple(b)]),
                              want=str(want[tuple(b)]), dst=str(dst[tuple(b)])) for b in bad]
        res["unchanged"] = bool((got == dst).all())
    return res


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "one":
        print(json.dumps(one(*sys.argv[2:5])), flush=True)
        return
    cases = [(o, d, v) for o in OPS for d in DTYPES for v in VARIANTS] + CONTROLS

    def run(case):
        p = subprocess.run([sys.executable, __file__, "one", *case], capture_output=True,
                           text=True, timeout=120)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        if lines:
            return json.loads(lines[-1])
        return dict(op=case[0], dtype=case[1], variant=case[2], verdict="crashed",
                    detail=(p.stderr or p.stdout)[-400:], rc=p.returncode)

    with ThreadPoolExecutor(12) as ex:
        for r in ex.map(run, cases):
            print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
