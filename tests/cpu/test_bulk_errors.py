"""Every compile-time contract error of the bulk and TMA families."""

from __future__ import annotations

import pytest
from numba import types
from numba.core.errors import NumbaError

from .helpers import kernel_from_source, ptx_of

SIG = (types.float32[:, ::1], types.float32[:, :], types.uint64[::1], types.int32,
       types.float32[::1, :], types.int64[::1])


def compile_error(body: str, cc=(9, 0)):
    src = f"""
    def k(A, S, tm, n, F, L):
        sh = cuda.shared.array((8, 64), np.float32, alignment=128)
        sh16 = cuda.shared.array(64, np.float16, alignment=16)
        shi = cuda.shared.array(64, np.int64, alignment=16)
        bar = cuda.shared.array(2, np.uint64)
        fbar = cuda.shared.array(2, np.float64)
        {body}
    """
    with pytest.raises(NumbaError) as info:  # a compile-time error (numba-cuda's typing or lowering)
        ptx_of(kernel_from_source(src), SIG, cc=cc)
    return str(info.value)


@pytest.mark.parametrize("body,message", [
    # sm requirement
    ("ac.cp_async_bulk_g2s(sh, A, bar)",
     "cp_async_bulk_g2s: `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"),
    ("ac.cp_async_bulk_tensor_load(sh, tm, (n, n), bar)", "needs sm_90"),
    ("ac.bulk_commit_group()", "bulk_commit_group: `cp.async.bulk.commit_group;` needs sm_90"),
])
def test_needs_sm90(body, message):
    msg = compile_error(body, cc=(8, 0))
    assert message in msg and "sm_80" in msg


