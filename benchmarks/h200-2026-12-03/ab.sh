#!/bin/bash
# The conv2d A/B of 2026-12-03 (repository root, an H200; wheels it lacks in
# .whl/): ours against the twin and three other revisions of
# examples/conv2d.py in $VARIANTS (default .devwt): conv2d_before.py (the
# landed example: git show b7586c1:numba_asynccopy/examples/conv2d.py),
# conv2d_walk_only.py (its tile walk stepping the tile coordinates with a
# carry instead of a division, the plain k-loop) and conv2d_unroll_only.py
# (the k-loop unrolled by two, the landed walk: what unroll=2 is now), at
# the two 56x56 configurations the sweep picks, batches 128 and 32.
# Results: ab/ (ab3-*.log; first-*.log an earlier run, without the two
# one-change variants).
VARIANTS=${VARIANTS:-.devwt}
OUT=${OUT:-gpu-out}; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
B=numba_asynccopy/bench; mkdir -p /tmp/tw
[ -f /tmp/tw/twins.so ] || nvcc -O3 -std=c++17 --shared -Xcompiler -fPIC -lineinfo -gencode=arch=compute_90a,code=sm_90a \
    -o /tmp/tw/twins.so $B/twins.cu $B/twins_bulk.cu $B/twins_idioms.cu $B/twins_mma.cu $B/twins_hgemm.cu $B/twins_conv.cu > /tmp/tw/b.log 2>&1
V=(--variant $VARIANTS/conv2d_before.py --variant $VARIANTS/conv2d_walk_only.py --variant $VARIANTS/conv2d_unroll_only.py --twins-lib /tmp/tw/twins.so --out $OUT --rounds 7)
for b in 128 32; do
 timeout 140 python3 benchmarks/h200-2026-12-03/conv_ab.py "${V[@]}" --batch $b --set consumers=1 --set mtiles=2 > $OUT/ab3-b$b-c1m2.log 2>&1; echo "rc=$?"
 timeout 140 python3 benchmarks/h200-2026-12-03/conv_ab.py "${V[@]}" --batch $b > $OUT/ab3-b$b-c2m1.log 2>&1; echo "rc=$?"
done
for f in $OUT/ab3-*.log; do echo $f; tail -1 $f | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['ratio_vs_twin'], d['median_us'])"; done
