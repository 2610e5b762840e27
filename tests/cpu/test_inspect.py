"""ac.inspect: compile-only reports of a kernel's asynchronous instructions."""

from __future__ import annotations

import inspect as stdlib_inspect
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda, types

import numba_asynccopy as ac
from numba_asynccopy import _compat, toolchain
from numba_asynccopy._compat import TypingError
from numba_asynccopy.examples import seeds
from numba_asynccopy import report
from numba_asynccopy.report import InspectReport, match_forms, parse_ptxas
from numba_asynccopy.report import compile as rcompile
from numba_asynccopy.report.compile import _portable, _rebuild
from numba_asynccopy.report.match import directive_form, parse_ptx, tally
from numba_asynccopy.report.parse import cluster_shape, shared_memory

from ..conftest import tool_missing

F32 = types.float32[:, ::1]
STAGES = 2


def pipeline(A, out):
    full = cuda.shared.array(STAGES, np.uint64)
    empty = cuda.shared.array(STAGES, np.uint64)
    buf = cuda.shared.array((STAGES, 32, 4), np.float32, alignment=16)
    tid = cuda.threadIdx.x
    if tid == 0:
        for s in range(STAGES):
            ac.mbarrier_init(full[s:], 32)
            ac.mbarrier_init(empty[s:], 96)
    cuda.syncthreads()
    for t in range(A.shape[0]):
        s, phase = t % STAGES, (t // STAGES) & 1
        if tid < 32:
            ac.mbarrier_wait_parity(empty[s:], phase ^ 1)
            ac.cp_async(buf[s, tid, :], A[t, tid, :], 16)
            ac.cp_async_mbarrier_arrive(full[s:], noinc=True)
        else:
            ac.mbarrier_wait_parity(full[s:], phase)
            out[t, tid - 32] = buf[s, (tid - 32) % 32, 0] * 2.0
            ac.mbarrier_arrive(empty[s:], sem="release", scope="cta")


def test_package_keeps_stdlib_inspect_and_exports_the_function():
    assert callable(ac.inspect) and ac.inspect is report.inspect
    assert _compat.inspect is stdlib_inspect
    assert rcompile.inspect is stdlib_inspect
    assert "inspect" in ac.__all__
    # no module of the package is named like a standard library one
    pkg = Path(ac.__file__).parent
    assert not (pkg / "inspect.py").exists()
    assert not {p.stem for p in pkg.rglob("*.py")} & set(sys.stdlib_module_names)


def test_row_shift_report_for_sm80():
    fn, sig, _ = seeds.SEEDS["shift_rows"]
    r = ac.inspect(fn, *sig, cc=(8, 0))
    assert isinstance(r, InspectReport) and r.target == "sm_80"
    assert [(i.opcode, i.count, i.form) for i in r.instructions] == [
        ("cp.async.cg.shared.global", 1, "cp.async"),
        ("cp.async.commit_group", 1, "cp.async.commit_group"),
        ("cp.async.wait_group", 1, "cp.async.wait_group"),
    ]
    assert (r.min_sm, r.min_ptx) == (80, "7.0")
    assert r.static_shared_bytes == 64 * 4 * 4 and not r.dynamic_shared
    assert r.cluster is None and not r.explicit_cluster
    # each PTX line sits under the Python line it came from
    src = stdlib_inspect.getsource(seeds.shift_rows).splitlines()
    first = seeds.shift_rows.__code__.co_firstlineno
    by_op = {pl.opcode: pl for pl in r.lines}
    cp = by_op["cp.async.cg.shared.global"]
    assert cp.file.endswith("seeds.py") and cp.source == "ac.cp_async(sh[tid, :], A[tid, :], 16)"
    assert src[cp.line - first].strip() == cp.source
    assert by_op["cp.async.wait_group"].text == "cp.async.wait_group 0"
    assert by_op["cp.async.wait_group"].source == "ac.wait_group(0)"


def test_row_shift_report_for_sm80_has_ptxas_resources():
    # ptxas's -v counts, when a ptxas that reads NVVM's PTX is here (a
    # skip with what to install otherwise; a failure under make test)
    if toolchain.find_tool("ptxas") is None:
        tool_missing(toolchain.ToolMissing(toolchain.missing_reason("ptxas")))
    fn, sig, _ = seeds.SEEDS["shift_rows"]
    r = ac.inspect(fn, *sig, cc=(8, 0))
    assert r.ptxas_error is None
    assert r.resources is not None and r.resources.registers > 0
    assert r.resources.shared_bytes == 64 * 4 * 4 and r.resources.spill_stores == 0


def test_tile_rows_unrolls_four_copies_and_zfill_keeps_its_operand():
    fn, sig, _ = seeds.SEEDS["tile_rows"]
    assert ac.inspect(fn, *sig).count("cp.async.cg") == 4
    fn, sig, _ = seeds.SEEDS["zfill_rows"]
    r = ac.inspect(fn, *sig)
    (cp,) = [pl for pl in r.lines if pl.opcode.startswith("cp.async.cg")]
    assert cp.opcode == "cp.async.cg.shared.global.L2::128B"
    # four operands: the src-size register after the 16-byte chunk
    assert re.fullmatch(r"cp\.async\.cg\.shared\.global\.L2::128B \[%r\d+\], \[%rd\d+\], 16, %r\d+",
                        cp.text), cp.text
    fn, sig, _ = seeds.SEEDS["pred_rows"]
    (cp,) = [pl for pl in ac.inspect(fn, *sig).lines if pl.opcode.startswith("cp.async.cg")]
    assert cp.text.startswith("@")  # the predicate guard is shown


def test_mbarrier_pipeline_needs_sm90_and_names_each_form():
    r = ac.inspect(pipeline, types.float32[:, :, ::1], F32)
    got = {i.opcode: (i.count, i.form, i.min_ptx, i.min_sm) for i in r.instructions}
    assert got == {
        "mbarrier.init.shared.b64": (4, "mbarrier.init", "7.0", 80),
        "mbarrier.try_wait.parity.shared::cta.b64": (2, "mbarrier.try_wait.parity", "7.8", 90),
        "cp.async.cg.shared.global": (1, "cp.async", "7.0", 80),
        "cp.async.mbarrier.arrive.noinc.shared.b64": (1, "cp.async.mbarrier.arrive", "7.0", 80),
        "mbarrier.arrive.release.cta.shared::cta.b64": (1, "mbarrier.arrive.sem", "8.0", 90),
    }
    assert (r.min_sm, r.min_ptx) == (90, "8.0")
    assert r.static_shared_bytes == 2 * 8 * 2 + 2 * 32 * 4 * 4
    text = str(r)
    assert "needs:          sm_90, PTX ISA 8.0" in text
    # the API column names the kernel's call that emitted it (not every function that may)
    row = next(ln for ln in text.splitlines() if "mbarrier.try_wait.parity" in ln and "sm_" in ln)
    assert row.rstrip().endswith("ac.mbarrier_wait_parity"), row
    assert "ac.mbarrier_wait_parity(full[s:], phase)" in text
    html = r._repr_html_()
    assert "<table>" in html and "mbarrier.try_wait.parity.shared::cta.b64" in html
    assert "phase ^ 1" in html  # source text, escaped into <pre>


def test_ipython_plain_text_is_the_full_report():
    """A report that is a notebook cell's value: its text/plain is what print shows."""
    pytest.importorskip("IPython")
    from IPython.core.formatters import PlainTextFormatter

    r = ac.inspect(pipeline, types.float32[:, :, ::1], F32)
    plain = PlainTextFormatter()(r)
    assert plain == str(r)
    assert plain.startswith("ac.inspect: pipeline(") and "compiled for sm_90" in plain
    assert repr(r).startswith("<InspectReport pipeline sm_90: 9 async instructions")  # plain Python


@pytest.mark.parametrize("opcode,key", [
    ("mbarrier.arrive.shared::cta.b64", "mbarrier.arrive.count"),
    ("mbarrier.arrive.relaxed.cluster.shared::cta.b64", "mbarrier.arrive.sem"),
    ("mbarrier.try_wait.shared::cta.b64", "mbarrier.try_wait"),
    ("mbarrier.try_wait.parity.relaxed.cta.shared::cta.b64", "mbarrier.wait.sem"),
    ("mbarrier.test_wait.parity.shared.b64", "mbarrier.test_wait.parity"),
    ("cp.async.ca.shared.global.L2::cache_hint.L2::256B", "cp.async"),
    ("createpolicy.fractional.L2::evict_last.L2::evict_unchanged.b64", "createpolicy"),
    ("fence.proxy.async", "fence.proxy.async"),
    ("fence.proxy.async.shared::cta", "fence.proxy.async"),
    ("elect.sync", "elect.sync"),
])
def test_opcode_text_maps_to_its_forms_row(opcode, key):
    assert match_forms(opcode)[0].key == key


def test_an_opcode_outside_the_table_is_listed_without_requirements():
    # the tile::scatter4 mode of the tensor store (sm_100a) has no row (and no intrinsic) yet
    op = "cp.async.bulk.tensor.2d.global.shared::cta.tile::scatter4.bulk_group"
    ptx = (f".version 8.6\n.target sm_100a\n\t{op} "
           "[%rd1, {%r1, %r2, %r3, %r5, %r6}], [%r4];\n\tadd.s32 %r1, %r2, %r3;\n")
    lines, sregs = parse_ptx(ptx)
    assert [pl.opcode for pl in lines] == [op]
    (ins,) = tally(lines, sregs)
    assert ins.form is None and ins.min_sm is None


def test_dispatcher_and_example_arguments_type_like_a_launch():
    fn, sig, _ = seeds.SEEDS["shift_rows"]
    a = np.zeros((64, 4), np.float32)
    r = ac.inspect(cuda.jit(fn), a, a)
    assert r.argtypes == sig and r.name == "shift_rows"
    assert r.count("cp.async") == 3


def test_errors():
    fn, sig, _ = seeds.SEEDS["shift_rows"]
    with pytest.raises(TypeError, match="give the kernel's argument types"):
        ac.inspect(fn)
    with pytest.raises(TypeError, match="expected a @cuda.jit kernel"):
        ac.inspect(42, *sig)
    with pytest.raises(ValueError, match=r"cc must be \(major, minor\)"):
        ac.inspect(fn, *sig, cc=(9,))
    # numba-cuda's TypingError, or the package's ContractError (a numba.core
    # TypingError) where this is the process's first compile of the kernel
    with pytest.raises((TypingError, _compat.ContractError),
                       match=r"mbarrier_arrive: .* needs sm_90 \(PTX ISA 8\.0\); this kernel is compiled for sm_80"):
        ac.inspect(pipeline, types.float32[:, :, ::1], F32, cc=(8, 0))


@pytest.mark.parametrize("cc,exc", [
    (9, TypeError), ("9.0", TypeError), ((9, "0"), TypeError), ((9.0, 0), TypeError),
    ((True, 0), TypeError), ((9,), ValueError), ((9, 0, 0), ValueError),
])
def test_cc_must_be_a_pair_of_ints(cc, exc):
    fn, sig, _ = seeds.SEEDS["shift_rows"]
    with pytest.raises(exc, match=r"ac.inspect: cc must be \(major, minor\), a tuple of two ints"):
        ac.inspect(fn, *sig, cc=cc)


def test_cc_must_be_a_target_of_the_toolkit():
    fn, sig, _ = seeds.SEEDS["shift_rows"]
    targets = rcompile.supported_ccs()
    if targets is None:
        pytest.skip("NVRTC cannot list its targets here")
    assert (8, 0) in targets and (9, 0) in targets
    # numba-cuda would compile these for the nearest target (or refuse one below
    # them all); (7, 0) is a target of CUDA 12, not of 13
    for cc in [c for c in [(9, 9), (7, 0), (3, 0), (99, 0)] if c not in targets]:
        with pytest.raises(ValueError, match=rf"cc={re.escape(str(cc))} is not a target .* cc must be one of .*\(9, 0\)"):
            ac.inspect(fn, *sig, cc=cc)
    assert ac.inspect(fn, *sig, cc=[8, 0]).cc == (8, 0)
    assert ac.inspect(fn, *sig, cc=(np.int64(9), np.int64(0))).target == "sm_90"


def test_tensor_copy_lines_are_whole():
    """The coordinates of a TMA copy are braces inside the operands: the
    listing shows the whole instruction, while an asm block's braces still
    split its statements."""
    ptx = ("\tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
           "[%r1], [%rd2, {%r3, %r4}], [%r5];\n"
           "\t{ .reg .pred p; @p mbarrier.try_wait.parity.shared::cta.b64 p, [%r1], %r2; }\n"
           "$L__BB0_2: {\n\tld.shared::cluster.v4.u32 {%r6, %r7, %r8, %r9}, [%r10];\n}\n")
    lines, _ = parse_ptx(ptx)
    assert [(pl.opcode, pl.text) for pl in lines] == [
        ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
         "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
         "[%r1], [%rd2, {%r3, %r4}], [%r5]"),
        ("mbarrier.try_wait.parity.shared::cta.b64", "@p mbarrier.try_wait.parity.shared::cta.b64 p, [%r1], %r2"),
        ("ld.shared::cluster.v4.u32", "ld.shared::cluster.v4.u32 {%r6, %r7, %r8, %r9}, [%r10]"),
    ]
    from numba_asynccopy.examples import tma_copy

    r = ac.inspect(tma_copy.make_tma_copy(4, (32, 64)), *tma_copy.SIGNATURE)
    tensor = [pl.text for pl in r.lines if pl.opcode.startswith("cp.async.bulk.tensor")]
    assert len(tensor) == r.count("cp.async.bulk.tensor") > 0
    for text in tensor:
        assert re.search(r"\[%rd\d+, \{%r\d+, %r\d+\}\]", text), text
        assert f"    {text}\n" in str(r) + "\n"


