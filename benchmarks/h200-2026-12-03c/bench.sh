#!/bin/bash
# The tensor-core suites of the benchmark (conv2d, hgemm, fp8) with the
# row-by-row wgmma_store epilogue, twins built here.  Results: bench/.
source benchmarks/h200-2026-12-03c/setup.sh
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; } > $OUT/info.txt
timeout 480 python3 -m numba_asynccopy.bench --only conv2d,hgemm,fp8 --out /tmp/bc --twins-lib /tmp/tw/twins.so \
    --budget-s 420 > $OUT/bench.log 2>&1; echo "bench rc=$?" >> $OUT/info.txt
cp /tmp/bc/results.json $OUT/results.json 2>/dev/null
cat $OUT/info.txt; grep -E "conv2d|hgemm|fp8" $OUT/bench.log | cut -c1-200 | tail -30
