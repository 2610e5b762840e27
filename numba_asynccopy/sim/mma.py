"""Tensor-core MMA, ldmatrix and stmatrix in the simulator.

The warp-collective instructions meet as the GPU's ``.sync.aligned`` forms
do: every lane of the warp calls, each with its own operands, and the call
returns only when all 32 lanes have come to the same place; then the lanes'
operands are combined exactly as the hardware combines them:

- ``ldmatrix`` / ``stmatrix``: lane ``8i + r`` supplies the address of row
  ``r`` of matrix ``i``; lane ``l`` gets (gives) row ``l // 4``, elements
  ``2 (l % 4)`` and ``+1`` of each matrix (of its transpose with ``trans``);
- ``mma_sync``: the A, B and C fragments of the 32 lanes are assembled into
  the 16 x k, k x 8 and 16 x 8 matrices of the PTX ISA's fragment layouts,
  multiplied, and each lane gets its part of D.

Numerics: bf16/f16 inputs are exact in float32 and so are their products;
the GPU adds them in float32 in an unspecified order.  The simulator
computes ``A @ B + C`` in float64 and rounds once to float32, so it agrees
with the GPU to within about ``k * 2**-23 * sum|a*b|`` (tests compare at
``rtol=1e-5`` of ``sum|a||b| + |c|``).  tf32 inputs keep the upper 19 bits
of each float32 (the low 13 mantissa bits are dropped, as the tensor core
reads an unconverted float32).

The warp rule, in the package's words (``warp_not_converged``): a lane that
calls at another place while lanes wait here, a lane that has exited, or a
warp with fewer than 32 threads is a :class:`SimulatorError`; a lane that
never comes (blocked elsewhere) is a :class:`DeadlockError` naming it.
"""

from __future__ import annotations


import numpy as np

from .. import _rules
from . import _numba_sim_internals as _nbsim
from . import _runtime as rt
from ._mirror import mirrors
from .fence import _warp_lanes

from .. import mma as _dev  # noqa: E402
from .. import vector as _vec  # noqa: E402


# bf16 as uint16 bits (the package's representation; host/bf16.py)
from ..host.bf16 import bf16_array as _bf16_bits  # noqa: E402
from ..host.bf16 import bf16_values as _bf16_values  # noqa: E402


# --- the warp meeting ---------------------------------------------------------------------


class _Meeting:
    def __init__(self, site: tuple, line: str):
        self.site, self.line = site, line
        self.payload: dict[int, object] = {}
        self.results: dict[int, object] | None = None
        self.error: str | None = None




def _not_converged(api: str, instr: str, why: str):
    return rt.violation(api, _rules.warp_not_converged(instr=instr, why=why))


