#!/usr/bin/env bash
# Every GPU command of the 2026-12-02 run, in one script, on a machine with an
# H200 (run from the repository root, the package importable, python3 the one
# with torch):
#   1. the benchmark (`make bench` without the tensor-core GEMM suites), idioms first;
#   2. the facts A/B: the two-mbarrier-ring and slice ports beside their CUDA C++
#      originals with every fact, none, and all but range() (NUMBA_ASYNCCOPY_FACTS),
#      and three rewrites of the mbarrier port that locate its gap (ab_facts.py);
#   3. Nsight Compute (full set) of those two ports, their originals and the
#      slice port written as a while loop.
# Logs and results go to $OUT (default ./gpu-out): run.log, bench.log,
# ab-facts.jsonl, ncu-details.csv, ncu.ncu-rep and bench.tgz (the benchmark's
# folder: results.json, the table, per-suite logs, PTX/SASS).
set -u
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
B=/tmp/bench-out
exec > >(tee "$OUT/run.log") 2>&1
t0=$(date +%s)
stamp() { echo "== $(( $(date +%s) - t0 )) s: $*"; }
stamp start; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
python3 -c "import numba, numba_cuda, numpy; print('numba-cuda', numba_cuda.__version__, 'numpy', numpy.__version__)"

stamp bench
timeout 170 python3 -m numba_asynccopy.bench --out "$B" --budget-s "${BENCH_BUDGET_S:-125}" \
  --only idioms,cluster,copy,bulk,tma,stencil,sgemm > "$OUT/bench.log" 2>&1
echo "bench rc $?"; tail -75 "$OUT/bench.log"

stamp ab-facts
for f in all none sreg,assume,unroll; do
  NUMBA_ASYNCCOPY_FACTS=$f timeout 40 python3 -m numba_asynccopy.bench.ab_facts --twins "$B/twins.so" \
    --reps 5 mbarrier slice
done > "$OUT/ab-facts.jsonl" 2> "$OUT/ab-facts.err"
# the mbarrier port rewritten with uint32 counters / chunk views (where its gap is)
timeout 40 python3 -m numba_asynccopy.bench.ab_facts --twins "$B/twins.so" --reps 5 \
  mbarrier_u32 mbarrier_view mbarrier_u32_view >> "$OUT/ab-facts.jsonl" 2>> "$OUT/ab-facts.err"
cat "$OUT/ab-facts.jsonl"; tail -3 "$OUT/ab-facts.err"

stamp ncu
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
K="regex:(idioms8mbarrier|idioms5slice|14idiom_mbarrierB|11idiom_sliceB|17idiom_slice_whileB)"
timeout 90 "$NCU" --clock-control none --set full --kernel-name-base mangled -k "$K" -c 10 -f -o "$OUT/ncu" \
  python3 -m numba_asynccopy.bench.ncu_idioms --twins "$B/twins.so" > "$B/ncu.log" 2>&1
echo "ncu rc $?"; tail -5 "$B/ncu.log"
"$NCU" --import "$OUT/ncu.ncu-rep" --csv --page details > "$OUT/ncu-details.csv" 2>&1
ls -la "$OUT"
tar czf "$OUT/bench.tgz" --exclude twins.so -C "$(dirname $B)" "$(basename $B)"
stamp done
