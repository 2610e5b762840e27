"""Simulator twin of the loop pragma: nothing to do (a simulated loop is
never unrolled)."""

from __future__ import annotations

from .. import pragma as _dev
from ._mirror import mirrors


@mirrors(_dev.pragma_nounroll, "does nothing: a simulated loop is never unrolled.")
def pragma_nounroll():
    pass
