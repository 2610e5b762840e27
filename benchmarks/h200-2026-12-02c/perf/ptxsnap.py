"""PTX of the example kernels, the seeds, the idiom ports and the ring
rewrites into a folder (one file a kernel), for sasscmp.py:

    python benchmarks/h200-2026-12-02c/perf/ptxsnap.py OUT
"""
import sys, os, hashlib
from numba import cuda, types
from numba_asynccopy.examples import staged_copy as sc, staged_copy_manual as scm, sgemm as sg, sgemm_manual as sgm
from numba_asynccopy.examples import stencil as st, hgemm_sm80 as hs, seeds
from numba_asynccopy.bench import idioms as idi, ab_facts
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
jobs = {}
for cfg in [(4,16,256,2),(2,16,128,1),(3,16,256,4),(4,8,256,2),(4,4,256,2)]:
    jobs[f"copy{cfg}"] = (sc.make_staged_copy(*cfg), sc.SIGNATURE)
    jobs[f"copy_manual{cfg}"] = (scm.make_staged_copy(*cfg), sc.SIGNATURE)
for s in (2,3,4):
    jobs[f"sgemm{s}"] = (sg.make_sgemm(s), sg.SIGNATURE)
    jobs[f"sgemm_manual{s}"] = (sgm.make_sgemm(s), sg.SIGNATURE)
jobs["stencil_async"] = (st.stencil_async, st.SIGNATURE)
jobs["stencil_plain"] = (st.stencil_plain, st.SIGNATURE)
for d in ("bf16","f16"):
    k = hs.make_hgemm(d)
    jobs[f"hgemm_sm80_{d}"] = (k, hs.signature(d))
for name, v in seeds.SEEDS.items():
    jobs[f"seed_{name}"] = (v[0], v[1]) if isinstance(v, tuple) else (v, None)
for name, v in idi.PORTS.items():
    jobs[f"idiom_{name}"] = v[:2]
for name, (fn, _) in ab_facts.VARIANTS.items():
    jobs[f"ab_{name}"] = (fn, idi.SIGNATURE)
for name, (fn, sig) in jobs.items():
    try:
        ptx = cuda.compile_ptx(fn, sig, cc=(9, 0))[0]
    except Exception as e:
        ptx = f"ERROR {type(e).__name__}: {e}"
    open(f"{out}/{name}.ptx", "w").write(ptx)
    print(name, hashlib.md5(ptx.encode()).hexdigest()[:10], flush=True)
