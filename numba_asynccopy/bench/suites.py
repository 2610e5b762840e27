"""The measurements, one suite per example family (run in a child process).

Each measurement checks the output of its implementation on fresh random
inputs (outputs poisoned first) before timing it; a failure is recorded with
its error and the suite goes on.  A suite writes its results to a JSON file
after every measurement, so a crash (a sticky CUDA error, a hang killed by
the parent) keeps what was measured before it.

To add a row for a feature another branch brings (bulk copy, TMA):
write a suite function here that calls ``m.measure(key, ...)`` with the key
that ``report.PENDING`` lists for it, add it to ``SUITES``, and remove the key
from ``report.PENDING``.
"""

from __future__ import annotations

import json
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from . import suites_async as _async
from . import suites_fp8 as _fp8
from . import suites_conv as _conv
from . import suites_mma as _mma
from . import suites_tc as _tc
from .copyrows import _torch

SIZES = {
    "full": {"copy_words": 1 << 28, "sgemm": (4096, 8192), "stencil": (16384, 16384)},
    "quick": {"copy_words": (1 << 24) + 4100, "sgemm": (1024,), "stencil": (2000, 2048)},
}
STENCIL_AB = (0.5, 0.125)


@dataclass
class Measurement:
    key: str
    label: str
    impl: str                  # numba | cuda-c++ | torch | cublas
    unit: str                  # TB/s or TFLOP/s
    work: float = 0.0          # bytes moved or FLOPs per call
    status: str = "ok"         # ok | error: ... | skipped: ... | not yet run: ...
    ms: float | None = None    # median time per call
    ms_min: float | None = None
    ms_max: float | None = None
    reps: int = 0
    figure: float | None = None  # TB/s or TFLOP/s at the median
    config: dict = field(default_factory=dict)
    check: str = ""


