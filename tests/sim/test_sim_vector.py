"""Vector loads/stores and chunk views in the simulator: the GPU layer's
functional tests run unchanged, each checked-mode rule raises the trap's
words, and the typing errors are the device's."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda
from numba.cuda.core.errors import TypingError

import numba_asynccopy as ac
from numba_asynccopy._lowering import TRAP_PREFIX

from ..gpu import test_vector_gpu as _g

# the GPU layer's functional tests (same kernels, fresh random data, poisoned outputs)
test_round_trip_global_and_shared_2d = _g.test_round_trip_global_and_shared_2d
test_1d_and_3d_indexing = _g.test_1d_and_3d_indexing
test_checked_mode_round_trip = _g.test_checked_mode_round_trip
test_store_casts_values_to_the_dtype = _g.test_store_casts_values_to_the_dtype
test_chunk_view_feeds_cp_async = _g.test_chunk_view_feeds_cp_async
test_view4_feeds_cp_async = _g.test_view4_feeds_cp_async


def test_the_package_names_are_the_simulator_versions():
    for name in ("load_vec", "store_vec", "load4", "store4", "load2", "store2", "chunk_view",
                 "view4"):
        assert getattr(ac, name).__module__ == "numba_asynccopy.sim.vector", name
        assert name in ac.sim.supported()
    from numba_asynccopy.examples import stencil

    assert stencil.load4 is ac.load4


def _kernel(stmt: str):
    ns = {"np": np, "cuda": cuda, "ac": ac}
    exec(f"""
def k(A, G):
    t = cuda.threadIdx.x
    sh = cuda.shared.array((64, 4), np.float32, alignment=16)
    {stmt}
    ac.wait_all()
""", ns)
    return cuda.jit(ns["k"])


def _arrays():
    A = cuda.to_device(np.arange(64 * 8, dtype=np.float32).reshape(64, 8))
    G = cuda.to_device(np.zeros((64, 4), np.float32))
    return A, G


@pytest.mark.parametrize("checked", [False, True])
@pytest.mark.parametrize("case", list(_g.VIOLATIONS))
def test_checked_mode_rules_raise_the_trap_message(case, checked):
    stmt, message = _g.VIOLATIONS[case]
    k = _kernel(stmt)
    with ac.checked_mode(checked), pytest.raises(ac.sim.SimulatorError) as e:
        k[1, 4](*_arrays())
    text = str(e.value)
    prefix = TRAP_PREFIX if checked else "numba_asynccopy simulator: "
    assert prefix + message in text, text
    assert "[block (0,0,0) thread (" in text


def test_misaligned_address_is_printed_in_hex():
    k = _kernel("ac.store4(A, (t, 1), (1.0, 2.0, 3.0, 4.0))")
    with pytest.raises(ac.sim.SimulatorError,
                       match=r"store4: the 16 bytes at `arr\[idx\]` \(0x[0-9a-f]+\) are not "
                             r"16-byte aligned \[block"):
        k[1, 1](*_arrays())


def test_negative_index_does_not_wrap_around():
    # numpy would read the last row; the GPU has no wraparound
    k = _kernel("v = ac.load_vec(A, (t, -4), 4)")
    with pytest.raises(ac.sim.SimulatorError,
                       match=r"load_vec: `idx`\[1\]=-4: the 4 elements from there are not all "
                             r"inside the last axis of `arr` \(length 8\)"):
        k[1, 1](*_arrays())
    k = _kernel("v = ac.chunk_view(G, -1, 4)")
    with pytest.raises(ac.sim.SimulatorError,
                       match=r"chunk_view: `idx`=-1: the 4 elements from there"):
        k[1, 1](cuda.to_device(np.zeros(64, np.float32)), cuda.to_device(np.zeros(64, np.float32)))


def test_chunk_view_is_a_view():
    k = _kernel("ac.chunk_view(G, (t, 0), 4)[2] = 7.0\n    ac.chunk_view(G, (t, 0), 2)[0] = t")
    A, G = _arrays()
    k[1, 64](A, G)
    g = G.copy_to_host()
    assert (g[:, 2] == 7).all() and (g[:, 0] == np.arange(64)).all() and (g[:, [1, 3]] == 0).all()


TYPING = {
    "ac.load_vec(A, (t, 0), 3)":
        "load_vec: `n`=3 elements of `arr` (float32, 4 bytes each) make 12 bytes",
    "ac.load4(A, t)": "load4: `idx` must be 2 integer index(es) of `arr`",
    "ac.store4(A, (t, 0), (1.0, 2.0))": "store4: `values` must be a tuple of 4 numbers",
    "ac.store_vec(A, (t, 0), (1.0, 2.0, 3.0))":
        "store_vec: `values` holds 3 elements of `arr` (float32, 4 bytes each): 12 bytes",
    "ac.chunk_view(A, (t, 0), 3)": "chunk_view: `n`=3 elements of `arr` (float32) make 12 bytes",
    "ac.view4(A, (0.5, 0))": "view4: `idx` must be 2 integer index(es) of `arr`",
}


@pytest.mark.parametrize("stmt", list(TYPING))
def test_typing_errors_are_the_device_ones(stmt):
    k = _kernel(stmt)
    with pytest.raises(TypingError) as e:
        k[1, 1](*_arrays())
    assert TYPING[stmt] in str(e.value)
