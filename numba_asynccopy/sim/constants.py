"""Run-time values where the GPU needs a compile-time constant.

The simulator sees Python values, not Numba types: ``chunk_bytes=16`` and a
``chunk_bytes`` read from an array are both the int 16 to it, so every value
gets the compile-time checks (:func:`.args.validate`).  A GPU compile
refuses the second one (the PTX operand is an immediate).  To refuse it
too, with the compile-time error's words, this module reads the kernel's
source at the call: an argument that depends on a kernel parameter, an
array element, ``cuda.threadIdx``/``blockIdx``/..., a function call, a loop
variable, a variable assigned more than once, or arithmetic on a name
(``COLS * 4``: Numba folds no arithmetic; only what CPython folds itself,
``4 * 4``, stays a literal) is a run-time value (Numba types it so), and the device intrinsic's typing is run again with that
argument's run-time type.  An error it raises that asks for a constant is
the error the GPU compile would raise.

A tuple is typed entry by entry, as Numba types it: ``(0, -1)``, ``(tid,
-1)`` and a module constant ``(0, -1)`` all hold a literal -1, which the
compile-time checks refuse; in ``(0, n - 1)`` the entry is a run-time int64.
A kernel parameter is typed as the dispatcher types its value
(``bf16_to_f32(n)`` with ``n`` an int32 is refused as the GPU compile
refuses it).

The same reading serves the other direction: a value the compile-time
check refuses (``count=0``) that is a run-time value at the call compiles
on the GPU, where checked mode traps on it; the simulator then raises a
``SimulatorError`` in the trap's words instead of the typing error.

Where the source cannot be read (kernels built by ``exec`` without a
``linecache`` entry) or the call is not found on its line, nothing changes:
the analysis only ever refuses what the GPU compile refuses.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import textwrap
import threading
from typing import Any

import numpy as np
from numba.core import types

from .. import _compat
from .._rules import compile_time_constant
from ._mirror import device_function, user_signature
from .errors import in_sim, violation
from .numba_types import numba_type

# code object -> (function AST, run-time local names) or None (no source)
_functions: dict = {}
# (intrinsic id, the arguments' types) -> the typing error, or None
_verdicts: dict = {}


def kernel_frame():
    """The frame of the kernel (or device function) code that made the call."""
    f = sys._getframe(2)
    while f is not None:
        if not in_sim(f.f_code):
            return f
        f = f.f_back
    return None


# a simulated block's threads reach a call together: CPython 3.11's ast.parse
# is not safe to run in two threads at once (its recursion-depth bookkeeping)
_parse_lock = threading.Lock()
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _function(code) -> tuple | None:
    with _parse_lock:
        return _function_locked(code)


def _function_locked(code) -> tuple | None:
    if code in _functions:
        return _functions[code]
    found = None
    try:
        src = textwrap.dedent(inspect.getsource(code))
        tree = ast.parse(src)
        fn = next(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        # line 1 of the source read is co_firstlineno (a decorator line, if any)
        params = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
        found = (fn, code.co_firstlineno - 1, (_runtime_locals(fn), _bound_once(fn), params))
        _calls[id(fn)] = (fn, _call_index(fn))
    except (OSError, TypeError, SyntaxError, StopIteration):
        found = None
    _functions[code] = found
    return found


def _bound_once(fn: ast.FunctionDef) -> dict:
    """{name: its value's expression} of the names ``fn`` assigns once, by a
    plain ``name = value``."""
    seen: dict = {}
    for node in ast.walk(fn):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.comprehension,
                             ast.NamedExpr, ast.withitem)):
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [getattr(node, "target", None) or getattr(node, "optional_vars", None)])
            for t in targets:
                for n in (x for x in ast.walk(t) if t is not None and isinstance(x, ast.Name)
                          and isinstance(x.ctx, ast.Store)):
                    one = isinstance(node, ast.Assign) and len(node.targets) == 1 and t is n
                    seen.setdefault(n.id, []).append(node.value if one else None)
    return {n: v[0] for n, v in seen.items() if len(v) == 1 and v[0] is not None}


def _runtime_locals(fn: ast.FunctionDef) -> set[str]:
    """Names of ``fn`` that Numba types as run-time values."""
    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
    assigned: dict[str, list] = {}
    runtime = set(params)
    for node in ast.walk(fn):
        targets: list = []
        value = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets, value = [node.target], node.value
        elif isinstance(node, (ast.For, ast.comprehension)):
            targets, value = [node.target], None  # a loop variable changes: run time
        elif isinstance(node, ast.NamedExpr):
            targets, value = [node.target], node.value
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets, value = [node.optional_vars], None
        for t in targets:
            # the names bound (x in `x = ...`, `a, x = ...`), not those read (`c` in `a[c] = ...`)
            for name in (n.id for n in ast.walk(t)
                         if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)):
                assigned.setdefault(name, []).append(value)
                if value is None or isinstance(node, ast.AugAssign):
                    runtime.add(name)
    runtime |= {n for n, values in assigned.items() if len(values) > 1}
    changed = True
    while changed:
        changed = False
        for name, values in assigned.items():
            if name not in runtime and any(_is_runtime(v, runtime) for v in values):
                runtime.add(name)
                changed = True
    return runtime


def _folded(n) -> bool:
    """CPython folds this expression into one constant before Numba sees it
    (``4 * 4``, ``-16``, ``(1, 2)``): arithmetic on literals only."""
    if isinstance(n, ast.Constant):
        return True
    if isinstance(n, ast.BinOp):
        return _folded(n.left) and _folded(n.right)
    if isinstance(n, ast.UnaryOp):
        return _folded(n.operand)
    if isinstance(n, ast.Tuple):
        return all(_folded(e) for e in n.elts)
    return False


def _is_runtime(expr, runtime: set[str]) -> bool:
    for n in ast.walk(expr):
        if isinstance(n, ast.Name) and n.id in runtime:
            return True
        if isinstance(n, (ast.BinOp, ast.UnaryOp)) and not _folded(n):
            return True  # Numba folds no arithmetic: `COLS * 4` is a run-time int64
        if isinstance(n, (ast.Subscript, ast.Call)):
            return True
        if isinstance(n, ast.Attribute):
            root = n
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id == "cuda":
                return True  # cuda.threadIdx.x, cuda.blockDim.x, ...
    return False


# id(function AST) -> (the AST, {called name: [its calls]}): one walk of a
# function, not one a call site (a block's threads reach a new site together)
_calls: dict = {}


def _call_index(fn: ast.FunctionDef) -> dict:
    """{name: [the calls of ``fn`` to a function or attribute of that name]}."""
    index: dict = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Call):
            for name in {getattr(n.func, "attr", None), getattr(n.func, "id", None)} - {None}:
                index.setdefault(name, []).append(n)
    return index


def _call_at(fn: ast.FunctionDef, line: int, api: str) -> ast.Call | None:
    hit = _calls.get(id(fn))
    if hit is None or hit[0] is not fn:
        hit = _calls[id(fn)] = (fn, _call_index(fn))
    hits = [n for n in hit[1].get(api, ()) if n.lineno <= line <= (n.end_lineno or n.lineno)]
    return hits[0] if len(hits) == 1 else None


def _runtime_type(value: Any) -> types.Type | None:
    if isinstance(value, (bool,)):
        return types.boolean
    if isinstance(value, int):
        return types.int64
    if type(value) is tuple:  # a run-time tuple (a kernel parameter): UniTuple(int64, n)
        from numba import typeof

        try:
            return typeof(value)
        except (ValueError, TypeError):
            return None
    if hasattr(value, "dtype") and getattr(value, "shape", None) == ():
        from numba import typeof

        return typeof(value)
    return None


_signatures: dict = {}  # intrinsic id -> its parameters' names, in order


def _params(intrinsic: Any) -> list[str]:
    names = _signatures.get(id(intrinsic))
    if names is None:
        names = _signatures[id(intrinsic)] = list(user_signature(intrinsic).parameters)
    return names


_sites: dict = {}  # (intrinsic id, id(code), lasti) -> (code, the run-time arguments, context)
_DIM3 = ("threadIdx", "blockIdx", "blockDim", "gridDim")


def _site_call(intrinsic: Any, f) -> tuple:
    """(the intrinsic's call at frame ``f``'s line, the function's context for
    :func:`_typed`), the call None where the source cannot be read, the call
    is not found on its line or it spreads its arguments (``*a``, ``**k``)."""
    fn = _function(f.f_code)
    if fn is None:
        return None, None
    tree, offset, ctx = fn
    call = _call_at(tree, f.f_lineno - offset, device_function(intrinsic).__name__)
    if call is None or any(isinstance(a, ast.Starred) for a in call.args) \
            or any(k.arg is None for k in call.keywords):
        return None, ctx
    return call, ctx


def _runtime_params(intrinsic: Any, f) -> tuple:
    """((name, expression) of each argument of the call that is a run-time
    value, or holds one), and what :func:`_typed` reads."""
    key = (id(intrinsic), id(f.f_code), f.f_lasti)
    hit = _sites.get(key)
    if hit is not None and hit[0] is f.f_code:
        return hit[1], hit[2]
    names = ()
    call, ctx = _site_call(intrinsic, f)
    if call is not None:
        exprs = dict(zip(_params(intrinsic), call.args))
        exprs.update({k.arg: k.value for k in call.keywords})
        names = tuple((n, e) for n, e in exprs.items() if _is_runtime(e, ctx[0]))
    _sites[key] = (f.f_code, names, ctx)
    return names, ctx


def _typed(expr, value: Any, ctx: tuple, depth: int = 0) -> tuple:
    """(the Numba type of argument ``expr`` at the call, whose value is
    ``value``; whether that type is Numba's exactly).  A constant is its
    literal type; a tuple is typed entry by entry, as Numba types it
    (``(tid, -1)``: a run-time entry and a literal -1); a name bound once
    is its value's expression.  Exact: a kernel parameter (typed as the
    dispatcher typed its value), an element read from an array (its
    dtype), ``cuda.threadIdx.x`` and the like (int32); other run-time
    arithmetic's type is a guess from the Python value."""
    runtime, single, params = ctx
    if isinstance(expr, ast.Name) and expr.id in runtime and expr.id in single \
            and expr.id not in params and depth < 8:
        return _typed(single[expr.id], value, ctx, depth + 1)
    if isinstance(expr, ast.Tuple) and type(value) is tuple and len(expr.elts) == len(value):
        parts = [_typed(e, v, ctx, depth + 1) for e, v in zip(expr.elts, value)]
        if any(t is None for t, _ in parts):
            return None, False
        return types.BaseTuple.from_types([t for t, _ in parts]), all(x for _, x in parts)
    if not _is_runtime(expr, runtime):
        return numba_type(value), True
    if isinstance(expr, ast.Attribute) and expr.attr in "xyz" and isinstance(expr.value, ast.Attribute) \
            and expr.value.attr in _DIM3 and isinstance(expr.value.value, ast.Name) \
            and expr.value.value.id == "cuda" and isinstance(value, int):
        return types.int32, True
    rt = _runtime_type(value)
    exact = (isinstance(expr, ast.Name) and expr.id in params) or (
        isinstance(expr, ast.Subscript) and isinstance(value, np.generic))
    return rt, exact and rt is not None


def _spec(expr, ctx: tuple, depth: int = 0):
    """How Numba types argument ``expr`` at the call, as :func:`_typed` reads
    it, without the value: "c" (a constant: its literal type), "i32"
    (``cuda.threadIdx.x`` and the like), "r" (another run-time value: its
    run-time type), or ("t", entries) for a tuple display."""
    runtime, single, params = ctx
    if isinstance(expr, ast.Name) and expr.id in runtime and expr.id in single \
            and expr.id not in params and depth < 8:
        return _spec(single[expr.id], ctx, depth + 1)
    if isinstance(expr, ast.Tuple):
        return ("t", tuple(_spec(e, ctx, depth + 1) for e in expr.elts))
    if not _is_runtime(expr, runtime):
        return "c"
    if isinstance(expr, ast.Attribute) and expr.attr in "xyz" and isinstance(expr.value, ast.Attribute) \
            and expr.value.attr in _DIM3 and isinstance(expr.value.value, ast.Name) \
            and expr.value.value.id == "cuda":
        return "i32"
    return "r"


# _type_key of the common scalars, by type: Python's have no dtype, a NumPy
# numeric scalar's dtype is its type's (an MMA fragment: a tuple of 64 of them)
_PLAIN_TYPE_KEYS: dict = {t: (t, None) for t in (int, bool, float)}
_PLAIN_TYPE_KEYS.update({t: (t, np.dtype(t)) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128)})


