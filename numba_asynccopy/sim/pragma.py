"""Simulator twin of the loop pragma: nothing to do (a simulated loop is
never unrolled)."""

from __future__ import annotations


def pragma_nounroll() -> None:
    """``ac.pragma_nounroll()`` in the simulator: does nothing.

    Example::

        for t in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
            ac.pragma_nounroll()
    """
