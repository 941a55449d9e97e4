"""The instructors' commands: ``grade check``, ``grade calibrate``, ``grade publish``, ``grade new``
(left out of the help in a published student bundle, and refused there)."""
from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from grader.cli_common import (EXIT_BELOW, EXIT_ERROR, EXIT_OK, course_root, detect_gpu, find_exercises,
                               needs_solutions, root_option, stdout_console)


def gpu_grader(root: Path, info):  # type: ignore[no-untyped-def]
    """grade_fn(spec, folder, reference, policy=None) for instructor commands on this GPU."""
    from grader.cases import PROFILES
    from grader.context import GradingContext
    from grader.grade import GradeOptions
    from grader.timing import StopPolicy

    ctx = GradingContext.on(info, root)

    def grade_fn(spec, folder, reference, policy=None):  # type: ignore[no-untyped-def]
        return ctx.grade(spec, folder, GradeOptions(profile=PROFILES["quick"], reference=reference,
                                                    policy=policy or StopPolicy()))
    return grade_fn


# -- instructor commands ----------------------------------------------------------------------------
@click.command("check")
@click.argument("exercises", nargs=-1)
@click.option("--no-controls", is_flag=True, help="Skip the negative controls (they run on the CPU).")
@root_option
def check_cmd(exercises: tuple[str, ...], no_controls: bool, root: str | None) -> None:
    """Check that every exercise is ready: spec valid, points add up, solution full marks, stub
    zero, negative controls fail. Without a GPU it checks what it can and lists what it skipped.
    Exits 1 on any problem (TODOs are listed, not counted as problems)."""
    from rich.table import Table
    from grader.check import CheckStatus, check_exercise

    r = course_root(root)
    needs_solutions(r, "check")
    info = detect_gpu()
    grade_fn = gpu_grader(r, info) if info is not None else None
    console = stdout_console()
    t = Table(show_edge=False)
    for col in ("exercise", "check", "status", "detail"):
        t.add_column(col, overflow="fold")
    failed = 0
    rows_seen = []
    log = None if console.is_terminal else Console(stderr=True)   # a CI log: the spinner is not drawn
    with console.status("checking...") as status:
        for ex in find_exercises(r, exercises):
            status.update(f"checking {ex.name}")
            if log is not None:
                log.print(f"checking {ex.name}...", highlight=False)
            for row in check_exercise(ex, info is not None, not no_controls, grade_fn):
                rows_seen.append(row)
                color = {CheckStatus.OK: "green", CheckStatus.FAIL: "red"}.get(row.status, "yellow")
                t.add_row(row.exercise, row.item, f"[{color}]{row.status}[/]", escape(row.detail))
                failed += row.status == CheckStatus.FAIL
    console.print(t)
    if info is None:
        console.print("[yellow]No GPU here: solutions and stubs were not run; run `grade check` on a GPU machine.[/]")
    skipped = sum(row.status == CheckStatus.SKIP for row in rows_seen)
    todo = sum(row.status == CheckStatus.TODO for row in rows_seen)
    tail = "".join([f"; {skipped} skipped" if skipped else "", f"; TODOs left (the {todo} todo row(s) above)" if todo else ""])
    verdict = ("all checks that ran passed" if skipped or todo else "all checks passed") if not failed \
        else f"{failed} problem(s)"
    console.print(f"[bold]{verdict}{tail}[/]")
    sys.exit(EXIT_OK if not failed else EXIT_BELOW)