def _type_key(value: Any):
    """What a run-time value's type depends on (not the value itself)."""
    hit = _PLAIN_TYPE_KEYS.get(type(value))
    if hit is not None:
        return hit
    if type(value) is tuple:
        get = _PLAIN_TYPE_KEYS.get
        return ("t", tuple([get(type(e)) or _type_key(e) for e in value]))
    if isinstance(value, np.ndarray):
        return ("a", value.dtype, value.ndim, value.flags.c_contiguous, value.flags.f_contiguous)
    return (type(value), getattr(value, "dtype", None))


def _spec_key(spec, value: Any):
    """A hashable key of what ``_spec_type(spec, value)`` depends on (the
    constants' values, the run-time values' types); None where unsure."""
    if spec == "c":
        if type(value) is not int:  # an int hashes
            try:
                hash(value)
            except TypeError:
                return None
        return ("c", type(value), value)
    if spec == "r" or spec == "i32":
        return (spec, _type_key(value))
    if type(value) is not tuple or len(value) != len(spec[1]):
        return None
    parts = tuple([_spec_key(p, v) for p, v in zip(spec[1], value)])
    return None if None in parts else ("t", parts)


def spec_type(spec, value: Any) -> types.Type | None:
    """The Numba type of ``value`` at a call whose argument is read as ``spec``
    (:func:`tuple_types`)."""
    if spec == "c":
        return numba_type(value)
    if spec == "i32" and isinstance(value, int) and not isinstance(value, bool):
        return types.int32
    if spec in ("r", "i32"):
        return _runtime_type(value)
    parts = [spec_type(p, v) for p, v in zip(spec[1], value)]
    return None if None in parts else types.BaseTuple.from_types(parts)


