"""Warp shuffles, votes and matches in the simulator: results as the PTX ISA
defines them (checked against a numpy model of every lane), the warp
converging like the GPU's, and the mask rules as named errors."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac

FULL = 0xFFFFFFFF
OPS = ("idx", "up", "down", "xor")


@cuda.jit
def shuffles(x, b, out):
    t = cuda.threadIdx.x
    v = x[t]
    out[0, t] = cuda.shfl_sync(FULL, v, b[t])
    out[1, t] = cuda.shfl_up_sync(FULL, v, b[t])
    out[2, t] = cuda.shfl_down_sync(FULL, v, b[t])
    out[3, t] = cuda.shfl_xor_sync(FULL, v, b[t])


def model_shuffle(x, b, warps):
    """Per lane: the PTX ISA's source lane (operand mod 32), own value past the ends."""
    out = np.empty((4, x.size), x.dtype)
    for w in range(warps):
        for lane in range(32):
            t = 32 * w + lane
            d = int(b[t]) & 31
            for row, src in enumerate((d, lane - d, lane + d, lane ^ d)):
                out[row, t] = x[32 * w + src] if 0 <= src <= 31 else x[t]
    return out


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_shuffles_match_model(dtype, interleaving):
    rng = np.random.default_rng(interleaving)
    n = 64
    x = (rng.standard_normal(n) * 100).astype(dtype)
    # one delta per warp (the GPU needs none, the model does not care); operands past 31 wrap
    b = np.repeat(rng.integers(0, 40, 2), 32).astype(np.int32)
    out = np.full((4, n), -7, dtype)
    shuffles[1, n](x, b, out)
    np.testing.assert_array_equal(out, model_shuffle(x, b, 2))


@cuda.jit
def votes(p, v, out):
    t = cuda.threadIdx.x
    out[0, t] = cuda.all_sync(FULL, p[t])
    out[1, t] = cuda.any_sync(FULL, p[t])
    out[2, t] = cuda.eq_sync(FULL, p[t])
    out[3, t] = cuda.ballot_sync(FULL, p[t])
    out[4, t] = cuda.match_any_sync(FULL, v[t])
    m, same = cuda.match_all_sync(FULL, v[t])
    out[5, t] = m
    out[6, t] = same
    out[7, t] = cuda.activemask()
    out[8, t] = cuda.lanemask_lt()
    cuda.syncthreads()  # no lane exits before every lane read activemask


def _i32(bits):
    return int(np.array(bits, np.uint32).view(np.int32))


@pytest.mark.parametrize("case", ["random", "all_true", "all_false", "lane31"])
def test_votes_and_matches_match_model(case, interleaving):
    rng = np.random.default_rng(interleaving)
    p = {"random": rng.integers(0, 2, 32), "all_true": np.ones(32), "all_false": np.zeros(32),
         "lane31": np.eye(32)[31]}[case].astype(np.bool_)
    v = rng.integers(0, 3, 32).astype(np.float32) if case == "random" else np.ones(32, np.float32)
    out = np.zeros((9, 32), np.int64)
    votes[1, 32](p, v, out)
    ballot = _i32(sum(1 << k for k in range(32) if p[k]))
    for lane in range(32):
        same = sum(1 << k for k in range(32) if v[k] == v[lane])
        uniform = len(set(v.tolist())) == 1
        want = [p.all(), p.any(), p.all() or not p.any(), ballot, _i32(same),
                _i32(FULL) if uniform else 0, uniform, FULL, (1 << lane) - 1]
        assert out[:, lane].tolist() == [int(w) for w in want], (lane, out[:, lane])


@cuda.jit
def warp_reduce(x, out):
    """A block-wide sum: a shuffle reduction per warp, then warp 0 reduces the partials."""
    partial = cuda.shared.array(32, np.float32)
    t = cuda.threadIdx.x
    v = x[cuda.blockIdx.x * cuda.blockDim.x + t]
    for d in (16, 8, 4, 2, 1):
        v += cuda.shfl_down_sync(FULL, v, d)
    if t % 32 == 0:
        partial[t // 32] = v
    cuda.syncthreads()
    if t < 32:
        w = partial[t] if t < cuda.blockDim.x // 32 else np.float32(0)
        for d in (16, 8, 4, 2, 1):
            w += cuda.shfl_xor_sync(FULL, w, d)
        if t == 0:
            out[cuda.blockIdx.x] = w


def test_warp_reduction_kernel(interleaving):
    rng = np.random.default_rng(interleaving)
    x = rng.integers(-50, 50, 2 * 128).astype(np.float32)  # exact in float32
    out = np.full(2, np.nan, np.float32)
    warp_reduce[2, 128](x, out)
    np.testing.assert_array_equal(out, x.reshape(2, 128).sum(axis=1))


@cuda.jit
def half_warps(x, out):
    # two half-warp groups, each its own mask: they need not meet each other
    t = cuda.threadIdx.x
    mask = 0x0000FFFF if t < 16 else 0xFFFF0000
    out[t] = cuda.shfl_xor_sync(mask, x[t], 8)


def test_disjoint_masks(interleaving):
    x = np.arange(32, dtype=np.int32)
    out = np.zeros(32, np.int32)
    half_warps[1, 32](x, out)
    np.testing.assert_array_equal(out, x ^ 8)


@cuda.jit
def lane_outside_mask(x, out):
    t = cuda.threadIdx.x
    out[t] = cuda.shfl_down_sync(0x0000FFFF, x[t], 0)  # BUG: lanes 16-31 are not in the mask


def test_lane_outside_mask_is_named():
    x = np.arange(32, dtype=np.int32)
    with pytest.raises(ac.sim.SimulatorError,
                       match=r"cuda.shfl_down_sync: lane (1[6-9]|2\d|3[01]) executes shfl.sync.down "
                             r"but is not in `mask`=0x0000ffff"):
        lane_outside_mask[1, 32](x, np.zeros(32, np.int32))


@cuda.jit
def lane_never_arrives(x, out):
    t = cuda.threadIdx.x
    if t != 5:  # BUG: lane 5 of the mask never executes the vote
        out[t] = cuda.any_sync(FULL, x[t] > 3)
    cuda.syncthreads()


def test_lane_never_arrives_is_a_deadlock():
    x = np.arange(32, dtype=np.int32)
    with pytest.raises(ac.sim.DeadlockError,
                       match=r"cuda.any_sync: deadlock: .*lanes \[5\] of `mask`=0xffffffff never "
                             r"reach the vote.sync.any"):
        lane_never_arrives[1, 32](x, np.zeros(32, np.int32))


@cuda.jit
def source_outside_mask(x, out):
    t = cuda.threadIdx.x
    if t < 16:
        out[t] = cuda.shfl_sync(0x0000FFFF, x[t], 20)  # BUG: lane 20 is not in the mask


def test_source_lane_outside_mask_is_named():
    x = np.arange(32, dtype=np.int32)
    with pytest.raises(ac.sim.SimulatorError,
                       match=r"cuda.shfl_sync: lane \d+ reads lane 20, which is not in "
                             r"`mask`=0x0000ffff: on the GPU the value it gets is undefined"):
        source_outside_mask[1, 32](x, np.zeros(32, np.int32))
