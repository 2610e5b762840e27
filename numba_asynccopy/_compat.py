"""The few numba-cuda internals the package relies on, kept in one place.

numba-cuda 0.30 exposes ``numba.cuda.extending.intrinsic`` without a way to
ask for literal-first typing, and its intrinsic templates hand Python default
values (not ``types.Omitted``) to the typing function.  ``intrinsic`` below
fixes both so that every public intrinsic can take keyword arguments with
defaults and compile-time constants.

It also puts this package's contract errors first.  numba collects the
error an intrinsic's typing raises into its "No implementation of function
... found for signature" listing, after the candidate templates, and (the
intrinsics being typed through ``numba.core``'s function type) without the
kernel's file and line.  ``intrinsic`` records the call site of each error
it raises and :func:`install_error_lead` makes numba's resolution failure
start with that error's message, then the call site, then numba's listing.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import threading
from typing import Any, Callable, Iterator

from numba.core import errors as core_errors
from numba.core import types
from numba.cuda.core import errors
from numba.cuda.core import typeinfer as _typeinfer
from numba.cuda.core.targetconfig import ConfigStack
from numba.cuda.extending import _Intrinsic
from numba.cuda.typing.templates import infer, infer_global, make_intrinsic_template

TypingError = errors.TypingError

# id(typing function) -> (non-literal argument types, error) of the last
# literal typing that failed; see ``intrinsic``.
_literal_failures: dict[int, tuple] = {}


def intrinsic(fn: Callable) -> Any:
    """Register ``fn`` as a CUDA intrinsic with literal-first typing.

    ``fn(typingctx, ...)`` receives every parameter: literal types for
    compile-time constants, ``types.Omitted(default)`` for parameters the
    caller left out.  Its returned signature must list all parameters.
    """
    pysig = inspect.signature(fn)
    params = list(pysig.parameters.values())[1:]

    name = fn.__name__

    @functools.wraps(fn)
    def typer(typingctx, *args, **kws):
        # numba retries a call with non-literal types when the literal typing
        # fails; a constant rejected for its value (say count=0) must not then
        # pass as a run-time value, so the retry re-raises the literal error.
        key = _call_key(args, kws)
        has_literal = any(_has_literal(a) for a in (*args, *kws.values()))
        previous = _literal_failures.pop(id(typer), None)
        if previous is not None and not has_literal and previous[0] == key:
            raise previous[1]
        try:
            return _type(typingctx, args, kws)
        except TypingError as e:
            if not hasattr(e, "asynccopy_lead"):
                e.asynccopy_lead = e.msg  # the contract error, without numba's decoration
                e.asynccopy_site = _call_site()
            if has_literal:
                _literal_failures[id(typer)] = (key, e)
            raise

    def _type(typingctx, args, kws):
        try:
            bound = pysig.bind(typingctx, *args, **kws)
        except TypeError as e:
            raise TypingError(f"{name}: {e}") from None
        for p in params:
            if p.name not in bound.arguments:
                bound.arguments[p.name] = types.Omitted(p.default)
            elif not isinstance(bound.arguments[p.name], types.Type):
                bound.arguments[p.name] = types.Omitted(bound.arguments[p.name])
        result = _select_forms(fn, bound)
        if result is None:
            return None
        sig, codegen = result
        typed_for = (compile_cc(), compile_arch())

        # numba caches an intrinsic's typing per argument types, not per
        # target: re-run the validation when lowering for another target so
        # that its sm requirement is enforced and target-dependent
        # lowering (sm_80 vs sm_90 forms) follows the target.
        def lower(context, builder, lsig, args):
            gen = codegen
            if (compile_cc(), compile_arch()) != typed_for:
                gen = _select_forms(fn, bound)[1]
            return gen(context, builder, lsig, args)

        return sig, lower

    # numba-cuda 0.30's argument folding mishandles keyword-only parameters:
    # show it plain ones.  The bind above still enforces keyword-only calls.
    typer.__signature__ = pysig.replace(
        parameters=[
            p.replace(kind=p.POSITIONAL_OR_KEYWORD) if p.kind == p.KEYWORD_ONLY else p
            for p in pysig.parameters.values()
        ]
    )
    llc = _LiteralFirstIntrinsic(fn.__name__, typer, target="cuda")
    llc._register()
    # what inspect.signature, help() and the docs show: the call a kernel
    # writes, without ``typingctx``, keyword-only markers kept
    llc.__signature__ = pysig.replace(parameters=params)
    return llc


# the current intrinsic's name while its typing runs (``_forms.form`` gates
# every row it looks up in that name)
_typing = threading.local()


def typing_api() -> str | None:
    """The public name of the intrinsic whose typing is running, or None."""
    return getattr(_typing, "api", None)


@contextlib.contextmanager
def typing_for(api: str) -> Iterator[None]:
    """Within: :func:`typing_api` is ``api``."""
    previous = getattr(_typing, "api", None)
    _typing.api = api
    try:
        yield
    finally:
        _typing.api = previous


def _select_forms(fn: Callable, bound: inspect.BoundArguments) -> Any:
    """Run a typing function; every PTX form it selects from the registry
    is gated against the compile target there (sm and PTX ISA), in the
    intrinsic's name."""
    with typing_for(fn.__name__):
        return fn(*bound.args, **bound.kwargs)


