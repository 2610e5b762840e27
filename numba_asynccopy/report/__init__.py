"""``ac.inspect``: what a kernel asks of the asynchronous hardware, without running it.

The kernel is compiled to PTX for a chosen compute capability (no GPU
needed) with line information, and the report lists every asynchronous
instruction with its count and the PTX ISA and sm it needs (from the forms
table), the cluster shape and shared memory the kernel declares, ptxas's
resource usage when ptxas is installed, and the PTX lines of those
instructions under the Python source lines they come from.

Under numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``) there is no
compiler in the process, so the kernel's source is compiled in another
interpreter with the simulator off (one a process, started by the first
call and kept while the environment and ``sys.path`` stay the same); its
globals must then be modules or picklable constants (arrays, numbers,
dtypes).

Layout: :mod:`.parse` reads PTX and ptxas text, :mod:`.match` maps
instructions to rows of the forms table, :mod:`.render` is the report and
how it prints, :mod:`.compile` compiles the kernel (here or in the other
interpreter).
"""

from __future__ import annotations

import numbers
from typing import Any

from .compile import _pyfunc, _signature, compile_kernel_ptx, run_ptxas, supported_ccs
from .match import ASYNC_PREFIXES, Instruction, directive_form, match_forms, parse_ptx, tally
from .parse import PtxLine, Resources, cluster_shape, parse_ptxas, shared_memory
from .render import InspectReport

DEFAULT_CC = (9, 0)
_CC_RULE = ("cc must be (major, minor), a tuple of two ints such as (9, 0), or (9, 0, \"a\") "
            "for the arch-specific sm_90a")


def check_cc(cc: Any) -> tuple[int, int]:
    """``cc`` as a ``(major, minor)`` tuple the toolkit compiles for;
    None gives :data:`DEFAULT_CC`.

    A non-tuple or non-int parts raise TypeError; a wrong length or a
    target the toolkit lacks raise ValueError (numba-cuda would compile
    for the nearest target while the report named this one).

    Example::

        >>> check_cc([8, 0])
        (8, 0)
    """
    if cc is None:
        return DEFAULT_CC
    arch = ""
    if isinstance(cc, (tuple, list)) and len(cc) == 3 and cc[2] in ("a", ""):
        cc, arch = cc[:2], cc[2]
    if not isinstance(cc, (tuple, list)) or not all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in cc):
        raise TypeError(f"ac.inspect: {_CC_RULE}; got {cc!r}")
    if len(cc) != 2:
        raise ValueError(f"ac.inspect: {_CC_RULE}; got {cc!r}")
    cc = (int(cc[0]), int(cc[1]))
    targets = supported_ccs()
    if targets and cc not in targets:
        raise ValueError(
            f"ac.inspect: cc={cc} is not a target of the installed CUDA toolkit; cc must be "
            f"one of {', '.join(map(str, targets))}")
    return cc + (arch,) if arch else cc


def inspect(kernel_or_pyfunc: Any, *argtypes_or_args: Any, cc: tuple[int, int] | None = None) -> InspectReport:
    """Compile a kernel for ``cc`` without launching it and report its asynchronous operations.

    - ``kernel_or_pyfunc``: a ``@cuda.jit`` kernel or the plain Python function.
    - ``argtypes_or_args``: Numba types (``types.float32[:, ::1]``) or example
      arguments (NumPy or device arrays, scalars), typed as a launch would
      type them; leave them out for a kernel compiled with a signature.
    - ``cc``: the compute capability to compile for, a ``(major, minor)``
      tuple of ints that the installed CUDA toolkit targets, default
      (9, 0) (anything else raises TypeError or ValueError); ``(9, 0, "a")``
      is sm_90a, which the warpgroup MMA forms need (with no ``cc``, a kernel
      that needs it is compiled for it).  No GPU is
      needed; an instruction the target lacks is the usual compile error.

    The report lists every asynchronous PTX instruction with its count and
    the PTX ISA and sm it needs, the declared cluster shape, static shared
    memory, ptxas's registers/shared memory/spills (when ptxas is
    installed), and the PTX lines of those instructions under their Python
    source lines (``report.source_listing()``).  It prints as text and
    renders as a table in Jupyter.

    Example::

        from numba import cuda, types
        import numba_asynccopy as ac

        @cuda.jit
        def k(A, B):
            sh = cuda.shared.array((64, 4), np.float32, alignment=16)
            ac.cp_async(sh[cuda.threadIdx.x, :], A[cuda.threadIdx.x, :], 16)
            ac.commit_group()
            ac.wait_group(0)
            ...

        report = ac.inspect(k, types.float32[:, ::1], types.float32[:, ::1], cc=(8, 0))
        print(report)                       # or just `report` in a notebook
        report.count("cp.async.cg")         # -> 1
    """
    default = cc is None
    cc = check_cc(cc)
    pyfunc = _pyfunc(kernel_or_pyfunc)
    argtypes = _signature(kernel_or_pyfunc, argtypes_or_args)
    fastmath = bool(getattr(kernel_or_pyfunc, "targetoptions", {}).get("fastmath", False))
    try:
        ptx = compile_kernel_ptx(pyfunc, argtypes, cc, fastmath)
    except Exception as e:
        # with no cc given, a kernel of sm_90a-only forms (wgmma, setmaxnreg)
        # is compiled for sm_90a, the target a launch on such a GPU builds
        if not (default and f"needs sm_{cc[0]}{cc[1]}a " in str(e)):
            raise
        cc = cc + ("a",)
        ptx = compile_kernel_ptx(pyfunc, argtypes, cc, fastmath)

    lines, sreg_forms = parse_ptx(ptx)
    shape, explicit = cluster_shape(ptx)
    cluster_form = directive_form(ptx) if (shape or explicit) else None
    static, dynamic = shared_memory(ptx)
    resources, log, err = run_ptxas(ptx)
    return InspectReport(
        name=pyfunc.__qualname__, argtypes=argtypes, cc=cc, ptx=ptx,
        instructions=tally(lines, sreg_forms), lines=lines,
        cluster=shape, explicit_cluster=explicit, cluster_form=cluster_form,
        static_shared_bytes=static, dynamic_shared=dynamic,
        resources=resources, ptxas_log=log, ptxas_error=err,
    )


__all__ = [
    "ASYNC_PREFIXES",
    "DEFAULT_CC",
    "InspectReport",
    "Instruction",
    "PtxLine",
    "Resources",
    "check_cc",
    "inspect",
    "match_forms",
    "parse_ptx",
    "parse_ptxas",
]