def test_without_ptxas_the_report_says_so(monkeypatch):
    monkeypatch.setattr(toolchain, "find_tool", lambda name: None)
    fn, sig, _ = seeds.SEEDS["shift_rows"]
    r = ac.inspect(fn, *sig)
    assert r.resources is None and "ptxas not found" in r.ptxas_error
    assert "ptxas:" in str(r) and "not run: ptxas not found" in str(r)


def test_cluster_shape_shared_memory_and_ptxas_parsing():
    assert cluster_shape(".entry k() .explicitcluster .reqnctapercluster 2, 2, 1\n{") == ((2, 2, 1), True)
    assert cluster_shape(".entry k() .reqnctapercluster 4\n{") == ((4, 1, 1), False)
    assert cluster_shape(".entry k()\n{") == (None, False)
    assert directive_form(".entry k() .reqnctapercluster 4\n{") is not None
    ptx = (".visible .shared .align 16 .b8 _cudapy_smem_1[1024];\n"
           ".shared .align 8 .b8 bar[16];\n.extern .shared .align 16 .b8 dyn[];\n")
    assert shared_memory(ptx) == (1040, True)
    log = ("ptxas info    : Function properties for k\n    16 bytes stack frame, 8 bytes spill stores, "
           "4 bytes spill loads\nptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem\n")
    r = parse_ptxas(log)
    assert (r.registers, r.shared_bytes, r.spill_stores, r.spill_loads, r.stack_frame, r.barriers) == \
        (40, 2048, 8, 4, 16, 1)


