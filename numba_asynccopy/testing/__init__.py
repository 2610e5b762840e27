"""Helpers for testing and timing kernels written with numba-asynccopy.

- poisoned outputs: :func:`poisoned`, :func:`poisoned_like`, :func:`repoison`,
  :func:`poison_host`, :func:`poison_mask`, :func:`assert_written`;
- :func:`assert_close` with dtype- and accumulation-aware tolerances
  (:func:`tolerance`, :data:`TOLERANCES`);
- :func:`do_bench` (CUDA events, warm-up, L2 flush, median and spread, a
  peer in the same run), :func:`event_times`, :func:`report_table`.

The pytest plugin (``numba_asynccopy_pytest``, loaded through its entry
point) runs tests on the GPU and in the simulator; docs/testing.md.

Example::

    import numpy as np
    from numba import cuda
    from numba_asynccopy.testing import poisoned, assert_close

    @cuda.jit
    def twice(out, a):
        i = cuda.grid(1)
        if i < a.size:
            out[i] = 2 * a[i]

    a = np.arange(64, dtype=np.float32)
    out = poisoned(64, np.float32)
    twice[2, 32](out, cuda.to_device(a))
    assert_close(out, 2 * a)
"""

from .bench import (BenchResult, L2Flush, Timing, do_bench, event_times, format_rows,
                    report_table)
from .close import TOLERANCES, assert_close, tolerance
from .poison import (POISON_BYTE, assert_written, poison_host, poison_mask, poisoned,
                     poisoned_like, repoison)

__all__ = [
    "BenchResult", "L2Flush", "POISON_BYTE", "TOLERANCES", "Timing", "assert_close",
    "assert_written", "do_bench", "event_times", "format_rows", "poison_host", "poison_mask",
    "poisoned", "poisoned_like", "repoison", "report_table", "tolerance",
]
