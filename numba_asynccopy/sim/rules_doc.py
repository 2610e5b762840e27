"""The page ``docs/simulator-rules.md``: what the simulator detects, rule by
rule, generated from where the rules live, and what it cannot detect.

- the rule texts every layer shares (``_rules.RULES``): the simulator
  raises them with the compile-time error's and the checked-mode trap's words;
- the simulator's own detections (:data:`DETECTIONS`): each names the
  function that implements it, whose docstring's first paragraph is the
  rule as written beside the code;
- what it cannot detect (:data:`BLIND_SPOTS`), stated plainly.

``python -m numba_asynccopy.sim.rules_doc docs/simulator-rules.md``
rewrites the page; a test keeps it current.
"""

from __future__ import annotations

import importlib
import inspect
import sys

from .. import _rules

#: (what it detects, "module.attribute" under numba_asynccopy.sim that implements it)
DETECTIONS: tuple[tuple[str, str], ...] = (
    ("A run-time value where the GPU needs a constant, and a constant the GPU compile refuses, "
     "typed as Numba types it (`COLS * 4` is run-time; the constant entries of a tuple, "
     "`(tid, -1)`, are literals; a kernel parameter has its argument's type)", "constants"),
    ("A copy into shared memory an earlier copy still writes, or a bulk store still reads",
     "cp_async._check_reuse"),
    ("A bulk store's source overwritten before the copy read it", "bulk.BulkOp.read"),
    ("A copy into shared memory still in flight when its block exits (a missing wait)",
     "cp_async._check_landed_at_exit"),
    ("Ordinary stores read by the async proxy (bulk/TMA store, reduction) with no "
     "fence_proxy_async between", "proxy.check_source"),
    ("More transaction bytes than a phase's expect_tx announced", "state.check_tx_overflow"),
    ("Transaction bytes that do not balance when the block exits", "state.BlockState.at_exit"),
    ("A barrier the async proxy uses before its init was fenced", "state.check_init_fenced"),
    ("A peer CTA's barrier used before fence_mbarrier_init and a cluster barrier",
     "state.check_cluster_fenced"),
    ("A DSMEM read not ordered after the owner's write", "cluster._ClusterState.check_reads"),
    ("A shared-memory element read of what another thread's cp.async wrote (in flight, or "
     "retired only by that thread's wait_group) or another CTA's DSMEM store wrote, with no "
     "barrier between", "visibility.check_read"),
    ("A slot released (an mbarrier arrival) without waiting for its fill", "visibility.released"),
    ("Warp convergence of elect_sync, syncwarp and the .aligned forms: a lane outside the mask, "
     "lanes meeting with different masks, a lane that never comes", "fence.meet"),
    ("Warp shuffles, votes and matches with the GPU's mask rules", "warp"),
    ("A wait that can never complete: one DeadlockError, root cause first",
     "engine.ClusterRun._deadlock_text"),
    ("Pipeline misuse (slots, phases, releases without a wait)", "pipeline"),
    ("Warpgroup MMA: an accumulator read or passed on before its wait, an MMA no wgmma_fence "
     "ordered, a TMA refill or a release of a slot an MMA still reads, a descriptor swizzle other "
     "than the TMA map's", "wgmma"),
    ("An ordinary store that changed bytes an in-flight MMA reads (found at the warpgroup's "
     "first covering wait)", "wgmma._Op.check_unchanged"),
)