class Recorder:
    def __init__(self, out: Path, quick: bool, deadline: float, twins_path: str | None):
        self.out = out
        self.quick = quick
        self.deadline = deadline
        self.results: dict[str, Measurement] = {}
        self.info: dict = {}
        self.sizes = SIZES["quick" if quick else "full"]
        self.reps = 5 if quick else 25
        self.warmup = 1 if quick else 3
        self._twins_path = twins_path
        self._twins = None

    def twins(self):
        from .twins import TwinError, Twins

        if self._twins is None:
            if not self._twins_path:
                raise TwinError("twins library not built (see twins-build.log)")
            self._twins = Twins(Path(self._twins_path))
        return self._twins

    def dump_code(self, name: str, kernel) -> None:
        """PTX and SASS of a compiled Numba kernel under ``<out>/code/`` (for
        reading beside the twins' SASS when a target is missed)."""
        try:
            d = self.out.parent / "code"
            d.mkdir(exist_ok=True)
            (d / f"{name}.ptx").write_text("\n".join(kernel.inspect_asm().values()))
            (d / f"{name}.sass").write_text("\n".join(kernel.inspect_sass().values()))
        except Exception as e:  # diagnostics only
            with open(self.out.with_suffix(".log"), "a") as log:
                log.write(f"--- code dump {name}: {type(e).__name__}: {e}\n")

    def save(self) -> None:
        data = {"info": self.info, "measurements": [asdict(m) for m in self.results.values()]}
        tmp = self.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.out)

    def measure(self, key: str, label: str, impl: str, unit: str, work: float,
                run: Callable[[], None], check: Callable[[], str], *, config: dict | None = None,
                reps: int | None = None) -> Measurement:
        """Check, then time ``run``; record the result (never raises)."""
        m = Measurement(key, label, impl, unit, work, config=dict(config or {}))
        self.results[key] = m
        try:
            if time.monotonic() > self.deadline:
                m.status = "skipped: time budget spent"
                return m
            m.check = check()
            times = _bench(run, reps=reps or self.reps, warmup=self.warmup)
            m.reps = len(times)
            m.ms = float(np.median(times))
            m.ms_min, m.ms_max = float(np.min(times)), float(np.max(times))
            scale = 1e12
            m.figure = work / (m.ms * 1e-3) / scale
        except Exception as e:  # a failing row reports its error; the rest go on
            m.status = "error: " + f"{type(e).__name__}: {e}".strip().splitlines()[0][:300]
            with open(self.out.with_suffix(".log"), "a") as log:
                log.write(f"--- {key}\n{traceback.format_exc()}\n")
        finally:
            self.save()
            print(f"  {key:34s} {m.status if m.status != 'ok' else f'{m.figure:8.3f} {unit}  ({m.ms:.4f} ms)'}",
                  flush=True)
        return m

    def record_times(self, key: str, label: str, impl: str, unit: str, work: float,
                     times: list[float], *, check: str, config: dict | None = None) -> Measurement:
        """Record per-call times (ms) measured elsewhere (another process)."""
        m = Measurement(key, label, impl, unit, work, config=dict(config or {}), check=check)
        m.reps = len(times)
        m.ms = float(np.median(times))
        m.ms_min, m.ms_max = float(np.min(times)), float(np.max(times))
        m.figure = work / (m.ms * 1e-3) / 1e12
        self.results[key] = m
        self.save()
        print(f"  {key:34s} {m.figure:8.3f} {unit}  ({m.ms:.4f} ms)", flush=True)
        return m

    def measure_pair(self, a: tuple, b: tuple, *, rounds: int = 3) -> tuple[Measurement, Measurement]:
        """Check both, then time two rows in alternation (``a`` and ``b`` are
        ``(key, label, impl, unit, work, run, check, config)``): ``rounds``
        rounds of ``reps`` batches, one batch of each in turn
        (``devutil.bench_alternating``).  Each row's ``config["round_ms"]``
        keeps its median per round, so the report can give the spread of the
        ratio over the rounds.  A failing check fails its row; the other is
        then timed alone."""
        first, second = self.measure_group([a, b], rounds=rounds)
        return first, second

    def measure_group(self, entries: list[tuple], *, rounds: int = 3,
                      shuffle: bool = False) -> list[Measurement]:
        """:meth:`measure_pair` for any number of rows: each checked, then
        all timed in alternation; a row whose check fails is left out of
        the timing (its error recorded).  ``shuffle``: each turn takes the rows
        in a new order (``devutil.bench_alternating``)."""
        from .devutil import bench_alternating

        ms = []
        for key, label, impl, unit, work, run, check, config in entries:
            m = Measurement(key, label, impl, unit, work, config=dict(config or {}))
            self.results[key] = m
            try:
                if time.monotonic() > self.deadline:
                    m.status = "skipped: time budget spent"
                else:
                    m.check = check()
            except Exception as e:
                m.status = "error: " + f"{type(e).__name__}: {e}".strip().splitlines()[0][:300]
                with open(self.out.with_suffix(".log"), "a") as log:
                    log.write(f"--- {key}\n{traceback.format_exc()}\n")
            ms.append((m, run))
        live = [(m, run) for m, run in ms if m.status == "ok"]
        try:
            if live:
                kw = {"shuffle": True} if shuffle else {}
                per_round = bench_alternating([run for _, run in live], reps=self.reps,
                                              warmup=self.warmup, rounds=rounds, **kw)
                for i, (m, _) in enumerate(live):
                    times = [t for rnd in per_round for t in rnd[i]]
                    m.reps = len(times)
                    m.ms = float(np.median(times))
                    m.ms_min, m.ms_max = float(np.min(times)), float(np.max(times))
                    m.figure = m.work / (m.ms * 1e-3) / 1e12
                    m.config["round_ms"] = [float(np.median(rnd[i])) for rnd in per_round]
        except Exception as e:
            for m, _ in live:
                m.status = "error: " + f"{type(e).__name__}: {e}".strip().splitlines()[0][:300]
        finally:
            self.save()
            for m, _ in ms:
                print(f"  {m.key:34s} "
                      f"{m.status if m.status != 'ok' else f'{m.figure:8.3f} {m.unit}  ({m.ms:.4f} ms)'}",
                      flush=True)
        return [m for m, _ in ms]

    def record_value(self, key: str, label: str, impl: str, unit: str, value: float, *,
                     check: str = "", config: dict | None = None) -> Measurement:
        """Record a figure that is not a rate (an error, seconds): ``figure``
        and ``ms`` both hold ``value``, so a ``lower`` comparison divides the
        values."""
        m = Measurement(key, label, impl, unit, 0.0, config=dict(config or {}), check=check)
        m.ms = m.ms_min = m.ms_max = m.figure = float(value)
        m.reps = 1
        self.results[key] = m
        self.save()
        print(f"  {key:34s} {value:.4g} {unit}", flush=True)
        return m

    def fail(self, key: str, label: str, impl: str, unit: str, error: str) -> None:
        self.results[key] = Measurement(key, label, impl, unit, status=error)
        self.save()


