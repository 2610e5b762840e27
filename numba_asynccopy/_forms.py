"""THE registry of PTX forms.

Each row names one PTX form: the opcode template lowering fills in (its
``{slots}`` are qualifier sets, listed as tuples in ``quals``), the operands,
the documented syntax, the minimum PTX ISA and sm, the public functions that
emit it, the family module that lowers it, and a one-line example statement.

What reads it:

- the gate: every form an intrinsic's typing selects with :func:`form` is
  checked against the compile target's sm and the PTX ISA the installed
  NVVM emits, once, by the intrinsic machinery (``_compat.intrinsic``);
- the per-row CPU tests (compile ``example`` at ``min_sm``, find the opcode
  and map it back to the row, expect the named error one target lower);
- the simulator's family dispatch, ``__all__`` and the docs' feature table
  (``make readme-table``, ``_readme.py``);
- ``ac.inspect``, which maps PTX instructions back to rows by expanding the
  qualifier sets (no regular expressions over the syntax).

No other module spells an opcode.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass
from typing import Iterator

from ._compat import TypingError, compile_arch, compile_cc, typing_api, typing_for

Quals = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class Form:
    key: str  # short stable name used by the code
    opcode: str  # template of the PTX opcode; {slot}s are filled from ``quals``
    syntax: str  # the documented PTX form, for docs and error messages
    min_ptx: str
    min_sm: int
    apis: tuple[str, ...]  # public functions that emit it ((): internal only)
    family: str  # module that lowers it
    quals: Quals = ()  # slot -> every text it takes ("" = the qualifier is absent)
    operands: tuple[str, ...] = ()  # PTX operands, as documented
    example: str = ""  # one statement of a kernel (see ``EXAMPLE_PRELUDE``)
    # a form an older toolkit falls back to: with PTX ISA >= ``replaced_from``
    # lowering emits the row ``replaced_by`` instead
    replaced_from: str | None = None
    replaced_by: str | None = None
    # an arch-specific feature suffix as PTX spells it ("a": ``sm_90a``): the
    # form then assembles for exactly ``sm_{min_sm}{arch}``, nothing newer or plain
    arch: str = ""

    @property
    def target(self) -> str:
        """The PTX target the form needs, as PTX spells it (``sm_90a``)."""
        return f"sm_{self.min_sm}{self.arch}"

    @property
    def cc(self) -> tuple:
        """The ``cc`` to compile it for (``compile_ptx(..., cc=row.cc)``)."""
        base = (self.min_sm // 10, self.min_sm % 10)
        return base + (self.arch,) if self.arch else base

    @property
    def api(self) -> str:
        """The public functions as one comma-separated string."""
        return ", ".join(self.apis)

    @property
    def internal(self) -> bool:
        """Emitted by lowering helpers (checked mode), not a public call."""
        return not self.apis

    def values(self, slot: str) -> tuple[str, ...]:
        """Every text the qualifier slot ``slot`` takes."""
        return dict(self.quals)[slot]

    def expansions(self) -> Iterator[str]:
        """Every concrete opcode this row stands for."""
        names = [name for name, _ in self.quals]
        for combo in itertools.product(*(vals for _, vals in self.quals)):
            yield self.opcode.format(**dict(zip(names, combo)))

    def gate(self, api: str | None = None) -> None:
        """Raise a TypingError when the compile target's sm, or the PTX ISA
        the installed NVVM emits, is older than the form needs."""
        cc = compile_cc()
        if cc is None:
            return
        api = api or self.api
        sm = cc[0] * 10 + cc[1]
        if self.arch:
            got = f"sm_{sm}{compile_arch()}"
            if got != self.target:
                raise TypingError(
                    f"{api}: `{self.syntax}` needs {self.target} (PTX ISA {self.min_ptx}); "
                    f"this kernel is compiled for {got} (compile-only paths: pass "
                    f"cc=({self.min_sm // 10}, {self.min_sm % 10}, \"{self.arch}\"))"
                )
        elif sm < self.min_sm:
            raise TypingError(
                f"{api}: `{self.syntax}` needs sm_{self.min_sm} "
                f"(PTX ISA {self.min_ptx}); this kernel is compiled for sm_{sm}"
            )
        isa = nvvm_ptx_isa()
        if isa is not None and isa < ptx_version(self.min_ptx):
            raise TypingError(
                f"{api}: `{self.syntax}` needs PTX ISA {self.min_ptx}; the installed "
                f"NVVM emits PTX ISA {isa[0]}.{isa[1]} (install a newer CUDA toolkit "
                "or the numba-cuda flavour that brings one)"
            )

def ptx_version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def nvvm_ptx_isa() -> tuple[int, int] | None:
    """PTX ISA version the installed NVVM emits (read from a tiny module it
    compiles once per process), or None where there is no NVVM."""
    header = _nvvm_header()
    return ptx_version(header[0]) if header else None


def nvvm_release_name() -> str:
    """The CUDA release of the installed NVVM (``13.5``), or ``unknown``."""
    header = _nvvm_header()
    return header[1] if header else "unknown"


@functools.lru_cache(maxsize=None)
def _nvvm_header() -> tuple[str, str] | None:
    try:
        import llvmlite.ir as llir
        from numba.cuda.cudadrv import nvvm

        mod = llir.Module()
        mod.triple = "nvptx64-nvidia-cuda"
        mod.data_layout = nvvm.NVVM().data_layout
        fn = llir.Function(mod, llir.FunctionType(llir.VoidType(), []), "f")
        llir.IRBuilder(fn.append_basic_block()).ret_void()
        nvvm.add_ir_version(mod)
        ptx = nvvm.compile_ir(str(mod), arch="compute_90")
    except Exception:  # no NVVM: nothing compiles, so nothing to gate
        return None
    text = ptx.decode() if isinstance(ptx, bytes) else ptx
    version = re.search(r"^\s*\.version\s+(\d+\.\d+)", text, re.M)
    release = re.search(r"release (\d+\.\d+)", text)
    if not version:
        return None
    return version.group(1), release.group(1) if release else "unknown"


# qualifier sets several rows share
_HINT = ("hint", ("", ".L2::cache_hint"))
_RANK = ("rank", ("1", "2", "3", "4", "5"))
# a tensor copy's load mode: the tiled rows take .tile, the im2col rows .im2col
_TILE = ("mode", (".tile",))
_IM2COL = ("mode", (".im2col",))
_IM2COL_NO_OFFS = ("mode", (".im2col_no_offs",))  # stores and reductions: no offsets
_RANK_IM2COL = ("rank", ("3", "4", "5"))  # im2col maps are 3-D to 5-D
_TENSOR_REDUCE_OP = ("op", ("add", "min", "max", "inc", "dec", "and", "or", "xor"))  # tile and im2col reductions
_ARRIVE_ORDERS = tuple(f".{s}.{c}" for s in ("release", "relaxed") for c in ("cta", "cluster"))
_WAIT_ORDERS = tuple(f".{s}.{c}" for s in ("acquire", "relaxed") for c in ("cta", "cluster"))
_XYZ = ("axis", (".x", ".y", ".z"))
_DSMEM_TYPES = ("s8", "u8", "s16", "u16", "b16", "s32", "u32", "f32", "s64", "u64", "f64")
_REDUCE_OPS = ("add", "add.noftz", "min", "max", "inc", "dec", "and", "or", "xor")
_WGMMA_N = tuple(str(n) for n in range(8, 257, 8))
_REDUCE_TYPES = ("f16", "bf16", "u32", "s32", "u64", "s64", "f32", "f64", "b32", "b64")

_F = Form
_ROWS = [
    # --- cp.async (non-bulk) -------------------------------------------
    _F("cp.async", "cp.async.{cache}.shared.global{hint}{prefetch}",
       "cp.async.{ca,cg}.shared.global{.L2::cache_hint}{.L2::NB} [dst], [src], cp{, src_size|ignore_src}{, policy}",
       "7.0", 80, ("cp_async",), "cp_async",
       quals=(("cache", ("ca", "cg")), _HINT, ("prefetch", ("", ".L2::64B", ".L2::128B", ".L2::256B"))),
       operands=("[dst]", "[src]", "cp-size", "src-size|ignore-src", "cache-policy"),
       example="ac.cp_async(sh[0:4], g[0:4], 16)"),
    _F("cp.async.commit_group", "cp.async.commit_group",
       "cp.async.commit_group;", "7.0", 80, ("commit_group",), "cp_async",
       example="ac.commit_group()"),
    _F("cp.async.wait_group", "cp.async.wait_group",
       "cp.async.wait_group N;", "7.0", 80, ("wait_group",), "cp_async",
       operands=("N",), example="ac.wait_group(1)"),
    _F("cp.async.wait_all", "cp.async.wait_all",
       "cp.async.wait_all;", "7.0", 80, ("wait_all",), "cp_async",
       example="ac.wait_all()"),
    _F("createpolicy", "createpolicy.fractional.L2::{primary}{secondary}.b64",
       "createpolicy.fractional.L2::primary{.L2::secondary}.b64 policy, fraction;",
       "7.4", 80, ("createpolicy_fractional",), "cp_async",
       quals=(("primary", ("evict_last", "evict_normal", "evict_first", "evict_unchanged")),
              ("secondary", ("", ".L2::evict_first", ".L2::evict_unchanged"))),
       operands=("policy", "fraction"),
       example='out[0] = ac.createpolicy_fractional("evict_first")'),
    _F("cp.async.mbarrier.arrive", "cp.async.mbarrier.arrive{noinc}.shared.b64",
       "cp.async.mbarrier.arrive{.noinc}.shared.b64 [mbar];",
       "7.0", 80, ("cp_async_mbarrier_arrive",), "mbarrier",
       quals=(("noinc", ("", ".noinc")),), operands=("[mbar]",),
       example="ac.cp_async_mbarrier_arrive(bars[0:])"),
    # --- mbarrier ------------------------------------------------------
    _F("mbarrier.init", "mbarrier.init.shared.b64",
       "mbarrier.init.shared.b64 [a], count;", "7.0", 80, ("mbarrier_init",), "mbarrier",
       operands=("[a]", "count"), example="ac.mbarrier_init(bars[0:], 32)"),
    _F("mbarrier.inval", "mbarrier.inval.shared.b64",
       "mbarrier.inval.shared.b64 [a];", "7.0", 80, ("mbarrier_inval",), "mbarrier",
       operands=("[a]",), example="ac.mbarrier_inval(bars[0:])"),
    _F("mbarrier.arrive", "mbarrier.arrive.shared.b64",
       "mbarrier.arrive.shared.b64 state, [a];", "7.0", 80, ("mbarrier_arrive",), "mbarrier",
       operands=("state", "[a]"), example="out[0] = ac.mbarrier_arrive(bars[0:])"),
    _F("mbarrier.arrive.count", "mbarrier.arrive{sem}.shared::cta.b64",
       "mbarrier.arrive{.sem.scope}.shared::cta.b64 state, [a], count;",
       "7.8", 90, ("mbarrier_arrive",), "mbarrier",
       quals=(("sem", ("",)),), operands=("state", "[a]", "count"),
       example="out[0] = ac.mbarrier_arrive(bars[0:], 2)"),
    _F("mbarrier.arrive.sem", "mbarrier.arrive{sem}.shared::cta.b64",
       "mbarrier.arrive.{release,relaxed}.{cta,cluster}.shared::cta.b64 state, [a]{, count};",
       "8.0", 90, ("mbarrier_arrive",), "mbarrier",
       quals=(("sem", _ARRIVE_ORDERS),), operands=("state", "[a]", "count"),
       example='out[0] = ac.mbarrier_arrive(bars[0:], sem="relaxed", scope="cluster")'),
    _F("mbarrier.arrive.noComplete", "mbarrier.arrive.noComplete.shared.b64",
       "mbarrier.arrive.noComplete.shared.b64 state, [a], count;",
       "7.0", 80, ("mbarrier_arrive_no_complete",), "mbarrier",
       operands=("state", "[a]", "count"),
       example="out[0] = ac.mbarrier_arrive_no_complete(bars[0:], 2)"),
    _F("mbarrier.arrive_drop", "mbarrier.arrive_drop.shared.b64",
       "mbarrier.arrive_drop.shared.b64 state, [a];", "7.0", 80, ("mbarrier_arrive_drop",),
       "mbarrier", operands=("state", "[a]"),
       example="out[0] = ac.mbarrier_arrive_drop(bars[0:])"),
    _F("mbarrier.arrive_drop.count", "mbarrier.arrive_drop{sem}.shared::cta.b64",
       "mbarrier.arrive_drop{.sem.scope}.shared::cta.b64 state, [a], count;",
       "7.8", 90, ("mbarrier_arrive_drop",), "mbarrier",
       quals=(("sem", ("",) + _ARRIVE_ORDERS),), operands=("state", "[a]", "count"),
       example="out[0] = ac.mbarrier_arrive_drop(bars[0:], 2)"),
    _F("mbarrier.arrive_drop.noComplete", "mbarrier.arrive_drop.noComplete.shared.b64",
       "mbarrier.arrive_drop.noComplete.shared.b64 state, [a], count;",
       "7.0", 80, ("mbarrier_arrive_drop_no_complete",), "mbarrier",
       operands=("state", "[a]", "count"),
       example="out[0] = ac.mbarrier_arrive_drop_no_complete(bars[0:], 2)"),
    _F("mbarrier.expect_tx", "mbarrier.expect_tx{sem}.shared::cta.b64",
       "mbarrier.expect_tx{.relaxed.scope}.shared::cta.b64 [a], tx;",
       "8.0", 90, ("mbarrier_expect_tx",), "mbarrier",
       quals=(("sem", ("", ".relaxed.cta", ".relaxed.cluster")),), operands=("[a]", "tx"),
       example="ac.mbarrier_expect_tx(bars[0:], 256)"),
    _F("mbarrier.complete_tx", "mbarrier.complete_tx{sem}.shared::cta.b64",
       "mbarrier.complete_tx{.relaxed.scope}.shared::cta.b64 [a], tx;",
       "8.0", 90, ("mbarrier_complete_tx",), "mbarrier",
       quals=(("sem", ("", ".relaxed.cta", ".relaxed.cluster")),), operands=("[a]", "tx"),
       example="ac.mbarrier_complete_tx(bars[0:], 256)"),
    _F("mbarrier.arrive.expect_tx", "mbarrier.arrive.expect_tx{sem}.shared::cta.b64",
       "mbarrier.arrive.expect_tx{.sem.scope}.shared::cta.b64 state, [a], tx;",
       "8.0", 90, ("mbarrier_arrive_expect_tx",), "mbarrier",
       quals=(("sem", ("",) + _ARRIVE_ORDERS),), operands=("state", "[a]", "tx"),
       example="out[0] = ac.mbarrier_arrive_expect_tx(bars[0:], 256)"),
    _F("mbarrier.test_wait", "mbarrier.test_wait{sem}.shared.b64",
       "mbarrier.test_wait{.acquire.scope}.shared.b64 p, [a], state;",
       "7.0", 80, ("mbarrier_test_wait", "mbarrier_wait"), "mbarrier",
       quals=(("sem", ("",)),), operands=("p", "[a]", "state"),
       example="out[0] = ac.mbarrier_test_wait(bars[0:], out[1])"),
    _F("mbarrier.test_wait.parity", "mbarrier.test_wait.parity{sem}.shared.b64",
       "mbarrier.test_wait.parity{.acquire.scope}.shared.b64 p, [a], parity;",
       "7.1", 80, ("mbarrier_test_wait_parity", "mbarrier_wait_parity"), "mbarrier",
       quals=(("sem", ("",)),), operands=("p", "[a]", "parity"),
       example="out[0] = ac.mbarrier_test_wait_parity(bars[0:], 1)"),
    _F("mbarrier.try_wait", "mbarrier.try_wait{sem}.shared::cta.b64",
       "mbarrier.try_wait{.acquire.scope}.shared::cta.b64 p, [a], state{, hint_ns};",
       "7.8", 90, ("mbarrier_try_wait", "mbarrier_wait"), "mbarrier",
       quals=(("sem", ("",)),), operands=("p", "[a]", "state", "suspendTimeHint"),
       example="out[0] = ac.mbarrier_try_wait(bars[0:], out[1])"),
    _F("mbarrier.try_wait.parity", "mbarrier.try_wait.parity{sem}.shared::cta.b64",
       "mbarrier.try_wait.parity{.acquire.scope}.shared::cta.b64 p, [a], parity{, hint_ns};",
       "7.8", 90, ("mbarrier_try_wait_parity", "mbarrier_wait_parity"), "mbarrier",
       quals=(("sem", ("",)),), operands=("p", "[a]", "parity", "suspendTimeHint"),
       example="out[0] = ac.mbarrier_try_wait_parity(bars[0:], 1, 1000)"),
    _F("mbarrier.wait.sem", "mbarrier.{op}{sem}.shared::cta.b64",
       "mbarrier.{test_wait,try_wait}{.parity}.{acquire,relaxed}.{cta,cluster}.shared::cta.b64 p, [a], state|parity;",
       "8.0", 90,
       ("mbarrier_test_wait", "mbarrier_test_wait_parity", "mbarrier_try_wait",
        "mbarrier_try_wait_parity"),
       "mbarrier",
       quals=(("op", ("test_wait", "test_wait.parity", "try_wait", "try_wait.parity")),
              ("sem", _WAIT_ORDERS)),
       operands=("p", "[a]", "state|parity"),
       example='out[0] = ac.mbarrier_try_wait_parity(bars[0:], 0, sem="relaxed", scope="cluster")'),
    _F("mbarrier.pending_count", "mbarrier.pending_count.b64",
       "mbarrier.pending_count.b64 n, state;", "7.0", 80, ("mbarrier_pending_count",),
       "mbarrier", operands=("n", "state"),
       example="out[0] = ac.mbarrier_pending_count(out[1])"),
    # --- fences and warp election ---------------------------------------
    _F("fence.proxy.async", "fence.proxy.async{space}",
       "fence.proxy.async{.global,.shared::cta,.shared::cluster};",
       "8.0", 90, ("fence_proxy_async",), "fence",
       quals=(("space", ("", ".global", ".shared::cta", ".shared::cluster")),),
       example='ac.fence_proxy_async("shared::cta")'),
    _F("fence.mbarrier_init", "fence.mbarrier_init.release.cluster",
       "fence.mbarrier_init.release.cluster;", "8.0", 90, ("fence_mbarrier_init",), "fence",
       example="ac.fence_mbarrier_init()"),
    _F("fence.acq_rel.cluster", "fence.acq_rel.cluster",
       "fence.acq_rel.cluster;", "7.8", 90, ("fence_acq_rel_cluster",), "fence",
       example="ac.fence_acq_rel_cluster()"),
    _F("elect.sync", "elect.sync",
       "elect.sync d|p, membermask;", "8.0", 90, ("elect_sync",), "fence",
       operands=("d|p", "membermask"), example="out[0] = ac.elect_sync()"),
    # --- clusters: special registers, barrier, DSMEM, remote mbarriers ----
    # special registers: the opcode is the register ``mov`` reads
    _F("sreg.cluster_ctarank", "%cluster_ctarank", "mov.u32 d, %cluster_ctarank;",
       "7.8", 90, ("cluster_cta_rank",), "cluster",
       example="out[0] = ac.cluster_cta_rank()"),
    _F("sreg.cluster_nctarank", "%cluster_nctarank", "mov.u32 d, %cluster_nctarank;",
       "7.8", 90, ("cluster_num_ctas",), "cluster",
       example="out[0] = ac.cluster_num_ctas()"),
    _F("sreg.cluster_ctaid", "%cluster_ctaid{axis}", "mov.u32 d, %cluster_ctaid.{x,y,z};",
       "7.8", 90, ("cluster_cta_id",), "cluster", quals=(_XYZ,),
       example="out[0] = ac.cluster_cta_id()[0]"),
    _F("sreg.cluster_nctaid", "%cluster_nctaid{axis}", "mov.u32 d, %cluster_nctaid.{x,y,z};",
       "7.8", 90, ("cluster_dim",), "cluster", quals=(_XYZ,),
       example="out[0] = ac.cluster_dim()[1]"),
    _F("sreg.clusterid", "%clusterid{axis}", "mov.u32 d, %clusterid.{x,y,z};",
       "7.8", 90, ("cluster_id",), "cluster", quals=(_XYZ,),
       example="out[0] = ac.cluster_id()[2]"),
    _F("sreg.nclusterid", "%nclusterid{axis}", "mov.u32 d, %nclusterid.{x,y,z};",
       "7.8", 90, ("num_clusters",), "cluster", quals=(_XYZ,),
       example="out[0] = ac.num_clusters()[0]"),
    _F("sreg.is_explicit_cluster", "%is_explicit_cluster", "mov.pred p, %is_explicit_cluster;",
       "7.8", 90, ("is_explicit_cluster",), "cluster",
       example="out[0] = ac.is_explicit_cluster()"),
    _F("barrier.cluster.arrive", "barrier.cluster.arrive{sem}{aligned}",
       "barrier.cluster.arrive{.release,.relaxed}{.aligned};",
       "8.0", 90, ("cluster_arrive", "cluster_sync"), "cluster",
       quals=(("sem", (".release", ".relaxed")), ("aligned", ("", ".aligned"))),
       example='ac.cluster_arrive("relaxed", aligned=True)'),
    _F("barrier.cluster.wait", "barrier.cluster.wait.acquire{aligned}",
       "barrier.cluster.wait.acquire{.aligned};", "8.0", 90, ("cluster_wait", "cluster_sync"),
       "cluster", quals=(("aligned", ("", ".aligned")),), example="ac.cluster_wait()"),
    _F("mapa", "mapa.shared::cluster.u32", "mapa.shared::cluster.u32 d, a, rank;",
       "7.8", 90, ("dsmem_load", "dsmem_store", "dsmem_atomic_add", "mbarrier_arrive_remote",
                   "mbarrier_expect_tx_remote", "mbarrier_arrive_expect_tx_remote",
                   "cp_async_bulk_cluster", "mbarrier_arrive", "mbarrier_expect_tx",
                   "mbarrier_arrive_expect_tx"),
       "cluster", operands=("d", "a", "rank"), example="sh[0] = ac.dsmem_load(sh, 1, 3)"),
    _F("mapa.generic", "mapa.u64", "mapa.u64 d, a, rank;",
       "7.8", 90, ("map_shared_rank",), "cluster", operands=("d", "a", "rank"),
       example="ac.map_shared_rank(sh, 1)[0] = 1.0"),
    _F("ld.shared::cluster", "ld.shared::cluster.{type}", "ld.shared::cluster.T d, [a];",
       "7.8", 90, ("dsmem_load",), "cluster", quals=(("type", _DSMEM_TYPES),),
       operands=("d", "[a]"), example="sh[0] = ac.dsmem_load(sh, 1, 3)"),
    _F("st.shared::cluster", "st.shared::cluster.{type}", "st.shared::cluster.T [a], v;",
       "7.8", 90, ("dsmem_store",), "cluster", quals=(("type", _DSMEM_TYPES),),
       operands=("[a]", "v"), example="ac.dsmem_store(sh, 1, 3, 2.0)"),
    _F("atom.shared::cluster.add", "atom.shared::cluster.add.{type}",
       "atom.shared::cluster.add.{u32,s32,u64,f32,f64} d, [a], v;",
       "7.8", 90, ("dsmem_atomic_add",), "cluster",
       quals=(("type", ("u32", "s32", "u64", "f32", "f64")),), operands=("d", "[a]", "v"),
       example="sh[0] = ac.dsmem_atomic_add(sh, 1, 3, 2.0)"),
    _F("mbarrier.arrive.remote", "mbarrier.arrive.release.cluster.shared::cluster.b64",
       "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote]{, count};",
       "8.0", 90, ("mbarrier_arrive_remote", "mbarrier_arrive"), "cluster", operands=("_", "[remote]", "count"),
       example="ac.mbarrier_arrive_remote(bars[0:], 1)"),
    # PTX's default ordering of the remote arrive (CUTLASS's ClusterBarrier::arrive(cta_id)):
    # no GPU-scope fence before it, for a release that publishes no writes to the peer
    _F("mbarrier.arrive.remote.cta", "mbarrier.arrive.release.cta.shared::cluster.b64",
       "mbarrier.arrive.release.cta.shared::cluster.b64 _, [remote]{, count};",
       "8.0", 90, ("mbarrier_arrive",), "cluster", operands=("_", "[remote]", "count"),
       example="ac.mbarrier_arrive(bars[0:], cta_rank=1, scope='cta')"),
    _F("mbarrier.expect_tx.remote", "mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64",
       "mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64 [remote], tx;",
       "8.0", 90, ("mbarrier_expect_tx_remote", "mbarrier_expect_tx"), "cluster", operands=("[remote]", "tx"),
       example="ac.mbarrier_expect_tx_remote(bars[0:], 1, 256)"),
    _F("mbarrier.arrive.expect_tx.remote",
       "mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64",
       "mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [remote], tx;",
       "8.0", 90, ("mbarrier_arrive_expect_tx_remote", "mbarrier_arrive_expect_tx"), "cluster",
       operands=("_", "[remote]", "tx"),
       example="ac.mbarrier_arrive_expect_tx_remote(bars[0:], 1, 256)"),
    _F("cp.async.bulk.cluster",
       "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes",
       "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src], size, [mbar];",
       "8.0", 90, ("cp_async_bulk_cluster",), "bulk",
       operands=("[dstMem]", "[srcMem]", "size", "[mbar]"),
       example="ac.cp_async_bulk_cluster(sh[0:64], sh[64:128], 16, bars[0:], 1)"),
    _F("cluster_dims", ".reqnctapercluster", ".explicitcluster .reqnctapercluster x, y, z",
       "7.8", 90, ("cluster_dims",), "cluster", operands=("x", "y", "z"),
       example="ac.cluster_dims(2)"),
    # --- bulk copies (bulk.py) --------------------------------------------
    _F("cp.async.bulk.g2s",
       "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{hint}",
       "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes{.L2::cache_hint} [dst], [src], size, [mbar]{, policy};",
       "8.0", 90, ("cp_async_bulk_g2s",), "bulk", quals=(_HINT,),
       operands=("[dstMem]", "[srcMem]", "size", "[mbar]", "policy"),
       example="ac.cp_async_bulk_g2s(sh[0:64], g[0:64], bars[0:])",
       replaced_from="8.6", replaced_by="cp.async.bulk.g2s.cta"),
    _F("cp.async.bulk.g2s.cta",
       "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes{hint}",
       "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes{.L2::cache_hint} [dst], [src], size, [mbar]{, policy};",
       "8.6", 90, ("cp_async_bulk_g2s",), "bulk", quals=(_HINT,),
       operands=("[dstMem]", "[srcMem]", "size", "[mbar]", "policy"),
       example="ac.cp_async_bulk_g2s(sh[0:64], g[0:64], bars[0:])"),
    _F("cp.async.bulk.g2s.multicast",
       "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster{hint}",
       "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster{.L2::cache_hint} [dst], [src], size, [mbar], ctaMask{, policy};",
       "8.0", 90, ("cp_async_bulk_g2s",), "bulk", quals=(_HINT,),
       operands=("[dstMem]", "[srcMem]", "size", "[mbar]", "ctaMask", "policy"),
       example="ac.cp_async_bulk_g2s(sh[0:64], g[0:64], bars[0:], multicast_mask=3)"),
    _F("cp.async.bulk.s2g", "cp.async.bulk.global.shared::cta.bulk_group{hint}",
       "cp.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint} [dst], [src], size{, policy};",
       "8.0", 90, ("cp_async_bulk_s2g",), "bulk", quals=(_HINT,),
       operands=("[dstMem]", "[srcMem]", "size", "policy"),
       example="ac.cp_async_bulk_s2g(g[0:64], sh[0:64])"),
    _F("cp.reduce.async.bulk.s2g",
       "cp.reduce.async.bulk.global.shared::cta.bulk_group{hint}.{op}.{type}",
       "cp.reduce.async.bulk.global.shared::cta.bulk_group{.L2::cache_hint}.op{.noftz}.type [dst], [src], size{, policy};",
       "8.0", 90, ("cp_reduce_async_bulk_s2g",), "bulk",
       quals=(_HINT, ("op", _REDUCE_OPS), ("type", _REDUCE_TYPES)),
       operands=("[dstMem]", "[srcMem]", "size", "policy"),
       example='ac.cp_reduce_async_bulk_s2g(g[0:64], sh[0:64], "add")'),
    _F("cp.async.bulk.prefetch.L2", "cp.async.bulk.prefetch.L2.global{hint}",
       "cp.async.bulk.prefetch.L2.global{.L2::cache_hint} [src], size{, policy};",
       "8.0", 90, ("cp_async_bulk_prefetch_l2",), "bulk", quals=(_HINT,),
       operands=("[srcMem]", "size", "policy"),
       example="ac.cp_async_bulk_prefetch_l2(g[0:64])"),
    _F("cp.async.bulk.commit_group", "cp.async.bulk.commit_group",
       "cp.async.bulk.commit_group;", "8.0", 90, ("bulk_commit_group",), "bulk",
       example="ac.bulk_commit_group()"),
    _F("cp.async.bulk.wait_group", "cp.async.bulk.wait_group{read}",
       "cp.async.bulk.wait_group{.read} N;", "8.0", 90, ("bulk_wait_group",), "bulk",
       quals=(("read", ("", ".read")),), operands=("N",),
       example="ac.bulk_wait_group(0, read=True)"),
    # --- tensor (TMA) copies (tensor.py) ------------------------------------
    _F("cp.async.bulk.tensor.g2s",
       "cp.async.bulk.tensor.{rank}d.shared::cluster.global{mode}.mbarrier::complete_tx::bytes{hint}",
       "cp.async.bulk.tensor.{1..5}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes{.L2::cache_hint} [dst], [tmap, {c...}], [mbar]{, policy};",
       "8.0", 90, ("cp_async_bulk_tensor_load",), "tensor", quals=(_RANK, _TILE, _HINT),
       operands=("[dstMem]", "[tensorMap, tensorCoords]", "[mbar]", "policy"),
       example="ac.cp_async_bulk_tensor_load(sh, tm, (0, 8), bars[0:])"),
    _F("cp.async.bulk.tensor.g2s.multicast",
       "cp.async.bulk.tensor.{rank}d.shared::cluster.global{mode}.mbarrier::complete_tx::bytes.multicast::cluster{hint}",
       "cp.async.bulk.tensor.{1..5}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster{.L2::cache_hint} [dst], [tmap, {c...}], [mbar], ctaMask{, policy};",
       "8.0", 90, ("cp_async_bulk_tensor_load",), "tensor", quals=(_RANK, _TILE, _HINT),
       operands=("[dstMem]", "[tensorMap, tensorCoords]", "[mbar]", "ctaMask", "policy"),
       example="ac.cp_async_bulk_tensor_load(sh, tm, (0, 8), bars[0:], multicast_mask=3)"),
    _F("cp.async.bulk.tensor.s2g",
       "cp.async.bulk.tensor.{rank}d.global.shared::cta{mode}.bulk_group{hint}",
       "cp.async.bulk.tensor.{1..5}d.global.shared::cta.tile.bulk_group{.L2::cache_hint} [tmap, {c...}], [src]{, policy};",
       "8.0", 90, ("cp_async_bulk_tensor_store",), "tensor", quals=(_RANK, _TILE, _HINT),
       operands=("[tensorMap, tensorCoords]", "[srcMem]", "policy"),
       example="ac.cp_async_bulk_tensor_store(tm, (0, 8), sh)"),
    _F("cp.reduce.async.bulk.tensor",
       "cp.reduce.async.bulk.tensor.{rank}d.global.shared::cta.{op}{mode}.bulk_group{hint}",
       "cp.reduce.async.bulk.tensor.{1..5}d.global.shared::cta.op.tile.bulk_group{.L2::cache_hint} [tmap, {c...}], [src]{, policy};",
       "8.0", 90, ("cp_reduce_async_bulk_tensor",), "tensor",
       quals=(_RANK, _TENSOR_REDUCE_OP, _TILE, _HINT),
       operands=("[tensorMap, tensorCoords]", "[srcMem]", "policy"),
       example='ac.cp_reduce_async_bulk_tensor(tm, (0, 8), sh, "add")'),
    _F("cp.async.bulk.prefetch.tensor",
       "cp.async.bulk.prefetch.tensor.{rank}d.L2.global{mode}{hint}",
       "cp.async.bulk.prefetch.tensor.{1..5}d.L2.global.tile{.L2::cache_hint} [tmap, {c...}]{, policy};",
       "8.0", 90, ("cp_async_bulk_prefetch_tensor",), "tensor", quals=(_RANK, _TILE, _HINT),
       operands=("[tensorMap, tensorCoords]", "policy"),
       example="ac.cp_async_bulk_prefetch_tensor(tm, (0, 8))"),
    # im2col mode (3-D to 5-D channels-last maps): the same templates, the
    # .im2col mode and one unsigned 16-bit offset per spatial axis
    _F("cp.async.bulk.tensor.g2s.im2col",
       "cp.async.bulk.tensor.{rank}d.shared::cluster.global{mode}.mbarrier::complete_tx::bytes{hint}",
       "cp.async.bulk.tensor.{3..5}d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes{.L2::cache_hint} [dst], [tmap, {c...}], [mbar], {off...}{, policy};",
       "8.0", 90, ("cp_async_bulk_tensor_load_im2col",), "tensor",
       quals=(_RANK_IM2COL, _IM2COL, _HINT),
       operands=("[dstMem]", "[tensorMap, tensorCoords]", "[mbar]", "im2colOffsets", "policy"),
       example="ac.cp_async_bulk_tensor_load_im2col(sh, tm, (0, 0, 0, 0), (0, 0), bars[0:])"),
    _F("cp.async.bulk.tensor.g2s.im2col.multicast",
       "cp.async.bulk.tensor.{rank}d.shared::cluster.global{mode}.mbarrier::complete_tx::bytes.multicast::cluster{hint}",
       "cp.async.bulk.tensor.{3..5}d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes.multicast::cluster{.L2::cache_hint} [dst], [tmap, {c...}], [mbar], {off...}, ctaMask{, policy};",
       "8.0", 90, ("cp_async_bulk_tensor_load_im2col",), "tensor",
       quals=(_RANK_IM2COL, _IM2COL, _HINT),
       operands=("[dstMem]", "[tensorMap, tensorCoords]", "[mbar]", "im2colOffsets", "ctaMask",
                 "policy"),
       example="ac.cp_async_bulk_tensor_load_im2col(sh, tm, (0, 0, 0, 0), (0, 0), bars[0:], "
               "multicast_mask=3)"),
    _F("cp.async.bulk.prefetch.tensor.im2col",
       "cp.async.bulk.prefetch.tensor.{rank}d.L2.global{mode}{hint}",
       "cp.async.bulk.prefetch.tensor.{3..5}d.L2.global.im2col{.L2::cache_hint} [tmap, {c...}], {off...}{, policy};",
       "8.0", 90, ("cp_async_bulk_prefetch_tensor_im2col",), "tensor",
       quals=(_RANK_IM2COL, _IM2COL, _HINT),
       operands=("[tensorMap, tensorCoords]", "im2colOffsets", "policy"),
       example="ac.cp_async_bulk_prefetch_tensor_im2col(tm, (0, 0, 0, 0), (0, 0))"),
    _F("cp.async.bulk.tensor.s2g.im2col",
       "cp.async.bulk.tensor.{rank}d.global.shared::cta{mode}.bulk_group{hint}",
       "cp.async.bulk.tensor.{3..5}d.global.shared::cta.im2col_no_offs.bulk_group{.L2::cache_hint} [tmap, {c...}], [src]{, policy};",
       "8.0", 90, ("cp_async_bulk_tensor_store_im2col",), "tensor",
       quals=(_RANK_IM2COL, _IM2COL_NO_OFFS, _HINT),
       operands=("[tensorMap, tensorCoords]", "[srcMem]", "policy"),
       example="ac.cp_async_bulk_tensor_store_im2col(tm, (0, 0, 0, 0), sh)"),
    _F("cp.reduce.async.bulk.tensor.im2col",
       "cp.reduce.async.bulk.tensor.{rank}d.global.shared::cta.{op}{mode}.bulk_group{hint}",
       "cp.reduce.async.bulk.tensor.{3..5}d.global.shared::cta.op.im2col_no_offs.bulk_group{.L2::cache_hint} [tmap, {c...}], [src]{, policy};",
       "8.0", 90, ("cp_reduce_async_bulk_tensor_im2col",), "tensor",
       quals=(_RANK_IM2COL, _TENSOR_REDUCE_OP, _IM2COL_NO_OFFS, _HINT),
       operands=("[tensorMap, tensorCoords]", "[srcMem]", "policy"),
       example='ac.cp_reduce_async_bulk_tensor_im2col(tm, (0, 0, 0, 0), sh, "add")'),
    _F("prefetch.tensormap", "prefetch.tensormap",
       "prefetch.tensormap [tmap];", "8.0", 90, ("prefetch_tensormap",), "tensor",
       operands=("[a]",), example="ac.prefetch_tensormap(tm, fence=False)"),
    _F("fence.proxy.tensormap", "fence.proxy.tensormap::generic.acquire.{scope}",
       "fence.proxy.tensormap::generic.acquire.{cta,cluster,gpu,sys} [tmap], 128;",
       "8.3", 90, ("fence_proxy_tensormap", "cp_async_bulk_tensor_load",
                   "cp_async_bulk_tensor_store", "cp_reduce_async_bulk_tensor",
                   "prefetch_tensormap", "cp_async_bulk_tensor_load_im2col",
                   "cp_async_bulk_prefetch_tensor_im2col", "cp_async_bulk_tensor_store_im2col",
                   "cp_reduce_async_bulk_tensor_im2col"),
       "tensor", quals=(("scope", ("cta", "cluster", "gpu", "sys")),), operands=("[addr]", "size"),
       example='ac.fence_proxy_tensormap(tm, "gpu")'),
    # --- tensor cores, Ampere style (mma.py) ----------------------------------
    _F("mma.sync.m16n8k16", "mma.sync.aligned.m16n8k16.row.col.f32.{type}.f32",
       "mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32 d, a, b, c;",
       "7.0", 80, ("mma_sync",), "mma", quals=(("type", ("bf16.bf16", "f16.f16")),),
       operands=("d", "a", "b", "c"),
       example='out[0] = ac.mma_sync(ac.ldmatrix(sh, (0,), 4), ac.ldmatrix(sh, (0,), 2), '
               'ac.mma_zeros(), "bf16")[0]'),
    _F("mma.sync.m16n8k8.tf32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
       "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 d, a, b, c;",
       "7.0", 80, ("mma_sync",), "mma", operands=("d", "a", "b", "c"),
       example='out[0] = ac.mma_sync(ac.ldmatrix(sh, (0,), 4), ac.ldmatrix(sh, (0,), 2), '
               'ac.mma_zeros(), "tf32")[0]'),
    _F("ldmatrix", "ldmatrix.sync.aligned.m8n8{num}{trans}.shared.b16",
       "ldmatrix.sync.aligned.m8n8{.x1,.x2,.x4}{.trans}.shared.b16 r, [p];",
       "6.5", 75, ("ldmatrix", "mma_load_a", "mma_load_b"), "mma",
       quals=(("num", (".x1", ".x2", ".x4")), ("trans", ("", ".trans"))),
       operands=("r", "[p]"), example="out[0] = ac.ldmatrix(sh, (0,), 4, trans=False)[3]"),
    _F("stmatrix", "stmatrix.sync.aligned.m8n8{num}{trans}.shared.b16",
       "stmatrix.sync.aligned.m8n8{.x1,.x2,.x4}{.trans}.shared.b16 [p], r;",
       "7.8", 90, ("stmatrix",), "mma",
       quals=(("num", (".x1", ".x2", ".x4")), ("trans", ("", ".trans"))),
       operands=("[p]", "r"), example="ac.stmatrix(sh, (0,), ac.ldmatrix(sh, (8,), 2))"),
    _F("cvt.rn.bf16.f32", "cvt.rn.bf16.f32", "cvt.rn.bf16.f32 d, a;", "7.0", 80,
       ("f32_to_bf16", "mma_store"), "mma", operands=("d", "a"),
       example="out[0] = ac.f32_to_bf16(g[0])"),
    # --- warpgroup MMA (wgmma.py), sm_90a only -----------------------------
    _F("wgmma.fence", "wgmma.fence.sync.aligned", "wgmma.fence.sync.aligned;",
       "8.0", 90, ("wgmma_fence",), "wgmma", example="ac.wgmma_fence()", arch="a"),
    _F("wgmma.commit_group", "wgmma.commit_group.sync.aligned",
       "wgmma.commit_group.sync.aligned;", "8.0", 90, ("wgmma_commit_group",), "wgmma",
       example="ac.wgmma_commit_group()", arch="a"),
    _F("wgmma.wait_group", "wgmma.wait_group.sync.aligned",
       "wgmma.wait_group.sync.aligned N;", "8.0", 90, ("wgmma_wait_group",), "wgmma",
       operands=("N",), example="ac.wgmma_wait_group(0)", arch="a"),
    _F("wgmma.mma_async", "wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{t}.{t}",
       "wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}.{bf16,f16} d, a-desc|{a-regs}, b-desc, scale-d, imm-scale-a, imm-scale-b{, imm-trans-a}, imm-trans-b;",
       "8.0", 90, ("wgmma_mma_async",), "wgmma",
       quals=(("n", _WGMMA_N), ("k", ("16",)), ("t", ("bf16", "f16"))),
       operands=("d", "a-desc|a", "b-desc", "scale-d", "imm-scale-a", "imm-scale-b",
                 "imm-trans-a", "imm-trans-b"),
       example='out[0] = ac.wgmma_mma_async(ac.wgmma_zero(64), ac.wgmma_descriptor(hb[:, 0:16], swizzle=128), ac.wgmma_descriptor(hb[:, 16:32], swizzle=128), dtype="bf16")[0]',
       arch="a"),
    _F("wgmma.mma_async.tf32", "wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{t}.{t}",
       "wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32 d, a-desc|{a-regs}, b-desc, scale-d, imm-scale-a, imm-scale-b;",
       "8.0", 90, ("wgmma_mma_async",), "wgmma",
       quals=(("n", _WGMMA_N), ("k", ("8",)), ("t", ("tf32",))),
       operands=("d", "a-desc|a", "b-desc", "scale-d", "imm-scale-a", "imm-scale-b"),
       example='out[0] = ac.wgmma_mma_async(ac.wgmma_zero(64), ac.wgmma_descriptor(hb[:, 0:16], swizzle=128), ac.wgmma_descriptor(hb[:, 16:32], swizzle=128), dtype="tf32")[0]',
       arch="a"),
    _F("wgmma.mma_async.f8", "wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{t}.{t}",
       "wgmma.mma_async.sync.aligned.m64nNk32.f32.{e4m3,e5m2}.{e4m3,e5m2} d, a-desc|{a-regs}, b-desc, scale-d, imm-scale-a, imm-scale-b;",
       "8.0", 90, ("wgmma_mma_async",), "wgmma",
       quals=(("n", _WGMMA_N), ("k", ("32",)), ("t", ("e4m3", "e5m2"))),
       operands=("d", "a-desc|a", "b-desc", "scale-d", "imm-scale-a", "imm-scale-b"),
       example='out[0] = ac.wgmma_mma_async(ac.wgmma_zero(64), ac.wgmma_descriptor(hb[:, 0:16], swizzle=128), ac.wgmma_descriptor(hb[:, 16:32], swizzle=128), dtype="e4m3")[0]',
       arch="a"),
    # f16 accumulation (.f16 D): f16 or fp8 inputs, N/4 registers of packed f16 pairs
    _F("wgmma.mma_async.f16", "wgmma.mma_async.sync.aligned.m64n{n}k{k}.f16.{t}.{t}",
       "wgmma.mma_async.sync.aligned.m64nNk16.f16.f16.f16 d, a-desc|{a-regs}, b-desc, scale-d, imm-scale-a, imm-scale-b{, imm-trans-a}, imm-trans-b;",
       "8.0", 90, ("wgmma_mma_async",), "wgmma",
       quals=(("n", _WGMMA_N), ("k", ("16",)), ("t", ("f16",))),
       operands=("d", "a-desc|a", "b-desc", "scale-d", "imm-scale-a", "imm-scale-b",
                 "imm-trans-a", "imm-trans-b"),
       example='out[0] = ac.wgmma_mma_async(ac.wgmma_zero(64, dtype="f16"), ac.wgmma_descriptor(hb[:, 0:16], swizzle=128), ac.wgmma_descriptor(hb[:, 16:32], swizzle=128), dtype="f16")[0]',
       arch="a"),
    _F("wgmma.mma_async.f8.f16", "wgmma.mma_async.sync.aligned.m64n{n}k{k}.f16.{t}.{t}",
       "wgmma.mma_async.sync.aligned.m64nNk32.f16.{e4m3,e5m2}.{e4m3,e5m2} d, a-desc|{a-regs}, b-desc, scale-d, imm-scale-a, imm-scale-b;",
       "8.0", 90, ("wgmma_mma_async",), "wgmma",
       quals=(("n", _WGMMA_N), ("k", ("32",)), ("t", ("e4m3", "e5m2"))),
       operands=("d", "a-desc|a", "b-desc", "scale-d", "imm-scale-a", "imm-scale-b"),
       example='out[0] = ac.wgmma_mma_async(ac.wgmma_zero(64, dtype="f16"), ac.wgmma_descriptor(hb[:, 0:16], swizzle=128), ac.wgmma_descriptor(hb[:, 16:32], swizzle=128), dtype="e4m3")[0]',
       arch="a"),
    _F("setmaxnreg", "setmaxnreg.{op}.sync.aligned.u32", "setmaxnreg.{inc,dec}.sync.aligned.u32 r;",
       "8.0", 90, ("setmaxnreg_inc", "setmaxnreg_dec"), "wgmma",
       quals=(("op", ("inc", "dec")),), operands=("r",), example="ac.setmaxnreg_inc(232)",
       arch="a"),
    # --- emitted by checked mode's diagnostics, not by a public call ---------
    _F("isspacep", "isspacep.{space}", "isspacep.space p, a;", "7.0", 80, (), "checked",
       quals=(("space", ("shared", "global", "local", "const", "param")),),
       operands=("p", "a")),
    _F("sreg.globaltimer", "%globaltimer", "mov.u64 d, %globaltimer;", "7.0", 80, (), "checked"),
    _F("activemask", "activemask.b32", "activemask.b32 d;", "6.2", 80, (), "checked",
       operands=("d",)),
    _F("ld.volatile.shared.b64", "ld.volatile.shared.b64", "ld.volatile.shared.b64 d, [a];",
       "7.0", 80, (), "checked", operands=("d", "[a]")),
]

FORMS: dict[str, Form] = {row.key: row for row in _ROWS}
assert len(FORMS) == len(_ROWS), "duplicate form key"

# One statement of ``Form.example`` runs in this kernel (tests, docs):
# ``g`` float32[::1] global memory, ``tm`` a device tensor map (uint64[::1]),
# ``out`` uint64[::1] for results, ``sh`` a 16 KiB shared float32 tile aligned
# to 1024 bytes, ``bars`` four barriers, ``hb`` a 64 x 64 tile of 16-bit
# elements (bf16 bits) aligned to 1024 bytes.
EXAMPLE_PRELUDE = """\
def kernel(g, tm, out):
    sh = cuda.shared.array(4096, np.float32, alignment=1024)
    bars = cuda.shared.array(4, np.uint64)
    hb = cuda.shared.array((64, 64), np.uint16, alignment=1024)
