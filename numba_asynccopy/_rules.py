"""The rulebook: every rule text that more than one layer reports.

A broken contract is reported by up to three layers: a compile-time
``TypingError``, a checked-mode trap (a printf format embedded in the PTX)
and the simulator's :class:`~numba_asynccopy.sim.SimulatorError`.  They
must say the same thing, so each rule is written here once and each layer
renders it with its own value representation: the device passes printf
conversions (``value="%u"``), the compiler and the simulator pass Python
values (``value=1048576``).  The ``api: `` prefix (and, for traps and the
simulator, the block/thread suffix) is added by the layer that reports.

The texts are public (tests and users match on them): change one only on
purpose, with the pinned expectations in ``tests/cpu/test_rules_pinned.py``.

Example::

    from numba_asynccopy import _rules
    _rules.outside_range(name="count", value="%u", lo=1, hi=_rules.MAX_COUNT)
    # '`count`=%u is outside 1..1048575'
"""

from __future__ import annotations

from string import Formatter
from typing import Any

# --- limits -------------------------------------------------------------------

#: Static shared memory a kernel may declare without opting in (48 KiB).
STATIC_SHARED_LIMIT = 48 * 1024

#: An mbarrier expects at most 2**20 - 1 arrivals per phase.
MAX_COUNT = (1 << 20) - 1

#: The transaction-byte count of one mbarrier operation is below 2**20.
MAX_TX = (1 << 20) - 1

#: The suspend-time hint of ``mbarrier.try_wait`` is a 32-bit operand (nanoseconds).
MAX_SUSPEND_HINT = (1 << 32) - 1

#: Bulk (non-tensor) copies move multiples of this many bytes, 16-byte aligned.
BULK_ALIGN = 16


# --- rules --------------------------------------------------------------------


class Rule:
    """One rule text with named fields, rendered by every layer.

    A field takes whatever the layer prints there: a printf conversion such
    as ``"%lld"`` in a checked-mode trap, a Python value elsewhere.
    """

    def __init__(self, name: str, template: str):
        self.name = name
        self.template = template
        self.fields = tuple(f for _, f, _, _ in Formatter().parse(template) if f)

    def __call__(self, **values: Any) -> str:
        missing = set(self.fields) - set(values)
        extra = set(values) - set(self.fields)
        if missing or extra:
            raise TypeError(f"rule {self.name} takes fields {self.fields}, got {sorted(values)}")
        return self.template.format(**values)

    def error(self, exc_type: type, api: str, **values: Any) -> BaseException:
        """``exc_type("api: <this rule's text>")`` that carries this rule as
        ``.rule``: a layer that sorts errors asks which rule one breaks
        instead of reading its words.

        Example::

            raise compile_time_constant.error(TypingError, "cp_async", name="chunk_bytes",
                                              kind="int", got="a run-time int64")
        """
        e = exc_type(f"{api}: {self(**values)}")
        e.rule = self
        return e

    def __repr__(self) -> str:
        return f"Rule({self.name!r}, {self.template!r})"


#: every rule of the book, by name
RULES: dict[str, Rule] = {}


def _rule(name: str, template: str) -> Rule:
    RULES[name] = r = Rule(name, template)
    return r


# Values and ranges (compile time for literals, checked mode / simulator at run time).
outside_range = _rule("outside_range", "`{name}`={value} is outside {lo}..{hi}")
src_size_outside = _rule("src_size_outside", "src_size={size} is outside 0..chunk_bytes ({chunk})")
fraction_range = _rule("fraction_range", "`fraction`={fraction} must be in (0, 1]")
parity_bit = _rule("parity_bit", "`{name}`={value} must be 0 or 1")
wait_count_negative = _rule("wait_count_negative", "`n` must be >= 0, got {count}")
bool_constant = _rule("bool_constant", "`{name}` must be a bool constant, got {value}")

# Address spaces and alignment.
local_shared_view = _rule(
    "local_shared_view", "`{name}` must be a local shared-memory array view, got {got}")
