"""Cluster code generation: exact PTX text of every form, mapa counts, the
declared cluster shape in PTX, checked-mode traps, ptxas for sm_90."""

from __future__ import annotations

import re

import pytest
from numba import types

from numba_asynccopy import toolchain

from .helpers import instructions, kernel_from_source, ptx_of

U32 = types.uint32[::1]


def compile_body(body: str, sig=(U32, types.int32), shared="", cc=(9, 0)) -> str:
    src = f"""
    def k(out, n):
        tid = cuda.threadIdx.x
        sh = cuda.shared.array(64, np.uint32, alignment=16)
        bar = cuda.shared.array(2, np.uint64, alignment=8)
        {shared}
        {body}
    """
    return ptx_of(kernel_from_source(src), sig, cc=cc)


def assembles(ptx: str) -> None:
    toolchain.assemble(ptx)


# --- special registers ----------------------------------------------------------


@pytest.mark.parametrize("api,reg", [
    ("cluster_cta_rank", "%cluster_ctarank"),
    ("cluster_num_ctas", "%cluster_nctarank"),
])
def test_scalar_sregs(api, reg):
    ptx = compile_body(f"out[0] = ac.{api}()")
    assert instructions(ptx, rf"mov\.u32 %r\d+, {reg}$")
    assembles(ptx)


@pytest.mark.parametrize("api,reg", [
    ("cluster_cta_id", "%cluster_ctaid"),
    ("cluster_dim", "%cluster_nctaid"),
    ("cluster_id", "%clusterid"),
    ("num_clusters", "%nclusterid"),
])
def test_triple_sregs(api, reg):
    ptx = compile_body(f"x, y, z = ac.{api}()\n        out[0] = x\n        out[1] = y\n        out[2] = z")
    for axis in "xyz":
        assert len(instructions(ptx, rf"mov\.u32 %r\d+, {reg}\.{axis}$")) == 1
    assembles(ptx)


def test_is_explicit_cluster():
    ptx = compile_body("out[0] = 1 if ac.is_explicit_cluster() else 2")
    assert instructions(ptx, r"mov\.pred p, %is_explicit_cluster$")
    assembles(ptx)


@pytest.mark.parametrize("api,expected", [
    ("cluster_cta_rank", types.int32), ("cluster_num_ctas", types.int32),
    ("cluster_cta_id", types.UniTuple(types.int32, 3)), ("cluster_dim", types.UniTuple(types.int32, 3)),
    ("cluster_id", types.UniTuple(types.int32, 3)), ("num_clusters", types.UniTuple(types.int32, 3)),
    ("is_explicit_cluster", types.boolean),
])
def test_sreg_return_types(api, expected):
    from numba import cuda

    fn = kernel_from_source(f"""
    def f():
        return ac.{api}()
    """, name="f")
    _, resty = cuda.compile_ptx(fn, (), cc=(9, 0), device=True)
    assert resty == expected  # int32 like cuda.threadIdx


# --- the cluster barrier -------------------------------------------------------------


@pytest.mark.parametrize("call,expected", [
    ("ac.cluster_arrive()", ["barrier.cluster.arrive.release"]),
    ("ac.cluster_arrive('relaxed')", ["barrier.cluster.arrive.relaxed"]),
    ("ac.cluster_arrive(sem='release', aligned=True)", ["barrier.cluster.arrive.release.aligned"]),
    ("ac.cluster_arrive(sem='relaxed', aligned=True)", ["barrier.cluster.arrive.relaxed.aligned"]),
    ("ac.cluster_wait()", ["barrier.cluster.wait.acquire"]),
    ("ac.cluster_wait(aligned=True)", ["barrier.cluster.wait.acquire.aligned"]),
    ("ac.cluster_sync()", ["barrier.cluster.arrive.release", "barrier.cluster.wait.acquire"]),
    ("ac.cluster_sync(aligned=True)",
     ["barrier.cluster.arrive.release.aligned", "barrier.cluster.wait.acquire.aligned"]),
])
def test_cluster_barrier_forms(call, expected):
    ptx = compile_body(call)
    assert instructions(ptx, r"barrier\.cluster") == expected
    assembles(ptx)


# --- distributed shared memory -----------------------------------------------------------

