#!/bin/bash
# Warp stall reasons (per issued instruction) of the tensor-core conv2d
# example and its CUDA C++ twin on the 56x56 layer at the two configurations
# the sweep picks (as ncu_conv.sh).  Results: ncu/stalls-*.csv.
source benchmarks/h200-2026-12-03c/setup.sh
M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,smsp__inst_executed.sum,sm__cycles_elapsed.avg,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,smsp__inst_executed_op_global_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum'
for cfg in "b32:--batch 32" "b128:--batch 128 --set consumers=1 --set mtiles=2"; do
  tag=${cfg%%:*}; args=${cfg#*:}
  for k in ^conv_tiles conv_tc; do
    timeout 200 ncu --metrics "$M" --csv --page raw -k regex:"$k" --launch-skip 2 --launch-count 1 \
      python3 benchmarks/h200-2026-12-03/conv_ab.py --twins-lib /tmp/tw/twins.so --out /tmp/ab-$tag \
      --launches 3 --rounds 2 $args 2>&1 | grep -v '^{' >> $OUT/stalls-$tag.csv; echo "$tag $k rc=$?"
  done
done
