"""Cluster launches and dynamic shared memory above 48 KB.

Two ways to run a kernel in thread-block clusters:

- declared shape: call :func:`cluster_dims` in the kernel body; an ordinary
  ``kernel[grid, block]`` launch then runs clustered (the shape is compiled
  into the kernel as ``.reqnctapercluster``);
- run-time shape: :func:`launch` with ``cluster=(x, y, z)``.

Both count ``grid`` in blocks, as Numba does, and both check before the
launch that the grid is a whole number of clusters.  Importing the package
installs a small hook on numba-cuda's kernel launch so that the ordinary
launch path also raises the kernel's dynamic shared memory limit (numba
alone fails above 48 KB) and checks declared cluster shapes.

:func:`launch` costs about what ``kernel[grid, block](*args)`` costs: it goes
through Numba's own dispatch (``configure`` and ``call``: numba-cuda's C
dispatcher finds the compiled kernel, compiling on first use as usual) with
a claim on the launch left in a thread-local, and the same hook launches
the kernel with the cluster shape.  What depends only on the launch shape,
or on the shape and the compiled kernel (checks, kernel attributes, the
cuda.core ``LaunchConfig``), is done once and cached.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Sequence, Union


from . import _numba_internals as _nb

Dim = Union[int, Sequence[int]]

#: Without opting in, a block may use at most this much shared memory.
DEFAULT_SHARED_LIMIT = 48 * 1024
#: Largest portable cluster; larger ones need the non-portable attribute.
PORTABLE_CLUSTER = 8
#: Largest cluster any sm_90 device accepts (with ``non_portable=True``).
MAX_CLUSTER = 16


class ClusterLaunchError(ValueError):
    """A launch configuration that the cluster rules forbid."""


def dim3(value: Dim, name: str) -> tuple[int, int, int]:
    """``value`` (an int or 1-3 ints) as an (x, y, z) triple of positive ints."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,)
    try:
        if isinstance(value, (str, bytes)):
            raise TypeError
        dims = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise ClusterLaunchError(f"`{name}` must be an int or a tuple of 1-3 ints, got {value!r}") from None
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise ClusterLaunchError(f"`{name}` must be 1-3 positive ints, got {value!r}")
    return dims + (1,) * (3 - len(dims))


def check_cluster_shape(cluster: tuple[int, int, int], non_portable: bool, what: str) -> None:
    size = cluster[0] * cluster[1] * cluster[2]
    if size > MAX_CLUSTER:
        raise ClusterLaunchError(
            f"{what}: a cluster of {cluster} has {size} CTAs; the largest "
            f"cluster is {MAX_CLUSTER} CTAs (with non_portable=True)"
        )
    if size > PORTABLE_CLUSTER and not non_portable:
        raise ClusterLaunchError(
            f"{what}: a cluster of {cluster} has {size} CTAs; more than "
            f"{PORTABLE_CLUSTER} is a non-portable cluster size: pass non_portable=True"
        )


def check_grid(grid: tuple[int, int, int], cluster: tuple[int, int, int], what: str) -> None:
    """The grid (in blocks) must be a whole number of clusters on every axis."""
    bad = [a for a, (g, c) in zip("xyz", zip(grid, cluster)) if g % c]
    if bad:
        raise ClusterLaunchError(
            f"{what}: grid {grid} (blocks) is not a multiple of the cluster shape "
            f"{cluster} on axis {', '.join(bad)}"
        )


@dataclass
class _KernelState:
    """Per compiled kernel and device."""
    declared: tuple[int, int, int] | None
    non_portable: bool = False
    max_dynamic_shared: int = 0
    #: LaunchConfig of each :func:`launch` shape (a ``_Claim``) checked on this kernel
    configs: dict = field(default_factory=dict)


def _state(kernel: Any, cufunc: Any) -> _KernelState:
    per_device = kernel.__dict__.setdefault("_asynccopy_launch", {})
    st = per_device.get(cufunc.device.id)
    if st is None:
        st = _KernelState(declared=declared_cluster_dims(cufunc))
        per_device[cufunc.device.id] = st
    return st


def declared_cluster_dims(cufunc: Any) -> tuple[int, int, int] | None:
    """The cluster shape compiled into the kernel (``cluster_dims``), or None."""
    try:
        dims = tuple(
            _nb.kernel_get_attribute(cufunc, f"REQUIRED_CLUSTER_{n}")
            for n in ("WIDTH", "HEIGHT", "DEPTH")
        )
    except Exception:  # devices/drivers without clusters have no such attribute
        return None
    return dims if all(dims) else None


