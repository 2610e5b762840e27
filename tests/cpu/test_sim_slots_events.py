"""The simulator's mechanism for family state and cross-family hooks: a
slot per family class on a shared object (made once, from its owner), and
events that a lower layer emits and families subscribe to.  Runs without
the simulator enabled (no kernel is launched)."""

from __future__ import annotations

from numba_asynccopy.sim import events, state
from numba_asynccopy.sim.cp_async import Groups


class _Holder(events.Slots):
    pass


class _Counter:
    def __init__(self, owner):
        self.owner, self.n = owner, 0


def test_a_slot_is_made_once_per_owner_from_the_owner():
    a, b = _Holder(), _Holder()
    assert a.slot_if_any(_Counter) is None
    s = a.slot(_Counter)
    assert s.owner is a and a.slot(_Counter) is s and a.slot_if_any(_Counter) is s
    assert b.slot(_Counter) is not s


def test_the_shared_thread_state_has_no_family_fields():
    th = state.ThreadState(thread=None)
    assert set(vars(th)) == {"thread"}
    g = th.slot(Groups)  # cp.async's slice lives in its own module
    g.uncommitted.append("op")
    g.commit()
    assert g.committed == [["op"]] and g.uncommitted == []


def test_events_call_their_subscribers_in_order_once_each():
    ev = events.Events()
    seen = []

    def first(x):
        seen.append(("first", x))

    @ev.on("done")
    def second(x):
        seen.append(("second", x))

    ev.on("done", first)
    ev.on("done", first)  # subscribing twice calls once
    assert "done" in ev and "other" not in ev
    ev.emit("done", 7)
    ev.emit("other", 8)
    assert seen == [("second", 7), ("first", 7)]


def test_the_cluster_and_bulk_twins_subscribe_to_the_process_events():
    from numba_asynccopy.sim import bulk, cluster

    assert cluster._on_phase_complete in events.EVENTS._subs["phase_complete"]
    assert bulk._complete_at_exit in events.EVENTS._subs["block_exit"]
