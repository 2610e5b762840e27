#!/usr/bin/env bash
# The perf GPU run for the slice lowering and the launch path (not run
# yet).  On a machine with an H200, from the
# repository root with the package importable and python3 the one with
# torch, about 300 s:
#   1. the idioms suite (the slice lowering: every port beside its original,
#      3 alternated rounds) and the cluster suite (the launch rows: ac.launch,
#      torch.add, the bare cuda.core launcher, stock vs imported processes);
#   2. launch_split.py: ac.launch's host time split by subtraction (its
#      driver call alone through cuda.bindings and through ctypes);
#   3. the facts A/B of the ports the lowering moved, every fact and all but
#      range() (NUMBA_ASYNCCOPY_FACTS), with the benchmark's twins.so;
#   4. the rows the 2026-12-02 runs left unmeasured: sgemm (twins, 8192^3)
#      and tma, with what is left of the budget.
# The SM clock is sampled every 200 ms throughout (clocks.csv).
set -u
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
B=/tmp/bench-out
exec > >(tee "$OUT/run.log") 2>&1
t0=$(date +%s)
stamp() { echo "== $(( $(date +%s) - t0 )) s: $*"; }
stamp start; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader -lms 200 > "$OUT/clocks.csv" 2>/dev/null &
SMI=$!

stamp idioms+cluster
timeout 120 python3 -m numba_asynccopy.bench --out "$B" --budget-s 100 --only idioms,cluster > "$OUT/bench.log" 2>&1
echo "bench rc $?"; tail -3 "$OUT/bench.log"
cp "$B/results.json" "$OUT/results.json" 2>/dev/null

stamp launch-split
timeout 40 python3 benchmarks/h200-2026-12-02c/perf/launch_split.py > "$OUT/launch-split.json" 2> "$OUT/launch-split.err"
echo "launch-split rc $?"; cat "$OUT/launch-split.err" | tail -8

stamp ab-facts
PORTS="single slice pipeline runtime_depth mbarrier slice_while mbarrier_u32 mbarrier_view mbarrier_u32_view"
timeout 40 python3 -m numba_asynccopy.bench.ab_facts --twins "$B/twins.so" --reps 4 $PORTS \
  > "$OUT/ab-facts.jsonl" 2> "$OUT/ab.err"
echo "ab all rc $?"
NUMBA_ASYNCCOPY_FACTS=sreg,assume,unroll timeout 40 python3 -m numba_asynccopy.bench.ab_facts \
  --twins "$B/twins.so" --reps 4 single slice pipeline mbarrier >> "$OUT/ab-facts.jsonl" 2>> "$OUT/ab.err"
echo "ab no-range rc $?"
python3 - "$OUT/ab-facts.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        d = json.loads(line); print(f"{','.join(d['facts']) or 'none':22s} {d['port']:18s} {d['ratio']:.3f}")
PY

stamp sgemm+tma
timeout 170 python3 -m numba_asynccopy.bench --out "$B-2" --budget-s 150 --only sgemm,tma > "$OUT/bench-2.log" 2>&1
echo "bench-2 rc $?"; tail -3 "$OUT/bench-2.log"
cp "$B-2/results.json" "$OUT/results-2.json" 2>/dev/null
kill $SMI
stamp done
