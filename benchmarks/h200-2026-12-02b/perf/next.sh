#!/usr/bin/env bash
# Not run yet: the next GPU step for the slice and mbarrier ports (about
# 150 s on an H200).  Nsight Compute of the single-stage, slice and mbarrier
# ports with every fact and with all but range() (their CUDA C++ originals
# once), to see why the strength-reduced slice loop takes more L2 write
# sectors than the single-stage loop with the same store offsets.  Then the
# launch rows with each fresh process pinned to one CPU (taskset), stock and
# imported alternately, five of each, to see whether pinning removes the
# processes' two speeds.  Run from the repository root, package importable,
# python3 the one with torch; TWINS is a twins.so the benchmark built.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
TWINS=${TWINS:?set TWINS to the twins.so a benchmark run built}
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
K="regex:(idioms6single|idioms5slice|idioms8mbarrier|idiom_singleB|idiom_sliceB|idiom_mbarrierB)"
for f in all assume,sreg,unroll; do
  NUMBA_ASYNCCOPY_FACTS=$f timeout 90 "$NCU" --clock-control none --set full --kernel-name-base mangled \
    -k "$K" -c 12 -f -o "$OUT/ncu-${f//,/_}" python3 -m numba_asynccopy.bench.ncu_idioms --twins "$TWINS" \
    > "$OUT/ncu-${f//,/_}.log" 2>&1
  "$NCU" --import "$OUT/ncu-${f//,/_}.ncu-rep" --csv --page details > "$OUT/ncu-${f//,/_}.csv" 2>&1
done
CPU=$(python3 -c "import os; print(max(os.sched_getaffinity(0)))")
for r in 1 2 3 4 5; do
  for imp in "" --import-package; do
    taskset -c "$CPU" python3 -P numba_asynccopy/bench/launch_stock.py --reps 25 --path "$PWD" $imp
  done
done > "$OUT/launch-pinned.jsonl"
