"""mbarrier, fences and elect.sync: PTX text and operands of every form,
ptxas on the targets each form allows, ordering, and every validation error."""

from __future__ import annotations

import re

import pytest
from numba import types
from numba.core.errors import NumbaError

from numba_asynccopy import toolchain

from .helpers import instructions, kernel_from_source, ptx_of

SIG = (types.uint32[::1], types.int32, types.uint64)
R, RD = r"%r\d+", r"%rd\d+"


def body_ptx(body: str, cc=(9, 0), sig=SIG):
    # A state taken straight from a kernel parameter crashes ptxas 13.5 for
    # sm_80 (segfault); real states come from an arrive, so use one.
    body = body.replace("ac.mbarrier_test_wait(bars[0:], st", "ac.mbarrier_test_wait(bars[0:], NC")
    body = body.replace("NC", "ac.mbarrier_arrive_no_complete(bars[3:], 1)")
    body = body.replace("ac.mbarrier_wait(bars[1:], st)", "ac.mbarrier_wait(bars[1:], ac.mbarrier_arrive_no_complete(bars[3:], 1))")
    src = f"""
    def k(out, n, st):
        bars = cuda.shared.array(4, np.uint64)
        {body}
    """
    return ptx_of(kernel_from_source(src), sig, cc=cc)


def one(ptx: str, opcode_rx: str) -> str:
    found = instructions(ptx, opcode_rx)
    assert len(found) == 1, found
    return found[0]


# (statement, lowest sm, exact instruction regex)
FORMS = [
    ("ac.mbarrier_init(bars[0:], n)", 80, rf"mbarrier\.init\.shared\.b64 \[{R}\], {R}"),
    ("ac.mbarrier_init(bars[1:], 32)", 80, rf"mbarrier\.init\.shared\.b64 \[{R}\], {R}"),
    ("ac.mbarrier_inval(bars[0:])", 80, rf"mbarrier\.inval\.shared\.b64 \[{R}\]"),
    ("out[0] = ac.mbarrier_arrive(bars[0:])", 80, rf"mbarrier\.arrive\.shared\.b64 {RD}, \[{R}\]"),
    ("out[0] = ac.mbarrier_arrive(bars[0:], 3)", 90,
     rf"mbarrier\.arrive\.shared::cta\.b64 {RD}, \[{R}\], {R}"),
    ("out[0] = ac.mbarrier_arrive(bars[0:], n)", 90,
     rf"mbarrier\.arrive\.shared::cta\.b64 {RD}, \[{R}\], {R}"),
    ("out[0] = ac.mbarrier_arrive(bars[0:], sem='release', scope='cluster')", 90,
     rf"mbarrier\.arrive\.release\.cluster\.shared::cta\.b64 {RD}, \[{R}\]"),
    ("out[0] = ac.mbarrier_arrive(bars[0:], 2, sem='relaxed')", 90,
     rf"mbarrier\.arrive\.relaxed\.cta\.shared::cta\.b64 {RD}, \[{R}\], {R}"),
    ("out[0] = ac.mbarrier_arrive_no_complete(bars[0:], 2)", 80,
     rf"mbarrier\.arrive\.noComplete\.shared\.b64 {RD}, \[{R}\], {R}"),
    ("out[0] = ac.mbarrier_arrive_drop(bars[0:])", 80,
     rf"mbarrier\.arrive_drop\.shared\.b64 {RD}, \[{R}\]"),
    ("out[0] = ac.mbarrier_arrive_drop(bars[0:], 4)", 90,
     rf"mbarrier\.arrive_drop\.shared::cta\.b64 {RD}, \[{R}\], {R}"),
    ("out[0] = ac.mbarrier_arrive_drop(bars[0:], scope='cluster')", 90,
     rf"mbarrier\.arrive_drop\.release\.cluster\.shared::cta\.b64 {RD}, \[{R}\]"),
    ("out[0] = ac.mbarrier_arrive_drop_no_complete(bars[0:], 2)", 80,
     rf"mbarrier\.arrive_drop\.noComplete\.shared\.b64 {RD}, \[{R}\], {R}"),
    ("ac.mbarrier_expect_tx(bars[0:], 256)", 90,
     rf"mbarrier\.expect_tx\.shared::cta\.b64 \[{R}\], {R}"),
    ("ac.mbarrier_expect_tx(bars[0:], n, scope='cluster')", 90,
     rf"mbarrier\.expect_tx\.relaxed\.cluster\.shared::cta\.b64 \[{R}\], {R}"),
    ("ac.mbarrier_complete_tx(bars[0:], 16, scope='cta')", 90,
     rf"mbarrier\.complete_tx\.relaxed\.cta\.shared::cta\.b64 \[{R}\], {R}"),
    ("out[0] = ac.mbarrier_arrive_expect_tx(bars[0:], 256)", 90,
     rf"mbarrier\.arrive\.expect_tx\.shared::cta\.b64 {RD}, \[{R}\], {R}"),
    ("out[0] = ac.mbarrier_arrive_expect_tx(bars[0:], n, sem='relaxed', scope='cluster')", 90,
     rf"mbarrier\.arrive\.expect_tx\.relaxed\.cluster\.shared::cta\.b64 {RD}, \[{R}\], {R}"),
    ("out[0] = ac.mbarrier_test_wait(bars[0:], st)", 80,
     rf"mbarrier\.test_wait\.shared\.b64 p, \[{R}\], {RD}"),
    ("out[0] = ac.mbarrier_test_wait_parity(bars[0:], n & 1)", 80,
     rf"mbarrier\.test_wait\.parity\.shared\.b64 p, \[{R}\], {R}"),
    ("out[0] = ac.mbarrier_test_wait(bars[0:], st, sem='relaxed', scope='cluster')", 90,
     rf"mbarrier\.test_wait\.relaxed\.cluster\.shared::cta\.b64 p, \[{R}\], {RD}"),
    ("out[0] = ac.mbarrier_try_wait(bars[0:], st)", 90,
     rf"mbarrier\.try_wait\.shared::cta\.b64 p, \[{R}\], {RD}"),
    ("out[0] = ac.mbarrier_try_wait(bars[0:], st, 1000)", 90,
     rf"mbarrier\.try_wait\.shared::cta\.b64 p, \[{R}\], {RD}, {R}"),
    ("out[0] = ac.mbarrier_try_wait_parity(bars[0:], 1, n, sem='acquire')", 90,
     rf"mbarrier\.try_wait\.parity\.acquire\.cta\.shared::cta\.b64 p, \[{R}\], {R}, {R}"),
    ("out[0] = ac.mbarrier_pending_count(st)", 80, rf"mbarrier\.pending_count\.b64 {R}, {RD}"),
    ("ac.cp_async_mbarrier_arrive(bars[0:])", 80, rf"cp\.async\.mbarrier\.arrive\.shared\.b64 \[{R}\]"),
    ("ac.cp_async_mbarrier_arrive(bars[0:], noinc=True)", 80,
     rf"cp\.async\.mbarrier\.arrive\.noinc\.shared\.b64 \[{R}\]"),
    ("ac.fence_proxy_async()", 90, r"fence\.proxy\.async"),
    ("ac.fence_proxy_async('global')", 90, r"fence\.proxy\.async\.global"),
    ("ac.fence_proxy_async('shared::cta')", 90, r"fence\.proxy\.async\.shared::cta"),
    ("ac.fence_proxy_async('shared::cluster')", 90, r"fence\.proxy\.async\.shared::cluster"),
    ("ac.fence_mbarrier_init()", 90, r"fence\.mbarrier_init\.release\.cluster"),
    ("ac.fence_acq_rel_cluster()", 90, r"fence\.acq_rel\.cluster"),
    ("out[0] = ac.elect_sync()", 90, rf"elect\.sync _\|p, {R}"),
    ("out[0] = ac.elect_sync(0x0000FFFF)", 90, rf"elect\.sync _\|p, {R}"),
]


