"""Timing kernels with CUDA events, beside a peer measured in the same run.

:func:`event_times` is the one timing loop of the package (the benchmark,
``python -m numba_asynccopy.bench``, times its rows with it too);
:func:`do_bench` adds what a user comparing two implementations needs: an
L2 flush before every timed call, subject and peer in alternating batches
(so clock and thermal drift hit both alike), the median and the spread, and
:func:`report_table` prints the comparison as ``make bench`` does.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .. import sim

#: bytes written between timed calls when the device does not report its
#: L2 size (an H200 has 50 MiB; twice the largest L2 of current GPUs)
DEFAULT_FLUSH_BYTES = 256 << 20


def _need_gpu(api: str):
    from numba import cuda

    if sim.ENABLED:
        raise RuntimeError(f"{api}: the CUDA simulator records no time (NUMBA_ENABLE_CUDASIM=1); "
                           "time kernels on a GPU")
    return cuda


def _check_int(api: str, arg: str, v: Any, low: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{api}: `{arg}` must be an int, got {v!r} ({type(v).__name__})")
    if v < low:
        raise ValueError(f"{api}: `{arg}` must be >= {low}, got {v}")
    return v


def _check_fn(api: str, arg: str, fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"{api}: `{arg}` must be a callable taking no arguments, got {type(fn).__name__}")


class L2Flush:
    """A device buffer at least twice the L2 cache; calling it overwrites
    the buffer, so the next timed call starts with a cold L2.

    Example::

        flush = L2Flush()
        flush()   # enqueued on the default stream
    """

    def __init__(self, nbytes: int | None = None):
        cuda = _need_gpu("L2Flush")
        import numpy as np

        if nbytes is None:
            try:
                l2 = int(cuda.get_current_device().L2_CACHE_SIZE)
            except Exception:
                l2 = 0
            nbytes = max(2 * l2, 8 << 20) if l2 else DEFAULT_FLUSH_BYTES
        self.nbytes = _check_int("L2Flush", "nbytes", nbytes, 4)
        self._buf = cuda.device_array(self.nbytes // 4, np.uint32)
        self._kernel = _flush_kernel()
        self._i = 0

    def __call__(self) -> None:
        import numpy as np

        self._i += 1
        self._kernel[264, 512](self._buf, np.uint32(self._i))


_FLUSH = {}


def _flush_kernel():
    if "k" not in _FLUSH:
        from numba import cuda

        @cuda.jit
        def flush(buf, v):
            i = cuda.grid(1)
            while i < buf.shape[0]:
                buf[i] = v
                i += cuda.gridsize(1)

        _FLUSH["k"] = flush
    return _FLUSH["k"]


def event_times(fn: Callable[[], Any], *, reps: int, warmup: int = 1, batch: int | None = None,
                min_batch_ms: float = 2.0, flush: Callable[[], Any] | None = None) -> list[float]:
    """Per-call times (ms) of ``fn`` over ``reps`` timed batches, measured
    with CUDA events on the default stream.

    Each batch is preceded by one untimed call (or by ``flush``, when
    given), so the GPU is busy while the host enqueues the timed launches:
    no launch gap inside the timing.  Without ``flush`` a batch holds enough
    calls to last about ``min_batch_ms`` (``batch=`` fixes it); with
    ``flush`` every batch is one call after a flush.

    Example::

        from numba_asynccopy.testing import event_times
        times = event_times(lambda: kernel[grid, block](a, b), reps=20)
    """
    api = "event_times"
    cuda = _need_gpu(api)
    _check_fn(api, "fn", fn)
    _check_int(api, "reps", reps, 1)
    _check_int(api, "warmup", warmup, 0)
    if flush is not None:
        _check_fn(api, "flush", flush)
    for _ in range(warmup):
        fn()
    cuda.synchronize()
    if flush is not None:
        batch = 1
    elif batch is None:
        start, stop = cuda.event(), cuda.event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        est = cuda.event_elapsed_time(start, stop)
        batch = max(1, min(64, math.ceil(min_batch_ms / max(est, 1e-3))))
    else:
        _check_int(api, "batch", batch, 1)
    events = [(cuda.event(), cuda.event()) for _ in range(reps)]
    times = []
    for start, stop in events:
        (flush or fn)()
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        if flush is None:
            stop.synchronize()
    events[-1][1].synchronize()
    for start, stop in events:
        times.append(cuda.event_elapsed_time(start, stop) / batch)
    return times


@dataclass
class Timing:
    """Per-call times of one callable, in milliseconds.

    Example::

        t = Timing("mine", [1.0, 1.2, 1.1])
        print(t.median_ms, t.spread)
    """

    name: str
    times_ms: list[float]

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def min_ms(self) -> float:
        return min(self.times_ms)

    @property
    def max_ms(self) -> float:
        return max(self.times_ms)

    @property
    def q25_ms(self) -> float:
        return _quantile(self.times_ms, 0.25)

    @property
    def q75_ms(self) -> float:
        return _quantile(self.times_ms, 0.75)

    @property
    def spread(self) -> float:
        """The interquartile range relative to the median (0.02: 2 %)."""
        m = self.median_ms
        return (self.q75_ms - self.q25_ms) / m if m > 0 else float("nan")


def _quantile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    if len(s) == 1:
        return s[0]
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


@dataclass
class BenchResult:
    """What :func:`do_bench` measured: the subject, the peer (or None),
    and the work of one call (bytes or FLOPs, for a figure).

    ``ratio`` is ``peer median / subject median``: above 1 the subject is
    faster.

    Example::

        r = do_bench(mine, peer=theirs, name="mine", peer_name="torch")
        print(r.subject.median_ms, r.ratio)
    """

    subject: Timing
    peer: Timing | None = None
    work: float = 0.0
    unit: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.peer is None:
            return None
        return self.peer.median_ms / self.subject.median_ms

    def figure(self, t: Timing) -> float | None:
        """``work`` per second at ``t``'s median, in tera-``unit``."""
        if not self.work:
            return None
        return self.work / (t.median_ms * 1e-3) / 1e12