#: what the simulator cannot detect
BLIND_SPOTS: tuple[str, ...] = (
    "Data races between ordinary stores and loads of different threads (shared or global "
    "memory) without a barrier: ordinary stores are not tracked; element reads of shared "
    "memory are checked only against asynchronous copies and DSMEM stores "
    "(`sim/visibility.py`), and reads of whole slices or through numpy functions not at all.",
    "A read that comes before an unsynchronized write (an owner reading before a peer's "
    "`dsmem_store`, a thread reading before another thread issues its `cp.async`): it returns "
    "the old value (or poison), with no error.",
    "Which arrival published a write through an mbarrier: any arrival of the writer on the "
    "phase that completes counts, even one made before the write; a DSMEM store counts as "
    "visible to the whole owning CTA once one of its threads waited on the cluster barrier.",
    "Reorderings the PTX memory model allows for ordinary accesses (a missing "
    "`cuda.threadfence()`, relaxed atomics): accesses happen in program order.",
    "Which thread's `fence_proxy_async` ordered a store: a fence by any thread of the block "
    "counts for every thread's stores, and a missing block barrier between another thread's "
    "fence and the copy's issue is not seen.",
    "Proxy ordering on global memory (`fence_proxy_async(\"global\")`).",
    "An ordinary store into a shared tile that an in-flight `wgmma_mma_async` reads, when it "
    "writes the values already there or comes after the first `wgmma_wait_group` of the "
    "warpgroup that covers the MMA: the simulator compares the bytes the MMA read at that wait.",
    "Anything the eager schedule hides: run the worst schedule (the default) and several "
    "interleaving seeds.",
    "A bulk or TMA store (or reduction) still reading its shared source when its block "
    "exits: the simulator completes it at the exit. Wait for it (`bulk_wait_group(0, "
    "read=True)`) before the kernel ends, as the CUDA programming guide's TMA example does.",
    "Where a kernel's source cannot be read (built by `exec` without a `linecache` entry), "
    "every argument is typed as the constant its value is: a run-time value where the GPU "
    "needs a constant passes, and an out-of-range run-time value is refused with the "
    "compile-time error instead of the trap's words. The type of run-time arithmetic "
    "(`n + 1`) is taken from its Python value.",
    "Performance: bank conflicts, occupancy, register use, timing.",
)

HEADER = """# What the simulator detects

<!-- generated by `python -m numba_asynccopy.sim.rules_doc docs/simulator-rules.md`
     from the rule book (numba_asynccopy/_rules.py) and the simulator's checks; do not edit -->

Run a kernel with `NUMBA_ENABLE_CUDASIM=1` and the package's twins check the
rules below while it runs, in the worst-case schedule (a copy lands only when
the program waits for it correctly) and, with a seed, under varied thread
interleavings.  A broken rule is a `SimulatorError` (or a `DeadlockError`)
naming the rule, the argument, the thread and the kernel line.
"""


def _doc(path: str) -> str:
    parts = path.split(".")
    obj = importlib.import_module(f"{__package__}.{parts[0]}")
    for p in parts[1:]:
        obj = getattr(obj, p)
    doc = inspect.getdoc(obj)
    if not doc:
        raise ValueError(f"sim.{path} has no docstring to state its rule")
    return " ".join(doc.split("\n\n")[0].split())


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    """The page's Markdown."""
    out = [HEADER, "## Rules every layer shares", "",
           "The simulator raises these with the words of the compile-time error and of the "
           "checked-mode trap (fields in braces are filled in).", "",
           "| rule | text |", "|---|---|"]
    out += [f"| `{name}` | {_cell(r.template)} |" for name, r in sorted(_rules.RULES.items())]
    out += ["", "## The simulator's own detections", "",
            "| detects | where | the rule, as stated in the code |", "|---|---|---|"]
    out += [f"| {_cell(what)} | `sim.{path}` | {_cell(_doc(path))} |" for what, path in DETECTIONS]
    out += ["", "## What it cannot detect", ""]
    out += [f"- {b}" for b in BLIND_SPOTS]
    return "\n".join(out) + "\n"


def write(path: str) -> bool:
    """Rewrite ``path`` with :func:`render`; True when it changed."""
    new = render()
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == new:
                return False
    except FileNotFoundError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)
    return True


if __name__ == "__main__":
    print("rewritten" if write(sys.argv[1]) else "up to date")
