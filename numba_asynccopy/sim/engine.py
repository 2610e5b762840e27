"""The simulator's launch loop: an event-driven replacement of numba-cuda's
``BlockManager.run``, which runs the blocks of one thread-block cluster
together.

numba-cuda's simulator runs the blocks of a grid one after another, and its
manager polls every thread's ``is_alive()`` without sleeping, while a thread
blocked on an mbarrier used to poll every 2 ms and scan every thread's
state.  Here every simulated CUDA thread that cannot go on (``syncthreads``,
a barrier wait, ``cluster_wait``) registers a predicate and sleeps on its
own condition variable; whoever changes state re-evaluates the predicates
of the sleeping threads (cheap, under one lock) and wakes only those whose
predicate became true.  A deadlock is every live thread of the cluster
asleep with no predicate true: found at once, without timeouts, and
reported as one :class:`~numba_asynccopy.sim.DeadlockError` naming every
blocked wait (barrier, owning CTA, phase, counts, transaction bytes).

A launch runs its clusters one after another (an unclustered launch: every
block is its own cluster of one); the threads of all CTAs of one cluster
run together, so a CTA can wait on another CTA's barrier.

Two things keep the hand-offs cheap.  The OS threads are reused: a
carrier (``_numba_sim_internals``) runs one simulated thread after
another, so a launch neither creates nor joins threads once the pool is
warm.  And threads that may go on are woken one at a time: a thread that
blocks or exits wakes the next ready one (or starts the next thread not
yet started), so at a barrier's release its threads do not all fight for
the GIL and the lock at once, which made each hand-off about five times
dearer.  A kernel that spins without calling the simulator never hands
off: the launching thread's watchdog then wakes every ready thread at once
(:data:`WATCHDOG_S`).  An interleaving seed's scheduling points
(``schedule.jitter``) are turns given up (:meth:`ClusterRun.yield_turn`):
which thread runs next is then the seed's doing, not the OS's.
"""

from __future__ import annotations

import ast
import collections
import inspect
import os
import sys
import textwrap
import threading
from typing import Any, Callable

import numpy as np

from ..host.launch import _WHAT, ClusterLaunchError, check_cluster_shape, check_grid
from . import _numba_sim_internals as _nbsim
from .errors import SIM_PREFIX, DeadlockError, SimulatorError, acting_as, acting_thread, where
from .events import EVENTS, Events, Slots
from .progress import Progress


class _Waiter:
    __slots__ = ("thread", "pred", "on_deadlock", "cond", "ready", "woken", "deadlocked", "last")

    def __init__(self, thread, pred, on_deadlock, cond):
        self.thread, self.pred, self.on_deadlock = thread, pred, on_deadlock
        self.cond = cond
        self.ready = False  # its predicate became true
        self.woken = False  # ... and it was told (or it is running anyway)
        self.deadlocked = False
        self.last = None  # the barrier phase at which the predicate was last false


#: seconds without a hand-off after which the launching thread wakes every
#: thread that is ready or not yet started (a kernel that spins without
#: calling the simulator never hands off)
WATCHDOG_S = 0.05


