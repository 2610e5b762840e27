"""THE table of PTX forms.

Each row names one PTX form: the opcode text lowering emits (a format
string over the options the public call takes), the minimum PTX ISA and sm
it needs, and the public function that emits it.  Validation (the sm check
and its message), the README feature table and the tests read this table;
no other module spells an opcode.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._compat import TypingError, compile_cc


@dataclass(frozen=True)
class Form:
    key: str  # short stable name used by the code
    opcode: str  # format string of the PTX opcode (operands are lowering's)
    syntax: str  # the documented PTX form, for docs and error messages
    min_ptx: str
    min_sm: int
    api: str  # public function(s) that emit it
    family: str  # module that lowers it

    @property
    def apis(self) -> list[str]:
        return [a.strip() for a in self.api.split(",")]

    def require_sm(self, api: str | None = None) -> None:
        """Raise a TypingError when the kernel's target is older than the form."""
        cc = compile_cc()
        if cc is None:
            return
        sm = cc[0] * 10 + cc[1]
        if sm < self.min_sm:
            raise TypingError(
                f"{api or self.api}: `{self.syntax}` needs sm_{self.min_sm} "
                f"(PTX ISA {self.min_ptx}); this kernel is compiled for sm_{sm}"
            )


_ROWS = [
    # --- cp.async (non-bulk) -------------------------------------------
    Form("cp.async", "cp.async.{cache}.shared.global{hint}{prefetch}",
         "cp.async.{ca,cg}.shared.global{.L2::cache_hint}{.L2::NB} [dst], [src], cp{, src_size|ignore_src}{, policy}",
         "7.0", 80, "cp_async", "cp_async"),
    Form("cp.async.commit_group", "cp.async.commit_group",
         "cp.async.commit_group;", "7.0", 80, "commit_group", "cp_async"),
    Form("cp.async.wait_group", "cp.async.wait_group",
         "cp.async.wait_group N;", "7.0", 80, "wait_group", "cp_async"),
    Form("cp.async.wait_all", "cp.async.wait_all",
         "cp.async.wait_all;", "7.0", 80, "wait_all", "cp_async"),
    Form("createpolicy", "createpolicy.fractional.L2::{primary}{secondary}.b64",
         "createpolicy.fractional.L2::primary{.L2::secondary}.b64 policy, fraction;",
         "7.4", 80, "createpolicy_fractional", "cp_async"),
    Form("cp.async.mbarrier.arrive", "cp.async.mbarrier.arrive{noinc}.shared.b64",
         "cp.async.mbarrier.arrive{.noinc}.shared.b64 [mbar];",
         "7.0", 80, "cp_async_mbarrier_arrive", "mbarrier"),
    # --- mbarrier ------------------------------------------------------
    Form("mbarrier.init", "mbarrier.init.shared.b64",
         "mbarrier.init.shared.b64 [a], count;", "7.0", 80, "mbarrier_init", "mbarrier"),
    Form("mbarrier.inval", "mbarrier.inval.shared.b64",
         "mbarrier.inval.shared.b64 [a];", "7.0", 80, "mbarrier_inval", "mbarrier"),
    Form("mbarrier.arrive", "mbarrier.arrive.shared.b64",
         "mbarrier.arrive.shared.b64 state, [a];", "7.0", 80, "mbarrier_arrive", "mbarrier"),
    Form("mbarrier.arrive.count", "mbarrier.arrive{sem}.shared::cta.b64",
         "mbarrier.arrive{.sem.scope}.shared::cta.b64 state, [a], count;",
         "7.8", 90, "mbarrier_arrive", "mbarrier"),
    Form("mbarrier.arrive.sem", "mbarrier.arrive{sem}.shared::cta.b64",
         "mbarrier.arrive.{release,relaxed}.{cta,cluster}.shared::cta.b64 state, [a]{, count};",
         "8.0", 90, "mbarrier_arrive", "mbarrier"),
    Form("mbarrier.arrive.noComplete", "mbarrier.arrive.noComplete.shared.b64",
         "mbarrier.arrive.noComplete.shared.b64 state, [a], count;",
         "7.0", 80, "mbarrier_arrive_no_complete", "mbarrier"),
    Form("mbarrier.arrive_drop", "mbarrier.arrive_drop.shared.b64",
         "mbarrier.arrive_drop.shared.b64 state, [a];", "7.0", 80, "mbarrier_arrive_drop", "mbarrier"),
    Form("mbarrier.arrive_drop.count", "mbarrier.arrive_drop{sem}.shared::cta.b64",
         "mbarrier.arrive_drop{.sem.scope}.shared::cta.b64 state, [a], count;",
         "7.8", 90, "mbarrier_arrive_drop", "mbarrier"),
    Form("mbarrier.arrive_drop.noComplete", "mbarrier.arrive_drop.noComplete.shared.b64",
         "mbarrier.arrive_drop.noComplete.shared.b64 state, [a], count;",
         "7.0", 80, "mbarrier_arrive_drop_no_complete", "mbarrier"),
    Form("mbarrier.expect_tx", "mbarrier.expect_tx{sem}.shared::cta.b64",
         "mbarrier.expect_tx{.relaxed.scope}.shared::cta.b64 [a], tx;",
         "8.0", 90, "mbarrier_expect_tx", "mbarrier"),
    Form("mbarrier.complete_tx", "mbarrier.complete_tx{sem}.shared::cta.b64",
         "mbarrier.complete_tx{.relaxed.scope}.shared::cta.b64 [a], tx;",
         "8.0", 90, "mbarrier_complete_tx", "mbarrier"),
    Form("mbarrier.arrive.expect_tx", "mbarrier.arrive.expect_tx{sem}.shared::cta.b64",
         "mbarrier.arrive.expect_tx{.sem.scope}.shared::cta.b64 state, [a], tx;",
         "8.0", 90, "mbarrier_arrive_expect_tx", "mbarrier"),
    Form("mbarrier.test_wait", "mbarrier.test_wait{sem}.shared.b64",
         "mbarrier.test_wait{.acquire.scope}.shared.b64 p, [a], state;",
         "7.0", 80, "mbarrier_test_wait", "mbarrier"),
    Form("mbarrier.test_wait.parity", "mbarrier.test_wait.parity{sem}.shared.b64",
         "mbarrier.test_wait.parity{.acquire.scope}.shared.b64 p, [a], parity;",
         "7.1", 80, "mbarrier_test_wait_parity", "mbarrier"),
    Form("mbarrier.try_wait", "mbarrier.try_wait{sem}.shared::cta.b64",
         "mbarrier.try_wait{.acquire.scope}.shared::cta.b64 p, [a], state{, hint_ns};",
         "7.8", 90, "mbarrier_try_wait", "mbarrier"),
    Form("mbarrier.try_wait.parity", "mbarrier.try_wait.parity{sem}.shared::cta.b64",
         "mbarrier.try_wait.parity{.acquire.scope}.shared::cta.b64 p, [a], parity{, hint_ns};",
         "7.8", 90, "mbarrier_try_wait_parity", "mbarrier"),
    Form("mbarrier.wait.sem", "mbarrier.{op}{sem}.shared::cta.b64",
         "mbarrier.{test_wait,try_wait}{.parity}.{acquire,relaxed}.{cta,cluster}.shared::cta.b64 p, [a], state|parity;",
         "8.0", 90,
         "mbarrier_test_wait, mbarrier_test_wait_parity, mbarrier_try_wait, mbarrier_try_wait_parity",
         "mbarrier"),
    Form("mbarrier.pending_count", "mbarrier.pending_count.b64",
         "mbarrier.pending_count.b64 n, state;", "7.0", 80, "mbarrier_pending_count", "mbarrier"),
    # --- fences and warp election ---------------------------------------
    Form("fence.proxy.async", "fence.proxy.async{space}",
         "fence.proxy.async{.global,.shared::cta,.shared::cluster};",
         "8.0", 90, "fence_proxy_async", "fence"),
    Form("fence.mbarrier_init", "fence.mbarrier_init.release.cluster",
         "fence.mbarrier_init.release.cluster;", "8.0", 90, "fence_mbarrier_init", "fence"),
    Form("fence.acq_rel.cluster", "fence.acq_rel.cluster",
         "fence.acq_rel.cluster;", "7.8", 90, "fence_acq_rel_cluster", "fence"),
    Form("elect.sync", "elect.sync",
         "elect.sync d|p, membermask;", "8.0", 90, "elect_sync", "fence"),
]

FORMS: dict[str, Form] = {row.key: row for row in _ROWS}
assert len(FORMS) == len(_ROWS), "duplicate form key"


def form(key: str) -> Form:
    return FORMS[key]


def feature_table() -> str:
    """Markdown table of every form: the README's feature table.

    Example::

        import numba_asynccopy as ac
        print(ac.feature_table())
    """
    lines = [
        "| operation | PTX | min PTX ISA | min sm |",
        "|---|---|---|---|",
    ]
    for row in _ROWS:
        apis = ", ".join(f"`ac.{a}`" for a in row.apis)
        syntax = row.syntax.replace("|", "\\|")  # a bare | would end the cell
        lines.append(f"| {apis} | `{syntax}` | {row.min_ptx} | sm_{row.min_sm} |")
    return "\n".join(lines)