DSMEM_DTYPES = {
    "int8": ("s8", "s32"), "uint8": ("u8", None), "int16": ("s16", None), "uint16": ("u16", None),
    "float16": ("b16", None), "int32": ("s32", "s32"), "uint32": ("u32", "u32"),
    "float32": ("f32", "f32"), "int64": ("s64", "u64"), "uint64": ("u64", "u64"),
    "float64": ("f64", "f64"),
}


@pytest.mark.parametrize("dtype", list(DSMEM_DTYPES))
def test_dsmem_load_store(dtype):
    suffix, _ = DSMEM_DTYPES[dtype]
    src = f"""
    def k(out, n):
        d = cuda.shared.array(32, np.{dtype})
        d[cuda.threadIdx.x] = out[0]
        v = ac.dsmem_load(d, n, cuda.threadIdx.x)
        ac.dsmem_store(d, n + 1, 3, v)
    """
    ptx = ptx_of(kernel_from_source(src), (getattr(types, dtype)[::1], types.int32))
    assert len(instructions(ptx, rf"ld\.shared::cluster\.{suffix} ")) == 1
    assert len(instructions(ptx, rf"st\.shared::cluster\.{suffix} ")) == 1
    assert len(instructions(ptx, r"mapa\.shared::cluster\.u32 ")) == 2
    assembles(ptx)


@pytest.mark.parametrize("dtype", [d for d, (_, a) in DSMEM_DTYPES.items() if a and d != "int8"])
def test_dsmem_atomic_add(dtype):
    _, atom = DSMEM_DTYPES[dtype]
    src = f"""
    def k(out, n):
        d = cuda.shared.array(32, np.{dtype})
        out[0] = ac.dsmem_atomic_add(d, n, 5, out[1])
    """
    ptx = ptx_of(kernel_from_source(src), (getattr(types, dtype)[::1], types.int32))
    assert len(instructions(ptx, rf"atom\.shared::cluster\.add\.{atom} ")) == 1
    assert len(instructions(ptx, r"mapa\.shared::cluster\.u32 ")) == 1
    assembles(ptx)


def test_dsmem_2d_index_offset():
    # (8, 16) uint32, element (3, 5): byte offset (3 * 16 + 5) * 4 = 212 from the base
    ptx = compile_body("out[0] = ac.dsmem_load(t, n, (3, 5))",
                       shared="t = cuda.shared.array((8, 16), np.uint32)")
    assert len(instructions(ptx, r"ld\.shared::cluster\.u32 ")) == 1
    assert re.search(r"\+212\b|212;", ptx), "element address of t[3, 5] not found"
    assembles(ptx)


def test_map_shared_rank_is_generic():
    ptx = compile_body("p = ac.map_shared_rank(sh, n)\n        p[tid] = 7\n"
                       "        cuda.atomic.add(p, 1, 1)")
    assert len(instructions(ptx, r"mapa\.u64 ")) == 1
    assert not instructions(ptx, r"mapa\.shared::cluster")
    assert instructions(ptx, r"atom\.add\.u32 ")  # generic atomic through the mapped view
    assembles(ptx)


# --- remote mbarrier operations --------------------------------------------------------------


@pytest.mark.parametrize("call,expected", [
    ("ac.mbarrier_arrive_remote(bar[1:], n)",
     r"mbarrier\.arrive\.release\.cluster\.shared::cluster\.b64 _, \[%r\d+\]$"),
    ("ac.mbarrier_arrive_remote(bar[1:], n, 1)",
     r"mbarrier\.arrive\.release\.cluster\.shared::cluster\.b64 _, \[%r\d+\]$"),
    ("ac.mbarrier_arrive_remote(bar[1:], n, 3)",
     r"mbarrier\.arrive\.release\.cluster\.shared::cluster\.b64 _, \[%r\d+\], %r\d+$"),
    ("ac.mbarrier_arrive_remote(bar[1:], n, count=n)",
     r"mbarrier\.arrive\.release\.cluster\.shared::cluster\.b64 _, \[%r\d+\], %r\d+$"),
    ("ac.mbarrier_expect_tx_remote(bar[1:], n, 256)",
     r"mbarrier\.expect_tx\.relaxed\.cluster\.shared::cluster\.b64 \[%r\d+\], %r\d+$"),
    ("ac.mbarrier_arrive_expect_tx_remote(bar[1:], n, 512)",
     r"mbarrier\.arrive\.expect_tx\.release\.cluster\.shared::cluster\.b64 _, \[%r\d+\], %r\d+$"),
])
def test_remote_mbarrier_forms(call, expected):
    ptx = compile_body(call)
    found = instructions(ptx, r"mbarrier\.")
    assert len(found) == 1 and re.match(expected, found[0]), found
    maps = instructions(ptx, r"mapa\.shared::cluster\.u32 ")
    assert len(maps) == 1
    # the mapped address is the barrier operand
    mapped = maps[0].split()[1].rstrip(",")
    assert f"[{mapped}]" in found[0]
    assembles(ptx)