def _bench(run, *, reps, warmup):
    from .devutil import bench

    return bench(run, reps=reps, warmup=warmup)


# --- copy ---------------------------------------------------------------------

def suite_copy(r: Recorder) -> None:
    from numba import cuda

    from ..examples import staged_copy as sc
    from . import copyrows
    from . import devutil as du
    from .twins import ptr

    n = r.sizes["copy_words"]
    nbytes = 2 * n * 4  # read + written
    src = cuda.device_array(n, np.uint32)
    dst = cuda.device_array(n, np.uint32)
    du.fill_random(src)
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    r.info["copy_bytes"] = n * 4
    check = copyrows.copy_check(src, dst)
    copyrows.torch_row(r, "torch_copy", "torch device-to-device copy", src, dst, nbytes, check)

    def entry(stages, chunk, block, pt, run=0):
        key = f"staged_copy_sweep_s{stages}_b{block}_p{pt}" + (f"_r{run}" if run else "")
        grid = (sc.grid_for_runs(n, chunk, block, pt, run) if run
                else sc.grid_for(stages, chunk, block, pt, sms))

        def make_launch():
            kern = cuda.jit(sc.SIGNATURE)(sc.make_staged_copy(stages, chunk, block, pt, run))
            r.dump_code(key, kern)
            return lambda: kern[grid, block](src, dst)
        config = {"stages": stages, "chunk_bytes": chunk, "block": block, "per_thread": pt,
                  "run": run, "grid": grid}
        cfg = (stages, chunk, block, pt) + ((run,) if run else ())
        return key, f"staged copy sweep {cfg}", config, make_launch

    def twin(c):
        tw = r.twins()
        return lambda: tw.staged_copy(ptr(src), ptr(dst), n, c["stages"], c["block"],
                                      c["per_thread"], c["grid"], c["run"])

    def manual(c):
        from ..examples import staged_copy_manual as scm

        kern = cuda.jit(sc.SIGNATURE)(scm.make_staged_copy(c["stages"], c["chunk_bytes"], c["block"],
                                                           c["per_thread"], c["run"]))
        return lambda: kern[c["grid"], c["block"]](src, dst)

    copyrows.fastest_then_twin(
        r, ("numba_staged_copy", "twin_staged_copy"), ("staged cp.async copy", "staged copy, CUDA C++"),
        [entry(*cfg) for cfg in tuple(sc.SWEEP) + tuple(sc.RUN_SWEEP)], nbytes, check, twin,
        ("numba_staged_copy_manual", "staged cp.async copy, ring written by hand", manual))


# --- SGEMM ----------------------------------------------------------------------

