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

:func:`launch` has two paths.  The first launch of a kernel with a launch
shape and argument classes goes through Numba's own dispatch (``configure``
and ``call``: numba-cuda's C dispatcher finds the compiled kernel,
compiling on first use as usual) with a claim on the launch left in a
thread-local; the same hook then launches the kernel with Numba's argument
marshalling and the cluster shape, after every check.  What that launch
worked out is kept (``_prepared.py``): later launches with the same shape
and argument classes write the parameters straight into a preallocated
block (the same bytes Numba's marshalling produces) and call the driver,
after re-checking only what the key does not capture.  Arguments that the
fast path does not read itself (host arrays, foreign device arrays) always
take Numba's marshalling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence, Union

import numpy as np

from . import _numba_internals as _nb
from . import _prepared
from . import interop as _interop
from .tensor_map import TensorMap

Dim = Union[int, Sequence[int]]

#: Without opting in, a block may use at most this much shared memory.
DEFAULT_SHARED_LIMIT = 48 * 1024
#: Largest portable cluster; larger ones need the non-portable attribute.
PORTABLE_CLUSTER = 8
#: Largest cluster any sm_90 device accepts (with ``non_portable=True``).
MAX_CLUSTER = 16


class ClusterLaunchError(ValueError):
    """A launch configuration that the cluster rules forbid.

    Example::

        try:
            ac.launch(kernel, 3, 128, (a,), cluster=2)   # 3 blocks: not whole clusters of 2
        except ac.ClusterLaunchError as e:
            print(e)
    """


class LaunchTypeError(ClusterLaunchError, TypeError):
    """A launch argument of the wrong type (say ``grid=2.5``); a
    ``TypeError`` and, like every launch error, a :class:`ClusterLaunchError`.

    Example::

        try:
            ac.launch(kernel, 2.5, 128, (a,))
        except TypeError as e:                 # an ac.LaunchTypeError
            print(e)
    """


def is_int(value: Any) -> bool:
    """A Python or numpy integer; not a bool (``True`` is not a block count)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def dim3(value: Dim, name: str, what: str | None = None) -> tuple[int, int, int]:
    """``value`` (an int or a tuple/list of 1-3 ints) as an (x, y, z) triple
    of positive ints.  Nothing is converted: a float, bool or str is a
    :class:`LaunchTypeError`, a zero or negative extent a
    :class:`ClusterLaunchError`; ``what`` (the API) leads the message.

    Example::

        >>> dim3((4, 2), "grid")
        (4, 2, 1)
    """
    prefix = f"{what}: " if what else ""
    if is_int(value):
        dims: tuple = (int(value),)
    elif isinstance(value, (tuple, list)) and all(is_int(v) for v in value):
        dims = tuple(int(v) for v in value)
    else:
        raise LaunchTypeError(f"{prefix}`{name}` must be an int or a tuple of 1-3 ints, got {value!r}")
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise ClusterLaunchError(f"{prefix}`{name}` must be 1-3 positive ints, got {value!r}")
    return dims + (1,) * (3 - len(dims))


def check_shared_mem(shared_mem: Any, what: str) -> int:
    """``shared_mem``: a non-negative int (bytes of dynamic shared memory)."""
    if not is_int(shared_mem):
        raise LaunchTypeError(f"{what}: `shared_mem` must be an int (bytes), got {shared_mem!r}")
    if shared_mem < 0:
        raise ClusterLaunchError(f"{what}: shared_mem must be >= 0, got {shared_mem}")
    return int(shared_mem)


def check_non_portable(non_portable: Any, what: str) -> bool:
    # bool only: bool('no') is True
    if not isinstance(non_portable, bool):
        raise LaunchTypeError(f"{what}: `non_portable` must be True or False, got {non_portable!r}")
    return non_portable


def check_args(args: Any, what: str) -> tuple:
    """The kernel's arguments: a tuple (or a list).  Anything else, say an
    array or a dict, would otherwise be unpacked into arguments."""
    if isinstance(args, tuple):
        return args
    if isinstance(args, list):
        return tuple(args)
    raise LaunchTypeError(f"{what}: `args` must be a tuple (or list) of the kernel's arguments, "
                          f"got {type(args).__name__}")


def check_device_limits(cufunc: Any, grid: tuple[int, int, int] | None,
                        block: tuple[int, int, int], what: str) -> None:
    """``grid`` (blocks; None: not launched) and ``block`` against the
    device's limits, so that a launch the driver would refuse with a bare
    CUDA_ERROR_INVALID_VALUE is an error naming the limit."""
    check_launch_limits(_nb.device_launch_limits(cufunc), grid, block, what)


#: sm_90's launch limits (H100/H200), which the simulator enforces: it has
#: no device to read them from, and a launch it runs should be one the GPU runs.
SIM_LIMITS = _nb.LaunchLimits((1024, 1024, 64), 1024, ((1 << 31) - 1, 65535, 65535))
#: sm_90's MAX_SHARED_MEMORY_PER_BLOCK_OPTIN (227 KiB), the simulator's limit
SIM_SHARED_OPTIN = 227 * 1024


def check_shared_total(static: int, dynamic: int, optin: int, what: str) -> None:
    """Static plus dynamic shared memory of one block against the device's
    opt-in limit (``static`` is 0 where it is not known: the simulator)."""
    if static + dynamic > optin:
        raise ClusterLaunchError(
            f"{what}: {dynamic} bytes of dynamic shared memory plus the kernel's "
            f"{static} bytes of static shared memory exceed the device's "
            f"per-block opt-in limit of {optin} bytes (MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)"
        )


def check_sim_launch(grid: tuple[int, int, int], block: tuple[int, int, int], dynamic: int,
                     what: str) -> None:
    """The simulator's launch: the checks a GPU launch gets, against sm_90's
    limits (a block of 2048 threads runs in Python but never on the GPU)."""
    check_launch_limits(SIM_LIMITS, grid, block, what)
    check_shared_total(0, check_shared_mem(dynamic, what), SIM_SHARED_OPTIN, what)


def checking_sim_launch(module_init: Any) -> Any:
    """Wrap the simulator's ``FakeCUDAModule.__init__`` (made once per
    launch, before any block runs) with :func:`check_sim_launch`."""

    def init(self: Any, grid_dim: tuple, block_dim: tuple, dynshared_size: int) -> None:
        check_sim_launch(tuple(grid_dim), tuple(block_dim), dynshared_size, "launch")
        module_init(self, grid_dim, block_dim, dynshared_size)

    init.__wrapped__ = module_init  # the original stays reachable for the names check
    return init


def check_launch_limits(lim: Any, grid: tuple[int, int, int] | None,
                        block: tuple[int, int, int], what: str) -> None:
    """``grid`` and ``block`` against ``lim`` (a ``LaunchLimits``)."""
    for axis, b, most in zip("xyz", block, lim.max_block):
        if b > most:
            raise ClusterLaunchError(f"{what}: `block` {block} has {b} threads on axis {axis}; the "
                                     f"device's MAX_BLOCK_DIM_{axis.upper()} is {most}")
    threads = block[0] * block[1] * block[2]
    if threads > lim.max_threads:
        raise ClusterLaunchError(f"{what}: `block` {block} has {threads} threads; the device's "
                                 f"MAX_THREADS_PER_BLOCK is {lim.max_threads}")
    if grid is not None:
        for axis, g, most in zip("xyz", grid, lim.max_grid):
            if g > most:
                raise ClusterLaunchError(f"{what}: `grid` {grid} has {g} blocks on axis {axis}; the "
                                         f"device's MAX_GRID_DIM_{axis.upper()} is {most}")


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
    #: the run-time cluster shape (None: none, or the kernel's declared
    #: one) of each :func:`launch` shape (a ``_Claim``) checked on this kernel
    checked: dict = field(default_factory=dict)
    #: the driver's launch configuration (``_nb.launch_config``'s pair) of
    #: each (``_Claim``, stream handle)
    configs: dict = field(default_factory=dict)
    #: (griddim, blockdim, sharedmem) of ordinary launches already checked
    hook_shapes: set = field(default_factory=set)


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
             what: str = "launch", check_grid_dims: bool = True,
             hook: bool = False) -> tuple[Any, _KernelState, tuple | None]:
    """Checks and kernel attributes every launch path needs; returns
    (cufunc, state, the cluster shape the launch runs with).

    ``hook``: an ordinary ``kernel[grid, block]`` launch (numba normalised
    its dimensions).  Each of its shapes is checked once per kernel, and the
    device limits only where this package adds checks (a declared cluster
    shape, dynamic shared memory above the default limit); otherwise numba's
    launch stays as numba made it."""
    cufunc = _nb.cufunc_of(kernel)
    st = _state(kernel, cufunc)
    if hook:
        key = (griddim, blockdim, sharedmem)
        if key in st.hook_shapes:
            return cufunc, st, st.declared
    shape = cluster
    if st.declared is not None:
        if cluster is not None and cluster != st.declared:
            raise ClusterLaunchError(
                f"{what}: the kernel declares cluster_dims{st.declared}; "
                f"cluster={cluster} contradicts it"
            )
        shape = st.declared
        non_portable = True  # the kernel asked for its shape at compile time
    dynamic = check_shared_mem(sharedmem, what)
    if not hook or shape is not None or cufunc.attrs.shared + dynamic > DEFAULT_SHARED_LIMIT:
        grid3 = dim3(griddim, "grid", what) if check_grid_dims else None
        check_device_limits(cufunc, grid3, dim3(blockdim, "block", what), what)
    if shape is not None:
        check_cluster_shape(shape, non_portable, what)
        if check_grid_dims:
            check_grid(dim3(griddim, "grid", what), shape, what)
        if shape[0] * shape[1] * shape[2] > PORTABLE_CLUSTER and not st.non_portable:
            _nb.kernel_set_attribute(cufunc, "NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)
            st.non_portable = True
    _raise_shared_limit(cufunc, st, dynamic, what)
    if hook:
        if st.declared is None:
            # compiled in, so the same on every device: with no dynamic
            # shared memory nothing above applies to this kernel again
            _nb.mark_plain(kernel)
        if len(st.hook_shapes) >= _CLAIMS_MAX:
            st.hook_shapes.clear()
        st.hook_shapes.add(key)
    return cufunc, st, shape


def _raise_shared_limit(cufunc: Any, st: _KernelState, dynamic: int, what: str) -> None:
    if dynamic < 0:
        raise ClusterLaunchError(f"{what}: shared_mem must be >= 0, got {dynamic}")
    static = cufunc.attrs.shared
    if static + dynamic <= DEFAULT_SHARED_LIMIT or dynamic <= st.max_dynamic_shared:
        return
    check_shared_total(static, dynamic,
                       _nb.device_attribute(cufunc, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"), what)
    _nb.kernel_set_attribute(cufunc, "MAX_DYNAMIC_SHARED_SIZE_BYTES", dynamic)
    st.max_dynamic_shared = dynamic


def _launch_hook(kernel: Any, griddim: Dim, blockdim: Dim, sharedmem: int) -> None:
    _prepare(kernel, griddim, blockdim, sharedmem, what=f"{kernel.entry_name}[grid, block]",
             hook=True)


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
               non_portable: bool, what: str = _WHAT, launched: bool = True) -> _Claim:
    """Validate the device-independent launch arguments (types, ranges, the
    cluster rules); the device limits are checked at the kernel's first
    launch of the shape (:func:`_prepare`).  ``launched``: False for a
    shape that only queries occupancy (no grid to fit the cluster)."""
    grid3, block3 = dim3(grid, "grid", what), dim3(block, "block", what)
    cl = dim3(cluster, "cluster", what) if cluster is not None else None
    non_portable = check_non_portable(non_portable, what)
    if cl is not None:
        check_cluster_shape(cl, non_portable, what)
        if launched:
            check_grid(grid3, cl, what)
    shared_mem = check_shared_mem(shared_mem, what)
    return _Claim(grid3, block3, cl, shared_mem, non_portable)


def _claim(grid: Dim, block: Dim, cluster: Dim | None, shared_mem: int,
           non_portable: bool) -> _Claim:
    """The validated shape of these :func:`launch` arguments, checked once
    per distinct values.  The classes are part of the key, the elements'
    too for tuples: ``True == 1`` and ``4.0 == 4`` hash alike, but ``dim3``
    rejects a bool or float."""
    key = (grid, block, cluster, shared_mem, non_portable, grid.__class__, block.__class__,
           cluster.__class__, shared_mem.__class__, non_portable.__class__)
    if tuple in key:  # the classes of a tuple's elements too (one C-level pass each)
        key += (tuple(map(type, grid)) if grid.__class__ is tuple else None,
                tuple(map(type, block)) if block.__class__ is tuple else None,
                tuple(map(type, cluster)) if cluster.__class__ is tuple else None)
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


#: (grid, block, cluster, shared_mem, non_portable, claim) of the last
#: launch whose arguments are immutable: replaced whole, never mutated, so
#: a reader in another thread sees one launch's entry or another's
_last_claim: tuple = (object(),) * 6
_NO_TABLE: dict = {}  # the launch table of an object that has no __dict__
_IMMUTABLE = (int, tuple, type(None), bool)


def _remember_claim(grid: Dim, block: Dim, cluster: Dim | None, shared_mem: int,
                    non_portable: bool) -> _Claim:
    """:func:`_claim`, remembered for the next launch with the same
    argument objects when none of them can change in place (a list can: it
    is validated every time).  Holding the objects keeps their identities
    from being reused."""
    global _last_claim
    claim = _claim(grid, block, cluster, shared_mem, non_portable)
    if (grid.__class__ in _IMMUTABLE and block.__class__ in _IMMUTABLE
            and cluster.__class__ in _IMMUTABLE and shared_mem.__class__ is int
            and non_portable.__class__ is bool):
        _last_claim = (grid, block, cluster, shared_mem, non_portable, claim)
    return claim


def _takeover(kernel: Any, claim: _Claim, args: Sequence[Any], stream: Any, handle: int) -> None:
    """Launch ``kernel`` (numba's ``_Kernel``, as picked for the arguments)
    with ``claim``'s shape through Numba's argument marshalling; ``stream``
    is a cuda.core stream and ``handle`` its driver handle.

    The checks that need the compiled kernel (declared shape, shared memory
    limit, debug/cooperative) and the kernel attributes they set run once per
    kernel, device and shape.  What was launched is left in
    ``claims.launched`` for :func:`launch` to prepare the fast path."""
    cufunc = kernel._codelibrary.get_cufunc()
    st = _state(kernel, cufunc)
    try:
        cluster = st.checked[claim]
    except KeyError:
        cluster = _first_launch(kernel, cufunc, st, claim)
    config = st.configs.get((claim, handle))
    if config is None:
        if len(st.configs) >= _CLAIMS_MAX:
            st.configs.clear()
        config = st.configs[claim, handle] = _nb.launch_config(
            claim.grid, claim.block, claim.shared_mem, cluster, handle)
    _nb.launch_kernel(kernel, cufunc, config, args, stream)
    _nb.claims.launched = (kernel, cufunc, cluster, {handle: config})


def _first_launch(kernel: Any, cufunc: Any, st: _KernelState, claim: _Claim) -> tuple | None:
    """Check a launch shape on a compiled kernel (once per kernel, device and
    shape); returns the run-time cluster shape the driver gets (None when
    there is none or the kernel declares its shape: then the driver
    clusters the blocks itself)."""
    if kernel.debug or kernel.cooperative:
        raise ClusterLaunchError(
            f"{_WHAT}: kernels compiled with debug=True or using grid sync are not "
            "supported; launch them with kernel[grid, block]"
        )
    # the device limits are checked here, once per kernel, device and shape
    _, _, shape = _prepare(kernel, claim.grid, claim.block, claim.shared_mem, claim.cluster,
                           claim.non_portable, _WHAT)
    cluster = shape if st.declared is None else None
    if cluster is not None:
        cc = tuple(cufunc.device.compute_capability)
        if cc < (9, 0):  # the driver would refuse the attribute with a bare error
            raise ClusterLaunchError(f"{_WHAT}: thread-block clusters need compute capability 9.0 "
                                     f"or newer; this device is sm_{cc[0]}{cc[1]}")
    if len(st.checked) >= _CLAIMS_MAX:
        st.checked.clear()
    st.checked[claim] = cluster
    return cluster


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
    - ``stream``: a Numba stream, a cuda.core ``Stream``, a
      ``torch.cuda.Stream``, any object with ``__cuda_stream__``, or an int
      ``CUstream`` handle (0: the default stream); see :func:`as_stream`.
    - arrays in ``args`` may be Numba device arrays, numpy arrays (copied
      in and back), CuPy arrays, torch CUDA tensors or DLPack objects on
      the GPU (viewed, not copied; a CPU tensor is an error); a
      :class:`TensorMap` must be used on the device it was built on.
    - ``non_portable``: True to allow clusters of 9-16 CTAs.

    Nothing is converted: ``grid``, ``block`` and ``cluster`` are Python or
    numpy ints (not bools, floats or strings) or tuples/lists of 1-3 of
    them, ``shared_mem`` an int, ``non_portable`` a bool and ``args`` a
    tuple or list; a wrong type is a :class:`LaunchTypeError` (a
    ``TypeError`` and a :class:`ClusterLaunchError`).  The block, grid and
    dynamic shared memory are checked against the device's limits
    (``MAX_BLOCK_DIM_*``, ``MAX_THREADS_PER_BLOCK``, ``MAX_GRID_DIM_*``,
    ``MAX_SHARED_MEMORY_PER_BLOCK_OPTIN``) at the kernel's first launch
    of each shape; later launches of the shape skip every check.

    The kernel is picked (and compiled if needed) by Numba's own dispatch,
    as for ``kernel[grid, block, stream, shared_mem](*args)``, which also
    warns about grids under 128 blocks as that launch does.  Errors
    (:class:`ClusterLaunchError`, a ``ValueError``) are raised before the
    driver sees the launch.

    Later launches with the same shape and argument classes skip Numba's
    dispatch and marshalling: Numba device arrays and scalars (Python or
    numpy numbers, bools, tuples of them, device records) are written into
    the kernel's parameters directly, the same bytes Numba would pass.  A
    launch whose arguments differ in what that key does not capture (an
    array's dtype or layout, a tuple's element types), in another CUDA
    context, after the dispatcher compiled a new overload, or with Numba
    pre-launch callbacks goes through Numba's dispatch again; so do host
    arrays (copied in and back), other libraries' device arrays and
    ``datetime64`` values, every time.

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
    # the same argument objects as the previous launch (a loop launching
    # with constants): its claim, without building and hashing the key
    last = _last_claim
    if (grid is last[0] and block is last[1] and cluster is last[2] and shared_mem is last[3]
            and non_portable is last[4]):
        claim = last[5]
    else:
        claim = _remember_claim(grid, block, cluster, shared_mem, non_portable)
    if args.__class__ is not tuple:
        args = check_args(args, _WHAT)
    # the fast path: a launcher prepared by an earlier launch of this shape
    # and these argument classes (see _prepared.py); first the one that
    # launched this kernel last, whose own checks cover the key's classes
    # (building and hashing the key costs more than the launcher's checks)
    try:
        kd = kernel.__dict__
    except AttributeError:  # not a kernel: Numba's path says so
        kd = _NO_TABLE
    try:
        fast = kd[_prepared.LAST_ATTR]
    except KeyError:
        pass
    else:
        if fast[0] is claim and fast[1](args, stream):
            return
    prepared = kd.get(_prepared.TABLE_ATTR)
    if prepared:
        bucket = prepared.get((claim, *map(type, args)))
        if bucket:
            p = _prepared.run(bucket, args, stream)
            if p is not None:
                kd[_prepared.LAST_ATTR] = (claim, p.go)
                return
    _launch_through_numba(kernel, claim, args, stream)


def _launch_through_numba(kernel: Any, claim: _Claim, args: tuple, stream: Any) -> None:
    """The first launch of a shape and argument classes (and every launch
    with arguments the fast path leaves to Numba): Numba's dispatch picks
    (and compiles) the kernel, its marshalling converts the arguments; then
    the fast path is prepared for the next launch."""
    if _nb.SIMULATOR:
        return _simulator_launch(kernel, claim, args, stream)
    # streams and arrays of other libraries (torch, CuPy, cuda.core, DLPack)
    if stream.__class__ is not int or stream:  # 0 stays 0 (no work)
        stream = _interop.as_stream(stream, _WHAT)
    args = _interop.convert_args(args, _WHAT, (TensorMap,))
    callbacks = None
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
        handle = _prepared.stream_handle(stream)
        claims = _nb.claims
        previous = claims.pending
        claims.pending = (args, claim, handle)
        claims.launched = None
        try:
            kernel.call(args, configured)
            if claims.pending is not None:  # never: our hook did not see the launch
                raise RuntimeError(f"{_WHAT}: numba-cuda launched {kernel.py_func.__name__} "
                                   "without numba_asynccopy's launch hook (so without the cluster shape)")
        finally:
            claims.pending = previous
        callbacks = configured.pre_launch_callbacks
    elif _nb.is_kernel(kernel):  # a compiled kernel (e.g. dispatcher.overloads[sig])
        _takeover(kernel, claim, args, _nb.core_stream(stream), _prepared.stream_handle(stream))
    else:
        raise TypeError(f"expected a @cuda.jit kernel, got {type(kernel).__name__}")
    launched, _nb.claims.launched = _nb.claims.launched, None
    if launched is not None:
        compiled, cufunc, run_time_cluster, configs = launched
        _prepared.remember(kernel, (claim, *map(type, args)), compiled, cufunc, claim,
                           run_time_cluster, args, callbacks, configs)


#: the simulator's launch (``sim/engine.py``), set when the simulator is
#: installed: ``ac.launch`` under NUMBA_ENABLE_CUDASIM=1 hands the kernel on
_simulated: list = []


def use_simulated_launch(run: Any) -> None:
    """Hand launches to ``run(kernel, claim, args, stream)`` (the simulator's,
    which runs a cluster's blocks together) once their arguments are checked
    as for the GPU."""
    _simulated[:] = [run]


def _simulator_launch(kernel: Any, claim: _Claim, args: tuple, stream: Any) -> None:
    """Under NUMBA_ENABLE_CUDASIM=1: an ordinary simulated launch with that
    much dynamic shared memory; with a cluster shape, the simulator's launch
    loop runs the blocks of each cluster together."""
    if not _simulated:
        raise ClusterLaunchError(f"{_WHAT}: the CUDA simulator is on, but numba_asynccopy.sim "
                                 "is not installed (import numba_asynccopy first)")
    _simulated[0](kernel, claim, args, stream)


def max_active_clusters(kernel: Any, block: Dim, cluster: Dim | None = None, *,
                        args: Sequence[Any] = (), shared_mem: int = 0,
                        non_portable: bool = False, stream: Any = 0) -> int:
    """How many clusters of shape ``cluster`` can be resident at once.

    ``kernel`` is a ``@cuda.jit`` kernel: give ``args`` (values, as for a
    launch) unless it was compiled with an explicit signature.  ``cluster``
    defaults to the kernel's declared :func:`cluster_dims`.  The arguments
    follow :func:`launch`'s rules (ints, not floats or strings; a bool
    ``non_portable``; the device's block limits), checked before anything
    is compiled or queried.

    Example::

        n = ac.max_active_clusters(ring, block=128, cluster=(2, 1, 1),
                                   args=(out,), shared_mem=64 * 1024)
    """
    what = "ac.max_active_clusters"
    # the same argument rules as ac.launch, all before the kernel is compiled or queried
    claim = _new_claim((1, 1, 1), block, cluster, shared_mem, non_portable, what,
                       launched=False)
    args = check_args(args, what)
    k = _nb.kernel_for_args(kernel, args)
    cufunc, st, shape = _prepare(k, (1, 1, 1), claim.block, claim.shared_mem, claim.cluster,
                                 claim.non_portable, what, check_grid_dims=False)
    if shape is None:
        raise ClusterLaunchError(f"{what}: give `cluster` (the kernel declares no cluster_dims)")
    from cuda.core import LaunchConfig

    config = LaunchConfig(grid=(1, 1, 1), cluster=shape, block=claim.block,
                          shmem_size=claim.shared_mem)
    return int(cufunc.kernel.occupancy.max_active_clusters(config, stream=_nb.core_stream(stream)))
