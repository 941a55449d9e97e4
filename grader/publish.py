"""``grade publish OUT/``: the student bundle, and the checks that it gives nothing away.

The bundle holds the grader package, ``pyproject.toml``, the calibration files,
``docs/spec-format.md`` (the specs point to it), each published exercise's
``exercises/<name>/`` (spec without hidden checks, README, oracle) and its stub as
``student_template/<name>/``, a student README, and a ``.gitignore`` (GITIGNORE: what the
student's venv, pip and ``grade batch`` write there). Nothing from ``solutions/``, ``tests/`` or
``benchmarks/``. Hidden checks are removed from a spec by editing its TOML document (tomlkit), so
every comment and the rest of the text stay as the instructor wrote them. Then it checks its own
output:

- stubs: no stub is its reference solution, exactly or in most of its lines (grader.leaks);
- leaks: no file contains a line (code or comment) of a reference solution that is not in the
  matching stub (blank, brace-only and very short lines excepted, and lines that the grader's own
  code or another exercise's stub has anyway, such as ``import numpy as np``);
- hidden settings: no hidden edge case or benchmark, no grading secret; every ``docs/...`` file
  that the bundle mentions is in it;
- install: the bundle installs (``pip install --no-deps`` into a fresh virtual environment whose
  ``.pth`` file lists the site-packages folders of the environment ``grade`` runs in, so it sees
  this environment's packages, also from inside a venv) and ``grade <first exercise>`` runs there,
  to a grade or the one-line no-GPU message. The build uses this environment's own setuptools
  (``--no-build-isolation --no-index``: no package index needed), else pip's isolated build (as a
  student's ``pip install`` does; it needs the package index).
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
import venv
from dataclasses import dataclass
from pathlib import Path

from grader.check import TODO
from grader.leaks import normal as _normal, solution_only_lines, stub_matches_solution
from grader.spec import Exercise, load_spec

DOCS = ("docs/spec-format.md",)  # shipped with the bundle: the specs and the grader's messages name it
DOC_REFERENCE = re.compile(r"\bdocs/[\w.-]+\.(?:md|toml|yml)\b")
TEXT_SUFFIXES = {".py", ".cu", ".cuh", ".h", ".toml", ".md", ".txt", ".json", ".cfg", ".yml", ".yaml"}


@dataclass(frozen=True)
class PublishReport:
    """What was written and what the self-checks found (each problem one line)."""
    out: Path
    exercises: tuple[str, ...]
    files: int
    problems: tuple[str, ...]
    install: str
    replaced: tuple[str, ...] = ()   # with --force: the entries of the earlier bundle removed (all but .git)


_HEADER = re.compile(r"^\s*(\[\[|\[)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
HIDDEN_ARRAYS = {"edge_cases": "cases", "benchmark": "benchmarks"}


def _hidden_spans(text: str, raw: dict) -> list[tuple[int, int]]:
    """Line ranges [start, end) of the hidden ``[[edge_cases]]`` and ``[[benchmark]]`` entries of
    ``text`` (parsed as ``raw``): from the comment lines right above an entry's header (they describe
    it) to its last non-comment line (comments after it describe what follows)."""
    lines = text.splitlines()
    spans, seen = [], {k: -1 for k in HIDDEN_ARRAYS}
    current: tuple[str, int, int] | None = None

    def close(end: int) -> None:
        if current is None:
            return
        name, index, start = current
        if not raw[name][index].get("hidden"):
            return
        while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
            end -= 1
        while start > 0 and lines[start - 1].lstrip().startswith("#"):
            start -= 1
        spans.append((start, end))

    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if not m:
            continue
        name = m[2].strip()
        if current is not None and name.split(".")[0].strip("\"'") == current[0] and name != current[0]:
            continue  # a sub-table of the current entry
        close(i)
        current = None
        if m[1] == "[[" and name in HIDDEN_ARRAYS:
            seen[name] += 1
            current = (name, seen[name], i)
    close(len(lines))
    return spans


def published_spec_text(text: str) -> str | None:
    """``text`` (a spec.toml) without its hidden edge cases and benchmark shapes (and the comments
    right above them), their numbers recorded in ``[exercise] hidden``; every other line kept as it
    was. None when nothing is hidden.

    Raises:
        ValueError: the edited text does not parse to the spec without its hidden entries (a layout
            this line-based edit does not understand); the message says so.
    """
    import tomlkit

    raw = tomllib.loads(text)
    removed = {label: sum(bool(e.get("hidden")) for e in raw.get(key, [])) for key, label in HIDDEN_ARRAYS.items()}
    if not any(removed.values()):
        return None
    lines = text.splitlines(keepends=True)
    for start, end in sorted(_hidden_spans(text, raw), reverse=True):
        del lines[start:end]
    doc = tomlkit.parse("".join(lines))
    before = raw["exercise"].get("hidden", {})
    counts = tomlkit.inline_table()
    counts.update({k: int(before.get(k, 0)) + n for k, n in removed.items()})
    doc["exercise"]["hidden"] = counts
    doc["exercise"]["hidden"].comment(f"{removed['cases']} hidden edge case(s) and {removed['benchmarks']} "
                                      "hidden benchmark shape(s) removed by grade publish")
    published = tomlkit.dumps(doc)
    expected = {k: v for k, v in raw.items()}
    for key in HIDDEN_ARRAYS:
        if key in raw:
            kept = [e for e in raw[key] if not e.get("hidden")]
            if kept:
                expected[key] = kept
            else:
                expected.pop(key)
    expected["exercise"] = {**raw["exercise"], "hidden": dict(counts)}
    if tomllib.loads(published) != expected:
        raise ValueError("removing the hidden checks from this spec.toml changed more than them; fix: put each "
                         "hidden [[edge_cases]]/[[benchmark]] entry in its own block of plain key = value lines")
    return published


def _published_spec(ex: Exercise, dest: Path) -> None:
    """Write the published spec.toml (hidden checks removed, see published_spec_text)."""
    text = ex.spec_path.read_text()
    published = published_spec_text(text)
    dest.write_text(text if published is None else published)


def student_readme(exercises: list[Exercise]) -> str:
    first = exercises[0].name[:4] if exercises else "ex01"
    rows = "\n".join(f"| `{e.name}` | `student_template/{e.name}/` | `exercises/{e.name}/README.md` |" for e in exercises)
    return f"""# GPU kernel exercises