@pytest.mark.parametrize("stmt,sm,rx", FORMS, ids=[f[0] for f in FORMS])
def test_form_text_and_ptxas(stmt, sm, rx):
    opcode = rx.split(" ")[0]
    for cc in ((8, 0), (9, 0)):
        if cc[0] * 10 < sm:
            with pytest.raises(Exception, match=rf"needs sm_{sm} \(PTX ISA [\d.]+\); this kernel is compiled for sm_80"):
                body_ptx(stmt, cc=cc)
            continue
        ptx = body_ptx(stmt, cc=cc)
        inst = one(ptx, opcode + r"(?: |$)")
        assert re.fullmatch(rx, inst), (rx, inst)
        toolchain.assemble(ptx)


def test_blocking_wait_is_a_try_wait_loop_on_sm90_and_test_wait_on_sm80():
    stmt = "ac.mbarrier_wait_parity(bars[0:], n & 1)\n        ac.mbarrier_wait(bars[1:], st)"
    p90 = body_ptx(stmt, cc=(9, 0))
    assert len(instructions(p90, r"mbarrier\.try_wait\.parity\.shared::cta\.b64")) == 1
    assert len(instructions(p90, r"mbarrier\.try_wait\.shared::cta\.b64")) == 1
    assert instructions(p90, r"mbarrier\.test_wait") == []
    assert len(re.findall(r"\bbra", p90)) >= 2  # loops back
    assert "globaltimer" not in p90 and "trap;" not in p90
    p80 = body_ptx(stmt, cc=(8, 0))
    assert len(instructions(p80, r"mbarrier\.test_wait\.parity\.shared\.b64")) == 1
    assert len(instructions(p80, r"mbarrier\.test_wait\.shared\.b64")) == 1
    assert instructions(p80, r"mbarrier\.try_wait") == []
    toolchain.assemble(p80)
    toolchain.assemble(p90)