@pytest.mark.parametrize("body,message", [
    ("ac.cp_async_bulk_g2s(n, A[0], bar)",
     "cp_async_bulk_g2s: `dst` must be a Numba array view (for example `sh` or `A[i]`), got int32"),
    ("ac.cp_async_bulk_g2s(sh, F, bar)",
     "cp_async_bulk_g2s: `src` is Fortran-ordered: its last axis is not contiguous"),
    ("ac.cp_async_bulk_g2s(sh[0], S, bar)",
     "cp_async_bulk_g2s: `dst` (1-D, layout C) and `src` (2-D, layout A) must have the same rank"),
    ("ac.cp_async_bulk_g2s(sh, A, fbar)",
     "cp_async_bulk_g2s: `mbar` must be a uint64 shared-memory array view"),
    ("ac.cp_async_bulk_g2s(sh, A, bar, multicast_mask=0)",
     "cp_async_bulk_g2s: multicast_mask=0 is outside 1..0xFFFF"),
    ("ac.cp_async_bulk_g2s(sh, A, bar, multicast_mask=1 << 16)",
     "cp_async_bulk_g2s: multicast_mask=65536 is outside 1..0xFFFF"),
    ("ac.cp_async_bulk_g2s(sh, A, bar, multicast_mask=1.5)",
     "cp_async_bulk_g2s: `multicast_mask` must be an integer value, got float64"),
    ("ac.cp_async_bulk_g2s(sh, A, bar, cache_policy=A)",
     "cp_async_bulk_g2s: `cache_policy` must be an integer value"),
    ("ac.cp_async_bulk_g2s(sh, A, bar, 3)", "cp_async_bulk_g2s: too many positional arguments"),
    ("ac.cp_async_bulk_s2g(A, F)", "cp_async_bulk_s2g: `src` is Fortran-ordered"),
    ("ac.cp_async_bulk_s2g(A, sh, bogus=1)",
     "cp_async_bulk_s2g: got an unexpected keyword argument 'bogus'"),
    ("ac.cp_async_bulk_prefetch_l2(F)", "cp_async_bulk_prefetch_l2: `src` is Fortran-ordered"),
    ("ac.bulk_wait_group(n)",
     "bulk_wait_group: `n` must be a compile-time constant (int literal), got a run-time int32"),
    ("ac.bulk_wait_group(-1)", "bulk_wait_group: `n` must be >= 0, got -1"),
    ("ac.bulk_wait_group(2**31)", "bulk_wait_group: `n`=2147483648 is outside 0..2**31-1"),
    ("ac.bulk_wait_group(0, read=n > 0)",
     "bulk_wait_group: `read` must be a compile-time constant (bool literal)"),
    ("ac.bulk_wait_group(0, read=1)", "bulk_wait_group: `read` must be a bool constant, got 1"),
    # reductions
    ("ac.cp_reduce_async_bulk_s2g(A[0], sh[0], 'mul')",
     "cp_reduce_async_bulk_s2g: `op`='mul' is not supported; allowed: 'add', 'min', 'max', 'inc', "
     "'dec', 'and', 'or', 'xor'"),
    ("ac.cp_reduce_async_bulk_s2g(A[0], sh[0], 'max')",
     "cp_reduce_async_bulk_s2g: op='max' is not supported for float32 elements (PTX `.max.f32`); "
     "max is supported on: f16, bf16, u32, s32, u64, s64"),
    ("ac.cp_reduce_async_bulk_s2g(A[0], sh[0], 'and')",
     "cp_reduce_async_bulk_s2g: op='and' is not supported for float32 elements (PTX `.and.f32`)"),
    ("ac.cp_reduce_async_bulk_s2g(L, shi, 'inc')",
     "cp_reduce_async_bulk_s2g: op='inc' is not supported for int64 elements (PTX `.inc.s64`); "
     "inc is supported on: u32"),
    ("ac.cp_reduce_async_bulk_s2g(A[0], sh16, 'add')",
     "cp_reduce_async_bulk_s2g: `dst` (float32) and `src` (float16) must have the same dtype"),
    ("ac.cp_reduce_async_bulk_s2g(A[0], sh[0], 'add', bf16=True)",
     "cp_reduce_async_bulk_s2g: bf16=True reads the views as raw bfloat16 bits: they must hold "
     "int16 or uint16, got float32"),
    ("ac.cp_reduce_async_bulk_s2g(A[0], sh[0], n)",
     "cp_reduce_async_bulk_s2g: `op` must be a compile-time constant (str literal)"),
    # tensor copies
    ("ac.cp_async_bulk_tensor_load(sh, A, (n, n), bar)",
     "cp_async_bulk_tensor_load: `tensor_map` must be an ac.TensorMap passed as a kernel argument "
     "(a 1-D uint64 device array inside the kernel), got array(float32, 2d, C)"),
    ("ac.cp_async_bulk_tensor_load(sh, tm, n, bar)",
     "cp_async_bulk_tensor_load: `coords` must be a tuple of 1..5 integer element indices in the "
     "array's axis order (for a 1-D tensor write `(x,)`), got int32"),
    ("ac.cp_async_bulk_tensor_load(sh, tm, (n, n, n, n, n, n), bar)",
     "cp_async_bulk_tensor_load: `coords` has 6 entries; a tensor copy is 1-D to 5-D"),
    ("ac.cp_async_bulk_tensor_load(sh, tm, (n, 1.0), bar)",
     "cp_async_bulk_tensor_load: `coords`[1] must be an integer, got float64"),
    ("ac.cp_async_bulk_tensor_load(F, tm, (n, n), bar)",
     "cp_async_bulk_tensor_load: `dst` is Fortran-ordered"),
    ("ac.cp_async_bulk_tensor_load(sh, tm, (n, n), fbar)",
     "cp_async_bulk_tensor_load: `mbar` must be a uint64 shared-memory array view"),
    ("ac.cp_async_bulk_tensor_load(sh, tm, (n, n), bar, multicast_mask=0)",
     "cp_async_bulk_tensor_load: multicast_mask=0 is outside 1..0xFFFF"),
    ("ac.cp_async_bulk_tensor_load(sh, tm, (n, n), bar, fence=n)",
     "cp_async_bulk_tensor_load: `fence` must be a compile-time constant (bool literal)"),
    ("ac.cp_async_bulk_tensor_store(tm, (n, n), F)", "cp_async_bulk_tensor_store: `src` is Fortran-ordered"),
    ("ac.cp_async_bulk_tensor_store(tm, [n, n], sh)",
     "cp_async_bulk_tensor_store: `coords` must be a tuple"),
    ("ac.cp_reduce_async_bulk_tensor(tm, (n, n), sh, 'add', bf16=True)",
     "cp_reduce_async_bulk_tensor: bf16=True reads the views as raw bfloat16 bits"),
    # measured on the H200: add and the bitwise ops through an INT64 map fail
    # with an illegal instruction (through a UINT64 map they match numpy)
    ("ac.cp_reduce_async_bulk_tensor(tm, (n,), shi, 'add')",
     "cp_reduce_async_bulk_tensor: op='add' on int64 elements is refused: on the H200 (driver 580) "
     "this reduction through an INT64 tensor map failed the launch with "
     "CUDA_ERROR_ILLEGAL_INSTRUCTION"),
    ("ac.cp_reduce_async_bulk_tensor(tm, (n,), shi, 'or')",
     "build the map over a uint64 view (ac.TensorMap(x.view(np.uint64), box)) and reduce a uint64 "
     "tile"),
    ("ac.cp_reduce_async_bulk_tensor(tm, (n,), shi, 'inc')",
     "cp_reduce_async_bulk_tensor: op='inc' on int64 elements is refused: PTX lists inc/dec tensor "
     "reductions for .u32 only"),
    ("ac.cp_reduce_async_bulk_tensor(tm, (n, n), sh, 'min')",
     "cp_reduce_async_bulk_tensor: op='min' is not supported for float32 elements"),
    ("ac.prefetch_tensormap(A)", "prefetch_tensormap: `tensor_map` must be an ac.TensorMap"),
    ("ac.fence_proxy_tensormap(tm, 'device')",
     "fence_proxy_tensormap: `scope`='device' is not supported; allowed: 'cta', 'cluster', 'gpu', 'sys'"),
])
def test_typing_errors(body, message):
    assert message in compile_error(body)
