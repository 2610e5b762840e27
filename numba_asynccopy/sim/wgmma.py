"""Warpgroup MMA in the simulator: the hardware's numerics and its async rules.

The 128 threads of a warpgroup meet in every ``wgmma_mma_async`` (a
collective): the last to arrive gathers their accumulator fragments (and
register A fragments) into the 64 x N matrix, reads A and B from shared
memory through the descriptors exactly as the hardware addresses them (the
canonical layouts and the swizzle XOR on address bits), and computes
``D = (scale_a A) (scale_b B) + D`` with fp32 accumulation: bf16/fp16
products are exact in float64 and the sum is rounded once to float32, so
the simulator's result is within the GPU's fp32 rounding of the exact sum
(the documented tolerance: ``K * 2**-23`` of ``sum |a b|``).  With an f16
accumulator (``wgmma_zero(N, dtype="f16")``) each MMA rounds the exact
``A B + D`` once to f16: over K the result is within ``K / k`` f16
roundings (``2**-11`` relative each, k = 16 or 32) of the exact sum.

Each thread gets back a *pending* fragment: reading it (``acc[i]``) or
passing it to anything but another MMA, ``wgmma_fence`` or
``wgmma_wait_group`` before a wait covers its group is a
:class:`~numba_asynccopy.sim.SimulatorError`.  The other rules, in the
package's words (``numba_asynccopy._rules``): an MMA on accumulators no
``wgmma_fence`` ordered (the first MMA, or a fragment written since); a TMA
copy into a shared tile an in-flight MMA reads; a descriptor whose swizzle
is not the one the TMA map that wrote the tile used, or whose tile is
misaligned for it; a pipeline slot released (``consumer_release``) while an
MMA that reads its tiles is not waited for; an ordinary store that changed
bytes an MMA read before the first wait of its warpgroup covered it (found
at that wait; a store of unchanged values, or one after a sibling thread's
wait, is not seen).
"""

from __future__ import annotations

import threading

import numpy as np

from .. import _rules
from . import _runtime as rt
from ._mirror import mirrors

from .. import wgmma as _dev  # noqa: E402
_lock = threading.Lock()

# --- values ---------------------------------------------------------------------------


class Fragment(tuple):
    """An accumulator fragment (N/2 float32); ``fenced``: a wgmma_fence ordered
    it; ``stamp``: when this thread made it (a fence after it orders it)."""

    fenced = False
    stamp = -1


def _tick(th) -> int:
    th._ac_wgmma_clock = getattr(th, "_ac_wgmma_clock", 0) + 1
    return th._ac_wgmma_clock


def _made(th, values) -> Fragment:
    f = Fragment(values)
    f.stamp = _tick(th)
    return f


class PendingFragment(tuple):
    """The fragment an MMA returns: unreadable until a wait covers ``op``."""

    def __new__(cls, values, op):
        self = super().__new__(cls, values)
        self.op = op
        return self

    def _refuse(self, what):
        raise rt.violation("wgmma", _rules.wgmma_acc_in_flight(what=what, issued=self.op.line))

    def __getitem__(self, i):
        self._refuse("reading")

    def __iter__(self):
        self._refuse("reading")

    def values(self):
        return tuple(super().__iter__())


def _plain(acc):
    return acc.values() if isinstance(acc, PendingFragment) else tuple(acc)


def _is_f16(vals) -> bool:
    """An f16 fragment holds uint32 words (two f16 each), an f32 one floats."""
    return bool(vals) and isinstance(vals[0], (np.integer, int)) and not isinstance(vals[0], bool)


def _typed(acc) -> tuple:
    """The fragment as the values typing sees (float32, or uint32 words)."""
    vals = _plain(acc)
    cast = np.uint32 if _is_f16(vals) else np.float32
    return tuple([cast(v) for v in vals])


def _elements(vals) -> list:
    """The fragment's N/2 elements (as float64) in the f32 layout's order."""
    if not _is_f16(vals):
        return [float(v) for v in vals]
    words = np.array([int(v) for v in vals], np.uint32)
    return [float(x) for x in words.view(np.float16)]  # little-endian: low half first


def _words(elems) -> list:
    """N/2 f16 values -> N/4 uint32 words (element 2w in the low half)."""
    return [np.uint32(w) for w in np.asarray(elems, np.float16).view(np.uint32)]


