#!/bin/bash
# launch_query_ab.py in 5 processes, pinned to one CPU.  Repository root, an
# H200 with torch; wheels the machine lacks in .whl/.
OUT=${OUT:-gpu-out}; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
CPU=$(( $(nproc --all) - 1 ))
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; echo "pinned to CPU $CPU"; } > $OUT/query-info.txt
for r in 1 2 3 4 5; do
  timeout 100 taskset -c $CPU python3 -P benchmarks/h200-2026-12-04/launch_query_ab.py >> $OUT/query-ab.jsonl 2>> $OUT/query-ab.err
done
python3 - $OUT/query-ab.jsonl <<'PY'
import json, statistics, sys
q = []
for l in open(sys.argv[1]):
    d = json.loads(l); q.append(d["query_over_bindings"])
    print(d["query_resolved"], d["sources_differ"], d["checked"], d["same_context"],
          {k: round(v) for k, v in d["lookup_ns"].items()},
          {k: round(v, 3) for k, v in d["ratio_to_torch"].items()}, round(d["query_over_bindings"], 4))
print("query / bindings: mean", round(statistics.mean(q), 4), "min", round(min(q), 4), "max", round(max(q), 4))
PY
