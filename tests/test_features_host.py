"""Spec features beyond plain inputs/outputs, graded end to end on the host backend: scalars,
solve's argument order, in-place outputs, misaligned views (offset dims) and type variables."""
from __future__ import annotations

from dataclasses import replace

import pytest

from grader.cases import PROFILES, edge_cases, parse_token
from grader.spec import load_spec
from grader.timing import StopPolicy
from tests.conftest import FIXTURES, fake_submission as fake, grade_folder

COURSE = FIXTURES / "course"
SPEC = COURSE / "exercises" / "ex91_axpy" / "spec.toml"
PROFILE = replace(PROFILES["quick"], examples=15, max_elements=2**13)


def test_the_spec_declares_the_features():
    spec = load_spec(SPEC)
    assert spec.arg_order == ("a", "x", "y")
    assert spec.drawn == ("x", "y", "a")
    assert spec.types == {"T": ("float32", "float64")}
    assert spec.outputs[0].inplace and spec.outputs[0].offset == "oy"
    assert set(spec.tolerances) == {"float32", "float64"}
    assert spec.benchmarks[0].types == (("T", "float32"),)


def test_edge_cases_pin_or_cycle_types_and_tokens_round_trip():
    spec = load_spec(SPEC)
    cases = edge_cases(spec, PROFILE, seed=0)
    assert cases[0].type_dict == {"T": "float64"}          # pinned
    assert cases[1].type_dict == {"T": "float64"}          # cycled: index 1 of (float32, float64)
    for c in cases:
        assert parse_token(spec, c.token).types == c.types
    with pytest.raises(ValueError, match="T=int8 is not one of"):
        parse_token(spec, "n=3,ox=0,oy=0,T=int8/x=0,y=0,a=0/seed=1")


def test_the_solution_passes_with_misaligned_views_and_both_types():
    sol = COURSE / "solutions" / "ex91_axpy"
    r = grade_folder(load_spec(SPEC), sol, backend="host", profile=PROFILE, reference=sol,
                     policy=StopPolicy(min_samples=5, max_seconds=0.5, warmup_ms=1))
    assert r.correct, r.smallest_failure
    assert {"T=float32" in c.description or "T=float64" in c.description for c in r.cases} == {True}
    assert any("T=float32" in c.description for c in r.cases) and any("T=float64" in c.description for c in r.cases)
    assert r.score.correctness == 50 and r.benchmarks[0].submission.stats.n >= 5


def test_an_untouched_in_place_output_fails(tmp_path):
    r = grade_folder(load_spec(SPEC), COURSE / "student_template" / "ex91_axpy", backend="host", profile=PROFILE)
    assert not r.correct and r.smallest_failure.status == "fail"
    assert "never written" not in r.smallest_failure.message  # in-place outputs are not poisoned


def test_computing_in_the_wrong_precision_fails(tmp_path):
    body = "import numpy as np\ndef solve(a, x, y):\n    y += (a * x.astype(np.float16)).astype(y.dtype)\n"
    r = grade_folder(load_spec(SPEC), fake(tmp_path, body), backend="host", profile=PROFILE, benchmark=False)
    assert not r.correct


def test_the_views_really_are_misaligned(tmp_path):
    body = ("def solve(a, x, y):\n"
            "    assert x.ctypes.data % 256 == x.dtype.itemsize * OX, (x.ctypes.data % 256, OX)\n"
            "    y += (a * x).astype(y.dtype)\n")
    spec = load_spec(SPEC)
    for ox in (0, 3):
        token = f"n=5,ox={ox},oy=1,T=float32/x=0,y=0,a=0/seed=4"
        r = grade_folder(spec, fake(tmp_path, body.replace("OX", str(ox))), backend="host", profile=PROFILE,
                         case_token=token)
        assert r.cases[0].status == "pass", r.cases[0]


def test_scalars_reach_solve_as_numpy_scalars_of_their_dtype(tmp_path):
    body = ("import numpy as np\ndef solve(a, x, y):\n    assert type(a) is np.float32\n"
            "    y += (a * x).astype(y.dtype)\n")
    r = grade_folder(load_spec(SPEC), fake(tmp_path, body), backend="host", profile=PROFILE,
                     case_token="n=4,ox=0,oy=0,T=float64/x=0,y=0,a=1/seed=2")
    assert r.cases[0].status == "pass", r.cases[0]
    assert "a~constant(value=-3)" in r.cases[0].description