class LaunchInfo:
    """Per launch: the grid, the cluster shape and which clusters ran."""

    def __init__(self, grid: tuple, block: tuple, cluster: tuple | None, explicit: bool,
                 kernel_fn: Any):
        self.grid = tuple(grid)
        self.block = tuple(block)
        self.cluster = tuple(cluster) if cluster is not None else (1, 1, 1)
        self.explicit = explicit
        self.kernel_fn = kernel_fn
        self.done: set = set()
        self.progress = Progress(getattr(kernel_fn, "__name__", "kernel"),
                                 int(np.prod(self.grid)))

    def cluster_of(self, point: tuple) -> tuple:
        return tuple(p // c for p, c in zip(point, self.cluster))

    def rank_of(self, point: tuple) -> int:
        x, y, z = (p % c for p, c in zip(point, self.cluster))
        X, Y, _ = self.cluster
        return x + X * (y + Y * z)

    def points_of(self, cid: tuple) -> list:
        X, Y, Z = self.cluster
        pts = []
        for z in range(Z):
            for y in range(Y):
                for x in range(X):
                    pts.append((cid[0] * X + x, cid[1] * Y + y, cid[2] * Z + z))
        return pts


class ClusterRun(Slots):
    """The CTAs of one cluster running together, and the engine they share.

    ``lock`` guards every piece of simulator state of the cluster (barrier
    counts, copies in flight, the cluster barrier); :meth:`wait_until` is
    the only way a simulated thread blocks.
    """

    def __init__(self, launch: LaunchInfo, points: list, managers: list):
        self.launch = launch
        self.points = points
        self.managers = managers
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)  # what BlockState.cond is
        self.main = threading.Condition(self.lock)  # the launching thread waits here
        self.waiters: dict = {}
        # Ready waiters and threads not yet started, woken one at a time: a
        # thread that blocks or exits wakes the next.  Woken together, a
        # barrier's threads would fight for the GIL and the lock, and each
        # hand-off then costs about five times as much.
        self._runq: collections.deque = collections.deque()
        self._unstarted: collections.deque = collections.deque()
        self.handoffs = 0
        self.threads: list = []
        self.live = 0
        self.started = False
        self.failed: tuple | None = None  # (exception, traceback)
        self.abort = False
        self.progress = 0
        self._notifying = False
        self._again_keys: set = set()
        self._keyed: dict = {}  # id(key) -> {thread: waiter}
        self._unkeyed: dict = {}
        # per block: live threads, syncthreads arrivals and generation
        self.block_live: dict = {}
        self.sync_count: dict = {}
        self.sync_gen: dict = {}
        self._sync_keys: dict = {}
        self.cbar_key = object()  # what cluster-barrier waiters wait on
        self.exited: set = set()  # grid points of blocks whose threads all finished
        self.exited_threads: set = set()
        # the cluster barrier (barrier.cluster)
        self.cbar_gen = 0
        self.cbar_count = 0
        self.cbar_release = {p: True for p in points}  # every arrive of a CTA this gen was .release
        self.cbar_cta_count = {p: 0 for p in points}
        # this run's events: "thread_exit" (a thread), "block_exit" (a CTA's point);
        # a family keeps its per-cluster state in a slot (sim/cluster.py)
        self.events = Events()

    # --- identity --------------------------------------------------------------------

    @property
    def size(self) -> int:
        return len(self.points)

    @property
    def clustered(self) -> bool:
        return self.launch.explicit

    def rank_of(self, point: tuple) -> int:
        return self.launch.rank_of(point)

    def nthreads(self) -> int:
        return len(self.threads)

    # --- waking ----------------------------------------------------------------------

    def changed(self, key=None) -> None:
        """Something a sleeping thread may wait for changed (caller holds the
        lock): wake every waiter whose predicate is now true.  ``key`` (a
        barrier, or the engine's own keys): only the waiters on it and those
        without a key are evaluated; None: every waiter."""
        self.progress += 1
        if self._notifying:
            self._again_keys.add(key)  # a predicate changed state while being evaluated
            return
        self._notifying = True
        try:
            keys = {key}
            while keys:
                self._again_keys = set()
                if None in keys:
                    self._wake(list(self.waiters.values()))
                else:
                    self._wake(list(self._unkeyed.values()))
                    for k in keys:
                        self._wake(list(self._keyed.get(id(k), {}).values()), k)
                keys = self._again_keys
        finally:
            self._notifying = False

    def _wake(self, ws: list, key=None) -> None:
        """Notify the waiters of ``ws`` whose predicate is true.  Waiters on
        a barrier (``key.phase``) that were false at this phase stay false
        once one of them has observed the barrier: each arrival of a
        128-thread phase then costs one evaluation, not 128."""
        phased = key is not None and hasattr(key, "phase")
        observed = False
        for w in ws:
            if w.ready or w.deadlocked:
                continue
            if phased and observed and w.last == key.phase:
                continue
            observed = True
            if w.pred():
                w.ready = True
                self._runq.append(w)  # woken in turn (_hand_off)
            elif phased:
                w.last = key.phase

    def _hand_off(self) -> bool:
        """The calling thread is about to block or exit (caller holds the
        lock): wake the next ready waiter, else start the next thread.
        False: there was none."""
        q = self._runq
        while q:
            w = q.popleft()
            if w.ready and not w.woken and self.waiters.get(w.thread) is w:
                w.woken = True
                self.handoffs += 1
                w.cond.notify()
                return True
        if self._unstarted:
            self.handoffs += 1
            _nbsim.start_thread(self._unstarted.popleft())
            return True
        return False

    def _cond_of(self, me) -> threading.Condition:
        """The calling thread's condition variable on this run's lock."""
        d = me.__dict__
        cond = d.get("_ac_cond")
        if cond is None or d.get("_ac_cond_of") is not self:
            cond = d["_ac_cond"] = threading.Condition(self.lock)
            d["_ac_cond_of"] = self
        return cond

    def yield_turn(self, turns: int = 1) -> None:
        """Let other threads run first (an interleaving seed's scheduling
        point): ``turns`` times, the calling thread wakes the next ready
        thread (or starts the next one not yet started) and waits behind
        every thread then ready.  No other thread to run: returns at once."""
        me = threading.current_thread()
        with self.lock:
            for _ in range(turns):
                if self.abort or self.waiters.get(me) is not None:
                    return
                w = _Waiter(me, _true, _none, self._cond_of(me))
                w.ready = True  # ready all along: never evaluated, never a deadlock
                self.waiters[me] = w
                try:
                    if not self._hand_off():
                        return
                    self._runq.append(w)
                    while not w.woken and not self.abort:
                        w.cond.wait()
                finally:
                    self.waiters.pop(me, None)

    def _wake_all(self) -> None:
        """No hand-off for a while (the watchdog; caller holds the lock):
        every ready waiter and every thread not yet started runs now."""
        while self._hand_off():
            pass

    def wait_until(self, pred: Callable[[], bool], on_deadlock: Callable[[], None]) -> bool:
        """Block the calling simulated thread until ``pred()`` (caller holds the lock).

        When every live thread of the cluster waits and no predicate is true:
        a waiter whose ``on_deadlock()`` returns (a ``try_wait``) returns
        False; otherwise every waiter's ``on_deadlock()`` message goes into
        one :class:`DeadlockError` and the launch fails with it.
        """
        me = threading.current_thread()
        if pred():
            return True
        w = _Waiter(me, pred, on_deadlock, self._cond_of(me))
        key = getattr(pred, "key", None)
        self.waiters[me] = w
        group = self._unkeyed if key is None else self._keyed.setdefault(id(key), {})
        group[me] = w
        try:
            self._check_stuck()
            while True:
                if self.abort:
                    raise RuntimeError("aborted: another thread of the launch failed")
                if w.ready:
                    w.woken = True  # it runs: no later hand-off wakes it
                    if pred():
                        return True
                    w.ready = w.woken = False  # woken, but false again: asleep once more
                    self._check_stuck()
                    continue
                if w.deadlocked:
                    return False
                self._hand_off()
                w.cond.wait()
        finally:
            self.waiters.pop(me, None)
            group.pop(me, None)

    def _check_stuck(self) -> None:
        """Every live thread waits: wake the ready ones; else a deadlock."""
        if not self.started or self.failed is not None or self.abort:
            return
        if len(self.waiters) < self.live:
            return
        for w in list(self.waiters.values()):
            if w.ready or w.deadlocked:
                return  # someone is about to run
        self.changed()
        if any(w.ready for w in self.waiters.values()):
            return
        # nobody can proceed: ask each waiter (as that thread) what it waits for
        soft, msgs = [], []
        for w in list(self.waiters.values()):
            try:
                with acting_as(w.thread):
                    w.on_deadlock()
                soft.append(w)
            except DeadlockError as e:
                msgs.append((w.thread, str(e), getattr(e, "root_cause", False)))
            except Exception as e:  # noqa: BLE001 - reported as the launch's failure
                self._fail(e, e.__traceback__)
                return
        if soft:
            for w in soft:  # a try_wait returns False; its thread runs again
                w.deadlocked = True
                w.cond.notify()  # several at once: rare, and each must run
            return
        err = DeadlockError(self._deadlock_text(msgs))
        self._fail(err, None)

    def _deadlock_text(self, msgs: list) -> str:
        """Every blocked wait of a deadlock in one message, the root cause (a
        barrier whose arrivals are all in but whose transaction bytes never
        come) first, then the waits it starves, by block and thread."""
        groups: dict = {}
        # the root cause first (a barrier starved of transaction bytes that no
        # blocked thread can bring), then the waits it starves, by block and thread
        msgs = sorted(msgs, key=lambda tm: (not tm[2], tuple(tm[0].blockIdx)[::-1],
                                            tm[0].thread_id))
        for t, m, _ in msgs:
            key = m.replace(" " + where(t), "")
            if self.clustered:
                key = key.replace("every thread of the block is blocked",
                                  "every thread of the cluster is blocked")
            groups.setdefault(key, []).append(t)
        lines = []
        for key, ts in groups.items():
            n = len(ts)
            who = where(ts[0]) if n == 1 else f"{n} threads, first {where(ts[0])}"
            lines.append(f"{key} [{who}]" if n > 1 else f"{key} {who}")
        if len(lines) == 1:
            return lines[0]
        scope = "cluster" if self.clustered else "block"
        return (f"{lines[0]}\n{SIM_PREFIX}every thread of the {scope} is blocked; all "
                f"{len(lines)} blocked waits:\n" + "\n".join(f"  - {ln}" for ln in lines))

    def _fail(self, exc: BaseException, tb) -> None:
        if self.failed is None:
            self.failed = (exc, tb)
        self.abort = True
        for t in self.threads:
            t.abort = True
        for w in list(self.waiters.values()):
            w.cond.notify()
        self._runq.clear()
        while self._unstarted:  # never to run
            _nbsim.cancel_thread(self._unstarted.popleft())
        self.main.notify_all()

    # --- syncthreads -----------------------------------------------------------------

    def syncthreads(self, t) -> None:
        blk = tuple(t.blockIdx)
        with self.lock:
            if self.abort:
                raise RuntimeError("abort flag set on syncthreads call")
            gen = self.sync_gen[blk]
            self.sync_count[blk] += 1
            self._release_sync(blk)
            if self.sync_gen[blk] != gen:
                return
            frame = sys._getframe()  # the line is read only for a deadlock message

            def stuck():
                line = _kernel_line(frame)
                raise DeadlockError(
                    f"{SIM_PREFIX}cuda.syncthreads: deadlock: waiting at {line} with "
                    f"{self.sync_count[blk]} of the block's {self.block_live[blk]} live threads "
                    f"arrived {where(acting_thread())}")

            def released():
                return self.sync_gen[blk] != gen

            released.key = self._sync_key(blk)
            self.wait_until(released, stuck)

    def _sync_key(self, blk):
        return self._sync_keys.setdefault(blk, object())

    def _release_sync(self, blk) -> None:
        if self.sync_count[blk] and self.sync_count[blk] >= self.block_live[blk]:
            self.sync_count[blk] = 0
            self.sync_gen[blk] += 1
            EVENTS.emit("block_barrier", blk)  # what the block wrote is visible to it
            self.changed(self._sync_key(blk))

    # --- running ---------------------------------------------------------------------

    def thread_exit(self, t) -> None:
        blk = tuple(t.blockIdx)
        with self.lock:
            self.live -= 1
            self.block_live[blk] -= 1
            self.exited_threads.add(t)
            t._ac_exited = True
            if t.exception is not None and self.failed is None:
                self._fail(t.exception[0], t.exception[1])
            if self.block_live[blk] == 0:
                self.exited.add(blk)
                self._emit("block_exit", blk)
            else:
                self._release_sync(blk)
            # a cluster barrier counts exited threads as arrived
            self._emit("thread_exit", t)
            if self.live == 0:
                self.main.notify_all()
            else:
                self._check_stuck()
                self._hand_off()

    def _emit(self, event: str, *args) -> None:
        """Tell the families; an error they raise fails the launch."""
        if self.failed is None:
            try:
                self.events.emit(event, *args)
            except Exception as e:  # noqa: BLE001
                self._fail(e, e.__traceback__)

    def run(self, f, args) -> None:
        for p, mgr in zip(self.points, self.managers):
            mgr._ac_cluster = self
            mgr._ac_point = p
            n = int(np.prod(mgr._block_dim))
            self.block_live[p] = n
            self.sync_count[p] = 0
            self.sync_gen[p] = 0

        def target():
            f(*args)

        back = threading.Semaphore(0)  # one release a simulated thread that has finished
        with self.lock:
            for p, mgr in zip(self.points, self.managers):
                for bp in np.ndindex(*mgr._block_dim):
                    self.threads.append(
                        _nbsim.new_thread(target, mgr, p, bp, mgr._debug, back.release))
            self.live = len(self.threads)
            self.started = True
        with self.lock:
            # the first runs now, each of the others when one before it blocks or exits
            self._unstarted.extend(self.threads)
            self._hand_off()
            seen = -1
            while self.live > 0 and self.failed is None:
                if not self.main.wait(WATCHDOG_S) and self.handoffs == seen:
                    self._wake_all()
                seen = self.handoffs
            failed = self.failed
        if failed is not None:
            # let aborted threads unwind before the next launch touches state
            for _ in self.threads:
                back.acquire(timeout=0.5)
            exc, tb = failed
            raise exc.with_traceback(tb)
        for _ in self.threads:
            back.acquire()


