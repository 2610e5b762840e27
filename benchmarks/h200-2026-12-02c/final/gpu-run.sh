#!/bin/bash
# The final GPU verification of 2026-12-02, third session (run from the
# repository root on a machine with an H200; wheels the machine lacks,
# numpy < 2.5, in .whl/): the demo, the whole GPU suite (the CUDA C++ twins
# built beside it; TESTS: a part of it), then the conv2d suite alone on the
# GPU.  Logs go to $OUT (default ./gpu-out).  About 250 s.
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
T0=$(date +%s)
B=numba_asynccopy/bench
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; } > $OUT/info.txt 2>&1
mkdir -p /tmp/tw
( nvcc -O3 -std=c++17 --shared -Xcompiler -fPIC -lineinfo -gencode=arch=compute_90a,code=sm_90a \
    -o /tmp/tw/twins.so $B/twins.cu $B/twins_bulk.cu $B/twins_idioms.cu $B/twins_mma.cu $B/twins_hgemm.cu \
    $B/twins_conv.cu > /tmp/tw/twins-build.log 2>&1; echo "twins rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt ) &
BUILD=$!
timeout 40 python3 -m numba_asynccopy > $OUT/demo.log 2>&1; echo "demo rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
timeout ${SUITE_S:-190} python3 -m pytest -q -ra -p no:cacheprovider ${TESTS:-tests/gpu tests/test_plugin_pairs.py} -n 14 \
  --timeout 150 --durations=15 > $OUT/gpu-suite.log 2>&1; echo "suite rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/gpu-suite.log
wait $BUILD
cp /tmp/tw/twins-build.log $OUT/ 2>/dev/null
timeout ${BENCH_S:-75} python3 -m numba_asynccopy.bench --only conv2d --out /tmp/bc --twins-lib /tmp/tw/twins.so \
  --budget-s ${BUDGET_S:-60} > $OUT/bench-conv2d.log 2>&1; echo "bench rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/bench-conv2d.log
cp /tmp/bc/results.json $OUT/conv2d-results.json 2>/dev/null
echo "total t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
