"""Vector loads and stores and chunk views in the simulator.

Each call is validated by the device intrinsic's own typing (same errors),
then checked for what checked mode traps on, with the same rule text: every
index inside its axis (numpy would wrap a negative one; the GPU has no
wraparound), the last axis contiguous, the address a multiple of the vector
size.  A load returns a tuple of numpy scalars, a store writes them, a chunk
view is the numpy view of the elements.
"""

from __future__ import annotations

import sys

import numpy as np

from . import _runtime as rt

_dev = sys.modules["numba_asynccopy.vector"]


def _fmt(rule: str, *values: int) -> str:
    """A device rule's printf text with its values filled in."""
    return rule.replace("%lld", "%d").replace("%llx", "%x") % values


def _locate(api: str, a: np.ndarray, idx, n: int) -> tuple[tuple[int, ...], int]:
    """``(leading indices, last index)`` of ``a[idx]`` after the contract's
    run-time rules, checked in the device's order."""
    scalar = not isinstance(idx, tuple)
    inds = tuple(int(x) for x in ((idx,) if scalar else idx))
    last = a.ndim - 1
    for k, (i, s) in enumerate(zip(inds, a.shape)):
        bad = not 0 <= i < s if k < last else (i < 0 or i + n > s)
        if bad:
            raise rt.violation(api, _fmt(_dev._rule_index(k, a.ndim, scalar, n), i, s))
    size = a.itemsize
    if n > 1 and a.strides[-1] != size:
        raise rt.violation(api, _fmt(_dev._rule_contiguous(size), a.strides[-1]))
    addr = rt.address(a) + sum(i * s for i, s in zip(inds, a.strides))
    if addr % _dev._alignment(n * size):
        raise rt.violation(api, _fmt(_dev._rule_aligned(n * size), addr))
    return inds[:-1], inds[-1]


def _load(api: str, intrinsic, n: int | None, arr, idx, *extra) -> tuple:
    (a, i, *_), _ = rt.validate(intrinsic, arr, idx, *extra)
    count = n if n is not None else int(extra[0])
    head, j = _locate(api, a, i, count)
    return tuple(a[head + (j + d,)] for d in range(count))


def _store(api: str, intrinsic, arr, idx, values) -> None:
    (a, i, vals), _ = rt.validate(intrinsic, arr, idx, values)
    head, j = _locate(api, a, i, len(vals))
    for d, v in enumerate(vals):
        a[head + (j + d,)] = v


def _view(api: str, intrinsic, n: int | None, arr, idx, *extra) -> np.ndarray:
    (a, i, *_), _ = rt.validate(intrinsic, arr, idx, *extra)
    count = n if n is not None else int(extra[0])
    head, j = _locate(api, a, i, count)
    return a[head + (slice(j, j + count),)]


def load_vec(arr, idx, n):
    """Simulator version of :func:`numba_asynccopy.load_vec`.

    Example::

        h = ac.load_vec(X, (row, 8 * tx), 8)
    """
    return _load("load_vec", _dev.load_vec, None, arr, idx, n)


def store_vec(arr, idx, values):
    """Simulator version of :func:`numba_asynccopy.store_vec`.

    Example::

        ac.store_vec(Y, (row, 8 * tx), h)
    """
    _store("store_vec", _dev.store_vec, arr, idx, values)


def load4(arr, idx):
    """Simulator version of :func:`numba_asynccopy.load4`.

    Example::

        a0, a1, a2, a3 = ac.load4(sh, (k, 4 * tx))
    """
    return _load("load4", _dev.load4, 4, arr, idx)


def store4(arr, idx, values):
    """Simulator version of :func:`numba_asynccopy.store4`.

    Example::

        ac.store4(dst, (row, 4 * tx), (v0, v1, v2, v3))
    """
    _store("store4", _dev.store4, arr, idx, values)


def load2(arr, idx):
    """Simulator version of :func:`numba_asynccopy.load2`.

    Example::

        x, y = ac.load2(xy, (i, 2 * tx))
    """
    return _load("load2", _dev.load2, 2, arr, idx)


def store2(arr, idx, values):
    """Simulator version of :func:`numba_asynccopy.store2`.

    Example::

        ac.store2(sh, (ty, 2 * tx), (x, y))
    """
    _store("store2", _dev.store2, arr, idx, values)


def chunk_view(arr, idx, n):
    """Simulator version of :func:`numba_asynccopy.chunk_view` (a numpy view).

    Example::

        ac.cp_async(ac.chunk_view(sh, (r, 8 * tx), 8), ac.chunk_view(X, (row, 8 * tx), 8), 16)
    """
    return _view("chunk_view", _dev.chunk_view, None, arr, idx, n)


def view4(arr, idx):
    """Simulator version of :func:`numba_asynccopy.view4` (a numpy view).

    Example::

        ac.cp_async(sh[r, c, :], ac.view4(u, (gy, 4 * gc)), 16)
    """
    return _view("view4", _dev.view4, 4, arr, idx)