def _true() -> bool:
    return True


def _none() -> None:
    return None


def _kernel_line(f) -> str:
    """file:line of the kernel code below the simulator's and this package's
    frames, from frame ``f`` down."""
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not fn.startswith(pkg) and f"{os.sep}simulator{os.sep}" not in fn:
            return f"{f.f_code.co_filename}:{f.f_lineno}"
        f = f.f_back
    return "<unknown>"


# --- the launch ---------------------------------------------------------------------

_pending: dict = {}  # set by ac.launch for the next simulated launch: {"cluster": shape}


def set_next_launch_cluster(cluster: tuple | None) -> None:
    """``ac.launch(..., cluster=)`` in the simulator: the shape of the launch
    it is about to make."""
    _pending["cluster"] = cluster


def launch(kernel: Any, claim: Any, args: tuple, stream: Any) -> None:
    """``ac.launch`` under NUMBA_ENABLE_CUDASIM=1 (installed into
    ``host/launch.py``), its arguments checked there: an ordinary simulated
    launch with that much dynamic shared memory; with a cluster shape, the
    blocks of each cluster run together (:func:`block_run`)."""
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    if not isinstance(kernel, FakeCUDAKernel):
        raise TypeError(f"expected a @cuda.jit kernel, got {type(kernel).__name__}")
    if kernel._device:
        raise TypeError(f"{kernel.fn.__name__} is a device function, not a kernel")
    if claim.cluster is not None:
        check_grid(claim.grid, claim.cluster, _WHAT)
    set_next_launch_cluster(claim.cluster)
    try:
        kernel[claim.grid, claim.block, stream, claim.shared_mem](*args)
    finally:
        set_next_launch_cluster(None)