_tuple_sites: dict = {}  # (intrinsic id, id(code), lasti) -> (code, {position or keyword: spec})


def tuple_types(intrinsic: Any, args: tuple, kwargs: dict, f: Any = None) -> dict | None:
    """The Numba types of the call's tuple arguments as the GPU compile types
    them, read from the kernel's source at the call: a constant entry is its
    literal type (``(0, -8)``: a literal -8, which the compile-time checks
    refuse), a run-time entry its run-time type (``(0, n - 16)``: an int64,
    which the twin checks as checked mode does; a tuple kernel parameter:
    ``UniTuple(int64, n)``).  Returns ``{position or keyword: (key, how)}``,
    the key being what the type depends on (the same at every call of a site
    whose run-time entries keep their types, so the typing runs once a site,
    not once a coordinate) and ``spec_type(how, value)`` the type, or None
    where the source cannot be read (``f``: the kernel's frame, if known)."""
    f = f or kernel_frame()
    if f is None:
        return None
    skey = (id(intrinsic), id(f.f_code), f.f_lasti)
    hit = _tuple_sites.get(skey)
    if hit is None or hit[0] is not f.f_code:
        specs = None
        call, ctx = _site_call(intrinsic, f)
        if call is not None:
            specs = {i: _spec(e, ctx) for i, e in enumerate(call.args)}
            specs.update({k.arg: _spec(k.value, ctx) for k in call.keywords})
        hit = _tuple_sites[skey] = (f.f_code, specs)
    specs = hit[1]
    if specs is None:
        return None
    found = {}
    for where, value in [*enumerate(args), *kwargs.items()]:
        if type(value) is tuple and where in specs:
            k = _spec_key(specs[where], value)
            if k is not None:
                found[where] = (k, specs[where])
    return found


