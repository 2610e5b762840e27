#!/bin/bash
# The final GPU verification of 2026-12-02 (run from the repository root on a
# machine with an H200; wheels the machine lacks, numpy < 2.5, in .whl/).
# Logs go to $OUT (default ./gpu-out).
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
T0=$(date +%s)
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; } > $OUT/info.txt 2>&1
timeout 60 python3 -m numba_asynccopy > $OUT/demo.log 2>&1; echo "demo rc=$?" >> $OUT/info.txt
( timeout 330 python3 -m pytest -q -ra -p no:cacheprovider tests/gpu tests/test_plugin_pairs.py -n 12 --timeout 240 ${EXTRA_TESTS} > $OUT/gpu-suite.log 2>&1; echo "suite rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/gpu-suite.log ) &
SUITE=$!
( timeout 200 python3 -m pytest -q -ra -p no:cacheprovider tests/notebooks -m gpu -n 3 --timeout 190 > $OUT/notebooks.log 2>&1; echo "notebooks rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/notebooks.log ) &
NB=$!
SAN="tests/gpu/test_hgemm_gpu.py::test_hgemm_persistent_matches_numpy[256-bf16-300-264-1000-3] tests/gpu/test_hgemm_gpu.py::test_hgemm_cluster_matches_numpy[bf16-300-264-1000-2] tests/gpu/test_conv2d_tc_gpu.py::test_conv2d_tc_matches_numpy[shape0-stride0-padding0-dilation0-bf16-64-2-1] tests/gpu/test_conv2d_tc_gpu.py::test_conv2d_tc_matches_numpy[shape7-stride7-padding7-dilation7-bf16-64-2-2] ${EXTRA_SAN}"
for tool in memcheck racecheck synccheck; do
  echo "== $tool" >> $OUT/sanitize.log
  NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS=600000000000 timeout 110 compute-sanitizer --tool $tool --error-exitcode 9 \
    python3 -m pytest -q -p no:cacheprovider $SAN -W ignore -rf --tb=line >> $OUT/sanitize.log 2>&1
  echo "$tool rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/sanitize.log
done
wait $SUITE $NB
timeout 80 python3 -m numba_asynccopy.bench --only fp8 --no-twins --out /tmp/bfp8 > $OUT/bench-fp8.log 2>&1; echo "fp8 rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/bench-fp8.log
cp /tmp/bfp8/results.json $OUT/bench-fp8.json 2>/dev/null
echo "total t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
