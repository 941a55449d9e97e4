"""``grade batch SUBMISSIONS/``: grade every student's folder for each exercise.

Layout::

    SUBMISSIONS/
      alice/
        ex01_vector_add/   kernel.cu, solution.py     (or ex01/)
        ex07_softmax/      kernel.cu, solution.py
      bob/
        ...

Each (student, exercise) is graded by its own ``grade`` process (so a crash or hang of one never
touches another), one at a time per GPU. The reference solutions are timed once per run and shared
(``reference-times-<arch>.toml`` in the output folder, in the calibration format); without
``solutions/`` the calibration file is used. Results go to ``OUT/<student>/<exercise>.json`` plus
the student's report in the chosen format and the roofline plot (``<exercise>.roofline.svg``, when a
shape was timed), then ``summary.csv``, ``summary.json`` and ``index.html`` (every row linked to its
report, and the score distribution per exercise), and a line per finished grade in ``batch.log``. A result
file is written atomically, so an interrupted run is resumed by running the same command again:
finished results are not redone.
"""
from __future__ import annotations

import csv
import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Callable

from grader.spec import Exercise

EXTENSIONS = {"text": "txt", "json": "json", "gradescope": "gradescope.json", "junit": "junit.xml", "html": "html"}


@dataclass(frozen=True)
class Job:
    student: str
    exercise: Exercise
    folder: Path
    refused: str = ""   # why this folder is not graded (it is a link out of the student's folder): a 0 row


class RowStatus(StrEnum):
    """:attr:`Row.status`; GRADED and NOT_GRADED are a grade's own (grade.GradeStatus)."""
    GRADED = "graded"
    NOT_GRADED = "not_graded"   # the submission's problem (exit code 3), or a refused folder
    MISSING = "missing"         # the student has no folder for the exercise
    ERROR = "error"             # the grade could not run here (the machine or the grader): no score


@dataclass(frozen=True)
class Row:
    """One line of the summary."""
    student: str
    exercise: str
    status: RowStatus
    score: float | None  # None: nothing was graded (status "error": the grader or the machine failed)
    max_score: float | None
    correct: bool
    correctness: float
    performance: float
    speed: float | None
    flags: int
    exit_code: int
    reused: bool
    report: str
    basis: str | None = None   # what speed is measured against: side-by-side, calibration (a reference) or roofline
    reason: str = ""  # why it was not graded, the smallest failure, or "correct"


FAST_P = (0.5, 0.8, 1.0)
REFERENCE_BASES = ("side-by-side", "calibration")


@dataclass(frozen=True)
class ExerciseSummary:
    """One exercise over the class: ``submissions`` rows with a result (a missing folder counts as
    its 0; ``pending``: rows whose grade could not run here, status "error", counted apart), how
    many were graded and correct, the median score of the submissions, the fastest correct speed
    against the reference (the clamped geometric mean of the per-shape ratios t_reference /
    t_submission), and fast_p: for each p in FAST_P, the share of the submissions that are correct
    and at least p times as fast as the reference (KernelBench's fast_p, Ouyang et al.,
    "KernelBench: Can LLMs Write Efficient GPU Kernels?", 2025). fast_p is None (unknown) while
    rows are pending or when a correct submission has no speed against a reference (the roofline
    basis, or no reference time at all)."""
    exercise: str
    submissions: int
    pending: int
    graded: int
    correct: int
    median_score: float | None
    max_score: float | None
    fastest: float | None
    fast_p: dict[str, float | None]


