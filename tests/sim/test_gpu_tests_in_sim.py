"""The GPU layer's functional tests, run unchanged in the simulator.

The functions are the ones in ``tests/gpu`` (same kernels, same fresh random
inputs, outputs poisoned before launch); only the trap tests stay on the GPU
(their simulator counterparts are in ``test_sim_rules.py``).  They run under
the worst-case schedule, so a missing wait would read poison.
"""

from ..gpu import test_cp_async_gpu as _cp
from ..gpu import test_mbarrier_gpu as _mb

test_seed_examples = _cp.test_seed_examples
test_cta_scope_tile_3d_block_and_bit_copy = _cp.test_cta_scope_tile_3d_block_and_bit_copy
test_src_size_prefix_and_zero_fill = _cp.test_src_size_prefix_and_zero_fill
test_ignore_src_zero_fills_whole_chunks = _cp.test_ignore_src_zero_fills_whole_chunks
test_wait_group_retires_the_older_groups = _cp.test_wait_group_retires_the_older_groups
test_cache_policy_and_prefetch_copy_exactly = _cp.test_cache_policy_and_prefetch_copy_exactly
test_staged_copy_example = _cp.test_staged_copy_example

test_producer_consumer_ring = _mb.test_producer_consumer_ring
test_test_wait_try_wait_blocking_wait_counts_and_tx = _mb.test_test_wait_try_wait_blocking_wait_counts_and_tx
test_arrive_drop_changes_later_phases_and_counts_above_one = (
    _mb.test_arrive_drop_changes_later_phases_and_counts_above_one)
test_elect_sync_elects_one_lane_per_warp = _mb.test_elect_sync_elects_one_lane_per_warp
test_fences_run = _mb.test_fences_run