def _make_kernel(words):
    chunk = words * 4

    def k(A, B):
        tid = cuda.threadIdx.x
        sh = cuda.shared.array((64, words), np.uint32, alignment=16)
        ac.cp_async(sh[tid, :], A[tid, :], chunk)
        ac.commit_group()
        ac.wait_all()
        for j in range(words):
            B[tid, j] = sh[tid, j]
    return k


def test_source_shipping_rebuilds_closures_and_line_numbers():
    k = _make_kernel(2)
    p = _portable(k)
    assert p["env"]["words"] == ("value", 2) and p["env"]["chunk"] == ("value", 8) and p["env"]["ac"] == ("module", "numba_asynccopy")
    rebuilt = _rebuild(p)
    assert rebuilt.__code__.co_firstlineno == k.__code__.co_firstlineno
    sig = (types.uint32[:, ::1], types.uint32[:, ::1])
    assert ac.inspect(rebuilt, *sig).count("cp.async.ca.shared.global") == 1


def test_simulator_mode_compiles_in_a_fresh_interpreter(monkeypatch):
    monkeypatch.setattr(rcompile, "_simulator_on", lambda: True)
    r = ac.inspect(_make_kernel(4), types.uint32[:, ::1], types.uint32[:, ::1])
    assert r.count("cp.async.cg.shared.global") == 1 and r.count("cp.async.wait_all") == 1
    (cp,) = [pl for pl in r.lines if pl.opcode.startswith("cp.async.cg")]
    assert cp.file == __file__ and cp.source.startswith("ac.cp_async(sh[tid, :], A[tid, :], chunk)")