def _retyped(intrinsic: Any, targs: tuple, tkw: dict, args: tuple, kwargs: dict, f,
             typed: frozenset = frozenset()) -> tuple:
    """(arguments' types, keywords' types, [(name, type, exact)] of those
    changed): the call's run-time arguments typed as Numba types them
    (``typed``: the positions and keywords :func:`tuple_types` typed so already)."""
    sites, ctx = _runtime_params(intrinsic, f)
    new_args, new_kw, changed = list(targs), dict(tkw), []
    if not sites:
        return new_args, new_kw, changed
    pos = _positions(intrinsic)
    for name, expr in sites:
        i = pos.get(name, len(targs))
        if (i if i < len(targs) else name) in typed:
            continue
        if i < len(targs):
            value, cur = args[i], targs[i]
        elif name in new_kw:
            value, cur = kwargs.get(name), new_kw[name]
        else:
            continue
        rt, exact = _typed(expr, value, ctx)
        if rt is None or rt == cur:
            continue
        if i < len(targs):
            new_args[i] = rt
        else:
            new_kw[name] = rt
        changed.append((name, str(rt), exact))
    return new_args, new_kw, changed


def _type_at_run_time(intrinsic: Any, targs: list, tkw: dict) -> None:
    """The device typing with some arguments' run-time types.  The typing
    remembers a failed literal typing so that numba's non-literal retry of
    the same call re-raises it (a rejected constant never passes as a
    run-time value); this is another call, so that memory is cleared first."""
    _compat._literal_failures.pop(id(intrinsic._defn), None)
    intrinsic._defn(None, *targs, **tkw)


