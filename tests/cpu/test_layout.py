"""The layout module: the swizzle modes by span, their XOR pattern, atoms
and base alignments, the box arithmetic TensorMap uses, and a swizzle that
a copy undoes exactly."""

from __future__ import annotations

import numpy as np
import pytest

from numba_asynccopy import _layout
from numba_asynccopy.host import tensor_map as tm


def test_the_xor_pattern_on_byte_offsets():
    # 128-byte swizzle: unit u of row r lands at unit u ^ (r % 8)
    sw = _layout.swizzle(128)
    for r in range(16):
        for u in range(8):
            assert sw.offset(r * 128 + u * 16) == r * 128 + ((u ^ (r % 8)) * 16)
    # 32 bytes: only the lowest row bit flips the lowest unit bit
    assert _layout.swizzle(32).offset(128 + 16) == 128
    assert _layout.swizzle(32).offset(256 + 16) == 256 + 16
    # no swizzle: identity, an int stays an int
    assert _layout.swizzle(None).offset(12345) == 12345
    assert _layout.swizzle(0) is _layout.swizzle(None)


@pytest.mark.parametrize("span,atom,align", [(0, 16, 128), (32, 256, 256), (64, 512, 512),
                                             (128, 1024, 1024)])
def test_atoms_and_base_alignments(span, atom, align):
    sw = _layout.swizzle(span)
    assert (sw.span, sw.atom_bytes, sw.base_alignment) == (span, atom, align)
    if span:  # the pattern repeats after one atom, and not before
        o = np.arange(0, 4 * atom, 16)
        assert (sw.offset(o + atom) - atom == sw.offset(o)).all()
        assert not (sw.offset(o + atom // 2) - atom // 2 == sw.offset(o)).all()


@pytest.mark.parametrize("bad", [16, 256, 100, -32, True])
def test_an_unknown_span_is_refused(bad):
    with pytest.raises(ValueError, match="use None \\(or 0\\), 32, 64 or 128"):
        _layout.swizzle(bad)


@pytest.mark.parametrize("span", [None, 32, 64, 128])
def test_swizzle_then_unswizzle_is_the_identity(span):
    rng = np.random.default_rng(7)
    dense = rng.integers(0, 256, 4096, dtype=np.uint8)
    sw = _layout.swizzle(span)
    raw = _layout.swizzle_bytes(dense, sw)
    assert (np.sort(raw) == np.sort(dense)).all()
    assert (_layout.unswizzle_bytes(raw, sw) == dense).all()
    if span:
        assert not (raw == dense).all()


def test_tensor_map_reads_its_alignment_and_bytes_from_the_layout():
    a = {"shape": (64, 64), "typestr": "<f4", "data": (1 << 20, False), "strides": None,
         "version": 3}
    for span in (None, 32, 64, 128):
        box = (8, 8) if span == 32 else (8, 16)
        spec = tm.describe(a, box, swizzle=span)
        assert spec.smem_alignment == _layout.swizzle(span).base_alignment
        assert spec.box_bytes == _layout.box_bytes(box, (1, 1), 4)
    assert _layout.box_counts((8, 30), (3, 1)) == [3, 30]
