"""What the grade commands share: exit codes, the course and its exercises, the terminal, the
refusals of --mode grading (no isolation, no kernel tracer, no secret) and the options several
commands take (one definition each, so that their types and choices cannot drift)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click
from rich.console import Console

EXIT_OK = 0            # graded (and at or above --fail-under) / the check passed
EXIT_BELOW = 1         # graded, below --fail-under / the check found problems
EXIT_NOT_GRADED = 3    # the submission could not be graded (missing files, compile error, bad solve)
EXIT_ERROR = 4         # grader or environment error (no GPU, broken spec, time limit, internal error)
# Reasons a grade ends "not graded" that are the machine's, not the submission's: exit 4, and the
# result is an error in every format (no score, a batch grades the pair again)
MACHINE_KINDS = ("no_gpu", "no_isolation")
EXIT_CODES_HELP = """\b
Exit codes of `grade EXERCISE` and `grade batch`:
  0  grading completed (score at or above --fail-under)
  1  grading completed, score below --fail-under (batch: some submission below it)
  2  usage error (bad option or argument)
  3  the submission could not be graded (missing file, compile error, malformed solve)
  4  grader or environment error (no GPU, broken spec, time limit, internal error)
`grade check` and `grade calibrate` exit 0 when everything passed, 1 otherwise (calibrate: 4
without a GPU)."""
FORMATS = ("text", "json", "gradescope", "junit", "html")   # = grader.report.formats.FORMATS
SECRET_ENV = "GRADER_SECRET"
INSTRUCTOR_COMMANDS = ("check", "calibrate", "publish", "new")   # left out of the help in a student bundle


LOG_WIDTH = 120   # columns of the tables when stdout is a file or a CI log and COLUMNS is unset (rich: 80)


def stdout_console() -> Console:
    """The console of a command's report: a terminal's own width, else COLUMNS, else LOG_WIDTH
    (rich's 80 folded every table of a report written to a file). Written to a file or a pipe (a CI
    log), a message is never folded (soft wrap): each problem stays one line that grep finds whole;
    tables still fit the width."""
    if sys.stdout.isatty():
        return Console()
    if os.environ.get("COLUMNS"):
        return Console(soft_wrap=True)
    return Console(width=LOG_WIDTH, soft_wrap=True)


def in_bundle() -> bool:
    """Whether the course found from the current folder is a published student bundle."""
    from grader.publish import BUNDLE_MARKER
    from grader.spec import find_root
    try:
        return (find_root(None) / BUNDLE_MARKER).is_file()
    except (FileNotFoundError, OSError):
        return False


def needs_solutions(root: Path, command: str) -> None:
    """A usage error when ``grade COMMAND`` (an instructor's command) runs in a published student
    bundle (``grade publish`` marks one, see grader.publish.BUNDLE_MARKER)."""
    from grader.publish import BUNDLE_MARKER
    if (root / BUNDLE_MARKER).is_file():
        raise click.UsageError(f"grade {command} is an instructor's command: {root} is a published student bundle "
                               f"(no solutions/ folder); run it in the course repository. Students: grade EXERCISE, "
                               f"grade EXERCISE --compile-only, grade list")


def course_root(root: str | None) -> Path:
    from grader.spec import find_root
    try:
        return find_root(Path(root) if root else None)
    except FileNotFoundError as exc:
        raise click.UsageError(str(exc)) from None


def find_exercises(root: Path, names: tuple[str, ...] | list[str], commands: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    """The named exercises (each may be a comma-separated list), or all when none is named;
    ``commands`` (the words `grade` also takes there) are suggested when one is close to a name."""
    from grader.spec import list_exercises, resolve_exercise
    if not names:
        return list_exercises(root)
    wanted = [n.strip() for part in names for n in part.split(",") if n.strip()]
    if not wanted:
        raise click.UsageError(f"no exercise named in {list(names)!r}; see `grade list`")
    try:
        return [resolve_exercise(root, n, commands) for n in wanted]
    except LookupError as exc:
        raise click.UsageError(str(exc)) from None


def detect_gpu() -> object:
    from grader import device as dev
    why = dev.unavailable_reason()
    if why is not None:
        return None
    return dev.detect()


# Options several commands take: one definition each, so that their types and choices cannot drift
# (the help may say what the option means for the command).
root_option = click.option("--root", type=click.Path(file_okay=False),
                           help="Course folder (default: found from the current folder).")
case_limit_option = click.option("--case-limit", type=click.FloatRange(min=0, min_open=True), default=None,
                                 help="Seconds for one call of solve (default: the spec's [limits] case_s).")
backend_option = click.option("--backend", type=click.Choice(["auto", "cuda", "host"]), default="auto", hidden=True,
                              help="host runs numpy submissions on the CPU (for the grader's own tests).")


def format_option(help: str):  # type: ignore[no-untyped-def]
    return click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help=help)


def mode_option(default: str, help: str):  # type: ignore[no-untyped-def]
    return click.option("--mode", type=click.Choice(["quick", "grading"]), default=default, show_default=True,
                        help=help)


def fail_under_option(help: str):  # type: ignore[no-untyped-def]
    return click.option("--fail-under", type=float, default=None, help=help)


def allow_unisolated_option(help: str):  # type: ignore[no-untyped-def]
    return click.option("--allow-unisolated", is_flag=True, help=help)


def isolation_refusal() -> str | None:
    """Why --mode grading cannot isolate the submission's worker from the course files here (None: it can)."""
    from grader.sandbox.isolation import unavailable_reason
    why = unavailable_reason()
    return None if why is None else (
        f"--mode grading needs the submission's worker isolated from the course files, which is not possible "
        f"here ({why}); fix: grade where user namespaces work, or pass --allow-unisolated to grade anyway")


def secret_refusal() -> str | None:
    """Why --mode grading cannot keep its cases and benchmark inputs from the students here (None: it
    can): without $GRADER_SECRET (unset, or empty as a CI secret that was never defined expands to)
    the seed is the public one, so every case and every timed input set is the one a student's own
    ``grade --mode grading`` draws, and a submission can precompute their outputs."""
    if os.environ.get(SECRET_ENV, "").strip():
        return None
    return (f"--mode grading needs ${SECRET_ENV} (any private string; it is mixed into the seed of the cases and "
            f"of the benchmark inputs): without it they are the public ones a student can reproduce and "
            f"precompute; fix: set {SECRET_ENV}, e.g. from your CI's secrets")


def tracer_refusal() -> str | None:
    """Why --mode grading cannot trace the submission's kernels here (None: it can; builds the tracer)."""
    from grader.sandbox.kernel_trace import build as build_tracer
    from grader.sandbox.supervisor import kernel_cache_root
    tracer = build_tracer(kernel_cache_root().parent)
    return None if not isinstance(tracer, str) else (
        f"--mode grading needs the kernel tracer that checks the submission runs its own kernels, which is not "
        f"available here ({tracer}); fix: install the CUDA toolkit's CUPTI and a C compiler, or pass "
        f"--allow-unisolated to grade anyway")