def _prepare(kernel: Any, griddim: Dim, blockdim: Dim, sharedmem: int,
             cluster: tuple[int, int, int] | None = None, non_portable: bool = False,
             what: str = "launch", check_grid_dims: bool = True) -> tuple[Any, _KernelState, tuple | None]:
    """Checks and kernel attributes every launch path needs; returns
    (cufunc, state, the cluster shape the launch runs with)."""
    cufunc = _nb.cufunc_of(kernel)
    st = _state(kernel, cufunc)
    shape = cluster
    if st.declared is not None:
        if cluster is not None and cluster != st.declared:
            raise ClusterLaunchError(
                f"{what}: the kernel declares cluster_dims{st.declared}; "
                f"cluster={cluster} contradicts it"
            )
        shape = st.declared
        non_portable = True  # the kernel asked for its shape at compile time
    if shape is not None:
        check_cluster_shape(shape, non_portable, what)
        if check_grid_dims:
            check_grid(dim3(griddim, "grid"), shape, what)
        if shape[0] * shape[1] * shape[2] > PORTABLE_CLUSTER and not st.non_portable:
            _nb.kernel_set_attribute(cufunc, "NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)
            st.non_portable = True
    _raise_shared_limit(cufunc, st, int(sharedmem), what)
    return cufunc, st, shape


def _raise_shared_limit(cufunc: Any, st: _KernelState, dynamic: int, what: str) -> None:
    if dynamic < 0:
        raise ClusterLaunchError(f"{what}: shared_mem must be >= 0, got {dynamic}")
    static = cufunc.attrs.shared
    if static + dynamic <= DEFAULT_SHARED_LIMIT or dynamic <= st.max_dynamic_shared:
        return
    optin = _nb.device_attribute(cufunc, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
    if static + dynamic > optin:
        raise ClusterLaunchError(
            f"{what}: {dynamic} bytes of dynamic shared memory plus the kernel's "
            f"{static} bytes of static shared memory exceed the device's "
            f"per-block opt-in limit of {optin} bytes"
        )
    _nb.kernel_set_attribute(cufunc, "MAX_DYNAMIC_SHARED_SIZE_BYTES", dynamic)
    st.max_dynamic_shared = dynamic


def _launch_hook(kernel: Any, griddim: Dim, blockdim: Dim, sharedmem: int) -> None:
    _prepare(kernel, griddim, blockdim, sharedmem, what=f"{kernel.entry_name}[grid, block]")


def install() -> None:
    """Install the ordinary-launch hook (done when the package is imported)."""
    _nb.install_launch_hook(_launch_hook, _takeover)


_WHAT = "ac.launch"


@dataclass(frozen=True, eq=False, slots=True)
class _Claim:
    """A validated :func:`launch` shape.  One object per distinct argument
    values (:func:`_claim`), so it is also the (identity) key of the
    per-kernel launch cache."""
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    cluster: tuple[int, int, int] | None
    shared_mem: int
    non_portable: bool


_CLAIMS: dict = {}
_CLAIMS_MAX = 1024  # distinct launch shapes remembered (then forgotten all at once)


def _new_claim(grid: Dim, block: Dim, cluster: Dim | None, shared_mem: int,
               non_portable: bool) -> _Claim:
    grid3, block3 = dim3(grid, "grid"), dim3(block, "block")
    cl = dim3(cluster, "cluster") if cluster is not None else None
    non_portable = bool(non_portable)
    if cl is not None:
        check_cluster_shape(cl, non_portable, _WHAT)
        check_grid(grid3, cl, _WHAT)
    shared_mem = int(shared_mem)
    if shared_mem < 0:
        raise ClusterLaunchError(f"{_WHAT}: shared_mem must be >= 0, got {shared_mem}")
    return _Claim(grid3, block3, cl, shared_mem, non_portable)


def _claim(grid: Dim, block: Dim, cluster: Dim | None, shared_mem: int,
           non_portable: bool) -> _Claim:
    """The validated shape of these :func:`launch` arguments, checked once
    per distinct values.  The classes are part of the key: ``True == 1``
    and ``4.0 == 4`` hash alike, but ``dim3`` rejects a bool or float."""
    key = (grid, block, cluster, shared_mem, non_portable, grid.__class__, block.__class__,
           cluster.__class__, shared_mem.__class__)
    try:
        return _CLAIMS[key]
    except KeyError:
        pass
    except TypeError:  # a list somewhere: validate every time
        return _new_claim(grid, block, cluster, shared_mem, non_portable)
    claim = _new_claim(grid, block, cluster, shared_mem, non_portable)
    if len(_CLAIMS) >= _CLAIMS_MAX:
        _CLAIMS.clear()
    _CLAIMS[key] = claim
    return claim


def _takeover(kernel: Any, claim: _Claim, args: Sequence[Any], stream: Any) -> None:
    """Launch ``kernel`` (numba's ``_Kernel``, as picked for the arguments)
    with ``claim``'s shape; ``stream`` is a cuda.core stream.

    The checks that need the compiled kernel (declared shape, shared memory
    limit, debug/cooperative) and the kernel attributes they set run once per
    kernel, device and shape; after that a launch is a dictionary look-up,
    argument marshalling and the driver call."""
    cufunc = kernel._codelibrary.get_cufunc()
    st = _state(kernel, cufunc)
    config = st.configs.get(claim)
    if config is None:
        config = _first_launch(kernel, cufunc, st, claim)
    _nb.launch_kernel(kernel, cufunc, config, args, stream)


def _first_launch(kernel: Any, cufunc: Any, st: _KernelState, claim: _Claim) -> Any:
    if kernel.debug or kernel.cooperative:
        raise ClusterLaunchError(
            f"{_WHAT}: kernels compiled with debug=True or using grid sync are not "
            "supported; launch them with kernel[grid, block]"
        )
    _, _, shape = _prepare(kernel, claim.grid, claim.block, claim.shared_mem, claim.cluster,
                           claim.non_portable, _WHAT)
    config = _launch_config(cufunc.device.id, claim.grid, claim.block, claim.shared_mem,
                            shape if st.declared is None else None)
    if len(st.configs) >= _CLAIMS_MAX:
        st.configs.clear()
    st.configs[claim] = config
    return config


def launch(kernel: Any, grid: Dim, block: Dim, args: Sequence[Any] = (), *,
           cluster: Dim | None = None, shared_mem: int = 0, stream: Any = 0,
           non_portable: bool = False) -> None:
    """Launch ``kernel`` with a run-time cluster shape and/or large shared memory.

    - ``grid``, ``block``: as in ``kernel[grid, block]``; ``grid`` counts
      blocks and must be a multiple of ``cluster`` on every axis.
    - ``args``: the kernel's arguments (a tuple), marshalled as Numba does
      (host arrays are copied in and back).
    - ``cluster``: int or (x, y, z) CTAs per cluster; at most 8 CTAs, or 16
      with ``non_portable=True``.  Leave it out for a kernel that declares
      :func:`cluster_dims` (or give the same shape).
    - ``shared_mem``: dynamic shared memory per block in bytes, up to the
      device's opt-in limit (227 KB on sm_90) minus the kernel's static
      shared memory; the kernel's limit is raised as needed.
    - ``stream``: a Numba stream or 0.

    The kernel is picked (and compiled if needed) by Numba's own dispatch,
    as for ``kernel[grid, block, stream, shared_mem](*args)``, which also
    warns about grids under 128 blocks as that launch does.  Errors
    (:class:`ClusterLaunchError`, a ``ValueError``) are raised before the
    driver sees the launch.

    Example::

        @cuda.jit
        def ring(out):
            sh = cuda.shared.array(1, np.int32)
            sh[0] = ac.cluster_cta_rank()
            ac.cluster_sync()
            nxt = (ac.cluster_cta_rank() + 1) % ac.cluster_num_ctas()
            out[cuda.blockIdx.x] = ac.dsmem_load(sh, nxt, 0)
            ac.cluster_sync()

        out = cuda.device_array(8, np.int32)
        ac.launch(ring, grid=8, block=32, args=(out,), cluster=4)
    """
    claim = _claim(grid, block, cluster, shared_mem, non_portable)
    if not isinstance(args, tuple):
        args = tuple(args)
    if _nb.SIMULATOR:
        return _simulator_launch(kernel, claim, args, stream)
    if _nb.is_cuda_dispatcher(kernel):
        if kernel.targetoptions.get("device"):
            raise TypeError(f"{kernel.py_func.__name__} is a device function, not a kernel")
        if not _nb.launch_hook_installed():
            raise RuntimeError(
                f"{_WHAT}: numba-cuda's _Kernel.launch is not numba_asynccopy's hook "
                "(was it replaced after importing numba_asynccopy?): cannot launch with a cluster"
            )
        # configure() is numba's lru_cache'd launch configuration, as kernel[...] builds it
        configured = kernel.configure(claim.grid, claim.block, stream, claim.shared_mem)
        claims = _nb.claims
        previous = claims.pending
        claims.pending = (args, claim)
        try:
            kernel.call(args, configured)
            if claims.pending is not None:  # never: our hook did not see the launch
                raise RuntimeError(f"{_WHAT}: numba-cuda launched {kernel.py_func.__name__} "
                                   "without numba_asynccopy's launch hook (so without the cluster shape)")
        finally:
            claims.pending = previous
    elif _nb.is_kernel(kernel):  # a compiled kernel (e.g. dispatcher.overloads[sig])
        _takeover(kernel, claim, args, _nb.core_stream(stream))
    else:
        raise TypeError(f"expected a @cuda.jit kernel, got {type(kernel).__name__}")


def _simulator_launch(kernel: Any, claim: _Claim, args: tuple, stream: Any) -> None:
    """Under NUMBA_ENABLE_CUDASIM=1: numba-cuda's simulator runs the blocks
    one after another, so it cannot run clusters; without one, the launch is
    an ordinary simulated launch with that much dynamic shared memory."""
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    if not isinstance(kernel, FakeCUDAKernel):
        raise TypeError(f"expected a @cuda.jit kernel, got {type(kernel).__name__}")
    if kernel._device:
        raise TypeError(f"{kernel.fn.__name__} is a device function, not a kernel")
    if claim.cluster is not None:
        from ..sim import UNSUPPORTED_FAMILIES, SimulatorError

        raise SimulatorError(
            f"numba_asynccopy simulator: {_WHAT}(..., cluster={claim.cluster}) cannot run in the "
            f"CUDA simulator: {UNSUPPORTED_FAMILIES['cluster']}. Run it on a GPU "
            "(unset NUMBA_ENABLE_CUDASIM)."
        )
    kernel[claim.grid, claim.block, stream, claim.shared_mem](*args)


@lru_cache(maxsize=512)
def _launch_config(device_id: int, grid3: tuple, block3: tuple, shared_mem: int,
                   cluster: tuple | None) -> Any:
    """The cuda.core LaunchConfig of a launch shape, built once per shape and
    device: building one with a cluster queries the device, which would
    otherwise cost every launch (keyed by device, so that query still runs
    for each device)."""
    from cuda.core import LaunchConfig

    if cluster is not None:
        # cuda.core counts the grid in clusters when a cluster is given
        clusters = tuple(g // c for g, c in zip(grid3, cluster))
        return LaunchConfig(grid=clusters, cluster=cluster, block=block3, shmem_size=shared_mem)
    # no cluster, or a declared shape (part of the kernel: the driver clusters the blocks)
    return LaunchConfig(grid=grid3, block=block3, shmem_size=shared_mem)


def max_active_clusters(kernel: Any, block: Dim, cluster: Dim | None = None, *,
                        args: Sequence[Any] = (), shared_mem: int = 0,
                        non_portable: bool = False, stream: Any = 0) -> int:
    """How many clusters of shape ``cluster`` can be resident at once.

    ``kernel`` is a ``@cuda.jit`` kernel: give ``args`` (values, as for a
    launch) unless it was compiled with an explicit signature.  ``cluster``
    defaults to the kernel's declared :func:`cluster_dims`.

    Example::

        n = ac.max_active_clusters(ring, block=128, cluster=(2, 1, 1),
                                   args=(out,), shared_mem=64 * 1024)
    """
    from cuda.core import LaunchConfig

    what = "ac.max_active_clusters"
    block3 = dim3(block, "block")
    cl = dim3(cluster, "cluster") if cluster is not None else None
    k = _nb.kernel_for_args(kernel, tuple(args))
    cufunc, st, shape = _prepare(k, (1, 1, 1), block3, shared_mem, cl, non_portable, what,
                                 check_grid_dims=False)
    if shape is None:
        raise ClusterLaunchError(f"{what}: give `cluster` (the kernel declares no cluster_dims)")
    config = LaunchConfig(grid=(1, 1, 1), cluster=shape, block=block3, shmem_size=int(shared_mem))
    return int(cufunc.kernel.occupancy.max_active_clusters(config, stream=_nb.core_stream(stream)))
