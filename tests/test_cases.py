"""grader/cases.py: generated shapes, edge cases, case tokens, input generation, seeds, settings."""
from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from grader.cases import (MAX_SEED, PROFILES, Case, case_strategy, combine_seed, edge_cases, hidden_counts,
                          make_inputs, parse_token)
from grader.spec import Spec, elements, load_spec

ROOT = Path(__file__).resolve().parents[1]
NAMES = ["ex01_vector_add", "ex04_reduction", "ex07_softmax"]
SPECS = {n: load_spec(ROOT / "exercises" / n / "spec.toml") for n in NAMES}
QUICK, GRADING = PROFILES["quick"], PROFILES["grading"]
TIGHT = replace(QUICK, max_elements=3000)  # a budget that binds for every spec

# Fast, reproducible property runs for the tests themselves (the strategies reject with assume()).
CHECK = settings(max_examples=60, deadline=None, database=None, derandomize=True,
                 suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


def small_spec(tmp_path: Path) -> Spec:
    """Four inputs, one per distribution kind; dims with multiple_of; one hidden edge case."""
    path = tmp_path / "ex98_kinds" / "spec.toml"
    path.parent.mkdir()
    path.write_text('''
[exercise]
name = "ex98_kinds"
title = "Kinds"
points = { correctness = 1, performance = 1 }
[signature]
inputs = [
  { name = "g", dtype = "float32", shape = ["n"] },
  { name = "u", dtype = "float64", shape = ["n"] },
  { name = "i", dtype = "int32", shape = ["n"] },
  { name = "s", dtype = "uint8", shape = ["m", "n"] },
]
outputs = [{ name = "y", dtype = "float32", shape = ["n"] }]
[dims.n]
min = 1
max = 1000000
[dims.m]
min = 5
max = 300
multiple_of = 8
[[values.g]]
kind = "normal"
mean = 5
std = 2
[[values.g]]
kind = "normal"
mean = -1
std = 0.5
[[values.u]]
kind = "uniform"
low = -3
high = 7
[[values.i]]
kind = "integers"
low = -5
high = 6
[[values.s]]
kind = "skewed"
low = 1
high = 200
value = 0
fraction = 0.75
[[edge_cases]]
n = 1
m = 8
[[edge_cases]]
n = 2
m = 16
hidden = true
[[edge_cases]]
n = 3
m = 296
[tolerance.float32]
rtol = 0
atol = 0
[[benchmark]]
name = "b"
dims = { n = 1024, m = 8 }
bytes = "n"
''')
    return load_spec(path)


# -- generated cases -----------------------------------------------------------------------------------
def _strategy_respects(name: str, profile):
    spec = SPECS[name]

    @CHECK
    @given(case=case_strategy(spec, profile))
    def test(case: Case) -> None:
        assert [k for k, _ in case.dims] == [d.name for d in spec.dims]
        assert spec.check_dims(case.dim_dict) is None
        assert elements(spec, case.dim_dict) <= profile.max_elements
        assert [k for k, _ in case.dists] == [t.name for t in spec.inputs]
        assert all(0 <= k < len(spec.values[t]) for t, k in case.dists)
        assert 0 <= case.seed <= MAX_SEED and case.origin == "hypothesis"

    return test


test_ex01_cases_within_quick_budget = _strategy_respects("ex01_vector_add", QUICK)
test_ex04_cases_within_quick_budget = _strategy_respects("ex04_reduction", QUICK)
test_ex07_cases_within_quick_budget = _strategy_respects("ex07_softmax", QUICK)
test_ex01_cases_within_tight_budget = _strategy_respects("ex01_vector_add", TIGHT)
test_ex07_cases_within_tight_budget = _strategy_respects("ex07_softmax", TIGHT)


def test_multiple_of_is_respected(tmp_path: Path) -> None:
    spec = small_spec(tmp_path)
    seen = set()

    @CHECK
    @given(case=case_strategy(spec, TIGHT))
    def check(case: Case) -> None:
        m = case.dim_dict["m"]
        assert m % 8 == 0 and 8 <= m <= 296, m   # multiples of 8 within [5, 300]
        assert elements(spec, case.dim_dict) <= 3000
        seen.add(m)

    check()
    assert len(seen) >= 2  # it explores, not just the minimum


def test_tokens_round_trip() -> None:
    spec = SPECS["ex07_softmax"]

    @CHECK
    @given(case=case_strategy(spec, QUICK))
    def check(case: Case) -> None:
        back = parse_token(spec, case.token)
        assert (back.dims, back.dists, back.seed, back.origin) == (case.dims, case.dists, case.seed, "repro")

    check()


# -- edge cases ----------------------------------------------------------------------------------------
def test_edge_cases_of_ex07() -> None:
    spec = SPECS["ex07_softmax"]
    cases = edge_cases(spec, QUICK, seed=5)
    n = len(spec.edge_cases)
    assert [c.dims for c in cases] == [e.dims for e in spec.edge_cases]
    # each takes the distributions in turn, unless it pins one (values = { x = K })
    assert [c.dists for c in cases] == [(("x", dict(e.values).get("x", i % 8)),) for i, e in enumerate(spec.edge_cases)]
    assert dict(cases[7].dists)["x"] == 4 and cases[7].dim_dict == {"rows": 4097, "cols": 3}  # -inf rows
    assert [c.seed for c in cases] == [5 * 7919 + i for i in range(n)]
    assert {c.origin for c in cases} == {"edge"}
    wrapped = edge_cases(spec, QUICK, seed=MAX_SEED)  # (2**32 - 1) * 7919 + i  mod 2**32
    assert [c.seed for c in wrapped] == [2**32 - 7919 + i for i in range(n)]


@pytest.mark.parametrize("name", NAMES)
def test_edge_cases_use_every_distribution(name: str) -> None:
    spec = SPECS[name]
    cases = edge_cases(spec, QUICK, seed=0)
    assert len(cases) == sum(not e.hidden for e in spec.edge_cases) >= 10
    for t in spec.inputs:
        assert {dict(c.dists)[t.name] for c in cases} == set(range(len(spec.values[t.name])))


def test_hidden_edge_cases_only_when_the_profile_runs_them(tmp_path: Path) -> None:
    spec = small_spec(tmp_path)
    assert hidden_counts(spec) == (1, 0)
    quick = edge_cases(spec, QUICK, seed=1)
    assert [c.dim_dict for c in quick] == [{"n": 1, "m": 8}, {"n": 3, "m": 296}]
    assert [dict(c.dists)["g"] for c in quick] == [0, 1]
    grading = edge_cases(spec, GRADING, seed=1)
    assert [c.dim_dict for c in grading] == [{"n": 1, "m": 8}, {"n": 2, "m": 16}, {"n": 3, "m": 296}]
    assert [dict(c.dists)["g"] for c in grading] == [0, 1, 0]
    assert [dict(c.dists)["u"] for c in grading] == [0, 0, 0]  # one distribution only


# -- tokens ----------------------------------------------------------------------------------------------
def test_token_format_and_parse() -> None:
    spec = SPECS["ex07_softmax"]
    case = Case((("rows", 3), ("cols", 1025)), (("x", 1),), 42)
    assert case.token == "rows=3,cols=1025/x=1/seed=42"
    assert case.size() == 3075
    assert case.describe(spec) == "rows=3, cols=1025 (x~uniform(low=-10000,high=10000))"
    back = parse_token(spec, "cols=1025,rows=3/x=1/seed=42")  # order of the dims does not matter
    assert back == Case((("rows", 3), ("cols", 1025)), (("x", 1),), 42, "repro")
    assert parse_token(spec, "rows=2,cols=2//seed=7").dists == (("x", 0),)  # distribution 0 by default
    assert parse_token(spec, f"rows=2,cols=2/x=3/seed={2**32 + 9}").seed == 9


@pytest.mark.parametrize("token, fragment", [
    ("rows=3,cols=5", "expected 'DIM=V,.../INPUT=K,.../seed=S'"),
    ("rows=3,cols=5/x=0", "expected 'DIM=V,.../INPUT=K,.../seed=S'"),
    ("rows=3,cols=5/x=0/sed=1", "expected 'DIM=V,.../INPUT=K,.../seed=S'"),
    ("rows=3,cols=five/x=0/seed=1", "expected 'DIM=V,.../INPUT=K,.../seed=S'"),
    ("rows=3,cols=5/x=0/seed=1.5", "expected 'DIM=V,.../INPUT=K,.../seed=S'"),
    ("rows=3=4,cols=5/x=0/seed=1", "expected 'DIM=V,.../INPUT=K,.../seed=S'"),
    ("rows,cols=5/x=0/seed=1", "expected 'DIM=V,.../INPUT=K,.../seed=S'"),
    ("rows=0,cols=5/x=0/seed=1", "rows=0 is outside [1, 67108864]"),
    ("rows=3/x=0/seed=1", "cols is missing"),
    ("rows=9000,cols=9000/x=0/seed=1", "constraint 'rows * cols <= 2**26' does not hold"),
    ("rows=3,cols=5/x=8/seed=1", "x=8 but the spec has 8 distributions"),
    ("rows=3,cols=5/x=-1/seed=1", "x=-1 but the spec has 8 distributions"),
])
def test_bad_tokens(token: str, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_token(SPECS["ex07_softmax"], token)
    text = str(info.value)
    assert text.startswith(f"--case {token!r}: ") and fragment in text and "\n" not in text


# -- inputs ----------------------------------------------------------------------------------------------
def test_make_inputs_shapes_dtypes_and_determinism() -> None:
    spec = SPECS["ex01_vector_add"]
    case = Case((("n", 1000),), (("a", 0), ("b", 1)), seed=7)
    a, b = make_inputs(spec, case, np).values()
    for arr in (a, b):
        assert arr.dtype == np.float32 and arr.shape == (1000,) and arr.flags.c_contiguous
    a2, b2 = make_inputs(spec, case, np).values()
    assert np.array_equal(a, a2) and np.array_equal(b, b2)
    a3, _ = make_inputs(spec, replace(case, seed=8), np).values()
    assert not np.array_equal(a, a3)
    # b: uniform(-1e-3, 1e-3); a: normal(0, 1)
    assert np.abs(b).max() < 1e-3 and np.abs(a).max() > 1e-2
    # same distribution for both inputs: still different arrays (each input has its own stream)
    a4, b4 = make_inputs(spec, Case((("n", 1000),), (("a", 0), ("b", 0)), seed=7), np).values()
    assert not np.array_equal(a4, b4)


def test_make_inputs_2d_shape() -> None:
    spec = SPECS["ex07_softmax"]
    (x,) = make_inputs(spec, Case((("rows", 3), ("cols", 5)), (("x", 2),), seed=1), np).values()
    assert x.shape == (3, 5) and x.dtype == np.float32 and x.flags.c_contiguous
    assert 7980 < x.min() and x.max() < 8020  # normal(8000, 3)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("seed", [0, 1, 123456789, MAX_SEED])
def test_make_inputs_never_all_zero(name: str, seed: int) -> None:
    spec = SPECS[name]
    dims = {d.name: 64 for d in spec.dims}
    for t in spec.inputs:
        for k in range(len(spec.values[t.name])):
            dists = tuple((u.name, k if u.name == t.name else 0) for u in spec.inputs)
            case = Case(tuple((d.name, 64) for d in spec.dims), dists, seed)
            arr = make_inputs(spec, case, np)[t.name]
            assert arr.shape == t.concrete_shape(dims)
            assert np.count_nonzero(arr) > 0, (name, t.name, k, seed)


def test_values_follow_their_distribution(tmp_path: Path) -> None:
    spec = small_spec(tmp_path)
    n = 200_000
    g, u, i, s = make_inputs(spec, Case((("n", n), ("m", 8)), (("g", 0), ("u", 0), ("i", 0), ("s", 0)), 3), np).values()
    assert (g.dtype, u.dtype, i.dtype, s.dtype) == (np.float32, np.float64, np.int32, np.uint8)
    assert s.shape == (8, n) and s.flags.c_contiguous
    assert abs(g.mean() - 5) < 0.02 and abs(g.std() - 2) < 0.02           # normal(5, 2)
    assert -3 <= u.min() and u.max() < 7 and abs(u.mean() - 2) < 0.05      # uniform[-3, 7)
    assert set(np.unique(i).tolist()) == set(range(-5, 6))                 # integers[-5, 6): -5..5
    zeros = np.count_nonzero(s == 0) / s.size                              # skewed: 75% equal 0 ...
    assert abs(zeros - 0.75) < 0.005
    rest = s[s != 0]
    assert rest.min() >= 1 and rest.max() <= 199                           # ... the rest in [1, 200)
    g1 = make_inputs(spec, Case((("n", n), ("m", 8)), (("g", 1), ("u", 0), ("i", 0), ("s", 0)), 3), np)["g"]
    assert abs(g1.mean() + 1) < 0.01 and abs(g1.std() - 0.5) < 0.01        # normal(-1, 0.5)


# -- seeds and settings ----------------------------------------------------------------------------------
def test_combine_seed() -> None:
    assert combine_seed(5, None) == 5 and combine_seed(5, "") == 5
    mixed = combine_seed(5, "s3cret")
    assert mixed == combine_seed(5, "s3cret")
    assert mixed == int.from_bytes(hashlib.sha256(b"5:s3cret").digest()[:8], "little") % 2**32
    assert mixed != 5 and mixed != combine_seed(6, "s3cret") and mixed != combine_seed(5, "other")
    for seed in (0, 1, -1, 2**32, 2**63, 10**30):
        assert 0 <= combine_seed(seed, "s3cret") < 2**32


def test_hypothesis_settings_ignore_the_loaded_profile() -> None:
    before = settings.get_current_profile_name()
    try:
        for loaded in ("default", "ci"):  # CI=true makes hypothesis load "ci" (derandomize=True)
            settings.load_profile(loaded)
            s = QUICK.hypothesis_settings()
            assert s.deadline is None and s.database is None
            assert s.derandomize is False and s.print_blob is False
            assert s.max_examples == 25
            assert GRADING.hypothesis_settings().max_examples == 120
    finally:
        settings.load_profile(before)


def test_ramp_is_uneven_with_the_same_sum_in_every_draw() -> None:
    """kind = "ramp": evenly spaced from low to high, both included, shuffled per draw, so a
    benchmark's work (the sum) is the same for every input set while the order is not."""
    from grader.cases import draw_values
    draws = [draw_values(np, np.random.RandomState(s), "ramp", {"low": 1, "high": 130000}, (16,), "int32")
             for s in (1, 2)]
    for a in draws:
        assert a.dtype == np.int32 and sorted(a.tolist())[0] == 1 and a.max() == 130000
        assert abs(int(a.sum()) - 16 * 65000.5) <= 8   # each value rounded by at most 1/2
    assert sorted(draws[0].tolist()) == sorted(draws[1].tolist()) and draws[0].tolist() != draws[1].tolist()
    x = draw_values(np, np.random.RandomState(0), "ramp", {"low": -1.0, "high": 1.0}, (2, 3), "float32")
    assert x.shape == (2, 3) and sorted(x.ravel().tolist()) == pytest.approx([-1, -0.6, -0.2, 0.2, 0.6, 1])
