"""The prepared path's host Python without a GPU: ``ac.launch`` of
``vadd(a, b, out)`` (3 float32 1-D device arrays, 528x128) in the fake CUDA
context of ``tests/cpu/test_launch_fastpath.py``, with the driver's launch
replaced by a no-op.  Prints JSON (ns per call, median of rounds).  Run from
the repository root on a machine without a GPU:

    .venv/bin/python benchmarks/h200-2026-12-03/launch_cpu_fake.py

``ac_launch_ns`` is what a prepared ``ac.launch`` costs in Python;
``run_ns`` and ``go_ns`` are ``_prepared.run`` and the generated ``go``
alone; ``context_ns`` is the context look-up (Numba's attached context here:
the fake one); ``ctx_driver_ns`` is ``current_context_handle`` with no
attached context, the driver call faked (the GPU machine's case), and
``empty_lambda_ns`` the loop's own cost.  Each figure is the fastest of 9
rounds.  To compare with the code before a change, run the same script
from an export of that commit (``git archive HEAD numba_asynccopy tests``
unpacked elsewhere, this script copied beside it): it imports the package
from its own tree.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402

import numba_asynccopy as ac  # noqa: E402
from numba_asynccopy.bench.launchprof import VADD_SIGNATURE, vadd  # noqa: E402
from numba_asynccopy.host import _numba_internals as nb  # noqa: E402
from numba_asynccopy.host import _prepared as P  # noqa: E402
from tests.cpu import test_launch_fastpath as T  # noqa: E402


def per_call_ns(fn, n: int = 100000, rounds: int = 9) -> float:
    """The fastest of ``rounds`` rounds (a noisy, shared CPU: the minimum
    is the stable figure)."""
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        times.append((time.perf_counter_ns() - t0) / n)
    return min(times)


def fake_driver_context() -> bool:
    """Make ``current_context_handle``'s driver call (ctypes, after the
    change) a C function of the same prototype that returns at once:
    libc's ``labs(t)`` (it returns the address, which reads as an error
    code: 0, no context).  False where the look-up is cuda.bindings' call
    (before the change, and after it: the H200 measured the ctypes look-up
    slower, 0.42 against 0.13 us, and it was dropped), which needs a driver."""
    import ctypes

    if not hasattr(nb, "_ctx_get_current"):
        return False
    libc = ctypes.CDLL(None)
    nb._ctx_get_current = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(
        ctypes.cast(libc.labs, ctypes.c_void_p).value)
    return True


def main() -> int:
    from numba.cuda.cudadrv import devices
    from numba.cuda.cudadrv import driver as numba_driver

    devices._runtime._tls.attached_context = T.FakeContext()
    real_core_stream = numba_driver._to_core_stream
    numba_driver._to_core_stream = (lambda s: ("core stream", s) if not s
                                    or isinstance(s, numba_driver.Stream) else real_core_stream(s))
    nb.launch_handle = lambda kernel, cufunc: 0x1234
    nb.launch_ex = lambda *a: None  # the driver call: a no-op (returns None: no error)
    blocks = 528
    n = blocks * 128
    a, b, out = (T.device_array((n,), np.float32, ptr=0x7F00_0000_0000 + i * (1 << 20))
                 for i in range(3))
    k = cuda.jit(VADD_SIGNATURE)(vadd)
    args = (a, b, out)
    for _ in range(3):
        ac.launch(k, blocks, 128, args)
    bucket = next(iter(k.__dict__[P.TABLE_ATTR].values()))
    (p,) = bucket

    res = {}
    res["ac_launch_ns"] = per_call_ns(lambda: ac.launch(k, blocks, 128, args))
    res["run_ns"] = per_call_ns(lambda: P.run(bucket, args, 0))
    res["go_ns"] = per_call_ns(lambda: p.go(args, 0))
    res["bucket_get_ns"] = per_call_ns(
        lambda: k.__dict__[P.TABLE_ATTR].get((None, *map(type, args))))
    res["empty_lambda_ns"] = per_call_ns(lambda: None)
    res["noop_launch_ex_ns"] = per_call_ns(lambda: nb.launch_ex(1, 2, 3))
    # the GPU machine's case: no attached context, the driver asked
    tls = devices._runtime._tls
    del tls.attached_context
    res["ctx_driver_ns"] = per_call_ns(nb.current_context_handle) if fake_driver_context() else None
    tls.attached_context = T.FakeContext()
    res["python_calls_per_launch"] = T.python_calls(lambda: ac.launch(k, blocks, 128, args))
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
