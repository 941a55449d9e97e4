"""``grade publish OUT/``: the student bundle, and the checks that it gives nothing away.

The bundle holds the grader package, ``pyproject.toml``, the calibration files, each published
exercise's ``exercises/<name>/`` (spec without hidden checks, README, oracle) and its stub as
``student_template/<name>/``, and a student README. Nothing from ``solutions/``, ``tests/`` or
``benchmarks/``. Then it checks its own output:

- leaks: no file contains a line of a reference solution that is not in the matching stub
  (blank, brace-only, comment and very short lines excepted, and lines that the grader's own code
  or any stub has anyway, such as ``import numpy as np``);
- hidden settings: no hidden edge case or benchmark, no grading secret;
- install: the bundle installs (``pip install --no-deps`` into a fresh virtual environment that
  sees this environment's packages) and ``grade <first exercise>`` runs there, to a grade or the
  one-line no-GPU message.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
import venv
from dataclasses import dataclass
from pathlib import Path

from grader.check import TODO
from grader.spec import Exercise, load_spec

TRIVIAL = re.compile(r"^[\s{}()\[\];,:.]*$")
COMMENT = re.compile(r"^\s*(//|#|/\*|\*|\"\"\"|''')")
MIN_LINE_CHARS = 8
TEXT_SUFFIXES = {".py", ".cu", ".cuh", ".h", ".toml", ".md", ".txt", ".json", ".cfg", ".yml", ".yaml"}


@dataclass(frozen=True)
class PublishReport:
    """What was written and what the self-checks found (each problem one line)."""
    out: Path
    exercises: tuple[str, ...]
    files: int
    problems: tuple[str, ...]
    install: str


def _normal(line: str) -> str | None:
    s = " ".join(line.split())
    if not s or TRIVIAL.match(s) or COMMENT.match(s) or len(s.replace(" ", "")) < MIN_LINE_CHARS:
        return None
    return s


def solution_only_lines(ex: Exercise) -> dict[str, str]:
    """Normalised lines of the reference solution that the stub does not have -> 'file:line'."""
    leaks: dict[str, str] = {}
    for name in ("kernel.cu", "solution.py"):
        sol, stub = ex.solution / name, ex.template / name
        if not sol.is_file():
            continue
        stub_lines = {_normal(x) for x in stub.read_text(errors="replace").splitlines()} if stub.is_file() else set()
        for i, line in enumerate(sol.read_text(errors="replace").splitlines(), 1):
            n = _normal(line)
            if n and n not in stub_lines:
                leaks.setdefault(n, f"solutions/{ex.name}/{name}:{i}")
    return leaks


def _published_spec(ex: Exercise, dest: Path) -> None:
    """Copy spec.toml, dropping hidden edge cases and benchmark shapes and recording their counts."""
    import tomli_w

    text = ex.spec_path.read_text()
    raw = tomllib.loads(text)
    cases = raw.get("edge_cases", [])
    benches = raw.get("benchmark", [])
    hidden_cases = sum(bool(c.get("hidden")) for c in cases)
    hidden_benches = sum(bool(b.get("hidden")) for b in benches)
    if not hidden_cases and not hidden_benches:
        dest.write_text(text)
        return
    raw["edge_cases"] = [c for c in cases if not c.get("hidden")]
    raw["benchmark"] = [b for b in benches if not b.get("hidden")]
    raw["exercise"]["hidden"] = {"cases": hidden_cases + raw["exercise"].get("hidden", {}).get("cases", 0),
                                 "benchmarks": hidden_benches + raw["exercise"].get("hidden", {}).get("benchmarks", 0)}
    dest.write_text(f"# Published for students: {hidden_cases} hidden edge case(s) and {hidden_benches} hidden "
                    "benchmark shape(s) removed.\n" + tomli_w.dumps(raw))


def student_readme(exercises: list[Exercise]) -> str:
    first = exercises[0].name[:4] if exercises else "ex01"
    rows = "\n".join(f"| `{e.name}` | `student_template/{e.name}/` | `exercises/{e.name}/README.md` |" for e in exercises)
    return f"""# GPU kernel exercises

Two commands, in this folder:

```bash
python3 -m pip install -e .     # install the grader (no GPU needed to install)
grade {first}                      # grade your kernel for that exercise (on a machine with an NVIDIA GPU)
```

| exercise | your folder (edit kernel.cu and solution.py) | the assignment |
| --- | --- | --- |
{rows}

