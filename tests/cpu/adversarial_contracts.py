"""The contracts of the public device functions, as test data: one valid
call of each (argument expressions in a fixed kernel), and for each
argument the kind of value it takes.  The adversarial suites generate
invalid calls from these: an argument replaced by a value its kind never
accepts (wrong type, dtype, rank, an out-of-range or non-constant value
where a constant is needed), an unknown keyword, a required argument left
out.  Every such call must be refused with a message naming the function
and the argument.
"""

from __future__ import annotations

# The kernel every call is compiled in; the arguments below refer to these names.
KERNEL = """
def k(out, n, x, A, tm, big):
    tid = cuda.threadIdx.x
    sh = cuda.shared.array((64, 4), np.float32, alignment=128)
    sh1 = cuda.shared.array(64, np.float32, alignment=128)
    ish = cuda.shared.array(64, np.int32, alignment=128)
    bars = cuda.shared.array(4, np.uint64, alignment=8)
    hb = cuda.shared.array((64, 64), np.uint16, alignment=1024)
    {call}
"""
# out: uint32[::1] (global), n: int32, x: float32, A: float32[:, ::1] (global),
# tm: uint64[::1] (a tensor map buffer), big: int64; hb: a bf16 tile (uint16 bits)
# with 128-byte rows, for the warpgroup MMA (the kernel compiles for sm_90a)

# --- the values each kind of argument never accepts -------------------------------------

NOT_A_VIEW = ["n", "x", "1.5", "(1, 2)", "'a'", "1j"]
NOT_AN_INT = ["x", "1.5", "1j", "'a'", "(1, 2)", "sh1"]
NOT_A_CONSTANT_INT = ["n", "big", "1.5", "'a'", "(16,)", "1j"]
NOT_A_BOOL_CONSTANT = ["1", "'yes'", "n > 0", "1.5", "None"]
NOT_A_STR_OPTION = ["'bogus'", "1", "1.5", "True"]


def ints_outside(lo: int, hi: int) -> list[str]:
    """Integer constants outside lo..hi (they overflow or break the rule)."""
    return [str(v) for v in (lo - 1, hi + 1, -2**40, 2**40) if not lo <= v <= hi]