not_in_space = _rule("not_in_space", "`{name}` is not in {space} memory")
not_aligned = _rule("not_aligned", "`{name}` is not {align}-byte aligned (address {addr})")
barrier_empty = _rule("barrier_empty", "`{name}` is an empty view; its first element is the barrier")
outside_cluster = _rule(
    "outside_cluster", "`{name}`={value} is outside the cluster ({n} CTAs: ranks 0..{last})")

# Arguments the PTX instruction takes as an immediate: the GPU compile needs a
# constant, and the simulator refuses a run-time value with the same words.
cluster_dims_in_device_function = _rule(
    "cluster_dims_in_device_function",
    "cluster_dims{dims} is called in device function `{function}`; the cluster shape belongs to "
    "the kernel: call cluster_dims in the kernel body")
compile_time_constant = _rule(
    "compile_time_constant", "`{name}` must be a compile-time constant ({kind} literal), got {got}")

# Chunked views (cp.async and row-by-row bulk copies).
last_axis_strided = _rule(
    "last_axis_strided", "the last axis of `{name}` is not contiguous (stride {stride} bytes)")
row_not_whole_chunks = _rule(
    "row_not_whole_chunks",
    "the last axis of `{name}` ({row} bytes) is not a whole number of {chunk}-byte chunks")
chunk_misaligned = _rule(
    "chunk_misaligned", "a chunk of `{name}` is not {align}-byte aligned (base {base}); start "
    "views at a multiple of {align} bytes and align shared arrays with "
    "cuda.shared.array(..., alignment=...)")
repeat_axis_differs = _rule(
    "repeat_axis_differs", "repeat axis {axis} differs: `{a_name}` has {a}, `{b_name}` has {b}")
chunk_counts_differ = _rule(
    "chunk_counts_differ",
    "chunk counts differ: `{a_name}` ({a_dtype}) has {a} chunks per row, `{b_name}` "
    "({b_dtype}) has {b}")

# Bulk copies.
bulk_size_multiple = _rule(
    "bulk_size_multiple", "{what} is {size} bytes; a bulk copy moves a positive multiple of 16 bytes")
bulk_size_limit = _rule("bulk_size_limit", "{what} is {size} bytes; a bulk copy moves less than 2**32")
#: the ``what`` of the two size rules for a view copied row by row
row_of = _rule("row_of", "a row of `{name}`")
byte_counts_differ = _rule("byte_counts_differ", "`{a_name}` has {a} bytes, `{b_name}` has {b}")

# Tensor (TMA) copies: the map buffer and the shared tile.
tensor_map_words = _rule(
    "tensor_map_words", "`tensor_map` has {words} words, not the {need} of an ac.TensorMap buffer")
tensor_map_magic = _rule(
    "tensor_map_magic", "`tensor_map` is not an ac.TensorMap buffer (bad magic word)")
tensor_rank = _rule("tensor_rank", "`coords` has {rank} entries but the tensor map has rank {map_rank}")
tensor_itemsize = _rule(
    "tensor_itemsize",
    "`{name}` has {itemsize}-byte elements but the tensor map's are {map_itemsize} bytes")
tensor_box_bytes = _rule(
    "tensor_box_bytes", "`{name}` has {nbytes} bytes but one box of the tensor map has {box}")
tensor_smem_align = _rule(
    "tensor_smem_align",
    "`{name}` (shared address {addr}) is not {align}-byte aligned as this tensor map needs "
    "(128, or 8 x the swizzle span); use cuda.shared.array(..., alignment=...)")
tensor_dtype = _rule(
    "tensor_dtype",
    "the reduction reads `{name}` as CUtensorMapDataType {code} but the tensor map holds "
    "type {map_code}")
tensor_not_dense = _rule(
    "tensor_not_dense",
    "`{name}` is not C-contiguous: axis {axis} has stride {stride} bytes, expected {expect} "
    "(a TMA tile is one dense box)")
tensor_inner_coord = _rule(
    "tensor_inner_coord",
    "the innermost coordinate {coord} x {itemsize}-byte elements is not a multiple of 16 bytes "
    "(the copy engine needs 16-byte aligned box starts)")
tensor_negative_coord = _rule(
    "tensor_negative_coord",
    "`coords`[{axis}]={coord} is negative; tensor stores and reductions need coordinates >= 0 "
    "(boxes may still run past the far edges)")
