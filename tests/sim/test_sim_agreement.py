"""The simulator refuses what a GPU compile refuses, in the same words, and
reports the root cause of a failure first."""

from __future__ import annotations

import re

import numpy as np
import pytest
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy import checked as _checked


@cuda.jit
def wait_group_float(out, n):
    ac.wait_group(1.5 * n)  # BUG: wait_group takes an integer


@cuda.jit
def copy_tile(A, out):
    sh = cuda.shared.array(64, np.float32, alignment=16)
    t = cuda.threadIdx.x
    if t < 16:
        ac.cp_async(sh[t * 4:t * 4 + 4], A[t * 4:t * 4 + 4], 16)
    ac.commit_group()
    ac.wait_all()
    cuda.syncthreads()
    out[t] = sh[t]


def test_integer_argument_words():
    out = np.zeros(1, np.float32)
    with pytest.raises(Exception, match="wait_group: `n` must be an integer value, got float64"):
        wait_group_float[1, 1](out, 2)


@pytest.fixture
def checked_env(monkeypatch):
    saved = _checked._state["checked"]
    _checked._state["checked"] = None  # read the environment again
    yield monkeypatch
    _checked._state["checked"] = saved


def test_checked_env_not_a_switch(checked_env):
    checked_env.setenv("NUMBA_ASYNCCOPY_CHECKED", "yes")
    A = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    with pytest.raises(ValueError, match=r"NUMBA_ASYNCCOPY_CHECKED='yes' is not a switch: use 1"):
        copy_tile[1, 64](A, out)


@pytest.mark.parametrize("value", ["0", "1", ""])
def test_checked_env_switch_runs(checked_env, value, interleaving):
    checked_env.setenv("NUMBA_ASYNCCOPY_CHECKED", value)
    A = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    copy_tile[1, 64](A, out)
    np.testing.assert_array_equal(out, A)


# --- a deadlock's headline is its root cause --------------------------------------------

ROWS, COLS, STAGES, NT = 4, 32, 2, 4
TILE_BYTES = ROWS * COLS * 4


