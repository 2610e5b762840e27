#!/bin/bash
# Repository root, an H200 with torch; wheels the machine lacks in .whl/.
OUT=${OUT:-gpu-out}; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
CPU=$(( $(nproc --all) - 1 ))
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv; date -u; echo "pinned to CPU $CPU"; } > $OUT/info.txt
for r in 1 2 3 4; do
  timeout 120 taskset -c $CPU python3 -P benchmarks/h200-2026-12-04/launch_variants.py >> $OUT/variants.jsonl 2>> $OUT/variants.err
done
python3 - $OUT/variants.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    print({k: round(v, 3) for k, v in d["ratio_to_torch"].items()}, d["checked"], d["other_contexts"])
PY
