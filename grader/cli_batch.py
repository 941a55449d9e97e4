"""``grade batch``: every student's submission of every exercise, with the summary tables."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import click
from rich.console import Console

from grader.cli_common import (EXIT_BELOW, EXIT_CODES_HELP, EXIT_ERROR, EXIT_OK, allow_unisolated_option,
                               backend_option, case_limit_option, course_root, detect_gpu, fail_under_option,
                               find_exercises, format_option, isolation_refusal, mode_option, root_option,
                               secret_refusal, stdout_console, tracer_refusal)
from grader.cli_instructor import gpu_grader


@click.command("batch", epilog=EXIT_CODES_HELP)
@click.argument("submissions", type=click.Path(file_okay=False))
@click.option("--exercises", "names", default="", help="Comma-separated exercises (default: all).")
@click.option("--gpus", default="0", show_default=True, help="Comma-separated GPU indices: one worker each.")
@click.option("--out", "out", type=click.Path(file_okay=False), default="batch-results", show_default=True,
              help="Results folder (re-run the same command to resume).")
@format_option(help="Format of each student's own report file.")
@mode_option("grading", help="grading: more cases, hidden checks, seed mixed with $GRADER_SECRET (refused when it is "
                   "unset); quick: a student's fast run.")
@fail_under_option(help="Exit 1 when any score is below this.")
@case_limit_option
@allow_unisolated_option(help="Grade in --mode grading even where the workers cannot be "
              "isolated from the course files or their kernels cannot be traced; each report says so.")
@click.option("--executor", type=click.Choice(["local", "slurm", "debug"]), default="local", show_default=True,
              help="local: grade here, one worker per --gpus entry; slurm: split the work into Slurm jobs through "
              "submitit (this process waits, then writes the summaries; needs submitit); debug: the same jobs run "
              "in this process through submitit (a dry run).")
@click.option("--partition", default=None, help="With --executor slurm: the Slurm partition (default: the cluster's).")
@click.option("--gpus-per-job", type=click.IntRange(min=1), default=1, show_default=True,
              help="With --executor slurm: GPUs each job asks for (one worker each).")
@click.option("--per-job", type=click.IntRange(min=1), default=50, show_default=True,
              help="With --executor slurm: student/exercise pairs per job.")
@click.option("--job-minutes", type=click.IntRange(min=1), default=120, show_default=True,
              help="With --executor slurm: each job's time limit in minutes (a job cut short is resumed by "
              "running the same command again).")
@root_option
@backend_option
def batch_cmd(submissions: str, names: str, gpus: str, out: str, fmt: str, mode: str, fail_under: float | None,
              case_limit: float | None, allow_unisolated: bool, executor: str, partition: str | None,
              gpus_per_job: int, per_job: int, job_minutes: int, root: str | None, backend: str) -> None:
    """Grade SUBMISSIONS/<student>/<exercise>/ for every student and exercise: one worker per GPU
    (or Slurm jobs, --executor slurm), reference timings measured once and shared, resumable,
    summary.csv, summary.json and index.html in --out, with a summary per exercise (correct, median score,
    fastest speed against the reference, fast_p at p = 0.5, 0.8, 1: the share of submissions correct and at
    least p times as fast as the reference)."""
    from rich.progress import Progress
    from grader import batch as gb

    r = course_root(root)
    exs = find_exercises(r, [names] if names else [])
    out_dir = Path(out)
    try:
        jobs, missing = gb.discover(Path(submissions), exs, skip=out_dir)
    except FileNotFoundError as exc:
        raise click.UsageError(str(exc)) from None
    gpu_list: list[str | None] = [g.strip() for g in gpus.split(",") if g.strip()] or [None]
    if not all(g is None or g.isdigit() for g in gpu_list):
        raise click.BadParameter(f"{gpus!r} is not a comma-separated list of GPU indices", param_hint="--gpus")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.BadParameter(f"cannot create {out}: {exc.strerror or exc}", param_hint="--out") from None
    info = None
    if backend != "host":
        info = detect_gpu()
        if info is None and executor == "slurm":
            pass   # the jobs run on GPU nodes; each grade uses its GPU model's calibration file
        elif info is None:  # record what can be found without a GPU, then the no-GPU exit
            from grader.device import unavailable_reason
            why = unavailable_reason() or "no GPU"
            rows = gb.static_rows(jobs, missing, why)
            gb.write_summaries(out_dir, rows)
            click.echo(f"grade: {why}: batch grading runs kernels on a GPU; nothing was graded. "
                       f"{_static_counts(rows)}: {out_dir / 'summary.csv'} (column reason)", err=True)
            sys.exit(EXIT_ERROR)
        if mode == "grading" and not allow_unisolated:  # once, not once per student
            why_not = isolation_refusal() or tracer_refusal()
            if why_not is not None:
                click.echo(f"grade batch: nothing was graded: {why_not}", err=True)
                sys.exit(EXIT_ERROR)
    if mode == "grading" and secret_refusal() is not None:   # once, not once per student
        click.echo(f"grade batch: nothing was graded: {secret_refusal()}", err=True)
        sys.exit(EXIT_ERROR)
    extra = (["--mode", mode] + (["--backend", backend] if backend != "auto" else [])
             + (["--case-limit", str(case_limit)] if case_limit else [])
             + (["--allow-unisolated"] if allow_unisolated else []))
    reference_times = _shared_reference_times(r, exs, out_dir, info) if info is not None else None
    console = stdout_console()
    if executor != "local":
        from grader.cluster import ClusterOptions, ClusterUnavailable, submit_and_wait
        opts = ClusterOptions(executor, per_job, gpus_per_job, job_minutes, partition)
        try:
            with console.status("submitting...") as status:
                rows = submit_and_wait(jobs, missing, opts, out_dir, r, fmt, reference_times, extra,
                                       on_job=lambda k, n: status.update(f"cluster jobs finished: {k}/{n}"))
        except ClusterUnavailable as exc:
            click.echo(f"grade batch: nothing was graded: {exc}", err=True)
            sys.exit(EXIT_ERROR)
        _batch_table(console, rows, out_dir, missing)
        _batch_exit(rows, fail_under)
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
    failures, started = [0], time.perf_counter()

    def done(job: gb.Job, data: dict) -> None:
        if data.get("status") != gb.RowStatus.ERROR:   # an error row is pending (graded again), not wrong
            failures[0] += data.get("status") != gb.RowStatus.GRADED or not data.get("correct")
        n = bar.tasks[0].completed + 1
        rate = n / max(time.perf_counter() - started, 1e-9) * 60
        bar.update(task, advance=1, description=f"{job.student}/{job.exercise.name}", failures=failures[0],
                   rate=f"{rate:.1f}/min")

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                  TextColumn("[red]{task.fields[failures]} not correct[/]"), TimeElapsedColumn(), TextColumn("ETA"),
                  TimeRemainingColumn(), console=console) as bar:
        task = bar.add_task("grading", total=len(jobs), failures=0, rate="-")
        rows = gb.run_batch(jobs, out_dir, r, gpu_list if backend != "host" else [None], fmt, reference_times,
                            extra, on_done=done, missing=missing)
    _batch_table(console, rows, out_dir, missing)
    _batch_exit(rows, fail_under)


def _static_counts(rows: list) -> str:  # type: ignore[type-arg]
    """What a batch without a GPU found, each count named for what it counts: "Of 4 student/exercise
    pairs, 2 cannot be graded as submitted (...), 2 have no folder"."""
    from grader.batch import RowStatus
    def n(count: int, one: str, many: str) -> str:
        return f"{count} {one if count == 1 else many}"
    bad = sum(r.status == RowStatus.NOT_GRADED for r in rows)
    absent = sum(r.status == RowStatus.MISSING for r in rows)
    waiting = sum(r.status == RowStatus.ERROR and r.reason.startswith("not graded:") for r in rows)
    broken = sum(r.status == RowStatus.ERROR for r in rows) - waiting
    parts = [n(bad, "cannot be graded as submitted (the static checks found a problem)",
               "cannot be graded as submitted (the static checks found a problem in each)")] if bad else []
    parts += [n(absent, "has no folder", "have no folder")] if absent else []
    parts += [n(waiting, "passed the static checks and needs a GPU", "passed the static checks and need a GPU")] \
        if waiting else []
    parts += [n(broken, "was not checked (its exercise's spec does not load)",
                "were not checked (their exercise's spec does not load)")] if broken else []
    return f"Of {n(len(rows), 'student/exercise pair', 'student/exercise pairs')}, " + (", ".join(parts) or "none was found")


