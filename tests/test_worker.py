"""The worker's isolation, exercised with CPU-side fake submissions (host backend, numpy arrays)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from grader.sandbox.buffers import HostBackend
from grader.sandbox.supervisor import Worker, WorkerConfig
from tests.conftest import fake_submission as make_submission

ADD = "def solve(a, b, c):\n    c[...] = a + b\n"


def start(folder: Path, call_s: float = 5.0, compile_s: float = 20.0) -> Worker:
    return Worker(WorkerConfig("host", folder, (), ("a", "b", "c"), compile_s, call_s))


@pytest.fixture
def arrays():
    be = HostBackend()
    arrs = [be.alloc((100,), "float32") for _ in range(3)]
    arrs[0].array[...] = np.arange(100)
    arrs[1].array[...] = 1.0
    yield arrs
    for g in arrs:
        g.free()


def run(w: Worker, arrs, timeout: float = 5.0):
    return w.request({"op": "run", "args": [g.descriptor.to_json() for g in arrs]}, timeout)


def test_a_correct_fake_writes_the_shared_output(tmp_path, arrays):
    w = start(make_submission(tmp_path, ADD))
    try:
        assert w.ensure().ok
        out = run(w, arrays)
        assert out.ok and out.wall_s > 0
        np.testing.assert_array_equal(arrays[2].array, np.arange(100) + 1.0)
        assert all(g.guard_damage() is None for g in arrays)
    finally:
        w.close()


def test_a_closed_worker_started_again_logs_to_a_new_file(tmp_path, arrays):
    """close() closes the log's descriptors; a later start opens a new log (a closed one, -1, would
    be subprocess.PIPE for stdout: a pipe nobody reads, which blocks a talkative worker)."""
    w = start(make_submission(tmp_path, "def solve(a, b, c):\n    print('said', flush=True)\n    c[...] = a + b\n"))
    try:
        assert w.ensure().ok and run(w, arrays).ok
        w.close()
        assert w.log_tail() == ""
        assert w.ensure().ok and run(w, arrays).ok
        assert w.log_tail().splitlines() == ["said"]
    finally:
        w.close()


@pytest.mark.parametrize("body, kind, words", [
    ("def solve(a, b, c):\n    raise ValueError('boom')\n", "exception", "ValueError: boom (at solution.py:2 in solve)"),
    ("import os, signal\ndef solve(a, b, c):\n    os.kill(os.getpid(), signal.SIGSEGV)\n", "crash", "SIGSEGV"),
    ("import os\ndef solve(a, b, c):\n    os._exit(7)\n", "crash", "exited with status 7"),
    ("def solve(a, b, c):\n    while True:\n        pass\n", "timeout", "no answer within 1 s"),
    ("def solve(a, b, c):\n    raise MemoryError('too big')\n", "out_of_memory", "out of memory"),
    ("import sys\ndef solve(a, b, c):\n    while True:\n        sys.stdout.write('x' * 65536)\n", "output_limit",
     "output limit"),
])
def test_failures_are_classified_and_the_worker_restarts(tmp_path, arrays, body, kind, words):
    w = start(make_submission(tmp_path, body), call_s=1.0)
    try:
        assert w.ensure().ok
        out = run(w, arrays, timeout=1.0 if kind == "timeout" else 20.0)
        assert not out.ok and out.kind == kind, out
        assert words in out.message
        assert not w.alive
        # the next request gets a fresh worker that loads the submission again
        assert w.ensure().ok and w.starts == 2
    finally:
        w.close()


@pytest.mark.parametrize("body, kind, words", [
    ("def solve(a, b, c):\n  return (\n", "bad_submission", "solution.py:2: syntax error"),
    ("import does_not_exist\ndef solve(a, b, c): pass\n", "import_error", "No module named 'does_not_exist'"),
    ("def solver(a, b, c): pass\n", "bad_submission", "defines no function solve"),
    ("def solve(a, b): pass\n", "bad_submission", "cannot take the 3 arguments"),
    # the loop on one line: the stack dump at the limit can land on either line of a two-line loop
    ("while True: pass\n", "timeout", "solution.py did not finish importing within 2 s ([limits] compile_s); "
     "it was at solution.py:1"),
])
def test_load_failures(tmp_path, body, kind, words):
    w = start(make_submission(tmp_path, body), compile_s=2.0)
    try:
        out = w.ensure()
        assert not out.ok and out.kind == kind, out
        assert words in out.message
    finally:
        w.close()


@pytest.mark.parametrize("claimed", ["grader_error", "tampered", "foreign_kernel", "timeout"])
def test_a_submission_cannot_choose_a_kind_only_the_grader_decides(tmp_path, arrays, claimed):
    """Red-team pass 14: the submission's code runs in the worker's process, so it can make the worker
    reply any failure kind (here by sending it on the worker's socket); a "grader error" in the report
    would blame the grader, a "tampered" or "timeout" would claim a check that never ran."""
    body = ("import gc, time\nfrom grader.sandbox import protocol\n"
            "def solve(a, b, c):\n"
            "    server = next(o for o in gc.get_objects() if type(o).__name__ == 'Server' and hasattr(o, 'sock'))\n"
            f"    protocol.send(server.sock, {{'ok': False, 'kind': {claimed!r}, 'message': 'not my fault'}})\n"
            "    time.sleep(30)\n")
    w = start(make_submission(tmp_path, body))
    try:
        assert w.ensure().ok
        out = run(w, arrays)
        assert not out.ok and out.kind == "exception", out
        assert "which only the grader decides: not my fault" in out.message
    finally:
        w.close()


def test_a_worker_that_died_between_requests_is_a_crash_not_a_grader_error(tmp_path, arrays):
    """A thread of the last call can kill the worker after it replied: the next request says so."""
    body = ("import os, signal, threading, time\n"
            "def _later():\n    time.sleep(0.2)\n    os.kill(os.getpid(), signal.SIGSEGV)\n"
            "def solve(a, b, c):\n    c[...] = a + b\n    threading.Thread(target=_later, daemon=True).start()\n")
    w = start(make_submission(tmp_path, body))
    try:
        assert w.ensure().ok
        assert run(w, arrays).ok
        w.proc.wait(timeout=10)
        out = run(w, arrays)
        assert out.kind == "crash" and "SIGSEGV" in out.message, out
    finally:
        w.close()


def test_writes_past_an_output_are_caught_by_the_guard(tmp_path, arrays):
    body = """
    import ctypes
    def solve(a, b, c):
        c[...] = a + b
        ctypes.memset(c.ctypes.data + c.nbytes, 0, 16)
    """
    w = start(make_submission(tmp_path, body))
    try:
        assert run(w, arrays).ok if w.ensure().ok else False
        assert arrays[2].guard_damage() == "16 bytes after the end"
        assert arrays[0].guard_damage() is None
    finally:
        w.close()


def test_the_worker_does_not_see_the_grading_secret(tmp_path, arrays, monkeypatch):
    monkeypatch.setenv("GRADER_SECRET", "hunter2")
    body = """
    import os
    def solve(a, b, c):
        c[...] = 1.0 if "GRADER_SECRET" in os.environ else 0.0
    """
    w = start(make_submission(tmp_path, body))
    try:
        assert w.ensure().ok and run(w, arrays).ok
        assert float(arrays[2].array[0]) == 0.0
    finally:
        w.close()


def test_time_request_returns_one_sample_per_call(tmp_path, arrays):
    w = start(make_submission(tmp_path, ADD))
    try:
        assert w.ensure().ok
        descs = [g.descriptor.to_json() for g in arrays]
        out = w.request({"op": "time", "sets": [descs, descs], "order": [1, 0, 1]}, 5)
        assert out.ok and len(out.data["times_ms"]) == 3
        assert all(t >= 0 for t in out.data["times_ms"])
    finally:
        w.close()


def test_map_request_maps_ahead_of_the_timed_request_and_unmaps_the_previous(tmp_path, arrays):
    w = start(make_submission(tmp_path, ADD))
    try:
        assert w.ensure().ok
        descs = [g.descriptor.to_json() for g in arrays]
        assert w.request({"op": "map", "sets": [descs], "close": []}, 5).ok
        arrays[2].array[:] = 0.0
        out = w.request({"op": "time", "order": [0]}, 5)   # no descriptors: the sets of the map
        assert out.ok and len(out.data["times_ms"]) == 1
        assert np.allclose(arrays[2].array, arrays[0].array + arrays[1].array)   # solve ran on them
        beyond = w.request({"op": "time", "order": [1]}, 5)   # one set was mapped
        # a protocol misuse the worker reports; from a submission's worker, never taken as a "grader error"
        # (its code could send that reply itself: test_a_submission_cannot_choose_a_kind_only_the_grader_decides)
        assert not beyond.ok and beyond.kind == "exception" and "timed request for sets [1] with 1 mapped" in beyond.message
        assert w.ensure().ok   # a failed request ends the worker: a fresh one
        bad = w.request({"op": "map", "sets": [[{**descs[0], "handle": "no-such-segment"}]], "close": []}, 5)
        assert not bad.ok and bad.kind == "exception"   # a mapping that fails is reported, not hidden
    finally:
        w.close()


def test_a_package_planted_in_the_working_directory_cannot_shadow_the_grader(tmp_path, arrays):
    """A submission that writes a fake `grader` package into its working directory must not
    change the code of the next worker (python -m would put the cwd first on sys.path)."""
    body = """
    import os
    os.makedirs("grader/sandbox", exist_ok=True)
    open("grader/__init__.py", "w").write("raise SystemExit('shadowed')\\n")
    open("grader/sandbox/__init__.py", "w").write("")
    def solve(a, b, c):
        c[...] = a + b
        os._exit(1)  # force a restart
    """
    w = start(make_submission(tmp_path, body))
    try:
        assert w.ensure().ok
        first_cwd = w.cwd
        assert not run(w, arrays).ok          # the worker died: it is started again
        assert w.ensure().ok, w.log_tail()    # the planted package was not imported
        assert w.cwd != first_cwd and not (first_cwd / "grader").exists()
    finally:
        w.close()


def test_the_worker_never_imports_from_its_working_directory(tmp_path, arrays, monkeypatch):
    """Even a planted package already sitting in the worker's cwd is not imported (python -P)."""
    import tempfile

    planted = tmp_path / "cwd"
    (planted / "grader" / "sandbox").mkdir(parents=True)
    (planted / "grader" / "__init__.py").write_text("raise SystemExit('shadowed')\n")
    (planted / "grader" / "sandbox" / "__init__.py").write_text("")
    monkeypatch.setattr(tempfile, "mkdtemp", lambda prefix="", dir=None: str(planted))
    w = start(make_submission(tmp_path, ADD))
    try:
        assert w.cwd is None
        out = w.ensure()
        assert w.cwd == planted and out.ok, (out, w.log_tail())
    finally:
        monkeypatch.undo()
        w.close()


# -- the filesystem view (grader/sandbox/isolation.py) -----------------------------------------------
PEEK = '''
import os
def solve(a, b, c):
    course = os.environ.get("COURSE_UNDER_TEST", "")
    seen = sorted(os.listdir(course)) if os.path.isdir(course) else None
    try:
        open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "planted.txt"), "w").write("x")
        wrote = True
    except OSError:
        wrote = False
    raise RuntimeError(f"seen={seen} wrote={wrote}")
'''


def test_the_worker_sees_no_hidden_folder_and_cannot_write_its_submission(tmp_path, arrays, monkeypatch):
    from grader.sandbox import isolation
    if isolation.unavailable_reason():
        pytest.skip(isolation.unavailable_reason())
    course = tmp_path / "course"
    (course / "solutions" / "ex01").mkdir(parents=True)
    (course / "solutions" / "ex01" / "solution.py").write_text("secret = 1\n")
    (course / "students").mkdir()
    sub = make_submission(course / "students", PEEK, name="alice")    # inside the hidden folder
    monkeypatch.setenv("COURSE_UNDER_TEST", str(course))
    w = Worker(WorkerConfig("host", sub, (), ("a", "b", "c"), 20.0, 5.0, hide=(str(course),)))
    try:
        assert w.ensure().ok, w.log_tail()
        out = run(w, arrays)
        # only the path down to the submission is there; nothing written into it
        assert "seen=['students'] wrote=False" in out.message, out.message
        assert "hidden from the worker" in w.isolation and str(course) in w.isolation
    finally:
        w.close()
    assert not (sub / "planted.txt").exists()


def test_a_trusted_worker_is_not_isolated(tmp_path, arrays):
    w = Worker(WorkerConfig("host", make_submission(tmp_path, ADD), (), ("a", "b", "c"), 20.0, 5.0,
                            hide=(str(tmp_path),), trusted=True))
    try:
        assert w.ensure().ok and run(w, arrays).ok
        assert w.isolation.startswith("trusted worker")
    finally:
        w.close()


def test_view_round_trips_and_describes_itself() -> None:
    from grader.sandbox.isolation import View
    v = View(("/srv/course",), ("/srv/course/students/a", "/opt/py"), ("/tmp/w",))
    assert View.from_json(v.to_json()) == v
    assert v.describe() == "mount namespace; hidden from the worker: /srv/course"


def test_the_view_hides_short_paths_home_and_the_whole_grader_cache(tmp_path):
    """Red-team findings: a folder right below / was silently not hidden; the grader user's home
    (user site-packages, ~/.local/bin) and the ceiling cache were reachable."""
    from grader.sandbox.supervisor import kernel_cache_root
    w = Worker(WorkerConfig("host", make_submission(tmp_path, ADD), (), ("a", "b", "c"), 20.0, 5.0,
                            hide=("/submissions-of-everyone",)))
    w._new_cwd()  # noqa: SLF001 - the view needs the working directory
    try:
        tracer_dir = str(kernel_cache_root().parent / "tracer" / "abc")
        view = w._view(kernel_cache_root() / "x", (tracer_dir,))  # noqa: SLF001
        assert tracer_dir in view.show and tracer_dir not in view.writable   # the kernel tracer, read-only
        assert "/submissions-of-everyone" in view.hide
        assert str(Path.home().resolve()) in view.hide and str(kernel_cache_root().parent.resolve()) in view.hide
        assert "/" not in view.hide
        assert str((tmp_path / "sub").resolve()) in view.show and str(w.cwd) in view.writable
    finally:
        w.close()


def test_the_staging_folder_is_never_one_the_view_hides(monkeypatch, tmp_path):
    """Red-team pass 15: the mounts were staged under a hard-coded /tmp; a view hiding it (TMPDIR
    elsewhere, a result file in /tmp) made the stage vanish under its tmpfs, the worker exit 121."""
    import tempfile
    from grader.sandbox import isolation
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    stage = isolation.stage_folder(isolation.View((str(tmp_path),), ()))
    try:
        assert tmp_path not in stage.parents and stage.is_dir()
    finally:
        stage.rmdir()
    everything = (str(tmp_path), *(os.path.realpath(c) for c in isolation.STAGE_CANDIDATES))
    with pytest.raises(OSError, match="no folder to stage the mounts in"):
        isolation.stage_folder(isolation.View(everything, ()))


def test_an_isolation_failure_is_the_graders_and_a_submissions_exit_121_is_its_own(tmp_path, arrays):
    """The isolation reports on a pipe the worker never holds: a view that cannot be built is kind
    "isolation" (not "worker crashed", which would blame the student), and a submission that exits
    with the isolation's status 121 itself is still a crash of its own."""
    from grader.sandbox import isolation
    if isolation.unavailable_reason():
        pytest.skip(isolation.unavailable_reason())
    import tempfile
    hide = tuple(dict.fromkeys(os.path.realpath(c) for c in (tempfile.gettempdir(), *isolation.STAGE_CANDIDATES)))
    w = Worker(WorkerConfig("host", make_submission(tmp_path, ADD), (), ("a", "b", "c"), 20.0, 5.0, hide=hide))
    try:
        out = w.ensure()
        assert not out.ok and out.kind == "isolation", (out, w.log_tail())
        assert "could not be isolated (no folder to stage the mounts in" in out.message
        assert "the submission never ran" in out.message
    finally:
        w.close()
    sub = make_submission(tmp_path, "import os\nos._exit(121)\n" + ADD, name="exits")
    w = Worker(WorkerConfig("host", sub, (), ("a", "b", "c"), 20.0, 5.0))
    try:
        out = w.ensure()
        assert not out.ok and out.kind == "crash" and "121" in out.message, out
    finally:
        w.close()


def test_the_isolation_tools_are_never_found_through_the_workers_path(monkeypatch, tmp_path):
    from grader.sandbox import isolation
    planted = tmp_path / "bin"
    planted.mkdir()
    (planted / "unshare").write_text("#!/bin/sh\nexit 0\n")
    (planted / "unshare").chmod(0o755)
    monkeypatch.setenv("PATH", f"{planted}:{isolation.SYSTEM_PATH}")
    command = isolation.wrap(["true"], isolation.View((), ()))
    assert command[0] != "unshare" and not command[0].startswith(str(planted))


def test_the_worker_environment_does_not_say_where_the_grader_runs(tmp_path, monkeypatch):
    from grader.sandbox.supervisor import _worker_env
    monkeypatch.setenv("PWD", "/secret/course")
    monkeypatch.setenv("PYENV_DIR", "/secret/course")
    env = _worker_env("t", tmp_path, WorkerConfig("host", tmp_path, (), (), 1.0, 1.0))
    assert "PWD" not in env and "PYENV_DIR" not in env


def test_a_worker_compiles_with_its_parents_crt_folder(tmp_path, monkeypatch):
    """The crt/ folder grading adds where CuPy's headers lack it (eighth session) is the parent's
    choice in the worker too: a worker's sys.path differs, and WMMA code from another folder would
    not be under the parent's include folders (so not the submission's own)."""
    from grader import static
    from grader.sandbox.supervisor import _worker_env
    chosen = tmp_path / "crt_home"
    (chosen / "crt").mkdir(parents=True)
    (chosen / "crt" / "mma.h").write_text("")
    monkeypatch.setattr(static, "workers_crt_folder", lambda: str(chosen))
    env = _worker_env("t", tmp_path, WorkerConfig("host", tmp_path, (), (), 1.0, 1.0))
    assert env[static.CRT_ENV] == str(chosen)
    monkeypatch.setenv(static.CRT_ENV, env[static.CRT_ENV])   # as the worker sees it
    static.crt_include_folder.cache_clear()
    try:
        lacking = tmp_path / "lacking"
        lacking.mkdir()
        assert static.crt_include_folder((str(lacking),)) == str(chosen.resolve())
    finally:
        static.crt_include_folder.cache_clear()
    monkeypatch.setattr(static, "workers_crt_folder", lambda: None)   # CuPy's folders have crt/: nothing set
    monkeypatch.delenv(static.CRT_ENV)
    assert static.CRT_ENV not in _worker_env("t", tmp_path, WorkerConfig("host", tmp_path, (), (), 1.0, 1.0))


def test_a_symlinked_submission_file_is_refused(tmp_path):
    from grader.static import static_check
    from tests.conftest import FIXTURES
    from grader.spec import load_spec
    sub = make_submission(tmp_path, ADD)
    (sub / "solution.py").unlink()
    (sub / "solution.py").symlink_to(FIXTURES / "course" / "solutions" / "ex90_add" / "solution.py")
    kind, message = static_check(load_spec(FIXTURES / "course" / "exercises" / "ex90_add" / "spec.toml"), sub)
    assert kind == "bad_submission" and "symbolic link" in message


def _state(pid: int) -> str:
    """The process state letter of /proc/PID/stat ("T": stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_on_reply_runs_before_the_parents_checks_and_can_stop_the_worker_at_once(tmp_path, arrays):
    import time
    w = start(make_submission(tmp_path, ADD))
    try:
        assert w.ensure().ok
        w.resume()
        seen: list[str] = []

        def on_reply() -> None:   # what a timed round does: the clock has stopped, the worker stops now
            w.stop_now()
            deadline = time.monotonic() + 2.0
            while _state(w.proc.pid) != "T" and time.monotonic() < deadline:
                time.sleep(0.001)
            seen.append(_state(w.proc.pid))
        out = w.request({"op": "run", "args": [g.descriptor.to_json() for g in arrays]}, 5.0, on_reply=on_reply)
        assert out.ok and seen == ["T"] and _state(w.proc.pid) == "T"
        np.testing.assert_array_equal(arrays[2].array, np.arange(100) + 1.0)
    finally:
        w.resume()
        w.close()


ESCAPE = """
import os, time
_r, _w = os.pipe()
if os.fork() == 0:              # a child in a process group of its own forks the escapee and exits
    os.setpgid(0, 0)
    if os.fork() == 0:
        if {new_session}:
            os.setsid()         # in no worker's session either
        os.write(_w, str(os.getpid()).encode())
        while True:
            time.sleep(0.01)
    os._exit(0)
ESCAPEE = int(os.read(_r, 32))
def solve(a, b, c):
    c[...] = a + b
"""


def _state(pid: int, want: str = "", wait_s: float = 2.0) -> str | None:
    """/proc/PID/stat's state letter (None: gone), polled up to ``wait_s`` for one in ``want``
    (a signal is acted on once the process is scheduled)."""
    import time
    end = time.monotonic() + wait_s
    while True:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            state = stat[stat.rfind(")") + 2]
        except OSError:
            state = None
        if not want or (state or "-") in want or time.monotonic() > end:
            return state
        time.sleep(0.005)


@pytest.mark.parametrize("new_session", [False, True])
def test_a_process_that_left_the_workers_tree_is_stopped_and_killed_with_it(tmp_path, new_session):
    """A double fork re-parents the grandchild to the grader (the child subreaper), out of the
    worker's descendants and process group; it is still the worker's: paused, resumed and killed
    with it, and counted in ``escaped``."""
    import os
    import time

    from grader.sandbox import watch
    w = start(make_submission(tmp_path, ESCAPE.format(new_session=new_session)))
    try:
        assert w.ensure().ok
        end = time.monotonic() + 5
        while not (escapee := next(iter(watch.escaped_processes({w.proc.pid})), None)) and time.monotonic() < end:
            time.sleep(0.01)
        assert escapee is not None and watch._parent(escapee) == os.getpid()
        w.pause()
        assert _state(escapee, "T") == "T"
        w.resume()
        assert _state(escapee, "SR") in ("S", "R")
        assert escapee in w.escaped
    finally:
        w.close()
    assert _state(escapee, "-") is None, "the escapee outlived its worker"
    assert w.strays_killed == 0


def test_a_trusted_worker_owns_only_the_escapees_of_its_own_session(tmp_path):
    """The reference's worker does not claim a daemon in another session (it is the submission's)."""
    from grader.sandbox import watch
    w = Worker(WorkerConfig("host", make_submission(tmp_path, ADD), (), ("a", "b", "c"), 20.0, 5.0, trusted=True))
    import subprocess
    import sys
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        assert w.ensure().ok
        assert other.pid in watch.escaped_processes({w.proc.pid})
        assert other.pid not in w._pids() and not w.escaped
    finally:
        other.kill()
        other.wait()
        w.close()


def test_an_honest_worker_leaves_no_process_behind(tmp_path, arrays):
    """Nothing the worker's own harness starts (a multiprocessing resource tracker, say) outlives
    it and is taken for a process the submission left behind."""
    for _ in range(3):
        w = start(make_submission(tmp_path, ADD))
        try:
            assert w.ensure().ok and run(w, arrays).ok
        finally:
            w.close()
        assert not w.escaped and w.strays_killed == 0


def test_a_worker_whose_processes_never_settle_is_killed_and_reported_as_a_crash(tmp_path, arrays, monkeypatch):
    """pause() stops each process the moment a walk finds it and walks again until nothing new is
    found; a worker that keeps making processes past STOP_PASSES walks is killed, and its next
    request says why (a crash of the submission's, never a grader error)."""
    from grader.sandbox import watch
    w = start(make_submission(tmp_path, ADD))
    try:
        assert w.ensure().ok
        fresh = iter(range(10**9, 2 * 10**9))
        walk = watch.session_pids

        def endless(sid, escaped=(), visit=None):   # every walk "finds" a process never seen before
            found = walk(sid, escaped, visit)
            if visit is not None:
                visit(next(fresh))
            return found
        monkeypatch.setattr(watch, "session_pids", endless)
        w.pause()
        out = run(w, arrays)
        assert not out.ok and out.kind == "crash" and "kept changing" in out.message
    finally:
        w.close()


# -- the grader's own processes: a submission must not change how they are scheduled ----------------
TWO_CPUS = len(os.sched_getaffinity(0)) >= 2


def _trusted(tmp_path: Path, name: str = "ref") -> Worker:
    return Worker(WorkerConfig("host", make_submission(tmp_path, ADD, name), (), ("a", "b", "c"), 20.0, 5.0,
                               trusted=True, label=f"the {name} worker"))


def _change(target: int, change: str) -> str:
    """Python lines that make ``change`` to process ``target`` (its main thread)."""
    return {
        "affinity": f"os.sched_setaffinity({target}, {{min(os.sched_getaffinity({target}))}})",
        "idle": f"os.sched_setscheduler({target}, os.SCHED_IDLE, os.sched_param(0))",
        "nice": f"os.setpriority(os.PRIO_PROCESS, {target}, os.getpriority(os.PRIO_PROCESS, {target}) + 5)",
    }[change]


@pytest.mark.skipif(not TWO_CPUS, reason="changing a CPU affinity needs two CPUs")
@pytest.mark.parametrize("target, change, when, words", [
    ("grader", "affinity", "solve", "the grading process (pid {pid}): CPU affinity {all} -> {first}"),
    ("grader", "affinity", "import", "the grading process (pid {pid}): CPU affinity {all} -> {first}"),
    ("grader thread", "affinity", "solve", "the grading process (pid {pid}, thread {tid}): CPU affinity"),
    ("trusted", "affinity", "solve", "the ref worker (pid {pid}): CPU affinity {all} -> {first}"),
    ("trusted", "idle", "solve", "the ref worker (pid {pid}): scheduling policy SCHED_OTHER -> SCHED_IDLE"),
    ("trusted", "nice", "solve", "the ref worker (pid {pid}): nice {nice} -> {nice5}"),
])
def test_a_submission_that_changes_the_graders_processes_is_refused(tmp_path, arrays, target, change, when, words):
    """A submission's worker runs as the grader's user, so it may call sched_setaffinity,
    sched_setscheduler or setpriority on the grading process or a trusted worker (the reference,
    the baseline: a pinned or idled baseline raises the time allowed outside the events). The
    request it did that in fails as "tampered", naming the change, and the change is put back
    (as root, everything; unprivileged, what the kernel allows, the rest said)."""
    import threading
    from grader.sandbox.watch import SchedulingState
    ref = _trusted(tmp_path)
    spare = threading.Event()
    helper = threading.Thread(target=spare.wait, daemon=True)   # a thread of the grading process's own
    helper.start()
    try:
        assert ref.ensure().ok
        pid = {"grader": os.getpid(), "grader thread": helper.native_id, "trusted": ref.proc.pid}[target]
        before = SchedulingState.read(pid, ref.proc.pid if target == "trusted" else os.getpid())
        lines = f"import os\n{_change(pid, change)}\n" if when == "import" else "import os\n"
        body = lines + "def solve(a, b, c):\n    c[...] = a + b\n" + (
            f"    {_change(pid, change)}\n" if when == "solve" else "")
        w = start(make_submission(tmp_path, body))
        try:
            out = w.ensure()
            if when == "solve":
                assert out.ok, out
                out = run(w, arrays)
            assert not out.ok and out.kind == "tampered", out
            cpus = sorted(before.affinity)
            want = words.format(pid=pid if target != "grader thread" else os.getpid(), tid=pid, first=f"{{{cpus[0]}}}",
                                all=f"{{{cpus[0]}..{cpus[-1]}}}" if len(cpus) > 1 else f"{{{cpus[0]}}}",
                                nice=before.nice, nice5=min(19, before.nice + 5))
            assert want in out.message and "grade again alone" in out.message, out.message
            assert not w.alive
            after = SchedulingState.read(pid, ref.proc.pid if target == "trusted" else os.getpid())
            if "not put back" not in out.message:
                assert after == before
            assert after.affinity == before.affinity   # an affinity can always be put back
            assert run(ref, arrays).ok   # the trusted worker is not blamed: it goes on
        finally:
            w.close()
    finally:
        spare.set()
        ref.close()


def test_an_honest_submission_is_not_taken_for_tampering(tmp_path, arrays):
    """No false alarm: a submission may change its own process's scheduling and resource limits
    (NVRTC raises its own RLIMIT_STACK to unlimited when it compiles) and start threads, while
    the grading process and a trusted worker run on unchanged."""
    ref = _trusted(tmp_path)
    body = """
    import os, resource, threading
    resource.setrlimit(resource.RLIMIT_STACK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    def solve(a, b, c):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        os.setpriority(os.PRIO_PROCESS, 0, 3)
        soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
        resource.setrlimit(resource.RLIMIT_STACK, (hard, hard))
        threading.Thread(target=lambda: None).start()
        c[...] = a + b
    """
    try:
        assert ref.ensure().ok
        w = start(make_submission(tmp_path, body))
        try:
            assert w.ensure().ok
            for _ in range(5):
                out = run(w, arrays)
                assert out.ok, out
                assert run(ref, arrays).ok
            assert w.request({"op": "time", "order": [0], "flush_bytes": 0}, 5).kind != "tampered"
        finally:
            w.close()
    finally:
        ref.close()


def test_scheduling_state_reads_names_and_skips_exited_processes():
    import subprocess
    import sys
    from grader.sandbox.supervisor import scheduling_changes
    from grader.sandbox.watch import NotedProcess, SchedulingState
    me = SchedulingState.read(os.getpid())
    assert me is not None and me.affinity == frozenset(os.sched_getaffinity(0))
    other = SchedulingState(me.tid, frozenset({0, 1, 2, 3, 8}), os.SCHED_IDLE, 0, 7, me.cgroup)
    assert me.differences(me) == []
    assert f"nice {me.nice} -> 7" in me.differences(other)
    assert "-> {0..3, 8}" in me.differences(other)[0]
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert SchedulingState.read(gone.pid) is None
    assert NotedProcess(gone.pid, "gone", {gone.pid: me}).changes() == []
    assert scheduling_changes() == []


def test_what_cannot_be_put_back_is_said_once(monkeypatch):
    """Unprivileged, a raised nice value (or SCHED_IDLE) cannot be undone: the change is still
    reported, with what could not be put back, and then noted as it is, so that it is said once."""
    import errno
    import subprocess
    import sys
    from grader.sandbox.watch import NotedProcess
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        noted = NotedProcess.note(child.pid, "the test's child")
        os.setpriority(os.PRIO_PROCESS, child.pid, os.getpriority(os.PRIO_PROCESS, child.pid) + 5)

        def refuse(*args):
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))
        monkeypatch.setattr(os, "setpriority", refuse)
        changes = noted.changes()
        assert len(changes) == 1 and changes[0].startswith(f"the test's child (pid {child.pid}): nice ")
        assert "; not put back: nice " in changes[0] and "(Operation not permitted)" in changes[0], changes
        assert noted.changes() == []
    finally:
        child.kill()
        child.wait()


