#!/bin/bash
# Nsight Compute of the tensor-core conv2d example and its CUDA C++ twin on
# the 56x56 layer (C = K = 64, 3x3, pad 1), at the configurations the sweep
# picks (batch 32: consumers=2 mtiles=1; batch 128: consumers=1 mtiles=2):
# the same few launches of conv_ab.py under ncu, both kernels profiled.
# Repository root, an H200; wheels it lacks in .whl/.  Results: ncu/.
source benchmarks/h200-2026-12-03c/setup.sh
S="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy --section InstructionStats"
run() {  # $1: tag, rest: conv_ab.py arguments; ours (conv_tiles) and the twin (conv_tc_tiles)
  tag=$1; shift
  for k in ^conv_tiles conv_tc; do
    timeout 200 ncu $S --csv --page details -k regex:"$k" --launch-skip 2 --launch-count 2 \
      python3 benchmarks/h200-2026-12-03/conv_ab.py --twins-lib /tmp/tw/twins.so --out /tmp/ab-$tag \
      --launches 3 --rounds 2 "$@" > $OUT/ncu-$tag-${k#^}.csv 2> $OUT/ncu-$tag-${k#^}.err; echo "$tag $k rc=$?"
  done
}
run b32 --batch 32
run b128 --batch 128 --set consumers=1 --set mtiles=2
# the timing, without ncu, for the same configurations
timeout 100 python3 benchmarks/h200-2026-12-03/conv_ab.py --twins-lib /tmp/tw/twins.so --out /tmp/t32 --rounds 7 --batch 32 > $OUT/ab-b32.log 2>&1
timeout 100 python3 benchmarks/h200-2026-12-03/conv_ab.py --twins-lib /tmp/tw/twins.so --out /tmp/t128 --rounds 7 --batch 128 --set consumers=1 --set mtiles=2 > $OUT/ab-b128.log 2>&1
for f in $OUT/ab-*.log; do echo $f; tail -1 $f; done
