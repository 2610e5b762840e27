#!/bin/bash
# The tensor-core suites of the benchmark (conv2d, hgemm, fp8) with the
# row-by-row wgmma_store epilogue, twins built here.  Results: bench/.
OUT=${OUT:-gpu-out}; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
B=numba_asynccopy/bench; mkdir -p /tmp/tw
nvcc -O3 -std=c++17 --shared -Xcompiler -fPIC -lineinfo -gencode=arch=compute_90a,code=sm_90a \
    -o /tmp/tw/twins.so $B/twins.cu $B/twins_bulk.cu $B/twins_idioms.cu $B/twins_mma.cu $B/twins_hgemm.cu $B/twins_conv.cu > /tmp/tw/b.log 2>&1
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; } > $OUT/info.txt
timeout 480 python3 -m numba_asynccopy.bench --only conv2d,hgemm,fp8 --out /tmp/bc --twins-lib /tmp/tw/twins.so \
    --budget-s 420 > $OUT/bench.log 2>&1; echo "bench rc=$?" >> $OUT/info.txt
cp /tmp/bc/results.json $OUT/results.json 2>/dev/null
cat $OUT/info.txt; grep -E "conv2d|hgemm|fp8" $OUT/bench.log | cut -c1-200 | tail -30
