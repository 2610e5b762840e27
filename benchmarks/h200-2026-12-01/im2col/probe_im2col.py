"""What does an im2col TMA load read on this GPU, where the documentation is
thin?  The tensor's elements encode their own position
(``1 + 1000 n + 100 d + 10 h + w``, every channel alike), so a tile shows
which pixels one load visited, in which order.

Cases (each in a fresh process: a fault poisons the CUDA context):

- ``corners``: a 2x4x4 image, corners (0, 0)/(0, 0) and (0, 0)/(-1, -1)
  and (0, 0)/(1, 1): where does a row of the box end?  (the two readings
  in circulation: half-open relative to (H, W), closed relative to
  (H - 1, W - 1), are the same set; the other two, closed relative to
  (H, W) or half-open relative to (H - 1, W - 1), differ by one pixel)
- ``n_stride``: element_strides (2, 1, 1, 1): does the walk skip images?
- ``start_outside``: a first pixel left of / right of the box;
- ``offset_wrap``: offset 65535: unsigned (far out of bounds) or -1?
- ``channel_misaligned``: a first channel 4 bytes past a 16-byte boundary.

    python3 probe_im2col.py          # every case, JSON lines
"""

from __future__ import annotations

import json
import subprocess
import sys


def load(x, tmap_kw, coords, offs, ppc, cpp):
    import numpy as np
    from numba import cuda

    import numba_asynccopy as ac
    from tests import im2col_cases as cases

    tmap = ac.TensorMap.im2col(cuda.to_device(x), channels_per_pixel=cpp, pixels_per_column=ppc,
                               **tmap_kw)
    out = cuda.to_device(np.full((1, ppc, cpp), -7, x.dtype))
    cases.make_loader(x.ndim, ppc, cpp, x.dtype)[1, 32](
        tmap, cuda.to_device(np.array([coords], np.int32)),
        cuda.to_device(np.array([offs], np.int32)), out)
    cuda.synchronize()
    return out.copy_to_host()[0]


def decode(tile):
    """The (n, h, w) each row of a tile came from ('oob' for zeros)."""
    out = []
    for row in tile[:, 0]:
        v = int(row)
        out.append("oob" if v == 0 else f"{(v - 1) // 1000},{(v - 1) // 10 % 10},{(v - 1) % 10}")
    return out


def image(n=2, h=4, w=4, c=4):
    import numpy as np

    x = np.zeros((n, h, w, c), np.float32)
    for i in range(n):
        for j in range(h):
            for k in range(w):
                x[i, j, k] = 1 + 1000 * i + 10 * j + k
    return x


def case(name: str) -> dict:
    x = image()
    try:
        if name == "corners":
            res = {}
            for up in ((0, 0), (-1, -1), (1, 1)):
                t = load(x, dict(lower_corner=(0, 0), upper_corner=up), (0, 0, 0, 0), (0, 0), 32, 4)
                res[str(up)] = decode(t)
            return dict(case=name, result=res)
        if name == "n_stride":
            t = load(x, dict(lower_corner=(0, 0), upper_corner=(-2, -2),
                             element_strides=(2, 1, 1, 1)), (0, 0, 0, 0), (0, 0), 16, 4)
            return dict(case=name, result=decode(t))
        if name == "start_outside":
            res = {}
            for start in ((0, 0, -1, 0), (0, 0, 3, 0), (0, -1, 0, 0)):
                t = load(x, dict(lower_corner=(0, 0), upper_corner=(-1, -1)), start, (0, 0), 12, 4)
                res[str(start)] = decode(t)
            return dict(case=name, result=res)
        if name == "offset_wrap":
            t = load(x, dict(lower_corner=(0, 0), upper_corner=(0, 0)), (0, 1, 1, 0), (0, 65535),
                     4, 4)
            return dict(case=name, result=decode(t))
        if name == "channel_misaligned":
            xx = image(c=8)
            t = load(xx, dict(lower_corner=(0, 0), upper_corner=(0, 0)), (0, 0, 0, 1), (0, 0), 4, 4)
            return dict(case=name, result=[list(map(float, r)) for r in t])
    except Exception as e:  # noqa: BLE001 - a probe records every failure
        return dict(case=name, error=f"{type(e).__name__}: {str(e)[:300]}")
    return dict(case=name, error="unknown case")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "one":
        print(json.dumps(case(sys.argv[2])), flush=True)
        return
    for name in ("corners", "n_stride", "start_outside", "offset_wrap", "channel_misaligned"):
        p = subprocess.run([sys.executable, __file__, "one", name], capture_output=True, text=True,
                           timeout=120)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
        print(lines[-1] if lines else json.dumps(dict(case=name, crashed=p.returncode,
                                                      tail=(p.stderr or "")[-300:])), flush=True)


if __name__ == "__main__":
    main()
