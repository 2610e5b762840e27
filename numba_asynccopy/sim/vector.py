"""Vector loads and stores and chunk views in the simulator.

Each call is validated by the device intrinsic's own typing (same errors),
then checked for what checked mode traps on, with the same rule text: every
index inside its axis (numpy would wrap a negative one; the GPU has no
wraparound), the last axis contiguous, the address a multiple of the vector
size.  A load returns a tuple of numpy scalars, a store writes them, a chunk
view is the numpy view of the elements.
"""

from __future__ import annotations


import numpy as np

from .. import vector as _dev
from . import _runtime as rt
from ._mirror import mirrors


def _fmt(rule: str, *values: int) -> str:
    """A device rule's printf text with its values filled in."""
    return rule.replace("%lld", "%d").replace("%llx", "%x") % values


def _locate(api: str, a: np.ndarray, idx, n: int) -> tuple[tuple[int, ...], int]:
    """``(leading indices, last index)`` of ``a[idx]`` after the contract's
    run-time rules, checked in the device's order."""
    # (list comprehensions, not generators: every vector access runs this)
    scalar = not isinstance(idx, tuple)
    inds = tuple([int(x) for x in ((idx,) if scalar else idx)])
    last = a.ndim - 1
    for k, (i, s) in enumerate(zip(inds, a.shape)):
        bad = not 0 <= i < s if k < last else (i < 0 or i + n > s)
        if bad:
            raise rt.violation(api, _fmt(_dev._rule_index(k, a.ndim, scalar, n), i, s))
    size = a.itemsize
    if n > 1 and a.strides[-1] != size:
        raise rt.violation(api, _fmt(_dev._rule_contiguous(size), a.strides[-1]))
    addr = rt.address(a) + sum([i * s for i, s in zip(inds, a.strides)])
    if addr % _dev._alignment(n * size):
        raise rt.violation(api, _fmt(_dev._rule_aligned(n * size), addr))
    return inds[:-1], inds[-1]


def _load(api: str, intrinsic, n: int | None, arr, idx, *extra) -> tuple:
    (a, i, *_), _ = rt.validate(intrinsic, arr, idx, *extra)
    count = n if n is not None else int(extra[0])
    head, j = _locate(api, a, i, count)
    return tuple([a[head + (j + d,)] for d in range(count)])


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


@mirrors(_dev.load_vec, "the same elements, read or written one by one.")
def load_vec(arr, idx, n):
    return _load("load_vec", _dev.load_vec, None, arr, idx, n)


@mirrors(_dev.store_vec, "the same elements, read or written one by one.")
def store_vec(arr, idx, values):
    _store("store_vec", _dev.store_vec, arr, idx, values)


@mirrors(_dev.load4, "the same elements, read or written one by one.")
def load4(arr, idx):
    return _load("load4", _dev.load4, 4, arr, idx)


@mirrors(_dev.store4, "the same elements, read or written one by one.")
def store4(arr, idx, values):
    _store("store4", _dev.store4, arr, idx, values)


@mirrors(_dev.load2, "the same elements, read or written one by one.")
def load2(arr, idx):
    return _load("load2", _dev.load2, 2, arr, idx)


@mirrors(_dev.store2, "the same elements, read or written one by one.")
def store2(arr, idx, values):
    _store("store2", _dev.store2, arr, idx, values)


@mirrors(_dev.chunk_view, "a numpy view of the same memory.")
def chunk_view(arr, idx, n):
    return _view("chunk_view", _dev.chunk_view, None, arr, idx, n)


@mirrors(_dev.view4, "a numpy view of the same memory.")
def view4(arr, idx):
    return _view("view4", _dev.view4, 4, arr, idx)
