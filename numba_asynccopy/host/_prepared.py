"""Prepared launches: the fast path of :func:`ac.launch <numba_asynccopy.launch>`.

The first launch of a kernel with a given launch shape and argument
classes goes through Numba's own dispatch and marshalling (the slow path in
``launch.py``), which checks everything.  After it succeeded, a
:class:`Prepared` launcher is remembered for that (shape, argument classes)
key.  It holds what the slow path worked out once:

- the compiled kernel Numba picked and the driver handle of its function;
- one driver ``CUlaunchConfig`` per stream (cluster attribute included);
- a generated ``go(args, stream)`` that checks the arguments and writes the
  kernel parameters, in Numba's order and with Numba's conversions, into a
  preallocated block of 8-byte slots whose pointer array goes straight to
  ``cuLaunchKernelEx``.

A later launch with the same key is one call of ``go``: the checks that the
key does not capture (the device array's Numba type, a tuple's element
classes, the current CUDA context, the dispatcher's overload count, Numba's
pre-launch callbacks), the parameters and the driver call.  ``go`` checks
the argument classes too, so ``ac.launch`` first tries the launcher that
launched the kernel last (:data:`LAST_ATTR`), without building the key; only
when that one does not fit does it look the key up in the kernel's table.
Any check that fails sends the launch down the slow path, so a launch never has other semantics
than Numba's: arguments the fast path does not read itself (host arrays,
which Numba copies; other device arrays, whose stream handshake Numba
does; ``datetime64`` values; enum members; pointers) always take Numba's
marshalling.

What Numba's marshalling does, per parameter type (``_Kernel._prepare_args``,
then cuda.core's ``ParamHolder`` turns each value into parameter bytes):

- array: ``meminfo=0, parent=0, nitems, itemsize, data, shape..., strides...``
  (each an ``intptr_t``), read from the device array's
  ``_strided_memory_view_shim``;
- integer / float32 / float64: ``ctypes.c_<type>(value)`` (so a Python int
  wraps, a float is rounded by C); float16: ``c_uint16`` of the half's bits;
- complex: two ``c_float`` / ``c_double`` (real, imaginary);
- boolean: the value itself (a Python bool becomes an ``intptr_t``, a
  ``numpy.bool_`` a C ``bool``);
- record (on the device): its data pointer;
- tuple: its elements, in order.

``go`` does exactly these conversions: scalars through a ctypes object of
the same type whose memory is the slot (so wrapping, rounding and errors
are ctypes' own), an array's fields as bytes packed once per array object
(:func:`array_param`: they come from two of the array's cached
properties) and copied by one ``struct.pack_into`` with the other fields.
The CPU tests compare the bytes with ``ParamHolder``'s for every case.
The driver call is ``_numba_internals.launch_ex``: ctypes, on the function
pointer cuda.bindings' own ``cuLaunchKernelEx`` calls.

Extending it: a launch's stream is read by :func:`stream_handle` alone;
another kind of argument (say a DLPack array) needs a case in
``_Writer.param`` writing the same fields Numba's marshalling would, with
the per-launch checks that keep its Numba type (and any stream handshake
Numba does for it) unchanged; until then ``Unsupported`` keeps it on
Numba's path.
"""

from __future__ import annotations

import ctypes
import struct
from typing import Any, Sequence

import numpy as np

from numba.cuda import types

from . import _numba_internals as _nb
from .interop import as_stream

#: remembered launch keys per kernel (then forgotten all at once)
TABLE_MAX = 1024
#: prepared launchers per key (argument classes alike, Numba types not)
BUCKET_MAX = 8
#: the attribute of a kernel (dispatcher or compiled kernel) holding its table
TABLE_ATTR = "_asynccopy_prepared"
#: the attribute of a kernel holding ``(claim, go)`` of the launcher that
#: launched it last (tried before the table: a loop launches alike)
LAST_ATTR = "_asynccopy_last"

#: a key whose arguments the fast path does not read: always Numba's marshalling
SLOW: tuple = ()

_NUMBA_STREAM = _nb.numba_stream_class()
_tls = _nb._tls  # numba-cuda's thread-local (its attached context)
# the overloads are an OrderedDict, whose own values() looks every key up
# again (hashing Numba types in Python); dict's walks the entries, and
# ``in`` compares by identity first (a compiled kernel has no __eq__)
_dict_values = dict.values
_ARRAY_CLASSES = _nb.device_array_classes()