In this folder, with Python 3.11 or newer, in a virtual environment (many systems refuse a
system-wide `pip install`):

```bash
python3 -m venv .venv && . .venv/bin/activate
python3 -m pip install -e .     # install the grader (no GPU needed to install)
grade {first}                      # grade your kernel for that exercise (on a machine with an NVIDIA GPU)
```

Grading runs your kernel on an NVIDIA GPU with a driver for CUDA 13 (an older driver shows as
`cudaErrorInsufficientDriver`). Without a GPU, `grade {first} --compile-only` still compiles and
checks your submission. Your time is compared with the reference solution's calibrated time for
your GPU model (`calibration/<arch>.toml`), or, for a GPU model without one, with the fraction of
the roofline you reach. `grade --help` lists the exit codes (0: graded; 3: your submission
could not be graded, with the reason; 4: no GPU or another problem of the machine).

| exercise | your folder (edit kernel.cu and solution.py) | the assignment |
| --- | --- | --- |
{rows}

`grade list` lists the exercises; `grade {first} --compile-only` checks your kernel without a GPU;
`grade {first} --case TOKEN` re-runs a failing case exactly; `grade --help` lists the rest.
"""


def _bundle_pyproject(src: Path, dest: Path) -> None:
    """Copy ``pyproject.toml`` into the bundle without the course repository's pytest settings
    (``[tool.pytest...]``: its ``testpaths`` name a tests/ folder the bundle does not have, so a
    student's ``pytest`` would exit 5 with "no files were found")."""
    import tomlkit
    doc = tomlkit.parse(src.read_text())
    tool = doc.get("tool")
    if tool is not None and "pytest" in tool:
        del tool["pytest"]
        if not tool:
            del doc["tool"]
    dest.write_text(tomlkit.dumps(doc))


# A file at the top of every published bundle: the instructor's commands refuse to run there
BUNDLE_MARKER = ".grade-student-bundle"
# The bundle's .gitignore: what a student's work in it creates (the README's .venv, pip's build
# files, grade batch's default --out) stays out of their repository
GITIGNORE = """\
# written by `grade publish`: what installing and grading here create
.venv/
venv/
*.egg-info/
__pycache__/
*.pyc
batch-results/
"""
_CITED_PATH = re.compile(r"`?\b((?:benchmarks|tests|solutions)/[\w./-]+)`?")


def _note_repository_paths(readme: Path, out: Path) -> None:
    """Append to a bundled exercise README a note naming the course-repository files it cites that
    the bundle does not hold (benchmarks/RESULTS.md, tests/fixtures/..., solutions/...), so a
    student does not look for them."""
    if not readme.is_file():
        return
    text = readme.read_text()
    cited = sorted({m.rstrip(".,)") for m in _CITED_PATH.findall(text)} - {p for p in _CITED_PATH.findall(text)
                                                                          if (out / p.rstrip(".,)")).exists()})
    if cited:
        names = ", ".join(f"`{c}`" for c in cited)
        readme.write_text(text.rstrip("\n") + f"\n\n---\n*{names}: in the course repository, not in this bundle "
                          f"(your instructor has them).*\n")


def publish(root: Path, out: Path, exercises: list[Exercise], check_install: bool = True,
            force: bool = False) -> PublishReport:
    """Write the bundle to ``out`` and check it (see the module docstring).

    ``force`` replaces an earlier bundle in ``out`` (one with the BUNDLE_MARKER file), keeping its
    ``.git`` folder (a clone of the students' repository stays one). When the checks find a
    problem, the marker says the bundle is not ready to hand out.

    Raises:
        FileExistsError: ``out`` exists and is not empty (and ``force`` is not set, or ``out`` holds
            no earlier bundle).
        ValueError: ``out`` is the course folder, inside it, or holds it; or no exercise was chosen.
    """
    out = out.resolve()
    course = root.resolve()
    replaced: list[str] = []
    if out == course or course in out.parents or out in course.parents:
        raise ValueError(f"{out}: is the course folder, inside it or above it; fix: publish to a folder outside "
                         f"{course}")
    if not exercises:
        raise ValueError("no exercise to publish; fix: name at least one with --exercises")
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out}: exists and is not a folder; fix: choose another path")
    if out.exists() and any(entry.name != ".git" for entry in out.iterdir()):   # an empty clone is empty
        if not force:
            raise FileExistsError(f"{out}: exists and is not empty; fix: choose an empty folder, or pass --force to "
                                  f"replace an earlier bundle there")
        if not (out / BUNDLE_MARKER).is_file():
            raise FileExistsError(f"{out}: holds files that are not a bundle `grade publish` wrote (no {BUNDLE_MARKER}); "
                                  f"--force replaces only an earlier bundle; fix: choose an empty folder")
        replaced = sorted(entry.name for entry in out.iterdir() if entry.name != ".git")
        for entry in out.iterdir():   # the earlier bundle; a clone's .git stays
            if entry.name == ".git":
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    out.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    package = Path(__file__).resolve().parent  # the grader that is running: the course may not vendor it
    shutil.copytree(package, out / "grader", ignore=ignore)
    pyproject = root / "pyproject.toml" if (root / "pyproject.toml").is_file() else package.parent / "pyproject.toml"
    _bundle_pyproject(pyproject, out / "pyproject.toml")
    for doc in DOCS:
        src = next((d / doc for d in (root, package.parent) if (d / doc).is_file()), None)
        if src is not None:
            (out / doc).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out / doc)
    if (root / "calibration").is_dir():
        shutil.copytree(root / "calibration", out / "calibration", ignore=ignore)
    for ex in exercises:
        dest = out / "exercises" / ex.name
        shutil.copytree(ex.directory, dest, ignore=ignore)
        _published_spec(ex, dest / "spec.toml")
        _note_repository_paths(dest / "README.md", out)
        if ex.template.is_dir():
            shutil.copytree(ex.template, out / "student_template" / ex.name, ignore=ignore)
    (out / "README.md").write_text(student_readme(exercises))
    (out / ".gitignore").write_text(GITIGNORE)
    (out / BUNDLE_MARKER).write_text("A student bundle written by `grade publish`: no reference solutions here.\n")
    problems = check_bundle(out, exercises)
    install = "skipped (--no-install-check)"
    if check_install:
        install, problem = check_installs(out, exercises[0].name if exercises else None)
        if problem:
            problems.append(problem)
    if problems:
        (out / BUNDLE_MARKER).write_text(f"NOT READY TO HAND OUT: `grade publish` found {len(problems)} problem(s) in "
                                         f"this bundle; fix them in the course and publish again.\n")
    files = sum(1 for p in out.rglob("*") if p.is_file() and ".git" not in p.relative_to(out).parts)
    return PublishReport(out, tuple(e.name for e in exercises), files, tuple(problems), install, tuple(replaced))