# --- cp_async_bulk_cluster ---------------------------------------------------------------------

BULK = "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes"


def bulk(ptx):
    return instructions(ptx, re.escape(BULK))


def test_seed_example_ptx():
    from numba_asynccopy.examples import cluster as ex

    ptx = ptx_of(ex.cluster_copy, ex.CLUSTER_COPY_SIG)
    copies = bulk(ptx)
    maps = instructions(ptx, r"mapa\.shared::cluster\.u32 ")
    assert len(copies) == 1 and len(maps) == 2
    m = re.match(rf"{re.escape(BULK)} \[(%r\d+)\], \[(%r\d+)\], 256, \[(%r\d+)\]$", copies[0])
    assert m, copies[0]
    mapped = {x.split()[1].rstrip(",") for x in maps}
    dst, src, bar = m.groups()
    assert dst in mapped and bar in mapped and dst != bar
    assert src not in mapped  # the source address stays local
    assert ".explicitcluster" in ptx and re.search(r"\.reqnctapercluster 2, 1, 1", ptx)
    assert instructions(ptx, r"fence\.proxy\.async\.shared::cta$")
    assembles(ptx)


def test_repeated_chunks_eight_copies_different_strides():
    # (8, 128) float16 windows, row strides 256 (src) and 192 (dst) elements
    ptx = compile_body(
        "ac.cp_async_bulk_cluster(d[:, 32:160], s[:, :128], 256, bar[1:], 1)",
        shared="s = cuda.shared.array((8, 256), np.float16, alignment=16)\n"
               "        d = cuda.shared.array((8, 192), np.float16, alignment=16)")
    copies = bulk(ptx)
    assert len(copies) == 8
    assert all(", 256, [" in c for c in copies)
    assert len(instructions(ptx, r"mapa\.shared::cluster\.u32 ")) == 9  # barrier once + 8 dsts
    assert len({c.split(",")[2] for c in copies}) == 1  # one mapped barrier for all
    assembles(ptx)


@pytest.mark.parametrize("shape,chunk,count", [
    ("(4, 256)", 128, 8),   # the last axis holds two chunks: 4 rows x 2
    ("(2, 3, 64)", 64, 6),  # group and repeat axes
    ("(512,)", 512, 1),
    ("(512,)", 16, 32),
])
def test_chunk_counts(shape, chunk, count):
    ptx = compile_body(
        f"ac.cp_async_bulk_cluster(d, s, {chunk}, bar, n)",
        shared=f"s = cuda.shared.array({shape}, np.uint8, alignment=16)\n"
               f"        d = cuda.shared.array({shape}, np.uint8, alignment=16)")
    copies = bulk(ptx)
    assert len(copies) == count
    assert all(f", {chunk}, [" in c for c in copies)
    assert len(instructions(ptx, r"mapa\.shared::cluster\.u32 ")) == count + 1
    assembles(ptx)


def test_pred_false_emits_nothing_and_runtime_pred_branches():
    ptx = compile_body("ac.cp_async_bulk_cluster(sh, sh, 256, bar, 1, pred=False)")
    assert not bulk(ptx) and not instructions(ptx, r"mapa")
    ptx = compile_body("ac.cp_async_bulk_cluster(sh, sh, 256, bar, 1, pred=n > 2)")
    assert len(bulk(ptx)) == 1
    assert re.search(r"@%p\d+ bra", ptx)
    assembles(ptx)


