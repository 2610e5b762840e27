"""The im2col validator against the driver: ~600 random im2col descriptions
(seeded), about half valid and half with one rule broken or pushed to its
edge, each validated by ``im2col.describe_im2col`` and encoded by
``cuTensorMapEncodeIm2col`` itself (called directly, also for descriptions
the validator rejects).  The two must agree on accept/reject for every one;
a disagreement lists the description, the validator's message and the
driver's result.

Descriptions stay inside what both can express: channels-last C-ordered
(padded) layouts, no interleave (this package's im2col maps have none), the
channels' element stride 1 (the package requires it; the driver ignores
it) and a tile within a block's shared memory (the package's rule).

``IM2COL_FUZZ_DUMP=path`` writes every description with both verdicts as
JSON lines there.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, replace

import numpy as np
import pytest

from numba_asynccopy.host import im2col as ic
from numba_asynccopy.host import tensor_map as tm

from ..conftest import skip_on_sim
from ..map_fuzz import (DTYPES, assert_agree, device_base, driver_enums, itemsize_of,
                        seeded_specs, typestr)

pytestmark = pytest.mark.gpu

SEED = 20261201
N_RANDOM = 600


@dataclass(frozen=True)
class Spec:
    """One description in the array's axis order (N, spatial..., C)."""

    dtype: str
    offset: int
    shape: tuple[int, ...]
    pad_bytes: tuple[int, ...]  # extra bytes per row of each outer axis (multiples of 16)
    lower: tuple[int, ...]
    upper: tuple[int, ...]
    cpp: int
    ppc: int
    es: tuple[int, ...]
    swizzle: int | None = None
    l2_promotion: int | None = None
    oob_fill: str = "zero"
    note: str = "random"

    @property
    def itemsize(self) -> int:
        return itemsize_of(self.dtype)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def strides(self) -> tuple[int, ...]:
        """Bytes, array order; the outer ones padded (and 16-byte multiples
        where the description is well formed)."""
        out = [self.itemsize]
        for axis in range(self.rank - 1, 0, -1):
            row = out[0] * self.shape[axis]
            row = -(-row // 16) * 16 + self.pad_bytes[axis - 1]
            out.insert(0, row)
        return tuple(out)


def random_spec(rng: np.random.Generator) -> Spec:
    dtype = str(rng.choice(DTYPES))
    isz = itemsize_of(dtype)
    rank = int(rng.integers(3, 6))
    swizzle = [None, None, 32, 64, 128][int(rng.integers(5))]
    span = min(swizzle or 256 * isz, 256 * isz)
    cpp = 16 * int(rng.integers(1, span // 16 + 1)) // isz
    cpp = max(16 // isz, min(cpp, 256))
    ppc = int(rng.choice([1, 2, 8, 16, 32, 64, 128, 256, 512, 1024]))
    while ppc * cpp * isz > 200 * 1024:
        ppc //= 2
    lo_r, hi_r = ic.CORNER_RANGE[rank]
    spatial = tuple(int(rng.integers(1, 40)) for _ in range(rank - 2))
    lower, upper = [], []
    for n in spatial:
        lo = int(rng.integers(max(lo_r, -4), min(hi_r, 4) + 1))
        up = int(rng.integers(max(lo_r, lo - n + 1), min(hi_r, 4) + 1))  # non-empty box
        lower.append(lo)
        upper.append(up)
    shape = (int(rng.integers(1, 5)),) + spatial + (cpp + int(rng.integers(0, 3)) * (16 // isz),)
    es = tuple(int(rng.integers(1, 9)) if rng.random() < 0.3 else 1 for _ in range(rank - 1)) + (1,)
    floats = dtype.startswith("float") or dtype == "bfloat16"
    pad = tuple(16 * int(rng.integers(0, 3)) if rng.random() < 0.3 else 0 for _ in range(rank - 1))
    return Spec(dtype=dtype, offset=int(rng.choice([0, 0, 0, 16, 64, 256])), shape=shape,
                pad_bytes=pad, lower=tuple(lower), upper=tuple(upper), cpp=cpp, ppc=ppc, es=es,
                swizzle=swizzle, l2_promotion=[None, 64, 128, 256][int(rng.integers(4))],
                oob_fill="nan" if floats and rng.random() < 0.3 else "zero")


def broken(spec: Spec, rng: np.random.Generator) -> Spec:
    """``spec`` with one documented rule broken (or pushed to its edge)."""
    isz, rank = spec.itemsize, spec.rank
    nsp = rank - 2
    a = int(rng.integers(nsp))
    lo_r, hi_r = ic.CORNER_RANGE[rank]
    kind = ["address", "rank2", "rank6", "corner_low", "corner_high", "corner_edge",
            "upper_low", "upper_high", "box_empty", "box_one", "cpp0", "cpp257", "cpp256",
            "cpp_unaligned", "swizzle_span", "ppc0", "ppc1025", "ppc1024", "ppc257", "es0", "es9",
            "oob_int", "dim0", "stride", "corner_past_extent"][int(rng.integers(25))]
    if kind == "address":
        return replace(spec, offset=spec.offset + int(rng.choice([1, 4, 8])), note=kind)
    if kind == "rank2":
        return replace(spec, shape=(spec.shape[0], spec.shape[-1]), pad_bytes=spec.pad_bytes[:1],
                       lower=(), upper=(), es=(spec.es[0], 1), note=kind)
    if kind == "rank6" and rank == 5:
        return replace(spec, shape=(1,) + spec.shape, pad_bytes=(0,) + spec.pad_bytes,
                       lower=(0,) + spec.lower, upper=(0,) + spec.upper, es=(1,) + spec.es,
                       note=kind)
    if kind in ("corner_low", "corner_high", "corner_edge"):
        v = {"corner_low": lo_r - 1, "corner_high": hi_r + 1, "corner_edge": lo_r}[kind]
        lower = spec.lower[:a] + (v,) + spec.lower[a + 1:]
        upper = spec.upper
        if kind == "corner_edge":  # keep the box non-empty: upper as high as allowed
            upper = spec.upper[:a] + (hi_r,) + spec.upper[a + 1:]
        return replace(spec, lower=lower, upper=upper, note=kind)
    if kind in ("upper_low", "upper_high"):
        v = lo_r - 1 if kind == "upper_low" else hi_r + 1
        return replace(spec, upper=spec.upper[:a] + (v,) + spec.upper[a + 1:], note=kind)
    if kind in ("box_empty", "box_one"):
        # a box of exactly 0 or 1 positions along axis a: extent + upper - lower
        n = spec.shape[1 + a]
        want = 0 if kind == "box_empty" else 1
        lo = spec.lower[a]
        up = want - n + lo
        if lo_r <= up <= hi_r:
            return replace(spec, upper=spec.upper[:a] + (up,) + spec.upper[a + 1:], note=kind)
    if kind == "corner_past_extent":  # a box far wider than the tensor
        n = spec.shape[1 + a]
        return replace(spec, lower=spec.lower[:a] + (lo_r,) + spec.lower[a + 1:],
                       upper=spec.upper[:a] + (hi_r,) + spec.upper[a + 1:], note=kind)
    if kind == "cpp0":
        return replace(spec, cpp=0, note=kind)
    if kind in ("cpp257", "cpp256"):
        c = 257 if kind == "cpp257" else 256
        return replace(spec, cpp=c, ppc=max(1, min(spec.ppc, 200 * 1024 // (c * isz))),
                       swizzle=None, shape=spec.shape[:-1] + (max(spec.shape[-1], c),), note=kind)
    if kind == "cpp_unaligned" and isz < 16:
        c = int(rng.choice([c for c in range(1, 257) if (c * isz) % 16]))
        return replace(spec, cpp=c, swizzle=None, note=kind)
    if kind == "swizzle_span":
        sw = int(rng.choice([32, 64, 128]))
        c = 2 * sw // isz
        if c <= 256:
            return replace(spec, swizzle=sw, cpp=c, ppc=max(1, min(spec.ppc, 200 * 1024 // (c * isz))),
                           note=kind)
    if kind in ("ppc0", "ppc1025", "ppc1024", "ppc257"):
        p = {"ppc0": 0, "ppc1025": 1025, "ppc1024": 1024, "ppc257": 257}[kind]
        c = spec.cpp
        if p * c * isz > 200 * 1024:
            c = max(16 // isz, (200 * 1024 // max(p, 1) // isz) // max(1, 16 // isz) * max(1, 16 // isz))
            if p * c * isz > 200 * 1024:
                return replace(spec, note=f"{kind} (not applicable: valid)")
        return replace(spec, ppc=p, cpp=c, note=kind)
    if kind in ("es0", "es9"):
        j = int(rng.integers(rank - 1))
        e = 0 if kind == "es0" else 9
        return replace(spec, es=spec.es[:j] + (e,) + spec.es[j + 1:], note=kind)
    if kind == "oob_int" and not (spec.dtype.startswith("float") or spec.dtype == "bfloat16"):
        return replace(spec, oob_fill="nan", note=kind)
    if kind == "dim0":
        j = int(rng.integers(rank))
        return replace(spec, shape=spec.shape[:j] + (0,) + spec.shape[j + 1:], note=kind)
    if kind == "stride":
        j = int(rng.integers(rank - 1))
        return replace(spec, pad_bytes=spec.pad_bytes[:j] + (spec.pad_bytes[j] + 8,)
                       + spec.pad_bytes[j + 1:], note=kind)
    return replace(spec, note=f"{kind} (not applicable: valid)")


def validator_says(spec: Spec, base: int) -> str | None:
    interface = {"shape": spec.shape, "typestr": typestr(spec.dtype), "data": (base + spec.offset, False),
                 "strides": spec.strides(), "version": 3}
    try:
        ic.describe_im2col(interface, channels_per_pixel=spec.cpp, pixels_per_column=spec.ppc,
                           lower_corner=spec.lower, upper_corner=spec.upper,
                           element_strides=spec.es, swizzle=spec.swizzle,
                           l2_promotion=spec.l2_promotion, oob_fill=spec.oob_fill,
                           dtype="bfloat16" if spec.dtype == "bfloat16" else None)
    except ValueError as e:
        return str(e)
    return None


def driver_says(spec: Spec, base: int) -> str | None:
    from cuda.bindings import driver

    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    strides = spec.strides()
    try:
        err, _ = driver.cuTensorMapEncodeIm2col(
            driver.CUtensorMapDataType(tm.DTYPE_CODES[spec.dtype]), spec.rank,
            base + spec.offset,
            [u64(d) for d in reversed(spec.shape)],
            [u64(s) for s in reversed(strides[:-1])],
            list(reversed(spec.lower)) or [0], list(reversed(spec.upper)) or [0],
            spec.cpp, spec.ppc,
            [u32(e) for e in reversed(spec.es)],
            *driver_enums(driver, spec),  # no interleave
        )
    except (ValueError, OverflowError, TypeError) as e:
        return f"binding refused: {e}"
    return None if err == driver.CUresult.CUDA_SUCCESS else repr(err)


def all_specs() -> list[Spec]:
    return seeded_specs(SEED, N_RANDOM, random_spec, broken)


def test_random_specs_follow_the_documented_rules_when_unbroken():
    """The generator itself (no GPU needed): unbroken descriptions validate."""
    rng = np.random.default_rng(SEED + 1)
    for _ in range(300):
        spec = random_spec(rng)
        assert validator_says(spec, 1 << 30) is None, (spec, validator_says(spec, 1 << 30))


@skip_on_sim("calls the CUDA driver's cuTensorMapEncodeIm2col on a real device")
def test_validator_and_driver_agree():
    base, _buf = device_base()
    specs = all_specs()
    verdicts = [(validator_says(spec, base), driver_says(spec, base)) for spec in specs]
    if os.environ.get("IM2COL_FUZZ_DUMP"):
        with open(os.environ["IM2COL_FUZZ_DUMP"], "w") as f:
            for spec, (v, d) in zip(specs, verdicts):
                f.write(json.dumps(dict(asdict(spec), validator=v, driver=d)) + "\n")
    assert_agree(specs, verdicts, least=150)
