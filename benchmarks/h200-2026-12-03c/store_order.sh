#!/bin/bash
# wgmma_store's unmasked epilogue row by row (this tree) against the
# interleaved rows it had ($BEFORE: the previous numba_asynccopy/wgmma.py):
# the GPU suite with the change, then conv_ab.py on the two 56x56
# configurations, the two trees alternated process by process.  Results:
# store-order/.
BEFORE=${BEFORE:-.devwt/wgmma_before.py}
OUT=${OUT:-gpu-out}; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
B=numba_asynccopy/bench; mkdir -p /tmp/tw
( nvcc -O3 -std=c++17 --shared -Xcompiler -fPIC -lineinfo -gencode=arch=compute_90a,code=sm_90a \
    -o /tmp/tw/twins.so $B/twins.cu $B/twins_bulk.cu $B/twins_idioms.cu $B/twins_mma.cu $B/twins_hgemm.cu $B/twins_conv.cu > /tmp/tw/b.log 2>&1 ) &
BUILD=$!
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $OUT/info.txt
timeout 280 python3 -m pytest -q -ra -p no:cacheprovider tests/gpu tests/test_plugin_pairs.py -n 14 \
    --timeout 150 --durations=5 > $OUT/gpu-suite.log 2>&1; echo "suite rc=$?" >> $OUT/gpu-suite.log
wait $BUILD
cp numba_asynccopy/wgmma.py /tmp/wgmma_after.py
ab() {  # $1 tree (after|before) $2 tag, rest: conv_ab.py arguments
  tree=$1; tag=$2; shift 2
  if [ $tree = before ]; then cp $BEFORE numba_asynccopy/wgmma.py; else cp /tmp/wgmma_after.py numba_asynccopy/wgmma.py; fi
  timeout 90 python3 benchmarks/h200-2026-12-03/conv_ab.py --twins-lib /tmp/tw/twins.so --out /tmp/ab --rounds 5 "$@" 2>&1 | tail -1 > /tmp/last.json
  python3 -c "import json; d=json.load(open('/tmp/last.json')); print('$tree', '$tag', d['ratio_vs_twin']['ours'], d['median_us'])" >> $OUT/conv-ab.txt
}
for rep in 1 2; do
  for tree in after before; do
    ab $tree b32 --batch 32
    ab $tree b128 --batch 128 --set consumers=1 --set mtiles=2
  done
done
cp /tmp/wgmma_after.py numba_asynccopy/wgmma.py
tail -3 $OUT/gpu-suite.log; cat $OUT/conv-ab.txt
