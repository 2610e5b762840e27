"""Run numba-cuda's LLVM IR of a device function on the host CPU.

For tests of what the package adds to the IR before NVVM (``facts.py``):
the device function is compiled by numba-cuda as for the GPU, its module
(after the package's finalize hooks, so with every ``!range``, assume and
``nsw`` NVVM would see) is rewritten to opaque pointers, the special-register
reads become calls of host functions the test sets, LLVM optimizes it at
O3 (which exploits those facts as NVVM would) and MCJIT runs it.  A fact
that is not true, or an optimization that changes what Python says the
function computes, shows as a wrong result."""

from __future__ import annotations

import ctypes
import re

from llvmlite import binding as llvm
from numba.cuda import compiler

_CLOSE = {"}": "{", "]": "[", ">": "<", ")": "("}
_OPEN = "{[<("


def to_opaque(text: str) -> str:
    """Typed-pointer IR text (what numba-cuda writes for NVVM) -> opaque
    pointers (what the host LLVM parses): each ``T*`` becomes ``ptr``."""
    res: list[str] = []
    in_str = False
    for ch in text:
        if ch == '"':
            in_str = not in_str
        if ch != "*" or in_str:
            res.append(ch)
            continue
        k = len(res)
        m = re.search(r"\s*addrspace\((\d+)\)$", "".join(res[max(0, k - 24):k]))
        space = ""
        if m:
            space = f" addrspace({m.group(1)})"
            k -= len(m.group(0))
        c = res[k - 1]
        if c in _CLOSE:
            depth = 0
            while True:
                k -= 1
                if res[k] in _CLOSE:
                    depth += 1
                elif res[k] in _OPEN:
                    depth -= 1
                    if depth == 0:
                        break
            if c == ")":  # a function type: its return type too
                while res[k - 1] == " ":
                    k -= 1
                while res[k - 1].isalnum() or res[k - 1] in "._%":
                    k -= 1
        elif "".join(res[k - 3:k]) == "ptr":
            k -= 3
        else:
            while res[k - 1].isalnum() or res[k - 1] in "._%\"":
                k -= 1
        del res[k:]
        res.append("ptr" + space)
    return "".join(res)


_initialized = False
#: special register (``tid.x``) -> its value in the next host call (0 if unset)
SREGS: dict[str, int] = {}
_callbacks: list = []


def _sreg_symbol(name: str) -> str:
    sym = "host_sreg_" + name.replace(".", "_")
    if sym not in {s for s, _ in _callbacks}:
        cb = ctypes.CFUNCTYPE(ctypes.c_int32)(lambda n=name: SREGS.get(n, 0))
        _callbacks.append((sym, cb))
        llvm.add_symbol(sym, ctypes.cast(cb, ctypes.c_void_p).value)
    return sym


def compile_host(fn, restype, argtypes):
    """(engine, address of the function, numba's IR as NVVM gets it, the
    host-optimized IR) of ``fn`` compiled by numba-cuda as a device
    function.  Call the address with Numba's convention: ``int32
    f(restype* ret, *flattened args)`` (0: no exception)."""
    global _initialized
    if not _initialized:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _initialized = True
    cres = compiler.compile_cuda(fn, restype, argtypes, debug=False, lineinfo=False, cc=(9, 0))
    nvvm_ir = cres.library.get_llvm_str()
    text = "\n".join(line for line in to_opaque(nvvm_ir).splitlines()
                     if not line.startswith(("target triple", "target datalayout")))
    for name in sorted(set(re.findall(r"llvm\.nvvm\.read\.ptx\.sreg\.([a-z.]+)", text))):
        text = text.replace(f"llvm.nvvm.read.ptx.sreg.{name}", _sreg_symbol(name))
    mod = llvm.parse_assembly(text)
    tm = llvm.Target.from_default_triple().create_target_machine(opt=3)
    mod.triple = llvm.get_default_triple()
    mod.data_layout = str(tm.target_data)
    mod.verify()
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
    pb.getModulePassManager().run(mod, pb)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    return engine, engine.get_function_address(cres.fndesc.llvm_func_name), nvvm_ir, str(mod)


def array_args(a) -> list:
    """Numba's flattened parameters of a C-contiguous numpy array
    (meminfo, parent, nitems, itemsize, data, shape..., strides...)."""
    return [None, None, a.size, a.itemsize, a.ctypes.data, *a.shape, *a.strides]
