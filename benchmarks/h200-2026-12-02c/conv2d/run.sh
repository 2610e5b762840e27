#!/bin/bash
# The conv2d run after the k-loop trim (2026-12-02, third session), from the
# repository root on a machine with an H200 (wheels the machine lacks, numpy
# < 2.5, in ${WHEELS:-.whl}/): the twins built in the background with the
# runner's nvcc command while the conv2d GPU tests run, then the conv2d
# suite with that library, then (HOST=1, the default) the host time a launch
# of ours and of the twin on the two smallest layers, then (NCU=1) ours and
# the twin under Nsight Compute on the 56x56 batch-128 layer with the SASS
# source counters (instructions executed a SASS line).  Logs go to $OUT
# (default ./gpu-out).  About 90 s on the H200 without NCU (twins 25-30 s,
# tests 20-25 s, suite 30 s, host probe 10 s), 60 s more with it.
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site ${WHEELS:-.whl}/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
B=numba_asynccopy/bench
D=benchmarks/h200-2026-12-02c/conv2d
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
if [ "${HOST:-1}" = 1 ]; then
  # the rows' winning configurations of 2026-12-02 09:36 UTC: 14x14 stride 2 and 56x56 at batch 32
  { timeout 30 python3 $D/host_probe.py /tmp/tw/twins.so 32 14 14 256 256 2 64 1 4 2 1 1
    timeout 30 python3 $D/host_probe.py /tmp/tw/twins.so 32 56 56 64 64 1 64 2 4 2 1 1; } \
    > $OUT/host-probe.txt 2>&1; echo "host probe rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
fi
if [ -n "$NCU" ]; then
  timeout ${NCU_S:-90} ncu -k regex:conv --launch-skip 1 --launch-count 3 --section SpeedOfLight \
    --section WarpStateStats --section InstructionStats --section SourceCounters \
    --metrics smsp__inst_executed.sum,lts__t_bytes.sum -o /tmp/ncu-pair \
    python3 $D/ncu_pair.py /tmp/tw/twins.so ${NCU_CASE:-128 56 56 64 64 1 64 1 4 2 2 1} \
    > $OUT/ncu-pair-run.txt 2>&1; echo "ncu rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
  ncu -i /tmp/ncu-pair.ncu-rep --print-summary none > $OUT/ncu-pair.txt 2>&1
  # instructions executed a SASS line, each kernel (a CSV a kernel, gzip'd)
  ncu -i /tmp/ncu-pair.ncu-rep --page source --csv --print-source sass 2> $OUT/ncu-source.err \
    | gzip > $OUT/ncu-source-sass.csv.gz
fi
echo "total t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