KINDS: dict[str, list[str]] = {
    "view": NOT_A_VIEW,
    "shared_f32_view": NOT_A_VIEW,
    "bar": NOT_A_VIEW + ["sh1[0:]", "ish[0:]"],
    "rt_int": NOT_AN_INT,
    "count": NOT_AN_INT + ints_outside(1, 2**20 - 1),
    "nbytes": NOT_AN_INT + ints_outside(0, 2**20 - 1),
    "parity": NOT_AN_INT + ["2", "-1", "2**40"],
    "hint": NOT_AN_INT + ints_outside(0, 2**32 - 1),
    "state": NOT_AN_INT,
    "rank": NOT_AN_INT + ["-1", "16", "2**40"],
    "chunk_bytes": NOT_A_CONSTANT_INT + ["12", "0", "32", "-16"],
    "bulk_chunk": NOT_A_CONSTANT_INT + ["0", "8", "-16", "2**21"],
    "wait_depth": ["x", "1.5", "'a'", "(1, 2)", "-1", "2**31", "2**40"],
    "bulk_wait_depth": NOT_A_CONSTANT_INT + ["-1", "2**31"],
    "bool_const": NOT_A_BOOL_CONSTANT,
    "bool_rt": ["1.5", "'a'", "x", "(1, 2)", "1j"],
    "sem_arrive": NOT_A_STR_OPTION + ["'acquire'"],
    "sem_wait": NOT_A_STR_OPTION + ["'release'"],
    "scope": NOT_A_STR_OPTION + ["'gpu'"],
    "cache": NOT_A_STR_OPTION,
    "wg_frag": ["x", "1.5", "'a'", "(x, x, x)", "n"],
    "wg_frag_opt": ["x", "1.5", "'a'", "(x, x, x)", "n"],
    "wg_depth": NOT_A_CONSTANT_INT + ["-1", "8"],
    "wg_n": NOT_A_CONSTANT_INT + ["0", "4", "12", "264"],
    "wg_reg": NOT_A_CONSTANT_INT + ["20", "233", "264"],
    "wg_swizzle": ["16", "'a'", "1.5", "n"],
    "wg_operand": ["x", "1.5", "'a'", "(x, x)"],
    "wg_scale": ["0", "2", "'a'", "1.5", "n"],
    "prefetch": NOT_A_CONSTANT_INT + ["32", "512"],
    "cp_scope": NOT_A_STR_OPTION,
    "fence_space": NOT_A_STR_OPTION + ["'local'"],
    "fence_scope": NOT_A_STR_OPTION,
    "cluster_sem": NOT_A_STR_OPTION + ["'acquire'"],
    "policy_kind": NOT_A_STR_OPTION,
    # float constants have no literal type in Numba: 0.0 or 1.5 are checked at run
    # time (checked mode), integer constants and other types at compile time
    "fraction": ["-1", "2", "'a'", "1j", "0", "(0.5,)", "x > 0"],
    "policy": ["x", "1.5", "'a'", "1j", "sh1"],
    "mask": NOT_AN_INT + ["0", "2**32", "-1"],
    "multicast": ["x", "1.5", "'a'", "1j", "sh1"],
    "reduce_op": NOT_A_STR_OPTION + ["'mul'"],
    "tensor_map": ["n", "x", "sh1", "out", "1.5", "(1, 2)"],
    "coords": ["n", "1.5", "(1.5, 0)", "('a', 0)", "(2**40, 0)", "(0, 0, 0, 0, 0, 0)", "()",
               "(x, 0)"],
    "im2col_coords": ["n", "1.5", "(1.5, 0, 0, 0)", "('a', 0, 0, 0)", "(2**40, 0, 0, 0)",
                      "(0, 0)", "(0, 0, 0, 0, 0, 0)", "()"],
    "im2col_offsets": ["n", "1.5", "(1.5, 0)", "(0,)", "(0, 0, 0)", "(-1, 0)", "(65536, 0)", "()"],
    "store_coords": ["n", "(1.5, 0)", "(-16, 0)", "(0, -1)", "(2**40, 0)", "()"],
    "dsmem_view": ["n", "x", "1.5", "'a'", "(1, 2)"],
    "index": ["1.5", "'a'", "(1.5,)", "x", "(0, 0)"],
    "value": ["1j", "'a'", "(1, 2)", "sh1"],
    "cluster_dim": ["n", "1.5", "'a'", "0", "-1", "True", ("17", "a cluster of (")],
    "vec_arr": NOT_A_VIEW + ["bars"],
    "vec_idx": ["1.5", "'a'", "(1.5, 0)", "x", "(0, 0, 0)"],
    "vec_n": NOT_A_CONSTANT_INT + ["3", "0", "-4"],
    "values4": ["1.5", "(1.0, 2.0, 3.0)", "('a', 'b', 'c', 'd')", "n", "(1j, 1j, 1j, 1j)"],
    "values2": ["1.5", "(1.0, 2.0, 3.0)", "('a', 'b')", "n"],
    # tensor cores (mma.py): tiles of 2- or 4-byte elements, fragments, constants
    "mma_tile": NOT_A_VIEW + ["bars"],
    "mma_tile2d": NOT_A_VIEW + ["bars", "sh1"],
    "mma_num": NOT_A_CONSTANT_INT + ["3", "0", "8"],
    "mma_regs": ["1.5", "n", "(n, n, n)", "(1.0, 2.0)", "('a',)"],
    "frag_a": ["1.5", "n", "(n, n)", "(x, x, x, x)", "sh1"],
    "frag_b": ["1.5", "n", "(n, n, n, n)", "(x, x)"],
    "frag_c": ["1.5", "(x, x)", "(1.0, 2.0, 3.0, 4.0)", "(n, n, n, n)"],
    "mma_dtype": NOT_A_STR_OPTION + ["'fp8'", "n"],
    "mma_shape": ["'m16n8k16'", "1", "'bogus'", "n"],
    "origin": ["1.5", "'a'", "x", "(0, 0)", "1j"],
    "mma_out": NOT_A_VIEW + ["out", "sh1", "bars"],
    "number": ["'a'", "(1, 2)", "sh1", "1j"],
    "bf16_bits": ["x", "1.5", "'a'", "n", "sh1", "-1", "70000"],
}

