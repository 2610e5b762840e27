#!/bin/bash
# The conv2d run of 2026-12-02 (second session), from the repository root on
# a machine with an H200 (wheels the machine lacks, numpy < 2.5, in
# ${WHEELS:-.whl}/): the twins built in the background with the runner's nvcc
# command while the conv2d GPU tests run, then the conv2d suite with that
# library.  Logs go to $OUT (default ./gpu-out).
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site ${WHEELS:-.whl}/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
B=numba_asynccopy/bench
mkdir -p /tmp/tw
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv; nvcc --version | tail -2; date -u; } > $OUT/info.txt 2>&1
( nvcc -O3 -std=c++17 --shared -Xcompiler -fPIC -lineinfo -gencode=arch=compute_90a,code=sm_90a -Xptxas -v \
    -o /tmp/tw/twins.so $B/twins.cu $B/twins_bulk.cu $B/twins_idioms.cu $B/twins_mma.cu $B/twins_hgemm.cu \
    $B/twins_conv.cu > /tmp/tw/twins-build.log 2>&1; echo "twins rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt ) &
BUILD=$!
timeout ${TEST_S:-100} python3 -m pytest -q -ra -p no:cacheprovider tests/gpu/test_conv2d_tc_gpu.py -n 6 --timeout 90 \
  > $OUT/pytest.log 2>&1; echo "pytest rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/pytest.log
wait $BUILD
cp /tmp/tw/twins-build.log $OUT/ 2>/dev/null
timeout ${BENCH_S:-200} python3 -m numba_asynccopy.bench --only conv2d --out /tmp/bc --twins-lib /tmp/tw/twins.so \
  --budget-s ${BUDGET_S:-170} > $OUT/bench.log 2>&1; echo "bench rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/bench.log
cp /tmp/bc/results.json $OUT/results.json 2>/dev/null
cp /tmp/bc/suite-conv2d.stderr /tmp/bc/suite-conv2d.log $OUT/ 2>/dev/null
# NCU=1: ours and the twin on the 56x56 batch-128 layer in its swept configuration, under ncu
if [ -n "$NCU" ]; then
  timeout ${NCU_S:-60} ncu -k regex:conv --launch-skip 1 --launch-count 3 --section SpeedOfLight \
    --section WarpStateStats --section LaunchStats --section InstructionStats \
    --metrics smsp__inst_executed.sum,lts__t_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
    python3 benchmarks/h200-2026-12-02b/conv2d/ncu_pair.py /tmp/tw/twins.so ${NCU_CASE:-128 56 56 64 64 1 64 1 4 2 2 1} \
    > $OUT/ncu-pair.txt 2>&1; echo "ncu rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
fi
echo "total t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