@click.command("calibrate")
@click.argument("exercises", nargs=-1)
@click.option("--dry-run", is_flag=True, help="Measure and report, write nothing.")
@root_option
def calibrate_cmd(exercises: tuple[str, ...], dry_run: bool, root: str | None) -> None:
    """Time the reference solutions on this GPU and write calibration/<arch>.toml. Refuses (and
    says why) when a measurement is too noisy or the clock throttled; exits 1 then (4: no GPU)."""
    from rich.table import Table
    from grader import calibrate as cal
    from grader.calibration import calibration_path, write_calibration
    from grader.grade import versions

    r = course_root(root)
    needs_solutions(r, "calibrate")
    chosen = find_exercises(r, exercises)   # a misspelt name is a usage error, GPU or not
    info = detect_gpu()
    if info is None:   # the environment's problem: exit 4, as every command without its GPU
        from grader.device import unavailable_reason
        no_gpu = click.ClickException(f"{unavailable_reason()}: calibration times kernels on a GPU")
        no_gpu.exit_code = EXIT_ERROR
        raise no_gpu
    from grader.device import foreign_gpu_processes
    grade_fn = gpu_grader(r, info)
    console = stdout_console()
    with console.status("timing the reference solutions...") as status:
        done = [0]

        def progress(name: str) -> None:
            done[0] += 1
            status.update(f"timing the reference solutions: {name} ({done[0]}/{len(chosen)})")
        results = cal.calibrate_all(chosen, grade_fn, lambda: foreign_gpu_processes(info.index), progress)
    t = Table(show_edge=False)
    for col in ("exercise", "shape", "median ms", "IQR ms", "samples", "verdict"):
        t.add_column(col)
    for c in results:
        t.add_row(c.exercise, c.shape, f"{c.median_ms:.4f}" if c.median_ms else "-",
                  f"{c.iqr_ms:.4f}" if c.iqr_ms is not None else "-", str(c.samples),
                  "[green]ok[/]" if c.refused is None else f"[red]refused: {c.refused}[/]")
    console.print(t)
    accepted = cal.entries(results)
    path = calibration_path(r, info.arch)
    if accepted and not dry_run:
        write_calibration(path, cal.meta(info, versions(info)), accepted)
        console.print(f"wrote {path} ({', '.join(accepted)})")
    refused = sorted({c.exercise for c in results if c.refused})
    if refused:
        console.print(f"[red]not written: {', '.join(refused)}[/] (fix the cause and re-run on a quiet GPU)")
    sys.exit(EXIT_OK if not refused else EXIT_BELOW)


@click.command("publish")
@click.argument("out", type=click.Path(file_okay=False))
@click.option("--exercises", "names", default="", help="Comma-separated subset (default: all).")
@click.option("--install-check/--no-install-check", default=True, show_default=True,
              help="Install the bundle in a fresh virtual environment and run grade there.")
@click.option("--force", is_flag=True, help="Replace an earlier bundle in OUT (its .git folder is kept); a folder "
              "that holds anything else is refused.")
@root_option
def publish_cmd(out: str, names: str, install_check: bool, force: bool, root: str | None) -> None:
    """Write the student bundle to OUT (grader, exercises without hidden checks, stubs as
    student_template/, calibration, a student README; nothing from solutions/) and check it:
    no solution line leaked, no hidden setting left, and it installs and runs. Exits 1 on a problem."""
    from grader.publish import BUNDLE_MARKER, publish

    r = course_root(root)
    needs_solutions(r, "publish")
    exs = find_exercises(r, [names] if names else [])
    try:
        rep = publish(r, Path(out), exs, install_check, force)
    except (FileExistsError, ValueError) as exc:
        raise click.UsageError(str(exc)) from None
    if rep.replaced:
        click.echo(f"--force: removed the earlier bundle in {rep.out}: everything but .git ({len(rep.replaced)} "
                   f"entr{'y' if len(rep.replaced) == 1 else 'ies'}: {', '.join(rep.replaced)})")
    click.echo(f"wrote {rep.files} files for {', '.join(rep.exercises)} to {rep.out}")
    click.echo(f"install check: {rep.install}")
    for p in rep.problems:
        click.echo(f"problem: {p}")
    click.echo("bundle checks passed" if not rep.problems else
               f"{len(rep.problems)} problem(s): the bundle in {rep.out} is NOT ready to hand out (its "
               f"{BUNDLE_MARKER} file says so); fix them and publish again with --force")
    sys.exit(EXIT_OK if not rep.problems else EXIT_BELOW)


@click.command("new")
@click.argument("name")
@click.option("--from", "source", default=None, help="Start from a copy of this exercise.")
@root_option
def new_cmd(name: str, source: str | None, root: str | None) -> None:
    """Scaffold exercises/NAME, its stub and its solution (NAME like ex17_my_kernel)."""
    from grader.scaffold import create

    r = course_root(root)
    needs_solutions(r, "new")
    src = find_exercises(r, [source])[0] if source else None
    try:
        written = create(r, name, src)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    for p in written:
        click.echo(f"created {p.relative_to(r)}")
    click.echo(f"next: replace the TODOs, then `grade check {name}`")