# --- declared cluster shape -------------------------------------------------------------------


@pytest.mark.parametrize("call,dims", [
    ("ac.cluster_dims(2)", "2, 1, 1"),
    ("ac.cluster_dims(2, 2)", "2, 2, 1"),
    ("ac.cluster_dims(1, 2, 4)", "1, 2, 4"),
    ("ac.cluster_dims(x=4, y=4, non_portable=True)", "4, 4, 1"),
])
def test_cluster_dims_in_ptx(call, dims):
    ptx = compile_body(call + "\n        " + call + "\n        out[0] = ac.cluster_cta_rank()")
    assert ".explicitcluster" in ptx
    assert re.findall(r"\.reqnctapercluster ([\d, ]+)", ptx) == [dims]
    assembles(ptx)


def test_no_cluster_directives_without_cluster_dims():
    ptx = compile_body("out[0] = ac.cluster_cta_rank()")
    assert ".explicitcluster" not in ptx and ".reqnctapercluster" not in ptx


# --- checked mode ---------------------------------------------------------------------------------


def ptx_strings(ptx: str) -> str:
    """The byte-array string constants of the PTX (printf formats), decoded."""
    out = []
    for m in re.finditer(r"\.b8 \S+\[\d+\] = \{([\d, ]+)\}", ptx):
        out.append(bytes(int(x) for x in m.group(1).split(",")).decode(errors="replace"))
    return "\n".join(out)


def checked_ptx(body, shared=""):
    import numba_asynccopy as ac

    with ac.checked_mode():
        return compile_body(body, shared=shared)


@pytest.mark.parametrize("body,messages", [
    ("ac.cp_async_bulk_cluster(sh[:n], sh[n:], 256, bar, n)",
     ["`remote_cta_id`=%lld is outside the cluster", "`dst` is not a local shared-memory view",
      "`mbar` is not 8-byte aligned", "is not 16-byte aligned", "chunk counts differ",
      "is not a whole number of 256-byte chunks"]),
    ("out[0] = ac.dsmem_load(sh, n, tid)",
     ["`rank`=%lld is outside the cluster", "out of range for axis 0"]),
    ("ac.mbarrier_arrive_remote(bar, n)", ["`cta_rank`=%lld is outside the cluster"]),
    ("p = ac.map_shared_rank(sh, n)\n        p[0] = 1", ["`rank`=%lld is outside the cluster"]),
])
def test_checked_mode_traps(body, messages):
    ptx = checked_ptx(body)
    strings = ptx_strings(ptx)
    for msg in messages:
        assert msg in strings, msg
    assert "trap;" in ptx
    assert "%cluster_nctarank" in ptx
    assembles(ptx)


def test_unchecked_has_no_traps():
    ptx = compile_body("ac.cp_async_bulk_cluster(sh, sh, 256, bar, n)\n"
                       "        out[0] = ac.dsmem_load(sh, n, tid)")
    assert "trap;" not in ptx and "checked mode" not in ptx_strings(ptx)


# --- the cta_rank= keyword of the mbarrier functions ----------------------------------------------


def same_kernel_ptx(ptx: str) -> str:
    """PTX with the names that are unique per compiled function (the mangled
    kernel name, the shared arrays' symbols) numbered by first appearance."""
    names: dict[str, str] = {}
    return re.sub(r"_Z\w+|\w*smem_\d+",
                  lambda m: names.setdefault(m.group(0), f"NAME{len(names)}"), ptx)