def declared_cluster_dims(fn) -> tuple | None:
    """The constant shape of a ``cluster_dims(...)`` call in the body of
    kernel ``fn`` (found in its source before the launch: in the simulator
    the call runs only when the threads run), or None."""
    cached = getattr(fn, "_ac_cluster_dims", False)
    if cached is not False:
        return cached
    dims = None
    try:

        src = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(src)
        env = dict(fn.__globals__)
        if fn.__closure__:
            env.update({n: c.cell_contents for n, c in zip(fn.__code__.co_freevars, fn.__closure__)})
        body = tree.body[0] if tree.body else None
        for node in ast.walk(body) if body is not None else ():
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                if name == "cluster_dims":
                    vals = [eval(compile(ast.Expression(a), "<cluster_dims>", "eval"), env)
                            for a in node.args]
                    kw = {k.arg: eval(compile(ast.Expression(k.value), "<cluster_dims>", "eval"), env)
                          for k in node.keywords}
                    vals = [int(v) for v in vals] + [1] * (3 - len(vals))
                    if min(vals) >= 1:  # else the call itself refuses it, in the typing's words
                        dims = (tuple(vals[:3]), bool(kw.get("non_portable", False)))
                    break
    except Exception:  # noqa: BLE001 - no source: the call itself reports it
        dims = None
    try:
        fn._ac_cluster_dims = dims
    except Exception:  # noqa: BLE001
        pass
    return dims