def _has_literal(t: types.Type) -> bool:
    """A literal, or a tuple holding one (constant tensor coordinates)."""
    if isinstance(t, types.BaseTuple) and not isinstance(t, types.NamedTuple):
        return any(_has_literal(e) for e in t)
    return isinstance(t, types.Literal)


def _plain(t: types.Type) -> types.Type:
    """``t`` as numba's non-literal retry types it: a tuple of literals
    ``(0, -32)`` comes back as ``UniTuple(int64 x 2)``, not ``Tuple(int64, int64)``."""
    if isinstance(t, types.BaseTuple) and not isinstance(t, types.NamedTuple):
        return types.BaseTuple.from_types([_plain(e) for e in t])
    return types.unliteral(t)


def _call_key(args, kws) -> tuple:
    return (tuple(_plain(a) for a in args),
            tuple(sorted((k, _plain(v)) for k, v in kws.items())))


class _GuardedTypingCache(dict):
    """numba's per-template typing cache, which must not answer the
    non-literal retry of a call whose constants were just rejected."""

    def __init__(self, typer_id: int):
        super().__init__()
        self.typer_id = typer_id

    def __getitem__(self, key):
        pending = _literal_failures.get(self.typer_id)
        if pending is not None:
            _, args, kws = key
            if _call_key(args, dict(kws)) == pending[0]:
                raise KeyError(key)
        return super().__getitem__(key)


class _LiteralFirstIntrinsic(_Intrinsic):
    def __init__(self, name, defn, prefer_literal=True, **kwargs):
        super().__init__(name, defn, prefer_literal=True, **kwargs)

    def __get__(self, obj, objtype=None):
        # a (non-data) descriptor that binds nothing: help() and pydoc then
        # document a device function as a routine, with its signature
        return self

    def _register(self):
        template = make_intrinsic_template(self, self._defn, self._name, prefer_literal=True,
                                           kwargs=self._ctor_kwargs)
        template._impl_cache = _GuardedTypingCache(id(self._defn))
        infer(template)
        infer_global(self, types.Function(template))


def compile_cc() -> tuple[int, int] | None:
    """The compute capability the kernel being compiled targets, or None."""
    flags = ConfigStack.top_or_none()
    cc = getattr(flags, "compute_capability", None) if flags is not None else None
    return tuple(cc[:2]) if cc else None


def compile_arch() -> str:
    """The arch-specific feature suffix of the compile target (``"a"`` for
    ``sm_90a``), or ``""``.

    ``compile_ptx``/``compile`` build for exactly the ``cc`` they are given
    (``cc=(9, 0, "a")`` is sm_90a, ``cc=(9, 0)`` plain sm_90).  A kernel the
    dispatcher compiles for its launch is typed with the device's
    ``(major, minor)`` but built like numba-cuda's codegen ``_ensure_cc``
    does: with ``"a"`` from compute capability 9.0 on.
    """
    flags = ConfigStack.top_or_none()
    cc = getattr(flags, "compute_capability", None) if flags is not None else None
    if not cc:
        return ""
    if len(cc) > 2:
        return str(cc[2] or "")
    if _explicit_cc_compile():
        return ""
    return "a" if tuple(cc[:2]) >= (9, 0) else ""