def stream_handle(stream: Any) -> int:
    """The driver handle of ``stream`` as Numba's launch resolves it
    (``0`` or a falsy value: the default stream, handle 0; a Numba stream:
    its handle; anything else through numba-cuda's own conversion, which
    raises its ``TypeError`` for what it does not accept).

    The one place a launch's stream is interpreted: swap this function to
    accept more stream kinds.

    Example::

        stream_handle(0)              # 0
        stream_handle(cuda.stream())  # the stream's CUstream, as an int
    """
    if not stream:
        return 0
    if stream.__class__ is _NUMBA_STREAM:
        return int(stream.handle)
    stream = as_stream(stream)  # torch, cuda.core, __cuda_stream__, raw handles
    if not stream:
        return 0
    if stream.__class__ is _NUMBA_STREAM:
        return int(stream.handle)
    return int(_nb.core_stream(stream).handle)


# --- scalar classes whose Numba type the class alone decides ----------------------------------


def _fixed_scalar(cls: type) -> bool:
    """Python int/float/complex/bool and numpy's numeric scalars: Numba
    types these by class (``int`` is always int64 on 64-bit hosts); a
    ``datetime64``'s type depends on its unit, so it is not one of them."""
    if cls in (int, float, complex, bool):
        return True
    return (isinstance(cls, type) and issubclass(cls, (np.number, np.bool_))
            and cls.__module__ == "numpy")


# --- a device array's parameters ---------------------------------------------------------------

#: the attribute of a Numba device array that keeps :func:`array_param`
ARRAY_ATTR = "_asynccopy_param_"
_INTP = struct.Struct("<q")


def array_param(arr: Any) -> tuple:
    """``(Numba type, parameter bytes)`` of a numba-cuda ``DeviceNDArray``:
    its ``_numba_type_`` and the kernel-parameter fields Numba's marshalling
    writes for it (``meminfo=0, parent=0, nitems, itemsize, data,
    shape..., strides...``, each an ``intptr_t``, read from its
    ``_strided_memory_view_shim``), or None for the bytes where the shim
    has no pointer (an empty array: Numba's path decides).

    Both are ``functools.cached_property`` values of the array (numba-cuda
    computes each once per array object, and its own launches read those
    cached values), so what is derived from them is kept on the array too
    (:data:`ARRAY_ATTR`): a prepared launch reads one attribute per array.
    The Numba type is still compared every launch."""
    ty = arr._numba_type_
    m = arr._strided_memory_view_shim
    ptr = m.ptr
    data = None
    if ptr is not None:
        shape = m.shape
        strides = m._layout.strides_in_bytes if shape else ()
        data = struct.pack(f"<{5 + len(shape) + len(strides)}q", 0, 0, m.size,
                           m.dtype.itemsize, ptr, *shape, *strides)
    entry = (ty, data)
    arr.__dict__[ARRAY_ATTR] = entry
    return entry


# --- the generated parameter writer -----------------------------------------------------------


class Unsupported(Exception):
    """An argument the fast path leaves to Numba's marshalling."""


