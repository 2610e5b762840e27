"""``assert_close``: compare a kernel's result with a reference, with
tolerances that follow the precision of the dtype and, for GEMM-like
results, the length of the accumulation.

The bound, elementwise::

    |actual - expected| <= sqrt(K) * (atol + rtol * S)

``rtol`` and ``atol`` are the dtype's (:data:`TOLERANCES`, PyTorch's
defaults for ``torch.testing.assert_close``), ``K`` is the number of
products summed into each element (``k=``; 1 for an elementwise result) and
``S`` is ``|expected|``, or ``magnitude`` when given: for a product
``A @ B`` pass ``magnitude=abs(A) @ abs(B)``, the scale rounding errors
really grow with (a result near zero by cancellation still has the error of
its large terms).  ``sqrt(K)`` is the probabilistic growth of rounding
errors in a sum of ``K`` terms (the worst case grows with ``K``); a kernel
that sums in a different order than the reference stays inside it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: dtype name -> (rtol, atol) for one rounding (K = 1)
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1.3e-6, 1e-5),
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
}


def _dtype_name(dtype: Any) -> str:
    name = getattr(dtype, "name", None) or str(dtype)
    name = name.replace("torch.", "")
    aliases = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32",
               "float": "float32", "fp64": "float64", "double": "float64"}
    name = aliases.get(name, name)
    if name not in TOLERANCES:
        raise ValueError(f"`dtype` must be one of {', '.join(TOLERANCES)} (or their aliases "
                         f"bf16, fp16, fp32, fp64), got {dtype!r}")
    return name


def tolerance(dtype: Any, k: int = 1) -> tuple[float, float]:
    """``(rtol, atol)`` of :func:`assert_close` for ``dtype`` and an
    accumulation of ``k`` products: the dtype's pair times ``sqrt(k)``.

    Example::

        >>> from numba_asynccopy.testing import tolerance
        >>> rtol, atol = tolerance("bfloat16", k=4096)
        >>> round(rtol, 3)
        1.024
    """
    name = _dtype_name(dtype)
    k = _check_k(k)
    rtol, atol = TOLERANCES[name]
    g = math.sqrt(k)
    return rtol * g, atol * g


def _check_k(k: Any) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"`k` must be a positive int (the accumulation length), got {k!r} "
                        f"({type(k).__name__})")
    if k < 1:
        raise ValueError(f"`k` must be >= 1 (the number of products summed per element), got {k}")
    return int(k)


def _bf16_bits_to_f32(u: np.ndarray) -> np.ndarray:
    return (u.astype(np.uint32) << np.uint32(16)).view(np.float32)


def _as_host(x: Any, arg: str, dtype_name: str | None) -> tuple[np.ndarray, str | None]:
    """``x`` as a float64 host array and its dtype name (None if unknown)."""
    if type(x).__module__.startswith("torch"):
        name = str(x.dtype).replace("torch.", "")
        h = x.detach().float().cpu().numpy() if name in ("bfloat16", "float16") else x.detach().cpu().numpy()
        return h.astype(np.float64), name if name in TOLERANCES else None
    if hasattr(x, "copy_to_host"):
        x = x.copy_to_host()
    try:
        h = np.asarray(x)
    except Exception as e:
        raise TypeError(f"`{arg}` must be an array (NumPy, device array or torch tensor), "
                        f"got {type(x).__name__}: {e}") from None
    name = h.dtype.name
    if name == "bfloat16":  # ml_dtypes
        return h.astype(np.float32).astype(np.float64), name
    if h.dtype == np.uint16 and dtype_name == "bfloat16":
        return _bf16_bits_to_f32(h).astype(np.float64), "bfloat16"
    if h.dtype.kind not in "fiub":
        raise TypeError(f"`{arg}` must hold numbers, got dtype {h.dtype}")
    return h.astype(np.float64), name if name in TOLERANCES else None


def assert_close(actual: Any, expected: Any, *, dtype: Any = None, k: int = 1,
                 magnitude: Any = None, rtol: float | None = None, atol: float | None = None,
                 name: str = "actual") -> None:
    """Raise ``AssertionError`` unless ``actual`` matches ``expected`` within
    ``sqrt(k) * (atol + rtol * S)`` elementwise (the module's formula).

    ``dtype`` picks the tolerances (default: ``actual``'s dtype; give
    ``"bfloat16"`` for a uint16 array holding bf16 bits, or for float32
    results computed from bf16 inputs); ``rtol``/``atol`` override the
    dtype's pair.  A NaN in ``actual`` where ``expected`` is finite is
    reported as poison (an unwritten element or a missing wait).

    Example::

        import numpy as np
        from numba_asynccopy.testing import assert_close
        A = np.random.rand(64, 256).astype(np.float32)
        B = np.random.rand(256, 32).astype(np.float32)
        C = A @ B                                  # the kernel's result
        ref = A.astype(np.float64) @ B.astype(np.float64)
        assert_close(C, ref, k=256, magnitude=np.abs(A) @ np.abs(B))
    """
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a str, got {type(name).__name__}")
    given = _dtype_name(dtype) if dtype is not None else None
    a, a_name = _as_host(actual, "actual", given)
    e, _ = _as_host(expected, "expected", None)
    kind = given or a_name
    if kind is None:
        if rtol is None or atol is None:
            raise TypeError(f"`actual` has dtype {np.asarray(a).dtype if a_name is None else a_name}, "
                            "which has no default tolerance: pass `dtype=` or both `rtol=` and `atol=`")
        kind = "given"
    k = _check_k(k)
    base_r, base_a = TOLERANCES.get(kind, (None, None))
    for label, v in (("rtol", rtol), ("atol", atol)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float, np.floating))
                              or not v >= 0):
            raise ValueError(f"`{label}` must be a number >= 0, got {v!r}")
    r = float(base_r if rtol is None else rtol)
    t = float(base_a if atol is None else atol)
    if a.shape != e.shape:
        raise AssertionError(f"{name}: shape {a.shape} differs from the expected {e.shape}")
    if magnitude is None:
        s = np.abs(e)
    else:
        s, _ = _as_host(magnitude, "magnitude", None)
        if s.shape != e.shape:
            raise ValueError(f"`magnitude` must have the shape of `expected` {e.shape}, got {s.shape}")
        s = np.abs(s)
    g = math.sqrt(k)
    bound = g * (t + r * s)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - e)
        both_nan = np.isnan(a) & np.isnan(e)
        same_inf = np.isinf(a) & (a == e)
        bad = ~((diff <= bound) | both_nan | same_inf)
    nbad = int(bad.sum())
    if not nbad:
        return
    poison = np.isnan(a) & ~np.isnan(e)
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    with np.errstate(invalid="ignore"):
        finite = bad & ~poison
        worst = (tuple(int(i) for i in np.unravel_index(np.nanargmax(np.where(finite, diff - bound, -np.inf)),
                                                       a.shape)) if finite.any() else idx)
    formula = (f"|{name} - expected| <= sqrt(K)*(atol + rtol*{'magnitude' if magnitude is not None else '|expected|'})"
               f" with {kind} rtol={r:g}, atol={t:g}, K={k}")
    lines = [f"{name}: {nbad} of {a.size} elements differ beyond the tolerance ({formula})"]
    if poison.any():
        first = tuple(int(i) for i in np.argwhere(poison)[0])
        lines.append(f"  {int(poison.sum())} are NaN where the expected value is finite, the first at "
                     f"{first}: poison (an unwritten element, or one read before its copy landed: "
                     "a missing wait)")
    if finite.any():
        lines.append(f"  worst at {worst}: actual {a[worst]!r}, expected {e[worst]!r}, "
                     f"|diff| {diff[worst]:.6g} > bound {bound[worst]:.6g}")
    raise AssertionError("\n".join(lines))
