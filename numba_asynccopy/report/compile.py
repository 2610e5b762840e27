"""Compiling the kernel for the report: to PTX in this process, or, under
numba-cuda's simulator (no compiler in the process), from its source in
another interpreter with the simulator off; then ptxas for resource usage.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import pickle
import subprocess
import sys
import tempfile
import textwrap
import types as _pytypes
from typing import Any

from .. import checked, toolchain
from .parse import Resources, parse_ptxas


def _pyfunc(kernel: Any):
    for attr in ("py_func", "fn"):  # cuda.jit dispatcher; the simulator's kernel
        f = getattr(kernel, attr, None)
        if isinstance(f, _pytypes.FunctionType):
            return f
    if isinstance(kernel, _pytypes.FunctionType):
        return kernel
    raise TypeError(f"ac.inspect: expected a @cuda.jit kernel or a Python function, "
                    f"got {type(kernel).__name__}")


def _argtype(value: Any):
    import numpy as np
    from numba import typeof
    from numba.core import types

    if isinstance(value, types.Type):
        return value
    try:
        return typeof(value)
    except Exception:
        pass
    cai = getattr(value, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        dt = np.dtype(cai["typestr"])
        strides = cai.get("strides")
        c_strides = np.empty(shape or (1,), dtype=dt).strides if shape else ()
        layout = "C" if strides is None or tuple(strides) == tuple(c_strides) else "A"
        return types.Array(typeof(dt.type(0)), len(shape), layout)
    if hasattr(value, "copy_to_host"):  # the simulator's device arrays
        return typeof(value.copy_to_host())
    raise TypeError(f"ac.inspect: cannot type argument {value!r}; pass a Numba type instead")


def _signature(kernel: Any, args: tuple) -> tuple:
    if len(args) == 1 and isinstance(args[0], (tuple, list)) and all(_is_type(a) for a in args[0]):
        args = tuple(args[0])
    if not args:
        sigs = list(getattr(kernel, "overloads", {}) or {})
        if sigs:
            return tuple(sigs[0])
        raise TypeError("ac.inspect: give the kernel's argument types or example arguments, "
                        "e.g. ac.inspect(kernel, a, b) or ac.inspect(kernel, types.float32[:, ::1], ...)")
    return tuple(_argtype(a) for a in args)


def _is_type(a: Any) -> bool:
    from numba.core import types

    return isinstance(a, types.Type)


def _simulator_on() -> bool:
    from numba.core import config

    return bool(config.ENABLE_CUDASIM)


def supported_ccs() -> list[tuple[int, int]] | None:
    """The compute capabilities the installed CUDA toolkit compiles for
    (numba-cuda silently compiles any other for the nearest of them), or
    None when the toolkit cannot say.  Asked of NVRTC directly: under the
    simulator numba-cuda's own wrapper is not there."""
    try:
        from cuda.bindings import nvrtc

        err, archs = nvrtc.nvrtcGetSupportedArchs()
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return None
    except Exception:  # no NVRTC library: let the compiler decide
        return None
    return [(int(a) // 10, int(a) % 10) for a in archs]


def compile_kernel_ptx(pyfunc, argtypes: tuple, cc: tuple[int, int], fastmath: bool = False) -> str:
    """PTX of ``pyfunc`` as a kernel for ``argtypes`` with line information."""
    if _simulator_on():
        return _compile_elsewhere(pyfunc, argtypes, cc, fastmath)
    from numba import cuda

    ptx, _ = cuda.compile_ptx(pyfunc, argtypes, cc=cc, lineinfo=True, fastmath=fastmath)
    return ptx


def run_ptxas(ptx: str) -> tuple[Resources | None, str | None, str | None]:
    """(resources, ptxas log, why there are no resources) of ``ptx``; a
    missing or failing ptxas is reported, not raised."""
    resources = log = err = None
    try:
        _, log = toolchain.assemble(ptx, verbose=True)
        resources = parse_ptxas(log)
        if resources is None:
            err = "ptxas printed no resource usage"
    except toolchain.ToolMissing as e:
        err = str(e)
    except RuntimeError as e:  # an older ptxas than NVVM, say: report, don't fail
        err = str(e).strip().splitlines()[-1] if str(e).strip() else "ptxas failed"
    return resources, log, err


# --- compiling from source in another interpreter (simulator on) --------------

# One interpreter serves every ``ac.inspect`` of this process while the
# environment and sys.path stay as they were: starting one (importing numba,
# the package and NVVM) costs seconds, a compile in a warm one a fraction.
# A request is a length line and a pickled payload; the answer one JSON line.
_CHILD = r"""
import json, sys
head = sys.stdin.buffer.readline()
sys.path[:0] = [p for p in json.loads(head) if p not in sys.path]
from numba_asynccopy.report.compile import _child_serve
_child_serve()
"""


def _child_serve() -> None:
    """The compile interpreter's loop: a payload in, ``{"ptx"}`` or
    ``{"error"}`` (the exception's type and whole message) out, until stdin
    closes."""
    import re

    inp, out = sys.stdin.buffer, sys.stdout
    sys.stdout = sys.stderr  # what a compile prints must not reach the answers
    while True:
        line = inp.readline()
        if not line:
            return
        payload = pickle.loads(inp.read(int(line)))
        try:
            reply = {"ptx": _child_compile(payload)}
        except Exception as e:
            # Numba colours its messages where colorama is installed
            reply = {"error": re.sub(r"\x1b\[[0-9;]*m", "", f"{type(e).__name__}: {e}").strip()}
        out.write(json.dumps(reply) + "\n")
        out.flush()


_server: dict = {}  # "proc", "key" (the environment and path it started with), "lock"


def _server_lock():
    import threading

    return _server.setdefault("lock", threading.Lock())


def _ask_server(payload: dict) -> dict:
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    path = [p for p in sys.path if p]
    key = (tuple(sorted(env.items())), tuple(path), sys.executable)
    with _server_lock():
        proc = _server.get("proc")
        if proc is None or proc.poll() is not None or _server.get("key") != key:
            if proc is not None and proc.poll() is None:
                proc.stdin.close()
                proc.wait(timeout=30)
            # its warnings go to a file: a pipe nobody reads would fill and stop it
            log = tempfile.TemporaryFile()
            proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=log, env=env)
            proc.stdin.write(json.dumps(path).encode() + b"\n")
            _server.update(proc=proc, key=key, log=log)
        data = pickle.dumps(payload)
        try:
            proc.stdin.write(str(len(data)).encode() + b"\n" + data)
            proc.stdin.flush()
            line = proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = b""
        if line:
            return json.loads(line.decode())
        # the interpreter died (or never started): its own last words
        _server.pop("proc", None)
        try:
            proc.stdin.close()
        except OSError:
            pass
        code = proc.wait(timeout=30)
        log = _server.pop("log")
        log.seek(0)
        err = log.read().decode(errors="replace").strip()
        log.close()
        return {"error": err.splitlines()[-1] if err else f"exit status {code}"}


def _portable(fn) -> dict:
    """The source, globals and closure of ``fn``, to rebuild it elsewhere."""
    try:
        src_lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise RuntimeError(
            f"ac.inspect: the simulator is on (NUMBA_ENABLE_CUDASIM=1), so `{fn.__qualname__}` must "
            f"be compiled from its source in another interpreter, and its source is unavailable: {e}"
        ) from None
    names: set[str] = set()

    def collect(code):
        names.update(code.co_names)
        for c in code.co_consts:
            if isinstance(c, _pytypes.CodeType):
                collect(c)

    collect(fn.__code__)
    env: dict[str, tuple] = {}
    values = {n: fn.__globals__[n] for n in names if n in fn.__globals__}
    if fn.__closure__:
        for n, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            values[n] = cell.cell_contents
    skipped = []
    for n, v in values.items():
        if isinstance(v, _pytypes.ModuleType):
            env[n] = ("module", v.__name__)
            continue
        if getattr(v, "__mirrors__", None) is not None:
            # a simulator twin bound under a package name (``from
            # numba_asynccopy import view4``): the other interpreter binds the
            # device intrinsic of that name
            env[n] = ("package", v.__name__)
            continue
        inner = getattr(v, "fn", None) or getattr(v, "py_func", None)
        if isinstance(inner, _pytypes.FunctionType):  # a device function
            env[n] = ("device", _portable(inner))
            continue
        try:
            pickle.dumps(v)
            env[n] = ("value", v)
        except Exception:
            skipped.append(n)
    return {
        "name": fn.__name__, "source": textwrap.dedent("".join(src_lines)),
        "filename": fn.__code__.co_filename, "first": first, "env": env, "skipped": skipped,
    }


def _rebuild(p: dict):
    import importlib

    from numba import cuda

    g: dict[str, Any] = {"__name__": "__ac_inspect__"}
    for n, (kind, v) in p["env"].items():
        if kind == "module":
            g[n] = importlib.import_module(v)
        elif kind == "package":
            g[n] = getattr(importlib.import_module("numba_asynccopy"), v)
        elif kind == "device":
            # inlined: a device function compiled on its own asks the current
            # device for its compute capability, and the simulator's machine
            # may have no GPU
            g[n] = cuda.jit(device=True, inline="always")(_rebuild(v))
        else:
            g[n] = v
    tree = ast.parse(p["source"])
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.decorator_list = []  # the function itself, not cuda.jit's wrapper
    ast.increment_lineno(tree, p["first"] - 1)
    exec(compile(tree, p["filename"], "exec"), g)
    return g[p["name"]]


def _child_compile(payload: dict) -> str:
    # the child imported this module, so the package (every intrinsic) is loaded
    if payload.get("checked") is not None:
        checked.set_checked(payload["checked"])
    fn = _rebuild(payload["fn"])
    try:
        return compile_kernel_ptx(fn, payload["argtypes"], payload["cc"], payload["fastmath"])
    except NameError as e:
        skipped = payload["fn"]["skipped"]
        raise NameError(f"{e} (globals that could not be sent: {skipped})") from None


def _compile_elsewhere(pyfunc, argtypes: tuple, cc: tuple[int, int], fastmath: bool) -> str:
    payload = {"fn": _portable(pyfunc), "argtypes": argtypes, "cc": cc, "fastmath": fastmath,
               "checked": checked.is_checked()}
    reply = _ask_server(payload)
    if "error" in reply:
        raise RuntimeError(f"ac.inspect: compiling `{pyfunc.__qualname__}` outside the simulator "
                           f"failed: {reply['error']}")
    return reply["ptx"]