def _launch_info(mgr, grid_point) -> LaunchInfo:
    from numba.cuda.simulator import kernel as simkernel

    mod = simkernel._get_kernel_context()
    info = mod.__dict__.get("_ac_launch") if mod is not None else None
    if info is not None:
        return info
    grid = tuple(mgr._grid_dim)
    runtime = _pending.pop("cluster", None)
    declared = declared_cluster_dims(mgr._f)
    shape, explicit = None, False
    if declared is not None:
        dims, non_portable = declared
        check_cluster_shape(dims, non_portable, "cluster_dims")
        if runtime is not None and tuple(runtime) != dims:
            raise ClusterLaunchError(
                f"ac.launch: the kernel declares cluster_dims{dims}; cluster={tuple(runtime)} "
                "contradicts it")
        shape, explicit = dims, True
        check_grid(grid, dims, f"{getattr(mgr._f, '__name__', 'kernel')} launch")
    elif runtime is not None:
        shape, explicit = tuple(runtime), True
    info = LaunchInfo(grid, mgr._block_dim, shape, explicit, mgr._f)
    if mod is not None:
        mod._ac_launch = info
    return info


def block_run(mgr, grid_point, *args) -> None:
    """``BlockManager.run`` replacement: the first block of a cluster runs
    the whole cluster; the other blocks of that cluster are then done."""
    from numba.cuda.simulator import kernel as simkernel

    info = _launch_info(mgr, grid_point)
    point = tuple(int(v) for v in grid_point)
    cid = info.cluster_of(point)
    if cid in info.done:
        return
    info.done.add(cid)
    points = info.points_of(cid)
    managers = [mgr if p == point else simkernel.BlockManager(mgr._f, mgr._grid_dim,
                                                               mgr._block_dim, mgr._debug)
                for p in points]
    run = ClusterRun(info, points, managers)
    try:
        run.run(mgr._f, args)
        for p, m in zip(points, managers):
            blk = m.__dict__.get("_ac_block")
            if blk is not None:
                blk.at_exit(p)
    finally:
        EVENTS.emit("blocks_freed", points)
        _nbsim.free_blocks(points)
    info.progress.blocks_done(len(points))


def cluster_of_thread(t=None) -> ClusterRun | None:
    t = t or threading.current_thread()
    mgr = _nbsim.block_manager(t)
    return getattr(mgr, "_ac_cluster", None) if mgr is not None else None


def current_cluster(api: str) -> ClusterRun:
    c = cluster_of_thread()
    if c is None:
        raise SimulatorError(f"{SIM_PREFIX}{api}: called outside a simulated kernel")
    return c