def exercise_summaries(rows: list[Row]) -> list[ExerciseSummary]:
    """Per exercise (in the rows' order), see :class:`ExerciseSummary`."""
    import statistics
    out = []
    for name in dict.fromkeys(r.exercise for r in rows):
        everyone = [r for r in rows if r.exercise == name]
        mine = [r for r in everyone if r.status != RowStatus.ERROR]
        scores = [r.score for r in mine if r.score is not None]
        correct = [r for r in mine if r.correct]
        speeds = [r.speed for r in correct if r.speed is not None and r.basis in REFERENCE_BASES]
        n, pending = len(mine), len(everyone) - len(mine)
        known = n > 0 and not pending and len(speeds) == len(correct)
        out.append(ExerciseSummary(
            name, n, pending, sum(r.status == RowStatus.GRADED for r in mine), len(correct),
            statistics.median(scores) if scores else None, next((r.max_score for r in everyone if r.max_score), None),
            max(speeds) if speeds else None,
            {f"{p:g}": (sum(s >= p for s in speeds) / n if known else None) for p in FAST_P}))
    return out


def discover(submissions: Path, exercises: list[Exercise], skip: Path | None = None) -> tuple[list[Job], list[Job]]:
    """(jobs, missing): every (student, exercise) folder under ``submissions``, and the pairs for
    which a student has no folder (they get a "missing" row, so nobody silently drops out).
    ``skip``: a folder that is no student's (the results folder, when it lies inside).

    Raises:
        FileNotFoundError: the folder does not exist, holds no student folder, or holds exercise
            folders where student folders belong (the layout one level off).
    """
    layout = "expected SUBMISSIONS/<student>/<exercise>/"
    if not submissions.is_dir():
        raise FileNotFoundError(f"{submissions}: no such folder ({layout})")
    skipped = skip.resolve() if skip is not None else None
    students = sorted(p for p in submissions.iterdir()
                      if p.is_dir() and not p.name.startswith(".") and p.resolve() != skipped)
    if not students:
        raise FileNotFoundError(f"{submissions}: no student folders in it ({layout})")
    names = {n for ex in exercises for n in (ex.name, ex.name[:4])}
    if all(p.name in names for p in students):
        raise FileNotFoundError(f"{submissions}: its folders ({', '.join(p.name for p in students[:3])}) are exercise "
                                f"folders, not students ({layout}): put them in a folder per student")
    jobs, missing = [], []
    for student in students:
        for ex in exercises:
            found = next((c for c in (student / ex.name, student / ex.name[:4]) if c.is_dir()), None)
            why = _linked_away(submissions, student, found) if found else ""
            (jobs if found and not why else missing).append(Job(student.name, ex, found or student / ex.name, why))
    return jobs, missing


def _linked_away(submissions: Path, student: Path, folder: Path) -> str:
    """Why ``folder`` (SUBMISSIONS/<student>/<exercise>) cannot be graded as that student's work, or "":
    a student or exercise folder that is a symbolic link, or one that resolves outside the student's
    own folder, would have another student's folder or the course's solutions/ graded as this
    student's (a link is what git and unzip restore), and the worker, hidden only from the folder the
    link leads to, could reach every other submission (red-team pass 14b)."""
    link = next((p for p in (student, folder) if p.is_symlink()), None)
    if link is not None:
        return (f"{link.relative_to(submissions)} is a symbolic link (to {os.readlink(link)}), not a folder of "
                f"files: not graded; fix: submit the files themselves")
    own = (submissions.resolve() / student.name)
    if not folder.resolve().is_relative_to(own):
        return (f"{folder.relative_to(submissions)} lies outside {student.name}/ ({folder.resolve()}): not graded; "
                f"fix: submit the files themselves")
    return ""


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".partial")
    tmp.write_text(text)
    os.replace(tmp, path)


