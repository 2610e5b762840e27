"""Shared-memory layouts: swizzle modes, boxes and tiles, in one place.

TMA copies (``TensorMap``, the simulator's tensor twins) and warpgroup MMA
descriptors lay a tile out in shared memory the same way: rows of 16-byte
units, and a swizzle that XORs a unit's index within its 128-byte row with
the row's index, so that the 8 rows of one atom land in different banks.
This module is the one statement of those rules; it imports nothing of the
package.

- :class:`Swizzle` (from :func:`swizzle`, by its span in bytes: 0 = none,
  32, 64, 128): its XOR pattern on byte offsets (:meth:`Swizzle.offset`), the
  atom it repeats over (8 rows of ``span`` bytes), and the base alignment a
  swizzled tile needs so that the pattern starts at its first byte.
- :func:`box_counts` / :func:`box_bytes`: the elements and bytes a box
  moves, with element strides.
- :func:`swizzle_bytes` / :func:`unswizzle_bytes`: a dense tile's bytes as
  they lie in shared memory under a swizzle, and back.

Example::

    from numba_asynccopy import _layout

    sw = _layout.swizzle(128)
    sw.offset(0x90)         # unit 1 of row 1 -> 0x80 | (1 ^ 1) << 4 = 0x80
    sw.atom_bytes           # 1024: the pattern repeats every 8 rows of 128 bytes
    sw.base_alignment       # 1024: a 128-byte-swizzled tile starts on that boundary
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: bytes a swizzle moves as one piece (a bank-wide unit)
UNIT_BYTES = 16
#: bytes of one swizzle row: bits 7 and up of an offset name the row
ROW_BYTES = 128
#: rows of one swizzle atom (the rows the XOR pattern tells apart)
ATOM_ROWS = 8
#: alignment of an unswizzled tile that a TMA copy reads or writes
PLAIN_ALIGNMENT = 128
#: the swizzle spans, in bytes (0: none)
SWIZZLE_SPANS = (0, 32, 64, 128)


@dataclass(frozen=True)
class Swizzle:
    """One swizzle mode, named by its span: the bytes of a row that the XOR
    pattern permutes (0: no swizzle)."""

    span: int

    @property
    def units(self) -> int:
        """16-byte units per swizzled row segment (1 without a swizzle)."""
        return max(self.span // UNIT_BYTES, 1)

    @property
    def mask(self) -> int:
        """The row-index bits XORed into the unit index (0: identity)."""
        return self.units - 1

    @property
    def atom_bytes(self) -> int:
        """Bytes after which the pattern repeats: 8 rows of ``span`` bytes
        (an unswizzled layout repeats at once: one 16-byte unit)."""
        return ATOM_ROWS * self.span if self.span else UNIT_BYTES

    @property
    def base_alignment(self) -> int:
        """Alignment of a tile's first byte so that the pattern starts there
        (128 without a swizzle; 256, 512, 1024 for 32, 64, 128 bytes)."""
        return ATOM_ROWS * self.span if self.span else PLAIN_ALIGNMENT

    def max_inner_bytes(self) -> int | None:
        """The most bytes a box's innermost extent may span (None: no limit)."""
        return self.span or None

    def offset(self, o):
        """Where byte offset ``o`` (an int or an integer numpy array) of the
        dense tile lies in shared memory: its 16-byte unit index XORed with
        the 128-byte row index, masked to the span."""
        if not self.span:
            return o
        return o ^ (((o >> 7) & self.mask) << 4)


_SWIZZLES = {s: Swizzle(s) for s in SWIZZLE_SPANS}


def swizzle(span: int | None) -> Swizzle:
    """The swizzle of ``span`` bytes (None or 0: none); ValueError otherwise."""
    sw = _SWIZZLES.get(0 if span is None else span)
    if sw is None or isinstance(span, bool):
        raise ValueError(f"swizzle={span!r}: use None (or 0), 32, 64 or 128 (bytes)")
    return sw


def box_counts(box: Sequence[int], element_strides: Sequence[int]) -> list[int]:
    """Elements a box moves along each axis (every ``stride``-th of ``box``)."""
    return [math.ceil(b / e) for b, e in zip(box, element_strides)]


def box_bytes(box: Sequence[int], element_strides: Sequence[int], itemsize: int) -> int:
    """Bytes one copy of the box moves (the tile it fills, dense)."""
    return math.prod(box_counts(box, element_strides)) * itemsize


def unit_offsets(nbytes: int, sw: Swizzle) -> np.ndarray:
    """Shared byte offset of each 16-byte unit of a dense tile of ``nbytes``."""
    return sw.offset(np.arange(0, nbytes, UNIT_BYTES))


def swizzle_bytes(dense: np.ndarray, sw: Swizzle) -> np.ndarray:
    """The bytes of the dense tile ``dense`` as they lie in shared memory."""
    raw = np.ascontiguousarray(dense).view(np.uint8).reshape(-1)
    out = np.empty_like(raw)
    out.reshape(-1, UNIT_BYTES)[unit_offsets(raw.size, sw) // UNIT_BYTES] = \
        raw.reshape(-1, UNIT_BYTES)
    return out


def unswizzle_bytes(raw: np.ndarray, sw: Swizzle) -> np.ndarray:
    """The dense tile's bytes from shared memory's ``raw`` (inverse of
    :func:`swizzle_bytes`)."""
    return raw.reshape(-1, UNIT_BYTES)[unit_offsets(raw.size, sw) // UNIT_BYTES].reshape(-1)


__all__ = [
    "ATOM_ROWS", "PLAIN_ALIGNMENT", "ROW_BYTES", "SWIZZLE_SPANS", "Swizzle", "UNIT_BYTES",
    "box_bytes", "box_counts", "swizzle", "swizzle_bytes", "unit_offsets", "unswizzle_bytes",
]
