"""The rule texts are public: pin each rule of the rulebook, as the compiler
and the simulator render it (Python values) and as a checked-mode trap
embeds it in PTX (printf conversions), to the literal text users see."""

from __future__ import annotations

import pytest

from numba_asynccopy import _rules

# name -> [(fields, expected text)], the expected texts copied from the messages
# of the release before the rulebook
PINNED: dict[str, list[tuple[dict, str]]] = {
    "wgmma_fragment": [(dict(name="acc", got="float32"),
                        "`acc` must be an f32 accumulator fragment of an m64nN MMA, a tuple of "
                        "N/2 float32 (ac.wgmma_zero(N)) for N in 8..256 step 8, got float32")],
    "wgmma_fragment_f16": [(dict(), "or an f16 accumulator fragment, a tuple of N/4 uint32 "
                            "(packed f16 pairs, ac.wgmma_zero(N, dtype='f16'))")],
    "wgmma_acc_dtype": [(dict(dtype="bf16"),
                         "dtype='bf16' inputs accumulate in f32 only, but `acc` is an f16 "
                         "fragment: make it with ac.wgmma_zero(N) (f16 accumulation takes "
                         "'f16', 'e4m3' or 'e5m2' inputs)")],
    "wgmma_no_transpose": [(dict(dtype="tf32"), "dtype='tf32' operands are K-major only: "
                            "`trans_a`/`trans_b` must be False")],
    "wgmma_view": [(dict(name="tile", ndim=3, major="K", swizzle=128, geometry="[rows, 32 bytes]"),
                    "`tile` is 3-D; a major='K' descriptor with swizzle=128 reads a view of "
                    "shape [rows, 32 bytes]")],
    "wgmma_stride": [(dict(name="tile", axis=0, stride="%lld", expect=128, swizzle=128, major="K"),
                      "axis 0 of `tile` has stride %lld bytes where the major='K', swizzle=128 "
                      "layout needs 128")],
    "wgmma_base_align": [(dict(name="tile", addr="0x%llx", align=1024, swizzle=128),
                          "`tile` (shared address 0x%llx) does not start in row 0 of a 1024-byte "
                          "aligned atom as swizzle=128 needs (align the tile with "
                          "cuda.shared.array(..., alignment=1024))")],
    "setmaxnreg_count": [(dict(value=20), "`r`=20 must be a multiple of 8 in 24..256")],
    "wgmma_acc_in_flight": [(dict(what="reading", issued="k.py:3"),
                             "reading the accumulator fragment of a wgmma_mma_async issued at "
                             "k.py:3 before a wgmma_wait_group covers it: its registers are still "
                             "being written (acc = ac.wgmma_wait_group(n, acc) first)")],
    "wgmma_tile_in_flight": [(dict(what="a store", issued="k.py:3"),
                              "a store overlaps a shared tile that the wgmma_mma_async issued at "
                              "k.py:3 still reads: wait for it (wgmma_wait_group) before writing "
                              "or refilling the tile")],
    "wgmma_swizzle_mismatch": [(dict(name="a", swizzle=64, written=128, how="a TMA load"),
                                "the descriptor of `a` says swizzle=64 but the tile was written "
                                "with swizzle=128 (a TMA load): make the descriptor's swizzle the "
                                "TensorMap's")],
    "wgmma_no_fence": [(dict(why="no fence yet"),
                        "wgmma_mma_async on accumulators written since the last wgmma_fence (no "
                        "fence yet): call acc = ac.wgmma_fence(acc) before the first MMA and "
                        "after changing the fragment")],
    "wgmma_shape": [(dict(name="b", got="8 rows", n=64, k=16, need="64 rows"),
                     "`b` describes 8 rows; this m64n64k16 MMA reads 64 rows")],
    "tensor_map_mode": [
        (dict(mode=1, need=0),
         "`tensor_map` has load mode 1 but this copy needs mode 0 (0: a tiled map, "
         "ac.TensorMap(...); 1: an im2col map, ac.TensorMap.im2col(...))"),
        (dict(mode="%lld", need=1),
         "`tensor_map` has load mode %lld but this copy needs mode 1 (0: a tiled map, "
         "ac.TensorMap(...); 1: an im2col map, ac.TensorMap.im2col(...))"),
    ],
    "im2col_offset": [
        (dict(axis=1, value=-1), "`offsets`[1]=-1 is outside 0..65535 (im2col offsets are "
         "unsigned 16-bit)"),
        (dict(axis=0, value="%lld"), "`offsets`[0]=%lld is outside 0..65535 (im2col offsets are "
         "unsigned 16-bit)"),
    ],
    "im2col_start": [
        (dict(axis=2, coord=9, lo=-1, hi=6),
         "`coords`[2]=9 is outside the im2col bounding box -1..6 of that axis (the first pixel "
         "of a load must lie in it; PTX leaves anything else undefined)"),
    ],
    "im2col_store_corners": [
        (dict(), "an im2col store or reduction needs a map whose pixel-box corners are all zero "
         "(lower_corner and upper_corner of zeros); this map's are not (on the H200 every store "
         "and reduction through such a map failed the launch with an illegal instruction)"),
    ],
    "outside_range": [
        (dict(name="count", value=1048576, lo=1, hi=1048575),
         "`count`=1048576 is outside 1..1048575"),
        (dict(name="nbytes", value="%u", lo=0, hi=1048575), "`nbytes`=%u is outside 0..1048575"),
        (dict(name="count", value=0, lo=1, hi="2**20-1"), "`count`=0 is outside 1..2**20-1"),
        (dict(name="count", value="%lld", lo=1, hi=1048575), "`count`=%lld is outside 1..1048575"),
    ],
    "src_size_outside": [
        (dict(size=17, chunk=16), "src_size=17 is outside 0..chunk_bytes (16)"),
        (dict(size="%u", chunk=8), "src_size=%u is outside 0..chunk_bytes (8)"),
    ],
    "fraction_range": [
        (dict(fraction="1.500000"), "`fraction`=1.500000 must be in (0, 1]"),
        (dict(fraction="%f"), "`fraction`=%f must be in (0, 1]"),
    ],
    "wait_count_negative": [(dict(count=-1), "`n` must be >= 0, got -1")],
    "bool_constant": [(dict(name="noinc", value=repr(1)), "`noinc` must be a bool constant, got 1")],
    "not_in_space": [
        (dict(name="dst", space="shared"), "`dst` is not in shared memory"),
        (dict(name="src", space="global"), "`src` is not in global memory"),
    ],
    "local_shared_view": [
        (dict(name="view", got="float32"),
         "`view` must be a local shared-memory array view, got float32"),
    ],
    "row_of": [(dict(name="src"), "a row of `src`")],
    "not_aligned": [
        (dict(name="mbar", align=8, addr="0x1004"), "`mbar` is not 8-byte aligned (address 0x1004)"),
        (dict(name="src", align=16, addr="%p"), "`src` is not 16-byte aligned (address %p)"),
    ],
    "parity_bit": [
        (dict(name="parity", value=2), "`parity`=2 must be 0 or 1"),
        (dict(name="parity", value="%lld"), "`parity`=%lld must be 0 or 1"),
    ],
    "barrier_empty": [
        (dict(name="bar"), "`bar` is an empty view; its first element is the barrier"),
    ],
    "outside_cluster": [
        (dict(name="cta_rank", value=5, n=2, last=1),
         "`cta_rank`=5 is outside the cluster (2 CTAs: ranks 0..1)"),
        (dict(name="rank", value="%lld", n="%u", last="%u"),
         "`rank`=%lld is outside the cluster (%u CTAs: ranks 0..%u)"),
    ],
    "cluster_dims_in_device_function": [
        (dict(dims=(2, 1, 1), function="helper"),
         "cluster_dims(2, 1, 1) is called in device function `helper`; the cluster shape belongs "
         "to the kernel: call cluster_dims in the kernel body"),
    ],
    "compile_time_constant": [
        (dict(name="chunk_bytes", kind="int", got="a run-time int64"),
         "`chunk_bytes` must be a compile-time constant (int literal), got a run-time int64"),
    ],
    "last_axis_strided": [
        (dict(name="src", stride=8), "the last axis of `src` is not contiguous (stride 8 bytes)"),
        (dict(name="dst", stride="%lld"), "the last axis of `dst` is not contiguous (stride %lld bytes)"),
    ],
    "row_not_whole_chunks": [
        (dict(name="dst", row=12, chunk=8),
         "the last axis of `dst` (12 bytes) is not a whole number of 8-byte chunks"),
        (dict(name="src", row="%lld", chunk=16),
         "the last axis of `src` (%lld bytes) is not a whole number of 16-byte chunks"),
    ],
    "chunk_misaligned": [
        (dict(name="src", align=16, base="0x7f0008"),
         "a chunk of `src` is not 16-byte aligned (base 0x7f0008); start views at a multiple of "
         "16 bytes and align shared arrays with cuda.shared.array(..., alignment=...)"),
        (dict(name="dst", align=16, base="%p"),
         "a chunk of `dst` is not 16-byte aligned (base %p); start views at a multiple of "
         "16 bytes and align shared arrays with cuda.shared.array(..., alignment=...)"),
    ],
    "repeat_axis_differs": [
        (dict(axis=0, a_name="dst", a=4, b_name="src", b=8),
         "repeat axis 0 differs: `dst` has 4, `src` has 8"),
        (dict(axis=1, a_name="dst", a="%lld", b_name="src", b="%lld"),
         "repeat axis 1 differs: `dst` has %lld, `src` has %lld"),
    ],
    "chunk_counts_differ": [
        (dict(a_name="dst", a_dtype="float32", a=1, b_name="src", b_dtype="float64", b=2),
         "chunk counts differ: `dst` (float32) has 1 chunks per row, `src` (float64) has 2"),
        (dict(a_name="dst", a_dtype="float32", a="%lld", b_name="src", b_dtype="float64", b="%lld"),
         "chunk counts differ: `dst` (float32) has %lld chunks per row, `src` (float64) has %lld"),
    ],
    "pipeline_where": [
        (dict(slot=2, step=5, phase=0, pipeline="tma pipeline (3 stages, 1 copy per stage, 32 consumers)"),
         "slot 2 (step 5, phase 0) of a tma pipeline (3 stages, 1 copy per stage, 32 consumers)"),
        (dict(slot="%u", step="%u", phase="%u", pipeline="group pipeline (4 stages)"),
         "slot %u (step %u, phase %u) of a group pipeline (4 stages)"),
    ],
    "pipeline_wait_timeout": [
        (dict(ns=300000000, where="slot %u (step %u, phase %u) of a X", side="its producers' commit",
              word="0x%016llx"),
         "timed out after 300000000 ns on slot %u (step %u, phase %u) of a X: its producers' commit "
         "never came (barrier word 0x%016llx)"),
    ],
    "pipeline_bars": [
        (dict(held="%lld", pipeline="cp_async pipeline (4 stages, 32 producers, 32 consumers)", need=8),
         "`bars` holds %lld barriers; a cp_async pipeline (4 stages, 32 producers, 32 consumers) needs 8"),
        (dict(held=4, pipeline="X", need=8), "`bars` holds 4 barriers; a X needs 8"),
    ],
    "pipeline_threads": [
        (dict(threads="%u", pipeline="X", need=33),
         "the block has %u threads; a X is built for 33 producer and consumer threads"),
    ],
    "pipeline_cluster_size": [
        (dict(ctas=4, pipeline="X", need=2),
         "the cluster has 4 CTAs; a X needs a cluster of exactly 2 CTAs (launch with "
         "ac.cluster_dims(2) or ac.launch(..., cluster=...))"),
    ],
    "pipeline_slot_in_use": [
        (dict(where="slot 0 (step 0, phase 1) of a X", why="this thread already acquired state step 0 "
              "(advance the state after each stage)"),
         "slot 0 (step 0, phase 1) of a X: second producer_acquire of a slot still in use: this thread "
         "already acquired state step 0 (advance the state after each stage)"),
    ],
    "pipeline_fill_done": [
        (dict(parity="%u"), "its full barrier already completed the phase (parity %u) this fill is to "
                            "complete (acquired again without advancing the state)"),
    ],
    "pipeline_release_without_wait": [
        (dict(where="slot 0 (step 0, phase 0) of a X", why=" in this thread"),
         "slot 0 (step 0, phase 0) of a X: consumer_release without a consumer_wait of this state in "
         "this thread"),
    ],
    "pipeline_fill_pending": [
        (dict(parity="%u"), ": the slot's fill has not landed (its full barrier's phase of parity %u is "
                            "incomplete)"),
    ],
    "bulk_size_multiple": [
        (dict(what="`dst`", size=24),
         "`dst` is 24 bytes; a bulk copy moves a positive multiple of 16 bytes"),
        (dict(what="a row of `src`", size="%lld"),
         "a row of `src` is %lld bytes; a bulk copy moves a positive multiple of 16 bytes"),
    ],
    "bulk_size_limit": [
        (dict(what="`dst`", size=1 << 32), "`dst` is 4294967296 bytes; a bulk copy moves less than 2**32"),
    ],
    "byte_counts_differ": [
        (dict(a_name="dst", a=256, b_name="src", b=512), "`dst` has 256 bytes, `src` has 512"),
        (dict(a_name="dst", a="%lld", b_name="src", b="%lld"), "`dst` has %lld bytes, `src` has %lld"),
    ],
    "tx_overflow": [
        (dict(extra=16, barrier="the barrier (bars, byte offset 0)", phase=2, expected=240,
              completed=256, copies="cp_async_bulk_g2s issued at k.py:9 (256 bytes)"),
         "16 transaction bytes more than the barrier (bars, byte offset 0) expects arrived in "
         "phase 2 (expect_tx announced 240 bytes, copies and complete_tx bring 256): the byte "
         "count of a copy or of expect_tx is wrong (on the GPU the phase never completes, or the "
         "extra bytes complete a later phase early); the copies of this phase: cp_async_bulk_g2s "
         "issued at k.py:9 (256 bytes)"),
    ],
    "dst_in_flight": [
        (dict(name="dst", where="sh, byte offset 0", other="cp_async issued at k.py:7"),
         "`dst` (sh, byte offset 0) overlaps the destination of a copy still in flight "
         "(cp_async issued at k.py:7): wait for that copy (its group or its barrier phase) before "
         "copying into its destination again; the two copies may land in either order"),
    ],
    "src_being_read": [
        (dict(name="dst", where="sh, byte offset 64", other="cp_async_bulk_s2g issued at k.py:8"),
         "`dst` (sh, byte offset 64) overlaps the shared source of a bulk store that may still "
         "read it (cp_async_bulk_s2g issued at k.py:8): call bulk_wait_group(n, read=True) "
         "before copying into it"),
    ],
    "barrier_unfenced_cluster": [
        (dict(barrier="the barrier (bars, byte offset 0, in CTA 0)", user=1, use="mbarrier_arrive",
              why="its initialising thread has not called fence_mbarrier_init() since mbarrier_init"),
         "the barrier (bars, byte offset 0, in CTA 0) is used by CTA 1 (mbarrier_arrive) but its "
         "initialisation is not visible to that CTA: its initialising thread has not called "
         "fence_mbarrier_init() since mbarrier_init. After mbarrier_init, the initialising thread "
         "calls fence_mbarrier_init(), then the cluster synchronizes (cluster_sync(), or "
         "cluster_arrive() + cluster_wait()) before another CTA uses the barrier"),
    ],
    "barrier_unfenced": [
        (dict(barrier="the barrier (bars, byte offset 0)", use="cp_async_bulk_g2s"),
         "the barrier (bars, byte offset 0) is used by the async proxy (cp_async_bulk_g2s) but "
         "no fence made its initialisation visible to the async proxy: after mbarrier_init, the "
         "initialising thread calls fence_proxy_async(\"shared::cta\") (fence_mbarrier_init() "
         "for a barrier other CTAs use too), then cuda.syncthreads(), before the first copy that "
         "completes on it"),
    ],
    "tensor_map_words": [
        (dict(words=4, need=16), "`tensor_map` has 4 words, not the 16 of an ac.TensorMap buffer"),
    ],
    "tensor_map_magic": [
        (dict(), "`tensor_map` is not an ac.TensorMap buffer (bad magic word)"),
    ],
    "tensor_rank": [
        (dict(rank=2, map_rank=3), "`coords` has 2 entries but the tensor map has rank 3"),
        (dict(rank=2, map_rank="%lld"), "`coords` has 2 entries but the tensor map has rank %lld"),
    ],
    "tensor_itemsize": [
        (dict(name="dst", itemsize=4, map_itemsize=2),
         "`dst` has 4-byte elements but the tensor map's are 2 bytes"),
    ],
    "tensor_box_bytes": [
        (dict(name="dst", nbytes=1024, box=2048),
         "`dst` has 1024 bytes but one box of the tensor map has 2048"),
    ],
    "tensor_smem_align": [
        (dict(name="dst", addr="0x40", align=128),
         "`dst` (shared address 0x40) is not 128-byte aligned as this tensor map needs (128, or "
         "8 x the swizzle span); use cuda.shared.array(..., alignment=...)"),
        (dict(name="src", addr="0x%llx", align="%lld"),
         "`src` (shared address 0x%llx) is not %lld-byte aligned as this tensor map needs (128, or "
         "8 x the swizzle span); use cuda.shared.array(..., alignment=...)"),
    ],
    "tensor_dtype": [
        (dict(name="src", code=7, map_code=6),
         "the reduction reads `src` as CUtensorMapDataType 7 but the tensor map holds type 6"),
    ],
    "tensor_not_dense": [
        (dict(name="dst", axis=1, stride=8, expect=4),
         "`dst` is not C-contiguous: axis 1 has stride 8 bytes, expected 4 "
         "(a TMA tile is one dense box)"),
    ],
    "tensor_inner_coord": [
        (dict(coord=3, itemsize=4),
         "the innermost coordinate 3 x 4-byte elements is not a multiple of 16 bytes "
         "(the copy engine needs 16-byte aligned box starts)"),
        (dict(coord="%d", itemsize="%lld"),
         "the innermost coordinate %d x %lld-byte elements is not a multiple of 16 bytes "
         "(the copy engine needs 16-byte aligned box starts)"),
    ],
    "warp_not_converged": [
        (dict(instr="ldmatrix.sync.aligned.m8n8.x4.shared.b16", why="the active mask is 0x%08x"),
         "ldmatrix.sync.aligned.m8n8.x4.shared.b16 is warp-collective (.sync.aligned): all 32 lanes "
         "of the warp must execute it together, at the same place; the active mask is 0x%08x"),
    ],
    "warp_active_mask": [(dict(mask="0x%08x"), "the active mask is 0x%08x")],
    "tensor_negative_coord": [
        (dict(axis=0, coord=-4),
         "`coords`[0]=-4 is negative; tensor stores and reductions need coordinates >= 0 "
         "(boxes may still run past the far edges)"),
    ],
}


def test_every_rule_is_pinned():
    assert set(PINNED) == set(_rules.RULES)


@pytest.mark.parametrize("name,fields,expected",
                         [(n, f, e) for n, cases in PINNED.items() for f, e in cases],
                         ids=lambda x: x if isinstance(x, str) and len(x) < 30 else "")
def test_rule_text(name, fields, expected):
    assert _rules.RULES[name](**fields) == expected


def test_a_rule_names_its_fields():
    with pytest.raises(TypeError, match="takes fields"):
        _rules.not_in_space(name="dst")


def test_limits_are_defined_once():
    import numba_asynccopy.bulk as bulk
    import numba_asynccopy.cluster_copy as cluster_copy
    import numba_asynccopy.mbarrier as mbarrier

    assert _rules.MAX_TX == _rules.MAX_COUNT == 2**20 - 1
    assert _rules.STATIC_SHARED_LIMIT == 49152
    assert mbarrier.MAX_TX is cluster_copy.MAX_TX is _rules.MAX_TX
    assert mbarrier.MAX_COUNT is _rules.MAX_COUNT
    assert bulk.BULK_ALIGN is cluster_copy.BULK_ALIGN is _rules.BULK_ALIGN == 16
