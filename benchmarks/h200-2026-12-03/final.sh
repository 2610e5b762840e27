#!/bin/bash
# The GPU verification of 2026-12-03 (repository root, a machine with an
# H200; wheels it lacks, numpy < 2.5, in .whl/).  Phase "suite": the demo,
# the whole GPU suite, compute-sanitizer memcheck on the launch and conv2d
# tests (the new host launch path and the conv2d consumer).  Phase "bench":
# the launch probe after the host-path change, the conv2d A/B against the
# twin (BEFORE=path of the previous conv2d.py, optional), and the conv2d and
# cluster (launch rows) suites of the benchmark.  Logs in $OUT.
PHASE=${1:-suite}
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
T0=$(date +%s)
B=numba_asynccopy/bench
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; } > $OUT/info-$PHASE.txt 2>&1
build_twins() {
  mkdir -p /tmp/tw
  [ -f /tmp/tw/twins.so ] && return 0
  nvcc -O3 -std=c++17 --shared -Xcompiler -fPIC -lineinfo -gencode=arch=compute_90a,code=sm_90a \
    -o /tmp/tw/twins.so $B/twins.cu $B/twins_bulk.cu $B/twins_idioms.cu $B/twins_mma.cu $B/twins_hgemm.cu \
    $B/twins_conv.cu > /tmp/tw/twins-build.log 2>&1
  echo "twins rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info-$PHASE.txt
}
if [ "$PHASE" = suite ]; then
  build_twins &
  BUILD=$!
  timeout 40 python3 -m numba_asynccopy > $OUT/demo.log 2>&1; echo "demo rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info-$PHASE.txt
  timeout ${SUITE_S:-280} python3 -m pytest -q -ra -p no:cacheprovider tests/gpu tests/test_plugin_pairs.py -n 14 \
    --timeout 150 --durations=10 > $OUT/gpu-suite.log 2>&1; echo "suite rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/gpu-suite.log
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
    tests/gpu/test_launch_validation_gpu.py tests/gpu/test_conv2d_tc_gpu.py -W ignore > $OUT/sanitize.log 2>&1
  echo "memcheck rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/sanitize.log
  wait $BUILD
else
  build_twins
  timeout 90 python3 benchmarks/h200-2026-12-03/launch_after.py > $OUT/launch-after.json 2> $OUT/launch-after.err
  echo "launch_after rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info-$PHASE.txt
  V=(); [ -n "$BEFORE" ] && V=(--variant "$BEFORE")
  timeout 150 python3 benchmarks/h200-2026-12-03/conv_ab.py --out /tmp/ab --twins-lib /tmp/tw/twins.so "${V[@]}" \
    > $OUT/conv-ab.log 2>&1; echo "conv_ab rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info-$PHASE.txt
  timeout 250 python3 -m numba_asynccopy.bench --only conv2d,cluster --out /tmp/bc --twins-lib /tmp/tw/twins.so \
    --budget-s 230 > $OUT/bench.log 2>&1; echo "bench rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info-$PHASE.txt
  cp /tmp/bc/results.json $OUT/results.json 2>/dev/null
fi
echo "total t=$(( $(date +%s) - T0 ))" >> $OUT/info-$PHASE.txt
