"""What each family keeps in the simulator's shared objects, and how the
shared layers tell families what happened.

:class:`Slots`: a thread, a block (CTA), a cluster run each hold one slot
per family, a class that the family's twin module declares and owns
(``th.slot(Groups)``: made on first use from the owner), so a new family
adds a file, not fields to the shared classes.

:class:`Events`: a lower layer announces an event (a barrier phase
completed, a thread or a block exited) and the families that care
subscribe; no lower module calls up into a family.  :data:`EVENTS` carries
the process-wide events (``"phase_complete"``, ``"block_exit"``,
``"shared_write"``, ``"slot_release"``...); a
cluster run carries its own (``"thread_exit"``, ``"block_exit"`` of one
of its CTAs).

Example::

    class Groups:                       # cp.async's slice of a thread's state
        def __init__(self, th):
            self.uncommitted, self.committed = [], []

    groups = th.slot(Groups).committed
    EVENTS.on("phase_complete", lambda barrier: ...)
"""

from __future__ import annotations

from typing import Any, Callable


class Slots:
    """One slot of family state per class, made on first use."""

    _slots: dict

    def slot(self, kind: type) -> Any:
        """This object's instance of ``kind`` (``kind(self)`` the first time)."""
        slots = self.__dict__.setdefault("_slots", {})
        s = slots.get(kind)
        if s is None:
            s = slots[kind] = kind(self)
        return s

    def slot_if_any(self, kind: type) -> Any:
        """This object's ``kind`` slot, or None when nothing made it."""
        return self.__dict__.get("_slots", {}).get(kind)


class Events:
    """Named events and their subscribers, called in subscription order."""

    def __init__(self) -> None:
        self._subs: dict[str, list[Callable[..., None]]] = {}

    def on(self, event: str, fn: Callable[..., None] | None = None) -> Any:
        """Call ``fn(*args)`` at every ``emit(event, *args)``; returns ``fn``.
        Without ``fn``, a decorator (``@EVENTS.on("phase_complete")``)."""
        if fn is None:
            return lambda f: self.on(event, f)
        subs = self._subs.setdefault(event, [])
        if fn not in subs:
            subs.append(fn)
        return fn

    def emit(self, event: str, *args: Any) -> None:
        for fn in tuple(self._subs.get(event, ())):
            fn(*args)

    def __contains__(self, event: str) -> bool:
        return bool(self._subs.get(event))


#: process-wide events: ``"phase_complete"`` (a Barrier), ``"block_exit"``
#: (a BlockState, before its barriers' transaction bytes are checked),
#: ``"async_write"`` (a block and an async-proxy copy that completed),
#: ``"shared_write"`` (api, argument name, block, shared tile, its mbarrier's
#: address or None, the swizzle, how: a copy into a shared tile issued),
#: ``"slot_release"`` (api, block, the slot's full-barrier address, where: a
#: pipeline slot released), ``"arrive"`` (a Barrier the calling thread arrives on, the api), ``"copy_tracked"``
#: (an AsyncOp in flight and the Barrier it completes on), ``"block_barrier"``
#: (the grid point of a block whose ``cuda.syncthreads()`` completed),
#: ``"blocks_freed"`` (the grid points of a cluster's blocks, their shared
#: memory gone); a subscriber may refuse the event with a violation, raised
#: where it was emitted
EVENTS = Events()