@cuda.jit
def tma_ring_by_hand(tmap, out, extra):
    bars = cuda.shared.array((2, STAGES), np.uint64)  # full, empty
    ring = cuda.shared.array((STAGES, ROWS, COLS), np.float32, alignment=128)
    tid = cuda.threadIdx.x
    if tid == 0:
        for s in range(STAGES):
            ac.mbarrier_init(bars[0, s:], 1)
            ac.mbarrier_init(bars[1, s:], COLS)
        ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if tid == 0:  # the producer
        for t in range(NT):
            s = t % STAGES
            if t >= STAGES:
                ac.mbarrier_wait_parity(bars[1, s:], (t // STAGES - 1) % 2)
            ac.mbarrier_arrive_expect_tx(bars[0, s:], TILE_BYTES + extra)  # BUG when extra != 0
            ac.cp_async_bulk_tensor_load(ring[s], tmap, (ROWS * t, 0), bars[0, s:])
    elif tid >= 32:  # the consumers: one warp
        c = tid - 32
        for t in range(NT):
            s = t % STAGES
            ac.mbarrier_wait_parity(bars[0, s:], (t // STAGES) % 2)
            for r in range(ROWS):
                out[ROWS * t + r, c] = ring[s, r, c]
            ac.mbarrier_arrive(bars[1, s:])


def _ring_args():
    a = np.arange(ROWS * NT * COLS, dtype=np.float32).reshape(ROWS * NT, COLS)
    return a, ac.TensorMap(cuda.to_device(a), (ROWS, COLS)), np.full_like(a, np.nan)


def test_tma_ring_correct(interleaving):
    a, tmap, out = _ring_args()
    tma_ring_by_hand[1, 64](tmap, out, 0)
    np.testing.assert_array_equal(out, a)


def test_deadlock_headline_is_the_starved_full_barrier():
    a, tmap, out = _ring_args()
    with pytest.raises(ac.sim.DeadlockError) as e:
        tma_ring_by_hand[1, 64](tmap, out, 16)
    headline = str(e.value).splitlines()[0]
    # the full barrier of stage 0 (byte offset 0) misses 16 bytes: that is the headline,
    # not the empty barrier the producer then waits on
    assert "byte offset 0) can never complete the phase of parity 0" in headline, headline
    assert "(starved: every arrival is in but 16 announced transaction bytes never come)" \
        in headline, headline
    assert "32 threads, first [block (0,0,0) thread (32,0,0)]" in headline, headline
    # the symptom is still listed
    assert "byte offset 16) can never complete" in str(e.value), str(e.value)


# --- a copy still in flight when its block exits ---------------------------------------


@cuda.jit
def one_tile_consumer(tmap, out, wait):
    bars = cuda.shared.array((2, 1), np.uint64)  # full, empty
    tile = cuda.shared.array((ROWS, COLS), np.float32, alignment=128)
    tid = cuda.threadIdx.x
    if tid == 0:
        ac.mbarrier_init(bars[0, 0:], 1)
        ac.mbarrier_init(bars[1, 0:], COLS)
        ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if tid == 0:
        ac.mbarrier_arrive_expect_tx(bars[0, 0:], TILE_BYTES)
        ac.cp_async_bulk_tensor_load(tile, tmap, (0, 0), bars[0, 0:])
    elif tid >= 32:
        c = tid - 32
        if wait == 1:  # BUG otherwise: the consumer reads (and releases) without the wait
            ac.mbarrier_wait_parity(bars[0, 0:], 0)
        for r in range(ROWS):
            out[r, c] = tile[r, c]
        if wait < 2:  # 2: it does not release the slot either
            ac.mbarrier_arrive(bars[1, 0:])


def test_one_tile_release_without_wait_is_named(interleaving):
    # the release after reading the tile in flight or, when the consumers read
    # before the copy was issued, the copy nobody waited for at the exit
    a, tmap, out = _ring_args()
    with pytest.raises(ac.sim.SimulatorError, match=r"the slot was released without a wait") as e:
        one_tile_consumer[1, 64](tmap, out, 0)
    assert re.search(r"cp_async_bulk_tensor_load issued at .*:\d+ \[block \(0,0,0\) "
                     r"thread \(0,0,0\)\]", str(e.value)), str(e.value)


def test_tile_read_unwaited_and_never_released_is_in_flight_at_exit():
    # the same bug without the release: the copy nobody waited for is named at the exit
    a, tmap, out = _ring_args()
    with pytest.raises(ac.sim.SimulatorError,
                       match=r"block \(0,0,0\) exited with a copy still in flight: "
                             r"cp_async_bulk_tensor_load issued at .*:\d+ \[block \(0,0,0\) "
                             r"thread \(0,0,0\)\] still writes shared array allocated at .*, "
                             r"byte offset 0 and nothing waited for it \(a wait on the barrier "
                             r"\(.*byte offset 0\) for phase 0 is missing"):
        one_tile_consumer[1, 64](tmap, out, 2)


def test_one_tile_with_wait(interleaving):
    a, tmap, out = _ring_args()
    one_tile_consumer[1, 64](tmap, out, 1)
    np.testing.assert_array_equal(out[:ROWS], a[:ROWS])


@cuda.jit
def cp_async_no_wait(A, out, wait):
    sh = cuda.shared.array(64, np.float32, alignment=16)
    t = cuda.threadIdx.x
    if t < 16:
        ac.cp_async(sh[t * 4:t * 4 + 4], A[t * 4:t * 4 + 4], 16)
        ac.commit_group()
        if wait:  # BUG when 0: the group is never waited for
            ac.wait_all()


def test_cp_async_in_flight_at_exit_is_named():
    A = np.arange(64, dtype=np.float32)
    with pytest.raises(ac.sim.SimulatorError,
                       match=r"exited with a copy still in flight: cp_async issued at .* "
                             r"\(wait_group / wait_all in the issuing thread, or a wait on the barrier its "
                             r"cp_async_mbarrier_arrive arrives on is missing"):
        cp_async_no_wait[1, 64](A, np.zeros(64, np.float32), 0)
    cp_async_no_wait[1, 64](A, np.zeros(64, np.float32), 1)


# --- a compile-time constant is what Numba types as a literal ---------------------------

WORDS = 4  # a module constant: Numba freezes it as a literal


def _chunk_source(expr: str):
    """A cp_async kernel's Python function whose chunk_bytes is ``expr``
    (its source kept in linecache for the simulator's reading)."""
    import linecache

    src = (
        "def chunk_kernel(A, out):\n"
        "    sh = cuda.shared.array(64, np.float32, alignment=16)\n"
        "    t = cuda.threadIdx.x\n"
        "    lit = 4 * 4\n"
        "    prod = WORDS * 4\n"
        f"    ac.cp_async(sh[t * 4:t * 4 + 4], A[t * 4:t * 4 + 4], {expr})\n"
        "    ac.wait_all()\n"
        "    cuda.syncthreads()\n"
        "    out[t] = sh[t]\n")
    name = f"<chunk_kernel {expr}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    env = {"cuda": cuda, "np": np, "ac": ac, "WORDS": WORDS}
    exec(compile(src, name, "exec"), env)
    return env["chunk_kernel"]


RUNTIME = "cp_async: `chunk_bytes` must be a compile-time constant (int literal), got a run-time int64"


# verdicts of a GPU compile (compile_ptx, cc 9.0) of the same kernels: Numba folds no
# arithmetic (CPython folds `4 * 4` itself), and prunes the branch of a constant condition
# (tests/cpu/test_constant_agreement.py compiles them and checks these verdicts)
CONSTANT_CASES = [
    ("16", False), ("4 * 4", False), ("-(-16)", False), ("lit", False),
    ("WORDS * 4", True), ("prod", True), ("WORDS + WORDS + 8", True), ("(16 if WORDS else 8)", False),
]


@pytest.mark.parametrize("expr, refused", CONSTANT_CASES)
def test_constant_means_numba_literal(expr, refused, interleaving):
    k = cuda.jit(_chunk_source(expr))
    A = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    if refused:
        with pytest.raises(Exception, match=re.escape(RUNTIME)):
            k[1, 16](A, out)
    else:
        k[1, 16](A, out)
        np.testing.assert_array_equal(out[:16], A[:16])


OFFSET = (0, -8)  # a module constant tuple: Numba types its entries as literals


def _coords_source(expr: str):
    """A tensor-store kernel's Python function whose coords are ``expr``
    (its source kept in linecache for the simulator's reading)."""
    import linecache

    src = (
        "def coords_kernel(tmap, n):\n"
        "    tile = cuda.shared.array((8, 32), np.float32, alignment=128)\n"
        "    t = cuda.threadIdx.x\n"
        "    c = (0, -8)\n"
        "    for i in range(t, 8 * 32, 32):\n"
        "        tile[i // 32, i % 32] = i\n"
        "    ac.fence_proxy_async('shared::cta')\n"
        "    cuda.syncthreads()\n"
        "    if t == 0:\n"
        f"        ac.cp_async_bulk_tensor_store(tmap, {expr}, tile)\n"
        "        ac.bulk_commit_group()\n"
        "        ac.bulk_wait_group(0)\n")
    name = f"<coords_kernel {expr}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    env = {"cuda": cuda, "np": np, "ac": ac, "OFFSET": OFFSET}
    exec(compile(src, name, "exec"), env)
    return env["coords_kernel"]


NEGATIVE = ("cp_async_bulk_tensor_store: `coords`[1]=-8 is negative; tensor stores and reductions "
            "need coordinates >= 0")

# verdicts of a GPU compile (compile_ptx, sm_90a) of the same kernels: Numba types a
# tuple entry by entry, a constant entry as a literal (in `(n, -8)` too), a run-time
# entry (`n - 16`) as a run-time int64 (checked mode traps on it; the simulator raises
# the trap's words); tests/cpu/test_constant_agreement.py compiles them and checks these
COORDS_CASES = [
    ("(8, 32)", None), ("(n, 32)", None), ("(0, -8)", "compile"), ("(n, -8)", "compile"),
    ("c", "compile"), ("OFFSET", "compile"), ("(0, n - 16)", "run time"),
]


@pytest.mark.parametrize("expr, refused", COORDS_CASES)
def test_constant_tuple_entries_are_numba_literals(expr, refused, interleaving):
    k = cuda.jit(_coords_source(expr))
    a = cuda.to_device(np.full((16, 64), -1, np.float32))
    tmap = ac.TensorMap(a, (8, 32))
    if refused == "compile":  # the typing's error, before any thread runs
        with pytest.raises(Exception, match=re.escape(NEGATIVE)) as e:
            k[1, 32](tmap, 8)
        assert not isinstance(e.value, ac.sim.SimulatorError), e.value
    elif refused == "run time":
        with pytest.raises(ac.sim.SimulatorError, match=re.escape(NEGATIVE)):
            k[1, 32](tmap, 8)
    else:
        k[1, 32](tmap, 8)
        want = np.full((16, 64), -1, np.float32)
        want[8:16, 32:64] = np.arange(256, dtype=np.float32).reshape(8, 32)
        np.testing.assert_array_equal(a.copy_to_host(), want)


# --- chunk rules name what to change ----------------------------------------------------


@cuda.jit
def rows_into_tile(A, out, off):
    sh = cuda.shared.array((32, 4), np.float32, alignment=16)
    t = cuda.threadIdx.x
    if off == 0:
        ac.cp_async(sh[t, :], A[t, 0:2], 16)  # float64 rows of 16 bytes: 1 chunk each
    elif off == 1:
        ac.cp_async(sh[t, :], A[t, 0:4], 16)  # BUG: 32 bytes of float64 into 16 of float32
    else:
        ac.cp_async(sh[t, 1:3], A[t, 0:1], 8)  # BUG: dst starts 4 bytes into an 8-byte chunk
    ac.wait_all()
    cuda.syncthreads()
    out[t, 0] = sh[t, 0]


def test_chunk_counts_name_the_dtypes():
    A = np.arange(32 * 4, dtype=np.float64).reshape(32, 4)
    with pytest.raises(ac.sim.SimulatorError,
                       match=re.escape("cp_async: chunk counts differ: `dst` (float32) has 1 "
                                       "chunks per row, `src` (float64) has 2")):
        rows_into_tile[1, 32](A, np.zeros((32, 4), np.float32), 1)


def test_misaligned_chunk_hints_alignment():
    A = np.arange(32 * 4, dtype=np.float64).reshape(32, 4)
    with pytest.raises(ac.sim.SimulatorError,
                       match=r"cp_async: a chunk of `dst` is not 8-byte aligned \(base 0x[0-9a-f]+\); "
                             r"start views at a multiple of 8 bytes and align shared arrays with "
                             r"cuda\.shared\.array\(\.\.\., alignment=\.\.\.\)"):
        rows_into_tile[1, 32](A, np.zeros((32, 4), np.float32), 2)


@cuda.jit
def bf16_of_parameter(out, h):
    out[0] = ac.bf16_to_f32(h)


def test_runtime_parameter_is_typed_as_the_dispatcher_types_it(interleaving):
    # a kernel parameter is a run-time value of its argument's type: an int32
    # where the bits of a bf16 element (uint16) are needed is the GPU compile's error
    out = np.zeros(1, np.float32)
    with pytest.raises(Exception, match=re.escape(
            "bf16_to_f32: `h` must be a uint16 (the bits of a bf16 element)")) as e:
        bf16_of_parameter[1, 1](out, np.int32(0x3F80))
    assert not isinstance(e.value, ac.sim.SimulatorError), e.value
    bf16_of_parameter[1, 1](out, np.uint16(0x3FC0))
    assert out[0] == 1.5