def suite_sgemm(r: Recorder) -> None:
    from numba import cuda

    from ..examples import sgemm as sg
    from . import devutil as du
    from .twins import ptr

    rng = np.random.default_rng()
    for n in r.sizes["sgemm"]:
        M = N = K = n
        sg.check_shape(M, N, K)
        AT = cuda.device_array((K, M), np.float32)
        B = cuda.device_array((K, N), np.float32)
        C = cuda.device_array((M, N), np.float32)
        du.fill_random(AT)
        du.fill_random(B)
        work = sg.flops(M, N, K)
        # the whole of C against a float64 product on the device (torch's
        # DGEMM): every element, relative error per element and in norm
        torch = _torch()
        tAT, tB = torch.as_tensor(AT, device="cuda"), torch.as_tensor(B, device="cuda")
        ref64 = tAT.double().T @ tB.double()
        ref_norm = float(torch.linalg.norm(ref64))
        scale = float(ref64.abs().max())

        def check_gemm(launch) -> Callable[[], str]:
            def check():
                du.launch_poisoned(launch, C, "elements of C")
                diff = torch.as_tensor(C, device="cuda").double() - ref64
                err = float(torch.linalg.norm(diff)) / ref_norm
                worst = float(diff.abs().max()) / scale
                if not (err < 1e-4 and worst < 1e-3):
                    raise AssertionError(f"whole C: relative error {err:.2e} (limit 1e-4), worst element "
                                         f"{worst:.2e} of max |C| (limit 1e-3)")
                return (f"all {M * N} elements of C: rel. error {err:.1e}, worst {worst:.1e} of max |C| "
                        "(float64 product on the device)")
            return check

        try:
            torch = _torch()
            tA = torch.as_tensor(AT, device="cuda").t()
            tB = torch.as_tensor(B, device="cuda")
            tC = torch.as_tensor(C, device="cuda")
            cublas = lambda: torch.matmul(tA, tB, out=tC)  # noqa: E731
            r.measure(f"cublas_sgemm_{n}", f"cuBLAS SGEMM {n}^3 (torch.matmul, TF32 off)", "cublas",
                      "TFLOP/s", work, cublas, check_gemm(cublas), config={"M": M, "N": N, "K": K})
        except Exception as e:
            r.fail(f"cublas_sgemm_{n}", f"cuBLAS SGEMM {n}^3", "cublas", "TFLOP/s",
                   f"error: {type(e).__name__}: {e}")

        g = sg.grid(M, N)
        best = None
        for stages in (1, 3, 4):
            name = "sync" if stages == 1 else f"pipe{stages}"
            key = f"numba_sgemm_{name}_{n}"
            label = f"SGEMM {n}^3, " + ("synchronous loads" if stages == 1 else f"cp.async {stages} stages")
            try:
                kern = cuda.jit(sg.SIGNATURE)(sg.make_sgemm(stages))
                if n == r.sizes["sgemm"][0]:
                    r.dump_code(f"sgemm_{name}", kern)
                launch = (lambda k=kern: k[g, sg.BLOCK](AT, B, C))
                m = r.measure(key, label, "numba", "TFLOP/s", work, launch, check_gemm(launch),
                              config={"stages": stages, "M": M, "N": N, "K": K},
                              reps=5 if r.quick else 10)
                if stages > 1 and m.status == "ok" and (best is None or m.ms < best.ms):
                    best = m
            except Exception as e:
                r.fail(key, label, "numba", "TFLOP/s", f"error: {type(e).__name__}: {e}")
        # the row "SGEMM pipelined" is the better of the stage counts
        if best is not None:
            pm = Measurement(**{**asdict(best), "key": f"numba_sgemm_pipe_{n}",
                                "label": f"SGEMM {n}^3, cp.async pipeline (best stages)"})
            r.results[pm.key] = pm
            r.save()
            pipe_stages = best.config["stages"]
        else:
            r.fail(f"numba_sgemm_pipe_{n}", f"SGEMM {n}^3 pipelined", "numba", "TFLOP/s",
                   "error: no pipelined variant ran")
            pipe_stages = 3
        # the same stage count with the ring written by hand (examples/sgemm_manual),
        # then the pipelined kernel again: the row "pipeline vs hand-written"
        # compares the two back to back
        from ..examples import sgemm_manual as sgm

        for key, label, make in (
                (f"numba_sgemm_manual_{n}", f"SGEMM {n}^3, cp.async {pipe_stages} stages, ring by hand",
                 sgm.make_sgemm),
                (f"numba_sgemm_pipe_again_{n}", f"SGEMM {n}^3, cp.async {pipe_stages} stages (ac.pipeline), "
                 "beside the ring by hand", sg.make_sgemm)):
            try:
                kern = cuda.jit(sg.SIGNATURE)(make(pipe_stages))
                launch = (lambda k=kern: k[g, sg.BLOCK](AT, B, C))
                r.measure(key, label, "numba", "TFLOP/s", work, launch, check_gemm(launch),
                          config={"stages": pipe_stages, "M": M, "N": N, "K": K}, reps=5 if r.quick else 10)
            except Exception as e:
                r.fail(key, label, "numba", "TFLOP/s", f"error: {type(e).__name__}: {e}")
        for stages, name in ((1, "sync"), (pipe_stages, "pipe")):
            key = f"twin_sgemm_{name}_{n}"
            label = f"SGEMM {n}^3 CUDA C++, " + ("synchronous" if stages == 1 else f"{stages} stages")
            try:
                tw = r.twins()
                launch = (lambda s=stages: tw.sgemm(ptr(AT), ptr(B), ptr(C), M, N, K, s))
                r.measure(key, label, "cuda-c++", "TFLOP/s", work, launch, check_gemm(launch),
                          config={"stages": stages, "M": M, "N": N, "K": K}, reps=5 if r.quick else 10)
            except Exception as e:
                r.fail(key, label, "cuda-c++", "TFLOP/s", f"error: {type(e).__name__}: {e}")
        del AT, B, C