def result_key(job: Job, fmt: str, extra: list[str]) -> str:
    """What a stored result must have been graded from to be reused: the report format, the
    grading options (mode, limits...) and every file of the submission folder (SHA-256). Only
    regular files are read (a link, a FIFO or a device is hashed as its kind: a link to /proc/kmsg
    hung the batch), in 1 MiB chunks, at most ``grader.static.SUBMISSION_READ_LIMIT_BYTES`` in all,
    what the static check reads of the folder too (a 40 GB sparse file
    killed the batch with MemoryError before anyone was graded; red-team pass 14b): past it, the
    sizes and modification times stand in for the contents."""
    import hashlib
    import stat

    from grader import static
    h = hashlib.sha256(json.dumps([fmt, list(extra)]).encode())
    left = static.SUBMISSION_READ_LIMIT_BYTES
    for f in sorted(job.folder.rglob("*")):
        try:
            st = f.lstat()
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            continue
        h.update(str(f.relative_to(job.folder)).encode() + b"\0")
        if not stat.S_ISREG(st.st_mode):
            h.update(f"<not a regular file: mode {st.st_mode:o}>".encode())
            continue
        if st.st_size > left:
            h.update(f"<{st.st_size} bytes, modified {st.st_mtime_ns}>".encode())
            continue
        try:
            with open(f, "rb") as fh:
                while chunk := fh.read(min(1 << 20, left)):
                    h.update(chunk)
                    left -= len(chunk)
        except OSError:
            h.update(b"<unreadable>")
    return h.hexdigest()


def stored(out: Path, job: Job) -> dict | None:
    """The result a job wrote (whatever its status), or None when there is none."""
    path = out / job.student / f"{job.exercise.name}.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "status" in data else None


def finished(out: Path, job: Job, key: str | None = None) -> dict | None:
    """The stored result of a job, or None when it must be graded (again): none was written, the
    grade could not run (status "error": the machine, not the submission), or it was graded from
    something else than ``key`` says (a changed submission, mode or format)."""
    data = stored(out, job)
    if data is None or data["status"] == RowStatus.ERROR:
        return None
    return None if key is not None and data.get("batch_key") != key else data


def run_job(job: Job, out: Path, root: Path, gpu: str | None, fmt: str, reference_times: Path | None,
            extra: list[str]) -> dict:
    """Grade one job in a ``grade`` subprocess; returns its JSON result (also written to disk)."""
    folder = out / job.student
    folder.mkdir(parents=True, exist_ok=True)
    result_json = folder / f"{job.exercise.name}.json"
    report = folder / f"{job.exercise.name}.{EXTENSIONS[fmt]}"
    tmp_json = folder / f"{job.exercise.name}.json.partial"
    cmd = [sys.executable, "-m", "grader.cli", job.exercise.name, "--root", str(root), "--submission",
           str(job.folder.resolve()), "--format", fmt, "--output", str(report), "--json", str(tmp_json),
           "--no-reference", "--hide", str(job.folder.parent.parent.resolve()), "--hide", str(out.resolve()),
           "--plot", str(folder / f"{job.exercise.name}.roofline.svg"), *extra]
    if reference_times is not None:
        cmd += ["--reference-times", str(reference_times)]
    env = dict(os.environ)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    try:
        data = json.loads(tmp_json.read_text())
        data["exit_code"] = proc.returncode
    except (OSError, ValueError):  # grade died before writing its result: a grader error, said as one
        from grader.report.json_report import error_dict
        message = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        data = error_dict(job.exercise.name, str(job.folder), "grader_error",
                          f"grade exited {proc.returncode} without a result: {message[0]}", 4)
    data["batch_key"] = result_key(job, fmt, extra)
    _atomic_write(result_json, json.dumps(data, indent=2))
    tmp_json.unlink(missing_ok=True)
    return data


def _reason(data: dict) -> str:
    if data.get("reason"):
        return str(data["reason"])
    small = data.get("smallest_failure") or {}
    if small:
        return f"{small.get('description', '')}: {small.get('message', '')}".strip(": ")
    return "correct" if data.get("correct") else str(data.get("score", {}).get("note", ""))


def row(job: Job, data: dict, reused: bool, out: Path, fmt: str) -> Row:
    """The summary line of a finished job from its JSON result."""
    sc = data.get("score", {})
    total = sc.get("total")
    return Row(job.student, job.exercise.name, RowStatus(data.get("status", RowStatus.ERROR)), None if total is None else float(total),
               sc.get("max"), bool(data.get("correct")), float(sc.get("correctness") or 0.0),
               float(sc.get("performance") or 0.0), sc.get("aggregate"), len(data.get("flags", [])),
               int(data.get("exit_code", 4)), reused,
               str((out / job.student / f"{job.exercise.name}.{EXTENSIONS[fmt]}").relative_to(out)), sc.get("basis"),
               _reason(data))


