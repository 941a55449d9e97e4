"""docs/github-actions-grade.yml: the grader, the specs and the secret come from the course's side,
never from what the student can edit (issue 12)."""
from __future__ import annotations

import yaml

from tests.conftest import ROOT

WORKFLOW = ROOT / "docs" / "github-actions-grade.yml"


def _workflow() -> dict:
    data = yaml.safe_load(WORKFLOW.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as true
    return data


def _steps() -> list[dict]:
    (job,) = _workflow()["jobs"].values()
    return job["steps"]


def test_no_student_event_starts_it():
    """A push or pull request runs the workflow file of the student's own repository: a file the
    student can edit. Only the course starts this one."""
    assert set(_workflow()["on"]) <= {"workflow_dispatch", "repository_dispatch", "schedule"}


def test_the_grader_is_installed_from_the_course_checkout_only():
    steps = _steps()
    checkouts = {s["with"]["path"]: s["with"] for s in steps if s.get("uses", "").startswith("actions/checkout")}
    assert "repository" not in checkouts["course"]            # this (the course's) repository
    assert checkouts["submission"]["repository"] == "${{ inputs.repository }}"
    assert all(c.get("persist-credentials") is False for c in checkouts.values())
    installs = [ln for s in steps for ln in s.get("run", "").splitlines() if "pip install" in ln]
    assert installs and all(ln.strip().endswith("pip install ./course") for ln in installs)


def test_the_secret_reaches_only_the_grade_step_which_reads_specs_from_the_course():
    steps = _steps()
    with_secret = [s for s in steps if "GRADER_SECRET" in str(s)]
    assert [s["name"] for s in with_secret] == ["Grade"]
    run = with_secret[0]["run"]
    assert run.lstrip().startswith(".venv/bin/grade") and "--root course" in run
    assert '--submission "submission/' in run and "${{" not in run   # inputs as variables, not pasted in


def test_the_file_says_why():
    text = WORKFLOW.read_text()
    assert "never from what the student can edit" in text and "COURSE's own repository" in text