def _batch_table(console: Console, rows: list, out_dir: Path, missing: list) -> None:  # type: ignore[type-arg]
    """The batch's table of results, and where they are."""
    from grader.batch import RowStatus
    from rich.table import Table
    t = Table(show_edge=False)
    for col in ("student", "exercise", "status", "score", "correct", "speed", "flags", "reused"):
        t.add_column(col)
    for row in rows:
        status = f"[red]{row.status}[/]" if row.status in (RowStatus.MISSING, RowStatus.ERROR) else row.status
        t.add_row(row.student, row.exercise, status, "-" if row.score is None else f"{row.score:g}", "yes" if row.correct else "no",
                  f"{row.speed:.2f}" if row.speed else "-", str(row.flags), "yes" if row.reused else "")
    console.print(t)
    from grader.batch import FAST_P, exercise_summaries
    per = Table(show_edge=False, title="per exercise")
    for col in ("exercise", "n", "pending", "graded", "correct", "median", "fastest", *(f"p={p:g}" for p in FAST_P)):
        per.add_column(col, no_wrap=True)
    for e in exercise_summaries(rows):
        per.add_row(e.exercise.split("_")[0], str(e.submissions), str(e.pending), str(e.graded), str(e.correct),
                    "-" if e.median_score is None else f"{e.median_score:g}",
                    "-" if e.fastest is None else f"{e.fastest:.2f}x",
                    *("-" if v is None else f"{v:.0%}" for v in e.fast_p.values()))
    console.print(per)
    console.print("n: submissions with a result (a missing folder counts as 0); pending: grades that could not run "
                  "here. p=...: fast_p (KernelBench), the share of the n that are correct and at least p times as fast "
                  "as the reference; '-' while rows are pending or a correct one has no reference time", highlight=False)
    console.print(f"{len(rows)} results in {out_dir} (summary.csv, summary.json, index.html; one line per "
                  f"finished grade in batch.log)")
    if missing:
        console.print(f"[yellow]{len(missing)} student/exercise pair(s) had no folder: status 'missing', score 0[/]")