def check_bundle(out: Path, exercises: list[Exercise]) -> list[str]:
    """Leak and hidden-setting problems in a written bundle (one line each)."""
    problems = []
    leaks: dict[str, str] = {}
    for ex in exercises:
        stub = out / "student_template" / ex.name
        leaks.update(solution_only_lines(ex.solution, stub, f"solutions/{ex.name}"))
        match = stub_matches_solution(ex.solution, stub)
        if match is not None:
            problems.append(match.describe(f"student_template/{ex.name}"))
        pub = out / "exercises" / ex.name
        for needed in ("README.md", "reference.py", "spec.toml"):
            if not (pub / needed).is_file():
                problems.append(f"exercises/{ex.name}/{needed}: missing; students need it")
        if not (out / "student_template" / ex.name / "solution.py").is_file():
            problems.append(f"student_template/{ex.name}: missing; students need a stub to start from")
        for path in sorted(pub.glob("*")):
            if path.is_file() and TODO.search(path.read_text(errors="replace")):
                problems.append(f"exercises/{ex.name}/{path.name}: still has TODO markers; fix them before publishing")
    # Lines that public material has anyway (the grader's own code, another exercise's stub) give
    # nothing away. A stub's own lines are left out of its solution's lines already, and a stub
    # that is its solution is caught above.
    for path in (out / "grader").rglob("*.py"):
        for line in path.read_text(errors="replace").splitlines():
            leaks.pop(_normal(line) or "", None)
    for path in (out / "student_template").rglob("*"):
        if path.is_file():
            exercise = path.relative_to(out / "student_template").parts[0]
            for line in path.read_text(errors="replace").splitlines():
                n = _normal(line)
                if n in leaks and not leaks[n].startswith(f"solutions/{exercise}/"):
                    leaks.pop(n)
    secret = os.environ.get("GRADER_SECRET")
    for path in sorted(out.rglob("*")):
        if not path.is_file() or path.suffix not in TEXT_SUFFIXES or ".git" in path.relative_to(out).parts:
            continue
        rel = path.relative_to(out)
        text = path.read_text(errors="replace")
        for i, line in enumerate(text.splitlines(), 1):
            n = _normal(line)
            if n in leaks:
                problems.append(f"{rel}:{i}: contains a line of the reference solution ({leaks[n]}); "
                                "fix: remove it from the stub or the exercise files")
        for ref in sorted(set(DOC_REFERENCE.findall(text))):
            if not (out / ref).is_file():
                problems.append(f"{rel}: mentions {ref}, which is not in the bundle; fix: ship it or drop the mention")
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
            from grader.check import oracle_problem
            problems.append(f"exercises/{ex.name}: the published spec or oracle does not load: "
                            f"{oracle_problem(exc, out / 'exercises' / ex.name / 'reference.py')}")
    return problems


