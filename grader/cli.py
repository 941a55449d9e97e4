"""The ``grade`` command: thin: parse, call, print.

\b
Usage:
  grade ex07                       grade student_template/ex07_softmax (also: grade 7, grade ex07_softmax)
  grade ex07 --submission DIR      grade any folder with kernel.cu and solution.py
  grade ex07 --compile-only        what works without a GPU: nvcc compile + static report
  grade list                       list the exercises
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click
from rich.console import Console

EXIT_OK = 0            # graded (and at or above --fail-under)
EXIT_BELOW = 1         # graded, below --fail-under
EXIT_NOT_GRADED = 3    # the submission could not be graded (missing files, compile error, bad solve)
EXIT_ERROR = 4         # grader or environment error (no GPU, broken spec, internal error)
EXIT_CODES_HELP = """\b
Exit codes:
  0  grading completed (score at or above --fail-under)
  1  grading completed, score below --fail-under
  2  usage error (bad option or argument)
  3  the submission could not be graded (missing file, compile error, malformed solve)
  4  grader or environment error (no GPU, broken spec, internal error)"""

SECRET_ENV = "GRADER_SECRET"


class ExerciseGroup(click.Group):
    """``grade EXERCISE ...`` runs the grade command; other words are subcommands."""

    def resolve_command(self, ctx: click.Context, args: list[str]):  # type: ignore[override]
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            return "run", self.commands["run"], args
        return super().resolve_command(ctx, args)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage("grade", "EXERCISE [OPTIONS] | COMMAND [ARGS]")


@click.group(cls=ExerciseGroup, epilog=EXIT_CODES_HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gpu-kernel-grader", message="grade %(version)s")
def main() -> None:
    """Grade CUDA kernel exercises: correctness on hypothesis-generated shapes against a float64
    oracle, then timing against the reference solution.

    \b
    grade ex07                    grade student_template/ex07_softmax on this GPU
    grade ex07 --submission DIR   grade another folder (kernel.cu + solution.py)
    grade ex07 --compile-only     compile + static report (works without a GPU)
    grade list                    the exercises
    grade run --help              every option of a grade
    """


def _root(root: str | None) -> Path:
    from grader.spec import find_root
    try:
        return find_root(Path(root) if root else None)
    except FileNotFoundError as exc:
        raise click.UsageError(str(exc)) from None


@main.command("list")
@click.option("--root", type=click.Path(file_okay=False), help="Course folder (default: found from the current folder).")
def list_cmd(root: str | None) -> None:
    """List the exercises with their titles and points."""
    from rich.table import Table
    from grader.spec import SpecError, list_exercises, load_spec

    console = Console()
    t = Table(show_edge=False)
    for col in ("exercise", "title", "points", "your folder"):
        t.add_column(col)
    r = _root(root)
    for ex in list_exercises(r):
        try:
            spec = load_spec(ex.spec_path)
            t.add_row(ex.name, spec.title, f"{spec.total_points:g}", str(ex.template.relative_to(r)))
        except SpecError as exc:
            t.add_row(ex.name, f"[red]invalid spec: {exc}[/]", "-", "-")
    console.print(t)


def _emit_error(fmt: str, output: str | None, exercise: str, submission: str, kind: str, message: str,
                code: int) -> None:
    click.echo(f"grade: {message}", err=True)
    if fmt == "json":
        from grader.report import json_report
        text = json_report.write(json_report.error_dict(exercise, submission, kind, message, code),
                                 Path(output) if output else None)
        if not output:
            click.echo(text)
    sys.exit(code)


@main.command("run", epilog=EXIT_CODES_HELP)
@click.argument("exercise")
@click.option("--submission", "-s", type=click.Path(), help="Folder with kernel.cu and solution.py "
              "(default: student_template/<exercise> in the course folder).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Report format.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the report here (JSON is always "
              "written, even when the submission crashes).")
@click.option("--mode", type=click.Choice(["quick", "grading"]), default="quick", show_default=True,
              help="quick: a fast student run; grading: more cases, hidden checks, seed mixed with $GRADER_SECRET.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for case generation and timing order.")
@click.option("--case", "case_token", help="Re-run one case, as printed in a failure's 'reproduce' line.")
@click.option("--no-timing", is_flag=True, help="Check correctness only.")
@click.option("--compile-only", is_flag=True, help="No GPU needed: compile kernel.cu with nvcc, check solution.py, "
              "print registers/shared memory/spills per kernel.")
@click.option("--arch", default=None, help="Arch for --compile-only (default: this GPU's, else sm_90).")
@click.option("--fail-under", type=float, default=None, help="Exit 1 when the score is below this many points.")
@click.option("--reference/--no-reference", default=True, show_default=True,
              help="Time the reference solution side by side when solutions/<exercise> exists.")
@click.option("--root", type=click.Path(file_okay=False), help="Course folder (default: found from the current folder).")
@click.option("--backend", type=click.Choice(["auto", "cuda", "host"]), default="auto", hidden=True,
              help="host runs numpy submissions on the CPU (for the grader's own tests).")
def run_cmd(exercise: str, submission: str | None, fmt: str, output: str | None, mode: str, seed: int,
            case_token: str | None, no_timing: bool, compile_only: bool, arch: str | None, fail_under: float | None,
            reference: bool, root: str | None, backend: str) -> None:
    """Grade one exercise: EXERCISE is 7, ex07 or ex07_softmax."""
    from grader.spec import SpecError, load_spec, resolve_exercise

    r = _root(root)
    try:
        ex = resolve_exercise(r, exercise)
    except LookupError as exc:
        raise click.UsageError(str(exc)) from None
    sub = Path(submission) if submission else ex.template
    try:
        spec = load_spec(ex.spec_path)
    except SpecError as exc:
        _emit_error(fmt, output, ex.name, str(sub), "spec", str(exc), EXIT_ERROR)
    if compile_only:
        sys.exit(_compile_only(spec, sub, arch))

    from grader import device as dev
    from grader.calibration import load_calibration
    from grader.cases import PROFILES
    from grader.grade import GradeOptions, grade
    from grader.sandbox.buffers import CudaBackend, HostBackend

    info = None
    if backend in ("auto", "cuda"):
        why = dev.unavailable_reason()
        if why is not None:
            _emit_error(fmt, output, ex.name, str(sub), "no_gpu",
                        f"{why}: grading runs kernels on a GPU. Without one, `grade {ex.name} --compile-only` "
                        "compiles kernel.cu with nvcc and prints the static report.", EXIT_ERROR)
        info = dev.detect()
    console = Console(stderr=fmt != "text" or output is not None)
    try:
        be = CudaBackend() if info is not None else HostBackend()
        ceilings = dev.ceilings(info, {spec.ceiling}) if info is not None else None
        calibration = load_calibration(r, info.arch if info else None)
        ref_dir = ex.solution if reference and (ex.solution / "solution.py").is_file() else None
        secret = os.environ.get(SECRET_ENV) if mode == "grading" else None
        options = GradeOptions(profile=PROFILES[mode], seed=seed, secret=secret, backend=be.name,
                               case_token=case_token, reference=ref_dir, benchmark=not no_timing)
        from grader.report.text import TerminalProgress, render
        progress = TerminalProgress(Console(stderr=True))
        try:
            result = grade(spec, sub, options, be, info, ceilings, calibration, progress)
        finally:
            progress.done()
    except ValueError as exc:  # a malformed --case or calibration file: a user-fixable input
        _emit_error(fmt, output, ex.name, str(sub), "input", str(exc), EXIT_ERROR)
    except Exception as exc:  # noqa: BLE001 - grader bug or broken exercise files: say so, keep the file
        _emit_error(fmt, output, ex.name, str(sub), "grader_error", f"grader error: {type(exc).__name__}: {exc}",
                    EXIT_ERROR)
    code = _exit_code(result, fail_under)
    if fmt == "json":
        from grader.report import json_report
        text = json_report.write(json_report.to_dict(result, code), Path(output) if output else None)
        if not output:
            click.echo(text)
    else:
        from grader.report.text import render
        if output:
            with open(output, "w") as fh:
                render(result, Console(file=fh, width=120, force_terminal=False))
        render(result, Console())
    sys.exit(code)


def _exit_code(result, fail_under: float | None) -> int:  # type: ignore[no-untyped-def]
    if result.status != "graded":
        return EXIT_NOT_GRADED
    if fail_under is not None and result.score.total < fail_under:
        return EXIT_BELOW
    return EXIT_OK


def _compile_only(spec, submission: Path, arch: str | None) -> int:  # type: ignore[no-untyped-def]
    from rich.table import Table
    from grader import device as dev
    from grader.static import static_report

    if arch is None:
        info = dev.detect()
        arch = info.arch if info else "sm_90"
    rep = static_report(spec, submission, arch)
    console = Console()
    console.rule(f"[bold]{spec.name}[/]: static report for {submission} ({arch})")
    if rep.kernels:
        t = Table(show_edge=False)
        for col in ("kernel", "registers", "shared B", "stack B", "spill stores B", "spill loads B"):
            t.add_column(col, justify="left" if col == "kernel" else "right")
        for k in rep.kernels:
            t.add_row(k.name, str(k.registers), str(k.shared_bytes), str(k.stack_bytes), str(k.spill_store_bytes),
                      str(k.spill_load_bytes))
        console.print(t)
    for p in rep.problems:
        console.print(f"[red]problem:[/] {p}", highlight=False)
    for s in rep.skipped:
        console.print(f"[yellow]not checked here:[/] {s}", highlight=False)
    if rep.ok:
        console.print("[green]no problems found[/]")
    return EXIT_OK if rep.ok else EXIT_NOT_GRADED


if __name__ == "__main__":
    main()