def test_the_log_is_read_through_its_descriptor_not_a_path_the_worker_can_replace(tmp_path, arrays):
    """The worker (same uid) finds its log's path in /proc/self/fd/1 and puts a symlink to a secret
    in its place, then crashes: the crash detail (the log's tail) must not show the secret, and the
    next start must not write into the link's target."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET-6b1d\n")
    body = f"""
    import os
    def solve(a, b, c):
        print("about to plant the link", flush=True)
        path = os.readlink("/proc/self/fd/1").removesuffix(" (deleted)")
        if os.path.lexists(path):
            os.unlink(path)
        os.symlink({str(secret)!r}, path)
        os._exit(3)
    """
    w = start(make_submission(tmp_path, body))
    try:
        assert w.ensure().ok
        out = run(w, arrays)
        assert out.kind == "crash" and "exited with status 3" in out.message, out
        assert "about to plant the link" in out.detail     # the tail is still the worker's own output
        assert "TOPSECRET" not in out.detail
        assert w.ensure().ok and w.starts == 2
        assert secret.read_text() == "TOPSECRET-6b1d\n"    # the second start did not write through the link
    finally:
        w.close()


PEEK_OTHER = '''
import os
def solve(a, b, c):
    other = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "other.txt")).read()
    try:
        seen = os.listdir(other)
        open(os.path.join(other, "planted.txt"), "w").write("x")
        raise RuntimeError(f"seen={seen} wrote=True")
    except OSError as exc:
        raise RuntimeError(f"not seen: {exc.strerror}")
'''


def test_a_submission_cannot_reach_the_working_folder_of_a_worker_started_after_it(tmp_path, arrays):
    """Red-team pass 13: workers' working folders (their HOME and TMPDIR, where grader.kernel
    writes the compiled kernels it loads) were made in /tmp, which the submission's view does not
    hide: its worker listed and wrote the folder of the trusted reference worker started after it
    (whose TMPDIR holds the reference solution's cubins on a GPU), and in a batch those of other
    students' workers. They are made in the grader cache now, which the view hides."""
    from grader.sandbox import isolation
    if isolation.unavailable_reason():
        pytest.skip(isolation.unavailable_reason())
    sub = make_submission(tmp_path, PEEK_OTHER, name="sub")
    w = start(sub)
    ref = Worker(WorkerConfig("host", make_submission(tmp_path, ADD, name="ref"), (), ("a", "b", "c"), 20.0, 5.0,
                              trusted=True))
    try:
        assert w.ensure().ok, w.log_tail()
        assert ref.ensure().ok   # started after the submission's worker, as the reference is in a grade
        (sub / "other.txt").write_text(str(ref.cwd))
        out = run(w, arrays)
        assert "not seen" in out.message, out.message
        assert not (ref.cwd / "planted.txt").exists()
    finally:
        w.close()
        ref.close()


def test_a_reply_nested_too_deeply_to_decode_is_the_workers_crash_not_the_graders(tmp_path, arrays):
    """Red-team pass 13: solve wrote a reply of 200000 nested arrays on the worker's socket; the
    parent's json.loads raised RecursionError, which no handler took for a malformed message, and
    the whole grade ended as a grader error (exit 4; in a batch an "error" row graded again on every
    run, so a failing submission had no score instead of 0). It is a malformed message now: the
    case fails as the worker's crash."""
    import socket as socketlib
    import time
    from grader.sandbox import protocol
    a, b = socketlib.socketpair()
    try:
        import threading
        data = b"[" * 200000 + b"]" * 200000
        sender = threading.Thread(target=a.sendall, args=(protocol._HEADER.pack(len(data)) + data,))
        sender.start()   # more than a socket buffer holds
        with pytest.raises(protocol.ProtocolError, match="malformed"):
            protocol.recv(b, time.monotonic() + 20)
        sender.join()
    finally:
        a.close()
        b.close()
    body = ("import socket, struct, sys, time\n_s = socket.socket(fileno=int(sys.argv[1]))\n"
            "def solve(a, b, c):\n    d = b'[' * 200000 + b']' * 200000\n"
            "    _s.sendall(struct.pack('<Q', len(d)) + d)\n    time.sleep(30)\n")
    w = start(make_submission(tmp_path, body), call_s=20.0)
    try:
        assert w.ensure().ok
        out = run(w, arrays, timeout=20.0)
        assert not out.ok and out.kind == "crash", out
    finally:
        w.close()


def test_a_submission_folder_that_cannot_be_walked_safely_is_refused(tmp_path, monkeypatch):
    """Red-team pass 15: a FIFO (an #include of it blocks NVRTC), a folder nested deeply (1200
    levels overflowed os.walk's recursion), a folder with more entries than the walk should take."""
    import os
    from grader import static
    from grader.spec import load_spec
    from tests.conftest import FIXTURES
    spec = load_spec(FIXTURES / "course" / "exercises" / "ex90_add" / "spec.toml")
    sub = make_submission(tmp_path, ADD)
    os.mkfifo(sub / "header.cuh")
    kind, message = static.static_check(spec, sub)
    assert kind == "bad_submission" and "header.cuh: is neither a file nor a folder" in message
    (sub / "header.cuh").unlink()
    deep = sub
    for _ in range(100):   # refused at the 33rd level, whatever the depth (the walk stops there)
        deep = deep / "d"
        deep.mkdir()
    kind, message = static.static_check(spec, sub)
    assert kind == "bad_submission" and f"nested more than {static.SUBMISSION_MAX_DEPTH} folders deep" in message
    import shutil
    shutil.rmtree(sub / "d")
    monkeypatch.setattr(static, "SUBMISSION_MAX_ENTRIES", 5)
    for i in range(6):
        (sub / f"n{i}.txt").write_text("")
    kind, message = static.static_check(spec, sub)
    assert kind == "bad_submission" and "more than 5 files and folders" in message


UNMOUNT = '''
import ctypes, os
def solve(a, b, c):
    course = os.environ["COURSE_UNDER_TEST"]
    libc = ctypes.CDLL(None, use_errno=True)
    rc = libc.umount2(course.encode(), 2)          # MNT_DETACH: lift the tmpfs that hides the course
    err = ctypes.get_errno()
    raise RuntimeError(f"umount={rc} errno={err} seen={sorted(os.listdir(course))}")
'''


def test_the_worker_cannot_lift_the_mounts_that_hide_the_course(tmp_path, arrays, monkeypatch):
    """Step 4 of the isolation (now in the isolation's own process, isolation.enter_nested_namespaces):
    the worker runs in a nested user and mount namespace, where the hiding tmpfs is locked."""
    from grader.sandbox import isolation
    if isolation.unavailable_reason():
        pytest.skip(isolation.unavailable_reason())
    course = tmp_path / "course"
    (course / "solutions").mkdir(parents=True)
    (course / "solutions" / "secret.py").write_text("x = 1\n")
    (course / "students").mkdir()
    sub = make_submission(course / "students", UNMOUNT, name="bob")
    monkeypatch.setenv("COURSE_UNDER_TEST", str(course))
    w = Worker(WorkerConfig("host", sub, (), ("a", "b", "c"), 20.0, 5.0, hide=(str(course),)))
    try:
        assert w.ensure().ok, w.log_tail()
        out = run(w, arrays)
        assert "umount=-1" in out.message and "seen=['students']" in out.message, out.message
    finally:
        w.close()


DOTDOT = '''
import os
def solve(a, b, c):
    raise RuntimeError(f"parent={sorted(os.listdir('..'))}")
'''


def test_the_workers_parent_folder_is_hidden_from_it_too(tmp_path, arrays):
    """Red-team pass 16: the worker's working folder was entered before the hiding mounts, so ".."
    from it was the real folder underneath: every other worker's folder (the reference's HOME,
    TMPDIR and kernel cache) and, further up, the whole grader cache."""
    import uuid
    from grader.sandbox import isolation
    if isolation.unavailable_reason():
        pytest.skip(isolation.unavailable_reason())
    w = Worker(WorkerConfig("host", make_submission(tmp_path, DOTDOT), (), ("a", "b", "c"), 20.0, 5.0))
    decoy = None
    try:
        assert w.ensure().ok, w.log_tail()
        decoy = w.cwd.parent / f"decoy-{uuid.uuid4().hex}"
        decoy.mkdir()
        out = run(w, arrays)
        assert "parent=" in out.message and decoy.name not in out.message, out.message
    finally:
        w.close()
        if decoy is not None:
            decoy.rmdir()


def test_a_restart_that_cannot_be_isolated_ends_the_grade_not_graded(tmp_path, monkeypatch):
    """Red-team pass 16: a worker restarted after a fault whose isolation failed gave a case status
    "isolation" counted as the student's failure (graded, 0 points); it ends the grade now."""
    from grader.cases import PROFILES
    from grader.sandbox import supervisor
    from grader.spec import load_spec
    from tests.conftest import FIXTURES, grade_folder
    real, calls = supervisor.Worker.ensure, []

    def ensure(self):  # noqa: ANN001, ANN202
        if self.config.trusted or not calls:
            calls.append(1)
            return real(self)
        return supervisor.Outcome(False, "isolation", "the worker could not be isolated (x); the submission never ran")
    monkeypatch.setattr(supervisor.Worker, "ensure", ensure)
    spec = load_spec(FIXTURES / "course" / "exercises" / "ex90_add" / "spec.toml")
    r = grade_folder(spec, FIXTURES / "course" / "solutions" / "ex90_add", backend="host", benchmark=False,
                     profile=PROFILES["quick"])
    assert r.status == "not_graded" and r.reason_kind == "no_isolation", (r.status, r.reason)
    assert "machine's problem" in r.reason


@pytest.mark.parametrize("separator", ["\x1c", "\x0b", "\x0c", "\u2028", "\x85"])
def test_a_line_separator_in_a_comment_does_not_hide_a_forbidden_call(tmp_path, separator):
    """Red-team pass 16: comments were blanked on str.splitlines' lines (which also split at \\x1c,
    \\x0b, \\u2028, ...) at the tokenizer's row numbers (split at "\\n" only), so a comment holding
    such a character shifted the next comment's span onto the line of code between them."""
    import shutil
    from grader.spec import load_spec
    from grader.static import static_check, strip_comments
    text = f"import cupy\n# {separator}\ny = lambda a, b: cupy.matmul(a, b)\n# {'x' * 60}\n"
    assert "cupy.matmul(a, b)" in strip_comments(text, "solution.py")
    root = Path(__file__).resolve().parents[1]
    sub = tmp_path / "sub"
    shutil.copytree(root / "student_template" / "ex09_gemm_naive", sub)
    (sub / "solution.py").write_text((sub / "solution.py").read_text() + "\n" + text)
    kind, message = static_check(load_spec(root / "exercises" / "ex09_gemm_naive" / "spec.toml"), sub)
    assert kind == "forbidden" and "matmul" in message, message


def test_the_file_nvrtc_crashed_on_is_read_from_the_worker_log():
    """NVRTC compiles inside the worker, so a compiler that crashes (the H200's NVRTC 13.2 did, on a
    wgmma without its wait, 2026-12-04) ends the worker: the preload's log notes name the file."""
    import json
    from grader.sandbox.protocol import PRELOAD_NOTE, PRELOAD_START, compiling_when_crashed
    from grader.sandbox.supervisor import compiler_crash_message

    def note(name):   # as the worker writes it: the name as a JSON string, one line
        return PRELOAD_NOTE + json.dumps(name)
    earlier = [PRELOAD_START, note("kernel.cu"), "some output of the submission"]
    assert compiling_when_crashed("\n".join([*earlier, PRELOAD_START, note("a.cu"), note("sub/decoy.cu"),
                                             "Fatal Python error: Segmentation fault"])) == "sub/decoy.cu"
    assert compiling_when_crashed("\n".join([*earlier, PRELOAD_START])) == ""   # died before any compile
    assert compiling_when_crashed("\n".join(earlier[1:])) == ""                   # no preload started in the tail
    forged = "z\n" + PRELOAD_NOTE + '"grader.kernel (a grader bug).cu"'         # red-team pass 18: a newline in a name
    assert compiling_when_crashed("\n".join([PRELOAD_START, note(forged)])) == forged
    assert compiling_when_crashed("\n".join([PRELOAD_START, PRELOAD_NOTE + "not json"])) == ""
    text = compiler_crash_message("the worker process killed by SIGSEGV (segmentation fault)", "sub/decoy.cu")
    assert 'NVRTC compiled "sub/decoy.cu"' in text and "SIGSEGV" in text and "\n" not in text
    assert "\n" not in compiler_crash_message("killed", forged)


def test_preload_names_each_cu_file_before_compiling_it(tmp_path, monkeypatch):
    """What the log notes above are made of: every .cu file outside hidden folders, sorted, named
    before its compile starts (also one that then fails)."""
    import grader.kernel as gk
    for rel in ("b.cu", "a.cu", "sub/c.cu", ".ipynb_checkpoints/a.cu", "notes.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("// x\n")
    order: list[str] = []

    def compiled(p, opts):  # noqa: ANN001, ANN202
        order.append("compile " + p.relative_to(tmp_path.resolve()).as_posix())
        if p.name == "b.cu":
            raise gk.CompileError("b.cu(1): error: x")
        return object()
    monkeypatch.setattr(gk, "_compiled", compiled)
    done, failed = gk.preload(tmp_path.resolve(), lambda rel: order.append("note " + rel))
    assert order == ["note a.cu", "compile a.cu", "note b.cu", "compile b.cu", "note sub/c.cu", "compile sub/c.cu"]
    assert sorted(done) == ["a.cu", "sub/c.cu"] and list(failed) == ["b.cu"]