class SimDescriptor(int):
    """A descriptor (its int value is the device's encoding relative to the
    shared array) and what the simulator reads through it."""

    def __new__(cls, value, **info):
        self = super().__new__(cls, value)
        self.__dict__.update(info)
        return self


# --- descriptors ---------------------------------------------------------------------


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


@mirrors(_dev.wgmma_descriptor, "returns the encoded descriptor with the tile it describes "
         "attached; checks its strides and alignment as checked mode does, and, when the MMA "
         "reads it, that its swizzle is the one the TMA copy that filled the tile used.")
def wgmma_descriptor(tile, swizzle=None, major="K"):
    api = "wgmma_descriptor"
    (t,), _ = rt.validate(_dev.wgmma_descriptor, tile, swizzle=swizzle, major=major)
    if rt.space_of(t) != "shared":
        raise rt.violation(api, _rules.not_in_space(name="tile", space="shared"))
    isz, s = t.itemsize, t.strides
    pitch = swizzle if (major == "K" and swizzle) else 16 if swizzle is None else swizzle
    for axis, expect in ((t.ndim - 1, isz), (t.ndim - 2, pitch)):
        if s[axis] != expect:
            raise rt.violation(api, _rules.wgmma_stride(name="tile", axis=axis, stride=s[axis],
                                                        expect=expect, swizzle=swizzle, major=major))
    addr = rt.address(t)
    if (swizzle is None and addr % 16) or (swizzle and addr % (8 * swizzle) >= swizzle):
        raise rt.violation(api, _rules.wgmma_base_align(
            name="tile", addr=f"0x{addr:x}", align=16 if swizzle is None else 8 * swizzle,
            swizzle=swizzle))
    if major == "K" and swizzle:
        lbo, sbo = 16, 8 * s[0]
    elif major == "K":
        lbo, sbo = s[0], 8 * s[1]
    elif swizzle:
        lbo, sbo = s[0], 8 * s[1]
    else:
        lbo, sbo = 8 * s[1], s[0]
    root = _root(t)
    start = addr - rt.address(root)
    code = _dev.SWIZZLE_CODES[swizzle]
    value = ((start >> 4) & 0x3FFF) | (((lbo >> 4) & 0x3FFF) << 16) | (((sbo >> 4) & 0x3FFF) << 32) | (code << 62)
    return SimDescriptor(value, root=root, addr=addr, lbo=lbo, sbo=sbo, swizzle=swizzle,
                         major=major, tile=t)


