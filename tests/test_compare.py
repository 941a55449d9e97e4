"""grader/compare.py: the pass rule, NaN/inf/poison handling, error statistics and pattern descriptions."""
from __future__ import annotations

import numpy as np
import pytest

from grader.compare import compare, describe_pattern, poison_value, resolve_atol
from grader.expr import Expr
from grader.spec import Tolerance

NAN, INF = float("nan"), float("inf")


def cmp(out, ref, rtol=0.0, atol=0.0, equal_nan=False, axes=("n",)):
    """compare() on numpy arrays; ``out`` float32 unless given as an array."""
    out = out if isinstance(out, np.ndarray) else np.array(out, np.float32)
    ref = ref if isinstance(ref, np.ndarray) else np.array(ref, np.float64)
    return compare("y", out, ref, Tolerance(rtol, atol), atol, equal_nan, np, axes)


def poisoned(n: int, dtype: str = "float32") -> np.ndarray:
    view, bits = poison_value(dtype)
    out = np.empty(n, dtype)
    out.view(view)[:] = bits
    return out


# -- the pass rule ------------------------------------------------------------------------------------
def test_exact_match_passes() -> None:
    ref = np.linspace(-3, 3, 101)
    assert cmp(ref.astype(np.float32), ref.astype(np.float32).astype(np.float64)) is None


@pytest.mark.parametrize("got, passes", [
    (1025.0, True),                 # |diff| = 1 = rtol * 1024
    (1023.0, True),
    (1025.0 + 2**-10, False),       # just above (exactly representable in float32)
    (1023.0 - 2**-10, False),
])
def test_relative_tolerance(got: float, passes: bool) -> None:
    assert (cmp([got], [1024.0], rtol=2**-10) is None) is passes


@pytest.mark.parametrize("got, passes", [
    (3.5, True), (2.5, True),       # |diff| = atol = 0.5
    (3.5 + 2**-20, False), (2.5 - 2**-20, False),
])
def test_absolute_tolerance(got: float, passes: bool) -> None:
    assert (cmp([got], [3.0], atol=0.5) is None) is passes


def test_rtol_and_atol_add_up() -> None:
    # allowed: 0.25 + 2**-3 * 8 = 1.25
    assert cmp([9.25], [8.0], rtol=2**-3, atol=0.25) is None
    assert cmp([9.25 + 2**-16], [8.0], rtol=2**-3, atol=0.25) is not None


def test_nan_in_output_fails() -> None:
    mm = cmp([1.0, NAN, 3.0], [1.0, 2.0, 3.0], atol=1.0)
    assert mm is not None
    assert (mm.n_bad, mm.n_nan, mm.n_unwritten, mm.first_bad_index) == (1, 1, 0, (1,))
    assert np.isnan(mm.first_bad_got) and mm.first_bad_expected == 2.0


def test_nan_matches_nan_only_with_equal_nan() -> None:
    assert cmp([1.0, NAN], [1.0, NAN], equal_nan=True) is None
    mm = cmp([1.0, NAN], [1.0, NAN], equal_nan=False)
    assert mm is not None and (mm.n_bad, mm.n_nan) == (1, 1)
    assert cmp([1.0, 5.0], [1.0, NAN], equal_nan=True) is not None  # a number where NaN is expected


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # inf - inf inside compare (numpy only)
def test_infinities() -> None:
    assert cmp([INF, -INF, 1.0], [INF, -INF, 1.0], rtol=1e-5) is None
    mm = cmp([INF, -INF], [-INF, -INF])
    assert mm is not None and mm.n_bad == 1 and mm.first_bad_index == (0,)
    assert cmp([INF], [1e30], rtol=1.0, atol=1.0) is not None       # overflow where a number is expected
    assert cmp([-INF], [-1e30], rtol=1e-5) is not None
    assert cmp([1.0], [INF]) is not None                              # rtol = 0


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("got, expected", [(1.0, INF), (-INF, INF), (INF, -INF), (3.0e38, INF)])
def test_wrong_value_where_infinity_is_expected_fails(got: float, expected: float) -> None:
    assert not np.isclose(got, expected, rtol=1e-5, atol=0.0)
    assert cmp([got], [expected], rtol=1e-5) is not None


def test_shape_mismatch_raises() -> None:
    with pytest.raises(ValueError, match=r"y: shape \(3,\) differs from the oracle's \(4,\)"):
        cmp([1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0])


