"""Every compile-time contract error of the cp.async family, with its message."""

from __future__ import annotations

import re

import pytest
from numba import types
from numba.core.errors import NumbaError

from .helpers import kernel_from_source, ptx_of

F32_2D = types.float32[:, ::1]


def compile_error(body: str, sig=(F32_2D, types.int32), cc=(8, 0), extra=""):
    src = f"""
    {extra}
    def k(A, n):
        tid = cuda.threadIdx.x
        sh = cuda.shared.array((32, 4), np.float32, alignment=16)
        {body}
    """
    with pytest.raises(NumbaError) as info:  # a compile-time error (numba-cuda's typing or lowering)
        ptx_of(kernel_from_source(src), sig, cc=cc)
    return str(info.value)


@pytest.mark.parametrize("body,message", [
    ("ac.cp_async(sh[tid, :], A[tid, :], n)",
     "cp_async: `chunk_bytes` must be a compile-time constant (int literal), got a run-time int32"),
    ("ac.cp_async(sh[tid, :], A[tid, :], 12)",
     "cp_async: `chunk_bytes`=12 is not supported; allowed: 4, 8, 16"),
    ("ac.cp_async(sh[tid, :], A[tid, :], 8, cache='cg')",
     "cp_async: cache='cg' copies 16-byte chunks only; chunk_bytes=8 needs cache='ca'"),
    ("ac.cp_async(sh[tid, :], A[tid, :], 4, cache='cg')",
     "cp_async: cache='cg' copies 16-byte chunks only; chunk_bytes=4 needs cache='ca'"),
    ("ac.cp_async(sh[tid, :], A[tid, :], 16, cache='cs')",
     "cp_async: `cache`='cs' is not supported; allowed: 'ca', 'cg'"),
    ("ac.cp_async(sh[tid, :], A[tid, :], 16, prefetch=32)",
     "cp_async: `prefetch`=32 is not supported; allowed: 64, 128, 256"),
    ("ac.cp_async(sh[tid, :], A[tid, :], 16, src_size=n, ignore_src=n > 1)",
     "cp_async: src_size and ignore_src are alternative zero-fill forms; supply one of them, not both"),
    ("ac.cp_async(sh[tid, :], A[tid, :], 16, src_size=17)",
     "cp_async: src_size=17 is outside 0..chunk_bytes (16)"),
    ("ac.cp_async(sh[tid, :], n, 16)",
     "cp_async: `src` must be a Numba array view (for example `sh[tid, :]`), got int32"),
    ("ac.cp_async(n, A[tid, :], 16)",
     "cp_async: `dst` must be a Numba array view (for example `sh[tid, :]`), got int32"),
    ("ac.cp_async(sh[tid, :], A[tid, :], 16, bogus=1)",
     "cp_async: got an unexpected keyword argument 'bogus'"),
    ("ac.cp_async(sh[tid, :], A[tid, :], 16, 'cg')",
     "cp_async: too many positional arguments"),
    ("ac.cp_async(sh[tid, :], A[tid, :], 16, scope='warp')",
     "cp_async: `scope`='warp' is not supported; allowed: 'thread', 'cta'"),
    ("ac.cp_async(sh[tid, :], A, 16)",
     "cp_async: `dst` (1-D) and `src` (2-D) must have the same rank"),
    ("ac.cp_async(sh[tid, :], A[tid, :], 16, pred=A)",
     "cp_async: `pred` must be a boolean or integer value, got array(float32, 2d, C)"),
    ("ac.cp_async(sh[tid, :], A[tid, :], 16, src_size=1.5)",
     "cp_async: `src_size` must be an integer value, got float64"),
    ("ac.cp_async(sh[tid, :], A[tid, :], 16, cache_policy=A)",
     "cp_async: `cache_policy` must be an integer value, got array(float32, 2d, C)"),
    # a run-time integer depth is allowed (a switch over the immediates); a float is not
    ("ac.wait_group(1.5 * n)", "wait_group: `n` must be an integer value, got float64"),
    ("ac.wait_group(-1)", "wait_group: `n` must be >= 0, got -1"),
    ("ac.createpolicy_fractional('evict_often')",
     "createpolicy_fractional: `primary`='evict_often' is not supported"),
])
def test_typing_errors(body, message):
    assert message in compile_error(body)


def test_itemsize_must_divide_chunk():
    src = """
    def k(A):
        sh = cuda.shared.array((32, 2), np.float64, alignment=16)
        ac.cp_async(sh[0, :], A[0, :], 4)
    """
    with pytest.raises(Exception) as info:
        ptx_of(kernel_from_source(src), (types.float64[:, ::1],), cc=(8, 0))
    assert "cp_async: the itemsize 8 of `dst` (float64) does not divide chunk_bytes=4" in str(info.value)


def test_fortran_order_rejected():
    src = """
    def k(A):
        sh = cuda.shared.array((32, 4), np.float32, alignment=16)
        ac.cp_async(sh, A, 16, scope='cta')
    """
    with pytest.raises(Exception) as info:
        ptx_of(kernel_from_source(src), (types.float32[::1, :],), cc=(8, 0))
    assert "`src` is Fortran-ordered; its last axis is not contiguous" in str(info.value)


@pytest.mark.parametrize("body,api,syntax", [
    ("ac.cp_async(sh[tid, :], A[tid, :], 16)", "cp_async", "cp.async.{ca,cg}.shared.global"),
    ("ac.commit_group()", "commit_group", "cp.async.commit_group;"),
    ("ac.wait_group(0)", "wait_group", "cp.async.wait_group N;"),
    ("ac.wait_all()", "wait_all", "cp.async.wait_all;"),
    ("ac.createpolicy_fractional()", "createpolicy_fractional", "createpolicy.fractional"),
])
def test_older_target_names_instruction_and_sm(body, api, syntax):
    msg = compile_error(body, cc=(7, 5))
    assert re.search(rf"{api}: `{re.escape(syntax)}[^`]*` needs sm_80 \(PTX ISA 7\.\d\); "
                     r"this kernel is compiled for sm_75", msg), msg


def test_sm_check_survives_typing_cache():
    # numba caches intrinsic typing per argument types: compiling the same
    # kernel for sm_80 first must not let a later sm_75 compile through.
    src = """
    def k(A, n):
        ac.commit_group()
    """
    fn = kernel_from_source(src)
    ptx_of(fn, (F32_2D, types.int32), cc=(8, 0))
    with pytest.raises(Exception, match="needs sm_80"):
        ptx_of(fn, (F32_2D, types.int32), cc=(7, 5))
