"""numba_asynccopy.testing on the host: poison, assert_close's formula and
messages, the timer's argument errors, the report table (the benchmark's
table renders through the same function)."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

from numba_asynccopy import testing as t
from numba_asynccopy.sim import POISON_BYTE


def test_the_docstring_examples_run():
    import numba_asynccopy.testing.bench as b
    import numba_asynccopy.testing.close as c
    import numba_asynccopy.testing.poison as p

    for mod in (p, c, b):
        failed, tried = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        assert failed == 0 and tried > 0, mod.__name__


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_poison_is_nan_and_the_simulators_byte(dtype):
    a = t.poison_host((3, 5), dtype)
    assert np.isnan(a).all()
    assert (a.view(np.uint8) == POISON_BYTE).all()
    assert t.POISON_BYTE == POISON_BYTE


@pytest.mark.parametrize("dtype,want", [(np.int32, -1), (np.uint16, 0xFFFF), (np.int8, -1)])
def test_integer_poison_is_the_byte_pattern(dtype, want):
    a = t.poison_host(4, dtype)
    assert (a == want).all()
    a[2] = 0
    assert t.poison_mask(a).tolist() == [True, True, False, True]
    b = t.poison_host(4, dtype, byte=0xA5)
    assert (b.view(np.uint8) == 0xA5).all() and t.poison_mask(b, byte=0xA5).all()


def test_assert_written_names_the_count_and_the_first_index():
    a = np.zeros((4, 4), np.float32)
    a[2, 1] = np.nan
    a[3, 3] = np.nan
    with pytest.raises(AssertionError, match=r"2 of 16 elements of C still hold poison \(NaN\); "
                                             r"the first at index \(2, 1\)"):
        t.assert_written(a, "C")
    t.assert_written(np.zeros(3, np.int32), "D")


@pytest.mark.parametrize("call,exc,words", [
    (lambda: t.poison_host(4, np.float32, byte=256), ValueError, "`byte` must be in 0..255"),
    (lambda: t.poison_host(4, np.float32, byte=True), TypeError, "`byte` must be an int"),
    (lambda: t.poison_host(-1), ValueError, "`shape` must not hold negative"),
    (lambda: t.poison_host("4"), TypeError, "`shape` must be an int or a tuple"),
    (lambda: t.poison_host(4, "U3"), TypeError, "`dtype` must be a float, integer"),
    (lambda: t.poisoned_like([1, 2]), TypeError, "`a` must be an array"),
    (lambda: t.repoison(np.zeros(2)), TypeError, "`a` must be a device array"),
    (lambda: t.assert_written(np.zeros(2), 3), TypeError, "`name` must be a str"),
])
def test_poison_errors_name_the_argument(call, exc, words):
    with pytest.raises(exc, match=words.replace("(", r"\(").replace(".", r"\.")):
        call()


def test_tolerance_grows_with_the_square_root_of_k():
    for name, (r, a) in t.TOLERANCES.items():
        assert t.tolerance(name) == (r, a)
        r4, a4 = t.tolerance(name, k=400)
        assert math.isclose(r4, 20 * r) and math.isclose(a4, 20 * a)
    assert t.tolerance("bf16") == t.TOLERANCES["bfloat16"]


def test_assert_close_passes_a_float32_gemm_and_fails_a_wrong_one():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((64, 512)).astype(np.float32)
    B = rng.standard_normal((512, 48)).astype(np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    C = A @ B
    mag = np.abs(A) @ np.abs(B)
    t.assert_close(C, ref, k=512, magnitude=mag)
    # a float32 sum of 512 terms is outside the K = 1 bound against |expected|
    # somewhere (cancellation), inside it with K and the magnitude
    bad = C.copy()
    bad[5, 7] += 1e-2 * mag[5, 7]
    with pytest.raises(AssertionError, match=r"1 of 3072 elements differ beyond the tolerance .*"
                                             r"float32 rtol=1\.3e-06, atol=1e-05, K=512") as e:
        t.assert_close(bad, ref, k=512, magnitude=mag, name="C")
    assert "worst at (5, 7)" in str(e.value)


def test_assert_close_calls_nan_poison():
    ref = np.ones(8, np.float32)
    got = ref.copy()
    got[3] = np.nan
    with pytest.raises(AssertionError, match=r"1 are NaN where the expected value is finite, "
                                             r"the first at \(3,\): poison"):
        t.assert_close(got, ref)


def test_assert_close_reads_bf16_bits_and_uses_the_bf16_tolerance():
    x = np.array([1.0, 2.5, -3.0], np.float32)
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)
    t.assert_close(bits, x * (1 + 1e-2), dtype="bfloat16")        # inside 1.6e-2
    with pytest.raises(AssertionError, match="bfloat16 rtol=0.016"):
        t.assert_close(bits, x * (1 + 3e-2), dtype="bfloat16")
    # float16: 1e-3 relative
    h = x.astype(np.float16)
    t.assert_close(h, x * (1 + 5e-4))
    with pytest.raises(AssertionError, match="float16"):
        t.assert_close(h, x * (1 + 5e-3))


@pytest.mark.parametrize("kw,exc,words", [
    ({"dtype": "int7"}, ValueError, "`dtype` must be one of float64, float32, float16, bfloat16"),
    ({"k": 0}, ValueError, "`k` must be >= 1"),
    ({"k": 2.0}, TypeError, "`k` must be a positive int"),
    ({"rtol": -1.0}, ValueError, "`rtol` must be a number >= 0"),
    ({"magnitude": np.ones(2)}, ValueError, "`magnitude` must have the shape of `expected`"),
    ({"name": 1}, TypeError, "`name` must be a str"),
])
def test_assert_close_errors_name_the_argument(kw, exc, words):
    with pytest.raises(exc, match=words.replace("(", r"\(").replace(".", r"\.")):
        t.assert_close(np.ones(3, np.float32), np.ones(3), **kw)


def test_integer_results_need_a_tolerance():
    with pytest.raises(TypeError, match="has no default tolerance: pass `dtype=` or both"):
        t.assert_close(np.ones(3, np.int32), np.ones(3))
    t.assert_close(np.ones(3, np.int32), np.ones(3), rtol=0, atol=0)
    with pytest.raises(AssertionError, match="shape"):
        t.assert_close(np.ones(3, np.float32), np.ones(4))


@pytest.mark.parametrize("kw,exc,words", [
    ({"reps": 0}, ValueError, "do_bench: `reps` must be >= 1"),
    ({"warmup": -1}, ValueError, "do_bench: `warmup` must be >= 0"),
    ({"batches": 0}, ValueError, "do_bench: `batches` must be >= 1"),
    ({"batches": 11, "reps": 10}, ValueError, "do_bench: `batches` (11) must not exceed `reps` (10)"),
    ({"peer": 3}, TypeError, "do_bench: `peer` must be a callable"),
    ({"flush_l2": 1}, TypeError, "do_bench: `flush_l2` must be True or False"),
    ({"work": -1}, ValueError, "do_bench: `work` must be a number >= 0"),
    ({"reps": 2.5}, TypeError, "do_bench: `reps` must be an int"),
])
def test_do_bench_errors_name_the_argument(kw, exc, words):
    with pytest.raises(exc, match=words.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        t.do_bench(lambda: None, **kw)


def test_timing_statistics_and_the_report_table():
    s = t.Timing("mine", [1.0, 2.0, 3.0, 4.0, 100.0])
    assert s.median_ms == 3.0 and s.min_ms == 1.0 and s.max_ms == 100.0
    assert s.q25_ms == 2.0 and s.q75_ms == 4.0 and math.isclose(s.spread, 2 / 3)
    r = t.BenchResult(s, t.Timing("peer", [6.0]), work=3e9, unit="TB/s")
    assert r.ratio == 2.0 and math.isclose(r.figure(r.subject), 1.0)
    table = t.report_table([("copy", r)]).splitlines()
    assert table[0].split("|")[1:-1][0].strip() == "benchmark"
    cells = [c.strip() for c in table[2].split("|")[1:-1]]
    assert cells == ["copy", "mine", "3000.0 us", "66.7 %", "1.000 TB/s", "peer", "6000.0 us",
                     "0.0 %", "0.500 TB/s", "2.000"]
    with pytest.raises(TypeError, match="report_table: `rows` must hold"):
        t.report_table([("x", 1)])


def test_the_benchmark_table_renders_through_format_rows():
    from numba_asynccopy.bench.report import Row, format_table

    row = Row("b" * 100, "s", "1 TB/s", "0.1", "-", "p" * 60, "2 TB/s", 0.5, ">= 0.9", "v" * 120)
    lines = format_table([row]).splitlines()
    cells = [c.strip() for c in lines[2].split("|")[1:-1]]
    assert cells[4] == "p" * 43 + "~" and cells[-1] == "v" * 89 + "~"
    assert cells[0] == "b" * 100 and cells[6] == "0.500"