# -- poison ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_unwritten_elements_are_counted(dtype: str) -> None:
    out = poisoned(10, dtype)
    ref = np.arange(10, dtype=np.float64)
    out[:6] = ref[:6]
    out[2] = np.nan  # a real NaN, written by the kernel
    mm = compare("y", out, ref, Tolerance(0.0, 0.0), 0.0, False, np, ("n",))
    assert (mm.n_bad, mm.n_unwritten, mm.n_nan) == (5, 4, 1)
    assert mm.first_bad_index == (2,)


def test_poison_values_are_nan_for_floats() -> None:
    for dtype in ("float16", "float32", "float64"):
        assert np.isnan(poisoned(3, dtype)).all()
    assert poison_value("int32") == (np.uint32, 0xA5A5A5A5)


# -- statistics of a mismatch -----------------------------------------------------------------------------
def test_error_statistics_and_first_bad() -> None:
    ref = np.array([[1.0, 2.0, 4.0], [8.0, 16.0, 32.0]])
    out = np.array([[1.0, 2.0, 4.5], [8.0, 15.0, 32.0]], np.float32)
    mm = cmp(out, ref, atol=0.1, axes=("rows", "cols"))
    assert (mm.output, mm.n_total, mm.n_bad, mm.n_unwritten, mm.n_nan) == ("y", 6, 2, 0, 0)
    assert mm.max_abs_err == 1.0           # 16 -> 15
    assert mm.max_rel_err == 0.125         # 4 -> 4.5
    assert mm.first_bad_index == (0, 2)
    assert (mm.first_bad_got, mm.first_bad_expected) == (4.5, 4.0)
    assert (mm.atol, mm.rtol) == (0.1, 0.0)
    assert mm.pattern == "only flat indices 2, 4"


def test_statistics_ignore_non_finite_errors() -> None:
    mm = cmp([NAN, 2.5, 3.0], [1.0, 2.0, 3.0])
    assert (mm.max_abs_err, mm.max_rel_err) == (0.5, 0.25)
    mm = cmp([NAN, NAN], [1.0, 2.0])
    assert mm.max_abs_err == INF and mm.max_rel_err == INF


def test_relative_error_against_zero_reference_is_finite() -> None:
    mm = cmp([1e-3], [0.0])
    assert mm.max_abs_err == pytest.approx(1e-3) and mm.max_rel_err > 1e300


# -- integer outputs are exact ----------------------------------------------------------------------------
def test_integer_outputs_are_compared_exactly() -> None:
    ref = np.array([1, 2, 4], np.int64)
    loose = Tolerance(rtol=1.0, atol=10.0)  # ignored for integers
    assert compare("k", np.array([1, 2, 4], np.int32), ref, loose, 10.0, False, np) is None
    mm = compare("k", np.array([1, 2, 3], np.int32), ref, loose, 10.0, False, np)
    assert (mm.n_bad, mm.n_nan, mm.first_bad_index, mm.first_bad_got, mm.first_bad_expected) == (1, 0, (2,), 3.0, 4.0)
    # against a float64 oracle too
    assert compare("k", np.array([1, 2, 5], np.int32), ref.astype(np.float64), loose, 10.0, False, np) is not None
    # poisoned integer elements are "never written"
    out = np.array([1, 2, 4], np.int32)
    out.view(np.uint32)[0] = 0xA5A5A5A5
    mm = compare("k", out, ref, loose, 10.0, False, np)
    assert (mm.n_bad, mm.n_unwritten) == (1, 1)


# -- summary ----------------------------------------------------------------------------------------------
def test_summary_mentions_counts_first_index_and_pattern() -> None:
    out = poisoned(8)
    ref = np.arange(8, dtype=np.float64)
    out[:3] = ref[:3]
    out[3] = np.nan
    mm = compare("y", out, ref, Tolerance(0.0, 0.0), 0.0, False, np, ("n",))
    text = mm.summary()
    assert text.startswith("y: 5 of 8 elements wrong; 4 never written (still hold the poison); 1 NaN; ")
    assert "first at [3]: got nan, expected 3" in text
    assert text.endswith("; pattern: every element with n >= 3")


def test_summary_of_finite_errors() -> None:
    mm = cmp(np.array([[1.0, 2.5], [3.0, 5.0]], np.float32), np.array([[1.0, 2.0], [3.0, 4.0]]),
             atol=0.1, axes=("rows", "cols"))
    assert mm.summary() == ("y: 2 of 4 elements wrong; first at [0, 1]: got 2.5, expected 2; "
                            "max abs err 1, max rel err 0.25 (atol 0.1, rtol 0); pattern: every element with cols >= 1")