`grade list` lists the exercises; `grade {first} --compile-only` checks your kernel without a GPU;
`grade {first} --case TOKEN` re-runs a failing case exactly; `grade --help` lists the rest.
"""


def publish(root: Path, out: Path, exercises: list[Exercise], check_install: bool = True,
            force: bool = False) -> PublishReport:
    """Write the bundle to ``out`` and check it (see the module docstring).

    Raises:
        FileExistsError: ``out`` exists and is not empty (and ``force`` is not set).
        ValueError: ``out`` is the course folder, inside it, or holds it; or no exercise was chosen.
    """
    out = out.resolve()
    course = root.resolve()
    if out == course or course in out.parents or out in course.parents:
        raise ValueError(f"{out}: is the course folder, inside it or above it; fix: publish to a folder outside "
                         f"{course}")
    if not exercises:
        raise ValueError("no exercise to publish; fix: name at least one with --exercises")
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out}: exists and is not a folder; fix: choose another path")
    if out.exists() and any(out.iterdir()) and not force:
        raise FileExistsError(f"{out}: exists and is not empty; fix: choose an empty folder or pass --force")
    if out.exists() and force:
        shutil.rmtree(out)
    out.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    package = Path(__file__).resolve().parent  # the grader that is running: the course may not vendor it
    shutil.copytree(package, out / "grader", ignore=ignore)
    pyproject = root / "pyproject.toml" if (root / "pyproject.toml").is_file() else package.parent / "pyproject.toml"
    shutil.copy2(pyproject, out / "pyproject.toml")
    if (root / "calibration").is_dir():
        shutil.copytree(root / "calibration", out / "calibration", ignore=ignore)
    for ex in exercises:
        dest = out / "exercises" / ex.name
        shutil.copytree(ex.directory, dest, ignore=ignore)
        _published_spec(ex, dest / "spec.toml")
        if ex.template.is_dir():
            shutil.copytree(ex.template, out / "student_template" / ex.name, ignore=ignore)
    (out / "README.md").write_text(student_readme(exercises))
    problems = check_bundle(out, exercises)
    install = "skipped (--no-install-check)"
    if check_install:
        install, problem = check_installs(out, exercises[0].name if exercises else None)
        if problem:
            problems.append(problem)
    files = sum(1 for p in out.rglob("*") if p.is_file())
    return PublishReport(out, tuple(e.name for e in exercises), files, tuple(problems), install)


def check_bundle(out: Path, exercises: list[Exercise]) -> list[str]:
    """Leak and hidden-setting problems in a written bundle (one line each)."""
    problems = []
    leaks: dict[str, str] = {}
    for ex in exercises:
        leaks.update(solution_only_lines(ex))
        pub = out / "exercises" / ex.name
        for needed in ("README.md", "reference.py", "spec.toml"):
            if not (pub / needed).is_file():
                problems.append(f"exercises/{ex.name}/{needed}: missing; students need it")
        if not (out / "student_template" / ex.name / "solution.py").is_file():
            problems.append(f"student_template/{ex.name}: missing; students need a stub to start from")
        for path in sorted(pub.glob("*")):
            if path.is_file() and TODO.search(path.read_text(errors="replace")):
                problems.append(f"exercises/{ex.name}/{path.name}: still has TODO markers; fix them before publishing")
    # Lines that public material has anyway (the grader's own code, any stub) give nothing away.
    public = [*(out / "grader").rglob("*.py"), *(out / "student_template").rglob("*")]
    for path in public:
        if path.is_file():
            for line in path.read_text(errors="replace").splitlines():
                leaks.pop(_normal(line) or "", None)
    secret = os.environ.get("GRADER_SECRET")
    for path in sorted(out.rglob("*")):
        if not path.is_file() or path.suffix not in TEXT_SUFFIXES:
            continue
        rel = path.relative_to(out)
        text = path.read_text(errors="replace")
        for i, line in enumerate(text.splitlines(), 1):
            n = _normal(line)
            if n in leaks:
                problems.append(f"{rel}:{i}: contains a line of the reference solution ({leaks[n]}); "
                                "fix: remove it from the stub or the exercise files")
        if secret and secret in text:
            problems.append(f"{rel}: contains the grading secret ($GRADER_SECRET); fix: remove it")
        if path.name == "spec.toml":
            raw = tomllib.loads(text)
            if any(c.get("hidden") for c in raw.get("edge_cases", []) + raw.get("benchmark", [])):
                problems.append(f"{rel}: still has hidden checks")
    if (out / "solutions").exists():
        problems.append("solutions/: must not be published")
    for ex in exercises:
        try:
            from grader.instance import load_oracle
            load_oracle(load_spec(out / "exercises" / ex.name / "spec.toml"))
        except Exception as exc:  # noqa: BLE001 - any failure is a problem of the bundle
            problems.append(f"exercises/{ex.name}: the published spec or oracle does not load: "
                            f"{type(exc).__name__}: {exc}")
    return problems


def check_installs(out: Path, exercise: str | None) -> tuple[str, str | None]:
    """Install the bundle into a fresh virtual environment (``--no-deps``; dependencies come from
    this environment's site-packages) and run ``grade EXERCISE`` there. Returns (what happened,
    problem or None)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="grade-publish-check-") as tmp:
        env_dir, copy = Path(tmp) / "venv", Path(tmp) / "bundle"
        shutil.copytree(out, copy)  # pip writes build files next to the source: keep OUT clean
        return _install_and_run(env_dir, copy, exercise)


def _install_and_run(env_dir: Path, out: Path, exercise: str | None) -> tuple[str, str | None]:
    """Install ``out`` into a new venv at ``env_dir`` (the caller removes both) and run grade there."""
    venv.EnvBuilder(with_pip=False, system_site_packages=True).create(env_dir)
    py = env_dir / "bin" / "python"
    pip = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(out)],
                         capture_output=True, text=True, timeout=900)
    if pip.returncode != 0:
        return "install failed", f"the bundle does not install: {(pip.stderr or pip.stdout).strip().splitlines()[-1]}"
    if exercise is None:
        return "installed", None
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GRADER_SECRET")}
    run = subprocess.run([str(env_dir / "bin" / "grade"), exercise[:4], "--no-timing"], cwd=out,
                         capture_output=True, text=True, timeout=600, env=env)
    text = run.stdout + run.stderr
    if "Traceback" in text or run.returncode not in (0, 1, 4):
        return "grade failed", f"`grade {exercise[:4]}` in the installed bundle failed (exit {run.returncode}): {text.strip()[-300:]}"
    how = "no GPU here: one-line message" if run.returncode == 4 else f"graded (exit {run.returncode})"
    return f"installed; `grade {exercise[:4]}` ran ({how})", None