def _meet(api: str, instr: str, payload, combine):
    """Deposit this lane's ``payload`` in the warp's meeting at this call;
    when all 32 lanes are in, ``combine({lane: payload})`` returns
    ``{lane: result}``; returns this lane's result."""
    line = rt.caller_line()
    th, blk = rt.current(api)
    tid = th.thread.thread_id
    lane, warp_base = tid % 32, tid - tid % 32
    have = min(32, blk.nthreads - warp_base)
    if have < 32:
        raise _not_converged(api, instr, f"the warp has only {have} lanes (the block has "
                             f"{blk.nthreads} threads; make it a multiple of 32)")
    site = (instr, line)
    with blk.cond:
        open_ = blk.__dict__.setdefault("_ac_tc_meet", {})
        m = open_.get(warp_base)
        if m is not None and m.site != site:
            waiting = sorted(m.payload)
            raise _not_converged(api, instr, f"lane {lane} executes it at {line} while lanes "
                                 f"{waiting} of its warp wait in {m.site[0]} at {m.line}")
        if m is None:
            m = open_[warp_base] = _Meeting(site, line)
        m.payload[lane] = payload
        cache = blk.__dict__.setdefault("_ac_tc_lanes", {})
        lanes = cache.get(warp_base)
        if lanes is None or None in lanes:
            lanes = cache[warp_base] = _warp_lanes(blk, warp_base)

        def done() -> bool:
            if m.results is not None or m.error is not None:
                return True
            if len(m.payload) == 32:
                try:
                    m.results = combine(m.payload)
                except rt.SimulatorError as e:
                    m.error = str(e)
            else:
                gone = [k for k in range(32) if k not in m.payload and _nbsim.exited(lanes[k])]
                if not gone:
                    return False
                m.error = (f"lanes {gone} of the warp exited without executing it, while lanes "
                           f"{sorted(m.payload)} wait at {m.line}")
            if open_.get(warp_base) is m:
                del open_[warp_base]
            blk.changed(m)  # wakes only the lanes of this meeting
            return True

        def deadlock():
            missing = [k for k in range(32) if k not in m.payload]
            raise rt.deadlock(blk, (
                f"{rt.SIM_PREFIX}{api}: deadlock: every thread of the block is blocked, and lanes "
                f"{missing} of the warp never reach the {instr} at {line} that lanes "
                f"{sorted(m.payload)} wait in ("
                + _rules.warp_not_converged(instr=instr, why="some lanes never came")
                + f") {rt.where()}"))

        done.line = line
        done.key = m  # an arrival wakes nobody; the last one wakes the meeting
        done.describe = lambda: f"{instr} (warp {warp_base // 32})"
        blk.block_until(done, deadlock)
        if m.error is not None:
            if m.error.startswith(rt.SIM_PREFIX) or "checked mode" in m.error:
                raise rt.SimulatorError(m.error)
            raise _not_converged(api, instr, m.error)
        return m.results[lane]


# --- addresses ------------------------------------------------------------------------------


def _row(api: str, a: np.ndarray, idx) -> np.ndarray:
    """The 16 bytes at ``a[idx]`` as a numpy view, after the device's rules
    (index inside the tile, last axis contiguous, shared, 16-byte aligned)."""
    scalar = not isinstance(idx, tuple)
    inds = tuple(int(x) for x in ((idx,) if scalar else idx))
    n = _dev.ROW_BYTES // a.itemsize
    last = a.ndim - 1
    for k, (i, s) in enumerate(zip(inds, a.shape)):
        bad = not 0 <= i < s if k < last else (i < 0 or i + n > s)
        if bad:
            rule = _vec._rule_index(k, a.ndim, scalar, n).replace("`arr`", "`tile`")
            raise rt.violation(api, rule.replace("%lld", "%d") % (i, s))
    if n > 1 and a.strides[-1] != a.itemsize:
        raise rt.violation(api, _rules.last_axis_strided(name="tile", stride=a.strides[-1]))
    if rt.space_of(a) != "shared":
        raise rt.violation(api, _rules.not_in_space(name="tile", space="shared"))
    addr = rt.address(a) + sum(i * s for i, s in zip(inds, a.strides))
    if addr % _dev.ROW_BYTES:
        raise rt.violation(api, _rules.not_aligned(name="tile", align=_dev.ROW_BYTES,
                                                   addr=hex(addr)))
    return a[inds[:-1] + (slice(inds[-1], inds[-1] + n),)]


def _words16(row: np.ndarray) -> np.ndarray:
    """A row's 16 bytes as 8 uint16 (two per 32-bit element for 4-byte tiles)."""
    return np.ascontiguousarray(row).view(np.uint8).view(np.uint16)


def _ldmatrix_combine(n: int, trans: bool):
    def combine(payload: dict) -> dict:
        mats = [np.stack([_words16(payload[8 * i + r]) for r in range(8)]) for i in range(n)]
        if trans:
            mats = [m.T for m in mats]
        out = {}
        for lane in range(32):
            g, t = lane // 4, lane % 4
            out[lane] = tuple(np.uint32(int(m[g, 2 * t]) | (int(m[g, 2 * t + 1]) << 16))
                              for m in mats)
        return out

    return combine