#: returned by :func:`runtime_value_violation`: let the twin check the value
PROCEED = object()
_RANK_NAMES = ("cta_rank", "rank", "remote_cta_id")


def runtime_value_violation(intrinsic: Any, targs: tuple, tkw: dict, args: tuple, kwargs: dict,
                            err: Exception) -> Exception | None:
    """The typing (on literal types) refused a value.  When that value is a
    run-time one at the kernel's call (the typing passes with its run-time
    type), the GPU compiles the call and checked mode traps on it: return
    the simulator's ``SimulatorError`` in the trap's words instead (None:
    the GPU compile refuses it too, keep the typing error)."""
    f = kernel_frame()
    if f is None:
        return None
    new_args, new_kw, changed = _retyped(intrinsic, targs, tkw, args, kwargs, f)
    if not changed:
        return None
    try:
        _type_at_run_time(intrinsic, new_args, new_kw)
    except Exception as e:
        # refused with run-time types too: a compile-time error on the GPU, and
        # where it asks for a constant, or the types are Numba's exactly, that
        # is the error the GPU reports
        exact = all(x for _, _, x in changed)
        return type(e)(str(e)) if exact or getattr(e, "rule", None) is compile_time_constant \
            else None
    if all(n in _RANK_NAMES for n, _, _ in changed):
        # a run-time rank: the twin checks it against *this* cluster, in
        # checked mode's words (the constant rule, 0..15, is the compiler's)
        return PROCEED
    api = device_function(intrinsic).__name__
    # Numba highlights its errors with ANSI codes where colorama is installed
    text = _ANSI.sub("", str(err))
    return violation(api, text[len(api) + 2:] if text.startswith(f"{api}: ") else text)


def refuse_runtime_constants(intrinsic: Any, targs: tuple, tkw: dict, args: tuple,
                             kwargs: dict, typed: frozenset = frozenset(), f: Any = None) -> None:
    """Raise the device typing's error when the call's run-time arguments,
    typed as Numba types them, are refused: a "must be a compile-time
    constant" error where the GPU needs a constant, any error where the
    run-time types are Numba's exactly (a kernel parameter: ``bf16_to_f32(n)``
    with ``n`` an int32) (see the module docstring)."""
    f = f or kernel_frame()
    if f is None:
        return
    # the common case, fast: the call's arguments are arrays
    if not any(isinstance(a, _SCALARS) for a in args) and \
            not any(isinstance(v, _SCALARS) for v in kwargs.values()):
        return
    sites, _ = _runtime_params(intrinsic, f)
    if not sites:
        return
    new_args, new_kw, changed = _retyped(intrinsic, targs, tkw, args, kwargs, f, typed)
    if not changed:
        return
    # the verdict is the typing of the retyped call: keyed by those types (a
    # run-time index's value is in targs, as a literal, and not in new_args),
    # it is computed once a site, not once a value
    key = (id(intrinsic), tuple(changed), tuple(map(str, new_args)),
           tuple(sorted(map(str, new_kw.items()))))
    if key not in _verdicts:
        verdict = None
        try:
            _type_at_run_time(intrinsic, new_args, new_kw)
        except Exception as e:  # the device typing's own error
            exact = all(x for _, _, x in changed)
            if exact or getattr(e, "rule", None) is compile_time_constant:
                verdict = e
        _verdicts[key] = verdict
    err = _verdicts[key]
    if err is not None:
        raise type(err)(str(err)) from None


_SCALARS = (bool, int, np.bool_, np.integer, tuple)
_position_cache: dict = {}


def _positions(intrinsic: Any) -> dict[str, int]:
    pos = _position_cache.get(id(intrinsic))
    if pos is None:
        pos = _position_cache[id(intrinsic)] = {n: i for i, n in enumerate(_params(intrinsic))}
    return pos