# --- stencil ----------------------------------------------------------------------

def suite_stencil(r: Recorder) -> None:
    from numba import cuda

    from ..examples import stencil as st
    from . import devutil as du
    from .twins import ptr

    H, W = r.sizes["stencil"]
    st.check_shape(H, W)
    a, b = STENCIL_AB
    u = cuda.device_array((H, W), np.float32)
    out = cuda.device_array((H, W), np.float32)
    du.fill_random(u)
    work = 2 * H * W * 4
    r.info["stencil_shape"] = [H, W]
    # the whole output against a float64 stencil on the device (torch):
    # interior a*u + b*(four neighbours), the border copied
    torch = _torch()
    tu = torch.as_tensor(u, device="cuda").double()
    ref = tu.clone()
    ref[1:-1, 1:-1] = a * tu[1:-1, 1:-1] + b * (tu[:-2, 1:-1] + tu[2:, 1:-1] + tu[1:-1, :-2] + tu[1:-1, 2:])
    del tu

    def check_stencil(launch) -> Callable[[], str]:
        def check():
            du.launch_poisoned(launch, out, "points of out")
            worst = float((torch.as_tensor(out, device="cuda").double() - ref).abs().max())
            if not worst < 1e-5:
                raise AssertionError(f"whole output: max abs error {worst:.2e} (limit 1e-5)")
            return f"all {H * W} points: max abs error {worst:.1e} (float64 stencil on the device)"
        return check

    fa32, fb32 = np.float32(a), np.float32(b)
    kernels = {
        "async": (st.stencil_async, st.grid_async(H, W), st.BLOCK_ASYNC, "cp.async halo tiles"),
        "plain": (st.stencil_plain, st.grid_plain(H, W), st.BLOCK_PLAIN, "plain Numba"),
    }
    for name, (fn, grid, block, what) in kernels.items():
        key = f"numba_stencil_{name}"
        try:
            kern = cuda.jit(st.SIGNATURE)(fn)
            r.dump_code(key, kern)
            launch = (lambda k=kern, g=grid, bl=block: k[g, bl](u, out, fa32, fb32))
            r.measure(key, f"5-point stencil, {what}", "numba", "TB/s", work, launch,
                      check_stencil(launch), config={"H": H, "W": W})
        except Exception as e:
            r.fail(key, f"5-point stencil, {what}", "numba", "TB/s", f"error: {type(e).__name__}: {e}")
    # plain_norestrict: the plain twin without const __restrict__, i.e. without
    # the read-only (LDG.CONSTANT) loads that Numba cannot ask for
    for name in ("async", "plain", "plain_norestrict"):
        key = f"twin_stencil_{name}"
        try:
            tw = r.twins()
            f = getattr(tw, f"stencil_{name}")
            launch = (lambda f=f: f(ptr(u), ptr(out), H, W, a, b))
            r.measure(key, f"5-point stencil CUDA C++, {name.replace('_', ' ')}", "cuda-c++", "TB/s", work, launch,
                      check_stencil(launch), config={"H": H, "W": W})
        except Exception as e:
            r.fail(key, f"5-point stencil CUDA C++, {name}", "cuda-c++", "TB/s",
                   f"error: {type(e).__name__}: {e}")