def _bad_kernel(A):
    ac.cp_async(A, A, 3)  # chunk_bytes 3: refused by the typing


def test_simulator_mode_compiles_in_one_interpreter_per_environment(monkeypatch):
    monkeypatch.setattr(rcompile, "_simulator_on", lambda: True)
    sig = (types.uint32[:, ::1], types.uint32[:, ::1])
    first = ac.inspect(_make_kernel(4), *sig)
    proc = rcompile._server["proc"]
    second = ac.inspect(_make_kernel(2), *sig)  # 8-byte chunks: cp.async.ca
    assert rcompile._server["proc"] is proc and proc.poll() is None  # the same interpreter
    assert first.count("cp.async.cg.shared.global") == 1 == second.count("cp.async.ca.shared.global")
    # a compile error comes back with its type and message; the interpreter stays
    with pytest.raises(RuntimeError, match=r"(?s)ac\.inspect: compiling `_bad_kernel` outside the "
                                           r"simulator failed: ContractError: cp_async: `chunk_bytes`=3 is not "
                                           r"supported; allowed: 4, 8, 16\n"):
        ac.inspect(_bad_kernel, types.uint32[::1])
    assert rcompile._server["proc"] is proc and proc.poll() is None
    # another environment: another interpreter (it reads the environment once)
    monkeypatch.setenv("NUMBA_ASYNCCOPY_INSPECT_TEST", "1")
    ac.inspect(_make_kernel(4), *sig)
    assert rcompile._server["proc"] is not proc and proc.poll() is not None


