"""The progress line of long simulated launches, and its setting."""

from __future__ import annotations

import io

import numpy as np
import pytest
from numba import cuda

from numba_asynccopy.sim import progress


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_progress_line_after_the_delay(monkeypatch):
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    clock, out = Clock(), io.StringIO()
    p = progress.Progress("gemm", 4, clock=clock, stream=out)
    clock.t = 1.0
    p.blocks_done(1)
    assert out.getvalue() == ""  # quiet for the first seconds
    clock.t = progress.DELAY_S + 0.5
    p.blocks_done(1)
    clock.t += 0.1
    p.blocks_done(1)  # throttled: at most one line a second
    clock.t += 0.1
    p.blocks_done(1)  # the last block: always shown, and the line ends
    assert out.getvalue() == (
        "\rnumba_asynccopy simulator: kernel gemm: 2 of 4 blocks done (3.5 s)"
        "\rnumba_asynccopy simulator: kernel gemm: 4 of 4 blocks done (3.7 s)\n")


def test_progress_off(monkeypatch):
    monkeypatch.setenv(progress.PROGRESS_ENV, "0")
    clock, out = Clock(), io.StringIO()
    p = progress.Progress("k", 2, clock=clock, stream=out)
    clock.t = 100.0
    p.blocks_done(2)
    assert out.getvalue() == ""


@cuda.jit
def tiny(out):
    out[cuda.blockIdx.x] = cuda.blockIdx.x


def test_progress_setting_validated(monkeypatch):
    monkeypatch.setenv(progress.PROGRESS_ENV, "off")
    with pytest.raises(ValueError, match=r"NUMBA_ASYNCCOPY_SIM_PROGRESS='off' is not a switch: "
                                         r"use 1 \(progress line on\) or 0 \(off\)"):
        tiny[2, 1](np.zeros(2, np.int64))


def test_long_launch_prints_progress(monkeypatch, capfd):
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    monkeypatch.setattr(progress, "EVERY_S", 0.0)
    out = np.zeros(3, np.int64)
    tiny[3, 1](out)
    np.testing.assert_array_equal(out, [0, 1, 2])
    err = capfd.readouterr().err
    assert "\rnumba_asynccopy simulator: kernel tiny: 1 of 3 blocks done (" in err, err
    assert "kernel tiny: 3 of 3 blocks done (" in err and err.endswith(" s)\n"), err
