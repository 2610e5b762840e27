"""PyTorch integration: a Numba kernel as a ``torch.library.custom_op``.

PyTorch is an optional peer: it is imported when :func:`custom_op` is
called, never by ``import numba_asynccopy``.  Streams and tensors need no
helper: :func:`numba_asynccopy.launch` takes a ``torch.cuda.Stream`` and
torch CUDA tensors directly.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .host.launch import Dim
from .host.launch import launch as _launch


@dataclass(frozen=True)
class LaunchRule:
    """The launch shape of one call, as :func:`numba_asynccopy.launch`
    takes it: ``grid`` and ``block`` (blocks and threads), ``cluster``,
    ``shared_mem`` (bytes of dynamic shared memory), ``non_portable``."""
    grid: Dim
    block: Dim
    cluster: Dim | None = None
    shared_mem: int = 0
    non_portable: bool = False


# annotation of an outputs-rule parameter -> its type in the operator's schema
_SCHEMA_TYPES = {int: "SymInt", float: "float", bool: "bool", "int": "SymInt",
                 "float": "float", "bool": "bool"}


def _schema(outputs: Callable[..., Any], n_outputs: int) -> tuple[str, list[str]]:
    params = list(inspect.signature(outputs).parameters.values())
    for p in params:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TypeError(f"numba_asynccopy.torch.custom_op: `outputs` parameter {p.name!r} must be "
                            "positional (the operator's inputs are its parameters)")
    args = ", ".join(f"{_SCHEMA_TYPES.get(p.annotation, 'Tensor')} {p.name}" for p in params)
    ret = "Tensor" if n_outputs == 1 else "(" + ", ".join(["Tensor"] * n_outputs) + ")"
    return f"({args}) -> {ret}", [p.name for p in params]


def _as_tuple(outs: Any, n_outputs: int, what: str) -> tuple:
    outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
    if len(outs) != n_outputs:
        raise ValueError(f"{what}: `outputs` returned {len(outs)} tensors; n_outputs={n_outputs}")
    return outs


def custom_op(name: str, kernel: Any, *, outputs: Callable[..., Any],
              launch: Callable[..., LaunchRule | dict], n_outputs: int = 1,
              kernel_args: Callable[..., Sequence[Any]] | None = None) -> Any:
    """``kernel`` (a ``@cuda.jit`` kernel) as the PyTorch operator ``name``
    (``"namespace::op"``), usable eagerly and under ``torch.compile``.

    - ``outputs(*inputs)``: allocates the output tensors (one, or a tuple of
      ``n_outputs``) from the inputs, with torch factory functions such as
      ``torch.empty_like`` so that it also runs on fake (meta) tensors: it
      is the operator's fake implementation too.  Its parameters are the
      operator's inputs: tensors, or ``int``/``float``/``bool`` when so
      annotated.  Outputs must be new tensors (not views of inputs).
    - ``launch(*inputs)``: the launch shape, a :class:`LaunchRule` or a dict
      of :func:`numba_asynccopy.launch`'s keywords (``grid``, ``block``,
      ``cluster``, ``shared_mem``, ``non_portable``).
    - ``kernel_args(*inputs, *outputs)``: the kernel's arguments; by
      default the inputs then the outputs.

    The kernel runs on the inputs' device (Numba's current device is set to
    it for the launch) and on torch's current stream of that device, so it
    orders with the surrounding torch work without synchronising.

    Example::

        from numba_asynccopy.torch import LaunchRule, custom_op

        @cuda.jit
        def tile_copy(src, dst): ...        # one 128-thread block per 512 elements

        copy = custom_op("asynccopy::tile_copy", tile_copy,
                         outputs=lambda x: torch.empty_like(x),
                         launch=lambda x: LaunchRule(grid=x.numel() // 512, block=128))
        y = copy(x)                              # eager
        y = torch.compile(lambda x: copy(x) * 2)(x)
    """
    import torch

    what = f"numba_asynccopy.torch.custom_op({name!r})"
    if not (isinstance(n_outputs, int) and not isinstance(n_outputs, bool) and n_outputs >= 1):
        raise TypeError(f"{what}: `n_outputs` must be an int >= 1, got {n_outputs!r}")
    schema, names = _schema(outputs, n_outputs)

    def fake(*inputs: Any) -> Any:
        outs = _as_tuple(outputs(*inputs), n_outputs, what)
        return outs[0] if n_outputs == 1 else outs

    def impl(*inputs: Any) -> Any:
        from numba import cuda

        outs = _as_tuple(outputs(*inputs), n_outputs, what)
        rule = launch(*inputs)
        if isinstance(rule, LaunchRule):
            rule = {"grid": rule.grid, "block": rule.block, "cluster": rule.cluster,
                    "shared_mem": rule.shared_mem, "non_portable": rule.non_portable}
        elif not isinstance(rule, dict):
            raise TypeError(f"{what}: `launch` must return a LaunchRule or a dict, got "
                            f"{type(rule).__name__}")
        tensors = [t for t in (*inputs, *outs) if isinstance(t, torch.Tensor)]
        devices = {t.device for t in tensors}
        if len(devices) != 1 or next(iter(devices)).type != "cuda":
            raise ValueError(f"{what}: the inputs and outputs must all be CUDA tensors of one "
                             f"device, got {sorted(str(d) for d in devices)}")
        device = next(iter(devices))
        args = tuple(kernel_args(*inputs, *outs)) if kernel_args else (*inputs, *outs)
        with cuda.gpus[device.index]:
            _launch(kernel, args=args, stream=torch.cuda.current_stream(device), **rule)
        return outs[0] if n_outputs == 1 else outs

    op = torch.library.custom_op(name, impl, mutates_args=(), device_types="cuda", schema=schema)
    op.register_fake(fake)
    return op