def _missing_row(job: Job) -> Row:
    """A pair without a folder, or whose folder is refused (``job.refused``: "not_graded"): 0 points
    of the exercise's total (max_score, as on every other row; None only when its spec cannot be read)."""
    return Row(job.student, job.exercise.name, RowStatus.NOT_GRADED if job.refused else RowStatus.MISSING, 0.0, job_max(job), False,
               0.0, 0.0, None, 0, 3, False, "", reason=job.refused or f"no folder {job.folder}")


def static_rows(jobs: list[Job], missing: list[Job], no_gpu: str, arch: str = "sm_90") -> list[Row]:
    """Summary lines for a batch on a machine without a GPU (``no_gpu`` says why): what can be
    found without running anything (a missing file, a compile error, a malformed ``solve``, a
    missing folder) is recorded as "not_graded" (exit code 3) or "missing"; every other submission
    is "error" (exit code 4: not graded here), its reason saying so. No per-student result is
    written, so a later run on a GPU grades everyone."""
    from grader.spec import SpecError, load_spec
    from grader.static import without_gpu

    rows = [_missing_row(j) for j in missing]
    for job in jobs:
        try:
            spec = load_spec(job.exercise.spec_path)
            problem, rep = without_gpu(spec, job.folder, arch)
        except SpecError as exc:
            rows.append(Row(job.student, job.exercise.name, RowStatus.ERROR, 0.0, None, False, 0.0, 0.0, None, 0, 4, False,
                            "", reason=str(exc)))
            continue
        if problem:
            rows.append(Row(job.student, job.exercise.name, RowStatus.NOT_GRADED, 0.0, spec.total_points, False, 0.0, 0.0,
                            None, 0, 3, False, "", reason=problem))
        else:
            checked = "no problem found by the static checks" + ("" if rep.compiled else "; kernel.cu was NOT compiled")
            rows.append(Row(job.student, job.exercise.name, RowStatus.ERROR, 0.0, spec.total_points, False, 0.0, 0.0, None,
                            0, 4, False, "", reason=f"not graded: {no_gpu} ({checked})"))
    return sorted(rows, key=lambda r: (r.student, r.exercise))



def run_batch(jobs: list[Job], out: Path, root: Path, gpus: list[str | None], fmt: str,
              reference_times: Path | None, extra: list[str],
              on_done: Callable[[Job, dict], None] = lambda j, d: None, missing: list[Job] = (),
              write: bool = True) -> list[Row]:
    """Grade every unfinished job (one thread per GPU) and, when ``write``, write the summaries
    (with a "missing" row for each pair in ``missing``); a cluster job (grader.cluster) leaves
    them to the process that submitted it."""
    out.mkdir(parents=True, exist_ok=True)
    rows: dict[tuple[str, str], Row] = {}
    for job in missing:
        rows[(job.student, job.exercise.name)] = _missing_row(job)
    todo: queue.Queue[Job] = queue.Queue()
    for job in jobs:
        done = finished(out, job, result_key(job, fmt, extra))
        if done is not None:
            rows[(job.student, job.exercise.name)] = row(job, done, True, out, fmt)
            on_done(job, done)
        else:
            todo.put(job)
    lock = threading.Lock()

    def work(gpu: str | None) -> None:
        while True:
            try:
                job = todo.get_nowait()
            except queue.Empty:
                return
            t0 = time.perf_counter()
            data = run_job(job, out, root, gpu, fmt, reference_times, extra)
            with lock:
                rows[(job.student, job.exercise.name)] = r = row(job, data, False, out, fmt)
                _log(out, r, gpu, time.perf_counter() - t0)
                on_done(job, data)

    threads = [threading.Thread(target=work, args=(g,), daemon=True) for g in gpus]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(0.2)
    everyone = sorted([*jobs, *missing], key=lambda j: (j.student, j.exercise.name))
    ordered = [rows[(j.student, j.exercise.name)] for j in everyone if (j.student, j.exercise.name) in rows]
    if write:
        write_summaries(out, ordered)
    return ordered