"""

#: within, every :func:`form` looked up is gated for intrinsic ``api``:
#: ``_compat.intrinsic`` wraps each intrinsic's typing (and its re-typing for
#: another target) in it, so no family module calls the gate itself
selecting = typing_for


def form(key: str) -> Form:
    """The row ``key``; gated against the compile target when an
    intrinsic's typing selects it (inside :func:`selecting`)."""
    row = FORMS[key]
    api = typing_api()
    if api is not None:
        row.gate(api)
    return row


def select(key: str) -> Form:
    """Typing's statement that it will emit row ``key``: the same lookup as
    :func:`form`, named for what it does there (the gate)."""
    return form(key)


def public_apis() -> tuple[str, ...]:
    """Every public function some row names, in table order, once each."""
    seen: dict[str, None] = {}
    for row in _ROWS:
        for api in row.apis:
            seen.setdefault(api, None)
    return tuple(seen)


def family_of(api: str) -> str | None:
    """The family module that defines public function ``api``: that of the
    first row naming it first (its own form), else of the first row naming
    it (a function that emits only forms of others, like a blocking wait)."""
    own = next((row.family for row in _ROWS if row.apis[:1] == (api,)), None)
    return own or next((row.family for row in _ROWS if api in row.apis), None)


#: families with no PTX form of their own, after the registry's: NVVM's
#: vector accesses, the loop pragma, and the pipelines over the other families
FORMLESS_FAMILIES: tuple[str, ...] = ("vector", "pragma", "pipeline")
#: families whose functions users reach through their module
#: (``ac.pipeline.init``), not as names of the package
NAMESPACE_FAMILIES: tuple[str, ...] = ("pipeline",)


