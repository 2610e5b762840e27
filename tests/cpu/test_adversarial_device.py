"""Adversarial device suite: for every public device function, invalid calls
generated from its contract (``adversarial_contracts.py``) are compiled for
sm_90; each must be refused at compile time with a user-facing
``TypingError`` (the package's ``ContractError`` or numba's own) whose
message names the function and the argument.

Hypothesis draws the cases (derandomized, so a run is reproducible); the
full enumeration, every case of every contract, is
``test_every_case_of_every_contract`` (about 1250 compiles, a few minutes;
marked ``slow``: ``-m 'not slow'`` leaves it out of a quick run).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import types

import numba_asynccopy as ac
from numba_asynccopy._compat import core_errors
from numba_asynccopy._forms import public_apis

from .adversarial_contracts import CONTRACTS, invalid_cases, valid_call

SIG = (types.uint32[::1], types.int32, types.float32, types.float32[:, ::1], types.uint64[::1],
       types.int64)
FEW = settings(max_examples=4, deadline=None, derandomize=True,
               suppress_health_check=[HealthCheck.too_slow])


def compile_call(stmt: str) -> str:
    """The PTX of the contracts' kernel around ``stmt`` (sm_90a), or the
    exception that refused it, raised; each program compiles once per
    process (the differential check, tests/cpu/test_differential.py,
    compares the same compiles with the simulator)."""
    from tests.differential import compile_outcome

    out = compile_outcome(stmt)
    if isinstance(out, Exception):
        raise out.with_traceback(None)
    return out


def assert_refused(api: str, words: str, stmt: str) -> None:
    with pytest.raises(Exception) as info:
        compile_call(stmt)
    err = info.value
    text = str(err)
    assert isinstance(err, core_errors.TypingError), (stmt, type(err).__name__, text[:300])
    assert api in text, (stmt, text[:300])
    named = re.search(rf"\b{re.escape(words)}\b", text) if words.isidentifier() else words in text
    assert named, (stmt, words, text[:400])


def test_every_public_device_function_has_a_contract():
    from numba.cuda.extending import _Intrinsic

    device = {n for n in ac.__all__ if isinstance(getattr(ac, n), _Intrinsic)}
    assert device == set(CONTRACTS)
    assert set(public_apis()) <= device


def test_the_contracts_check_each_argument_of_the_signature():
    from numba_asynccopy.sim._mirror import user_signature

    for api, (args, kwargs, kinds) in CONTRACTS.items():
        params = set(user_signature(getattr(ac, api)).parameters)
        assert set(kinds) == params, api  # every argument gets invalid values
        assert {a for a, _ in args} | set(kwargs) <= params, api


@pytest.mark.parametrize("api", sorted(CONTRACTS))
def test_the_valid_call_compiles(api):
    compile_call(valid_call(api))


@pytest.mark.parametrize("api", sorted(CONTRACTS))
@FEW
@given(data=st.data())
def test_invalid_calls_are_refused_naming_the_argument(api, data):
    words, stmt, _ = data.draw(st.sampled_from(invalid_cases(api)), label="case")
    assert_refused(api, words, stmt)


@pytest.mark.slow
@pytest.mark.parametrize("api", sorted(CONTRACTS))
def test_every_case_of_every_contract(api):
    for words, stmt, _ in invalid_cases(api):
        assert_refused(api, words, stmt)


def test_the_case_count():
    # the enumeration the slow test walks, per layer in the closing note
    assert sum(len(invalid_cases(api)) for api in CONTRACTS) >= 1200
