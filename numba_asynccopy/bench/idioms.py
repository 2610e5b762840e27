"""The "idioms" kernels: async-copy code ported the way a user ports it.

Each kernel is a straight port of a CUDA C++ original in ``twins_idioms.cu``
(same block size, tile, stages and sizes), written from the README the way
a user writes Python: plain ``int`` loop counters, ``range`` loops, slices
``X[row, 4*q:4*q+4]`` to name a 16-byte chunk, ``stages - 1`` as the wait
depth.  Nothing here is tuned; where such code ran slower than nvcc the cause
was removed in the intrinsics' lowering (``bench/NOTES.md``), and
``tests/cpu/test_idioms_sass.py`` holds the SASS counts.

Every kernel computes ``Y = a * X + b`` over ``X, Y: float32[rows, 128]``
(``rows`` a multiple of 8): a block walks tiles of 8 rows x 128 floats
(4 KiB, one 16-byte chunk per thread of a 256-thread block) with a grid
stride.  The figure is bytes read + written per second.

- ``single``: one stage; ``cp_async`` of the thread's chunk into a
  ``(8, 32, 4)`` tile (a whole-axis view), ``commit_group``,
  ``wait_group(0)``, ``syncthreads``.
- ``slice``: the same with the chunk named by the README's slice idiom on
  both sides, ``sh[r, 4*q:4*q+4]``, over an ``(8, 128)`` tile.
- ``pipeline``: ``STAGES`` tiles in a ring: a prefetch loop issues
  ``STAGES - 1`` tiles, the main loop issues tile ``i + STAGES - 1`` and
  waits with ``wait_group(STAGES - 1)`` (the CUDA programming guide's
  ``__pipeline_wait_prior`` loop).
- ``runtime_depth``: the same with the stage count a kernel argument
  (``wait_group(stages - 1)`` a run-time depth; the ring sized for 4).
- ``mbarrier``: a producer/consumer pipeline on two rings of mbarriers
  (``cuda::pipeline`` with a shared state and producer/consumer roles):
  warps 0-3 copy (``cp_async`` + ``cp_async_mbarrier_arrive(noinc)`` on
  ``full``), warps 4-7 compute and release the slot (``mbarrier_arrive`` on
  ``empty``).
- ``vector``: no staging: ``float4`` loads and stores through
  ``ac.load4`` / ``ac.store4``.
- ``bulk``: each thread's 16 bytes as a 1-D bulk copy completing on an
  mbarrier (what ``cuda::memcpy_async(..., cuda::aligned_size_t<16>(16),
  bar)`` on a ``cuda::barrier`` compiles to on sm_90).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import cuda, types

import numba_asynccopy as ac

BLOCK = 256
TILE_ROWS = 8
COLS = 128
STAGES = 4

SIGNATURE = (types.float32[:, ::1], types.float32[:, ::1], types.float32, types.float32)
SIGNATURE_DEPTH = SIGNATURE + (types.int32,)


def idiom_single(X, Y, a, b):
    sh = cuda.shared.array((8, 32, 4), np.float32, alignment=16)
    tid = cuda.threadIdx.x
    r = tid // 32
    q = tid % 32
    ntiles = X.shape[0] // 8
    for t in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
        row = t * 8 + r
        ac.cp_async(sh[r, q, :], X[row, 4 * q:4 * q + 4], 16)
        ac.commit_group()
        ac.wait_group(0)
        cuda.syncthreads()
        for j in range(4):
            Y[row, 4 * q + j] = a * sh[r, q, j] + b
        cuda.syncthreads()


def idiom_slice(X, Y, a, b):
    sh = cuda.shared.array((8, 128), np.float32, alignment=16)
    tid = cuda.threadIdx.x
    r = tid // 32
    q = tid % 32
    ntiles = X.shape[0] // 8
    for t in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
        row = t * 8 + r
        ac.cp_async(sh[r, 4 * q:4 * q + 4], X[row, 4 * q:4 * q + 4], 16)
        ac.commit_group()
        ac.wait_group(0)
        cuda.syncthreads()
        for j in range(4):
            Y[row, 4 * q + j] = a * sh[r, 4 * q + j] + b
        cuda.syncthreads()


def idiom_pipeline(X, Y, a, b):
    sh = cuda.shared.array((STAGES, 8, 128), np.float32, alignment=16)
    tid = cuda.threadIdx.x
    r = tid // 32
    q = tid % 32
    ntiles = X.shape[0] // 8
    first = cuda.blockIdx.x
    step = cuda.gridDim.x
    count = (ntiles - first + step - 1) // step   # this block's tiles
    for s in range(STAGES - 1):                    # prefetch
        if s < count:
            row = (first + s * step) * 8 + r
            ac.cp_async(sh[s, r, 4 * q:4 * q + 4], X[row, 4 * q:4 * q + 4], 16)
        ac.commit_group()
    for i in range(count):
        nxt = i + STAGES - 1
        if nxt < count:
            row = (first + nxt * step) * 8 + r
            ac.cp_async(sh[nxt % STAGES, r, 4 * q:4 * q + 4], X[row, 4 * q:4 * q + 4], 16)
        ac.commit_group()
        ac.wait_group(STAGES - 1)
        cuda.syncthreads()
        s = i % STAGES
        row = (first + i * step) * 8 + r
        for j in range(4):
            Y[row, 4 * q + j] = a * sh[s, r, 4 * q + j] + b
        cuda.syncthreads()


def idiom_runtime_depth(X, Y, a, b, stages):
    sh = cuda.shared.array((STAGES, 8, 128), np.float32, alignment=16)
    tid = cuda.threadIdx.x
    r = tid // 32
    q = tid % 32
    ntiles = X.shape[0] // 8
    first = cuda.blockIdx.x
    step = cuda.gridDim.x
    count = (ntiles - first + step - 1) // step
    for s in range(stages - 1):
        if s < count:
            row = (first + s * step) * 8 + r
            ac.cp_async(sh[s, r, 4 * q:4 * q + 4], X[row, 4 * q:4 * q + 4], 16)
        ac.commit_group()
    for i in range(count):
        nxt = i + stages - 1
        if nxt < count:
            row = (first + nxt * step) * 8 + r
            ac.cp_async(sh[nxt % stages, r, 4 * q:4 * q + 4], X[row, 4 * q:4 * q + 4], 16)
        ac.commit_group()
        ac.wait_group(stages - 1)
        cuda.syncthreads()
        s = i % stages
        row = (first + i * step) * 8 + r
        for j in range(4):
            Y[row, 4 * q + j] = a * sh[s, r, 4 * q + j] + b
        cuda.syncthreads()


def idiom_mbarrier(X, Y, a, b):
    sh = cuda.shared.array((STAGES, 8, 128), np.float32, alignment=16)
    full = cuda.shared.array(STAGES, np.uint64)
    empty = cuda.shared.array(STAGES, np.uint64)
    tid = cuda.threadIdx.x
    if tid < STAGES:
        ac.mbarrier_init(full[tid:], 128)
        ac.mbarrier_init(empty[tid:], 128)
    ac.fence_mbarrier_init()
    cuda.syncthreads()
    ntiles = X.shape[0] // 8
    first = cuda.blockIdx.x
    step = cuda.gridDim.x
    count = (ntiles - first + step - 1) // step
    if tid < 128:                       # producers: two chunks each
        for i in range(count):
            s = i % STAGES
            if i >= STAGES:
                ac.mbarrier_wait_parity(empty[s:], ((i // STAGES) - 1) % 2)
            for k in range(2):
                c = k * 128 + tid
                r = c // 32
                q = c % 32
                row = (first + i * step) * 8 + r
                ac.cp_async(sh[s, r, 4 * q:4 * q + 4], X[row, 4 * q:4 * q + 4], 16)
            ac.cp_async_mbarrier_arrive(full[s:], noinc=True)
    else:                               # consumers: two chunks each
        ct = tid - 128
        for i in range(count):
            s = i % STAGES
            ac.mbarrier_wait_parity(full[s:], (i // STAGES) % 2)
            for k in range(2):
                c = k * 128 + ct
                r = c // 32
                q = c % 32
                row = (first + i * step) * 8 + r
                for j in range(4):
                    Y[row, 4 * q + j] = a * sh[s, r, 4 * q + j] + b
            ac.mbarrier_arrive(empty[s:])


def idiom_vector(X, Y, a, b):
    tid = cuda.threadIdx.x
    r = tid // 32
    q = tid % 32
    ntiles = X.shape[0] // 8
    for t in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
        row = t * 8 + r
        x0, x1, x2, x3 = ac.load4(X, (row, 4 * q))
        ac.store4(Y, (row, 4 * q), (a * x0 + b, a * x1 + b, a * x2 + b, a * x3 + b))


def idiom_bulk(X, Y, a, b):
    sh = cuda.shared.array((8, 128), np.float32, alignment=16)
    bar = cuda.shared.array(1, np.uint64)
    tid = cuda.threadIdx.x
    r = tid // 32
    q = tid % 32
    if tid == 0:
        ac.mbarrier_init(bar[0:], 256)
    ac.fence_mbarrier_init()
    cuda.syncthreads()
    ntiles = X.shape[0] // 8
    phase = 0
    for t in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
        row = t * 8 + r
        ac.mbarrier_arrive_expect_tx(bar[0:], 16)
        ac.cp_async_bulk_g2s(sh[r, 4 * q:4 * q + 4], X[row, 4 * q:4 * q + 4], bar[0:])
        ac.mbarrier_wait_parity(bar[0:], phase)
        phase ^= 1
        for j in range(4):
            Y[row, 4 * q + j] = a * sh[r, 4 * q + j] + b
        cuda.syncthreads()


# --- the documented lever: the grid-stride loop written as CUDA C++ writes it --------
# Numba lowers ``range(start, stop, step)`` to a counted loop that NVVM unrolls
# four times (plus a remainder loop); a ``while`` loop has no trip count to
# unroll by, like nvcc's ``for (t = blockIdx.x; t < n; t += gridDim.x)``.


def idiom_single_while(X, Y, a, b):
    sh = cuda.shared.array((8, 32, 4), np.float32, alignment=16)
    tid = cuda.threadIdx.x
    r = tid // 32
    q = tid % 32
    ntiles = X.shape[0] // 8
    t = cuda.blockIdx.x
    while t < ntiles:
        row = t * 8 + r
        ac.cp_async(sh[r, q, :], X[row, 4 * q:4 * q + 4], 16)
        ac.commit_group()
        ac.wait_group(0)
        cuda.syncthreads()
        for j in range(4):
            Y[row, 4 * q + j] = a * sh[r, q, j] + b
        cuda.syncthreads()
        t += cuda.gridDim.x


def idiom_slice_while(X, Y, a, b):
    sh = cuda.shared.array((8, 128), np.float32, alignment=16)
    tid = cuda.threadIdx.x
    r = tid // 32
    q = tid % 32
    ntiles = X.shape[0] // 8
    t = cuda.blockIdx.x
    while t < ntiles:
        row = t * 8 + r
        ac.cp_async(sh[r, 4 * q:4 * q + 4], X[row, 4 * q:4 * q + 4], 16)
        ac.commit_group()
        ac.wait_group(0)
        cuda.syncthreads()
        for j in range(4):
            Y[row, 4 * q + j] = a * sh[r, 4 * q + j] + b
        cuda.syncthreads()
        t += cuda.gridDim.x


def idiom_vector_while(X, Y, a, b):
    tid = cuda.threadIdx.x
    r = tid // 32
    q = tid % 32
    ntiles = X.shape[0] // 8
    t = cuda.blockIdx.x
    while t < ntiles:
        row = t * 8 + r
        x0, x1, x2, x3 = ac.load4(X, (row, 4 * q))
        ac.store4(Y, (row, 4 * q), (a * x0 + b, a * x1 + b, a * x2 + b, a * x3 + b))
        t += cuda.gridDim.x


def idiom_bulk_while(X, Y, a, b):
    sh = cuda.shared.array((8, 128), np.float32, alignment=16)
    bar = cuda.shared.array(1, np.uint64)
    tid = cuda.threadIdx.x
    r = tid // 32
    q = tid % 32
    if tid == 0:
        ac.mbarrier_init(bar[0:], 256)
    ac.fence_mbarrier_init()
    cuda.syncthreads()
    ntiles = X.shape[0] // 8
    phase = 0
    t = cuda.blockIdx.x
    while t < ntiles:
        row = t * 8 + r
        ac.mbarrier_arrive_expect_tx(bar[0:], 16)
        ac.cp_async_bulk_g2s(sh[r, 4 * q:4 * q + 4], X[row, 4 * q:4 * q + 4], bar[0:])
        ac.mbarrier_wait_parity(bar[0:], phase)
        phase ^= 1
        for j in range(4):
            Y[row, 4 * q + j] = a * sh[r, 4 * q + j] + b
        cuda.syncthreads()
        t += cuda.gridDim.x


# --- the other lever: keep the range() loop, mark it with ac.pragma_nounroll() -------
# (CUDA C++'s ``#pragma unroll 1``: LLVM loop metadata NVVM honours)


def idiom_single_pragma(X, Y, a, b):
    sh = cuda.shared.array((8, 32, 4), np.float32, alignment=16)
    tid = cuda.threadIdx.x
    r = tid // 32
    q = tid % 32
    ntiles = X.shape[0] // 8
    for t in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
        ac.pragma_nounroll()
        row = t * 8 + r
        ac.cp_async(sh[r, q, :], X[row, 4 * q:4 * q + 4], 16)
        ac.commit_group()
        ac.wait_group(0)
        cuda.syncthreads()
        for j in range(4):
            Y[row, 4 * q + j] = a * sh[r, q, j] + b
        cuda.syncthreads()


def idiom_vector_pragma(X, Y, a, b):
    tid = cuda.threadIdx.x
    r = tid // 32
    q = tid % 32
    ntiles = X.shape[0] // 8
    for t in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
        ac.pragma_nounroll()
        row = t * 8 + r
        x0, x1, x2, x3 = ac.load4(X, (row, 4 * q))
        ac.store4(Y, (row, 4 * q), (a * x0 + b, a * x1 + b, a * x2 + b, a * x3 + b))


#: name -> (Python function, signature, label)
KERNELS = {
    "single": (idiom_single, SIGNATURE, "single-stage cp.async + wait_group(0)"),
    "slice": (idiom_slice, SIGNATURE, "16-byte chunk as a slice sh[r, 4*q:4*q+4]"),
    "pipeline": (idiom_pipeline, SIGNATURE, f"{STAGES}-stage cp.async pipeline, prefetch loop"),
    "runtime_depth": (idiom_runtime_depth, SIGNATURE_DEPTH, "cp.async pipeline, run-time stages"),
    "mbarrier": (idiom_mbarrier, SIGNATURE, "producer/consumer on two mbarrier rings"),
    "vector": (idiom_vector, SIGNATURE, "float4 load/store (ac.load4/store4)"),
    "bulk": (idiom_bulk, SIGNATURE, "16-byte bulk copies on an mbarrier"),
}
#: the documented levers' forms (README: loops that compile like CUDA C++): the
#: ``while`` grid-stride loop and the loop pragma, each compared with the CUDA
#: C++ original of the idiom it rewrites
WHILE_FORMS = {
    "single_while": (idiom_single_while, SIGNATURE, "single-stage cp.async, while loop", "single"),
    "slice_while": (idiom_slice_while, SIGNATURE, "slice chunk, while loop", "slice"),
    "vector_while": (idiom_vector_while, SIGNATURE, "float4 load/store, while loop", "vector"),
    "bulk_while": (idiom_bulk_while, SIGNATURE, "16-byte bulk copies, while loop", "bulk"),
    "single_pragma": (idiom_single_pragma, SIGNATURE,
                      "single-stage cp.async, range + pragma_nounroll", "single"),
    "vector_pragma": (idiom_vector_pragma, SIGNATURE, "float4 load/store, range + pragma_nounroll",
                      "vector"),
}
#: every port: name -> (function, signature, label, the idiom whose CUDA C++ original is its peer)
PORTS = {**{k: v + (k,) for k, v in KERNELS.items()}, **WHILE_FORMS}


def grid_for(rows: int, sms: int = 132, per_sm: int = 4) -> int:
    """A persistent grid: ``per_sm`` blocks a multiprocessor, or one a tile.
    Four 256-thread blocks fit an SM at up to 64 registers a thread, so the
    ports (24-56 registers) and the originals (20-32) run the same single
    wave; more blocks would let register counts decide the wave count."""
    return max(1, min(rows // TILE_ROWS, sms * per_sm))


def compile_kernel(name: str):
    """The ``cuda.jit`` kernel of a port (``PORTS``), compiled for its signature."""
    fn, sig = PORTS[name][:2]
    return cuda.jit(sig)(fn)


def launch_args(name: str, X, Y, a: float = 1.5, b: float = -0.25) -> tuple:
    """The kernel arguments (``runtime_depth`` gets ``STAGES`` at run time)."""
    return (X, Y, np.float32(a), np.float32(b)) + ((np.int32(STAGES),) if name == "runtime_depth" else ())


# --- the benchmark suite (``--only idioms``) -----------------------------------------

#: rows of float32[rows, 128]: 256 MiB each way (full), 16 MiB (quick)
ROWS = {"full": 1 << 19, "quick": 1 << 15}
#: the index of each idiom in ``twin_idiom`` (twins_idioms.cu)
TWIN_INDEX = {name: i for i, name in enumerate(KERNELS)}
SUITE_KEYS = ([f"{impl}_idiom_{name}" for name in KERNELS for impl in ("numba", "twin")]
              + [f"numba_idiom_{name}" for name in WHILE_FORMS])


def twin_idiom_launcher(lib) -> Callable[..., None]:
    """Declare ``twin_idiom``'s C signature on ``lib`` (the twins library)
    and return ``launch(i, X, Y, rows, a, b, grid, what=i)``: CUDA C++
    original ``i`` (``TWIN_INDEX``) over ``X`` into ``Y`` with ``STAGES``,
    raising ``RuntimeError`` (naming ``what``) on a CUDA error."""
    import ctypes

    from .twins import ptr

    P, I, F = ctypes.c_void_p, ctypes.c_int, ctypes.c_float
    lib.twin_idiom.argtypes = [I, P, P, I, F, F, I, I]
    lib.twin_idiom.restype = I

    def launch(i: int, X, Y, rows: int, a: float, b: float, grid: int, what=None) -> None:
        rc = lib.twin_idiom(i, ptr(X), ptr(Y), rows, a, b, grid, STAGES)
        if rc:
            raise RuntimeError(f"twin_idiom({i if what is None else what}): CUDA error {rc}")
    return launch


def suite_idioms(r) -> None:
    """Each idiom's port and its CUDA C++ original on the same buffers and
    grid; every row checks all of ``Y`` against ``a * X + b`` (float64
    reference on the host, poisoned output first)."""
    from . import devutil as du

    rows = ROWS["quick" if r.quick else "full"]
    X = cuda.device_array((rows, COLS), np.float32)
    Y = cuda.device_array((rows, COLS), np.float32)
    du.fill_random(X)
    a, b = 1.5, -0.25
    ref = (np.float64(a) * X.copy_to_host() + np.float64(b)).astype(np.float32)
    nbytes = 2 * X.size * 4
    grid = grid_for(rows, cuda.get_current_device().MULTIPROCESSOR_COUNT)
    r.info["idioms_rows"] = rows

    def check(launch):
        def run():
            du.launch_poisoned(launch, Y)
            got = Y.copy_to_host()
            bad = int((np.abs(got - ref) > 1e-6 * (1 + np.abs(ref))).sum())
            if bad:
                raise AssertionError(f"{bad} of {got.size} elements differ from a*X+b")
            return f"all {got.size} elements equal a*X+b"
        return run

    launch_twin = None
    try:
        launch_twin = twin_idiom_launcher(r.twins().lib)
    except Exception as e:
        lib_error = f"error: {type(e).__name__}: {e}"
    for name, (fn, sig, label) in KERNELS.items():
        config = {"rows": rows, "cols": COLS, "block": BLOCK, "grid": grid, "stages": STAGES}
        key = f"numba_idiom_{name}"
        tkey, tlabel = f"twin_idiom_{name}", f"idiom: {label}, CUDA C++"
        try:
            kern = cuda.jit(sig)(fn)
            r.dump_code(key, kern)
            args = launch_args(name, X, Y, a, b)
            launch = (lambda k=kern, args=args: k[grid, BLOCK](*args))
        except Exception as e:
            r.fail(key, f"idiom: {label}", "numba", "TB/s", f"error: {type(e).__name__}: {e}")
            launch = None
        if launch_twin is None:
            r.fail(tkey, tlabel, "cuda-c++", "TB/s", lib_error)
            if launch is not None:
                r.measure(key, f"idiom: {label}", "numba", "TB/s", nbytes, launch, check(launch),
                          config=config)
            continue

        def twin(i=TWIN_INDEX[name]):
            launch_twin(i, X, Y, rows, a, b, grid)
        if launch is None:
            r.measure(tkey, tlabel, "cuda-c++", "TB/s", nbytes, twin, check(twin), config=config)
            continue
        # the port and its original timed in alternation, three rounds
        r.measure_pair((key, f"idiom: {label}", "numba", "TB/s", nbytes, launch, check(launch), config),
                       (tkey, tlabel, "cuda-c++", "TB/s", nbytes, twin, check(twin), config))
    for name, (fn, sig, label, _) in WHILE_FORMS.items():
        config = {"rows": rows, "cols": COLS, "block": BLOCK, "grid": grid}
        key = f"numba_idiom_{name}"
        try:
            kern = cuda.jit(sig)(fn)
            r.dump_code(key, kern)
            launch = (lambda k=kern: k[grid, BLOCK](X, Y, np.float32(a), np.float32(b)))
            r.measure(key, f"idiom: {label}", "numba", "TB/s", nbytes, launch, check(launch), config=config)
        except Exception as e:
            r.fail(key, f"idiom: {label}", "numba", "TB/s", f"error: {type(e).__name__}: {e}")
