#!/bin/bash
# The final GPU verification of 2026-12-02, second session (run from the
# repository root on a machine with an H200; wheels the machine lacks,
# numpy < 2.5, in .whl/): the demo, the whole GPU suite, the notebooks in GPU
# mode and compute-sanitizer on the GEMMs and convolutions side by side, then
# one more conv2d suite run.  Logs go to $OUT (default ./gpu-out).
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
timeout 60 python3 -m numba_asynccopy > $OUT/demo.log 2>&1; echo "demo rc=$?" >> $OUT/info.txt
( timeout 330 python3 -m pytest -q -ra -p no:cacheprovider tests/gpu tests/test_plugin_pairs.py -n 12 --timeout 240 ${EXTRA_TESTS} > $OUT/gpu-suite.log 2>&1; echo "suite rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/gpu-suite.log ) &
SUITE=$!
( timeout 200 python3 -m pytest -q -ra -p no:cacheprovider tests/notebooks -m gpu -n 3 --timeout 190 > $OUT/notebooks.log 2>&1; echo "notebooks rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/notebooks.log ) &
NB=$!
G=tests/gpu
SAN="$G/test_hgemm_gpu.py::test_hgemm_persistent_matches_numpy[256-bf16-300-264-1000-3] $G/test_hgemm_gpu.py::test_hgemm_cluster_matches_numpy[bf16-300-264-1000-2] $G/test_conv2d_tc_gpu.py::test_conv2d_tc_tile_walk_matches_numpy[shape1-stride1-padding1-dilation1-bf16-bf16-64-2-2-1-True-5] $G/test_conv2d_tc_gpu.py::test_conv2d_tc_tile_walk_matches_numpy[shape2-stride2-padding2-dilation2-bf16-float32-128-2-1-2-True-None] ${EXTRA_SAN}"
for tool in memcheck racecheck synccheck; do
  echo "== $tool" >> $OUT/sanitize.log
  NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS=600000000000 timeout 110 compute-sanitizer --tool $tool --error-exitcode 9 \
    python3 -m pytest -q -p no:cacheprovider $SAN -W ignore -rf --tb=line >> $OUT/sanitize.log 2>&1
  echo "$tool rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/sanitize.log
done
wait $SUITE $NB $BUILD
if [ -n "$CONV" ]; then
  timeout ${BENCH_S:-130} python3 -m numba_asynccopy.bench --only conv2d --out /tmp/bc --twins-lib /tmp/tw/twins.so \
    --budget-s ${BUDGET_S:-110} > $OUT/bench-conv2d.log 2>&1; echo "bench rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/bench-conv2d.log
  cp /tmp/bc/results.json $OUT/conv2d-results.json 2>/dev/null
fi
echo "total t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