@pytest.mark.parametrize("keyword,alias", [
    ("ac.mbarrier_arrive(bar[1:], cta_rank=n)", "ac.mbarrier_arrive_remote(bar[1:], n)"),
    ("ac.mbarrier_arrive(bar[1:], 1, cta_rank=n)", "ac.mbarrier_arrive_remote(bar[1:], n, 1)"),
    ("ac.mbarrier_arrive(bar[1:], 3, cta_rank=n)", "ac.mbarrier_arrive_remote(bar[1:], n, 3)"),
    ("ac.mbarrier_arrive(bar[1:], n, sem='release', scope='cluster', cta_rank=1)",
     "ac.mbarrier_arrive_remote(bar[1:], 1, count=n)"),
    ("ac.mbarrier_expect_tx(bar[1:], 256, cta_rank=n)", "ac.mbarrier_expect_tx_remote(bar[1:], n, 256)"),
    ("ac.mbarrier_expect_tx(bar, n, scope='cluster', cta_rank=0)",
     "ac.mbarrier_expect_tx_remote(bar, 0, n)"),
    ("ac.mbarrier_arrive_expect_tx(bar[1:], 512, cta_rank=n)",
     "ac.mbarrier_arrive_expect_tx_remote(bar[1:], n, 512)"),
    ("ac.mbarrier_arrive_expect_tx(bar, n, sem='release', cta_rank=tid)",
     "ac.mbarrier_arrive_expect_tx_remote(bar, tid, n)"),
])
def test_cta_rank_keyword_emits_the_alias_ptx(keyword, alias):
    ptx = compile_body(keyword)
    assert same_kernel_ptx(ptx) == same_kernel_ptx(compile_body(alias))
    assert len(instructions(ptx, r"mapa\.shared::cluster\.u32 ")) == 1
    assembles(ptx)


@pytest.mark.parametrize("count,operand", [("", ""), (", 3", ", %r")])
def test_cta_scope_remote_arrive_has_no_gpu_fence(count, operand):
    """``scope="cta"`` with ``cta_rank``: the remote arrive with PTX's default
    ordering, which ptxas emits with no fence; the cluster-scope form puts
    ``MEMBAR.ALL.GPU`` (and the CTA fence and error barriers) before it."""
    from .helpers import sass_of

    cta = compile_body(f"out[tid] = 1\n        ac.mbarrier_arrive(bar[1:]{count}, cta_rank=n, scope='cta')")
    found = instructions(cta, r"mbarrier\.arrive\.")
    assert len(found) == 1 and re.fullmatch(
        r"mbarrier\.arrive\.release\.cta\.shared::cluster\.b64 _, \[%r\d+\]" + re.escape(operand)
        + (r"\d+" if operand else ""), found[0]), found
    wide = compile_body(f"out[tid] = 1\n        ac.mbarrier_arrive(bar[1:]{count}, cta_rank=n)")
    assert instructions(wide, r"mbarrier\.arrive\.release\.cluster\.shared::cluster")
    ops_cta = toolchain.sass_opcodes(sass_of(cta, verbose=False)[0])
    ops_wide = toolchain.sass_opcodes(sass_of(wide, verbose=False)[0])
    assert any(o.startswith("SYNCS.ARRIVE") for o in ops_cta), ops_cta
    assert not [o for o in ops_cta if o.startswith("MEMBAR")], ops_cta
    assert "MEMBAR.ALL.GPU" in ops_wide, ops_wide


def test_cta_rank_keyword_checked_mode_traps_in_its_own_name():
    ptx = checked_ptx("ac.mbarrier_arrive(bar, cta_rank=n)")
    strings = ptx_strings(ptx)
    assert "mbarrier_arrive: `cta_rank`=%lld is outside the cluster" in strings
    assert "mbarrier_arrive: `bar` is not 8-byte aligned" in strings
    assembles(ptx)


@pytest.mark.parametrize("call", [
    "ac.mbarrier_arrive(b, cta_rank=r)",
    "ac.mbarrier_expect_tx(b, 64, cta_rank=r)",
    "ac.mbarrier_arrive_expect_tx(b, 64, cta_rank=r)",
])
def test_cta_rank_keyword_returns_nothing(call):
    # PTX gives a remote arrive no state (its destination is the sink `_`)
    from numba import cuda

    fn = kernel_from_source(f"""
    def f(r):
        b = cuda.shared.array(1, np.uint64)
        return {call}
    """, name="f")
    _, resty = cuda.compile_ptx(fn, (types.int32,), cc=(9, 0), device=True)
    assert resty == types.none


def test_local_forms_still_return_the_state():
    from numba import cuda

    fn = kernel_from_source("""
    def f(r):
        b = cuda.shared.array(1, np.uint64)
        return ac.mbarrier_arrive(b, cta_rank=None)
    """, name="f")
    _, resty = cuda.compile_ptx(fn, (types.int32,), cc=(9, 0), device=True)
    assert resty == types.uint64
