#!/bin/bash
# The im2col-corners checked-mode trap on the GPU, and the im2col GPU tests (run from the
# repository root on a machine with an H200; logs to $OUT).
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
cat > /tmp/trap.py <<'PY'
import numpy as np
from numba import cuda
import numba_asynccopy as ac
from tests import im2col_cases as cases
with ac.checked_mode(True):
    k = cases.make_store_block(16, 8)
    d = cuda.to_device(np.zeros((1, 7, 6, 8), np.float32))
    lo, up = ac.conv_corners((3, 3), padding=1)
    t = ac.TensorMap.im2col(d, channels_per_pixel=8, pixels_per_column=16, lower_corner=lo, upper_corner=up)
    k[1, 32](t, np.ones((16, 8), np.float32), np.array([0, 1, 1, 0], np.int32), False)
    cuda.synchronize()
print("NO TRAP")
PY
timeout 60 python3 /tmp/trap.py > $OUT/trap.log 2>&1; echo "trap rc=$?" >> $OUT/trap.log
timeout 90 python3 -m pytest -q -ra -p no:cacheprovider tests/gpu/test_im2col_store_gpu.py tests/gpu/test_im2col_gpu.py -n 6 > $OUT/im2col.log 2>&1; echo "rc=$?" >> $OUT/im2col.log
