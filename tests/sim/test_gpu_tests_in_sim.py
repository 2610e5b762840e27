"""The GPU layer's functional tests, run unchanged in the simulator.

The functions are the ones in ``tests/gpu`` (same kernels, same fresh random
inputs, outputs poisoned before launch): cp.async, mbarriers, 1-D bulk copies
and TMA; only the cluster (multicast) and trap tests stay on the GPU
(their simulator counterparts are in ``test_sim_rules.py`` and
``test_sim_bulk.py``).  They run under
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

# bulk copies and TMA: everything but clusters (multicast) and the trap tests
# (their simulator counterparts are in test_sim_bulk.py)
from ..gpu import test_bulk_gpu as _bulk  # noqa: E402
from ..gpu import test_tma_gpu as _tma  # noqa: E402

test_bulk_round_trip_sizes = _bulk.test_round_trip_sizes
test_bulk_strided_rows_load_and_store = _bulk.test_strided_rows_load_and_store
test_bulk_stores_reuse_shared_memory_after_read_wait = _bulk.test_stores_reuse_shared_memory_after_read_wait
test_bulk_every_reduction_against_numpy = _bulk.test_every_reduction_against_numpy
test_bulk_prefetch_and_cache_hints_leave_data_exact = _bulk.test_prefetch_and_cache_hints_leave_data_exact

test_tma_2d_tile_load_and_store = _tma.test_2d_tile_load_and_store
test_tma_3d_tile_load_and_store_with_oob = _tma.test_3d_tile_load_and_store_with_oob
test_tma_swizzle_modes_match_the_documented_pattern = _tma.test_swizzle_modes_match_the_documented_pattern
test_tma_swizzle_changes_the_layout = _tma.test_swizzle_changes_the_layout
test_tma_map_of_a_strided_view_keeps_the_tensor_alive = (
    _tma.test_tensor_map_of_a_strided_view_keeps_the_tensor_alive)
test_tma_tensor_reduction = _tma.test_tensor_reduction

# the plain (no cp.async) stencil, the benchmark's baseline: its unsigned
# coordinates must still give every boundary and interior point exactly
import pytest  # noqa: E402

from ..gpu import test_examples_gpu as _ex  # noqa: E402


@pytest.mark.parametrize("shape", _ex.STENCIL_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_stencil_plain(shape):
    _ex.test_stencil("plain", shape)


def test_staged_copy_runs():
    # run mode (tiles per block) under the worst-case schedule: small shapes
    _ex.test_staged_copy_runs((2, 4, 64, 3, 1), False)
    _ex.test_staged_copy_runs((3, 8, 64, 1, 2), False)


from ..gpu import test_async_examples_gpu as _aex  # noqa: E402


def test_bulk_copy_runs():
    # the bulk-copy example in run mode: a run shorter than the ring and runs
    # of one tile (count < stages), a partial last run, a spare block
    _aex.test_bulk_copy_runs((3, 64, 2), False)
    _aex.test_bulk_copy_runs((3, 16, 1), False)
    _aex.test_bulk_copy_runs((2, 64, 5), False)


def test_tma_copy_runs():
    # the TMA example in run mode: a run shorter than the ring, runs of one
    # box, a partial last run, a spare block
    _aex.test_tma_copy_runs((3, (8, 4), 2), False)
    _aex.test_tma_copy_runs((3, (8, 4), 1), False)
    _aex.test_tma_copy_runs((2, (8, 16), 5), False)
