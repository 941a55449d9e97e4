"""The spec's [prepare] hook (grader.instance.draw_inputs): values of one input that depend on
another's. A tiny gather exercise, y = x[idx], whose prepare turns the drawn idx into a random
permutation of [0, n): graded on the host backend, a correct gather gets full correctness, one
that ignores idx fails, and a spec or reference.py that gets the hook wrong is refused in one line."""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from grader.spec import SpecError, load_spec
from tests.conftest import fake_submission, grade_folder

SPEC = """
[exercise]
name = "ex93_gather"
title = "Test exercise: gather"
points = { correctness = 100, performance = 0 }

[signature]
inputs = [
  { name = "x", dtype = "float32", shape = ["n"] },
  { name = "idx", dtype = "int32", shape = ["n"] },
]
outputs = [{ name = "y", dtype = "float32", shape = ["n"] }]

[dims.n]
min = 2
max = 3000

[[values.x]]
kind = "normal"
mean = 0
std = 1
[[values.idx]]
kind = "integers"
low = 0
high = 100000

[[edge_cases]]
n = 2
[[edge_cases]]
n = 777

[tolerance.float32]
rtol = 0
atol = 0

[[benchmark]]
name = "n=2048"
dims = { n = 2048 }
bytes = "12 * n"

[performance]
ceiling = "memory"

[limits]
compile_s = 30
case_s = 3
total_s = 120
"""
REFERENCE = """
def reference(xp, x, idx):
    return x.astype(xp.float64)[idx]


def prepare(xp, rs, x, idx):
    return x, xp.asarray(rs.permutation(idx.shape[0]).astype(idx.dtype))
"""


def _exercise(tmp_path: Path, prepare_section: str = '[prepare]\nfunction = "prepare"\n',
              reference: str = REFERENCE) -> Path:
    folder = tmp_path / "ex93_gather"
    folder.mkdir()
    (folder / "spec.toml").write_text(SPEC + prepare_section)
    (folder / "reference.py").write_text(textwrap.dedent(reference))
    return folder / "spec.toml"


def test_a_correct_gather_passes_and_one_that_ignores_the_permutation_fails(tmp_path: Path) -> None:
    spec = load_spec(_exercise(tmp_path))
    assert spec.prepare == "prepare"
    good = fake_submission(tmp_path, "def solve(x, idx, y):\n    y[...] = x[idx]\n", "good")
    r = grade_folder(spec, good, backend="host", benchmark=False)
    assert r.status == "graded" and r.correct and r.score.correctness == 100, r.smallest_failure
    # without the hook the drawn idx (up to 100000) is out of range for every n: the same
    # submission would raise, so passing above means solve saw the prepared permutation
    lazy = fake_submission(tmp_path, "def solve(x, idx, y):\n    y[...] = x\n", "lazy")
    r = grade_folder(spec, lazy, backend="host", benchmark=False)
    assert r.status == "graded" and not r.correct and r.score.correctness == 0


def test_draw_inputs_is_deterministic_and_applies_the_hook(tmp_path: Path) -> None:
    from grader.cases import PROFILES, edge_cases
    from grader.instance import draw_inputs, load_oracle
    spec = load_spec(_exercise(tmp_path))
    case = edge_cases(spec, PROFILES["quick"], seed=0)[1]
    a = draw_inputs(spec, case, np, load_oracle(spec))
    b = draw_inputs(spec, case, np, load_oracle(spec))
    assert sorted(a["idx"].tolist()) == list(range(777)) and a["idx"].dtype == np.int32
    assert np.array_equal(a["idx"], b["idx"]) and np.array_equal(a["x"], b["x"])


@pytest.mark.parametrize("section, problem", [
    ('[prepare]\nfunction = "not a name"\n', "is not a Python function name"),
    ('[prepare]\nfuncton = "prepare"\n', "unknown key 'functon'"),
    ("[prepare]\n", "has no 'function'"),
])
def test_a_broken_prepare_section_is_refused(tmp_path: Path, section: str, problem: str) -> None:
    with pytest.raises(SpecError, match=problem):
        load_spec(_exercise(tmp_path, section))


def test_a_prepare_function_reference_py_lacks_is_named(tmp_path: Path) -> None:
    from grader.instance import load_oracle
    spec = load_spec(_exercise(tmp_path, '[prepare]\nfunction = "shuffle"\n'))
    with pytest.raises(AttributeError, match=r"reference.py: the spec's \[prepare\] names shuffle\(xp, rs, \*inputs\)"):
        load_oracle(spec)


@pytest.mark.parametrize("returned, problem", [
    ("x", r"returned 1 array for the 2 drawn values \['x', 'idx'\]"),
    ("None", r"returned None; fix: return the 2 drawn values"),
    ("x, idx[n]", r"prepare\(xp, rs, x, idx\) raised NameError: name 'n' is not defined \(reference.py:7\)"),
    ("x, idx[:-1]", r"returned 'idx' as int32 \(776,\), drawn as int32 \(777,\)"),
    ("x, idx.astype(xp.int64)", r"returned 'idx' as int64 \(777,\), drawn as int32"),
])
def test_a_prepare_that_changes_a_shape_dtype_or_count_is_refused(tmp_path: Path, returned: str, problem: str) -> None:
    from grader.cases import PROFILES, edge_cases
    from grader.instance import draw_inputs, load_oracle
    ref = REFERENCE.replace("return x, xp.asarray(rs.permutation(idx.shape[0]).astype(idx.dtype))", f"return {returned}")
    spec = load_spec(_exercise(tmp_path, reference=ref))
    with pytest.raises(ValueError, match=problem):
        draw_inputs(spec, edge_cases(spec, PROFILES["quick"], seed=0)[1], np, load_oracle(spec))


def test_the_oracle_s_own_functions_are_refused_as_prepare(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="function 'reference' is the oracle's own"):
        load_spec(_exercise(tmp_path, '[prepare]\nfunction = "reference"\n'))


@pytest.mark.parametrize("body, ok", [
    ("return x, xp.asarray(rs.permutation(idx.shape[0]).astype(idx.dtype))", True),
    ("return x, xp.asarray(np.random.permutation(idx.shape[0]).astype(idx.dtype))", False),
])
def test_grade_check_says_whether_prepare_is_reproducible(tmp_path: Path, body: str, ok: bool) -> None:
    """A prepare that draws from anything but its rs gives other inputs for the same case (a case's
    token could not reproduce it): `grade check` fails it, naming the values that differ."""
    from grader.check import check_exercise
    from grader.spec import list_exercises
    ref = "import numpy as np\n" + REFERENCE.replace(
        "return x, xp.asarray(rs.permutation(idx.shape[0]).astype(idx.dtype))", body)
    course = tmp_path / "course"
    (course / "exercises").mkdir(parents=True)
    _exercise(course / "exercises", reference=ref)
    (course / "exercises" / "ex93_gather" / "README.md").write_text("# gather\n")
    ex = next(e for e in list_exercises(course) if e.name == "ex93_gather")
    rows = {r.item: r for r in check_exercise(ex, gpu=False, controls=False)}
    assert rows["prepare"].status == ("ok" if ok else "fail"), rows["prepare"]
    if not ok:
        assert "gave different idx for the same case" in rows["prepare"].detail
