"""``@mirrors(device_intrinsic)``: declare a simulator twin of an intrinsic.

A twin is bound in place of the device intrinsic when the simulator is on,
so a kernel calls it with the same arguments: its Python signature must be
the intrinsic's (names, order, kinds, defaults).  The decorator checks that
when the sim module is imported, so a signature change on one side fails at
once instead of in the first kernel that passes the changed argument, and
gives the twin the device docstring (one text to keep, plus a line saying
what the simulator does).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class MirrorError(TypeError):
    """A simulator twin does not match its device intrinsic."""


def device_function(device: Any) -> Callable:
    """The Python function a device intrinsic was written as.

    ``_compat.intrinsic`` registers a wrapper of it (``functools.wraps``, so
    ``__wrapped__``) as the numba intrinsic's definition ``_defn``; the
    wrapper's own ``__signature__`` is altered for numba, the original's is not.
    """
    defn = getattr(device, "_defn", None)
    fn = getattr(defn, "__wrapped__", None)
    if fn is None:
        raise MirrorError(f"{device!r} is not an intrinsic made by numba_asynccopy._compat.intrinsic")
    return fn


def user_signature(device: Any) -> inspect.Signature:
    """The signature a kernel calls ``device`` with (without ``typingctx``)."""
    sig = inspect.signature(device_function(device), follow_wrapped=False)
    return sig.replace(parameters=list(sig.parameters.values())[1:])


def _shape(sig: inspect.Signature) -> list[tuple]:
    # the type of a default matters too: 1 and 1.0 type differently in numba
    return [(p.name, p.kind, type(p.default), p.default) for p in sig.parameters.values()]


def mirrors(device: Any, note: str = "") -> Callable[[F], F]:
    """Declare the decorated function the simulator twin of ``device``.

    Raises :class:`MirrorError` at import when the names or signatures
    differ.  The twin gets ``device``'s docstring, then a paragraph saying it
    is the simulator's version and ``note`` (what the simulator does that the
    GPU does differently), and ``__mirrors__ = device``.

    Example::

        @mirrors(_dev.wait_group, "lands every committed group but the newest ``n``.")
        def wait_group(n):
            ...
    """
    fn = device_function(device)

    def declare(twin: F) -> F:
        name = fn.__name__
        if twin.__name__ != name:
            raise MirrorError(f"simulator twin {twin.__name__} mirrors {name}: the names differ")
        want, got = user_signature(device), inspect.signature(twin)
        if _shape(want) != _shape(got):
            raise MirrorError(
                f"simulator twin {twin.__module__}.{name}{got} does not match the device "
                f"intrinsic {fn.__module__}.{name}{want}: a kernel must call both alike")
        doc = inspect.cleandoc(fn.__doc__ or "")
        sim = f"In the CUDA simulator (numba_asynccopy.sim): {note}" if note else (
            "In the CUDA simulator (numba_asynccopy.sim): same contract, same messages.")

        @functools.wraps(twin)
        def call(*args, **kwargs):
            try:
                return twin(*args, **kwargs)
            except TypeError:
                _refuse_binding(name, got, args, kwargs)
                raise

        call.__doc__ = f"{doc}\n\n{sim}" if doc else sim
        call.__mirrors__ = device  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return declare


def _refuse_binding(name: str, sig: inspect.Signature, args: tuple, kwargs: dict) -> None:
    """A call its signature refuses (an unknown keyword, an argument left
    out, one too many) is the device typing's ``TypingError``, in its words
    (``_compat``: ``"{name}: {the binding error}"``), not Python's."""
    try:
        sig.bind(*args, **kwargs)
    except TypeError as e:
        from .._compat import TypingError

        raise TypingError(f"{name}: {e}") from None
