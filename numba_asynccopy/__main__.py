"""``python -m numba_asynccopy``: the demo.

With a GPU: runs the examples of TVM TIRx's async-copy documentation (the
cluster bulk copy on sm_90), checks them against numpy and prints the
bandwidth of a staged cp.async copy.  In the simulator
(``NUMBA_ENABLE_CUDASIM=1``): runs the same kernels there, the cluster copy
included, and checks them against numpy (no timing).  Without either:
compiles the same kernels, lists the asynchronous instructions each emits,
assembles them with ptxas and says that no GPU was found.  Each mode ends
by saying what to try next.
"""

from __future__ import annotations

import re
import sys
from collections import Counter

import numpy as np

ASYNC_RE = re.compile(r"^\s*(?:@%?\w+\s+)?((?:cp\.async|cp\.reduce|mbarrier|fence|elect|createpolicy|barrier\.cluster|mapa)[\w.:]*)", re.M)


def async_ops(ptx: str) -> Counter:
    """Count the asynchronous-copy instructions in PTX text."""
    ops = Counter(m.group(1) for m in ASYNC_RE.finditer(ptx))
    # instructions wrapped in { ... } blocks by predication
    for m in re.finditer(r"@p\s+((?:cp\.async|mbarrier)[\w.:]*)", ptx):
        ops[m.group(1)] += 1
    return ops


def _compile_only(kernels) -> int:
    from numba import cuda

    from . import toolchain

    failures = 0
    missing: set[str] = set()
    for cc in ((8, 0), (9, 0)):
        print(f"\n== compiled for sm_{cc[0]}{cc[1]} (no launch)")
        for name, fn, sig, min_cc in kernels:
            if cc < min_cc:
                print(f"  {name:12s} needs sm_{min_cc[0]}{min_cc[1]} (thread-block clusters)")
                continue
            try:
                ptx, _ = cuda.compile_ptx(fn, sig, cc=cc)
                ops = async_ops(ptx)
                try:
                    cubin, _ = toolchain.assemble(ptx)
                    sass = Counter(op for op in toolchain.sass_opcodes(toolchain.disassemble(cubin))
                                   if op.startswith(("LDGSTS", "LDGDEPBAR", "DEPBAR", "SYNCS", "UBLKCP", "UTMA")))
                    asm_note = "ptxas ok; SASS " + ", ".join(f"{k} x{v}" for k, v in sorted(sass.items()))
                except toolchain.ToolMissing as e:
                    missing.add(str(e))  # said once, after the listing
                    asm_note = "not assembled (no matching ptxas: see below)"
                listing = ", ".join(f"{k} x{v}" for k, v in sorted(ops.items()))
                print(f"  {name:12s} {listing}\n  {'':12s} {asm_note}")
            except Exception as e:  # keep the demo going; report, no traceback
                failures += 1
                print(f"  {name:12s} FAILED: {type(e).__name__}: {e}")
    for why in sorted(missing):
        print(f"\nThe instructions above were compiled but not assembled: {why}")
    return failures


def _run_gpu(kernels) -> int:
    from numba import cuda

    from .examples import seeds
    from .examples.cluster import CLUSTER_COPY_SIG, cluster_copy
    from .examples.staged_copy import SIGNATURE, make_staged_copy, tile_words

    rng = np.random.default_rng()
    failures = 0
    print(f"GPU: {cuda.get_current_device().name.decode() if isinstance(cuda.get_current_device().name, bytes) else cuda.get_current_device().name}")
    for name, (fn, sig, (grid, block)) in seeds.SEEDS.items():
        inputs, expected = seeds.reference(name, rng)
        out = np.full_like(expected, 0x5A if expected.dtype == np.uint8 else 7)
        d_out = cuda.to_device(out)
        args = [cuda.to_device(x) if isinstance(x, np.ndarray) else x for x in inputs]
        cuda.jit(sig)(fn)[grid, block](args[0], d_out, *args[1:])
        ok = np.array_equal(d_out.copy_to_host(), expected)
        failures += not ok
        print(f"  {name:12s} {'matches numpy' if ok else 'MISMATCH'}")

    # TVM TIRx's cluster bulk copy: CTA 0 sends 256 bytes to CTA 1
    if cuda.get_current_device().compute_capability >= (9, 0):
        a = rng.integers(0, 2**32, 64, dtype=np.uint32)
        d_out = cuda.to_device(np.full(64, 0xA5A5A5A5, np.uint32))
        cuda.jit(CLUSTER_COPY_SIG)(cluster_copy)[2, 1](cuda.to_device(a), d_out)
        ok = np.array_equal(d_out.copy_to_host(), a)
        failures += not ok
        print(f"  {'cluster_copy':12s} {'matches numpy' if ok else 'MISMATCH'}")
    else:
        print(f"  {'cluster_copy':12s} needs sm_90 (thread-block clusters): not run")

    n = 1 << 28  # 1 GiB of uint32, several times the L2
    n -= n % tile_words()
    src = cuda.to_device(rng.integers(0, 2**32, n, dtype=np.uint32))
    dst = cuda.device_array(n, np.uint32)
    kernel = cuda.jit(SIGNATURE)(make_staged_copy(4, 16, 256))
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    grid = sms * 8
    kernel[grid, 256](src, dst)
    cuda.synchronize()
    ok = bool(np.array_equal(dst[:4096].copy_to_host(), src[:4096].copy_to_host()))
    start, stop = cuda.event(), cuda.event()
    times = []
    for _ in range(10):
        start.record()
        kernel[grid, 256](src, dst)
        stop.record()
        stop.synchronize()
        times.append(cuda.event_elapsed_time(start, stop))
    ms = float(np.median(times))
    gbs = 2 * n * 4 / (ms * 1e-3) / 1e9
    failures += not ok
    print(f"  staged copy (4 stages, 16-byte chunks): {n * 4 / 2**30:.1f} GiB in {ms:.3f} ms "
          f"-> {gbs:.0f} GB/s (read + write){'' if ok else '  MISMATCH'}")
    return failures


