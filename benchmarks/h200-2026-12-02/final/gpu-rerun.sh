#!/bin/bash
# The rerun after the im2col store fault poisoned one worker of the suite, and
# the im2col store probe (run from the repository root; logs to $OUT).
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
T0=$(date +%s)
date -u > $OUT/info.txt
( timeout 150 python3 -m pytest -q -ra -p no:cacheprovider tests/gpu/test_interop_gpu.py tests/gpu/test_mma_gpu.py tests/gpu/test_pipeline_gpu.py tests/gpu/test_hgemm_gpu.py tests/gpu/test_conv2d_tc_gpu.py tests/gpu/test_im2col_store_gpu.py tests/gpu/test_fp8_gemm_gpu.py -k "not padding_and_stride" -n 10 --timeout 140 > $OUT/rerun.log 2>&1; echo "rerun rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/rerun.log ) &
timeout 100 python3 benchmarks/h200-2026-12-02/im2col-store/probe_im2col_store.py > $OUT/probe.jsonl 2> $OUT/probe.err; echo "probe rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
wait
echo "total t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