# -- describe_pattern -------------------------------------------------------------------------------------
def grid(rows: int, cols: int, rule) -> np.ndarray:
    r, c = np.indices((rows, cols))
    return rule(r, c)


@pytest.mark.parametrize("bad, axes, expected", [
    (np.ones((4, 8), bool), ("rows", "cols"), "every element"),
    (np.zeros((4, 8), bool), ("rows", "cols"), None),
    (grid(4, 8, lambda r, c: c >= 5), ("rows", "cols"), "every element with cols >= 5"),
    (grid(4, 8, lambda r, c: c >= 5), (), "every element with axis 1 >= 5"),
    (grid(4, 8, lambda r, c: r >= 2), ("rows", "cols"), "every element with rows >= 2"),
    (grid(4, 8, lambda r, c: r <= 1), ("rows", "cols"), "every element with rows <= 1"),
    (grid(4, 8, lambda r, c: c <= 6), ("rows", "cols"), "every element with cols <= 6"),
    (grid(4, 8, lambda r, c: (2 <= c) & (c <= 4)), ("rows", "cols"), "every element with 2 <= cols <= 4"),
    (grid(6, 3, lambda r, c: (1 <= r) & (r <= 3)), ("rows", "cols"), "every element with 1 <= rows <= 3"),
    (np.arange(100) >= 37, ("n",), "every element with n >= 37"),
    (grid(4, 8, lambda r, c: (5 <= r * 8 + c) & (r * 8 + c <= 12)), ("rows", "cols"),
     "the 8 elements with flat index 5..12"),
    (np.arange(64) % 4 == 3, ("n",), "every element with flat index % 4 == 3"),
    (np.arange(1000) % 2 == 0, ("n",), "every element with flat index % 2 == 0"),
    (grid(4, 32, lambda r, c: (r * 32 + c) % 32 == 7), ("rows", "cols"), "every element with 7 <= cols <= 7"),
    (grid(4, 32, lambda r, c: (r * 32 + c) % 16 == 7), ("rows", "cols"), "every element with flat index % 16 == 7"),
    (np.isin(np.arange(100), [3, 17, 40]), ("n",), "only flat indices 3, 17, 40"),
    (np.arange(100) % 3 == 0, ("n",), None),  # not a power of 2, too many to list
    (np.random.default_rng(0).random(1000) < 0.5, ("n",), None),
])
def test_describe_pattern(bad: np.ndarray, axes, expected) -> None:
    assert describe_pattern(bad, np, axes) == expected


# -- resolve_atol -----------------------------------------------------------------------------------------
def test_resolve_atol_expression() -> None:
    tol = Tolerance(1e-5, Expr("2 * eps * sqrt(n) * abs_sum(x)"))
    x = np.array([-1, 2, -3, 4] * 4, np.float32)  # abs_sum = 40, n = 16
    assert resolve_atol(tol, "float32", {"n": 16}, {"x": x}, np) == 2 * 2**-23 * 4 * 40
    assert resolve_atol(tol, "float64", {"n": 16}, {"x": x}, np) == 2 * 2**-52 * 4 * 40
    big = np.full(4, 3e38, np.float32)  # summed in float64: no overflow
    assert resolve_atol(Tolerance(0, Expr("abs_sum(x)")), "float32", {}, {"x": big}, np) == pytest.approx(1.2e39)


def test_resolve_atol_constant() -> None:
    assert resolve_atol(Tolerance(0.0, 0.25), "float32", {"n": 3}, {}, np) == 0.25
    assert resolve_atol(Tolerance(0.0, Expr("eps * cols")), "float16", {"cols": 4}, {}, np) == 4 * 2**-10


# -- known problems ---------------------------------------------------------------------------------------
def test_unwritten_element_fails_even_where_nan_is_expected() -> None:
    out = poisoned(2)
    out[1] = 1.0
    mm = cmp(out, [NAN, 1.0], equal_nan=True)
    assert mm is not None and mm.n_unwritten == 1


def test_nan_count_covers_only_wrong_elements() -> None:
    mm = cmp([NAN, 2.0], [NAN, 1.0], equal_nan=True)
    assert mm.n_bad == 1 and mm.n_nan == 0