def do_bench(fn: Callable[[], Any], *, peer: Callable[[], Any] | None = None, name: str = "subject",
             peer_name: str = "peer", warmup: int = 10, reps: int = 100, batches: int = 10,
             flush_l2: bool = True, work: float = 0.0, unit: str = "") -> BenchResult:
    """Time ``fn`` (and ``peer``, in the same run) with CUDA events.

    Each callable is warmed up ``warmup`` times, then ``reps`` timed calls
    each are split into ``batches`` batches that alternate subject and peer
    (ABBAAB...: drift of clocks and temperature hits both alike); with
    ``flush_l2`` every timed call follows an L2 flush (a cold cache, as a
    kernel of a real program meets it), otherwise calls are timed in
    back-to-back batches (a warm cache).  ``work`` (bytes or FLOPs per call)
    and ``unit`` (e.g. ``"TB/s"``) give :func:`report_table` a figure.

    Example::

        # gpu-only
        import numpy as np, torch
        from numba import cuda
        from numba_asynccopy.testing import do_bench, report_table

        @cuda.jit
        def copy(dst, src):
            i = cuda.grid(1)
            if i < src.size:
                dst[i] = src[i]

        a = torch.rand(1 << 24, device="cuda"); b = torch.empty_like(a)
        r = do_bench(lambda: copy[(a.numel() + 255) // 256, 256](b, a),
                     peer=lambda: b.copy_(a), name="numba copy", peer_name="torch copy",
                     work=2 * a.numel() * 4, unit="TB/s")
        print(report_table([("device copy", r)]))
    """
    api = "do_bench"
    _check_fn(api, "fn", fn)
    if peer is not None:
        _check_fn(api, "peer", peer)
    _check_int(api, "warmup", warmup, 0)
    _check_int(api, "reps", reps, 1)
    _check_int(api, "batches", batches, 1)
    if batches > reps:
        raise ValueError(f"{api}: `batches` ({batches}) must not exceed `reps` ({reps})")
    if not isinstance(flush_l2, bool):
        raise TypeError(f"{api}: `flush_l2` must be True or False, got {flush_l2!r}")
    for label, v in (("name", name), ("peer_name", peer_name), ("unit", unit)):
        if not isinstance(v, str):
            raise TypeError(f"{api}: `{label}` must be a str, got {type(v).__name__}")
    if isinstance(work, bool) or not isinstance(work, (int, float)) or work < 0:
        raise ValueError(f"{api}: `work` must be a number >= 0 (bytes or FLOPs per call), got {work!r}")
    cuda = _need_gpu(api)
    flush = L2Flush() if flush_l2 else None
    sides = [(fn, [])] + ([(peer, [])] if peer is not None else [])
    for f, _ in sides:
        for _ in range(warmup):
            f()
    cuda.synchronize()
    per = [reps // batches + (1 if b < reps % batches else 0) for b in range(batches)]
    for b, n in enumerate(per):
        order = sides if b % 2 == 0 else sides[::-1]
        for f, times in order:
            times.extend(event_times(f, reps=n, warmup=0, flush=flush,
                                     **({} if flush else {"batch": None})))
    result = BenchResult(Timing(name, sides[0][1]), work=float(work), unit=unit)
    if peer is not None:
        result.peer = Timing(peer_name, sides[1][1])
    return result


def format_rows(head: Sequence[str], body: Sequence[Sequence[str]],
                max_widths: dict[int, int] | None = None) -> str:
    """A Markdown-style table (``| a | b |``) with padded columns; a cell
    wider than ``max_widths[column]`` ends in ``~``.

    Example::

        >>> from numba_asynccopy.testing import format_rows
        >>> print(format_rows(["a", "b"], [["1", "22"]]))
        | a | b  |
        |---|----|
        | 1 | 22 |
    """
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    for i, w in (max_widths or {}).items():
        widths[i] = min(widths[i], w)

    def line(cells):
        cells = [c if len(c) <= w else c[:w - 1] + "~" for c, w in zip(cells, widths)]
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    out = [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(list(b)) for b in body]
    return "\n".join(out)


def report_table(rows: Sequence[tuple[str, BenchResult]]) -> str:
    """The comparison table ``make bench`` prints, for ``(benchmark,
    result)`` pairs: median, spread, figure, the peer's, and the ratio.

    Example::

        >>> from numba_asynccopy.testing import BenchResult, Timing, report_table
        >>> r = BenchResult(Timing("mine", [2.0]), Timing("torch", [1.0]))
        >>> print(report_table([("copy", r)]).splitlines()[2])
        | copy      | mine    | 2000.0 us | 0.0 %  | -      | torch | 1000.0 us   | 0.0 %       | -           | 0.500 |
    """
    head = ["benchmark", "subject", "median", "spread", "figure", "peer", "peer median",
            "peer spread", "peer figure", "ratio"]

    def us(t: Timing | None) -> str:
        return "-" if t is None else f"{t.median_ms * 1e3:.1f} us"

    def pct(t: Timing | None) -> str:
        return "-" if t is None else f"{t.spread * 100:.1f} %"

    def fig(r: BenchResult, t: Timing | None) -> str:
        v = r.figure(t) if t is not None else None
        return "-" if v is None else f"{v:.3f} {r.unit}".strip()

    body = []
    for bench, r in rows:
        if not isinstance(r, BenchResult):
            raise TypeError(f"report_table: `rows` must hold (str, BenchResult) pairs, got {type(r).__name__}")
        body.append([bench, r.subject.name, us(r.subject), pct(r.subject), fig(r, r.subject),
                     r.peer.name if r.peer else "-", us(r.peer), pct(r.peer), fig(r, r.peer),
                     "-" if r.ratio is None else f"{r.ratio:.3f}"])
    return format_rows(head, body)