class _Writer:
    """Builds the source of ``go(args, stream)`` for one kernel signature
    and one set of argument classes; every parameter is one 8-byte slot."""

    def __init__(self) -> None:
        self.checks: list[str] = []
        self.fmt: list[str] = []
        self.packed: list[str] = []
        self.scalars: list[str] = []
        self.ctypes: dict[int, type] = {}  # slot index -> ctypes class written through
        self.consts: dict[str, Any] = {}
        self.slots = 0
        self._names = 0

    def name(self, prefix: str) -> str:
        self._names += 1
        return f"{prefix}{self._names}"

    def const(self, value: Any) -> str:
        name = self.name("K")
        self.consts[name] = value
        return name

    def zero(self) -> None:
        self.fmt.append("8x")  # struct writes zero bytes
        self.slots += 1

    def intp(self, expr: str) -> None:
        self.fmt.append("q")
        self.packed.append(expr)
        self.slots += 1

    def through(self, ctype: type, expr: str) -> None:
        """A slot written as ``ctype(value)`` writes it (pack leaves it zero first)."""
        self.fmt.append("8x")
        self.ctypes[self.slots] = ctype
        self.scalars.append(f"S{self.slots}.value = {expr}")
        self.slots += 1

    # one kernel parameter: numba type ``ty``, Python expression ``v`` whose
    # value (at the first launch) was ``sample``
    def param(self, ty: Any, v: str, sample: Any, nested: bool) -> None:
        cls = sample.__class__
        if nested:  # a tuple element: the key did not fix its class
            self.checks.append(f"if {v}.__class__ is not {self.const(cls)}: return False")
        if isinstance(ty, types.Array):
            self.array(ty, v, sample)
        elif isinstance(ty, types.Record):
            self.record(v, sample)
        elif isinstance(ty, types.BaseTuple):
            self.tuple(ty, v, sample)
        elif isinstance(ty, (types.NPDatetime, types.NPTimedelta, types.EnumMember, types.CPointer)):
            raise Unsupported(f"{ty} parameters")
        elif not _fixed_scalar(cls):
            raise Unsupported(f"a {cls.__name__} value for a {ty} parameter")
        elif isinstance(ty, types.Integer):
            self.through(getattr(ctypes, f"c_{ty}"), v)
        elif ty == types.float16:
            self.through(ctypes.c_uint16, f"_f16({v}).view(_u16)")
        elif ty == types.float32:
            self.through(ctypes.c_float, v)
        elif ty == types.float64:
            self.through(ctypes.c_double, v)
        elif ty == types.complex64:
            self.through(ctypes.c_float, f"{v}.real")
            self.through(ctypes.c_float, f"{v}.imag")
        elif ty == types.complex128:
            self.through(ctypes.c_double, f"{v}.real")
            self.through(ctypes.c_double, f"{v}.imag")
        elif ty == types.boolean:
            # Numba passes the value itself; cuda.core makes a Python bool an
            # intptr_t and a numpy bool a C bool (other classes: Numba's path)
            if cls is bool:
                self.through(ctypes.c_int64, v)
            elif cls is np.bool_:
                self.through(ctypes.c_bool, v)
            else:
                raise Unsupported(f"a {cls.__name__} value for a boolean parameter")
        else:
            raise Unsupported(f"{ty} parameters")

    def array(self, ty: Any, v: str, sample: Any) -> None:
        if _ARRAY_CLASSES is None or sample.__class__ is not _ARRAY_CLASSES[0]:
            raise Unsupported(f"{sample.__class__.__name__} arrays")
        if sample.ndim != ty.ndim:  # Numba converted it anyway: its marshalling decides
            raise Unsupported(f"a {sample.ndim}-d array for a {ty.ndim}-d parameter")
        t, d = self.name("t"), self.name("d")
        # the argument's Numba type (what dispatch saw); its bytes kept for the next launch
        want = self.const(array_param(sample)[0])
        self.checks += [
            # the array's (Numba type, parameter bytes), kept on the array (array_param)
            "try:",
            f"    {t}, {d} = {v}.{ARRAY_ATTR}",
            "except AttributeError:",
            f"    {t}, {d} = _array_param({v})",
            f"if {t} is not {want} and {t} != {want}: return False",
            f"if {d} is None: return False",  # no pointer (an empty array): Numba's path decides
        ]
        # meminfo, parent, nitems, itemsize, data, shape..., strides...: one
        # copy of the array's bytes (its Numba type fixes their length)
        n = 5 + 2 * ty.ndim
        self.fmt.append(f"{8 * n}s")
        self.packed.append(d)
        self.slots += n

    def record(self, v: str, sample: Any) -> None:
        if _ARRAY_CLASSES is None or sample.__class__ is not _ARRAY_CLASSES[1]:
            raise Unsupported(f"{sample.__class__.__name__} records (Numba copies host records)")
        d, m, p = self.name("d"), self.name("m"), self.name("p")
        want = self.const(sample.dtype)
        self.checks += [
            f"{d} = {v}.dtype",
            f"if {d} is not {want} and {d} != {want}: return False",
            f"{m} = {v}._strided_memory_view_shim",
            f"{p} = {m}.ptr",
            f"if {p} is None: return False",
        ]
        self.intp(p)

    def tuple(self, ty: Any, v: str, sample: Any) -> None:
        cls = sample.__class__
        if not (cls is tuple or (issubclass(cls, tuple) and hasattr(cls, "_fields"))):
            raise Unsupported(f"{cls.__name__} values for a tuple parameter")
        n = len(sample)
        if len(ty) != n:
            raise Unsupported("a tuple whose length differs from its parameter's")
        self.checks.append(f"if len({v}) != {n}: return False")
        names = [self.name("e") for _ in range(n)]
        if n:
            self.checks.append(f"{', '.join(names)}, = {v}")
        for t, e, s in zip(ty, names, sample):
            self.param(t, e, s, nested=True)

    def source(self, classes: Sequence[str], watch_overloads: bool, count_overloads: bool) -> str:
        """``go(args, stream)``: the whole prepared launch in one function,
        every check first (the argument classes, the arrays' Numba types,
        Numba's pre-launch callbacks, the CUDA context, the dispatcher's
        overloads), then a parameter block filled and launched; False
        (nothing launched) as soon as a check fails.  One function, its
        constants bound as closure variables: every call and attribute
        look-up saved is host time of each launch."""
        nargs = len(classes)
        body = [f"if len(args) != {nargs}: return False"]
        if nargs:
            body.append(f"{', '.join(f'a{i}' for i in range(nargs))}, = args")
            # the classes ac.launch's key holds (its last launch's entry does not build the key)
            body.append("if " + " or ".join(f"a{i}.__class__ is not {c}" for i, c in enumerate(classes))
                        + ": return False")
        body += self.checks
        body += [
            "if _callbacks: return False",  # Numba runs them: its path
            "handle = _stream_handle(stream) if stream else 0",
            # _nb.current_context_handle(), one call less
            "try:",
            "    ctx = _tls.attached_context",
            "except AttributeError:",
            "    ctx = None",
            "if (int(ctx.handle) if ctx is not None else _nb.driver_context_handle()) != _CTX:",
            "    return False",
        ]
        if watch_overloads:  # see Prepared.current
            cond = "_kernel not in _values(_ov)"
            if count_overloads:
                cond += " or len(_ov) != _NOV"
            body.append(f"if {cond}: return False")
        body += [
            "try:",
            "    block = _pool.pop()",
            "except IndexError:",
            "    block = _new_block()",
            "try:",
        ]
        inner = []
        if self.ctypes:
            inner.append(f"{''.join(f'S{i}, ' for i in sorted(self.ctypes))}= block.views")
        if self.fmt:
            inner.append(f"_pack(block.raw, 0{''.join(', ' + x for x in self.packed)})")
        inner += self.scalars
        inner += [
            "cfg = _cfgs.get(handle)",  # (address, CUlaunchConfig): held while launching
            "if cfg is None:",
            "    cfg = _config(handle)",
            "rc = _nb.launch_ex(cfg[0], _func, block.addr, None)",
        ]
        body += ["    " + x for x in inner]
        body += [
            "finally:",
            "    _pool.append(block)",
            "if rc:",
            "    _nb.launch_failed(rc)",
            "return True",
        ]
        code = "\n        ".join(body)
        return ("def _factory(_pack, _pool, _new_block, _cfgs, _config, _callbacks, _CTX, _ov,\n"
                "             _kernel, _NOV, _func):\n"
                "    def go(args, stream):\n"
                f"        {code}\n"
                "    return go\n")


