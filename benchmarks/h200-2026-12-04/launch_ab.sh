#!/bin/bash
# The context query that keeps the GIL, A/B: an export of the previous
# commit's package in .devwt/before ("before") against this tree ("after"),
# alternating process by process, pinned to one CPU; then the benchmark's
# launch rows (suite cluster) with this tree.  Repository root, an H200 with
# torch; wheels the machine lacks in .whl/.
OUT=${OUT:-gpu-out}; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONUNBUFFERED=1
T0=$(date +%s)
CPU=$(( $(nproc --all) - 1 ))
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; echo "pinned to CPU $CPU"; } > $OUT/info.txt
for r in 1 2 3 4 5; do
  for tree in before after; do
    if [ $tree = before ]; then P=/tmp/site:$PWD/.devwt/before:$PWD; else P=/tmp/site:$PWD; fi
    echo "{\"tree\": \"$tree\", \"run\": $r, \"result\": $(PYTHONPATH=$P timeout 120 taskset -c $CPU python3 -P benchmarks/h200-2026-12-03b/launch_go.py 2>> $OUT/launch-go.err)}" >> $OUT/launch-go.jsonl
  done
done
echo "probe t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
PYTHONPATH=/tmp/site:$PWD timeout 150 taskset -c $CPU python3 -P -m numba_asynccopy.bench --only cluster --no-twins --out /tmp/bc --budget-s 120 > $OUT/bench-cluster.log 2>&1
cp /tmp/bc/results.json $OUT/cluster-results.json 2>/dev/null
echo "bench t=$(( $(date +%s) - T0 ))" >> $OUT/info.txt
cat $OUT/info.txt
grep -E "^\| launch" $OUT/bench-cluster.log | cut -c1-200
python3 - $OUT/launch-go.jsonl <<'PY'
import json, statistics, sys
by = {}
for l in open(sys.argv[1]):
    d = json.loads(l); r = d["result"]
    by.setdefault(d["tree"], []).append(r["ratio"])
    print(d["tree"], d["run"], r["sums_equal"], round(r["ac_launch_python_ns"]), {k: round(v, 3) for k, v in r["median_us"].items()}, round(r["ratio"], 3))
for t, v in by.items():
    print(t, "mean ratio", round(statistics.mean(v), 4), "min", round(min(v), 3), "max", round(max(v), 3))
PY