def _ldmatrix(api: str, a: np.ndarray, idx, n: int, trans: bool) -> tuple:
    instr = _dev.form("ldmatrix").opcode.format(num=f".x{n}", trans=".trans" if trans else "")
    row = _row(api, a, idx)
    return _meet(api, instr, row, _ldmatrix_combine(n, trans))


@mirrors(_dev.ldmatrix, "the 32 lanes meet (the warp rule); each lane's row is read from its own "
         "address, as on the GPU.")
def ldmatrix(tile, idx, num=4, trans=False):
    (a, i, n, t), _ = rt.validate(_dev.ldmatrix, tile, idx, num, trans)
    return _ldmatrix("ldmatrix", a, i, int(n), bool(t))


@mirrors(_dev.stmatrix, "the 32 lanes meet (the warp rule); each row is written to the address "
         "its lane gave, as on the GPU.")
def stmatrix(tile, idx, values, trans=False):
    (a, i, vals, t), _ = rt.validate(_dev.stmatrix, tile, idx, values, trans)
    n = len(vals)
    instr = _dev.form("stmatrix").opcode.format(num=f".x{n}", trans=".trans" if t else "")
    row = _row("stmatrix", a, i)

    def combine(payload: dict) -> dict:
        for k in range(n):
            m = np.zeros((8, 8), np.uint16)
            for lane in range(32):
                w = int(payload[lane][1][k])
                g, q = lane // 4, lane % 4
                m[g, 2 * q], m[g, 2 * q + 1] = w & 0xFFFF, w >> 16
            if t:
                m = m.T
            for r in range(8):
                dst = payload[8 * k + r][0]
                np.copyto(dst.view(np.uint8), np.ascontiguousarray(m[r]).view(np.uint8))
        return {lane: None for lane in range(32)}

    _meet("stmatrix", instr, (row, tuple(vals)), combine)


# --- mma.sync ----------------------------------------------------------------------------


def _halves(kind: str, w: int) -> tuple[float, float]:
    lo, hi = np.uint16(w & 0xFFFF), np.uint16(w >> 16)
    if kind == "bf16":
        return float(_bf16_values(lo)), float(_bf16_values(hi))
    return float(lo.view(np.float16)), float(hi.view(np.float16))


def _tf32(w: int) -> float:
    return float(np.uint32(w & 0xFFFFE000).view(np.float32))


