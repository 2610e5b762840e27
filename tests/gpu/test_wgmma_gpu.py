"""Warpgroup MMA on the GPU: every N of m64nNk16 (8..256 step 8), A from a
descriptor and from registers, K- and M/N-major operands (the transpose
immediates), every swizzle mode, two warpgroups splitting M, fp16 and bf16
(plus tf32 and fp8) inputs, f16 accumulation (every N, both A sources, fp8
inputs), scale-d and negation, fragment stores with
conversion and masking (setmaxnreg runs in the HGEMM example, which has the
launch bounds it needs).  Tiles are written by TMA copies
with the swizzle the descriptor names; inputs are fresh random values that
are exact in the input type and whose products sum exactly in fp32, so the
results must equal numpy's bit for bit; outputs start as NaN poison."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

pytestmark = pytest.mark.gpu
rng = np.random.default_rng()

ALL_N = list(range(8, 257, 8))


# --- inputs exact in the input type -----------------------------------------------


def random_bf16(shape):
    """(uint16 bf16 bits, float64 values): small dyadic numbers, exact in bf16."""
    v = rng.integers(-8, 9, shape).astype(np.float32) / 8
    bits = (v.view(np.uint32) >> 16).astype(np.uint16)
    return bits, v.astype(np.float64)


def random_f16(shape):
    v = (rng.integers(-8, 9, shape) / 8).astype(np.float16)
    return v, v.astype(np.float64)


def random_tf32(shape):
    v = (rng.integers(-8, 9, shape) / 8).astype(np.float32)
    return v, v.astype(np.float64)


def random_fp8(shape, kind):
    """(uint8 bits, values) of e4m3 (bias 7) or e5m2 (bias 15) numbers near 1."""
    s = rng.integers(0, 2, shape)
    if kind == "e4m3":
        e, m = rng.integers(6, 9, shape), rng.integers(0, 8, shape)
        bits, val = (s << 7) | (e << 3) | m, 2.0 ** (e - 7) * (1 + m / 8)
    else:
        e, m = rng.integers(14, 17, shape), rng.integers(0, 4, shape)
        bits, val = (s << 7) | (e << 2) | m, 2.0 ** (e - 15) * (1 + m / 4)
    return bits.astype(np.uint8), np.where(s == 1, -val, val)


RANDOM = {"bf16": random_bf16, "f16": random_f16, "tf32": random_tf32,
          "e4m3": lambda s: random_fp8(s, "e4m3"), "e5m2": lambda s: random_fp8(s, "e5m2")}
STORAGE = {"bf16": "np.uint16", "f16": "np.float16", "tf32": "np.float32", "e4m3": "np.uint8",
           "e5m2": "np.uint8"}
ISZ = {"bf16": 2, "f16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1}
KSTEP = {"bf16": 16, "f16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32}


def random_halves(shape, dtype):
    """Values in {0, +-1/2, +-1} in the input type (f16 bits or fp8 bits):
    every partial sum of K <= 128 products is exact in f16, so an f16
    accumulator must equal numpy bit for bit."""
    s, e = rng.integers(0, 2, shape), rng.integers(0, 3, shape)
    val = np.where(e == 0, 0.0, 2.0 ** (e - 2.0)) * np.where(s == 1, -1, 1)
    if dtype == "f16":
        return val.astype(np.float16), val
    bias, shift = (7, 3) if dtype == "e4m3" else (15, 2)
    bits = np.where(e == 0, 0, (s << 7) | ((bias - 2 + e) << shift))
    return bits.astype(np.uint8), val


def poisoned(shape):
    return np.full(shape, np.nan, np.float32)


# --- one kernel per configuration ----------------------------------------------------


class Operand:
    """How one operand sits in shared memory, as TMA boxes write it.

    ``rows`` is M (A) or N (B); ``k`` the K extent.  K-major: the global
    array is [rows, k]; M/N-major: [k, rows]."""

    def __init__(self, name, rows, k, swizzle, major, isz):
        self.name, self.rows, self.k, self.sw, self.major, self.isz = name, rows, k, swizzle, major, isz
        w = (swizzle or 16) // isz  # elements of one box row
        self.w = w
        if major == "K":
            self.nbox = k // w
            self.box = (rows, w)
            self.shape = (rows, w) if swizzle and k == w else (self.nbox, rows, w)
        else:
            self.nbox = -(-rows // w)
            self.box = (k, w)
            self.shape = (self.nbox, k, w)
        self.bytes = self.nbox * self.box[0] * self.box[1] * isz

    def loads(self, tmap):
        if len(self.shape) == 2:
            return [f"ac.cp_async_bulk_tensor_load(s{self.name}, {tmap}, (0, 0), bar)"]
        if self.major == "K":
            return [f"ac.cp_async_bulk_tensor_load(s{self.name}[{j}], {tmap}, (0, {j * self.w}), bar)"
                    for j in range(self.nbox)]
        return [f"ac.cp_async_bulk_tensor_load(s{self.name}[{j}], {tmap}, (0, {j * self.w}), bar)"
                for j in range(self.nbox)]

    def desc(self, kk_expr, kstep, row0="0", nrows=None):
        """Descriptor source of K step ``kk`` (rows ``row0`` .. + nrows for A of a warpgroup)."""
        sw = self.sw
        r = f"{row0}:{row0} + {nrows}" if nrows else ":"
        ks = f"{kstep} * {kk_expr}:{kstep} * {kk_expr} + {kstep}"
        if self.major == "K":
            if sw:
                if len(self.shape) == 2:
                    view = f"s{self.name}[{r}, {ks}]"
                else:  # a K slice inside box kk * kstep // w
                    view = (f"s{self.name}[({kstep} * {kk_expr}) // {self.w}, {r}, "
                            f"({kstep} * {kk_expr}) % {self.w}:({kstep} * {kk_expr}) % {self.w} + {kstep}]")
            else:
                h = kstep * self.isz // 16  # 16-byte core-matrix columns per K step
                view = f"s{self.name}[{h} * {kk_expr}:{h} * {kk_expr} + {h}, {r}, :]"
            return f'ac.wgmma_descriptor({view}, swizzle={sw}, major="K")'
        assert nrows is None or sw is None or nrows % self.w == 0 or self.nbox == 1
        if nrows:  # A of one warpgroup: its M blocks
            b0 = f"({row0}) // {self.w}"
            bl = f"{b0}:{b0} + {max(1, nrows // self.w)}"
        else:
            bl = ":"
        return f'ac.wgmma_descriptor(s{self.name}[{bl}, {ks}, :], swizzle={sw}, major="MN")'


def build(n, *, dtype="bf16", swizzle=128, a_major="K", b_major="K", a_regs=False, wgs=1,
          k=None, scale_a=1, scale_b=1, scale_d_runtime=False, acc="f32"):
    """Compile a kernel computing C[64*wgs, n] = A @ B for one configuration
    (``acc``: the accumulator type, "f32" or "f16"); returns (kernel, A
    global array, B global array, reference function)."""
    isz, kstep = ISZ[dtype], KSTEP[dtype]
    w = (swizzle or 16) // isz
    m = 64 * wgs
    if k is None:
        k = max(kstep, w) if a_major == "K" or b_major == "K" else 2 * kstep
        k = max(k, kstep)
        if (a_major == "K" or b_major == "K") and swizzle is None:
            k = 2 * kstep
    a = Operand("a", m, k, swizzle, a_major, isz)
    b = Operand("b", n, k, swizzle, b_major, isz)
    loads = []
    if not a_regs:
        loads += a.loads("ta")
    loads += b.loads("tb")
    tx = (0 if a_regs else a.bytes) + b.bytes
    if a_regs:
        a_expr = "ac.wgmma_load_a(ga, 64 * wg, {ks} * kk)".format(ks=kstep)
    else:
        a_expr = a.desc("kk", kstep, row0="64 * wg", nrows=64) if (a_major == "K" or wgs > 1) else a.desc("kk", kstep)
    b_expr = b.desc("kk", kstep)
    sd = "kk > 0 or flag" if scale_d_runtime else "kk > 0"
    flags = f", trans_a={a_major == 'MN'}" if not a_regs and dtype in ("bf16", "f16") else ""
    if dtype in ("bf16", "f16"):
        flags += f", trans_b={b_major == 'MN'}"
    st = STORAGE[dtype]
    src = f"""
    def kernel(ta, tb, ga, c, flag):
        sa = cuda.shared.array({a.shape if not a_regs else (1,)}, {st}, alignment=1024)
        sb = cuda.shared.array({b.shape}, {st}, alignment=1024)
        bar = cuda.shared.array(1, np.uint64)
        tid = cuda.threadIdx.x
        wg = tid // 128
        if tid == 0:
            ac.mbarrier_init(bar, 1)
            ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if tid == 0:
            ac.mbarrier_arrive_expect_tx(bar, {tx})
            {chr(10).join('            ' + l for l in loads).lstrip()}
        ac.mbarrier_wait_parity(bar, 0)
        acc = ac.wgmma_zero({n}, dtype="{acc}")
        acc = ac.wgmma_fence(acc)
        for kk in range({k // kstep}):
            acc = ac.wgmma_mma_async(acc, {a_expr}, {b_expr}, dtype="{dtype}",
                                     scale_d={sd}, scale_a={scale_a}, scale_b={scale_b}{flags})
        ac.wgmma_commit_group()
        acc = ac.wgmma_wait_group(0, acc)
        ac.wgmma_store(acc, c, 64 * wg, 0)
    """
    g = {"cuda": cuda, "np": np, "ac": ac}
    exec(compile(textwrap.dedent(src), f"<wgmma n={n}>", "exec"), g)
    kern = cuda.jit(g["kernel"])
    gen = RANDOM[dtype] if acc == "f32" else (lambda shape: random_halves(shape, dtype))
    a_store, a_val = gen((m, k))
    b_store, b_val = gen((k, n))
    ga = np.ascontiguousarray(a_store if a_major == "K" else a_store.T)
    gb = np.ascontiguousarray(b_store.T if b_major == "K" else b_store)
    ref = (scale_a * a_val) @ (scale_b * b_val)
    return kern, (a, ga), (b, gb), ref, src


def run(cfg_kernel, threads, flag=True, tmap_dtype=None):
    kern, (a, ga), (b, gb), ref, src = cfg_kernel
    dga, dgb = cuda.to_device(ga), cuda.to_device(gb)
    ta = ac.TensorMap(dga, a.box, swizzle=a.sw)
    tb = ac.TensorMap(dgb, b.box, swizzle=b.sw)
    c = cuda.to_device(poisoned(ref.shape))
    kern[1, threads](ta, tb, dga, c, flag)
    cuda.synchronize()
    return c.copy_to_host(), ref, src


def check(out, ref, src):
    bad = np.argwhere(out != ref.astype(np.float32))
    assert bad.size == 0, (f"{len(bad)} of {out.size} wrong, first {bad[:4].tolist()}: "
                           f"got {out[tuple(bad[0])]}, want {ref[tuple(bad[0])]}\n{src}")


# --- the tests ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", ALL_N)
def test_every_n_bf16_descriptor_a_128b(n):
    check(*run(build(n), 128))


@pytest.mark.parametrize("n", ALL_N)
def test_every_n_bf16_register_a(n):
    check(*run(build(n, a_regs=True), 128))


@pytest.mark.parametrize("n", [8, 16, 24, 64, 136, 256])
def test_every_n_f16(n):
    check(*run(build(n, dtype="f16"), 128))


@pytest.mark.parametrize("n", ALL_N)
@pytest.mark.parametrize("a_regs", [False, True], ids=["desc_a", "register_a"])
def test_every_n_f16_accumulation(n, a_regs):
    """``.f16`` D: N/4 registers of f16 pairs, stored widened to float32."""
    check(*run(build(n, dtype="f16", acc="f16", a_regs=a_regs), 128))


@pytest.mark.parametrize("swizzle", [None, 64, 128])
@pytest.mark.parametrize("a_major,b_major", [("K", "MN"), ("MN", "K")])
@pytest.mark.parametrize("n", [8, 24, 256])
def test_f16_accumulation_swizzle_transpose_and_two_warpgroups(swizzle, a_major, b_major, n):
    check(*run(build(n, dtype="f16", acc="f16", swizzle=swizzle, a_major=a_major,
                     b_major=b_major), 128))
    check(*run(build(n, dtype="f16", acc="f16", swizzle=swizzle, b_major=b_major, wgs=2), 256))


@pytest.mark.parametrize("dtype", ["e4m3", "e5m2"])
@pytest.mark.parametrize("n", ALL_N)
def test_every_n_fp8_with_f16_accumulation(dtype, n):
    check(*run(build(n, dtype=dtype, acc="f16"), 128))


@pytest.mark.parametrize("store,scale", [("float16", None), ("bf16", None), ("float16", -0.25),
                                         ("bf16", 3.0)])
def test_f16_accumulator_store_as_f16_and_bf16(store, scale):
    """An f16 fragment stored to float16 (its bits) and to bf16 (rounded),
    and times a scale (in f32, then converted): the exact values come back
    unchanged, masked at an offset."""
    cfg = build(72, dtype="f16", acc="f16")
    sc = "" if scale is None else f", scale={scale}"
    src = cfg[4].replace("ac.wgmma_store(acc, c, 64 * wg, 0)",
                         f"ac.wgmma_store(acc, c, 64 * wg + 5, 3, dtype=\"{store}\"{sc})")
    g = {"cuda": cuda, "np": np, "ac": ac}
    exec(compile(textwrap.dedent(src), "<f16 store>", "exec"), g)
    kern, (a, ga), (b, gb), ref = cuda.jit(g["kernel"]), cfg[1], cfg[2], cfg[3]
    ref = ref if scale is None else scale * ref  # multiples of 1/16 below 2**10: still exact
    dga, dgb = cuda.to_device(ga), cuda.to_device(gb)
    ta = ac.TensorMap(dga, a.box, swizzle=a.sw)
    tb = ac.TensorMap(dgb, b.box, swizzle=b.sw)
    out_t = np.float16 if store == "float16" else np.uint16
    poison = np.full((60, 70), 0x7E7E, np.uint16).view(out_t)
    c = cuda.to_device(poison)
    kern[1, 128](ta, tb, dga, c, True)
    got = c.copy_to_host()
    want = poison.copy()
    conv = ref.astype(np.float16) if store == "float16" else (
        ref.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)  # exact: no rounding
    want[5:60, 3:70] = conv[:55, :67]
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("swizzle", [None, 32, 64, 128])
@pytest.mark.parametrize("a_major,b_major", [("K", "K"), ("K", "MN"), ("MN", "K"), ("MN", "MN")])
@pytest.mark.parametrize("n", [8, 40, 64, 256])
def test_swizzle_and_transpose(swizzle, a_major, b_major, n):
    check(*run(build(n, swizzle=swizzle, a_major=a_major, b_major=b_major), 128))


@pytest.mark.parametrize("swizzle", [None, 128])
@pytest.mark.parametrize("n", [8, 72, 256])
@pytest.mark.parametrize("b_major", ["K", "MN"])
def test_two_warpgroups_split_m(swizzle, n, b_major):
    check(*run(build(n, swizzle=swizzle, b_major=b_major, wgs=2), 256))


@pytest.mark.parametrize("n", [8, 64, 256])
def test_register_a_two_warpgroups_and_n_major_b(n):
    check(*run(build(n, a_regs=True, b_major="MN", wgs=2), 256))


@pytest.mark.parametrize("dtype", ["tf32", "e4m3", "e5m2"])
@pytest.mark.parametrize("n", [8, 24, 128])
def test_tf32_and_fp8(dtype, n):
    cfg = build(n, dtype=dtype)
    out, ref, src = run(cfg, 128)
    if dtype != "e4m3":
        return check(out, ref, src)
    # measured on the H200: fp8 MMAs add their products with fewer bits than
    # fp32 (about 2**-14 of the sum's magnitude, truncated), so e4m3 inputs
    # whose sums need more bits are not exact, and the error grows with each
    # of the K additions; bound it by K * 2**-14 of the largest result (a
    # 2**-12 bound without K was exceeded on a second run: 0.047)
    k = 128
    bound = k * 2.0 ** -14 * np.abs(ref).max() + 2.0 ** -20
    assert np.all(np.abs(out - ref) <= bound), np.abs(out - ref).max()


def test_negate_and_runtime_scale_d():
    cfg = build(64, scale_a=-1, scale_d_runtime=True)
    check(*run(cfg, 128, flag=True))  # a run-time scale_d, true on the first step (onto zeros)
    check(*run(cfg, 128, flag=False))
    cfg = build(48, scale_b=-1, a_regs=True)
    check(*run(cfg, 128))


def test_scale_d_false_discards_old_accumulators():
    @cuda.jit
    def k(ta, tb, c, flag):
        sa = cuda.shared.array((64, 64), np.uint16, alignment=1024)
        sb = cuda.shared.array((64, 64), np.uint16, alignment=1024)
        bar = cuda.shared.array(1, np.uint64)
        if cuda.threadIdx.x == 0:
            ac.mbarrier_init(bar, 1)
            ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:
            ac.mbarrier_arrive_expect_tx(bar, 16384)
            ac.cp_async_bulk_tensor_load(sa, ta, (0, 0), bar)
            ac.cp_async_bulk_tensor_load(sb, tb, (0, 0), bar)
        ac.mbarrier_wait_parity(bar, 0)
        acc = ac.wgmma_zero(64)
        acc = ac.wgmma_fence(acc)
        for kk in range(4):  # a first pass that the second one discards
            acc = ac.wgmma_mma_async(acc, ac.wgmma_descriptor(sa[:, 16 * kk:16 * kk + 16], swizzle=128),
                                     ac.wgmma_descriptor(sb[:, 16 * kk:16 * kk + 16], swizzle=128),
                                     dtype="bf16")
        for kk in range(4):
            acc = ac.wgmma_mma_async(acc, ac.wgmma_descriptor(sa[:, 16 * kk:16 * kk + 16], swizzle=128),
                                     ac.wgmma_descriptor(sb[:, 16 * kk:16 * kk + 16], swizzle=128),
                                     dtype="bf16", scale_d=(kk > 0) or flag)
        ac.wgmma_commit_group()
        acc = ac.wgmma_wait_group(0, acc)
        ac.wgmma_store(acc, c, 0, 0)

    a, av = random_bf16((64, 64))
    bt, btv = random_bf16((64, 64))
    da, db = cuda.to_device(a), cuda.to_device(bt)
    ta, tb = ac.TensorMap(da, (64, 64), swizzle=128), ac.TensorMap(db, (64, 64), swizzle=128)
    for flag, want in ((False, av @ btv.T), (True, 2 * (av @ btv.T))):
        c = cuda.to_device(poisoned((64, 64)))
        k[1, 128](ta, tb, c, flag)
        np.testing.assert_array_equal(c.copy_to_host(), want.astype(np.float32))


STORE_SRC = """
def k(ta, tb, out, row0, col0):
    sa = cuda.shared.array((64, 64), np.uint16, alignment=1024)
    sb = cuda.shared.array((64, 64), np.uint16, alignment=1024)
    bar = cuda.shared.array(1, np.uint64)
    if cuda.threadIdx.x == 0:
        ac.mbarrier_init(bar, 1)
        ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        ac.mbarrier_arrive_expect_tx(bar, 16384)
        ac.cp_async_bulk_tensor_load(sa, ta, (0, 0), bar)
        ac.cp_async_bulk_tensor_load(sb, tb, (0, 0), bar)
    ac.mbarrier_wait_parity(bar, 0)
    acc = ac.wgmma_fence(ac.wgmma_zero(64))
    for kk in range(4):
        acc = ac.wgmma_mma_async(acc, ac.wgmma_descriptor(sa[:, 16 * kk:16 * kk + 16], swizzle=128),
                                 ac.wgmma_descriptor(sb[:, 16 * kk:16 * kk + 16], swizzle=128),
                                 dtype="bf16", scale_d=kk > 0)
    ac.wgmma_commit_group()
    acc = ac.wgmma_wait_group(0, acc)
    ac.wgmma_store(acc, out, row0, col0, dtype="DT")
"""


@pytest.mark.parametrize("dtype", ["float32", "float16", "bf16"])
def test_store_converts_and_masks_at_an_offset(dtype):
    """A fragment stored at (row0, col0) into a smaller array: only the
    in-bounds elements are written, converted as asked."""
    g = {"cuda": cuda, "np": np, "ac": ac}
    exec(STORE_SRC.replace("DT", dtype), g)
    k = cuda.jit(g["k"])
    a, av = random_bf16((64, 64))
    bt, btv = random_bf16((64, 64))
    ref = (av @ btv.T).astype(np.float32)
    da, db = cuda.to_device(a), cuda.to_device(bt)
    ta, tb = ac.TensorMap(da, (64, 64), swizzle=128), ac.TensorMap(db, (64, 64), swizzle=128)
    store_t = {"float32": np.float32, "float16": np.float16, "bf16": np.uint16}[dtype]
    poison = np.full((50, 70), 0x7E7E if dtype == "bf16" else np.nan, store_t)
    out = cuda.to_device(poison)
    k[1, 128](ta, tb, out, 10, 20)
    got = out.copy_to_host()
    want = poison.copy()
    if dtype == "float32":
        conv = ref
    elif dtype == "float16":
        conv = ref.astype(np.float16)
    else:  # round to nearest even, as cvt.rn.bf16.f32
        u = ref.view(np.uint32).astype(np.uint64)
        conv = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    want[10:50, 20:70] = conv[:40, :50]
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_random_normal_numerics_within_fp32_accumulation_error():
    """Random normal bf16 inputs, K = 64: within fp32 accumulation error of
    the float64 product (the documented tolerance, 1e-5 of the sum of |a b|)."""
    cfg = build(128)
    kern, (a, ga), (b, gb), _, src = cfg
    av = rng.standard_normal((64, 64)).astype(np.float32)
    bv = rng.standard_normal((64, 128)).astype(np.float32)
    abits = (av.view(np.uint32) >> 16).astype(np.uint16)  # truncate to bf16
    bbits = (bv.view(np.uint32) >> 16).astype(np.uint16)
    a64 = (abits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    b64 = (bbits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    cfg = (kern, (a, abits), (b, np.ascontiguousarray(bbits.T)), a64 @ b64, src)
    out, ref, _ = run(cfg, 128)
    bound = 1e-5 * (np.abs(a64) @ np.abs(b64)) + 1e-30
    assert np.all(np.abs(out - ref) <= bound), np.max(np.abs(out - ref) / bound)
