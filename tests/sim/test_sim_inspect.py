"""ac.inspect under the simulator compiles in a fresh interpreter: kernels
whose globals hold package names bound to simulator twins (``from
numba_asynccopy import view4``) get the device intrinsics there."""

from __future__ import annotations


def test_inspect_of_an_example_that_imports_package_names():
    import numba_asynccopy as ac
    from numba_asynccopy.examples import stencil
    from numba_asynccopy.examples.staged_copy import SIGNATURE, make_staged_copy

    assert getattr(stencil.view4, "__mirrors__", None) is not None  # the simulator's twin here
    r = ac.inspect(make_staged_copy(2, 16, 256), *SIGNATURE, cc=(9, 0))
    assert {pl.text for pl in r.lines if pl.opcode == "cp.async.wait_group"} == {"cp.async.wait_group 1"}
    assert r.count("cp.async.cg.shared.global") >= 1