tensor_map_mode = _rule(
    "tensor_map_mode",
    "`tensor_map` has load mode {mode} but this copy needs mode {need} (0: a tiled map, "
    "ac.TensorMap(...); 1: an im2col map, ac.TensorMap.im2col(...))")
im2col_offset = _rule(
    "im2col_offset",
    "`offsets`[{axis}]={value} is outside 0..65535 (im2col offsets are unsigned 16-bit)")
im2col_start = _rule(
    "im2col_start",
    "`coords`[{axis}]={coord} is outside the im2col bounding box {lo}..{hi} of that axis "
    "(the first pixel of a load must lie in it; PTX leaves anything else undefined)")
im2col_store_corners = _rule(
    "im2col_store_corners",
    "an im2col store or reduction needs a map whose pixel-box corners are all zero "
    "(lower_corner and upper_corner of zeros); this map's are not (on the H200 every store "
    "and reduction through such a map failed the launch with an illegal instruction)")

# Asynchronous copies in flight (the simulator, at issue time).
tx_overflow = _rule(
    "tx_overflow",
    "{extra} transaction bytes more than {barrier} expects arrived in phase {phase} (expect_tx "
    "announced {expected} bytes, copies and complete_tx bring {completed}): the byte count of a "
    "copy or of expect_tx is wrong (on the GPU the phase never completes, or the extra bytes "
    "complete a later phase early); the copies of this phase: {copies}")
dst_in_flight = _rule(
    "dst_in_flight",
    "`{name}` ({where}) overlaps the destination of a copy still in flight ({other}): wait for "
    "that copy (its group or its barrier phase) before copying into its destination again; the "
    "two copies may land in either order")
src_being_read = _rule(
    "src_being_read",
    "`{name}` ({where}) overlaps the shared source of a bulk store that may still read it "
    "({other}): call bulk_wait_group(n, read=True) before copying into it")
barrier_unfenced = _rule(
    "barrier_unfenced",
    "{barrier} is used by the async proxy ({use}) but no fence made its initialisation visible to "
    "the async proxy: after mbarrier_init, the initialising thread calls fence_proxy_async("
    "\"shared::cta\") (fence_mbarrier_init() for a barrier other CTAs use too), then "
    "cuda.syncthreads(), before the first copy that completes on it")
barrier_unfenced_cluster = _rule(
    "barrier_unfenced_cluster",
    "{barrier} is used by CTA {user} ({use}) but its initialisation is not "
    "visible to that CTA: {why}. After mbarrier_init, the initialising thread calls "
    "fence_mbarrier_init(), then the cluster synchronizes (cluster_sync(), or cluster_arrive() + "
    "cluster_wait()) before another CTA uses the barrier")

# Pipelines (ac.pipeline): where a message points, and the protocol's rules.
pipeline_where = _rule("pipeline_where", "slot {slot} (step {step}, phase {phase}) of a {pipeline}")
pipeline_wait_timeout = _rule(
    "pipeline_wait_timeout", "timed out after {ns} ns on {where}: {side} never came (barrier word {word})")
pipeline_bars = _rule("pipeline_bars", "`bars` holds {held} barriers; a {pipeline} needs {need}")
pipeline_threads = _rule(
    "pipeline_threads",
    "the block has {threads} threads; a {pipeline} is built for {need} producer and consumer threads")
#: a cluster pipeline multicasts to and releases in ranks 0..ctas-1: the cluster must be that size
pipeline_cluster_size = _rule(
    "pipeline_cluster_size",
    "the cluster has {ctas} CTAs; a {pipeline} needs a cluster of exactly {need} CTAs "
    "(launch with ac.cluster_dims({need}) or ac.launch(..., cluster=...))")
pipeline_slot_in_use = _rule(
    "pipeline_slot_in_use", "{where}: second producer_acquire of a slot still in use: {why}")
#: the ``why`` of pipeline_slot_in_use where the device sees it: the slot's full barrier
pipeline_fill_done = _rule(
    "pipeline_fill_done",
    "its full barrier already completed the phase (parity {parity}) this fill is to complete "
    "(acquired again without advancing the state)")
