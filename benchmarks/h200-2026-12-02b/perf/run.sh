#!/usr/bin/env bash
# The perf GPU run of 2026-12-02 (second session), on a machine with an H200,
# from the repository root with the package importable and python3 the one
# with torch:
#   1. launch_diag.py: Numba's own launch in fresh processes, stock / after
#      import / after import with numba-cuda's launch put back, cold and warm,
#      events and host time, a cProfile of each kind;
#   2. the benchmark's idioms, cluster (launch rows), stencil, sgemm and tma
#      suites (3 alternated rounds each row, as the runner does);
#   3. the facts A/B: every idiom port beside its CUDA C++ original with all
#      facts but range(), and with none (NUMBA_ASYNCCOPY_FACTS), using the
#      benchmark's twins.so.
# The SM clock is sampled every 200 ms throughout (clocks.csv).
set -u
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
B=/tmp/bench-out
exec > >(tee "$OUT/run.log") 2>&1
t0=$(date +%s)
stamp() { echo "== $(( $(date +%s) - t0 )) s: $*"; }
stamp start; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
python3 -c "import numba, numba_cuda, numpy; print('numba-cuda', numba_cuda.__version__, 'numpy', numpy.__version__)"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader -lms 200 > "$OUT/clocks.csv" 2>/dev/null &
SMI=$!

stamp launch-diag
timeout 35 python3 -P benchmarks/h200-2026-12-02b/perf/launch_diag.py --rounds 2 \
  --clocks /tmp/launch-clocks.csv > "$OUT/launch-diag.jsonl"
echo "launch-diag rc $?"

stamp bench
timeout 155 python3 -m numba_asynccopy.bench --out "$B" --budget-s "${BENCH_BUDGET_S:-125}" \
  --only idioms,cluster,stencil,sgemm,tma > "$OUT/bench.log" 2>&1
echo "bench rc $?"; tail -4 "$OUT/bench.log"
cp "$B/results.json" "$OUT/results.json" 2>/dev/null

stamp ab-facts
PORTS="single slice pipeline runtime_depth mbarrier vector bulk single_while slice_while vector_while bulk_while single_pragma vector_pragma"
NUMBA_ASYNCCOPY_FACTS=sreg,assume,unroll timeout 35 python3 -m numba_asynccopy.bench.ab_facts \
  --twins "$B/twins.so" --reps 4 $PORTS > "$OUT/ab-facts.jsonl" 2> /tmp/ab.err
echo "ab no-range rc $?"
NUMBA_ASYNCCOPY_FACTS=none timeout 15 python3 -m numba_asynccopy.bench.ab_facts \
  --twins "$B/twins.so" --reps 4 single slice pipeline runtime_depth mbarrier vector bulk >> "$OUT/ab-facts.jsonl" 2>> /tmp/ab.err
echo "ab none rc $?"; tail -3 /tmp/ab.err
python3 - "$OUT/ab-facts.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        d = json.loads(line); print(f"{','.join(d['facts']) or 'none':22s} {d['port']:15s} {d['ratio']:.3f}")
PY
kill $SMI
stamp done
