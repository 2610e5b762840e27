#!/bin/bash
OUT=${OUT:-gpu-out}; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONUNBUFFERED=1
T0=$(date +%s)
CPU=$(nproc --all); CPU=$((CPU-1))
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; echo "pinned to CPU $CPU"; } > $OUT/info.txt
for r in 1 2 3 4; do
  for tree in before after; do
    if [ $tree = before ]; then P=/tmp/site:$PWD/.devwt/before:$PWD; else P=/tmp/site:$PWD; fi
    PYTHONPATH=$P timeout 120 taskset -c $CPU python3 -P benchmarks/h200-2026-12-03b/launch_go.py >> $OUT/launch-go.jsonl 2>> $OUT/launch-go.err
  done
done
echo "probe t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
for r in 1 2; do
  for tree in before after; do
    if [ $tree = before ]; then P=/tmp/site:$PWD/.devwt/before:$PWD; else P=/tmp/site:$PWD; fi
    PYTHONPATH=$P timeout 100 taskset -c $CPU python3 -P -m numba_asynccopy.bench --only cluster --no-twins --out /tmp/bc-$tree-$r --budget-s 90 > $OUT/bench-$tree-$r.log 2>&1
    cp /tmp/bc-$tree-$r/results.json $OUT/results-$tree-$r.json 2>/dev/null
    echo "bench $tree $r t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
  done
done
cat $OUT/info.txt
for f in $OUT/bench-*.log; do echo "== $f"; grep -E "^\| launch, ac.launch  |^\| launch, ac.launch with|^\| launch, Numba's own through" $f | cut -c1-80,155-260; done
python3 - <<'PY' $OUT/launch-go.jsonl
import json,sys
for l in open(sys.argv[1]):
    d=json.loads(l); print(d["generated_go"], d["sums_equal"], round(d["ac_launch_python_ns"]), {k: round(v,3) for k,v in d["median_us"].items()}, round(d["ratio"],3))
PY