pipeline_release_without_wait = _rule(
    "pipeline_release_without_wait", "{where}: consumer_release without a consumer_wait of this state{why}")
#: the ``why`` of pipeline_release_without_wait where the device sees it
pipeline_fill_pending = _rule(
    "pipeline_fill_pending",
    ": the slot's fill has not landed (its full barrier's phase of parity {parity} is incomplete)")

# Warp-collective tensor-core instructions (mma.sync, ldmatrix, stmatrix).
warp_not_converged = _rule(
    "warp_not_converged",
    "{instr} is warp-collective (.sync.aligned): all 32 lanes of the warp must execute it "
    "together, at the same place; {why}")
#: the ``why`` of warp_not_converged where the device sees it: the active mask
warp_active_mask = _rule("warp_active_mask", "the active mask is {mask}")
# Warpgroup MMA (wgmma): operands, descriptors and the asynchronous window.
#: wgmma.wait_group's depth: at most this many groups may stay pending
WGMMA_MAX_PENDING = 7
wgmma_fragment = _rule(
    "wgmma_fragment",
    "`{name}` must be an f32 accumulator fragment of an m64nN MMA, a tuple of N/2 float32 "
    "(ac.wgmma_zero(N)) for N in 8..256 step 8, got {got}")
#: the f16 fragment's words, appended to wgmma_fragment where either kind would do
wgmma_fragment_f16 = _rule(
    "wgmma_fragment_f16",
    "or an f16 accumulator fragment, a tuple of N/4 uint32 (packed f16 pairs, "
    "ac.wgmma_zero(N, dtype='f16'))")
#: PTX: .f16 accumulators take .f16 or fp8 inputs; bf16 and tf32 accumulate in f32 only
wgmma_acc_dtype = _rule(
    "wgmma_acc_dtype",
    "dtype={dtype!r} inputs accumulate in f32 only, but `acc` is an f16 fragment: make it "
    "with ac.wgmma_zero(N) (f16 accumulation takes 'f16', 'e4m3' or 'e5m2' inputs)")
wgmma_no_transpose = _rule(
    "wgmma_no_transpose",
    "dtype={dtype!r} operands are K-major only: `trans_a`/`trans_b` must be False")
wgmma_view = _rule(
    "wgmma_view",
    "`{name}` is {ndim}-D; a major={major!r} descriptor with swizzle={swizzle} reads a view of "
    "shape {geometry}")
wgmma_stride = _rule(
    "wgmma_stride",
    "axis {axis} of `{name}` has stride {stride} bytes where the major={major!r}, swizzle={swizzle} "
    "layout needs {expect}")
wgmma_base_align = _rule(
    "wgmma_base_align",
    "`{name}` (shared address {addr}) does not start in row 0 of a {align}-byte aligned atom as "
    "swizzle={swizzle} needs (align the tile with cuda.shared.array(..., alignment=1024))")
setmaxnreg_count = _rule(
    "setmaxnreg_count", "`r`={value} must be a multiple of 8 in 24..256")
wgmma_acc_in_flight = _rule(
    "wgmma_acc_in_flight",
    "{what} the accumulator fragment of a wgmma_mma_async issued at {issued} before a "
    "wgmma_wait_group covers it: its registers are still being written (acc = "
    "ac.wgmma_wait_group(n, acc) first)")
wgmma_tile_in_flight = _rule(
    "wgmma_tile_in_flight",
    "{what} overlaps a shared tile that the wgmma_mma_async issued at {issued} still reads: "
    "wait for it (wgmma_wait_group) before writing or refilling the tile")
wgmma_swizzle_mismatch = _rule(
    "wgmma_swizzle_mismatch",
    "the descriptor of `{name}` says swizzle={swizzle} but the tile was written with "
    "swizzle={written} ({how}): make the descriptor's swizzle the TensorMap's")
wgmma_no_fence = _rule(
    "wgmma_no_fence",
    "wgmma_mma_async on accumulators written since the last wgmma_fence ({why}): call acc = "
    "ac.wgmma_fence(acc) before the first MMA and after changing the fragment")
wgmma_shape = _rule(
    "wgmma_shape", "`{name}` describes {got}; this m64n{n}k{k} MMA reads {need}")