def check_installs(out: Path, exercise: str | None) -> tuple[str, str | None]:
    """Install the bundle into a fresh virtual environment (``--no-deps``; dependencies come from
    this environment's site-packages, see visible_site_packages) and run ``grade EXERCISE`` there.
    Returns (what happened, problem or None)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="grade-publish-check-") as tmp:
        env_dir, copy = Path(tmp) / "venv", Path(tmp) / "bundle"
        # pip writes build files next to the source: keep OUT clean (and a clone's .git out of it)
        shutil.copytree(out, copy, ignore=shutil.ignore_patterns(".git"))
        return _install_and_run(env_dir, copy, exercise)


def visible_site_packages() -> list[str]:
    """The site-packages folders of the environment ``grade`` runs in (a venv's own, and the base
    interpreter's or the user's when this environment sees them), in import order."""
    return [p for p in dict.fromkeys(sys.path)
            if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]


def _pip_install(py: Path, bundle: Path) -> subprocess.CompletedProcess:
    """``pip install --no-deps bundle``: built with this environment's own setuptools and no package
    index when it has setuptools (fast, and works offline); else, or when that fails, with pip's
    isolated build, which downloads setuptools from the package index."""
    base = [str(py), "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check"]
    tries = [[*base, str(bundle)]]
    if importlib.util.find_spec("setuptools") is not None:
        tries.insert(0, [*base, "--no-build-isolation", "--no-index", str(bundle)])
    proc = None
    for cmd in tries:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if proc.returncode == 0:
            break
    return proc  # type: ignore[return-value]


def _install_and_run(env_dir: Path, out: Path, exercise: str | None) -> tuple[str, str | None]:
    """Install ``out`` into a new venv at ``env_dir`` (the caller removes both) and run grade there."""
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(env_dir)
    py = env_dir / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, timeout=60).stdout.strip()
    # plain paths (no `import` line): this environment's packages, not its .pth hooks (an editable
    # install of the course's own grader would otherwise shadow the bundle's)
    Path(purelib, "_grade_publish_check.pth").write_text("\n".join(visible_site_packages()) + "\n")
    pip = _pip_install(py, out)
    if pip.returncode != 0:
        lines = (pip.stderr or pip.stdout).strip().splitlines() or ["no output"]
        return "install failed", (f"the bundle does not install: {lines[-1]} (pip install --no-deps; without a "
                                  "package index, pip builds with this environment's setuptools, which needs >= 70.1)")
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