class _Block:
    """One parameter block: ``nslots`` 8-byte slots (``raw``), the array of
    pointers to them (``addr``, what the driver reads) and the ctypes views
    of the slots written through ctypes (``views``, in slot order)."""

    __slots__ = ("raw", "ptrs", "addr", "views")

    def __init__(self, nslots: int, ctypes_at: dict[int, type]):
        self.raw = (ctypes.c_uint64 * max(nslots, 1))()
        base = ctypes.addressof(self.raw)
        self.ptrs = (ctypes.c_void_p * max(nslots, 1))(*(base + 8 * i for i in range(nslots)))
        self.addr = ctypes.addressof(self.ptrs) if nslots else 0
        self.views = tuple(ctypes_at[i].from_buffer(self.raw, 8 * i) for i in sorted(ctypes_at))


class Prepared:
    """A launcher for one kernel, launch shape, argument signature and
    CUDA context (see the module docstring)."""

    __slots__ = ("kernel", "func", "grid", "block", "shared_mem", "cluster", "ctx", "overloads",
                 "n_overloads", "callbacks", "configs", "pool", "nslots", "_ctypes", "source", "go")

    def __init__(self, target: Any, kernel: Any, func: Any, grid: tuple, block: tuple,
                 shared_mem: int, cluster: tuple | None, ctx: int, callbacks: list,
                 args: Sequence[Any]):
        overloads = None if _nb.is_kernel(target) else target.overloads
        w = _Writer()
        for i, (ty, value) in enumerate(zip(kernel.argument_types, args)):
            w.param(ty, f"a{i}", value, nested=False)
        self._ctypes = w.ctypes
        self.nslots = w.slots
        self.kernel, self.func, self.ctx = kernel, func, ctx
        self.grid, self.block, self.shared_mem, self.cluster = grid, block, shared_mem, cluster
        self.overloads = overloads
        # a dispatcher that compiles on demand picks the exact match: while
        # this kernel is still one of its overloads (recompile() replaces
        # them), Numba picks it again.  One compiled for given signatures
        # may convert arguments: a new overload can change its choice.
        self.n_overloads = (len(overloads) if overloads is not None
                            and not _nb.can_compile(target) else -1)
        self.callbacks = callbacks
        #: stream handle -> ``_nb.launch_config`` pair (address, CUlaunchConfig)
        self.configs: dict[int, tuple] = {}
        self.pool = [self.new_block()]
        classes = [w.const(a.__class__) for a in args]
        self.source = w.source(classes, overloads is not None, self.n_overloads >= 0)
        namespace = {"_f16": np.float16, "_u16": np.uint16, "_array_param": array_param,
                     "_nb": _nb, "_stream_handle": stream_handle, "_tls": _tls,
                     "_values": _dict_values, **w.consts}
        exec(compile(self.source, f"<ac.launch of {kernel.entry_name}>", "exec"), namespace)
        #: ``go(args, stream) -> bool``: the launch, or False when a check fails
        self.go = namespace["_factory"](
            struct.Struct("<" + "".join(w.fmt)).pack_into, self.pool, self.new_block,
            self.configs, self.config, callbacks, ctx, overloads, kernel, self.n_overloads, func)

    def current(self) -> bool:
        """Whether Numba's dispatch would still pick this launcher's kernel."""
        ov = self.overloads
        return ov is None or (self.kernel in _dict_values(ov)
                              and (self.n_overloads < 0 or len(ov) == self.n_overloads))

    def new_block(self) -> _Block:
        # one block per launch in flight: another thread may fill one while
        # the driver copies from this one (it releases the GIL)
        return _Block(self.nslots, self._ctypes)

    def config(self, handle: int) -> Any:
        cfg = self.configs.get(handle)
        if cfg is None:
            if len(self.configs) >= TABLE_MAX:
                self.configs.clear()
            cfg = self.configs[handle] = _nb.launch_config(self.grid, self.block, self.shared_mem,
                                                           self.cluster, handle)
        return cfg


