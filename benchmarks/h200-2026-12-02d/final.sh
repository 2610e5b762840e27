#!/bin/bash
# The final GPU verification of 2026-12-02, fourth session (repository root,
# a machine with an H200; wheels it lacks, numpy < 2.5, in .whl/): the
# demo, the whole GPU suite, compute-sanitizer memcheck on the cp_async
# slice tests (the view lowering of the third session), then the idioms and
# stencil suites with the twins.  Logs in $OUT (at most 8 files).
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
T0=$(date +%s)
B=numba_asynccopy/bench
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; git log -1 --format=%h 2>/dev/null; } > $OUT/info.txt 2>&1
mkdir -p /tmp/tw
( nvcc -O3 -std=c++17 --shared -Xcompiler -fPIC -lineinfo -gencode=arch=compute_90a,code=sm_90a \
    -o /tmp/tw/twins.so $B/twins.cu $B/twins_bulk.cu $B/twins_idioms.cu $B/twins_mma.cu $B/twins_hgemm.cu \
    $B/twins_conv.cu > /tmp/tw/twins-build.log 2>&1; echo "twins rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt ) &
BUILD=$!
timeout 40 python3 -m numba_asynccopy > $OUT/demo.log 2>&1; echo "demo rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
timeout ${SUITE_S:-270} python3 -m pytest -q -ra -p no:cacheprovider tests/gpu tests/test_plugin_pairs.py -n 14 \
  --timeout 150 --durations=10 > $OUT/gpu-suite.log 2>&1; echo "suite rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/gpu-suite.log
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
  tests/gpu/test_cp_async_gpu.py -k "slice" -W ignore > $OUT/sanitize.log 2>&1; echo "memcheck rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/sanitize.log
wait $BUILD
timeout 130 python3 -m numba_asynccopy.bench --only idioms,stencil --out /tmp/bi --twins-lib /tmp/tw/twins.so \
  --budget-s 110 > $OUT/bench.log 2>&1; echo "bench rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
cp /tmp/bi/results.json $OUT/results.json 2>/dev/null
echo "total t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
