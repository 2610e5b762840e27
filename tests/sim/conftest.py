"""Simulator tests: they need ``NUMBA_ENABLE_CUDASIM=1`` set before numba.cuda
is imported, so they run in their own pytest process:

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/sim

(``make test`` runs that after the main suite).  In a process without the
simulator they are skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    if SIM:
        return
    skip = pytest.mark.skip(
        reason="simulator test: run `NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/sim` "
        "(make test does)")
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)


# the worst-case schedule for every test: tests/conftest.py (_worst_schedule)


def interleaving_seeds() -> list[int]:
    """The interleaving seeds a seeded simulator test runs under:
    ``NUMBA_ASYNCCOPY_SIM_SEEDS`` (comma-separated), default 1,2,3.  (A
    whole run under one seed: ``NUMBA_ASYNCCOPY_SIM_SEED=N``.)"""
    raw = os.environ.get("NUMBA_ASYNCCOPY_SIM_SEEDS", "1,2,3")
    return [int(s) for s in raw.split(",") if s.strip()]


@pytest.fixture(params=interleaving_seeds(), ids=lambda s: f"seed{s}")
def interleaving(request):
    """Run the test under each interleaving seed (``ac.sim.seed``): a test
    taking this fixture must give the same result under every one."""
    import numba_asynccopy as ac

    with ac.sim.seed(request.param):
        yield request.param


@pytest.fixture
def sim_waits(monkeypatch):
    """Counts, for the launches of a test, the simulator's blocking waits
    (``waits``) and how often their predicates were evaluated
    (``evaluations``): the work of the launch loop, the same on every
    machine (a wall-clock bound is not).  A loop that polled, or woke every
    waiter at every arrival, would evaluate about threads x arrivals times."""
    from numba_asynccopy.sim import engine

    counts = {"waits": 0, "evaluations": 0}
    real = engine.ClusterRun.wait_until

    def wait_until(self, pred, on_deadlock):
        def counted():
            counts["evaluations"] += 1  # under the cluster's lock, as every wait
            return pred()

        if hasattr(pred, "key"):  # the barrier the predicate reads (targeted wake-ups)
            counted.key = pred.key
        counts["waits"] += 1
        return real(self, counted, on_deadlock)

    monkeypatch.setattr(engine.ClusterRun, "wait_until", wait_until)
    return counts