def _run_sim() -> int:
    """The examples in numba-cuda's simulator: results against numpy."""
    from numba import cuda

    from .examples import seeds
    from .examples.cluster import cluster_copy
    from .examples.staged_copy import make_staged_copy, tile_words

    rng = np.random.default_rng()
    failures = 0
    print("numba-asynccopy demo: running the examples in the CUDA simulator "
          "(NUMBA_ENABLE_CUDASIM=1, worst-case schedule); results are checked, not timed.")
    for name, (fn, _sig, (grid, block)) in seeds.SEEDS.items():
        inputs, expected = seeds.reference(name, rng)
        d_out = cuda.to_device(np.full_like(expected, 0x5A if expected.dtype == np.uint8 else 7))
        args = [cuda.to_device(x) if isinstance(x, np.ndarray) else x for x in inputs]
        cuda.jit(fn)[grid, block](args[0], d_out, *args[1:])
        ok = np.array_equal(d_out.copy_to_host(), expected)
        failures += not ok
        print(f"  {name:12s} {'matches numpy' if ok else 'MISMATCH'}")
    a = rng.integers(0, 2**32, 64, dtype=np.uint32)
    d_out = cuda.to_device(np.full(64, 0xA5A5A5A5, np.uint32))
    cuda.jit(cluster_copy)[2, 1](cuda.to_device(a), d_out)  # one cluster of 2 CTAs
    ok = np.array_equal(d_out.copy_to_host(), a)
    failures += not ok
    print(f"  {'cluster_copy':12s} {'matches numpy' if ok else 'MISMATCH'} (a cluster of 2 CTAs)")
    n = 4 * tile_words(16, 64, 2)
    src = rng.integers(0, 2**32, n, dtype=np.uint32)
    dst = cuda.to_device(np.zeros(n, np.uint32))
    cuda.jit(make_staged_copy(4, 16, 64))[2, 64](cuda.to_device(src), dst)
    ok = np.array_equal(dst.copy_to_host(), src)
    failures += not ok
    print(f"  {'staged_copy':12s} {'matches numpy' if ok else 'MISMATCH'} (4 stages, 16-byte chunks, "
          f"{n} words)")
    print("\nThe simulator ran every kernel above on the CPU; on a GPU the demo also times a copy.")
    return failures


def next_steps(mode: str) -> str:
    """What to try after the demo in ``mode`` ("gpu", "sim" or "compile")."""
    lines = ["", "What to try next:",
             "  - the notebooks: jupyter lab notebooks/01_async_copies.ipynb (each picks GPU, "
             "simulator or compile-only mode by itself and says which)"]
    if mode == "sim":
        lines.append("  - your own kernels here: a missing wait reads NaN, a hang is a DeadlockError "
                     "naming the barrier; on a GPU, the same command without NUMBA_ENABLE_CUDASIM")
    else:
        lines.append("  - the simulator, no GPU needed: NUMBA_ENABLE_CUDASIM=1 python -m numba_asynccopy "
                     "(a missing wait reads NaN, a hang is a DeadlockError)")
    lines += ["  - a kernel's instructions, registers and spills without a GPU: "
              "ac.inspect(kernel, *argtypes, cc=(9, 0))",
              "  - the documentation: make docs, then open docs/_build/html/index.html"]
    return "\n".join(lines)


def main() -> int:
    from numba import cuda

    from .examples import seeds
    from .examples.staged_copy import SIGNATURE, make_staged_copy

    from .examples.cluster import CLUSTER_COPY_SIG, cluster_copy

    kernels = [(name, fn, sig, (8, 0)) for name, (fn, sig, _) in seeds.SEEDS.items()]
    kernels.append(("staged_copy", make_staged_copy(4, 16, 256), SIGNATURE, (8, 0)))
    kernels.append(("cluster_copy", cluster_copy, CLUSTER_COPY_SIG, (9, 0)))
    from . import sim

    try:
        have_gpu = not sim.ENABLED and cuda.is_available()
    except Exception:
        have_gpu = False
    try:
        if sim.ENABLED:
            mode, failures = "sim", _run_sim()
        elif have_gpu:
            mode, failures = "gpu", _run_gpu(kernels)
        else:
            print("numba-asynccopy demo: no GPU found; compiling only.")
            mode, failures = "compile", _compile_only(kernels)
            from . import toolchain

            done = "compiled and assembled" if toolchain.find_tool("ptxas") else "compiled"
            print(f"\nNo GPU was found: kernels were {done}, not run.")
    except Exception as e:
        print(f"demo failed: {type(e).__name__}: {e}")
        return 1
    print(next_steps(mode))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
