"""Instructor and CI commands through click's runner: check, calibrate's refusal, publish, new,
batch (resume), and the gradescope/junit writers. All on the CPU (host backend, no GPU)."""
from __future__ import annotations

import json
import shutil
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from grader import calibrate, cli, cli_batch
from grader.device import ClockState
from grader.timing import summarize
from tests.conftest import FIXTURES, ROOT

COURSE = FIXTURES / "course"


@pytest.fixture
def course(tmp_path):
    dest = tmp_path / "course"
    shutil.copytree(COURSE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


# -- check -----------------------------------------------------------------------------------------
def test_check_passes_on_the_fixture_course_and_lists_what_it_skipped(runner, course):
    out = runner.invoke(cli.main, ["check", "--root", str(course)])
    assert out.exit_code == 0, out.output
    for item in ("files", "spec", "points", "control oracle", "control all_zero", "control partial",
                 "control off_by_one", "control perturbed", "control low_precision"):
        assert item in out.output
    assert "GPU: solution full marks, stub zero" in out.output and "no GPU here" in out.output
    assert "all checks that ran passed" in out.output and "skipped" in out.output   # never an unqualified pass


def test_check_says_which_exercise_it_is_on_in_a_log(runner, course):
    """Without a terminal (a CI log) the spinner is not drawn: each exercise is named on stderr as
    it starts, so the minutes `grade check` takes are not silent."""
    out = runner.invoke(cli.main, ["check", "--root", str(course)])
    assert out.exit_code == 0, out.output
    names = [p.name for p in sorted((course / "exercises").iterdir()) if (p / "spec.toml").is_file()]
    assert names and all(f"checking {n}..." in out.stderr for n in names), out.stderr
    assert "checking" not in out.stdout.split("exercise")[0]   # the table on stdout is unchanged


def test_check_without_solutions_skips_the_stub_comparison(runner, course):
    shutil.rmtree(course / "solutions")
    out = runner.invoke(cli.main, ["check", "ex90", "--root", str(course)])
    line = next(l for l in out.output.splitlines() if "stub: not the solution" in l)
    assert "skip" in line and "ok" not in line.split("stub: not the solution")[1].split()[0]


def test_check_fails_on_a_broken_stub_and_a_bad_spec(runner, course):
    (course / "student_template" / "ex90_add" / "solution.py").write_text("def solve(a):\n    pass\n")
    out = runner.invoke(cli.main, ["check", "ex90", "--root", str(course)])
    assert out.exit_code == cli.EXIT_BELOW
    assert "solve takes 1 positional argument; the exercise passes 3" in out.output
    spec = course / "exercises" / "ex91_axpy" / "spec.toml"
    spec.write_text(spec.read_text().replace('kind = "constant"', 'kind = "constantly"'))
    out = runner.invoke(cli.main, ["check", "ex91", "--root", str(course)])
    assert out.exit_code == cli.EXIT_BELOW and "kind 'constantly' is unknown" in out.output


def test_check_names_an_oracle_without_reference_once(runner, course):
    """A new user's trial: "reference.py: AttributeError: /tmp/.../reference.py: defines no reference(xp, *args)"."""
    ref = course / "exercises" / "ex90_add" / "reference.py"
    ref.write_text(ref.read_text().replace("def reference(", "def not_the_reference("))
    out = runner.invoke(cli.main, ["check", "ex90", "--root", str(course), "--no-controls"])
    assert out.exit_code == cli.EXIT_BELOW
    line = next(ln for ln in out.output.splitlines() if " oracle " in ln)
    assert f"{ref}: defines no reference(xp, *args); fix: add it" in line, line
    assert line.count("reference.py") == 1 and "AttributeError" not in line, line
    ref.write_text("x = (\n")    # what reference.py itself raises is still named with its file
    out = runner.invoke(cli.main, ["check", "ex90", "--root", str(course), "--no-controls"])
    assert "reference.py: SyntaxError:" in next(ln for ln in out.output.splitlines() if " oracle " in ln)
    assert "not run (--no-controls)" not in out.output   # the broken oracle's row says why none ran


def test_check_lists_the_controls_it_was_told_to_skip(runner, course):
    out = runner.invoke(cli.main, ["check", "ex90", "--root", str(course), "--no-controls"])
    assert out.exit_code == 0, out.output
    assert "negative controls" in out.output and "not run (--no-controls)" in out.output


def test_check_catches_an_oracle_that_cannot_tell_right_from_wrong(runner, course):
    """If the spec's tolerance accepts anything, the spoiled controls pass: the check says so."""
    spec = course / "exercises" / "ex90_add" / "spec.toml"
    spec.write_text(spec.read_text().replace("rtol = 1e-6\natol = 0", "rtol = 1e9\natol = 1e9"))
    out = runner.invoke(cli.main, ["check", "ex90", "--root", str(course)])
    assert out.exit_code == cli.EXIT_BELOW
    assert "passes (expected to fail)" in out.output


# -- new -------------------------------------------------------------------------------------------
def test_new_scaffolds_an_exercise_that_check_accepts_with_todos(runner, course):
    out = runner.invoke(cli.main, ["new", "ex17_copy", "--root", str(course)])
    assert out.exit_code == 0, out.output
    assert (course / "exercises" / "ex17_copy" / "spec.toml").is_file()
    out = runner.invoke(cli.main, ["check", "ex17", "--root", str(course)])
    assert out.exit_code == 0, out.output
    assert "TODOs" in out.output and "todo" in out.output
    assert "3 edge cases, 1 benchmark shape " in out.output + " ", out.output    # one shape: singular
    # TODO locations relative to the course: solutions/ and student_template/ both have a kernel.cu
    from grader.check import check_exercise
    from grader.spec import resolve_exercise
    (todo,) = [r for r in check_exercise(resolve_exercise(course, "ex17"), False, False) if r.item == "TODOs"]
    assert todo.detail.startswith("6 left: exercises/ex17_copy/spec.toml:1, "), todo.detail
    assert "solutions/ex17_copy/kernel.cu:1" in todo.detail and " ex17_copy/kernel.cu" not in todo.detail


def test_new_from_an_existing_exercise_renames_it(runner, course):
    out = runner.invoke(cli.main, ["new", "ex18_axpy", "--from", "ex91", "--root", str(course)])
    assert out.exit_code == 0, out.output
    text = (course / "exercises" / "ex18_axpy" / "spec.toml").read_text()
    assert 'name = "ex18_axpy"' in text and text.startswith("# TODO")
    assert (course / "solutions" / "ex18_axpy" / "solution.py").is_file()


@pytest.mark.parametrize("name, words", [
    ("17_bad", "looks like ex17_my_kernel"),
    ("ex90_again", "ex90_again: its number ex90 is taken by ex90_add; fix: choose another exNN (ex93 is free)"),
    ("ex90_add", "ex90_add already exists (exercises/ex90_add); fix: choose another name (ex93 is free), or edit that one")])
def test_new_rejects_bad_names(runner, course, name, words):
    """A new user's trial read "ex13_relu: ex13_relu already uses that number" for a name that exists."""
    out = runner.invoke(cli.main, ["new", name, "--root", str(course)])
    assert out.exit_code == 2 and words in " ".join(out.output.split()), out.output
    assert "already uses that number" not in out.output


# -- publish ---------------------------------------------------------------------------------------
def test_publish_writes_a_bundle_without_solutions_or_hidden_checks(runner, course, tmp_path):
    out_dir = tmp_path / "bundle"
    out = runner.invoke(cli.main, ["publish", str(out_dir), "--root", str(course), "--no-install-check"])
    assert out.exit_code == 0, out.output
    assert not (out_dir / "solutions").exists() and not (out_dir / "tests").exists()
    assert (out_dir / "student_template" / "ex90_add" / "solution.py").is_file()
    assert "python3 -m pip install -e ." in (out_dir / "README.md").read_text()
    project = tomllib.loads((out_dir / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["grade"] == "grader.cli:main"
    assert "pytest" not in project.get("tool", {})    # the repository's testpaths name a tests/ it lacks
    raw = tomllib.loads((out_dir / "exercises" / "ex90_add" / "spec.toml").read_text())
    assert not any(c.get("hidden") for c in raw["edge_cases"])
    assert raw["exercise"]["hidden"] == {"cases": 1, "benchmarks": 0}
    # the student's run says how many hidden checks exist
    res = runner.invoke(cli.main, ["90", "--root", str(out_dir), "--backend", "host", "--no-timing"])
    assert "1 hidden edge case(s)" in res.output


def test_publish_writes_a_gitignore_for_what_students_create_in_the_bundle(runner, course, tmp_path):
    """The bundle's README tells students to make .venv inside it; a new user's trial found no
    .gitignore, so `git add .` would commit the venv. The bundle's own checks accept the file."""
    import subprocess
    out_dir = tmp_path / "bundle"
    out = runner.invoke(cli.main, ["publish", str(out_dir), "--root", str(course), "--no-install-check"])
    assert out.exit_code == 0 and "bundle checks passed" in out.output, out.output
    assert ".venv" in (out_dir / "README.md").read_text()
    lines = (out_dir / ".gitignore").read_text().splitlines()
    assert {".venv/", "*.egg-info/", "__pycache__/", "batch-results/"} <= set(lines)
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    for junk in (".venv/bin/python", "gpu_kernel_grader.egg-info/PKG-INFO", "grader/__pycache__/cli.pyc",
                 "batch-results/summary.csv"):
        (out_dir / junk).parent.mkdir(parents=True, exist_ok=True)
        (out_dir / junk).write_text("x")
    subprocess.run(["git", "init", "-q", str(out_dir)], check=True)
    status = subprocess.run(["git", "-C", str(out_dir), "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout
    assert "student_template/ex90_add/kernel.cu" in status and ".gitignore" in status
    for junk in (".venv/", "egg-info", "__pycache__", "batch-results"):
        assert junk not in status, status


def test_publish_catches_a_planted_solution_line(runner, course, tmp_path):
    sol_line = "    c[...] = a + b"
    assert sol_line in (course / "solutions" / "ex90_add" / "solution.py").read_text()
    readme = course / "exercises" / "ex90_add" / "README.md"
    readme.write_text(readme.read_text() + "\nHint:\n" + sol_line + "\n")
    out = runner.invoke(cli.main, ["publish", str(tmp_path / "b"), "--root", str(course), "--no-install-check"])
    assert out.exit_code == cli.EXIT_BELOW
    assert "exercises/ex90_add/README.md:4: contains a line of the reference solution" in out.output


def test_publish_a_subset_and_check_that_it_installs(runner, course, tmp_path):
    out_dir = tmp_path / "subset"
    out = runner.invoke(cli.main, ["publish", str(out_dir), "--root", str(course), "--exercises", "ex91"])
    assert out.exit_code == 0, out.output
    assert (out_dir / "exercises" / "ex91_axpy").is_dir() and not (out_dir / "exercises" / "ex90_add").exists()
    assert "installed; `grade ex91` ran" in out.output


def test_a_stub_that_is_the_solution_is_refused_by_check_and_publish(runner, course, tmp_path):
    """The instructor copied the reference over the stub: neither check nor publish may pass."""
    for f in ("kernel.cu", "solution.py"):
        shutil.copy2(course / "solutions" / "ex90_add" / f, course / "student_template" / "ex90_add" / f)
    out = runner.invoke(cli.main, ["check", "ex90", "--root", str(course)])
    assert out.exit_code == cli.EXIT_BELOW, out.output
    assert "ex90_add/kernel.cu:1: the stub is a copy of the reference solution" in out.output
    out = runner.invoke(cli.main, ["publish", str(tmp_path / "b"), "--root", str(course), "--no-install-check"])
    assert out.exit_code == cli.EXIT_BELOW, out.output
    assert "student_template/ex90_add/kernel.cu:1: the stub is a copy of the reference solution" in out.output


def test_a_stub_with_most_of_the_solution_is_refused(runner, course, tmp_path):
    sol = (course / "solutions" / "ex91_axpy" / "solution.py").read_text()
    stub = course / "student_template" / "ex91_axpy"
    (stub / "solution.py").write_text(sol.replace("y += (a * x).astype(y.dtype)", "pass  # TODO: y += a * x"))
    shutil.copy2(course / "solutions" / "ex91_axpy" / "kernel.cu", stub / "kernel.cu")
    out = runner.invoke(cli.main, ["publish", str(tmp_path / "b"), "--root", str(course), "--no-install-check"])
    assert out.exit_code == cli.EXIT_BELOW, out.output
    assert "student_template/ex91_axpy/kernel.cu:1: the stub has 6 of the 7 non-trivial lines" in out.output


def test_the_course_itself_publishes_with_no_stub_giving_its_solution_away(runner, tmp_path):
    """This repository's own exercises pass publish's checks (no stub holding half or more of its
    reference's lines, no solution line anywhere in the bundle): the GPU bundle tests publish the
    same way, so a leaky stub fails here first, without a GPU."""
    out = runner.invoke(cli.main, ["publish", str(tmp_path / "b"), "--root", str(ROOT), "--no-install-check"])
    assert out.exit_code == 0, out.output
    assert "bundle checks passed" in out.output
    names = sorted(p.name for p in (ROOT / "exercises").iterdir() if (p / "spec.toml").is_file())
    assert sorted(p.name for p in (tmp_path / "b" / "student_template").iterdir()) == names


def test_publish_catches_a_solution_comment_in_the_assignment(runner, course, tmp_path):
    hint = "    # the trick: cast the product back to y's dtype before adding"
    sol = course / "solutions" / "ex91_axpy" / "solution.py"
    sol.write_text(sol.read_text().replace("    y += ", hint + "\n    y += "))
    readme = course / "exercises" / "ex91_axpy" / "README.md"
    readme.write_text(readme.read_text() + hint.strip() + "\n")
    out = runner.invoke(cli.main, ["publish", str(tmp_path / "b"), "--root", str(course), "--no-install-check"])
    assert out.exit_code == cli.EXIT_BELOW, out.output
    assert "exercises/ex91_axpy/README.md:" in out.output and "contains a line of the reference solution" in out.output


def test_publish_keeps_every_comment_of_a_spec_with_hidden_checks_and_ships_the_format_doc(runner, course, tmp_path):
    spec = course / "exercises" / "ex90_add" / "spec.toml"
    text = spec.read_text().replace("[tolerance.float32]", "# Why 1e-6: one float32 rounding of a + b.\n"
                                    "[tolerance.float32]")
    text = text.replace("[[edge_cases]]\nn = 4099", "# the hidden one: past 4096\n[[edge_cases]]\nn = 4099")
    spec.write_text(text)
    out_dir = tmp_path / "bundle"
    out = runner.invoke(cli.main, ["publish", str(out_dir), "--root", str(course), "--no-install-check"])
    assert out.exit_code == 0, out.output
    published = (out_dir / "exercises" / "ex90_add" / "spec.toml").read_text()
    kept = [ln for ln in text.splitlines() if ln not in ("# the hidden one: past 4096", "n = 4099", "hidden = true")]
    missing = [ln for ln in kept if ln not in published.splitlines() and ln != "[[edge_cases]]"]
    assert missing == [] and published.count("[[edge_cases]]") == 2
    assert "4099" not in published and "the hidden one" not in published
    assert tomllib.loads(published)["exercise"]["hidden"] == {"cases": 1, "benchmarks": 0}
    assert (out_dir / "docs" / "spec-format.md").read_text() == (ROOT / "docs" / "spec-format.md").read_text()


def test_publish_refuses_a_mention_of_a_doc_that_is_not_in_the_bundle(runner, course, tmp_path):
    readme = course / "exercises" / "ex90_add" / "README.md"
    readme.write_text(readme.read_text() + "See docs/grading-policy.md.\n")
    out = runner.invoke(cli.main, ["publish", str(tmp_path / "b"), "--root", str(course), "--no-install-check"])
    assert out.exit_code == cli.EXIT_BELOW
    assert "exercises/ex90_add/README.md: mentions docs/grading-policy.md, which is not in the bundle" in out.output


def test_the_install_check_sees_this_environments_packages_and_needs_no_index(runner, course, tmp_path, monkeypatch):
    """Issue 10: from inside a venv the check's environment must see the venv's packages (not the
    base interpreter's), and it must build without a package index."""
    import click
    from grader.publish import visible_site_packages
    assert str(Path(click.__file__).resolve().parents[1]) in [str(Path(p).resolve()) for p in visible_site_packages()]
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")   # nothing listens there
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    out = runner.invoke(cli.main, ["publish", str(tmp_path / "b"), "--root", str(course), "--exercises", "ex90"])
    assert out.exit_code == 0, out.output
    assert "installed; `grade ex90` ran" in out.output


def test_publish_refuses_a_non_empty_folder(runner, course, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    out = runner.invoke(cli.main, ["publish", str(tmp_path / "full"), "--root", str(course)])
    assert out.exit_code == 2 and "exists and is not empty" in out.output


def test_publish_force_replaces_only_an_earlier_bundle_and_keeps_its_git_folder(runner, course, tmp_path):
    """An instructor trial: --force into a clone of another repository deleted its .git and files."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / "important.txt").write_text("keep me")
    out = runner.invoke(cli.main, ["publish", str(repo), "--root", str(course), "--no-install-check", "--force"])
    assert out.exit_code == 2 and "not a bundle `grade publish` wrote" in out.output, out.output
    assert (repo / "important.txt").read_text() == "keep me" and (repo / ".git" / "HEAD").is_file()
    (repo / "important.txt").unlink()
    assert runner.invoke(cli.main, ["publish", str(repo), "--root", str(course),
                                    "--no-install-check"]).exit_code == 0   # only .git there: an empty clone
    (repo / "exercises" / "stale.txt").write_text("from the earlier bundle")
    out = runner.invoke(cli.main, ["publish", str(repo), "--root", str(course), "--no-install-check", "--force",
                                   "--exercises", "ex91"])
    assert out.exit_code == 0, out.output
    # what --force deleted is said, before what it wrote
    said = out.output.splitlines()[0]
    assert said.startswith(f"--force: removed the earlier bundle in {repo}: everything but .git (") and \
        "exercises" in said and "README.md" in said, out.output
    assert (repo / ".git" / "HEAD").is_file() and not (repo / "exercises" / "stale.txt").exists()
    assert (repo / "exercises" / "ex91_axpy").is_dir() and not (repo / "exercises" / "ex90_add").exists()


def test_a_bundle_with_problems_is_marked_not_ready(runner, course, tmp_path):
    readme = course / "exercises" / "ex90_add" / "README.md"
    readme.write_text(readme.read_text() + "\nTODO: say more\n")
    out = runner.invoke(cli.main, ["publish", str(tmp_path / "b"), "--root", str(course), "--no-install-check"])
    assert out.exit_code == cli.EXIT_BELOW and "NOT ready to hand out" in out.output, out.output
    assert (tmp_path / "b" / ".grade-student-bundle").read_text().startswith("NOT READY TO HAND OUT")


@pytest.mark.parametrize("target", [".", "exercises", ".."])
def test_publish_never_touches_the_course_folder(runner, course, target, monkeypatch):
    monkeypatch.chdir(course)
    before = sorted(p.relative_to(course) for p in course.rglob("*"))
    out = runner.invoke(cli.main, ["publish", target, "--force"])
    assert out.exit_code == 2 and "is the course folder, inside it or above it" in out.output
    assert sorted(p.relative_to(course) for p in course.rglob("*")) == before


# -- calibrate -------------------------------------------------------------------------------------
def test_calibration_refuses_noisy_or_throttled_measurements():
    quiet = summarize([1.0, 1.001, 0.999, 1.0005, 0.9995] * 8)
    assert calibrate.verdict(quiet, ClockState(1980, 1980, 40, ())) is None
    noisy = summarize([1.0, 1.5, 0.7, 1.3, 0.8, 1.2, 0.9, 1.4])
    assert "too noisy" in calibrate.verdict(noisy, None)
    wide = summarize([1.0] * 20 + [1.3] * 20)
    assert "too noisy" in calibrate.verdict(wide, None)
    assert "throttled (HwSlowdown)" in calibrate.verdict(quiet, ClockState(1500, 1980, 85, ("HwSlowdown",)))
    assert "SM clock 1500 of 1980" in calibrate.verdict(quiet, ClockState(1500, 1980, 60, ()))
    assert "outside the timed events" in calibrate.verdict(quiet, None, outside_events=True)


def test_calibrate_writes_nothing_for_an_exercise_with_a_refused_shape():
    ok = calibrate.ShapeCalibration("ex01", "a", 1.0, 0.01, 40, None)
    bad = calibrate.ShapeCalibration("ex01", "b", 2.0, 0.9, 40, "too noisy")
    other = calibrate.ShapeCalibration("ex04", "a", 3.0, 0.02, 40, None)
    assert calibrate.entries([ok, bad, other]) == {"ex04": {"a": {"median_ms": 3.0, "iqr_ms": 0.02, "samples": 40}}}


def test_calibrate_without_a_gpu_says_so(runner, monkeypatch):
    from grader import device
    monkeypatch.setattr(device, "unavailable_reason", lambda: "no CUDA GPU found")
    out = runner.invoke(cli.main, ["calibrate", "--root", str(ROOT)])
    assert out.exit_code == 4 and "no CUDA GPU found: calibration times kernels on a GPU" in out.output   # as grade
    out = runner.invoke(cli.main, ["calibrate", "ex99", "--root", str(ROOT)])   # a typo is named first
    assert out.exit_code == 2 and "ex99" in out.output and "no CUDA GPU" not in out.output, out.output


def test_compare_calibrations_names_a_shape_one_run_lacks_and_a_missing_file(tmp_path):
    """benchmarks/compare_calibrations.py, issue 10's check that two `grade calibrate` runs agree:
    an exercise the second run refused (calibrate then writes none of its shapes) must fail the
    comparison, not vanish from it; a run that wrote no file is one line, not a traceback."""
    import subprocess
    import sys
    script = ROOT / "benchmarks" / "compare_calibrations.py"
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text('[ex01]\n"n=2^28" = { median_ms = 1.00 }\n[ex04]\n"n=2^24" = { median_ms = 0.022 }\n')
    b.write_text('[ex01]\n"n=2^28" = { median_ms = 1.01 }\n')

    def run(*args):
        return subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True, text=True)

    out = run(a, b)
    assert out.returncode == 1 and "1 of 1 shapes within 2%" in out.stdout
    assert f"only in {a}: ex04 n=2^24" in out.stdout
    assert run(b, b).returncode == 0
    out = run(tmp_path / "missing.toml", b)
    assert out.returncode == 2 and "Traceback" not in out.stderr and "missing.toml" in out.stderr
    # --partial: b is a run of ex01 only; a's ex04 is not compared, a shape of ex01 b lacks still fails
    out = run(a, b, "--partial")
    assert out.returncode == 0 and "only in" not in out.stdout and "1 of 1 shapes within 2%" in out.stdout
    a.write_text(a.read_text() + '[ex01."n=2^24"]\nmedian_ms = 0.05\n')
    out = run(a, b, "--partial")
    assert out.returncode == 1 and f"only in {a}: ex01 n=2^24" in out.stdout


# -- formats ---------------------------------------------------------------------------------------
GRADESCOPE_SCHEMA = {
    "type": "object", "required": ["score", "execution_time", "output", "tests", "leaderboard"],
    "properties": {
        "score": {"type": "number"}, "execution_time": {"type": "number"}, "output": {"type": "string"},
        "tests": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["name", "score", "max_score", "status", "output", "visibility"],
            "properties": {"status": {"enum": ["passed", "failed"]},
                           "visibility": {"enum": ["hidden", "after_due_date", "after_published", "visible"]}}}},
        "leaderboard": {"type": "array", "items": {"type": "object", "required": ["name", "value"]}},
    },
}


@pytest.mark.parametrize("folder, correct", [("solutions", True), ("student_template", False)])
def test_gradescope_results_match_the_format(runner, tmp_path, folder, correct):
    jsonschema = pytest.importorskip("jsonschema")
    path = tmp_path / "results.json"
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--submission",
                                   str(COURSE / folder / "ex90_add"), "--format", "gradescope", "-o", str(path),
                                   "--no-reference"])
    assert out.exit_code == 0, out.output
    data = json.loads(path.read_text())
    jsonschema.validate(data, GRADESCOPE_SCHEMA)
    assert data["tests"][0]["status"] == ("passed" if correct else "failed")
    assert data["score"] == (30 if correct else 0)


def test_junit_report_is_well_formed(runner, tmp_path):
    path = tmp_path / "junit.xml"
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--format", "junit",
                                   "-o", str(path)])
    assert out.exit_code == 0
    suite = ET.parse(path).getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert int(suite.get("tests")) == len(cases) > 0
    assert int(suite.get("failures")) == sum(c.find("failure") is not None for c in cases) > 0
    assert {p.get("name") for p in suite.find("properties")} >= {"score", "max_score", "status"}


@pytest.mark.parametrize("fmt", ["json", "gradescope", "junit"])
def test_a_result_file_is_written_when_the_time_limit_hits(runner, tmp_path, fmt):
    sub = tmp_path / "slow"
    sub.mkdir()
    (sub / "kernel.cu").write_text("//\n")
    (sub / "solution.py").write_text("import time\ndef solve(a, b, c):\n    time.sleep(1.0)\n    c[...] = a + b\n")
    path = tmp_path / f"r.{fmt}"
    out = runner.invoke(cli.main, ["90", "--root", str(COURSE), "--backend", "host", "--submission", str(sub),
                                   "--format", fmt, "-o", str(path), "--time-limit", "2"])
    assert out.exit_code == cli.EXIT_ERROR
    text = path.read_text()
    assert "time limit" in text
    if fmt == "json":
        data = json.loads(text)
        assert data["reason_kind"] == "time_limit" and data["score"]["total"] is None


# -- batch -----------------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _grading_secret(monkeypatch):
    """`grade batch` grades in --mode grading by default, which refuses without $GRADER_SECRET."""
    monkeypatch.setenv("GRADER_SECRET", "instructor-tests")


def _submissions(tmp_path: Path) -> Path:
    subs = tmp_path / "subs"
    shutil.copytree(COURSE / "solutions" / "ex90_add", subs / "alice" / "ex90")
    shutil.copytree(COURSE / "student_template" / "ex90_add", subs / "bob" / "ex90_add")
    crash = subs / "carol" / "ex90"
    crash.mkdir(parents=True)
    (crash / "kernel.cu").write_text("//\n")
    (crash / "solution.py").write_text("import os\ndef solve(a, b, c):\n    os._exit(1)\n")
    (subs / "dave").mkdir()  # no submission for the exercise: a "missing" row
    return subs


def test_batch_grades_everyone_and_resumes_after_an_interruption(runner, tmp_path):
    subs, res = _submissions(tmp_path), tmp_path / "res"
    args = ["batch", str(subs), "--root", str(COURSE), "--backend", "host", "--out", str(res), "--mode", "quick",
            "--exercises", "ex90"]
    out = runner.invoke(cli.main, args)
    assert out.exit_code == 0, out.output
    summary = json.loads((res / "summary.json").read_text())
    rows = summary["rows"]
    assert [(r["student"], r["status"], r["correct"], r["reused"]) for r in rows] == [
        ("alice", "graded", True, False), ("bob", "graded", False, False), ("carol", "graded", False, False),
        ("dave", "missing", False, False)]
    (ex,) = summary["exercises"]    # one correct of four; no reference time on the host backend
    assert (ex["exercise"], ex["submissions"], ex["graded"], ex["correct"]) == ("ex90_add", 4, 3, 1)
    scores = sorted(r["score"] for r in rows)
    assert ex["median_score"] == (scores[1] + scores[2]) / 2
    assert rows[0]["basis"] is None and ex["fastest"] is None and ex["pending"] == 0
    assert set(ex["fast_p"].values()) == {None}    # alice is correct but has no reference time here
    assert "per exercise" in out.output and "p=0.5" in out.output
    assert rows[3]["max_score"] == rows[0]["max_score"] is not None    # a missing folder scores 0 of the same max
    carol = json.loads((res / "carol" / "ex90_add.json").read_text())
    assert carol["smallest_failure"]["status"] == "crash"
    assert (res / "alice" / "ex90_add.txt").read_text().startswith("─")
    # simulate an interruption while bob was being graded: his result is gone, a partial file remains
    (res / "bob" / "ex90_add.json").unlink()
    (res / "bob" / "ex90_add.json.partial").write_text("{ trunc")
    out = runner.invoke(cli.main, args)
    assert out.exit_code == 0, out.output
    rows = json.loads((res / "summary.json").read_text())["rows"]
    assert [(r["student"], r["reused"]) for r in rows] == [("alice", True), ("bob", False), ("carol", True),
                                                           ("dave", False)]
    csv_lines = (res / "summary.csv").read_text().splitlines()
    assert csv_lines[0].startswith("student,exercise,status,score") and len(csv_lines) == 5
    assert csv_lines[0].endswith(",reason") and all(not ln.endswith(",") for ln in csv_lines)
    index = (res / "index.html").read_text()    # the class page: each row linked, the distribution
    assert '<a href="alice/ex90_add.txt">alice</a>' in index and "<h2>ex90_add</h2>" in index
    assert "4 scored (0 without a score)" in index     # dave has no folder: his 0 counts
    assert "1 of 4 correct; fastest correct: -; fast_0.5 unknown" in index
    assert (res / "alice" / "ex90_add.roofline.svg").is_file()    # alice's kernel was timed
    log = [ln.split("\t") for ln in (res / "batch.log").read_text().splitlines()]
    assert [(f[1], f[3]) for f in log] == [("alice", "graded"), ("bob", "graded"), ("carol", "graded"), ("bob", "graded")]


def test_batch_refuses_folders_that_link_out_of_the_students_own(runner, tmp_path):
    """Red-team pass 14b: an exercise folder that was a link to another student's folder, or to the
    course's solutions/, was graded as this student's own work (30/30 on the host backend); a link
    inside one's own folder left every other submission visible (and writable) to the worker."""
    subs, res = _submissions(tmp_path), tmp_path / "res"
    (subs / "mallory").mkdir()
    (subs / "mallory" / "ex90_add").symlink_to(subs / "alice" / "ex90")                    # another student's
    (subs / "trudy").mkdir()
    (subs / "trudy" / "ex90_add").symlink_to(COURSE / "solutions" / "ex90_add")            # the reference
    (subs / "eve").symlink_to(subs / "alice")                                              # a whole student
    (subs / "aaron" / "work").mkdir(parents=True)
    shutil.copytree(COURSE / "solutions" / "ex90_add", subs / "aaron" / "work" / "ex90_add")
    (subs / "aaron" / "ex90_add").symlink_to(subs / "aaron" / "work" / "ex90_add")        # inside its own folder
    out = runner.invoke(cli.main, ["batch", str(subs), "--root", str(COURSE), "--backend", "host", "--out", str(res),
                                   "--mode", "quick", "--exercises", "ex90"])
    assert out.exit_code == 0, out.output
    rows = {r["student"]: r for r in json.loads((res / "summary.json").read_text())["rows"]}
    assert rows["alice"]["status"] == "graded" and rows["alice"]["correct"]
    for who in ("mallory", "trudy", "eve", "aaron"):
        assert rows[who]["status"] == "not_graded" and rows[who]["score"] == 0.0, rows[who]
        assert "is a symbolic link" in rows[who]["reason"] and "fix: submit the files themselves" in rows[who]["reason"]
        assert not (res / who / "ex90_add.json").exists()          # nothing of it ran


def test_student_folder_names_stay_text_in_the_class_page_and_the_csv(tmp_path):
    """Red-team pass 14b: a folder named javascript:... became a script link in index.html, one
    named =HYPERLINK(...) a formula cell in summary.csv."""
    from grader import batch as gb
    rows = [gb.Row(name, "ex90_add", "graded", 30.0, 30.0, True, 30.0, 0.0, None, 0, 0, False, f"{name}/ex90_add.txt",
                   reason="correct") for name in ("javascript:alert(1)", '=HYPERLINK("http:evil")', "alice")]
    gb.write_summaries(tmp_path, rows)
    index = (tmp_path / "index.html").read_text()
    assert 'href="javascript:' not in index and 'href="javascript%3Aalert%281%29/ex90_add.txt"' in index
    assert '<a href="alice/ex90_add.txt">alice</a>' in index
    import csv
    cells = [r["student"] for r in csv.DictReader((tmp_path / "summary.csv").open())]
    assert cells == ["javascript:alert(1)", "'=HYPERLINK(\"http:evil\")", "alice"]


def test_the_batch_key_reads_a_bounded_amount_and_only_regular_files(tmp_path, monkeypatch):
    """Red-team pass 14b: result_key read every file whole before anyone was graded (a 40 GB sparse
    file: MemoryError, no summary, on every re-run; a link to /proc/kmsg: a hang)."""
    import os
    from grader import batch as gb
    from grader.spec import list_exercises
    ex = next(e for e in list_exercises(COURSE) if e.name == "ex90_add")
    sub = tmp_path / "alice" / "ex90_add"
    shutil.copytree(COURSE / "solutions" / "ex90_add", sub)
    job = gb.Job("alice", ex, sub)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (sub / "blocks").symlink_to(fifo)               # read, it would never return
    (sub / "elsewhere.py").symlink_to(COURSE / "solutions" / "ex90_add" / "solution.py")
    first = gb.result_key(job, "text", [])           # returns: links are hashed as links
    from grader import static
    monkeypatch.setattr(static, "SUBMISSION_READ_LIMIT_BYTES", 4096)
    big = sub / "notes.txt"
    with open(big, "wb") as fh:
        fh.truncate(1 << 30)                         # sparse: 1 GiB of zeros, not read
    key = gb.result_key(job, "text", [])
    with open(big, "r+b") as fh:                     # past the limit the size and time stand in
        fh.write(b"x")
    os.utime(big, ns=(big.stat().st_atime_ns, big.stat().st_mtime_ns + 10**9))
    assert gb.result_key(job, "text", []) != key != first
    (sub / "kernel.cu").write_text((sub / "kernel.cu").read_text() + "//\n")   # small files: their contents
    assert gb.result_key(job, "text", []) != key


def test_a_batch_worker_is_hidden_from_the_whole_submissions_folder(tmp_path, monkeypatch):
    """The folder hidden from a student's worker is the batch's submissions folder itself, not the
    grandparent of wherever the exercise folder resolves to."""
    from grader import batch as gb
    from grader.spec import list_exercises
    subs = _submissions(tmp_path)
    shutil.copytree(COURSE / "solutions" / "ex90_add", subs / "aaron" / "work" / "ex90_add")
    (subs / "aaron" / "ex90_add").symlink_to(subs / "aaron" / "work" / "ex90_add")   # discover refuses it; run_job
    ex = next(e for e in list_exercises(COURSE) if e.name == "ex90_add")              # must not trust it either
    jobs = [gb.Job("aaron", ex, subs / "aaron" / "ex90_add")]
    seen = []
    monkeypatch.setattr(gb.subprocess, "run", lambda cmd, **kw: seen.append(cmd) or
                        type("P", (), {"returncode": 3, "stdout": "", "stderr": "stopped by the test"})())
    gb.run_job(jobs[0], tmp_path / "res", COURSE, None, "text", None, [])
    (cmd,) = seen
    hidden = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--hide"]
    assert str(subs.resolve()) in hidden, hidden


def test_batch_writes_html_reports(runner, tmp_path):
    subs, res = _submissions(tmp_path), tmp_path / "res"
    out = runner.invoke(cli.main, ["batch", str(subs), "--root", str(COURSE), "--backend", "host", "--out", str(res),
                                   "--exercises", "ex90", "--format", "html"])
    assert out.exit_code == 0, out.output
    assert (res / "alice" / "ex90_add.html").read_text().startswith("<!DOCTYPE html>")
    assert '<a href="alice/ex90_add.html">alice</a>' in (res / "index.html").read_text()


def test_batch_without_a_gpu_records_what_the_static_checks_find_then_exits_4(runner, tmp_path, monkeypatch):
    import csv
    from grader import device
    monkeypatch.setattr(device, "unavailable_reason", lambda: "no CUDA GPU found")
    monkeypatch.setattr(device, "detect", lambda: None)
    subs = _submissions(tmp_path)                               # alice right, bob the stub, carol crashes, dave none
    (subs / "bob" / "ex90_add" / "kernel.cu").unlink()          # a missing file
    erin = subs / "erin" / "ex90"
    shutil.copytree(COURSE / "solutions" / "ex90_add", erin)
    (erin / "solution.py").write_text("def solve(a, b):\n    pass\n")  # a malformed solve
    res = tmp_path / "res"
    out = runner.invoke(cli.main, ["batch", str(subs), "--root", str(COURSE), "--out", str(res), "--exercises", "ex90"])
    assert out.exit_code == cli.EXIT_ERROR, out.output
    assert "no CUDA GPU found: batch grading runs kernels on a GPU" in out.output
    # bob, carol and erin cannot be graded; dave handed in nothing, which is said apart (a new user's trial
    # read "found 2 submission(s) that cannot be graded (2 student/exercise pair(s) have no folder)" for 4 rows)
    assert ("Of 5 student/exercise pairs, 3 cannot be graded as submitted (the static checks found a problem in "
            "each), 1 has no folder, 1 passed the static checks and needs a GPU:") in " ".join(out.output.split()), \
        out.output
    with open(res / "summary.csv", newline="") as fh:
        rows = {r["student"]: r for r in csv.DictReader(fh)}
    assert {s: (r["status"], r["exit_code"]) for s, r in rows.items()} == {
        "alice": ("error", "4"), "bob": ("not_graded", "3"), "carol": ("not_graded", "3"), "dave": ("missing", "3"),
        "erin": ("not_graded", "3")}
    assert all(r["reason"] for r in rows.values())
    assert "kernel.cu: missing" in rows["bob"]["reason"]
    assert "kernel.cu: declares no __global__ kernel" in rows["carol"]["reason"]
    assert "solve takes 2 positional arguments; the exercise passes 3" in rows["erin"]["reason"]
    assert rows["alice"]["reason"].startswith("not graded: no CUDA GPU found")
    assert rows["alice"]["score"] == "" and rows["bob"]["score"] == "0.0"   # nothing graded is no score, not 0
    assert {r["max_score"] for r in rows.values()} == {"100.0"}     # dave's "missing" row too: 0 of the exercise's
    import json
    alice = next(r for r in json.loads((res / "summary.json").read_text())["rows"] if r["student"] == "alice")
    assert alice["score"] is None
    assert not (res / "alice").exists()  # nothing that a later run on a GPU would take as finished


def test_the_no_gpu_summary_of_a_batch_leaves_out_counts_of_zero():
    from grader.batch import Row, RowStatus
    from grader.cli_batch import _static_counts

    def row(status: RowStatus, reason: str = "") -> Row:
        return Row("s", "ex90_add", status, 0.0, 100.0, False, 0.0, 0.0, None, 0, 3, False, "", None, reason)
    assert _static_counts([row(RowStatus.MISSING), row(RowStatus.ERROR, "not graded: no GPU")]) == \
        "Of 2 student/exercise pairs, 1 has no folder, 1 passed the static checks and needs a GPU"
    assert _static_counts([row(RowStatus.NOT_GRADED)]).startswith("Of 1 student/exercise pair, 1 cannot be graded")


def test_shared_reference_times_keep_refused_shapes_but_calibration_does_not():
    ok = calibrate.ShapeCalibration("ex01", "a", 1.0, 0.01, 40, None)
    noisy = calibrate.ShapeCalibration("ex01", "b", 2.0, 0.9, 40, "too noisy")
    assert calibrate.entries([ok, noisy]) == {}
    assert set(calibrate.entries([ok, noisy], keep_refused=True)["ex01"]) == {"a", "b"}


def test_calibrating_an_exercise_without_a_solution_is_refused(course):
    from grader.spec import list_exercises
    ex = next(e for e in list_exercises(course) if e.name == "ex90_add")
    shutil.rmtree(ex.solution)
    (res,) = calibrate.calibrate_all([ex], lambda *a: pytest.fail("must not grade"))
    assert res.refused.startswith("no reference solution at")


def test_batch_in_grading_mode_without_the_kernel_tracer_refuses_once_and_grades_nothing(runner, tmp_path,
                                                                                         monkeypatch):
    from grader import batch as gb
    from grader.sandbox import isolation, kernel_trace
    monkeypatch.setattr(cli_batch, "detect_gpu", lambda: object())
    monkeypatch.setattr(isolation, "unavailable_reason", lambda: None)
    monkeypatch.setattr(kernel_trace, "build", lambda cache: "cupti.h not found (test)")
    monkeypatch.setattr(gb, "run_batch", lambda *a, **k: pytest.fail("graded without the tracer"))
    res = tmp_path / "res"
    out = runner.invoke(cli.main, ["batch", str(_submissions(tmp_path)), "--root", str(COURSE), "--out", str(res),
                                   "--exercises", "ex90"])
    assert out.exit_code == cli.EXIT_ERROR
    text = " ".join(out.output.split())
    assert "grade batch: nothing was graded: --mode grading needs the kernel tracer" in text
    assert "(cupti.h not found (test))" in text and "--allow-unisolated" in text


def test_batch_through_submitit_grades_the_same_and_names_a_failed_job(runner, tmp_path, monkeypatch):
    """--executor debug runs the cluster path in this process (submitit's debug executor): the
    same rows as a local batch; a job that fails leaves its pairs as "error" rows naming the job,
    and re-running the command grades them."""
    pytest.importorskip("submitit")
    subs, res = _submissions(tmp_path), tmp_path / "res"
    args = ["batch", str(subs), "--root", str(COURSE), "--backend", "host", "--out", str(res), "--mode", "quick",
            "--exercises", "ex90", "--executor", "debug", "--per-job", "2"]
    from grader import cluster
    real = cluster.run_chunk

    def flaky(jobs, *a, **k):  # noqa: ANN001, ANN002, ANN003
        if any(j.student == "carol" for j in jobs):
            raise RuntimeError("node lost")
        return real(jobs, *a, **k)
    monkeypatch.setattr(cluster, "run_chunk", flaky)
    out = runner.invoke(cli.main, args)
    assert out.exit_code == cli.EXIT_ERROR, out.output
    rows = {r["student"]: r for r in json.loads((res / "summary.json").read_text())["rows"]}
    assert rows["alice"]["status"] == "graded" and rows["alice"]["correct"]
    assert rows["carol"]["status"] == "error" and "node lost" in rows["carol"]["reason"] and rows["carol"]["score"] is None
    assert rows["dave"]["status"] == "missing"
    monkeypatch.setattr(cluster, "run_chunk", real)
    out = runner.invoke(cli.main, args)
    assert out.exit_code == 0, out.output
    rows = json.loads((res / "summary.json").read_text())["rows"]
    assert [(r["student"], r["status"]) for r in rows] == [("alice", "graded"), ("bob", "graded"), ("carol", "graded"),
                                                           ("dave", "missing")]
    assert (res / "index.html").is_file() and any((res / "slurm").iterdir())


def test_cluster_chunks_cover_every_pair_once():
    from grader.cluster import chunks
    jobs = list(range(7))
    for per in (1, 2, 3, 7, 50):
        groups = chunks(jobs, per)   # type: ignore[arg-type]
        assert [x for g in groups for x in g] == jobs and all(0 < len(g) <= per for g in groups)
    assert chunks([], 5) == []


def test_batch_regrades_a_changed_submission_another_mode_and_a_grade_that_could_not_run(runner, tmp_path, monkeypatch):
    """Resume reuses a result only when it was graded from the same files, mode and format, and
    could run (status "error" is the machine's failure, not the submission's: graded again)."""
    subs, res = _submissions(tmp_path), tmp_path / "res"
    args = ["batch", str(subs), "--root", str(COURSE), "--backend", "host", "--out", str(res), "--mode", "quick",
            "--exercises", "ex90"]
    assert runner.invoke(cli.main, args).exit_code == 0
    (subs / "bob" / "ex90_add" / "solution.py").write_text((COURSE / "solutions" / "ex90_add" / "solution.py").read_text())
    carol = res / "carol" / "ex90_add.json"
    data = json.loads(carol.read_text())
    carol.write_text(json.dumps({**data, "status": "error"}))
    assert runner.invoke(cli.main, args).exit_code == 0
    rows = {r["student"]: r for r in json.loads((res / "summary.json").read_text())["rows"]}
    assert rows["alice"]["reused"] and not rows["bob"]["reused"] and rows["bob"]["correct"]
    assert not rows["carol"]["reused"]
    monkeypatch.setenv("GRADER_SECRET", "batch-test")   # --mode grading refuses to run without one
    assert runner.invoke(cli.main, [*args[:-4], "--mode", "grading", "--allow-unisolated", "--exercises", "ex90"]).exit_code == 0
    rows = json.loads((res / "summary.json").read_text())["rows"]
    assert not any(r["reused"] for r in rows)
    assert json.loads((res / "alice" / "ex90_add.json").read_text())["profile"] == "grading"


def test_batch_on_slurm_without_slurm_says_so_and_grades_nothing(runner, tmp_path, monkeypatch):
    pytest.importorskip("submitit")
    from grader import cluster
    monkeypatch.setattr(cluster.shutil, "which", lambda *a, **k: None)   # no sbatch here (nor anything else)
    subs, res = _submissions(tmp_path), tmp_path / "res"
    out = runner.invoke(cli.main, ["batch", str(subs), "--root", str(COURSE), "--backend", "host", "--out", str(res),
                                   "--exercises", "ex90", "--executor", "slurm"])
    assert out.exit_code == cli.EXIT_ERROR
    assert "needs Slurm (sbatch is not on PATH)" in out.output and not (res / "alice").exists()


def test_a_bundled_readme_says_which_cited_files_stay_in_the_course_repository(tmp_path):
    from grader.publish import _note_repository_paths
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "bench.py").write_text("")
    readme = tmp_path / "README.md"
    readme.write_text("Times in `benchmarks/RESULTS.md`; the naive kernel (tests/fixtures/gpu/ex02_naive); "
                      "`benchmarks/bench.py`.\n")
    _note_repository_paths(readme, tmp_path)
    last = readme.read_text().splitlines()[-1]
    assert "`benchmarks/RESULTS.md`, `tests/fixtures/gpu/ex02_naive`: in the course repository" in last
    assert "bench.py" not in last   # it is in the bundle


def test_instructor_commands_in_a_bundle_say_they_are_for_the_course_repository(runner, tmp_path, monkeypatch):
    bundle = tmp_path / "bundle"
    assert runner.invoke(cli.main, ["publish", str(bundle), "--root", str(COURSE), "--no-install-check"]).exit_code == 0
    for command in (["check"], ["calibrate"], ["publish", str(tmp_path / "again")], ["new", "ex92_relu"]):
        out = runner.invoke(cli.main, [*command, "--root", str(bundle)])
        assert out.exit_code == 2 and "an instructor's command" in out.output and "student bundle" in out.output, out.output
    # and the bundle's `grade --help` lists only what students run; the course's lists everything
    course = runner.invoke(cli.main, ["--help"]).output   # run in the course repository
    monkeypatch.chdir(bundle)
    shown = runner.invoke(cli.main, ["--help"]).output
    assert "grade ex07 --compile-only" in shown and "batch" in shown
    assert not any(word in shown for word in ("calibrate", "publish", "Instructors", "check"))
    assert all(word in course for word in ("calibrate", "publish", "Instructors", "grade check"))


def test_the_class_summary_counts_fast_p_over_every_submission():
    """fast_p (KernelBench): correct and at least p times the reference, over all submissions of the
    exercise (a missing folder counts; a grade that could not run here does not; roofline-basis
    speeds are no comparison with the reference)."""
    from grader.batch import Row, exercise_summaries

    def r(student, status, score, correct, speed, basis, exercise="ex07_softmax"):
        return Row(student, exercise, status, score, 100.0, correct, 0.0, 0.0, speed, 0, 0, False, "", basis)
    rows = [r("a", "graded", 100.0, True, 1.1, "side-by-side"), r("b", "graded", 80.0, True, 0.6, "calibration"),
            r("c", "graded", 90.0, True, 2.0, "roofline"), r("d", "graded", 30.0, False, None, None),
            r("e", "missing", 0.0, False, None, None), r("f", "error", None, False, None, None),
            r("a", "graded", 50.0, True, 0.9, "side-by-side", "ex08_layernorm")]
    soft, norm = exercise_summaries(rows)
    assert (soft.exercise, soft.submissions, soft.pending, soft.graded, soft.correct) == ("ex07_softmax", 5, 1, 4, 3)
    assert soft.median_score == 80.0 and soft.max_score == 100.0 and soft.fastest == 1.1
    assert set(soft.fast_p.values()) == {None}       # f's grade is pending, c has only a roofline speed
    assert norm.fast_p == {"0.5": 1.0, "0.8": 1.0, "1": 0.0}
    (soft,) = exercise_summaries([x for x in rows if x.student not in ("c", "f") and x.exercise == "ex07_softmax"])
    assert soft.fast_p == {"0.5": 2 / 4, "0.8": 1 / 4, "1": 1 / 4}   # over all four, the missing e included


def test_batch_names_a_wrong_layout_and_never_grades_its_own_results(runner, tmp_path):
    import shutil
    empty = tmp_path / "empty"
    empty.mkdir()
    out = runner.invoke(cli.main, ["batch", str(empty), "--root", str(COURSE), "--backend", "host"])
    assert out.exit_code == 2 and "no student folders in it" in out.output
    flat = tmp_path / "flat"
    shutil.copytree(COURSE / "solutions" / "ex90_add", flat / "ex90_add")
    out = runner.invoke(cli.main, ["batch", str(flat), "--root", str(COURSE), "--backend", "host"])
    assert out.exit_code == 2 and "are exercise folders, not students" in out.output
    from grader import batch as gb
    from grader.spec import list_exercises
    subs = _submissions(tmp_path)
    (subs / "results").mkdir()
    jobs, missing = gb.discover(subs, list_exercises(COURSE), skip=subs / "results")
    assert "results" not in {j.student for j in [*jobs, *missing]}


@pytest.mark.parametrize("secret", [None, "", "  "])
def test_grading_mode_refuses_without_a_secret(runner, tmp_path, monkeypatch, secret):
    """Red-team pass 13: --mode grading without $GRADER_SECRET (unset, or empty as GitHub Actions
    expands a secret that was never defined) silently used the public seed: every case and every
    timed input set was the one a student's own `grade --mode grading` draws, so a submission could
    replay them and serve precomputed outputs. Both `grade` and `grade batch` refuse now (exit 4),
    writing the result file with the reason."""
    if secret is None:
        monkeypatch.delenv("GRADER_SECRET", raising=False)
    else:
        monkeypatch.setenv("GRADER_SECRET", secret)
    out = tmp_path / "r.json"
    res = runner.invoke(cli.main, ["ex90", "--root", str(COURSE), "--backend", "host", "--mode", "grading",
                                   "--allow-unisolated", "--format", "json", "--output", str(out)])
    assert res.exit_code == 4, res.output
    data = json.loads(out.read_text())
    assert data["reason_kind"] == "no_secret" and "GRADER_SECRET" in data["reason"]
    subs = _submissions(tmp_path)
    res = runner.invoke(cli.main, ["batch", str(subs), "--root", str(COURSE), "--backend", "host", "--out",
                                   str(tmp_path / "res"), "--mode", "grading", "--allow-unisolated", "--exercises", "ex90"])
    assert res.exit_code == 4 and "nothing was graded" in res.output and "GRADER_SECRET" in res.output, res.output
