"""``grade batch --executor slurm``: the same batch, split into cluster jobs through submitit.

Each job runs :func:`grader.batch.run_batch` on its share of the (student, exercise) pairs, one
worker per GPU Slurm gave it, writing into the same ``--out`` folder (results are written
atomically per pair, so an interrupted or failed job is resumed by running the command again).
The submitting process waits for the jobs, then writes the summaries from the results on disk;
a pair whose job failed is an "error" row naming the job. Reference times: the file the submitting
process measured or was given (``reference-times-<arch>.toml``), else each grade uses the
calibration file of its own GPU model. ``debug`` runs the jobs in this process through submitit
(for tests and dry runs); submitit (https://github.com/facebookincubator/submitit) does the
sbatch scripts, the job arrays and the log files under ``OUT/slurm/``.
"""
from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from grader import batch as gb

EXECUTORS = ("local", "slurm", "debug")


class ClusterUnavailable(Exception):
    """The cluster path cannot run here (one line, with the fix)."""


@dataclass(frozen=True)
class ClusterOptions:
    """How to split and submit: ``executor`` "slurm" or "debug"; ``per_job``: pairs per job;
    ``gpus_per_job``: GPUs each job asks for (one worker each); ``minutes``: each job's time
    limit; ``partition``: the Slurm partition (None: the cluster's default)."""
    executor: str
    per_job: int = 50
    gpus_per_job: int = 1
    minutes: int = 120
    partition: str | None = None


def chunks(jobs: list[gb.Job], per_job: int) -> list[list[gb.Job]]:
    """``jobs`` in consecutive groups of at most ``per_job``, as even in size as they can be."""
    n = max(1, math.ceil(len(jobs) / max(1, per_job)))
    size = math.ceil(len(jobs) / n) if jobs else 0
    return [jobs[i:i + size] for i in range(0, len(jobs), size)] if jobs else []


def run_chunk(jobs: list[gb.Job], out: Path, root: Path, fmt: str, reference_times: Path | None,
              extra: list[str], gpus: list[str | None]) -> int:
    """On the compute node: grade ``jobs`` (one worker per entry of ``gpus``; Slurm numbers a job's
    GPUs from 0 through CUDA_VISIBLE_DEVICES). Returns how many pairs it finished."""
    rows = gb.run_batch(jobs, out, root, gpus, fmt, reference_times, extra, write=False)
    return len(rows)


def submit_and_wait(jobs: list[gb.Job], missing: list[gb.Job], opts: ClusterOptions, out: Path, root: Path,
                    fmt: str, reference_times: Path | None, extra: list[str],
                    on_job: Callable[[int, int], None] = lambda done, total: None) -> list[gb.Row]:
    """Submit the unfinished pairs as cluster jobs, wait for them (``on_job(done, total)`` after
    each), then write the summaries from the results on disk and return their rows.

    Raises:
        ClusterUnavailable: submitit is not installed, or --executor slurm where there is no Slurm
            (the message says what to do).
    """
    try:
        import submitit
    except ImportError:
        raise ClusterUnavailable("--executor slurm needs submitit; fix: python3 -m pip install submitit") from None
    if opts.executor == "slurm" and shutil.which("sbatch") is None:   # submitit would fall back to local runs
        raise ClusterUnavailable("--executor slurm needs Slurm (sbatch is not on PATH); fix: run it on the cluster's "
                                 "login node, or use --executor local on a GPU machine")
    todo = [j for j in jobs if gb.finished(out, j, gb.result_key(j, fmt, extra)) is None]
    done_before = {(j.student, j.exercise.name) for j in jobs} - {(j.student, j.exercise.name) for j in todo}
    executor = submitit.AutoExecutor(folder=out / "slurm" / ("%j" if opts.executor == "slurm" else "debug"),
                                     cluster=opts.executor)
    params = dict(timeout_min=opts.minutes, gpus_per_node=opts.gpus_per_job, tasks_per_node=1,
                  cpus_per_task=max(2, 4 * opts.gpus_per_job), slurm_job_name="grade-batch")
    if opts.partition:
        params["slurm_partition"] = opts.partition
    executor.update_parameters(**params)
    # a job numbers its GPUs from 0 (Slurm sets CUDA_VISIBLE_DEVICES); in process: this machine's own
    gpus: list[str | None] = [None] if opts.executor == "debug" else [str(i) for i in range(opts.gpus_per_job)]
    groups = chunks(todo, opts.per_job)
    futures = []
    if groups:
        with executor.batch():   # one job array
            futures = [executor.submit(run_chunk, g, out.resolve(), root.resolve(), fmt, reference_times, extra, gpus)
                       for g in groups]
    failed: dict[tuple[str, str], str] = {}
    for k, (group, future) in enumerate(zip(groups, futures)):
        try:
            future.result()
        except Exception as exc:  # noqa: BLE001 - a job that failed or timed out: its unfinished pairs are errors
            why = f"cluster job {future.job_id} failed: {str(exc).strip().splitlines()[-1][:200] if str(exc).strip() else type(exc).__name__}"
            for j in group:
                failed[(j.student, j.exercise.name)] = why
        on_job(k + 1, len(groups))
    return gb.collect(jobs, missing, out, fmt, failed, done_before)
