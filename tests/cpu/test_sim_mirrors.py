"""Every simulator twin is declared with @mirrors and matches its intrinsic.

The sim modules import without the simulator enabled (they only bind the
device modules), so this runs in the CPU suite."""

from __future__ import annotations

import inspect

import pytest

import numba_asynccopy as ac
from numba_asynccopy import _forms, sim
from numba_asynccopy.sim._mirror import MirrorError, mirrors, user_signature

TWINS = [(m, name) for m in sim.twin_modules() for name in sorted(vars(m))
         if name in sim.supported()]


def _device_intrinsics() -> list[str]:
    """The public device intrinsics, read from the package's ``__all__``
    (Numba intrinsics carry ``_defn``), not from the simulator modules."""
    return sorted(n for n in ac.__all__ if hasattr(getattr(ac, n), "_defn"))


def test_every_device_intrinsic_has_a_twin():
    device = _device_intrinsics()
    # every function the registry of PTX forms names is a public intrinsic
    # (the others, vector accesses and the loop pragma, emit no form of their own)
    assert set(_forms.public_apis()) <= set(device)
    assert {"load4", "store4", "view4", "pragma_nounroll"} <= set(device) - set(_forms.public_apis())
    unsupported = {n for n in device
                   if n in sim._UNSUPPORTED_NAMES
                   or sim._family(n, getattr(ac, n)) in sim.UNSUPPORTED_FAMILIES}
    assert sim.supported() == sorted(set(device) - unsupported)
    found = sim.twins()
    for name in device:
        if name in unsupported:
            continue
        # the twin sits in the simulator module of the intrinsic's family
        twin = found.get(id(getattr(ac, name)))
        assert twin is not None, name
        family = sim._family(name, getattr(ac, name))
        assert twin.__module__ == f"numba_asynccopy.sim.{family}", (name, twin.__module__)
        assert twin.__mirrors__ is getattr(ac, name), name


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