def families() -> tuple[str, ...]:
    """Every family module: the registry's, in table order, then
    :data:`FORMLESS_FAMILIES`.  The package binds each family's simulator
    twins (``sim/<family>.py``) from this list."""
    seen = dict.fromkeys(row.family for row in _ROWS)
    return (*seen, *(f for f in FORMLESS_FAMILIES if f not in seen))


@functools.lru_cache(maxsize=None)
def _by_opcode() -> dict[str, tuple[Form, ...]]:
    table: dict[str, list[Form]] = {}
    for row in _ROWS:
        for text in row.expansions():
            table.setdefault(text, []).append(row)
    return {k: tuple(v) for k, v in table.items()}


def rows_for_opcode(opcode: str) -> tuple[Form, ...]:
    """The rows whose qualifier sets produce the concrete ``opcode``
    (``"%cluster_ctaid.x"`` for a special register, ``".reqnctapercluster"``
    for the cluster directive)."""
    return _by_opcode().get(opcode, ())


def feature_table() -> str:
    """Markdown table of every form: the feature table of the docs
    (``docs/reference/features.md``; ``make readme-table`` rewrites it).

    Example::

        import numba_asynccopy as ac
        print(ac.feature_table())
    """
    lines = [
        "| operation | PTX | min PTX ISA | min sm |",
        "|---|---|---|---|",
    ]
    for row in _ROWS:
        if row.internal:
            continue
        apis = ", ".join(f"`ac.{a}`" for a in row.apis)
        syntax = row.syntax.replace("|", "\\|")  # a bare | would end the cell
        lines.append(f"| {apis} | `{syntax}` | {row.min_ptx} | {row.target} |")
    return "\n".join(lines)
