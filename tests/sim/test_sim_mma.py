"""Tensor-core MMA in the simulator: buggy kernels fail with the package's
named rule (a lane that diverges, exits or never comes to a warp-collective
instruction; a partial warp; a tile outside shared memory or misaligned; a
fragment of the wrong type), and the fixed kernels match numpy."""

from __future__ import annotations

import re

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy._compat import TypingError

rng = np.random.default_rng()
RULE = re.escape("is warp-collective (.sync.aligned): all 32 lanes of the warp must execute it together")


def bf16_tile(shape):
    return ac.bf16_array(rng.standard_normal(shape).astype(np.float32))


@cuda.jit
def good(A, B, C):
    sa = cuda.shared.array((16, 16), np.uint16, alignment=16)
    sb = cuda.shared.array((16, 8), np.uint16, alignment=16)
    t = cuda.threadIdx.x
    for i in range(t, 256, 32):
        sa[i // 16, i % 16] = A[i // 16, i % 16]
    for i in range(t, 128, 32):
        sb[i // 8, i % 8] = B[i // 8, i % 8]
    cuda.syncthreads()
    acc = ac.mma_sync(ac.mma_load_a(sa, 0, 0), ac.mma_load_b(sb, 0, 0), ac.mma_zeros(), "bf16")
    ac.mma_store(C, 0, 0, acc)


def test_the_correct_kernel_matches_numpy():
    A, B = bf16_tile((16, 16)), bf16_tile((16, 8))
    C = np.full((16, 8), np.nan, np.float32)
    good[1, 32](A, B, C)
    ref = ac.bf16_values(A).astype(np.float64) @ ac.bf16_values(B).astype(np.float64)
    np.testing.assert_allclose(C, ref, rtol=0, atol=1e-5 * np.abs(ref).max())


@cuda.jit
def divergent(A, C):
    sa = cuda.shared.array((16, 16), np.uint16, alignment=16)
    lane = cuda.threadIdx.x
    if lane < 16:
        a = ac.mma_load_a(sa, 0, 0)       # BUG: half the warp loads here ...
    else:
        a = ac.mma_load_a(sa, 0, 0)       # ... the other half there
    C[lane, 0] = a[0]


def test_divergent_lanes_are_a_named_error():
    with pytest.raises(ac.sim.SimulatorError, match=RULE) as e:
        divergent[1, 32](bf16_tile((16, 16)), np.zeros((32, 1), np.uint32))
    assert "while lanes" in str(e.value) and "of its warp wait in ldmatrix" in str(e.value)


@cuda.jit
def lane_exits(A, C):
    sa = cuda.shared.array((16, 16), np.uint16, alignment=16)
    lane = cuda.threadIdx.x
    if lane == 5:
        return                              # BUG: lane 5 leaves the warp
    a = ac.mma_load_a(sa, 0, 0)
    C[lane, 0] = a[0]


def test_an_exited_lane_is_a_named_error():
    with pytest.raises(ac.sim.SimulatorError, match=RULE) as e:
        lane_exits[1, 32](bf16_tile((16, 16)), np.zeros((32, 1), np.uint32))
    assert "lanes [5] of the warp exited without executing it" in str(e.value)


@cuda.jit
def lane_blocked(A, C, flags):
    sa = cuda.shared.array((16, 16), np.uint16, alignment=16)
    lane = cuda.threadIdx.x
    if lane != 31:
        a = ac.mma_load_a(sa, 0, 0)
        C[lane, 0] = a[0]
    else:
        cuda.syncwarp(1 << 31 | 1)        # BUG: waits for lane 0, which waits in ldmatrix


def test_a_lane_that_never_comes_is_a_deadlock_naming_it():
    with pytest.raises(ac.sim.DeadlockError) as e:
        lane_blocked[1, 32](bf16_tile((16, 16)), np.zeros((32, 1), np.uint32), np.zeros(1))
    assert "lanes [31] of the warp never reach" in str(e.value), str(e.value)


def test_a_partial_warp_is_a_named_error():
    with pytest.raises(ac.sim.SimulatorError, match=RULE) as e:
        good[1, 16](bf16_tile((16, 16)), bf16_tile((16, 8)), np.zeros((16, 8), np.float32))
    assert "the warp has only 16 lanes (the block has 16 threads" in str(e.value)


@cuda.jit
def global_tile(A, C):
    lane = cuda.threadIdx.x
    r = ac.ldmatrix(A, (lane % 16, 0), 4)    # BUG: ldmatrix reads shared memory only
    C[lane, 0] = r[0]


def test_a_global_tile_is_refused_with_the_checked_mode_words():
    with pytest.raises(ac.sim.SimulatorError, match=r"ldmatrix: `tile` is not in shared memory"):
        global_tile[1, 32](bf16_tile((16, 16)), np.zeros((32, 1), np.uint32))


@cuda.jit
def misaligned(A, C):
    sa = cuda.shared.array((16, 24), np.uint16, alignment=16)
    lane = cuda.threadIdx.x
    r = ac.ldmatrix(sa, (lane % 16, 4), 4)   # BUG: column 4 is 8 bytes into a 16-byte row
    C[lane, 0] = r[0]


def test_a_misaligned_row_is_refused_with_the_checked_mode_words():
    with pytest.raises(ac.sim.SimulatorError, match=r"ldmatrix: `tile` is not 16-byte aligned"):
        misaligned[1, 32](bf16_tile((16, 16)), np.zeros((32, 1), np.uint32))


@cuda.jit
def outside(A, C):
    sa = cuda.shared.array((16, 16), np.uint16, alignment=16)
    lane = cuda.threadIdx.x
    a = ac.mma_load_a(sa, 8, 0)              # BUG: rows 8..23 of a 16-row tile
    C[lane, 0] = a[0]


def test_a_fragment_past_the_tile_is_refused():
    # the first lane to reach a row past the tile (16..23, which lane depends on the schedule)
    with pytest.raises(ac.sim.SimulatorError, match=r"mma_load_a: `idx`\[0\]=(1[6-9]|2[0-3]) is outside "
                       r"axis 0 of `tile` \(length 16\)"):
        outside[1, 32](bf16_tile((16, 16)), np.zeros((32, 1), np.uint32))


@cuda.jit
def float64_acc(A, C):
    sa = cuda.shared.array((16, 16), np.uint16, alignment=16)
    a = ac.mma_load_a(sa, 0, 0)
    b = ac.mma_load_b(sa, 0, 0)
    d = ac.mma_sync(a, b, (0.0, 0.0, 0.0, 0.0), "bf16")  # BUG: float64 accumulator
    C[cuda.threadIdx.x, 0] = d[0]


def test_a_float64_accumulator_is_the_compile_time_error():
    with pytest.raises(TypingError, match=r"mma_sync: `c` must be the accumulator fragment: a tuple "
                       r"of 4 float32 \(ac.mma_zeros\(\) or an mma_sync result\)"):
        float64_acc[1, 32](bf16_tile((16, 16)), np.zeros((32, 1), np.float32))


@cuda.jit
def unwaited(A, B, C):
    sa = cuda.shared.array((16, 16), np.uint16, alignment=16)
    sb = cuda.shared.array((16, 8), np.uint16, alignment=16)
    t = cuda.threadIdx.x
    r, c = t // 2, (t % 2) * 8
    ac.cp_async(sa[r, c:c + 8], A[r, c:c + 8], 16)
    if t < 16:
        ac.cp_async(sb[t, :], B[t, :], 16)
    ac.commit_group()
    cuda.syncthreads()                      # BUG: no wait_group before the ldmatrix
    acc = ac.mma_sync(ac.mma_load_a(sa, 0, 0), ac.mma_load_b(sb, 0, 0), ac.mma_zeros(), "bf16")
    ac.mma_store(C, 0, 0, acc)
    ac.wait_all()


def test_a_tile_read_before_its_copy_lands_gives_poison_not_numbers():
    C = np.zeros((16, 8), np.float32)
    unwaited[1, 32](bf16_tile((16, 16)), bf16_tile((16, 8)), C)
    assert np.isnan(C).all()  # poison bf16 bits (0xFFFF) are NaN through the MMA


@cuda.jit
def through_shared(A, B, C):
    sa = cuda.shared.array((16, 16), np.uint16, alignment=16)
    sb = cuda.shared.array((16, 8), np.uint16, alignment=16)
    sc = cuda.shared.array((16, 8), np.uint16, alignment=16)
    t = cuda.threadIdx.x
    for i in range(t, 256, 32):
        sa[i // 16, i % 16] = A[i // 16, i % 16]
    for i in range(t, 128, 32):
        sb[i // 8, i % 8] = B[i // 8, i % 8]
    cuda.syncthreads()
    acc = ac.mma_sync(ac.mma_load_a(sa, 0, 0), ac.mma_load_b(sb, 0, 0), ac.mma_zeros(), "bf16")
    ac.mma_store(sc, 0, 0, acc)            # bf16 into a shared tile, then out row by row
    cuda.syncthreads()
    for i in range(t, 128, 32):
        C[i // 8, i % 8] = sc[i // 8, i % 8]


def test_an_accumulator_stored_to_shared_memory_as_bf16():
    A, B = bf16_tile((16, 16)), bf16_tile((16, 8))
    C = np.zeros((16, 8), np.uint16)
    through_shared[1, 32](A, B, C)
    ref = ac.bf16_values(A).astype(np.float64) @ ac.bf16_values(B).astype(np.float64)
    np.testing.assert_array_equal(C, ac.bf16_array(ref.astype(np.float32)))