def _batch_exit(rows: list, fail_under: float | None) -> None:  # type: ignore[type-arg]
    """Exit 4 when a grade could not run, 1 when a score is below --fail-under, else 0."""
    from grader.batch import RowStatus
    if any(row.status == RowStatus.ERROR for row in rows):
        sys.exit(EXIT_ERROR)
    if fail_under is not None and any((row.score or 0.0) < fail_under for row in rows):
        sys.exit(EXIT_BELOW)
    sys.exit(EXIT_OK)


def _shared_reference_times(root: Path, exs, out_dir: Path, info) -> Path | None:  # type: ignore[no-untyped-def]
    """Time each exercise's reference once for the whole batch (reused when resuming)."""
    from grader import calibrate as cal
    from grader.calibration import calibration_path, write_calibration
    from grader.grade import versions

    path = out_dir / f"reference-times-{info.arch}.toml"
    if path.is_file():
        return path
    with_solutions = [ex for ex in exs if (ex.solution / "solution.py").is_file()]
    if not with_solutions:
        fallback = calibration_path(root, info.arch)
        return fallback if fallback.is_file() else None
    results = cal.calibrate_all(with_solutions, gpu_grader(root, info))
    write_calibration(path, cal.meta(info, versions(info)), cal.entries(results, keep_refused=True))
    return path