def test_checked_mode_bounds_blocking_waits():
    import numba_asynccopy as ac

    with ac.checked_mode(timeout_ns=123_000_000):
        ptx = body_ptx("ac.mbarrier_wait_parity(bars[0:], n & 1)")
    assert ptx.count("%globaltimer") == 2  # start and each retry
    # the timeout, the barrier's space and its alignment (n & 1 needs no parity
    # check; the empty-view check folds away on a static shared array)
    assert ptx.count("trap;") == 3
    assert ptx.count("isspacep.shared") == 1
    assert re.search(r"setp\.lt\.u64\s+%p\d+, %rd\d+, 123000001;", ptx)  # elapsed <= bound
    assert "vprintf" in ptx
    toolchain.assemble(ptx)


def test_program_order_is_kept():
    ptx = body_ptx(
        "ac.mbarrier_init(bars[0:], 1)\n"
        "        ac.fence_mbarrier_init()\n"
        "        s = ac.mbarrier_arrive_expect_tx(bars[0:], 64)\n"
        "        ac.mbarrier_wait(bars[0:], s)\n"
        "        ac.mbarrier_inval(bars[0:])")
    order = [m.group(1) for m in re.finditer(
        r"(mbarrier\.init|fence\.mbarrier_init|mbarrier\.arrive\.expect_tx|mbarrier\.try_wait|mbarrier\.inval)", ptx)]
    assert order == ["mbarrier.init", "fence.mbarrier_init", "mbarrier.arrive.expect_tx",
                     "mbarrier.try_wait", "mbarrier.inval"]


def test_every_form_marks_side_effects_and_memory_clobber():
    # llvmlite's asm call: "asm sideeffect" with ~{memory}; a dropped result
    # must not delete the instruction.
    src = """
    def k(out, n, st):
        bars = cuda.shared.array(4, np.uint64)
        ac.mbarrier_arrive(bars[0:])
        ac.mbarrier_test_wait(bars[0:], st)
    """
    ptx = ptx_of(kernel_from_source(src), SIG, cc=(9, 0))
    assert len(instructions(ptx, r"mbarrier\.arrive")) == 1
    assert len(instructions(ptx, r"mbarrier\.test_wait")) == 1


@pytest.mark.parametrize("stmt,message", [
    ("ac.mbarrier_init(out[0:], 1)",
     "mbarrier_init: `bar` must be a uint64 shared-memory array view whose first element is the barrier"),
    ("ac.mbarrier_init(bars[0], 1)", "mbarrier_init: `bar` must be a uint64 shared-memory array view"),
    ("ac.mbarrier_init(bars[0:], 0)", "mbarrier_init: `count`=0 is outside 1..1048575"),
    ("ac.mbarrier_init(bars[0:], 1 << 20)", "mbarrier_init: `count`=1048576 is outside 1..1048575"),
    ("ac.mbarrier_arrive(bars[0:], sem='acquire')",
     "mbarrier_arrive: `sem`='acquire' is not supported; allowed: 'release', 'relaxed'"),
    ("ac.mbarrier_arrive(bars[0:], scope='gpu')",
     "mbarrier_arrive: `scope`='gpu' is not supported; allowed: 'cta', 'cluster'"),
    ("ac.mbarrier_test_wait(bars[0:], st, sem='release')",
     "mbarrier_test_wait: `sem`='release' is not supported; allowed: 'acquire', 'relaxed'"),
    ("ac.mbarrier_wait_parity(bars[0:], 2)", "mbarrier_wait_parity: `parity`=2 must be 0 or 1"),
    ("ac.mbarrier_expect_tx(bars[0:], 1 << 20)", "mbarrier_expect_tx: `nbytes`=1048576 is outside 0..1048575"),
    ("ac.mbarrier_arrive_expect_tx(bars[0:], 1.5)",
     "mbarrier_arrive_expect_tx: `nbytes` must be an integer value, got float64"),
    ("ac.mbarrier_expect_tx(bars[0:], 16, sem='relaxed')",
     "mbarrier_expect_tx: got an unexpected keyword argument 'sem'"),
    ("ac.mbarrier_wait(bars[0:], out)", "mbarrier_wait: `state` must be an integer value"),
    ("ac.cp_async_mbarrier_arrive(bars[0:], noinc=n > 1)",
     "cp_async_mbarrier_arrive: `noinc` must be a compile-time constant (bool literal)"),
    ("ac.fence_proxy_async('shared')",
     "fence_proxy_async: `space`='shared' is not supported; allowed: 'global', 'shared::cta', 'shared::cluster'"),
    ("ac.elect_sync(out)", "elect_sync: `mask` must be an integer value"),
    ("ac.mbarrier_arrive(bars[0:], 1, 'release')", "mbarrier_arrive: too many positional arguments"),
])
def test_validation_errors(stmt, message):
    with pytest.raises(NumbaError) as info:  # a compile-time error (numba-cuda's typing or lowering)
        body_ptx(stmt)
    assert message in str(info.value)


def test_rejected_constant_is_not_retyped_as_runtime_value():
    # numba retries failed literal typing with plain types and caches typing
    # per argument types: once `mbarrier_init(bar, n)` (int64) has typed,
    # a rejected constant (count=0) must still be an error.
    body_ptx("ac.mbarrier_init(bars[0:], n)")
    with pytest.raises(Exception, match=r"mbarrier_init: `count`=0 is outside 1\.\.1048575"):
        body_ptx("ac.mbarrier_init(bars[0:], 0)")
