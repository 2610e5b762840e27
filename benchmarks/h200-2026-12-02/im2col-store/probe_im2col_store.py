"""Which im2col stores and reductions (``.im2col_no_offs``) run on this GPU?

Each case runs in a fresh process (an illegal instruction poisons the whole
CUDA context): one CTA stages a random (16 pixels x 8 channels) float32 tile
in shared memory and stores it (or add-reduces it) through an im2col map of
a random (1, 7, 6, 8) NHWC tensor at the given 4-D coordinates; the result is
compared with ``numpy_im2col_store`` (the simulator's model).

    python3 probe_im2col_store.py            # every case, JSON lines on stdout
    python3 probe_im2col_store.py one CORNERS STRIDE COORDS OP

CORNERS: ``zero`` (lower = upper = (0, 0)) or ``pad1`` (a 3x3 kernel's
corners with padding 1); STRIDE: the spatial element stride (1 or 2);
COORDS: ``origin`` (0, 0, 0, 0), ``inside`` (0, 1, 1, 0) or ``negative``
(0, -1, -1, 0); OP: ``store`` or ``add``.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

CORNERS = ["zero", "pad1"]
STRIDES = [1, 2]
COORDS = {"origin": (0, 0, 0, 0), "inside": (0, 1, 1, 0), "negative": (0, -1, -1, 0)}
OPS = ["store", "add"]
PPC, CPP = 16, 8


def one(corners: str, stride: int, coords: str, op: str) -> dict:
    global np, cuda, ac
    import numpy as np
    from numba import cuda

    import numba_asynccopy as ac
    from numba_asynccopy.host.im2col import numpy_im2col_store

    @cuda.jit
    def k(tmap, tile_in, c4, reduce):
        tile = cuda.shared.array((PPC, CPP), np.float32, alignment=128)
        for i in range(cuda.threadIdx.x, PPC * CPP, cuda.blockDim.x):
            tile[i // CPP, i % CPP] = tile_in[i // CPP, i % CPP]
        ac.fence_proxy_async("shared::cta")
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:
            c = (c4[0], c4[1], c4[2], c4[3])
            if reduce:
                ac.cp_reduce_async_bulk_tensor_im2col(tmap, c, tile, "add")
            else:
                ac.cp_async_bulk_tensor_store_im2col(tmap, c, tile)
            ac.bulk_commit_group()
            ac.bulk_wait_group(0)

    rng = np.random.default_rng()
    base = rng.standard_normal((1, 7, 6, 8)).astype(np.float32)
    lo, up = ((0, 0), (0, 0)) if corners == "zero" else ac.conv_corners((3, 3), padding=1)
    tile = rng.standard_normal((PPC, CPP)).astype(np.float32)
    d = cuda.to_device(base)
    tmap = ac.TensorMap.im2col(d, channels_per_pixel=CPP, pixels_per_column=PPC, lower_corner=lo,
                               upper_corner=up, element_strides=(1, stride, stride, 1))
    at = COORDS[coords]
    k[1, 32](tmap, tile, np.array(at, np.int32), op == "add")
    got = d.copy_to_host()
    want = base.copy()
    numpy_im2col_store(want, tile, at, tmap.spec, (lambda o, n: o + n) if op == "add" else None)
    bad = int(np.sum(got != want))
    return {"verdict": "ok" if bad == 0 else "wrong", "wrong_elements": bad,
            "changed_elements": int(np.sum(got != base))}


def run_case(case: tuple) -> dict:
    corners, stride, coords, op = case
    p = subprocess.run([sys.executable, __file__, "one", corners, str(stride), coords, op],
                       capture_output=True, text=True, timeout=120)
    out = {"corners": corners, "stride": stride, "coords": coords, "op": op}
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("{")), None)
    if line:
        out.update(json.loads(line))
    else:
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
        out.update({"verdict": "error", "error": tail[0][-300:]})
    return out


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "one":
        _, _, corners, stride, coords, op = sys.argv
        print(json.dumps(one(corners, int(stride), coords, op)))
        return 0
    cases = list(itertools.product(CORNERS, STRIDES, COORDS, OPS))
    with ThreadPoolExecutor(6) as ex:
        for r in ex.map(run_case, cases):
            print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