def collect(jobs: list[Job], missing: list[Job], out: Path, fmt: str, failed: dict[tuple[str, str], str],
            reused: set[tuple[str, str]] = frozenset()) -> list[Row]:
    """The summary rows from the results on disk (grades run elsewhere, e.g. cluster jobs), written
    as the summaries: a pair without a result is an "error" row (no score) whose reason is
    ``failed``'s entry for it, else that its job did not finish; pairs in ``reused`` were finished
    before this run."""
    rows = [_missing_row(j) for j in missing]
    for job in jobs:
        data = stored(out, job)   # an "error" result keeps its own reason here (a re-run grades it again)
        if data is not None:
            rows.append(row(job, data, (job.student, job.exercise.name) in reused, out, fmt))
        else:
            why = failed.get((job.student, job.exercise.name), "not graded: its cluster job did not finish")
            rows.append(Row(job.student, job.exercise.name, RowStatus.ERROR, None, job_max(job), False, 0.0, 0.0, None, 0, 4,
                            False, "", reason=f"{why}; re-run the same command to grade it"))
    rows.sort(key=lambda r: (r.student, r.exercise))
    write_summaries(out, rows)
    return rows


def job_max(job: Job) -> float | None:
    """The exercise's total points, None when its spec cannot be read."""
    from grader.spec import SpecError, load_spec
    try:
        return load_spec(job.exercise.spec_path).total_points
    except (SpecError, OSError):
        return None


def _log(out: Path, r: Row, gpu: str | None, seconds: float) -> None:
    """Append one line for a finished grade to ``out/batch.log`` (tab-separated: time, student,
    exercise, status, score, exit code, GPU, seconds, reason)."""
    score = "-" if r.score is None or r.status == RowStatus.ERROR else f"{r.score:g}"
    fields = [time.strftime("%Y-%m-%dT%H:%M:%S%z"), r.student, r.exercise, r.status, score, str(r.exit_code),
              gpu if gpu is not None else "-", f"{seconds:.1f}", r.reason.replace("\t", " ").replace("\n", " ")[:300]]
    with open(out / "batch.log", "a") as fh:
        fh.write("\t".join(fields) + "\n")


def _summary_fields(r: Row) -> dict:
    """A row as written: a row whose grade did not run here ("error": no GPU, a grader problem)
    has no score at all (empty in the CSV, null in the JSON), never a 0 an instructor could import."""
    d = asdict(r)
    if r.status == RowStatus.ERROR:
        d.update(score=None, correctness=None, performance=None)
    return d


def _csv_cell(value: object) -> object:
    """``value`` for summary.csv: text that a spreadsheet would read as a formula (a student folder
    named ``=HYPERLINK(...)``: OWASP, "CSV Injection") gets a leading apostrophe."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def write_summaries(out: Path, rows: list[Row]) -> None:
    """summary.csv, summary.json and index.html in ``out`` (each written atomically)."""
    fields = list(Row.__dataclass_fields__)
    with open(out / "summary.csv.partial", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: _csv_cell(v) for k, v in _summary_fields(r).items()})
    os.replace(out / "summary.csv.partial", out / "summary.csv")
    generated = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    exercises = [asdict(e) for e in exercise_summaries(rows)]
    _atomic_write(out / "summary.json", json.dumps({"generated": generated, "exercises": exercises,
                                                    "rows": [_summary_fields(r) for r in rows]}, indent=2))
    from grader.report.html import class_index
    _atomic_write(out / "index.html", class_index([_summary_fields(r) for r in rows], generated, exercises))
