"""Which elements does an interleaved TMA map read and write on this GPU?
The tensor sits in the middle of a big buffer whose elements hold their own
offset; a load shows which offsets it read, a store which it wrote."""
import sys, textwrap, json
import numpy as np
from numba import cuda
import numba_asynccopy as ac

def kernels(box, dtype):
    rank = len(box); n = int(np.prod(box)); nbytes = n * np.dtype(dtype).itemsize
    cs = ", ".join(f"c[{i}]" for i in range(rank))
    strides = [int(np.prod(box[i + 1:])) for i in range(rank)]
    idx = ", ".join(f"(i // {s}) % {b}" for s, b in zip(strides, box))
    src = textwrap.dedent(f"""
    def load(tmap, raw, c):
        tile = cuda.shared.array({tuple(box)}, np.{np.dtype(dtype).name}, alignment=1024)
        bar = cuda.shared.array(1, np.uint64)
        tid = cuda.threadIdx.x
        for i in range(tid, {n}, cuda.blockDim.x):
            tile[{idx}] = 0xFFFF
        if tid == 0:
            ac.mbarrier_init(bar, 1)
            ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if tid == 0:
            ac.mbarrier_arrive_expect_tx(bar, {nbytes})
            ac.cp_async_bulk_tensor_load(tile, tmap, ({cs},), bar)
        ac.mbarrier_wait_parity(bar, 0)
        for i in range(tid, {n}, cuda.blockDim.x):
            raw[i] = tile[{idx}]
    def store(omap, src, c):
        tile = cuda.shared.array({tuple(box)}, np.{np.dtype(dtype).name}, alignment=1024)
        tid = cuda.threadIdx.x
        for i in range(tid, {n}, cuda.blockDim.x):
            tile[{idx}] = src[i]
        ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if tid == 0:
            ac.cp_async_bulk_tensor_store(omap, ({cs},), tile)
            ac.bulk_commit_group()
            ac.bulk_wait_group(0)
    """)
    g = {"cuda": cuda, "np": np, "ac": ac}
    exec(src, g)
    return cuda.jit(g["load"]), cuda.jit(g["store"])

def rows(off, box):
    """per box row (innermost run): its first offset, and '+' if the run is contiguous"""
    r = np.asarray(off).reshape(-1, box[-1])
    return [f"{int(x[0])}{'+' if np.all(np.diff(x) == 1) else '?'}" for x in r]

def main(mode, interleave, dtype, shape, box, coords, swizzle, pad=4096):
    dtype = np.dtype(dtype); shape = tuple(shape); box = tuple(box)
    total = int(np.prod(shape)) + 2 * pad
    big = cuda.to_device(np.arange(total, dtype=np.int64).astype(dtype))
    a = big[pad:pad + int(np.prod(shape))].reshape(shape)
    addr = a._ary.ctypes.data if hasattr(a, "_ary") else a.__cuda_array_interface__["data"][0]
    load, store = kernels(box, dtype)
    tmap = ac.TensorMap(a, box, swizzle=swizzle, interleave=interleave)
    n = int(np.prod(box))
    if mode == "load":
        raw = cuda.to_device(np.full(n, 7, dtype))
        load[1, 128](tmap, raw, np.array(coords, np.int32))
        cuda.synchronize()
        got = raw.copy_to_host().astype(np.int64) - pad
        exp = np.full(box, -10**9, np.int64)
        ref = np.arange(int(np.prod(shape))).reshape(shape)
        sl = tuple(slice(c, c + b) for c, b in zip(coords, box))
        part = ref[sl]
        exp[tuple(slice(0, s) for s in part.shape)] = part
        ok = np.array_equal(got.reshape(box), exp)
        print(json.dumps({"mode": mode, "addr_mod": addr % 1024, "match_dense_box": bool(ok),
                          "rows": rows(got, box)}))
    else:
        zero = np.zeros(total, dtype)
        big2 = cuda.to_device(zero)
        o = big2[pad:pad + int(np.prod(shape))].reshape(shape)
        omap = ac.TensorMap(o, box, swizzle=swizzle, interleave=interleave)
        src = cuda.to_device((np.arange(n) + 1).astype(dtype))
        store[1, 128](omap, src, np.array(coords, np.int32))
        cuda.synchronize()
        h = big2.copy_to_host().astype(np.int64)
        nz = np.nonzero(h)[0]
        written = [(int(i) - pad, int(h[i])) for i in nz]
        ref = np.zeros(shape, np.int64)
        sl = tuple(slice(c, c + b) for c, b in zip(coords, box))
        part = ref[sl].shape
        exp = np.zeros(total, np.int64)
        t = np.zeros(shape, np.int64)
        t[sl] = (np.arange(n) + 1).reshape(box)[tuple(slice(0, s) for s in part)]
        exp[pad:pad + t.size] = t.reshape(-1)
        inv = np.full(n + 1, -10**9, np.int64)
        for i in nz:
            inv[h[i]] = int(i) - pad
        print(json.dumps({"mode": mode, "match_dense_box": bool(np.array_equal(h, exp)), "rows": rows(inv[1:], box),
                          "n_written": len(written)}))

if __name__ == "__main__":
    main(*json.loads(sys.argv[1]))
