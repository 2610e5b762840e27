"""Every compile-time contract error of the cluster family, with its message."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda, types
from numba.core.errors import NumbaError

from .helpers import kernel_from_source, ptx_of

U32 = types.uint32[::1]
REC3 = np.dtype([("a", "u1"), ("b", "u1"), ("c", "u1")])


def compile_error(body: str, cc=(9, 0), device=False) -> str:
    src = f"""
    def k(out, n, f):
        tid = cuda.threadIdx.x
        sh = cuda.shared.array(64, np.uint32, alignment=16)
        sh2 = cuda.shared.array((8, 16), np.uint32, alignment=16)
        h = cuda.shared.array(64, np.float16, alignment=16)
        b = cuda.shared.array(8, np.bool_)
        bar = cuda.shared.array(2, np.uint64, alignment=8)
        bar32 = cuda.shared.array(2, np.uint32, alignment=8)
        rec = cuda.shared.array(16, REC3)
        {body}
    """
    fn = kernel_from_source(src, extra_globals={"REC3": REC3})
    with pytest.raises(NumbaError) as info:  # a compile-time error (numba-cuda's typing or lowering)
        cuda.compile_ptx(fn, (U32, types.int32, types.float32), cc=cc, device=device)
    return str(info.value)


BULK = "cp_async_bulk_cluster"


@pytest.mark.parametrize("body,message", [
    # cp_async_bulk_cluster
    (f"ac.{BULK}(sh, sh, n, bar, 1)",
     f"{BULK}: `chunk_bytes` must be a compile-time constant (int literal), got a run-time int32"),
    (f"ac.{BULK}(sh, sh, 24, bar, 1)", f"{BULK}: chunk_bytes=24 must be a positive multiple of 16"),
    (f"ac.{BULK}(sh, sh, 0, bar, 1)", f"{BULK}: chunk_bytes=0 must be a positive multiple of 16"),
    (f"ac.{BULK}(sh, sh, -16, bar, 1)", f"{BULK}: chunk_bytes=-16 must be a positive multiple of 16"),
    (f"ac.{BULK}(sh, sh, 1048592, bar, 1)",
     f"{BULK}: chunk_bytes=1048592 exceeds the barrier's transaction range (1048575 bytes)"),
    (f"ac.{BULK}(rec, rec, 16, bar, 1)",
     f"{BULK}: the itemsize 3 of `dst`"),
    (f"ac.{BULK}(sh2.T, sh2.T, 32, bar, 1)",
     f"{BULK}: `dst` is Fortran-ordered; its last axis is not contiguous"),
    (f"ac.{BULK}(sh2, sh, 64, bar, 1)",
     f"{BULK}: `dst` (2-D) and `src` (1-D) must have the same rank"),
    (f"ac.{BULK}(sh, sh, 256, bar32, 1)",
     f"{BULK}: `mbar` must be a uint64 shared-memory array view"),
    (f"ac.{BULK}(sh, sh, 256, n, 1)", f"{BULK}: `mbar` must be a uint64 shared-memory array view"),
    (f"ac.{BULK}(sh, n, 256, bar, 1)", f"{BULK}: `src` must be a Numba array view"),
    (f"ac.{BULK}(sh, sh, 256, bar, f)", f"{BULK}: `remote_cta_id` must be an integer value, got float32"),
    (f"ac.{BULK}(sh, sh, 256, bar, 1, pred=f)",
     f"{BULK}: `pred` must be a boolean or integer value, got float32"),
    # DSMEM
    ("out[0] = ac.dsmem_load(b, 1, 0)", "dsmem_load: dtype bool of `view` is not supported"),
    ("out[0] = ac.dsmem_load(n, 1, 0)", "dsmem_load: `view` must be a local shared-memory array view"),
    ("out[0] = ac.dsmem_load(sh2, 1, 0)", "dsmem_load: a 2-D view needs a tuple of 2 indices"),
    ("out[0] = ac.dsmem_load(sh2, 1, (1, 2, 3))",
     "dsmem_load: `index` must be 2 integers for a 2-D view"),
    ("out[0] = ac.dsmem_load(sh, f, 0)", "dsmem_load: `rank` must be an integer value, got float32"),
    ("out[0] = ac.dsmem_load(sh, 1, f)", "dsmem_load: `index` must be an integer or a tuple"),
    ("ac.dsmem_store(sh, 1, 0, sh)", "dsmem_store: `value` must be a number or boolean value"),
    ("ac.dsmem_atomic_add(h, 1, 0, 1)", "dsmem_atomic_add: `atom.shared::cluster.add` has no float16 form"),
    ("ac.map_shared_rank(n, 1)", "map_shared_rank: `view` must be a local shared-memory array view"),
    # remote mbarriers
    ("ac.mbarrier_arrive_remote(bar32, 1)", "mbarrier_arrive_remote: `bar` must be a uint64 shared-memory"),
    ("ac.mbarrier_arrive_remote(bar, 1, 0)", "mbarrier_arrive_remote: `count`=0 is outside 1..2**20-1"),
    ("ac.mbarrier_arrive_remote(bar, f)", "mbarrier_arrive_remote: `cta_rank` must be an integer value"),
    ("ac.mbarrier_expect_tx_remote(bar, 1, 1048576)",
     "mbarrier_expect_tx_remote: `nbytes`=1048576 is outside 0..2**20-1"),
    ("ac.mbarrier_arrive_expect_tx_remote(sh, 1, 16)",
     "mbarrier_arrive_expect_tx_remote: `bar` must be a uint64 shared-memory"),
    # the cta_rank= keyword of the mbarrier functions: the remote forms' one ordering
    ("ac.mbarrier_arrive(bar, sem='relaxed', cta_rank=1)",
     "mbarrier_arrive: `sem`='relaxed' is not supported with `cta_rank`: the barrier of another "
     "CTA is reached by `mbarrier.arrive.release.cluster.shared::cluster.b64`; allowed: 'release'"),
    ("ac.mbarrier_arrive_expect_tx(bar, 16, scope='cta', cta_rank=n)",
     "mbarrier_arrive_expect_tx: `scope`='cta' is not supported with `cta_rank`: the barrier of "
     "another CTA is reached by `mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64`; "
     "allowed: 'cluster'"),
    ("ac.mbarrier_expect_tx(bar, 16, scope='cta', cta_rank=n)",
     "mbarrier_expect_tx: `scope`='cta' is not supported with `cta_rank`: the barrier of another "
     "CTA is reached by `mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64`; allowed: 'cluster'"),
    ("ac.mbarrier_arrive_expect_tx(bar, 16, sem='relaxed', scope='cluster', cta_rank=n)",
     "mbarrier_arrive_expect_tx: `sem`='relaxed' is not supported with `cta_rank`: the barrier of "
     "another CTA is reached by `mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64`; "
     "allowed: 'release'"),
    ("ac.mbarrier_arrive(bar, sem='acquire', cta_rank=1)",
     "mbarrier_arrive: `sem`='acquire' is not supported; allowed: 'release', 'relaxed'"),
    ("ac.mbarrier_arrive(bar, cta_rank=f)", "mbarrier_arrive: `cta_rank` must be an integer value"),
    ("ac.mbarrier_arrive(bar, 0, cta_rank=1)", "mbarrier_arrive: `count`=0 is outside 1..1048575"),
    ("ac.mbarrier_expect_tx(bar, 1048576, cta_rank=1)",
     "mbarrier_expect_tx: `nbytes`=1048576 is outside 0..1048575"),
    ("ac.mbarrier_arrive_expect_tx(bar32, 16, cta_rank=1)",
     "mbarrier_arrive_expect_tx: `bar` must be a uint64 shared-memory"),
    # barrier and declared shape
    ("ac.cluster_arrive('acquire')",
     "cluster_arrive: `sem`='acquire' is not supported; allowed: 'release', 'relaxed'"),
    ("ac.cluster_sync(aligned=n)", "cluster_sync: `aligned` must be a compile-time constant"),
    ("ac.cluster_dims(n)", "cluster_dims: `x` must be a compile-time constant (int literal)"),
    ("ac.cluster_dims(0)", "cluster_dims: `x` must be >= 1, got 0"),
    ("ac.cluster_dims(4, 4)",
     "cluster_dims: a cluster of (4, 4, 1) has 16 CTAs; more than 8 is a non-portable "
     "cluster size: pass non_portable=True"),
    ("ac.cluster_dims(32, non_portable=True)",
     "cluster_dims: a cluster of (32, 1, 1) has 32 CTAs; the largest cluster is 16 CTAs"),
    ("ac.cluster_dims(2)\n        ac.cluster_dims(4)",
     "cluster_dims: the kernel declares two cluster shapes, (2, 1, 1) and (4, 1, 1)"),
])
def test_compile_errors(body, message):
    assert message in compile_error(body)


@pytest.mark.parametrize("body,api,syntax", [
    ("out[0] = ac.cluster_cta_rank()", "cluster_cta_rank", "%cluster_ctarank"),
    ("x, y, z = ac.cluster_dim()", "cluster_dim", "%cluster_nctaid"),
    ("ac.cluster_sync()", "cluster_sync", "barrier.cluster.arrive"),
    ("ac.cluster_wait()", "cluster_wait", "barrier.cluster.wait"),
    ("out[0] = ac.dsmem_load(sh, 1, 0)", "dsmem_load", "ld.shared::cluster"),
    ("ac.dsmem_store(sh, 1, 0, 1)", "dsmem_store", "st.shared::cluster"),
    ("ac.dsmem_atomic_add(sh, 1, 0, 1)", "dsmem_atomic_add", "atom.shared::cluster.add"),
    ("ac.map_shared_rank(sh, 1)", "map_shared_rank", "mapa.u64"),
    ("ac.mbarrier_arrive_remote(bar, 1)", "mbarrier_arrive_remote", "mbarrier.arrive.release.cluster"),
    ("ac.mbarrier_expect_tx_remote(bar, 1, 16)", "mbarrier_expect_tx_remote", "mbarrier.expect_tx"),
    ("ac.mbarrier_arrive_expect_tx_remote(bar, 1, 16)", "mbarrier_arrive_expect_tx_remote",
     "mbarrier.arrive.expect_tx"),
    (f"ac.{BULK}(sh, sh, 256, bar, 1)", BULK, "cp.async.bulk.shared::cluster.shared::cta"),
    ("ac.mbarrier_arrive(bar, cta_rank=1)", "mbarrier_arrive", "mbarrier.arrive.release.cluster"),
    ("ac.mbarrier_arrive(bar, cta_rank=1, scope='cta')", "mbarrier_arrive",
     "mbarrier.arrive.release.cta.shared::cluster"),
    ("ac.mbarrier_expect_tx(bar, 16, cta_rank=1)", "mbarrier_expect_tx",
     "mbarrier.expect_tx.relaxed.cluster.shared::cluster"),
    ("ac.mbarrier_arrive_expect_tx(bar, 16, cta_rank=n)", "mbarrier_arrive_expect_tx",
     "mbarrier.arrive.expect_tx.release.cluster"),
    ("ac.cluster_dims(2)", "cluster_dims", ".reqnctapercluster"),
    ("ac.is_explicit_cluster()", "is_explicit_cluster", "%is_explicit_cluster"),
])
def test_cluster_features_need_sm90(body, api, syntax):
    msg = compile_error(body, cc=(8, 0))
    assert f"{api}: `" in msg and syntax in msg
    assert "needs sm_90" in msg and "compiled for sm_80" in msg


def test_cluster_dims_in_device_function_is_an_error():
    msg = compile_error("ac.cluster_dims(2)", device=True)
    # the function's Python name, not its mangled symbol (the simulator names it so too)
    assert "cluster_dims(2, 1, 1) is called in device function `k`;" in msg
    assert "call cluster_dims in the kernel body" in msg


def test_cluster_dims_outside_a_kernel():
    import numba_asynccopy as ac

    with pytest.raises(NotImplementedError, match="cluster_dims> is not usable in pure-python"):
        ac.cluster_dims(2)


def test_kernel_compiles_cluster_dims():
    # the positive case of the two tests above: the kernel itself may declare it
    src = """
    def k(out):
        ac.cluster_dims(2)
        out[0] = 1
    """
    assert ".reqnctapercluster 2, 1, 1" in ptx_of(kernel_from_source(src), (U32,))
