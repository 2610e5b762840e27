#!/bin/bash
# The GPU run of 2026-12-02 (second session) for the tensor-core GEMMs: the GPU
# tests of the GEMMs and the pipelines (the cluster pipeline's CTA-scope
# release), racecheck and synccheck of the 2-CTA cluster GEMM, the hgemm and
# fp8 suites, then the alternation-order A/B (ab_order.py).  Run from the
# repository root on a machine with an H200; wheels the machine lacks
# (numpy < 2.5) in $WHL (default .whl/).  Logs go to $OUT (default ./gpu-out).
OUT=${OUT:-gpu-out}; WHL=${WHL:-.whl}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$WHL"/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
T0=$(date +%s)
B=/tmp/bench-hgemm
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,driver_version --format=csv; date -u; } > "$OUT/info.txt" 2>&1
( timeout 120 python3 -m pytest -q -ra -p no:cacheprovider tests/gpu/test_hgemm_gpu.py \
    tests/gpu/test_fp8_gemm_gpu.py tests/gpu/test_pipeline_gpu.py tests/gpu/test_cluster_gpu.py \
    -n 8 --timeout 110 > "$OUT/gpu-tests.log" 2>&1; echo "tests rc=$? t=$(( $(date +%s) - T0 ))" >> "$OUT/gpu-tests.log" ) &
TESTS=$!
SAN="tests/gpu/test_hgemm_gpu.py::test_hgemm_cluster_matches_numpy[bf16-300-264-1000-2]"
for tool in racecheck synccheck; do
  echo "== $tool" >> "$OUT/sanitize.log"
  NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS=600000000000 timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 \
    python3 -m pytest -q -p no:cacheprovider "$SAN" -W ignore -rf --tb=line >> "$OUT/sanitize.log" 2>&1
  echo "$tool rc=$? t=$(( $(date +%s) - T0 ))" >> "$OUT/sanitize.log"
done
wait $TESTS
timeout 170 python3 -m numba_asynccopy.bench --only hgemm,fp8 --out "$B" --budget-s 160 > "$OUT/bench.log" 2>&1
echo "bench rc=$? t=$(( $(date +%s) - T0 ))" >> "$OUT/bench.log"
cp "$B/results.json" "$OUT/results.json" 2>/dev/null
timeout 60 python3 benchmarks/h200-2026-12-02b/hgemm/ab_order.py "$B/twins.so" > "$OUT/ab-order.jsonl" 2> "$OUT/ab-order.err"
echo "ab rc=$? t=$(( $(date +%s) - T0 ))" >> "$OUT/info.txt"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >> "$OUT/info.txt" 2>&1
echo "total t=$(( $(date +%s) - T0 ))" >> "$OUT/info.txt"