def _read_operand(api, name, d, rows: int, k: int, isz: int, major: str):
    """The rows x k operand (K-major view: [rows, k]) as raw element bits,
    addressed like the hardware reads descriptor ``d``."""
    if not isinstance(d, SimDescriptor):
        raise rt.violation(api, f"`{name}` is not a descriptor made by ac.wgmma_descriptor "
                           "(the simulator reads the tile through it)")
    if (major == "MN") != (d.major == "MN"):
        raise rt.violation(api, f"`{name}` is a major={d.major!r} descriptor but the MMA reads it "
                           f"{'M/N' if major == 'MN' else 'K'}-major (trans flag "
                           f"{major == 'MN'}): make the descriptor with major={major!r}")
    sw, T = d.swizzle, 16 // isz
    r = np.arange(rows)[:, None]
    kk = np.arange(k)[None, :]
    if major == "K":
        if sw:
            off = (r // 8) * d.sbo + (r % 8) * sw + kk * isz
        else:
            off = (r // 8) * d.sbo + (r % 8) * 16 + (kk // T) * d.lbo + (kk % T) * isz
    else:
        if sw:
            W = sw // isz
            off = (r // W) * d.lbo + (kk // 8) * d.sbo + (kk % 8) * sw + (r % W) * isz
        else:
            off = (r // T) * d.sbo + (kk // 8) * d.lbo + (kk % 8) * 16 + (r % T) * isz
    a = d.addr + off
    if sw:
        a = a ^ (((a >> 7) & (sw // 16 - 1)) << 4)
    base = rt.address(d.root)
    raw = d.root.reshape(-1).view(np.uint8)
    idx = a - base
    if idx.min() < 0 or idx.max() + isz > raw.size:
        raise rt.violation(api, _rules.wgmma_shape(name=name, got=f"a tile of {raw.size} bytes",
                                                   n=rows, k=k, need=f"bytes up to {idx.max() + isz}"))
    _check_written(api, name, d, idx + base, isz)
    b = np.zeros(idx.shape, np.uint64)
    for j in range(isz):  # little-endian element bytes
        b |= raw[idx + j].astype(np.uint64) << np.uint64(8 * j)
    lo, hi = int(a.min()), int(a.max()) + isz
    every = (idx.reshape(-1)[:, None] + np.arange(isz)).reshape(-1)
    return b, (lo, hi), [name, raw, base, every, raw[every].copy()]


def _decode(bits: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if dtype == "f16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    if dtype == "tf32":  # the low 13 mantissa bits are not read
        return (bits.astype(np.uint32) & 0xFFFFE000).view(np.float32).astype(np.float64)
    b = bits.astype(np.int64)
    s = np.where(b >> 7, -1.0, 1.0)
    if dtype == "e4m3":
        e, m = (b >> 3) & 15, b & 7
        v = np.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * 2.0 ** (e - 7))
        return s * np.where((e == 15) & (m == 7), np.nan, v)
    e, m = (b >> 2) & 31, b & 3
    v = np.where(e == 0, m / 4 * 2.0 ** -14, (1 + m / 4) * 2.0 ** (e - 15))
    return s * np.where(e == 31, np.where(m == 0, np.inf, np.nan), v)


# --- what TMA copies wrote (for the swizzle, tile-in-flight and release rules) -----------

def _block_state(blk) -> dict:
    return blk.__dict__.setdefault("_ac_wgmma", {"written": [], "ops": [], "meet": {}})


@rt.EVENTS.on("shared_write")
def _on_shared_write(api: str, name: str, blk, tile: np.ndarray, barrier_addr: int | None,
                     swizzle: int | None, how: str) -> None:
    """A copy into the shared ``tile`` was issued (the copy twins' event):
    refuse it while an MMA still reads those bytes; record its swizzle."""
    st = _block_state(blk)
    lo = rt.address(tile)
    hi = lo + tile.nbytes
    th, _ = rt.current(api)
    for op in st["ops"]:
        if op.in_flight_for(th.thread.thread_id) and any(a < hi and lo < b for a, b in op.reads):
            raise rt.violation(api, _rules.wgmma_tile_in_flight(
                what=f"`{name}` ({how})", issued=op.line))
    for op in st["ops"]:
        op.async_rewrote(lo, hi)
    st["written"] = [w for w in st["written"] if not (w[0] >= lo and w[1] <= hi)]
    st["written"].append((lo, hi, barrier_addr, swizzle, how))


@rt.EVENTS.on("slot_release")
def _on_release(api: str, blk, barrier_addr: int, where: str) -> None:
    """A pipeline slot whose fills completed on ``barrier_addr`` is released
    (the pipeline twin's event)."""
    st = _block_state(blk)
    ranges = [(lo, hi) for lo, hi, bar, _, _ in st["written"] if bar == barrier_addr]
    th, _ = rt.current(api)
    tid = th.thread.thread_id
    # a release is this thread's word for its own warpgroup's MMAs: another
    # consumer warpgroup still reading the slot releases it itself
    for op in st["ops"]:
        if op.wg == tid // 128 and op.in_flight_for(tid) and any(
                a < hi and lo < b for a, b in op.reads for lo, hi in ranges):
            raise rt.violation(api, f"{where}: " + _rules.wgmma_tile_in_flight(
                what="releasing the slot", issued=op.line))


def _check_written(api, name, d, addrs, isz):
    th, blk = rt.current(api)
    lo, hi = int(addrs.min()), int(addrs.max()) + isz
    for wlo, whi, _, sw, how in _block_state(blk)["written"]:
        if wlo < hi and lo < whi and sw != d.swizzle:
            raise rt.violation(api, _rules.wgmma_swizzle_mismatch(
                name=name, swizzle=d.swizzle, written=sw, how=how))


# --- the collective -------------------------------------------------------------------------


class _Op:
    def __init__(self, line, wg):
        self.line, self.done, self.reads, self.result = line, False, [], None
        self.wg, self.retired = wg, set()  # threads whose wait covered it
        # [operand, bytes of the shared array, its address, the byte indices
        # read, their values]: an ordinary store into them before a thread's
        # wait is found at that wait
        self.snapshots: list = []

    def check_unchanged(self) -> None:
        """At the first wait of the warpgroup that covers the MMA: the bytes
        it read are as it read them (less those an async copy rewrote since:
        the TMA rule judges those), or a store of the generic proxy wrote
        the tile while every thread of the warpgroup still had the MMA in
        flight.  (A store after the first wait is not judged: the storing
        thread may have waited already.)"""
        snaps, self.snapshots = self.snapshots, []
        for name, raw, _, every, seen in snaps:
            if not np.array_equal(raw[every], seen):
                raise rt.violation("wgmma_wait_group", _rules.wgmma_tile_in_flight(
                    what=f"a store into the tile of `{name}` (its bytes changed before this "
                         "wait covered the MMA)", issued=self.line))

    def async_rewrote(self, lo: int, hi: int) -> None:
        """An async copy (judged by its own rule) writes [lo, hi): forget those bytes."""
        for snap in self.snapshots:
            keep = ~((snap[3] + snap[2] >= lo) & (snap[3] + snap[2] < hi))
            snap[3], snap[4] = snap[3][keep], snap[4][keep]

    def in_flight_for(self, tid: int) -> bool:
        """A thread of the issuing warpgroup sees the MMA in flight until its
        own wait covers it; any other thread until some wait of the
        warpgroup has (it learns of that through a barrier)."""
        return tid not in self.retired if tid // 128 == self.wg else not self.done


def _meet(api: str, contribute, compute):
    """The warpgroup's 128 threads meet; the last computes; each gets its share."""
    th, blk = rt.current(api)
    tid = th.thread.thread_id
    wg = tid // 128
    if blk.nthreads < 128 * (wg + 1):
        raise rt.violation(api, f"thread {tid} is in warpgroup {wg}, which has only "
                           f"{blk.nthreads - 128 * wg} of its 128 threads: launch whole warpgroups")
    line = rt.caller_line()
    st = _block_state(blk)
    with blk.cond:
        key = (wg, api)
        m = st["meet"].get(key)
        if m is None:
            m = st["meet"][key] = {"parts": {}, "line": line, "out": None}
        m["parts"][tid % 128] = contribute
        if len(m["parts"]) == 128:
            m["out"] = compute(m["parts"], m["line"])
            del st["meet"][key]
            blk.changed()
        mine = m

        def done():
            return mine["out"] is not None

        def deadlock():
            raise rt.deadlock(blk, f"{rt.SIM_PREFIX}{api}: deadlock: {len(mine['parts'])} of the "
                              f"128 threads of warpgroup {wg} reached the {api} at {line} "
                              f"(warpgroup-collective) {rt.where()}")

        done.line = line
        done.describe = lambda: f"{api} (warpgroup {wg}, {len(mine['parts'])}/128 threads)"
        blk.block_until(done, deadlock)
        return mine["out"], tid % 128, th, blk


def _coords(j, lane, warp):
    i, h, e = j // 4, (j // 2) % 2, j % 2
    return 16 * warp + lane // 4 + 8 * h, 8 * i + 2 * (lane % 4) + e


_coord_lists: dict = {}  # (lane, warp, count) -> [_coords(j, lane, warp) for j < count]


def _coord_list(lane, warp, count) -> list:
    """``[_coords(j, lane, warp) for j in range(count)]``, computed once
    (a warpgroup's MMA places 128 fragments of up to 128 elements)."""
    key = (lane, warp, count)
    hit = _coord_lists.get(key)
    if hit is None:
        hit = _coord_lists[key] = [_coords(j, lane, warp) for j in range(count)]
    return hit


@mirrors(_dev.wgmma_mma_async, "computes the product when the warpgroup's 128 threads have "
         "issued it (fp32 accumulation, see the module notes) and returns a pending fragment "
         "that a wgmma_wait_group must cover before it is read.")
def wgmma_mma_async(acc, a, b, *, dtype=None, scale_d=True, scale_a=1, scale_b=1, trans_a=False,
                    trans_b=False):
    api = "wgmma_mma_async"
    # the simulator's fragments and descriptors as the typing sees them; any other
    # value as it is (refused in the device typing's words)
    plain_acc = _fragment_arg(acc)
    f16 = isinstance(plain_acc, tuple) and _is_f16(plain_acc)
    try:
        a_val = tuple(np.uint32(v) for v in a) if isinstance(a, tuple) else _descriptor_arg(a)
    except (TypeError, ValueError, OverflowError):
        a_val = a
    rt.validate(_dev.wgmma_mma_async, plain_acc, a_val, _descriptor_arg(b), dtype=dtype,
                scale_d=bool(scale_d) if isinstance(scale_d, (int, np.integer)) else scale_d,
                scale_a=scale_a, scale_b=scale_b, trans_a=trans_a, trans_b=trans_b)
    th0, _ = rt.current(api)
    fence_at = getattr(th0, "_ac_wgmma_fence_at", None)
    ordered = isinstance(acc, PendingFragment) or getattr(acc, "fenced", False) or (
        isinstance(acc, Fragment) and fence_at is not None and acc.stamp < fence_at)
    if not ordered:
        why = ("no wgmma_fence before this MMA" if fence_at is None else
               "the fragment was made after the last wgmma_fence (pass it through "
               "acc = ac.wgmma_fence(acc))")
        raise rt.violation(api, _rules.wgmma_no_fence(why=why))
    n = (4 if f16 else 2) * len(plain_acc)
    _, k, isz = _dev.WGMMA_INPUTS[dtype]
    regs = isinstance(a, tuple)

    def compute(parts, line):
        op = _Op(line, th0.thread.thread_id // 128)
        D = np.zeros((64, n), np.float64)
        A = np.zeros((64, k), np.uint64)
        for lane_wg, (vals, aregs) in parts.items():
            warp, lane = lane_wg // 32, lane_wg % 32
            elems = _elements(vals)
            for c, v in zip(_coord_list(lane, warp, len(elems)), elems):
                D[c] = v
            if regs:
                for q, word in enumerate(aregs):
                    r = 16 * warp + lane // 4 + 8 * (q % 2)
                    c = 8 * (q // 2) + 2 * (lane % 4)
                    A[r, c], A[r, c + 1] = int(word) & 0xFFFF, int(word) >> 16
        if not regs:
            A, ra, sa_ = _read_operand(api, "a", a, 64, k, isz, "MN" if trans_a else "K")
            op.reads.append(ra)
            op.snapshots.append(sa_)
        Bt, rb, sb_ = _read_operand(api, "b", b, n, k, isz, "MN" if trans_b else "K")
        op.reads.append(rb)
        op.snapshots.append(sb_)
        prod = (scale_a * _decode(A, dtype)) @ (scale_b * _decode(Bt, dtype)).T
        # one rounding of the exact sum: to f32, or to f16 for an f16 accumulator
        out = (prod + (D if scale_d else 0)).astype(np.float16 if f16 else np.float32)
        op.result = out
        return op

    op, me, th, blk = _meet(api, (plain_acc, _plain(a) if regs else None), compute)
    with blk.cond:
        st = _block_state(blk)
        if op not in st["ops"]:
            st["ops"] = [o for o in st["ops"] if len(o.retired) < 128] + [op]
        th.__dict__.setdefault("_ac_wgmma_batch", []).append(op)
    warp, lane = me // 32, me % 32
    vals = [op.result[c] for c in _coord_list(lane, warp, n // 2)]
    return PendingFragment(_words(vals) if f16 else vals, op)


@mirrors(_dev.wgmma_fence, "marks the fragment (or, with no argument, this thread) fenced: "
         "an MMA on a fragment no fence ordered is an error.")
def wgmma_fence(acc=None):
    rt.validate(_dev.wgmma_fence, _fragment_arg(acc))
    th, _ = rt.current("wgmma_fence")
    th._ac_wgmma_fence_at = _tick(th)
    if acc is None:
        return None
    if isinstance(acc, PendingFragment):
        return acc
    f = _made(th, acc)
    f.fenced = True
    return f


@mirrors(_dev.wgmma_commit_group, "closes this thread's batch of MMAs into a group.")
def wgmma_commit_group():
    rt.validate(_dev.wgmma_commit_group)
    th, _ = rt.current("wgmma_commit_group")
    th.__dict__.setdefault("_ac_wgmma_groups", []).append(th.__dict__.pop("_ac_wgmma_batch", []))


@mirrors(_dev.wgmma_wait_group, "retires all but the newest ``n`` groups of this thread; the "
         "fragment comes back readable when its MMA's group is retired.")
def wgmma_wait_group(n, acc=None):
    rt.validate(_dev.wgmma_wait_group, n, _fragment_arg(acc))
    th, blk = rt.current("wgmma_wait_group")
    groups = th.__dict__.setdefault("_ac_wgmma_groups", [])
    with blk.cond:
        while len(groups) > n:
            for op in groups.pop(0):
                op.done = True
                op.retired.add(th.thread.thread_id)
                op.check_unchanged()
    if acc is None:
        return None
    if isinstance(acc, PendingFragment) and not acc.op.done:
        return acc
    if isinstance(acc, PendingFragment):  # registers the MMA wrote: still ordered
        f = Fragment(_plain(acc))
        f.fenced = True
        return f
    return acc


def _descriptor_arg(d):
    """A descriptor (an int) as the uint64 the typing sees; any other value as it is."""
    return np.uint64(int(d)) if isinstance(d, (int, np.integer)) else d


def _fragment_arg(acc):
    """What the typing sees of ``acc``: a fragment as its float32 (or, f16, uint32)
    tuple; any other value as it is (refused in the device typing's words)."""
    if acc is None:
        return None
    try:
        return _typed(acc)
    except (TypeError, ValueError, OverflowError):
        return acc


@mirrors(_dev.wgmma_zero, "a fragment of zeros (not yet ordered by a fence): N/2 float32, "
         "or N/4 uint32 words of f16 pairs.")
def wgmma_zero(n, dtype="f32"):
    rt.validate(_dev.wgmma_zero, n, dtype=dtype)
    th, _ = rt.current("wgmma_zero")
    if dtype == "f16":
        return _made(th, [np.uint32(0)] * (n // 4))
    return _made(th, [np.float32(0)] * (n // 2))


def _check_readable(api, acc):
    if isinstance(acc, PendingFragment):
        raise rt.violation(api, _rules.wgmma_acc_in_flight(what=f"passing on (to {api})",
                                                           issued=acc.op.line))


@mirrors(_dev.wgmma_store, "stores like the GPU (masked, converted with round-to-nearest-even).")
def wgmma_store(acc, out, row0, col0, *, dtype=None, scale=None):
    api = "wgmma_store"
    _check_readable(api, acc)
    typed = _fragment_arg(acc)
    (_, o, r0, c0), kw = rt.validate(_dev.wgmma_store, typed, out, row0, col0, dtype=dtype,
                                     scale=scale)
    f16 = _is_f16(typed)
    vals = [np.float16(v) for v in _elements(typed)] if f16 else typed
    if scale is not None:  # in f32, before the conversion
        vals = [np.float32(np.float32(v) * np.float32(scale)) for v in vals]
    th, _ = rt.current(api)
    me = th.thread.thread_id % 128
    warp, lane = me // 32, me % 32
    dt = dtype or ("float16" if o.dtype == np.float16 else "float32")
    for j, v in enumerate(vals):
        r, c = _coords(j, lane, warp)
        r, c = r + int(r0), c + int(c0)
        if 0 <= r < o.shape[0] and 0 <= c < o.shape[1]:
            if dt == "bf16":
                u = int(np.float32(v).view(np.uint32))  # f16 -> f32 exact first
                o[r, c] = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
            else:
                o[r, c] = v


@mirrors(_dev.wgmma_load_a, "reads the 64 x 16 tile like the GPU's fragment layout.")
def wgmma_load_a(a, row0, col0):
    (arr, r0, c0), _ = rt.validate(_dev.wgmma_load_a, a, row0, col0)
    th, _ = rt.current("wgmma_load_a")
    me = th.thread.thread_id % 128
    warp, lane = me // 32, me % 32
    bits = arr.view(np.uint16)
    out = []
    for q in range(4):
        r = int(r0) + 16 * warp + lane // 4 + 8 * (q % 2)
        c = int(c0) + 8 * (q // 2) + 2 * (lane % 4)
        out.append(np.uint32(int(bits[r, c]) | (int(bits[r, c + 1]) << 16)))
    return tuple(out)


@mirrors(_dev.setmaxnreg_inc, "validates ``r``; registers are not simulated.")
def setmaxnreg_inc(r):
    rt.validate(_dev.setmaxnreg_inc, r)


@mirrors(_dev.setmaxnreg_dec, "validates ``r``; registers are not simulated.")
def setmaxnreg_dec(r):
    rt.validate(_dev.setmaxnreg_dec, r)
