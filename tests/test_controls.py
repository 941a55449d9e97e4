"""Negative controls for every exercise in the repository (CPU, host backend): the oracle passes;
all-zero, perturbed, partial, off-by-one, multiple-of-256-only and low-precision outputs fail, each
with the diagnosis that fits."""
from __future__ import annotations

import pytest

from grader.controls import CONTROLS, reduced_axes, run_controls
from grader.spec import list_exercises, load_spec
from tests.conftest import ROOT

EXERCISES = [e.name for e in list_exercises(ROOT)]


@pytest.fixture(scope="module", params=EXERCISES)
def outcome(request):
    spec = load_spec(ROOT / "exercises" / request.param / "spec.toml")
    return spec, {r.name: r for r in run_controls(spec, examples=8)}


def test_every_control_ran(outcome):
    spec, results = outcome
    assert set(results) == set(CONTROLS)
    for r in results.values():
        assert r.passed is not None or r.diagnosis.startswith("not applicable"), r
        assert r.graded, r


def test_the_oracle_passes_and_every_spoiled_output_fails(outcome):
    spec, results = outcome
    assert results["oracle"].passed, results["oracle"].diagnosis
    for name, r in results.items():
        if name != "oracle" and r.passed is not None:
            assert r.passed is False, f"{spec.name}: control {name} passed: {r.diagnosis}"
            assert "wrong output" in r.diagnosis, r.diagnosis


def test_unwritten_elements_are_named_as_such(outcome):
    spec, results = outcome
    if any(t.inplace for t in spec.outputs):
        pytest.skip("in-place outputs hold their initial values, not the poison")
    reduction = bool(reduced_axes(spec))   # multiple_of_256 then leaves inputs out, not outputs
    for name in ("partial", "off_by_one") + (() if reduction else ("multiple_of_256",)):
        text = " ".join(results[name].details)
        assert "never written" in text, (name, results[name].details)


def test_an_all_zero_output_is_diagnosed_with_its_pattern(outcome):
    spec, results = outcome
    text = " ".join(results["all_zero"].details)
    assert "first at [" in text and "expected" in text
