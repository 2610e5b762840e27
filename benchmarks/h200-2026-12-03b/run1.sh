#!/bin/bash
OUT=${OUT:-gpu-out}; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONUNBUFFERED=1
T0=$(date +%s)
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; git log -1 --format=%H 2>/dev/null; } > $OUT/info.txt
for r in 1 2; do
  for tree in before after; do
    if [ $tree = before ]; then P=/tmp/site:$PWD/.devwt/before:$PWD; else P=/tmp/site:$PWD; fi
    PYTHONPATH=$P timeout 120 python3 -P benchmarks/h200-2026-12-03b/launch_go.py >> $OUT/launch-go.jsonl 2>> $OUT/launch-go.err
  done
done
echo "probe t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
export PYTHONPATH=/tmp/site:$PWD
timeout 260 python3 -m pytest -q -ra -p no:cacheprovider tests/gpu tests/test_plugin_pairs.py -n 14 \
    --timeout 150 --durations=5 > $OUT/gpu-suite.log 2>&1; echo "suite rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
timeout 200 python3 -m numba_asynccopy.bench --only cluster --no-twins --out /tmp/bc --budget-s 180 > $OUT/bench.log 2>&1; echo "bench rc=$? t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
cp /tmp/bc/results.json $OUT/results.json 2>/dev/null
tail -2 $OUT/gpu-suite.log; cat $OUT/info.txt; grep -E "launch" $OUT/bench.log | cut -c1-250
python3 - <<'PY' $OUT/launch-go.jsonl
import json,sys
for l in open(sys.argv[1]):
    d=json.loads(l); print(d["generated_go"], d["sums_equal"], round(d["ac_launch_python_ns"]), {k: round(v,3) for k,v in d["median_us"].items()}, round(d["ratio"],3))
PY
