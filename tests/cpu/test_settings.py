"""The environment settings share one parser (numba_asynccopy/_settings.py):
each bad value's whole message, pinned as each setting wrote it before, and
what blank and unset mean."""

from __future__ import annotations

import importlib

import pytest

from numba_asynccopy import _settings

# the modules (ac.checked_mode, ac.sim.schedule are functions of those names)
C = importlib.import_module("numba_asynccopy.checked")
P = importlib.import_module("numba_asynccopy.sim.progress")
S = importlib.import_module("numba_asynccopy.sim.schedule")

TIMEOUT_RULE = "is not a positive integer number of nanoseconds (e.g. 2000000000 for 2 s)"
BAD = [
    (C._env_checked, "NUMBA_ASYNCCOPY_CHECKED", " yes",
     "environment variable NUMBA_ASYNCCOPY_CHECKED=' yes' is not a switch: "
     "use 1 (checked mode on) or 0 (off)"),
    (C._env_timeout, "NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS", "+5",
     f"environment variable NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS='+5' {TIMEOUT_RULE}"),
    (C._env_timeout, "NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS", "0",
     f"environment variable NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS='0' {TIMEOUT_RULE}"),
    (C._env_timeout, "NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS", "1_000",
     f"environment variable NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS='1_000' {TIMEOUT_RULE}"),
    (C._env_timeout, "NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS", "\u0663",  # a digit, not ASCII
     f"environment variable NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS='\u0663' {TIMEOUT_RULE}"),
    (P.enabled, "NUMBA_ASYNCCOPY_SIM_PROGRESS", "off",
     "environment variable NUMBA_ASYNCCOPY_SIM_PROGRESS='off' is not a switch: "
     "use 1 (progress line on) or 0 (off)"),
    (S._env_schedule, "NUMBA_ASYNCCOPY_SIM_SCHEDULE", "Worst",
     "environment variable NUMBA_ASYNCCOPY_SIM_SCHEDULE='Worst' is not a schedule: "
     "use worst or eager"),
    (S._env_seed, "NUMBA_ASYNCCOPY_SIM_SEED", "1.5",
     "environment variable NUMBA_ASYNCCOPY_SIM_SEED='1.5' is not an integer seed"),
]


@pytest.mark.parametrize("read,var,raw,message", BAD, ids=lambda v: v if isinstance(v, str) else None)
def test_a_bad_value_names_the_variable_and_what_it_takes(monkeypatch, read, var, raw, message):
    monkeypatch.setenv(var, raw)
    with pytest.raises(ValueError) as e:
        read()
    assert str(e.value) == message


GOOD = [
    (C._env_checked, "NUMBA_ASYNCCOPY_CHECKED", [(None, False), ("", False), (" ", False),
                                                 ("0", False), ("1", True), (" 1\n", True)]),
    (C._env_timeout, "NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS", [(None, C.DEFAULT_TIMEOUT_NS),
                                                         ("  ", C.DEFAULT_TIMEOUT_NS),
                                                         (" 7 ", 7), ("0012", 12)]),
    (P.enabled, "NUMBA_ASYNCCOPY_SIM_PROGRESS", [(None, True), ("", True), ("1", True),
                                                 ("0", False), (" 0 ", False)]),
    (S._env_schedule, "NUMBA_ASYNCCOPY_SIM_SCHEDULE", [(None, "worst"), ("", "worst"),
                                                       (" eager ", "eager"), ("worst", "worst")]),
    (S._env_seed, "NUMBA_ASYNCCOPY_SIM_SEED", [(None, None), (" ", None), ("7", 7), ("-3", -3),
                                               ("+4", 4)]),
]


@pytest.mark.parametrize("read,var,cases", GOOD, ids=lambda v: v if isinstance(v, str) else None)
def test_unset_blank_and_good_values(monkeypatch, read, var, cases):
    for raw, want in cases:
        if raw is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, raw)
        got = read()
        assert got == want and type(got) is type(want), (raw, got, want)


def test_the_settings_module_reads_when_called_not_at_import(monkeypatch):
    monkeypatch.setenv("NUMBA_ASYNCCOPY_TEST_SWITCH", "maybe")
    with pytest.raises(ValueError, match=r"^environment variable NUMBA_ASYNCCOPY_TEST_SWITCH='maybe' "
                                         r"is not a switch: use 1 \(thing on\) or 0 \(off\)$"):
        _settings.env_switch("NUMBA_ASYNCCOPY_TEST_SWITCH", False, "thing")
    monkeypatch.setenv("NUMBA_ASYNCCOPY_TEST_SWITCH", "1")
    assert _settings.env_switch("NUMBA_ASYNCCOPY_TEST_SWITCH", False, "thing") is True
