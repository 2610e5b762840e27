"""Every simulator twin is declared with @mirrors and matches its intrinsic.

The sim modules import without the simulator enabled (they only bind the
device modules), so this runs in the CPU suite."""

from __future__ import annotations

import inspect

import pytest

import numba_asynccopy as ac
from numba_asynccopy import sim
from numba_asynccopy.sim._mirror import MirrorError, mirrors, user_signature

TWINS = [(m, name) for m in sim.twin_modules() for name in sorted(vars(m))
         if name in sim.supported()]


def test_every_supported_name_has_a_twin():
    assert sorted(name for _, name in TWINS) == sim.supported()


@pytest.mark.parametrize("module,name", TWINS, ids=lambda x: x if isinstance(x, str) else "")
def test_twin_is_declared_and_matches(module, name):
    twin = getattr(module, name)
    device = getattr(ac, name)
    assert twin.__mirrors__ is device
    assert inspect.signature(twin) == user_signature(device)
    assert twin.__doc__.startswith(inspect.cleandoc(device._defn.__wrapped__.__doc__))
    assert "In the CUDA simulator" in twin.__doc__
    assert twin.__module__ == module.__name__  # sim.supported() relies on it


def test_a_signature_mismatch_fails_at_declaration():
    with pytest.raises(MirrorError, match=r"does not match the device intrinsic .*wait_group"):
        @mirrors(ac.wait_group)
        def wait_group(n=0):
            pass

    # keyword-only-ness counts: the message shows both signatures
    with pytest.raises(MirrorError, match=r"elect_sync\(\*, mask=4294967295\)"):
        @mirrors(ac.elect_sync)
        def elect_sync(*, mask=0xFFFFFFFF):
            pass


def test_a_name_mismatch_fails_at_declaration():
    with pytest.raises(MirrorError, match="the names differ"):
        @mirrors(ac.commit_group)
        def wait_all():
            pass
