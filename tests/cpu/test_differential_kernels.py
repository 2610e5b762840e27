"""The differential census of real programs (``tests/differential_kernels.py``):
the kernels that the README's programs and a few GPU functional tests
(``differential_kernels.QUICK``) launch, run in the simulator (every launch recorded: the kernel, its
argument types, the simulator's verdict) and compiled for the GPU (compile
only, sm_90a) for the same argument types; the two must agree on
acceptance, with the same words.  The closing line gives the counts.

The whole census (every GPU functional test, every docs page, every
notebook: tens of minutes) is its own command:
``python -m tests.differential_kernels census`` (``make differential-census``)."""

from __future__ import annotations

import json

import numpy as np

from tests import differential_kernels as dk


WIDTH = 3  # a module constant a function reads


def test_freeze_and_thaw_keep_what_a_function_reads():
    scale = np.float32(2.5)

    def f(a):
        return np.sum(a[:WIDTH]) * scale

    frozen = json.loads(json.dumps(dk.freeze(f)))  # what a record holds
    g = dk.thaw(frozen)
    a = np.arange(5, dtype=np.float32)
    assert g(a) == f(a) == np.float32(7.5)
    assert g.__globals__["np"] is np and g.__globals__["WIDTH"] == 3
    assert frozen["globals"]["np"] == ["module", "numpy"]
    assert frozen["cells"][0][0] == "data"  # the closure's scale, by value


def test_real_programs_agree(capsys):
    r = dk.census(quick=True)
    line = (f"differential census (quick): {r['launches']} launches, {r['compared']} programs "
            f"compared, {r['agree']} agree, {len(r['disagree'])} disagree, "
            f"{r['inconclusive']} inconclusive")
    with capsys.disabled():
        print("\n" + line)
    assert not r["disagree"], json.dumps(r["disagree"], indent=1)
    assert r["inconclusive"] == 0, r
    assert r["compared"] >= 8, line
    # one of them refused by both, in the same words
    assert r["refused"] >= 1, line
