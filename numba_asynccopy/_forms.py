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
    # --- clusters: special registers, barrier, DSMEM, remote mbarriers ----
    Form("sreg.cluster_ctarank", "%cluster_ctarank", "mov.u32 d, %cluster_ctarank;",
         "7.8", 90, "cluster_cta_rank", "cluster"),
    Form("sreg.cluster_nctarank", "%cluster_nctarank", "mov.u32 d, %cluster_nctarank;",
         "7.8", 90, "cluster_num_ctas", "cluster"),
    Form("sreg.cluster_ctaid", "%cluster_ctaid", "mov.u32 d, %cluster_ctaid.{x,y,z};",
         "7.8", 90, "cluster_cta_id", "cluster"),
    Form("sreg.cluster_nctaid", "%cluster_nctaid", "mov.u32 d, %cluster_nctaid.{x,y,z};",
         "7.8", 90, "cluster_dim", "cluster"),
    Form("sreg.clusterid", "%clusterid", "mov.u32 d, %clusterid.{x,y,z};",
         "7.8", 90, "cluster_id", "cluster"),
    Form("sreg.nclusterid", "%nclusterid", "mov.u32 d, %nclusterid.{x,y,z};",
         "7.8", 90, "num_clusters", "cluster"),
    Form("sreg.is_explicit_cluster", "%is_explicit_cluster", "mov.pred p, %is_explicit_cluster;",
         "7.8", 90, "is_explicit_cluster", "cluster"),
    Form("barrier.cluster.arrive", "barrier.cluster.arrive{sem}{aligned}",
         "barrier.cluster.arrive{.release,.relaxed}{.aligned};",
         "8.0", 90, "cluster_arrive", "cluster"),
    Form("barrier.cluster.wait", "barrier.cluster.wait.acquire{aligned}",
         "barrier.cluster.wait.acquire{.aligned};", "8.0", 90, "cluster_wait", "cluster"),
    Form("mapa", "mapa.shared::cluster.u32", "mapa.shared::cluster.u32 d, a, rank;",
         "7.8", 90, "dsmem_load", "cluster"),
    Form("mapa.generic", "mapa.u64", "mapa.u64 d, a, rank;",
         "7.8", 90, "map_shared_rank", "cluster"),
    Form("ld.shared::cluster", "ld.shared::cluster.{type}", "ld.shared::cluster.T d, [a];",
         "7.8", 90, "dsmem_load", "cluster"),
    Form("st.shared::cluster", "st.shared::cluster.{type}", "st.shared::cluster.T [a], v;",
         "7.8", 90, "dsmem_store", "cluster"),
    Form("atom.shared::cluster.add", "atom.shared::cluster.add.{type}",
         "atom.shared::cluster.add.{u32,s32,u64,f32,f64} d, [a], v;",
         "7.8", 90, "dsmem_atomic_add", "cluster"),
    Form("mbarrier.arrive.remote", "mbarrier.arrive.release.cluster.shared::cluster.b64",
         "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote]{, count};",
         "8.0", 90, "mbarrier_arrive_remote", "cluster"),
    Form("mbarrier.expect_tx.remote", "mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64",
         "mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64 [remote], tx;",
         "8.0", 90, "mbarrier_expect_tx_remote", "cluster"),
    Form("mbarrier.arrive.expect_tx.remote",
         "mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64",
         "mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [remote], tx;",
         "8.0", 90, "mbarrier_arrive_expect_tx_remote", "cluster"),
    Form("cp.async.bulk.cluster",
         "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes",
         "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src], size, [mbar];",
         "8.0", 90, "cp_async_bulk_cluster", "cluster_copy"),
    Form("cluster_dims", ".reqnctapercluster", ".explicitcluster .reqnctapercluster x, y, z",
         "7.8", 90, "cluster_dims", "host.launch"),
    # --- bulk copies (bulk.py) --------------------------------------------
    Form("cp.async.bulk.g2s",
         "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{hint}",
         "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{.L2::cache_hint} [dst], [src], size, [mbar]{, policy};",
         "8.0", 90, "cp_async_bulk_g2s", "bulk"),
    Form("cp.async.bulk.g2s.cta",
         "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes{hint}",
         "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes{.L2::cache_hint} [dst], [src], size, [mbar]{, policy};",
         "8.6", 90, "cp_async_bulk_g2s", "bulk"),
    Form("cp.async.bulk.g2s.multicast",
         "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster{hint}",
         "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster{.L2::cache_hint} [dst], [src], size, [mbar], ctaMask{, policy};",
         "8.0", 90, "cp_async_bulk_g2s", "bulk"),
    Form("cp.async.bulk.s2g", "cp.async.bulk.global.shared::cta.bulk_group{hint}",
         "cp.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint} [dst], [src], size{, policy};",
         "8.0", 90, "cp_async_bulk_s2g", "bulk"),
    Form("cp.reduce.async.bulk.s2g",
         "cp.reduce.async.bulk.global.shared::cta.bulk_group{hint}.{op}.{type}",
         "cp.reduce.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint}.op{.noftz}.type [dst], [src], size{, policy};",
         "8.0", 90, "cp_reduce_async_bulk_s2g", "bulk"),
    Form("cp.async.bulk.prefetch.L2", "cp.async.bulk.prefetch.L2.global{hint}",
         "cp.async.bulk.prefetch.L2.global{.L2::cache_hint} [src], size{, policy};",
         "8.0", 90, "cp_async_bulk_prefetch_l2", "bulk"),
    Form("cp.async.bulk.commit_group", "cp.async.bulk.commit_group",
         "cp.async.bulk.commit_group;", "8.0", 90, "bulk_commit_group", "bulk"),
    Form("cp.async.bulk.wait_group", "cp.async.bulk.wait_group{read}",
         "cp.async.bulk.wait_group{.read} N;", "8.0", 90, "bulk_wait_group", "bulk"),
    # --- tensor (TMA) copies (tensor.py) ------------------------------------
    Form("cp.async.bulk.tensor.g2s",
         "cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes{hint}",
         "cp.async.bulk.tensor.{1..5}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes{.L2::cache_hint} [dst], [tmap, {c...}], [mbar]{, policy};",
         "8.0", 90, "cp_async_bulk_tensor_load", "tensor"),
    Form("cp.async.bulk.tensor.g2s.multicast",
         "cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster{hint}",
         "cp.async.bulk.tensor.{1..5}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster{.L2::cache_hint} [dst], [tmap, {c...}], [mbar], ctaMask{, policy};",
         "8.0", 90, "cp_async_bulk_tensor_load", "tensor"),
    Form("cp.async.bulk.tensor.s2g",
         "cp.async.bulk.tensor.{rank}d.global.shared::cta.tile.bulk_group{hint}",
         "cp.async.bulk.tensor.{1..5}d.global.shared::cta.tile.bulk_group{.L2::cache_hint} [tmap, {c...}], [src]{, policy};",
         "8.0", 90, "cp_async_bulk_tensor_store", "tensor"),
    Form("cp.reduce.async.bulk.tensor",
         "cp.reduce.async.bulk.tensor.{rank}d.global.shared::cta.{op}.tile.bulk_group{hint}",
         "cp.reduce.async.bulk.tensor.{1..5}d.global.shared::cta.op.tile.bulk_group{.L2::cache_hint} [tmap, {c...}], [src]{, policy};",
         "8.0", 90, "cp_reduce_async_bulk_tensor", "tensor"),
    Form("prefetch.tensormap", "prefetch.tensormap",
         "prefetch.tensormap [tmap];", "8.0", 90, "prefetch_tensormap", "tensor"),
    Form("fence.proxy.tensormap", "fence.proxy.tensormap::generic.acquire.{scope}",
         "fence.proxy.tensormap::generic.acquire.{cta,cluster,gpu,sys} [tmap], 128;",
         "8.3", 90, "fence_proxy_tensormap", "tensor"),
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