def _explicit_cc_compile() -> bool:
    """True inside ``numba.cuda.compile``/``compile_all`` (``compile_ptx``
    goes through ``compile``): their code is built for the ``cc`` given."""
    from numba.cuda import compiler

    # (unwrapped: compile is decorated with the compile lock, whose wrapper's
    # code object every locked function shares)
    codes = {inspect.unwrap(f).__code__ for f in (compiler.compile, compiler.compile_all)}
    f = sys._getframe(1)
    while f is not None:
        if f.f_code in codes:
            return True
        f = f.f_back
    return False


def patch_cache_key(extra: Callable[[], tuple]) -> None:
    """Add ``extra()`` to the key of numba-cuda's on-disk kernel cache.

    The cache stores generated code, so a setting that changes code
    generation (checked mode, this package's version) must be in its key.
    """
    from numba.cuda.codegen import JITCUDACodegen

    if getattr(JITCUDACodegen, "_asynccopy_patched", False):
        return
    original = JITCUDACodegen.magic_tuple

    def magic_tuple(self):
        return original(self) + extra()

    JITCUDACodegen.magic_tuple = magic_tuple
    JITCUDACodegen._asynccopy_patched = True


# --- contract errors first ----------------------------------------------------

#: ``CallConstraint.resolve`` types one call of the function being compiled;
#: its ``self.loc`` is that call's place in the user's source.
_RESOLVE_CODE = _typeinfer.CallConstraint.resolve.__code__


class ContractError(core_errors.TypingError):
    """A call that breaks an intrinsic's contract, found while typing.

    Its message starts with the contract error (``mbarrier_init: `count`=0
    is outside 1..1048575``), then the offending call (``File "kernel.py",
    line N:`` and the source line), then numba's listing of the candidate
    implementations.  A ``numba.core.errors.TypingError``, like the error
    numba raises for a failed call resolution.

    Example::

        try:
            cuda.compile_ptx(kernel, sig)
        except TypingError as e:
            print(str(e).splitlines()[0])   # the rule that was broken
    """


def _call_site() -> Any:
    """The ``numba`` ``Loc`` of the call being typed (None outside typing)."""
    f = sys._getframe(1)
    while f is not None:
        if f.f_code is _RESOLVE_CODE:
            return getattr(f.f_locals.get("self"), "loc", None)
        f = f.f_back
    return None


def _lead(error: Any, listing: Callable[[], str]) -> ContractError:
    site = error.asynccopy_site
    where = site.strformat().strip("\n") if site is not None else "(call site unknown)"
    return ContractError(f"{error.asynccopy_lead}\n{where}\n\n{listing()}", highlighting=False)


def install_error_lead() -> None:
    """Make numba's "No implementation of function" error lead with this
    package's contract error (the one place numba's message is changed).

    Wraps ``_ResolutionFailures.raise_error`` of ``numba.core`` (which types
    this package's intrinsics) and of numba-cuda's own function types (a
    device function's call): when one of the collected failures is an error
    an intrinsic here raised, a :class:`ContractError` is raised instead,
    its message the contract error, the call site, then numba's listing; a
    :class:`ContractError` from a nested compile (an intrinsic in a device
    function) passes through unchanged.  Other failures are left to numba.
    """
    from numba.core.types import functions as core_functions
    from numba.cuda.types import cuda_functions

    for cls in {core_functions._ResolutionFailures, cuda_functions._ResolutionFailures}:
        if getattr(cls, "_asynccopy_lead", False):
            continue
        original = cls.raise_error

        def raise_error(self, _original=original):
            errs = [fail.error for fails in self._failures.values() for fail in fails]
            if not any(isinstance(e, (errors.ForceLiteralArg, core_errors.ForceLiteralArg))
                       for e in errs):  # numba re-raises those: literal retyping
                for e in errs:
                    if isinstance(e, ContractError):
                        raise e
                    if getattr(e, "asynccopy_lead", None) is not None:
                        raise _lead(e, self.format)
            return _original(self)

        cls.raise_error = raise_error
        cls._asynccopy_lead = True


install_error_lead()  # importing any intrinsic module (so the package) installs it