def _mma_combine(kind: str):
    def combine(payload: dict) -> dict:
        k = 8 if kind == "tf32" else 16
        A = np.zeros((16, k))
        B = np.zeros((k, 8))
        C = np.zeros((16, 8))
        for lane, (a, b, c) in payload.items():
            g, t = lane // 4, lane % 4
            if kind == "tf32":
                A[g, t], A[g + 8, t], A[g, t + 4], A[g + 8, t + 4] = (_tf32(int(x)) for x in a)
                B[t, g], B[t + 4, g] = (_tf32(int(x)) for x in b)
            else:
                for r, (dr, dc) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
                    A[g + dr, 2 * t + dc], A[g + dr, 2 * t + dc + 1] = _halves(kind, int(a[r]))
                for r in range(2):
                    B[2 * t + 8 * r, g], B[2 * t + 8 * r + 1, g] = _halves(kind, int(b[r]))
            C[g, 2 * t], C[g, 2 * t + 1], C[g + 8, 2 * t], C[g + 8, 2 * t + 1] = (
                float(x) for x in c)
        with np.errstate(all="ignore"):
            D = (A @ B + C).astype(np.float32)
        return {lane: (D[lane // 4, 2 * (lane % 4)], D[lane // 4, 2 * (lane % 4) + 1],
                       D[lane // 4 + 8, 2 * (lane % 4)], D[lane // 4 + 8, 2 * (lane % 4) + 1])
                for lane in range(32)}

    return combine


@mirrors(_dev.mma_sync, "the 32 lanes meet (the warp rule); D = A @ B + C is computed in float64 "
         "from the lanes' fragments and rounded once to float32 (the GPU accumulates in float32: "
         "agreement to about k * 2**-23 of sum|a*b|).")
def mma_sync(a, b, c, dtype, shape=None):
    (a, b, c, kind, _), _ = rt.validate(_dev.mma_sync, a, b, c, dtype, shape)
    _, opcode = _dev.validate_mma_sync(*rt.last_types()[0])  # the types validate typed
    return _meet("mma_sync", opcode, (a, b, c), _mma_combine(kind))


@mirrors(_dev.mma_zeros)
def mma_zeros():
    rt.validate(_dev.mma_zeros)
    return (np.float32(0),) * _dev.C_REGS


def _lane() -> int:
    th, _ = rt.current("mma")
    return th.thread.thread_id % 32


@mirrors(_dev.mma_load_a, "the lanes' row addresses as on the GPU, then the ldmatrix.x4 meeting.")
def mma_load_a(tile, row, col):
    (a, r, c), _ = rt.validate(_dev.mma_load_a, tile, row, col)
    lane = _lane()
    idx = (int(r) + lane % 16, int(c) + (lane // 16) * (_dev.ROW_BYTES // a.itemsize))
    return _ldmatrix("mma_load_a", a, idx, 4, False)


@mirrors(_dev.mma_load_b, "the lanes' row addresses as on the GPU, then the ldmatrix.x2 meeting "
         "(tf32 with layout='row': two plain loads).")
def mma_load_b(tile, row, col, layout="row"):
    (a, r, c, lay), _ = rt.validate(_dev.mma_load_b, tile, row, col, layout)
    lane = _lane()
    r, c = int(r), int(c)
    if a.itemsize == 4 and lay == "row":
        g, t = lane // 4, lane % 4
        rows = (r + t, r + t + 4)
        for rr in rows:
            if not (0 <= rr < a.shape[0] and 0 <= c + g < a.shape[1]):
                raise rt.violation("mma_load_b", f"`tile`[{rr}, {c + g}] is outside `tile` "
                                   f"(shape {a.shape})")
        return tuple(np.uint32(a[rr, c + g].view(np.uint32)) for rr in rows)
    if lay == "row":
        idx, trans = (r + lane % 16, c), True
    else:
        idx, trans = (r + lane % 8, c + ((lane // 8) % 2) * (_dev.ROW_BYTES // a.itemsize)), False
    return _ldmatrix("mma_load_b", a, idx, 2, trans)


@mirrors(_dev.mma_store, "the same elements, written one by one by each lane.")
def mma_store(out, row, col, acc):
    (o, r, c, vals), _ = rt.validate(_dev.mma_store, out, row, col, acc)
    lane = _lane()
    r0, c0 = int(r) + lane // 4, int(c) + 2 * (lane % 4)
    for i, v in enumerate(vals):
        rr, cc = r0 + 8 * (i // 2), c0 + i % 2
        if 0 <= rr < o.shape[0] and 0 <= cc < o.shape[1]:
            if o.dtype == np.uint16:
                o[rr, cc] = _bf16_bits(np.float32(v))
            else:
                o[rr, cc] = o.dtype.type(np.float32(v))


@mirrors(_dev.f32_to_bf16, "rounds to nearest even in numpy (the same bits as cvt.rn.bf16.f32).")
def f32_to_bf16(x):
    rt.validate(_dev.f32_to_bf16, x)
    return np.uint16(_bf16_bits(np.float32(x)))


@mirrors(_dev.bf16_to_f32)
def bf16_to_f32(h):
    rt.validate(_dev.bf16_to_f32, h)
    return np.float32(_bf16_values(np.uint16(h)))