# api -> (valid call: [(argument, expression)], {keyword: expression}, {argument: kind})
# A keyword in the kinds but not in the call is an optional argument that
# gets only invalid values.
CONTRACTS: dict[str, tuple[list[tuple[str, str]], dict[str, str], dict[str, str]]] = {
    "cp_async": ([("dst", "sh[tid, :]"), ("src", "A[tid, 0:4]"), ("chunk_bytes", "16")], {},
                 {"dst": "view", "src": "view", "chunk_bytes": "chunk_bytes", "cache": "cache",
                  "prefetch": "prefetch", "src_size": "rt_int", "ignore_src": "bool_rt",
                  "pred": "bool_rt", "cache_policy": "policy", "scope": "cp_scope"}),
    "commit_group": ([], {}, {}),
    "pragma_nounroll": ([], {}, {}),
    "wait_group": ([("n", "0")], {}, {"n": "wait_depth"}),
    "wait_all": ([], {}, {}),
    "createpolicy_fractional": ([], {},
                                {"primary": "policy_kind", "secondary": "policy_kind",
                                 "fraction": "fraction"}),
    "cp_async_mbarrier_arrive": ([("bar", "bars[0:]")], {}, {"bar": "bar", "noinc": "bool_const"}),
    "mbarrier_init": ([("bar", "bars[0:]"), ("count", "1")], {}, {"bar": "bar", "count": "count"}),
    "mbarrier_inval": ([("bar", "bars[0:]")], {}, {"bar": "bar"}),
    "mbarrier_arrive": ([("bar", "bars[0:]")], {},
                        {"bar": "bar", "count": "count", "sem": "sem_arrive", "scope": "scope",
                         "cta_rank": "rank"}),
    "mbarrier_arrive_no_complete": ([("bar", "bars[0:]"), ("count", "1")], {},
                                    {"bar": "bar", "count": "count"}),
    "mbarrier_arrive_drop": ([("bar", "bars[0:]")], {},
                             {"bar": "bar", "count": "count", "sem": "sem_arrive", "scope": "scope"}),
    "mbarrier_arrive_drop_no_complete": ([("bar", "bars[0:]"), ("count", "1")], {},
                                         {"bar": "bar", "count": "count"}),
    "mbarrier_expect_tx": ([("bar", "bars[0:]"), ("nbytes", "16")], {},
                           {"bar": "bar", "nbytes": "nbytes", "scope": "scope", "cta_rank": "rank"}),
    "mbarrier_complete_tx": ([("bar", "bars[0:]"), ("nbytes", "16")], {},
                             {"bar": "bar", "nbytes": "nbytes", "scope": "scope"}),
    "mbarrier_arrive_expect_tx": ([("bar", "bars[0:]"), ("nbytes", "16")], {},
                                  {"bar": "bar", "nbytes": "nbytes", "sem": "sem_arrive",
                                   "scope": "scope", "cta_rank": "rank"}),
    "mbarrier_test_wait": ([("bar", "bars[0:]"), ("state", "ac.mbarrier_arrive(bars[1:])")], {},
                           {"bar": "bar", "state": "state", "sem": "sem_wait", "scope": "scope"}),
    "mbarrier_wait": ([("bar", "bars[0:]"), ("state", "ac.mbarrier_arrive(bars[1:])")], {},
                      {"bar": "bar", "state": "state"}),
    "mbarrier_test_wait_parity": ([("bar", "bars[0:]"), ("parity", "0")], {},
                                  {"bar": "bar", "parity": "parity", "sem": "sem_wait",
                                   "scope": "scope"}),
    "mbarrier_wait_parity": ([("bar", "bars[0:]"), ("parity", "0")], {},
                             {"bar": "bar", "parity": "parity"}),
    "mbarrier_try_wait": ([("bar", "bars[0:]"), ("state", "ac.mbarrier_arrive(bars[1:])")], {},
                          {"bar": "bar", "state": "state", "suspend_hint_ns": "hint",
                           "sem": "sem_wait", "scope": "scope"}),
    "mbarrier_try_wait_parity": ([("bar", "bars[0:]"), ("parity", "0")], {},
                                 {"bar": "bar", "parity": "parity", "suspend_hint_ns": "hint",
                                  "sem": "sem_wait", "scope": "scope"}),
    "mbarrier_pending_count": ([("state", "ac.mbarrier_arrive(bars[1:])")], {}, {"state": "state"}),
    "fence_proxy_async": ([], {}, {"space": "fence_space"}),
    "fence_mbarrier_init": ([], {}, {}),
    "fence_acq_rel_cluster": ([], {}, {}),
    "elect_sync": ([], {}, {"mask": "mask"}),
    "cluster_cta_rank": ([], {}, {}),
    "cluster_num_ctas": ([], {}, {}),
    "cluster_cta_id": ([], {}, {}),
    "cluster_dim": ([], {}, {}),
    "cluster_id": ([], {}, {}),
    "num_clusters": ([], {}, {}),
    "is_explicit_cluster": ([], {}, {}),
    "cluster_arrive": ([], {}, {"sem": "cluster_sem", "aligned": "bool_const"}),
    "cluster_sync": ([], {}, {"aligned": "bool_const"}),
    "cluster_wait": ([], {}, {"aligned": "bool_const"}),
    "dsmem_load": ([("view", "sh1"), ("rank", "0"), ("index", "tid")], {},
                   {"view": "dsmem_view", "rank": "rank", "index": "index"}),
    "dsmem_store": ([("view", "sh1"), ("rank", "0"), ("index", "tid"), ("value", "x")], {},
                    {"view": "dsmem_view", "rank": "rank", "index": "index", "value": "value"}),
    "dsmem_atomic_add": ([("view", "ish"), ("rank", "0"), ("index", "tid"), ("value", "1")], {},
                         {"view": "dsmem_view", "rank": "rank", "index": "index", "value": "value"}),
    "mbarrier_arrive_remote": ([("bar", "bars[0:]"), ("cta_rank", "0")], {},
                               {"bar": "bar", "cta_rank": "rank", "count": "count"}),
    "mbarrier_expect_tx_remote": ([("bar", "bars[0:]"), ("cta_rank", "0"), ("nbytes", "16")], {},
                                  {"bar": "bar", "cta_rank": "rank", "nbytes": "nbytes"}),
    "mbarrier_arrive_expect_tx_remote": ([("bar", "bars[0:]"), ("cta_rank", "0"), ("nbytes", "16")],
                                         {}, {"bar": "bar", "cta_rank": "rank", "nbytes": "nbytes"}),
    "cp_async_bulk_cluster": ([("dst", "sh1[0:32]"), ("src", "sh1[32:64]"), ("chunk_bytes", "128"),
                               ("mbar", "bars[0:]"), ("remote_cta_id", "0")], {},
                              {"dst": "view", "src": "view", "chunk_bytes": "bulk_chunk",
                               "mbar": "bar", "remote_cta_id": "rank", "pred": "bool_rt"}),
    "map_shared_rank": ([("view", "sh1"), ("rank", "0")], {}, {"view": "dsmem_view", "rank": "rank"}),
    "cluster_dims": ([("x", "2")], {}, {"x": "cluster_dim", "y": "cluster_dim", "z": "cluster_dim",
                                       "non_portable": "bool_const"}),
    "cp_async_bulk_g2s": ([("dst", "sh1"), ("src", "A[0, :]"), ("mbar", "bars[0:]")], {},
                          {"dst": "view", "src": "view", "mbar": "bar",
                           "multicast_mask": "multicast", "cache_policy": "policy"}),
    "cp_async_bulk_s2g": ([("dst", "A[0, :]"), ("src", "sh1")], {},
                          {"dst": "view", "src": "view", "cache_policy": "policy"}),
    "cp_reduce_async_bulk_s2g": ([("dst", "A[0, :]"), ("src", "sh1"), ("op", "'add'")], {},
                                 {"dst": "view", "src": "view", "op": "reduce_op",
                                  "bf16": "bool_const", "cache_policy": "policy"}),
    "cp_async_bulk_prefetch_l2": ([("src", "A[0, :]")], {}, {"src": "view",
                                                             "cache_policy": "policy"}),
    "bulk_commit_group": ([], {}, {}),
    "bulk_wait_group": ([("n", "0")], {}, {"n": "bulk_wait_depth", "read": "bool_const"}),
    "cp_async_bulk_tensor_load": ([("dst", "sh"), ("tensor_map", "tm"), ("coords", "(0, 0)"),
                                   ("mbar", "bars[0:]")], {},
                                  {"dst": "view", "tensor_map": "tensor_map", "coords": "coords",
                                   "mbar": "bar", "multicast_mask": "multicast",
                                   "cache_policy": "policy", "fence": "bool_const"}),
    "cp_async_bulk_tensor_store": ([("tensor_map", "tm"), ("coords", "(0, 0)"), ("src", "sh")], {},
                                   {"tensor_map": "tensor_map", "coords": "store_coords",
                                    "src": "view", "cache_policy": "policy",
                                    "fence": "bool_const"}),
    "cp_reduce_async_bulk_tensor": ([("tensor_map", "tm"), ("coords", "(0, 0)"), ("src", "sh"),
                                     ("op", "'add'")], {},
                                    {"tensor_map": "tensor_map", "coords": "store_coords",
                                     "src": "view", "op": "reduce_op", "bf16": "bool_const",
                                     "cache_policy": "policy", "fence": "bool_const"}),
    "cp_async_bulk_tensor_store_im2col": (
        [("tensor_map", "tm"), ("coords", "(0, 0, 0, 0)"), ("src", "sh")], {},
        {"tensor_map": "tensor_map", "coords": "im2col_coords", "src": "view",
         "cache_policy": "policy", "fence": "bool_const"}),
    "cp_reduce_async_bulk_tensor_im2col": (
        [("tensor_map", "tm"), ("coords", "(0, 0, 0, 0)"), ("src", "sh"), ("op", "'add'")], {},
        {"tensor_map": "tensor_map", "coords": "im2col_coords", "src": "view", "op": "reduce_op",
         "bf16": "bool_const", "cache_policy": "policy", "fence": "bool_const"}),
    "cp_async_bulk_prefetch_tensor": ([("tensor_map", "tm"), ("coords", "(0, 0)")], {},
                                      {"tensor_map": "tensor_map", "coords": "coords",
                                       "cache_policy": "policy", "fence": "bool_const"}),
    "cp_async_bulk_tensor_load_im2col": (
        [("dst", "sh"), ("tensor_map", "tm"), ("coords", "(0, 0, 0, 0)"), ("offsets", "(0, 0)"),
         ("mbar", "bars[0:]")], {},
        {"dst": "view", "tensor_map": "tensor_map", "coords": "im2col_coords",
         "offsets": "im2col_offsets", "mbar": "bar", "multicast_mask": "multicast",
         "cache_policy": "policy", "fence": "bool_const"}),
    "cp_async_bulk_prefetch_tensor_im2col": (
        [("tensor_map", "tm"), ("coords", "(0, 0, 0, 0)"), ("offsets", "(0, 0)")], {},
        {"tensor_map": "tensor_map", "coords": "im2col_coords", "offsets": "im2col_offsets",
         "cache_policy": "policy", "fence": "bool_const"}),
    "prefetch_tensormap": ([("tensor_map", "tm")], {}, {"tensor_map": "tensor_map",
                                                        "fence": "bool_const"}),
    "fence_proxy_tensormap": ([("tensor_map", "tm")], {}, {"tensor_map": "tensor_map",
                                                           "scope": "fence_scope"}),
    "chunk_view": ([("arr", "A"), ("idx", "(0, 0)"), ("n", "4")], {},
                   {"arr": "vec_arr", "idx": "vec_idx", "n": "vec_n"}),
    "load2": ([("arr", "A"), ("idx", "(0, 0)")], {}, {"arr": "vec_arr", "idx": "vec_idx"}),
    "load4": ([("arr", "A"), ("idx", "(0, 0)")], {}, {"arr": "vec_arr", "idx": "vec_idx"}),
    "load_vec": ([("arr", "A"), ("idx", "(0, 0)"), ("n", "4")], {},
                 {"arr": "vec_arr", "idx": "vec_idx", "n": "vec_n"}),
    "store2": ([("arr", "A"), ("idx", "(0, 0)"), ("values", "(x, x)")], {},
               {"arr": "vec_arr", "idx": "vec_idx", "values": "values2"}),
    "store4": ([("arr", "A"), ("idx", "(0, 0)"), ("values", "(x, x, x, x)")], {},
               {"arr": "vec_arr", "idx": "vec_idx", "values": "values4"}),
    "store_vec": ([("arr", "A"), ("idx", "(0, 0)"), ("values", "(x, x, x, x)")], {},
                  {"arr": "vec_arr", "idx": "vec_idx", "values": "values4"}),
    "view4": ([("arr", "A"), ("idx", "(0, 0)")], {}, {"arr": "vec_arr", "idx": "vec_idx"}),
    # float32 tiles (the tf32 forms): the kernel has no 16-bit shared array
    "ldmatrix": ([("tile", "sh"), ("idx", "(tid, 0)")], {},
                 {"tile": "mma_tile", "idx": "vec_idx", "num": "mma_num", "trans": "bool_const"}),
    "stmatrix": ([("tile", "sh"), ("idx", "(tid, 0)"), ("values", "(np.uint32(n),)")], {},
                 {"tile": "mma_tile", "idx": "vec_idx", "values": "mma_regs", "trans": "bool_const"}),
    "mma_sync": ([("a", "ac.mma_load_a(sh, 0, 0)"), ("b", "ac.mma_load_b(sh, 0, 0)"),
                  ("c", "ac.mma_zeros()"), ("dtype", "'tf32'")], {},
                 {"a": "frag_a", "b": "frag_b", "c": "frag_c", "dtype": "mma_dtype",
                  "shape": "mma_shape"}),
    "mma_zeros": ([], {}, {}),
    "mma_load_a": ([("tile", "sh"), ("row", "0"), ("col", "0")], {},
                   {"tile": "mma_tile2d", "row": "origin", "col": "origin"}),
    "mma_load_b": ([("tile", "sh"), ("row", "0"), ("col", "0")], {},
                   {"tile": "mma_tile2d", "row": "origin", "col": "origin", "layout": "cache"}),
    "mma_store": ([("out", "A"), ("row", "0"), ("col", "0"), ("acc", "ac.mma_zeros()")], {},
                  {"out": "mma_out", "row": "origin", "col": "origin", "acc": "frag_c"}),
    "f32_to_bf16": ([("x", "x")], {}, {"x": "number"}),
    # warpgroup MMA (sm_90a): descriptors of the bf16 tile, fragments of N = 8
    "wgmma_fence": ([], {}, {"acc": "wg_frag_opt"}),
    "wgmma_commit_group": ([], {}, {}),
    "wgmma_wait_group": ([("n", "0")], {}, {"n": "wg_depth", "acc": "wg_frag_opt"}),
    "wgmma_zero": ([("n", "8")], {}, {"n": "wg_n", "dtype": "cache"}),
    "wgmma_descriptor": ([("tile", "hb[:, 0:16]")], {"swizzle": "128"},
                         {"tile": "view", "swizzle": "wg_swizzle", "major": "cache"}),
    "wgmma_mma_async": ([("acc", "ac.wgmma_zero(8)"),
                         ("a", "ac.wgmma_descriptor(hb[:, 0:16], swizzle=128)"),
                         ("b", "ac.wgmma_descriptor(hb[0:8, 16:32], swizzle=128)")],
                        {"dtype": "'bf16'"},
                        {"acc": "wg_frag", "a": "wg_operand", "b": "wg_operand",
                         "dtype": "cache", "scale_d": "bool_rt", "scale_a": "wg_scale",
                         "scale_b": "wg_scale", "trans_a": "bool_const", "trans_b": "bool_const"}),
    "wgmma_store": ([("acc", "ac.wgmma_zero(8)"), ("out", "A"), ("row0", "0"), ("col0", "0")], {},
                    {"acc": "wg_frag", "out": "view", "row0": "rt_int", "col0": "rt_int",
                     "dtype": "cache", "scale": "number"}),
    "wgmma_load_a": ([("a", "hb[:, 0:16]"), ("row0", "0"), ("col0", "0")], {},
                     {"a": "view", "row0": "rt_int", "col0": "rt_int"}),
    "setmaxnreg_inc": ([("r", "232")], {}, {"r": "wg_reg"}),
    "setmaxnreg_dec": ([("r", "40")], {}, {"r": "wg_reg"}),
    "bf16_to_f32": ([("h", "np.uint16(n)")], {}, {"h": "bf16_bits"}),
}