def test_simulator_mode_reports_an_interpreter_that_dies(monkeypatch):
    monkeypatch.setattr(rcompile, "_simulator_on", lambda: True)
    monkeypatch.setattr(rcompile, "_CHILD", "import sys; sys.stderr.write('boom: no compiler\\n'); "
                                            "sys.exit(3)")
    monkeypatch.setenv("NUMBA_ASYNCCOPY_INSPECT_TEST", "2")  # a fresh interpreter
    with pytest.raises(RuntimeError, match=r"outside the simulator failed: boom: no compiler$"):
        ac.inspect(_make_kernel(4), types.uint32[:, ::1], types.uint32[:, ::1])
    assert "proc" not in rcompile._server


def test_simulator_mode_ships_device_functions(monkeypatch):
    # the copy examples call a device function (examples/_tiles.block_tiles):
    # the fresh interpreter must compile it without asking for a GPU
    from numba_asynccopy.examples.staged_copy import SIGNATURE, make_staged_copy

    monkeypatch.setattr(rcompile, "_simulator_on", lambda: True)
    r = ac.inspect(make_staged_copy(2, 16, 256), *SIGNATURE, cc=(9, 0))
    assert {pl.text for pl in r.lines if pl.opcode == "cp.async.wait_group"} == {"cp.async.wait_group 1"}


def _tma_load(tmap, out):
    bar = cuda.shared.array(1, np.uint64)
    tile = cuda.shared.array((8, 32), np.float32, alignment=128)
    if cuda.threadIdx.x == 0:
        ac.mbarrier_init(bar[0:], 1)
        ac.fence_proxy_async("shared::cta")
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        ac.mbarrier_arrive_expect_tx(bar[0:], 1024)
        ac.cp_async_bulk_tensor_load(tile, tmap, (0, 0), bar[0:])
    ac.mbarrier_wait_parity(bar[0:], 0)
    out[cuda.threadIdx.x] = tile[0, cuda.threadIdx.x]


def test_inserted_instruction_is_marked_with_its_requirement():
    r = ac.inspect(_tma_load, types.uint64[::1], types.float32[::1])
    text = str(r)
    fence = next(i for i in r.instructions if i.opcode.startswith("fence.proxy.tensormap"))
    assert fence.inserted_by == "cp_async_bulk_tensor_load" and fence.min_ptx == "8.3"
    assert ("needs:          sm_90, PTX ISA 8.3 (for fence.proxy.tensormap::generic.acquire.sys, "
            "which ac.cp_async_bulk_tensor_load inserts)") in text, text
    row = next(ln for ln in text.splitlines() if "fence.proxy.tensormap" in ln and "  8.3  " in ln)
    assert row.rstrip().endswith("inserted by ac.cp_async_bulk_tensor_load"), row
    load = next(i for i in r.instructions if i.opcode.startswith("cp.async.bulk.tensor"))
    assert load.api == "cp_async_bulk_tensor_load" and load.inserted_by is None


def _group_pipeline(A, B):
    sh = cuda.shared.array((2, 64, 4), np.float32, alignment=16)
    pipe = ac.pipeline.group_pipeline(2)
    st = ac.pipeline.producer_start(pipe)
    ac.pipeline.producer_acquire(pipe, st)
    ac.cp_async(sh[0, cuda.threadIdx.x, :], A[cuda.threadIdx.x, :], 16)
    ac.pipeline.producer_commit(pipe, st)
    ac.pipeline.consumer_wait(pipe, st)
    B[cuda.threadIdx.x] = sh[0, cuda.threadIdx.x, 0]


def test_pipeline_operations_are_attributed_to_the_users_lines():
    r = ac.inspect(_group_pipeline, types.float32[:, ::1], types.float32[::1])
    listing = r.source_listing()
    assert "pipeline.py" not in listing, listing
    assert "ac.pipeline.producer_commit(pipe, st)\n    cp.async.commit_group" in listing, listing
    apis = {i.opcode: i.api for i in r.instructions}
    assert apis["cp.async.commit_group"] == "pipeline.producer_commit", apis
    assert apis["cp.async.wait_group"] == "pipeline.consumer_wait", apis