# --- clusters ----------------------------------------------------------------------

CLUSTER_ROUNDS = {"full": 64, "quick": 8}
CLUSTER_BLOCKS_PER_SM = 4


def suite_cluster(r: Recorder) -> None:
    """The neighbour exchange through DSMEM and through global memory (same
    rounds, same bytes), its CUDA C++ twin, and the host cost of a launch:
    Numba's own, ``ac.launch`` plain and with a cluster shape, and
    ``torch.add`` of the same size as the reference."""
    from numba import cuda

    import numba_asynccopy as ac

    from ..examples import exchange as ex
    from . import devutil as du
    from .twins import ptr

    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    blocks = sms * CLUSTER_BLOCKS_PER_SM  # a whole number of 2-CTA clusters
    rounds = CLUSTER_ROUNDS["quick" if r.quick else "full"]
    A = cuda.device_array((blocks, ex.TILE), np.float32)
    out = cuda.device_array((blocks, ex.TILE), np.float32)
    scratch = cuda.device_array((2, blocks, ex.TILE), np.float32)
    du.fill_random(A)
    want = cuda.to_device(ex.expected(A.copy_to_host(), rounds))
    work = ex.work_bytes(blocks, rounds)
    config = {"blocks": blocks, "cluster": ex.CLUSTER, "rounds": rounds,
              "tile_bytes": ex.TILE_BYTES, "block": ex.BLOCK}
    r.info["cluster_exchange"] = config

    def check_exchange(launch) -> Callable[[], str]:
        return du.exact_check(launch, out, want,
                              f"{blocks * ex.TILE} words (against the ring shift by {rounds})",
                              f"every tile equals the one {rounds} ranks back in its cluster")

    rr = np.int32(rounds)
    variants = {
        "numba_cluster_dsmem": ("cluster neighbour exchange via DSMEM", ex.exchange_dsmem,
                                ex.DSMEM_SIGNATURE, lambda k: (A, out, rr)),
        "numba_cluster_global": ("cluster neighbour exchange via global memory", ex.exchange_global,
                                 ex.GLOBAL_SIGNATURE, lambda k: (A, out, scratch, rr)),
    }
    for key, (label, fn, sig, args) in variants.items():
        try:
            kern = cuda.jit(sig)(fn)
            r.dump_code(key, kern)
            launch = (lambda k=kern, a=args(None): ac.launch(k, blocks, ex.BLOCK, a, cluster=ex.CLUSTER))
            r.measure(key, label, "numba", "TB/s", work, launch, check_exchange(launch), config=config)
        except Exception as e:
            r.fail(key, label, "numba", "TB/s", f"error: {type(e).__name__}: {e}")
    # the DSMEM ceiling: the same copies with no round-to-round dependency
    try:
        from . import ceilings

        if rounds % ceilings.NBARS:
            raise ValueError(f"rounds={rounds} is not a multiple of {ceilings.NBARS}")
        shifted = cuda.to_device(ex.expected(A.copy_to_host(), 1))
        kc = cuda.jit(ceilings.DSMEM_CEILING_SIGNATURE)(ceilings.dsmem_ceiling)
        ceil = lambda: ac.launch(kc, blocks, ex.BLOCK, (A, out, rr), cluster=ex.CLUSTER)  # noqa: E731

        check_ceiling = du.exact_check(ceil, out, shifted,
                                       f"{blocks * ex.TILE} words (against the ring shift by 1)",
                                       "every tile equals the previous rank's (all copies landed)")
        r.measure("dsmem_ceiling", "DSMEM bulk copies, no round dependency", "numba", "TB/s", work,
                  ceil, check_ceiling, config=config)
        del shifted
    except Exception as e:
        r.fail("dsmem_ceiling", "DSMEM bulk copies, no round dependency", "numba", "TB/s",
               f"error: {type(e).__name__}: {e}")
    try:
        tw = r.twins()
        twin = lambda: tw.exchange_dsmem(ptr(A), ptr(out), blocks, rounds, ex.CLUSTER)  # noqa: E731
        r.measure("twin_cluster_dsmem", "cluster exchange via DSMEM, CUDA C++", "cuda-c++", "TB/s",
                  work, twin, check_exchange(twin), config=config)
    except Exception as e:
        r.fail("twin_cluster_dsmem", "cluster exchange via DSMEM, CUDA C++", "cuda-c++", "TB/s",
               f"error: {type(e).__name__}: {e}")
    del A, out, scratch, want

    # launch cost: a 3-argument kernel, host-bound batches of launches, and
    # torch.add of the same size as the reference (all in this run)
    record_launch_rows(r, blocks, ex.CLUSTER)