#: functions called in a loop's body (the loop pragma refuses any other place)
IN_A_LOOP = {"pragma_nounroll"}


def render(api: str, args: list[tuple[str, str]], kwargs: dict[str, str]) -> str:
    """The statement calling ``api`` (a result is stored so it is not dropped)."""
    parts = [e for _, e in args] + [f"{k}={v}" for k, v in kwargs.items()]
    stmt = f"_r = ac.{api}({', '.join(parts)})"
    return f"for _i in range(n):\n        {stmt}" if api in IN_A_LOOP else stmt


def valid_call(api: str) -> str:
    args, kwargs, _ = CONTRACTS[api]
    return render(api, args, kwargs)


def invalid_cases(api: str) -> list[tuple[str, str, str]]:
    """Every (words, statement, what) this contract says must be refused (the
    message must contain ``words``: the argument's name, as a word):
    each argument replaced by each value its kind never accepts, an unknown
    keyword, each required argument left out."""
    args, kwargs, kinds = CONTRACTS[api]
    positional = [a for a, _ in args]
    out = []
    for name, kind in kinds.items():
        for bad in KINDS[kind]:
            # a value may carry the words that name it where the rule is about
            # several arguments together (a cluster shape)
            bad, named = bad if isinstance(bad, tuple) else (bad, name)
            if name in positional:
                new = [(a, bad if a == name else e) for a, e in args]
                out.append((named, render(api, new, kwargs), f"{kind}:{bad}"))
            else:
                out.append((named, render(api, args, {**kwargs, name: bad}), f"{kind}:{bad}"))
    out.append(("bogus", render(api, args, {**kwargs, "bogus": "1"}), "unknown keyword"))
    for i in range(len(args)):
        # the arguments after it move up one place: the call misses the last one
        out.append((args[-1][0], render(api, args[:i] + args[i + 1:], kwargs), "left out"))
    return out
