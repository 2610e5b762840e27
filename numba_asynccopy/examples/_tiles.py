"""Which tiles a block of the copy examples takes (grid stride or runs).

``block_tiles(ntiles, run)`` gives ``(base, stride, count)``: the block
copies tiles ``base + i * stride`` for ``i < count``.

- ``run == 0``: a persistent grid walks the tiles with a grid stride
  (tile ``blockIdx.x + i * gridDim.x``);
- ``run > 0``: block ``b`` copies the ``run`` consecutive tiles from
  ``b * run`` (fewer for the last block, none past the last tile).

Example::

    base, stride, count = block_tiles(ntiles, run)   # run: a closure constant
    for i in range(count):
        t = base + i * stride
"""

from __future__ import annotations

from numba import cuda


def _block_tiles(ntiles, run):
    first = cuda.blockIdx.x
    if run:
        base = first * run
        stride = 1
        count = min(run, ntiles - base) if base < ntiles else 0
    else:
        step = cuda.gridDim.x
        base = first
        stride = step
        count = (ntiles - base + step - 1) // step if base < ntiles else 0
    return base, stride, count


block_tiles = cuda.jit(device=True, inline="always")(_block_tiles)