def record_launch_rows(r: Recorder, blocks: int, cluster: int) -> None:
    """The launch rows of the cluster suite: a 3-argument kernel's launches
    (Numba's own, ``ac.launch`` plain and with a cluster shape, the bare
    cuda.core launcher, ``torch.add`` of the same size as the reference),
    checked, then timed in alternation (a new order each turn, three
    rounds); then Numba's own launch in fresh processes with and without the
    package."""
    from .launchprof import PROCESS_ROWS, launch_rows, stock_vs_imported

    keys = ("numba_launch_plain", "ac_launch_plain", "numba_launch_cluster", "torch_launch_add",
            "core_launch_bare", "numba_launch_unhooked", *PROCESS_ROWS)
    try:
        rows, check_sum = launch_rows(blocks)
        lconf = {"blocks": blocks, "block": 128, "elements": blocks * 128, "cluster": cluster}
        if "torch_launch_add" not in rows:
            r.fail("torch_launch_add", "torch.add", "torch", "ms", "error: torch with CUDA not available")
        # timed in alternation, in a new order each turn: a row timed right
        # after a slower one (Numba's own launch) no longer pays for it
        group = []
        for key, (label, launch) in rows.items():
            impl = key.split("_")[0] if key.startswith(("torch", "core")) else "numba"
            if launch is None:
                r.fail(key, key, impl, "ms", f"error: {label}")
                continue
            group.append((key, label, impl, "ms", 0.0, launch, lambda k=key: check_sum(k), lconf))
        r.measure_group(group, shuffle=True)
        # the same plain launch in fresh processes, with and without the package
        each: list[dict] = []
        procs = stock_vs_imported(blocks, r.reps, processes=each)
        for key, (label, imported) in PROCESS_ROWS.items():
            mine = [p for p in each if p["key"] == key]
            r.record_times(key, label, "numba", "ms", 0.0, procs[key],
                           check=f"vadd's sums checked in each of {len(mine)} processes; imported="
                                 f"{imported}, _Kernel.launch hooked={imported}",
                           config={**lconf, "processes": len(mine),
                                   "cpu": sorted({p["cpu"] for p in mine if p["cpu"] is not None}),
                                   "process_median_ms": [p["median_ms"] for p in mine],
                                   "process_host_ms": [p["host_median_ms"] for p in mine]})
    except Exception as e:
        for key in keys:
            if key not in r.results:
                r.fail(key, key, "numba", "ms", f"error: {type(e).__name__}: {e}")


def suite_idioms(r: Recorder) -> None:
    """The idioms suite (bench/idioms.py): ports as users write them beside
    their CUDA C++ originals (twins_idioms.cu)."""
    from .idioms import suite_idioms as run

    run(r)


def sm_clocks() -> dict:
    """The GPU's clocks now (MHz; nvidia-smi: SM, its maximum, memory, and
    why it is throttled), recorded with every suite: a table whose SM clock
    differs between runs is not comparable row for row."""
    import subprocess

    fields = ("clocks.sm", "clocks.max.sm", "clocks.mem", "clocks_throttle_reasons.active")
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits",
                              "-i", "0"], capture_output=True, text=True, timeout=20).stdout.strip()
        return dict(zip(("sm_mhz", "max_sm_mhz", "mem_mhz", "throttle"), (v.strip() for v in out.split(","))))
    except Exception as e:  # recorded, not fatal
        return {"error": f"{type(e).__name__}: {e}"}


