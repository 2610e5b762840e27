#!/bin/bash
# 2026-12-02, fourth session, on a machine with an H200 from the repository
# root (wheels it lacks, numpy < 2.5, in .whl/): the launch placement
# diagnosis (launch/launch_pin.py), ours and the twin under Nsight Compute
# on the conv2d layer whose twin row missed (56x56, batch 32, the row's
# configuration), the conv2d suite once more and the cluster suite (its
# launch rows, the fresh processes pinned to one CPU).  Logs in one tarball.
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
B=numba_asynccopy/bench
D=benchmarks/h200-2026-12-02c/conv2d
mkdir -p /tmp/tw
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv; nproc; nvidia-smi topo -m; date -u; } > $OUT/info.txt 2>&1
( nvcc -O3 -std=c++17 --shared -Xcompiler -fPIC -lineinfo -gencode=arch=compute_90a,code=sm_90a \
    -o /tmp/tw/twins.so $B/twins.cu $B/twins_bulk.cu $B/twins_idioms.cu $B/twins_mma.cu $B/twins_hgemm.cu \
    $B/twins_conv.cu > /tmp/tw/twins-build.log 2>&1; echo "twins rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt ) &
BUILD=$!
timeout ${PIN_S:-150} python3 -P benchmarks/h200-2026-12-02d/launch/launch_pin.py --rounds ${ROUNDS:-2} \
  > $OUT/launch-pin.jsonl 2> $OUT/launch-pin.err; echo "pin rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
wait $BUILD
timeout ${NCU_S:-100} ncu -k regex:conv --launch-skip 1 --launch-count 3 --section SpeedOfLight \
  --section WarpStateStats --section InstructionStats --section SourceCounters --section LaunchStats \
  --section Occupancy --metrics smsp__inst_executed.sum,lts__t_bytes.sum,gpc__cycles_elapsed.max \
  -o /tmp/ncu-pair python3 $D/ncu_pair.py /tmp/tw/twins.so ${NCU_CASE:-32 56 56 64 64 1 64 2 4 2 1 1} \
  > /tmp/ncu-run.txt 2>&1; echo "ncu rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
tail -5 /tmp/ncu-run.txt >> $OUT/info.txt
ncu -i /tmp/ncu-pair.ncu-rep --print-summary none > $OUT/ncu-pair.txt 2>&1
ncu -i /tmp/ncu-pair.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $OUT/ncu-source-sass.csv.gz
timeout ${BENCH_S:-80} python3 -m numba_asynccopy.bench --only conv2d --out /tmp/bc --twins-lib /tmp/tw/twins.so \
  --budget-s ${BUDGET_S:-65} > $OUT/bench-conv2d.log 2>&1; echo "bench rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
cp /tmp/bc/results.json $OUT/conv2d-results.json 2>/dev/null
timeout ${CLUSTER_S:-90} python3 -m numba_asynccopy.bench --only cluster --out /tmp/bk --twins-lib /tmp/tw/twins.so \
  --budget-s ${CBUDGET_S:-75} > $OUT/bench-cluster.log 2>&1; echo "cluster rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
cp /tmp/bk/results.json $OUT/cluster-results.json 2>/dev/null
echo "total t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
cd $OUT && tar czf logs.tgz --remove-files info.txt launch-pin.jsonl launch-pin.err ncu-pair.txt bench-conv2d.log \
  conv2d-results.json bench-cluster.log cluster-results.json 2>/dev/null; ls -la