def run(bucket: Sequence[Prepared], args: tuple, stream: Any) -> Prepared | None:
    """Launch through the first launcher of ``bucket`` that fits ``args``
    here and now and return it; None when none does (then Numba's path
    launches)."""
    for p in bucket:
        if p.go(args, stream):
            return p
    return None


def table(target: Any) -> dict:
    """The launch table of ``target`` (a dispatcher or compiled kernel)."""
    t = target.__dict__.get(TABLE_ATTR)
    if t is None:
        t = target.__dict__[TABLE_ATTR] = {}
    return t


def forget(target: Any) -> None:
    """Drop every prepared launcher of ``target``: its next launch of each
    shape goes through Numba's path again.

    Example::

        forget(kernel)   # e.g. in a test that wants a kernel's first launch
    """
    target.__dict__.pop(TABLE_ATTR, None)
    target.__dict__.pop(LAST_ATTR, None)


def remember(target: Any, key: tuple, kernel: Any, cufunc: Any, claim: Any,
             cluster: tuple | None, args: tuple, callbacks: list | None,
             configs: dict) -> Prepared | None:
    """After a successful launch through Numba's path: prepare a launcher
    for ``key`` (``(claim, *argument classes)``), or mark the key as one
    the fast path leaves to Numba.  ``target`` is what ``ac.launch`` got:
    a dispatcher (its overloads are watched, see :meth:`Prepared.current`)
    or a compiled kernel."""
    t = table(target)
    bucket = t.get(key)
    if bucket is not None and not bucket:  # SLOW
        return None
    bucket = tuple(p for p in bucket or () if p.current())  # drop stale launchers
    if len(bucket) >= BUCKET_MAX:
        return None
    if callbacks:  # Numba runs them before each launch of this configuration
        return None
    if _nb.kernel_extensions(kernel) or _nb.launch_config_sensitive(
            None if _nb.is_kernel(target) else target, kernel):
        t[key] = SLOW  # Numba runs per-launch code of its own for these
        return None
    try:
        p = Prepared(target, kernel, _nb.launch_handle(kernel, cufunc), claim.grid, claim.block,
                     claim.shared_mem, cluster, _nb.current_context_handle(),
                     callbacks if callbacks is not None else [], args)
    except Unsupported:
        t[key] = SLOW
        return None
    p.configs.update(configs)  # the driver configuration the first launch used
    if len(t) >= TABLE_MAX:
        t.clear()
    t[key] = (*bucket, p)
    target.__dict__[LAST_ATTR] = (key[0], p.go)  # the next launch tries it first
    return p