def device_info() -> dict:
    from numba import cuda

    import numba_asynccopy

    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    info = {"device": name, "cc": list(dev.compute_capability), "sms": dev.MULTIPROCESSOR_COUNT,
            "numba_asynccopy": numba_asynccopy.__version__}
    info["clocks"] = sm_clocks()
    try:
        import numba_cuda

        info["numba_cuda"] = getattr(numba_cuda, "__version__", "?")
    except Exception:
        pass
    try:
        import torch

        info["torch"] = torch.__version__
    except Exception:
        info["torch"] = "not available"
    return info


SUITES: dict[str, Callable[[Recorder], None]] = {
    "copy": suite_copy,
    "sgemm": suite_sgemm,
    "stencil": suite_stencil,
    "cluster": suite_cluster,
    **_async.SUITES,  # bulk, tma (suites_async.py)
    **_mma.SUITES,  # hgemm_sm80 (suites_mma.py)
    "idioms": suite_idioms,
    "hgemm": _tc.suite_hgemm,  # tensor cores (suites_tc.py)
    **_fp8.SUITES,  # fp8 GEMM vs torch._scaled_mm (suites_fp8.py)
    **_conv.SUITES,  # conv2d (suites_conv.py)
}

def suite_keys(name: str, quick: bool) -> list[str]:
    """The measurement keys a suite records (to report a suite that died early)."""
    sizes = SIZES["quick" if quick else "full"]
    if name in _mma.SUITES:
        return _mma.suite_keys(quick)
    if name in _async.SUITE_KEYS:
        return list(_async.SUITE_KEYS[name])
    if name == "hgemm":
        return _tc.suite_keys(quick)
    if name in _fp8.SUITES:
        return _fp8.suite_keys(quick)
    if name in _conv.SUITES:
        return _conv.suite_keys(quick)
    if name == "idioms":
        from .idioms import SUITE_KEYS as idiom_keys

        return list(idiom_keys)
    if name == "copy":
        return ["torch_copy", "numba_staged_copy", "numba_staged_copy_manual", "twin_staged_copy"]
    if name == "sgemm":
        return [f"{p}_{n}" for n in sizes["sgemm"] for p in (
            "cublas_sgemm", "numba_sgemm_sync", "numba_sgemm_pipe", "numba_sgemm_manual",
            "numba_sgemm_pipe_again", "twin_sgemm_sync", "twin_sgemm_pipe")]
    if name == "stencil":
        return ["numba_stencil_async", "numba_stencil_plain", "twin_stencil_async",
                "twin_stencil_plain", "twin_stencil_plain_norestrict"]
    if name == "cluster":
        return ["numba_cluster_dsmem", "numba_cluster_global", "dsmem_ceiling", "twin_cluster_dsmem",
                "numba_launch_plain", "ac_launch_plain", "numba_launch_cluster", "torch_launch_add",
                "core_launch_bare", "numba_launch_unhooked", "numba_launch_stock",
                "numba_launch_imported"]
    return []


def run_suite(name: str, out: Path, quick: bool, budget_s: float, twins_path: str | None) -> int:
    """Child-process entry: run one suite, write ``out`` (JSON)."""
    r = Recorder(out, quick, time.monotonic() + budget_s, twins_path)
    try:
        r.info = device_info()
        print(f"[{name}] on {r.info['device']}", flush=True)
        SUITES[name](r)
    except Exception as e:
        r.info["suite_error"] = f"{type(e).__name__}: {e}".splitlines()[0]
        with open(out.with_suffix(".log"), "a") as log:
            log.write(f"--- suite {name}\n{traceback.format_exc()}\n")
        print(f"[{name}] suite error: {r.info['suite_error']}", flush=True)
    r.save()
    return 0
