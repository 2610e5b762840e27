#!/bin/bash
# The last GPU run of 2026-12-03 (repository root, an H200; wheels it lacks
# in .whl/): the demo, the whole GPU suite, then the conv2d and cluster
# (launch rows) suites of the benchmark with the twins.  Results: final/.
OUT=${OUT:-gpu-out}; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
T0=$(date +%s)
B=numba_asynccopy/bench; mkdir -p /tmp/tw
( [ -f /tmp/tw/twins.so ] || nvcc -O3 -std=c++17 --shared -Xcompiler -fPIC -lineinfo -gencode=arch=compute_90a,code=sm_90a \
    -o /tmp/tw/twins.so $B/twins.cu $B/twins_bulk.cu $B/twins_idioms.cu $B/twins_mma.cu $B/twins_hgemm.cu $B/twins_conv.cu > /tmp/tw/b.log 2>&1 ) &
BUILD=$!
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; } > $OUT/info.txt
timeout 40 python3 -m numba_asynccopy > $OUT/demo.log 2>&1; echo "demo rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
timeout 260 python3 -m pytest -q -ra -p no:cacheprovider tests/gpu tests/test_plugin_pairs.py -n 14 \
    --timeout 150 --durations=5 > $OUT/gpu-suite.log 2>&1; echo "suite rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/gpu-suite.log
wait $BUILD
timeout 260 python3 -m numba_asynccopy.bench --only conv2d,cluster --out /tmp/bc --twins-lib /tmp/tw/twins.so \
    --budget-s 240 > $OUT/bench.log 2>&1; echo "bench rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
cp /tmp/bc/results.json $OUT/results.json 2>/dev/null
tail -2 $OUT/gpu-suite.log; cat $OUT/info.txt; grep -E "conv2d bf16|launch" $OUT/bench.log | cut -c1-250
