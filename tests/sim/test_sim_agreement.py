"""The simulator refuses what a GPU compile refuses, in the same words, and
reports the root cause of a failure first."""

from __future__ import annotations

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
