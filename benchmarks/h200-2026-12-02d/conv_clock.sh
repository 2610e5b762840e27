#!/bin/bash
# conv_clock.py twice on the 56x56 batch-32 layer (the row's configuration):
# alternated batches with the SM clock and power sampled every 10 ms, then
# ncu with the GPU's own clocks (no lock, no cache flush).  Needs /tmp/tw/twins.so.
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
D=benchmarks/h200-2026-12-02d
CASE=${CASE:-32 56 56 64 64 1 64 2 4 2 1 1}
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 10 > $OUT/conv-clocks.csv &
SMI=$!
timeout 60 python3 $D/conv_clock.py /tmp/tw/twins.so $CASE > $OUT/conv-clock.jsonl 2>&1
kill $SMI
timeout 90 ncu --clock-control none --cache-control none -k regex:conv --launch-skip 2 --launch-count 8 \
  --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,smsp__inst_executed.sum \
  python3 $D/conv_clock.py /tmp/tw/twins.so $CASE --ncu > $OUT/conv-ncu-free.txt 2>&1
echo "conv_clock done"
