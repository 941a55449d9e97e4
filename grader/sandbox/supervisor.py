"""Parent-side handle on a worker process: start it, send requests with time limits, and turn every
way it can fail (exception, CUDA error, segfault, hang, out of memory, too much output) into an
:class:`Outcome` instead of an exception. A worker that failed is killed; :meth:`Worker.ensure`
starts a fresh one (and loads the submission again) before the next request.
"""
from __future__ import annotations

import json
import os
import re
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import weakref
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from grader.sandbox import isolation, kernel_trace, protocol, watch

PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
OUTPUT_LIMIT_BYTES = 16 * 1024 * 1024
WATCH_INTERVAL_S = 0.05      # how often memory is sampled while the parent waits for a reply
# The parent polls for a reply without sleeping this long first (a wake-up from sleep costs tens of
# microseconds in a VM, and timed rounds are short); not on machines of fewer than 4 cores, where
# the polling would take a core from the worker it waits for.
SPIN_S = 0.02 if (os.cpu_count() or 1) >= 4 else 0.0
_LIVE_WORKERS: set[int] = set()   # PIDs of this process's running workers (never strays)
# The grader's own processes whose scheduling a submission must not change: this process and its
# trusted workers, by PID (see note_grading_process, Worker._start, scheduling_changes).
_NOTED: dict[int, watch.NotedProcess] = {}
_CONTINUED = [0]                   # SIGCONTs this process received: someone stopped it


def _count_sigcont(signum: int, frame: Any) -> None:
    _CONTINUED[0] += 1


def times_continued() -> int:
    """How often this process was continued after a stop (SIGSTOP/SIGCONT from another process,
    or shell job control). A grade during which this changes may have run with its clock stopped."""
    return _CONTINUED[0]


def note_grading_process() -> None:
    """Note how this (the grading) process's threads are scheduled now (see
    :class:`watch.NotedProcess`): a submission's worker of the same user must not change it. Done
    when a submission's worker is set up (once per grade), so a change an earlier grade could not
    put back is not held against a later one."""
    _NOTED[os.getpid()] = watch.NotedProcess.note(os.getpid(), "the grading process")


def scheduling_changes() -> list[str]:
    """What changed in the scheduling (CPU affinity, policy, nice, cgroup) of the grader's noted
    processes since they were noted, one line per changed thread; each change is put back where
    this process may (what could not be is said in its line). Processes that have exited are
    skipped. A few system calls and /proc reads per thread: tens of microseconds per process."""
    out: list[str] = []
    for noted in list(_NOTED.values()):
        out += noted.changes()
    return out


def tampered_message(changes: list[str]) -> str:
    """The message of a "tampered" Outcome for ``changes`` (see :func:`scheduling_changes`)."""
    return (f"while the submission ran, the scheduling of the grader's own processes changed: {'; '.join(changes)}. "
            f"A submission must not touch processes other than its own (their CPU affinity, scheduling policy, nice "
            f"value or cgroup set the harness's own times); what this process may put back was put back; the "
            f"worker was killed. If this was not the submission (another program of this user, or a grade running "
            f"at the same time), grade again alone")


def _watch_sigcont() -> None:
    import threading
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGCONT) is not _count_sigcont:
        signal.signal(signal.SIGCONT, _count_sigcont)

# Failure kinds, as they appear in reports.
KIND_TEXT = {
    "timeout": "time limit exceeded (hang?)",
    "crash": "worker crashed",
    "exception": "exception in solve",
    "illegal_address": "illegal memory access",
    "cuda_error": "CUDA error",
    "out_of_memory": "out of memory",
    "output_limit": "too much output",
    "compile_error": "compile error",
    "import_error": "solution.py failed to import",
    "bad_submission": "malformed submission",
    "host_memory_limit": "host memory limit exceeded",
    "device_memory_limit": "device memory limit exceeded",
    "forbidden_library": "forbidden library loaded",
    "foreign_kernel": "a kernel that is not the submission's ran",
    "tampered": "the grader's own processes were tampered with",
    "grader_error": "grader error",
    "isolation": "isolating the worker failed",
}
# Kinds the grader's side decides (the parent's watch, limits and checks) or that blame the grader:
# never taken from a submission's worker's reply (see Worker._request).
PARENT_KINDS = frozenset({"timeout", "crash", "host_memory_limit", "forbidden_library", "foreign_kernel", "tampered",
                          "grader_error", "isolation"})


@dataclass(frozen=True)
class Outcome:
    """The result of one request: ``ok`` with the reply's ``data``, or a failure ``kind`` (see
    :data:`KIND_TEXT`) with a one-line ``message`` and the worker's ``detail`` (traceback / log tail).
    ``wall_s`` is the parent's own wall-clock time for the request, in seconds."""
    ok: bool
    kind: str = ""
    message: str = ""
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0


@dataclass(frozen=True)
class WorkerConfig:
    """How to start and load a worker: backend ("cuda" or "host"), submission folder, NVRTC
    options, the number and names of solve's arguments, the compile and call time limits (s), the
    host and device memory caps of its process session (bytes; 0 for none) and the shared
    libraries it must not load (name prefixes, see ``watch.forbidden_in``)."""
    backend: str
    submission: Path
    options: tuple[str, ...]
    arg_names: tuple[str, ...]
    compile_s: float
    call_s: float
    host_memory_bytes: int = 0
    device_memory_bytes: int = 0
    forbidden_libraries: tuple[str, ...] = ()
    hide: tuple[str, ...] = ()     # folders the worker must not see (see grader.sandbox.isolation)
    trusted: bool = False          # the reference or the baseline: not isolated, made non-dumpable
    kernel_policy: kernel_trace.KernelPolicy | None = None   # what a graded call may run (None: not checked)
    label: str = ""                # how messages name a trusted worker ("the baseline worker"); default: its folder
    arch: str | None = None        # the spec's [features] arch, for grader.kernel.configure (None: the GPU's own)


# Requests before any call of solve: kernels traced in their wake (the grader's own start-up work,
# the submission's import) are not checked; after any other, they must be the submission's own.
UNGRADED_OPS = ("hello", "preload", "load")


def compiler_crash_message(crash: str, file: str) -> str:
    """The message for a worker that died while NVRTC, which runs inside it, compiled the
    submission's ``file`` (before any submission code ran): ``crash`` says how it died."""
    name = json.dumps(file)   # quoted, control characters and non-ASCII escaped: one line
    return (f"{crash} while NVRTC compiled {name}, before any of the submission's code ran: the compiler itself "
            f"crashed on that file; compile it alone (nvcc -arch=<this GPU's sm_XX> -c {name}) and change the "
            f"construct it fails on, e.g. inline PTX (asm) the target does not accept")


def import_hang_message(limit_s: float, log_tail: str, submission: Path) -> str:
    """The message for a worker that did not finish loading the submission within ``limit_s``:
    importing solution.py (and compiling its kernels) never ended. ``log_tail`` holds the stacks the
    worker dumped shortly before the limit (most recent call first); the innermost line of the
    submission's own files in them says where to look."""
    folder = str(submission.resolve())
    frames = re.findall(r'File "([^"]+)", line (\d+)', log_tail)
    mine = [(Path(f).name, ln) for f, ln in frames if f.startswith(folder + os.sep)]
    compiling = any(f.endswith(os.sep + os.path.join("grader", "kernel.py")) or "cupy" in f for f, _ in frames[:3])
    where = ""
    if mine:
        where = f"; it was at {mine[0][0]}:{mine[0][1]}" + (", compiling kernel.cu" if compiling else "")
    return (f"solution.py did not finish importing within {limit_s:g} s ([limits] compile_s){where}: look for code "
            "at module level (outside solve) that never ends, such as a loop or a wait; compiling the kernels "
            "there takes seconds; the worker was killed")


def _python_flags() -> list[str]:
    """-P: the working directory is not put first on sys.path (nothing written there can shadow
    the grader); -s: no user site-packages (no usercustomize.py), unless the grader's own
    dependencies are installed there."""
    import site
    import numpy
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    deps_in_user_site = bool(user_site) and str(Path(numpy.__file__).resolve()).startswith(str(user_site))
    return ["-P"] + ([] if deps_in_user_site else ["-s"])


def _limits() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_LIMIT_BYTES, OUTPUT_LIMIT_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def kernel_cache_root() -> Path:
    """Where workers' CuPy kernel caches live: one folder per submission path under it, so one
    submission never sees another's (or the reference's) compiled binaries."""
    return Path(os.environ.get("GRADER_CACHE_DIR", Path.home() / ".cache" / "gpu-kernel-grader")) / "kernels"


def kernel_cache_dir(submission: Path) -> Path:
    import hashlib
    return kernel_cache_root() / hashlib.sha256(str(submission.resolve()).encode()).hexdigest()[:16]


def worker_kernel_cache(home: Path, config: WorkerConfig) -> Path:
    """The CuPy kernel cache of a worker whose private working directory is ``home``: the
    persistent per-submission one for a trusted worker (the reference, the baseline); for a
    submission's worker, a fresh folder in ``home`` at every start. A cache the submission could
    write across starts could hold a binary it planted under the key of its own kernel.cu, which
    the worker loads as the submission's own module (see ``kernel_trace.c``): compiled afresh, the
    own modules are what the submission's sources compile to."""
    return kernel_cache_dir(config.submission) if config.trusted else home / "kernel-cache"


def workers_root() -> str | None:
    """Where workers' private working directories (their HOME and TMPDIR) are made: a folder of the
    grader cache, which every submission's view hides (see Worker._view; its own directory is shown
    again). Not the system's temporary folder: there a submission's worker could list, read and
    write the working directories of the workers started after it, the trusted reference's among
    them, whose TMPDIR holds the reference solution's compiled kernels (grader.kernel writes each
    cubin there and loads it), and in ``grade batch --gpus`` those of other students' workers.
    None (the system's temporary folder) when the cache cannot be made."""
    folder = kernel_cache_root().parent / "workers"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        folder.chmod(0o700)
    except OSError:
        return None
    return str(folder)


def _worker_env(token: str, home: Path, config: WorkerConfig) -> dict[str, str]:
    """The worker's environment: no GRADER_* variables, its token, a private HOME, Python user
    base and TMPDIR (its working folder) so that nothing it writes there (a usercustomize.py, say)
    reaches a later worker, and a CuPy kernel cache of its own (:func:`worker_kernel_cache`)."""
    env = {k: v for k, v in os.environ.items()   # nothing of the grader's own settings or whereabouts
           if not k.startswith(("GRADER_", "PYENV")) and k not in ("PWD", "OLDPWD")}
    env[watch.TOKEN_VAR] = token
    env["CUPY_CACHE_DIR"] = str(worker_kernel_cache(home, config))
    if config.trusted:
        env["GRADE_WORKER_TRUSTED"] = "1"
    env["HOME"] = env["PYTHONUSERBASE"] = str(home)
    env["TMPDIR"] = str(home)   # temporary files (grader.kernel's cubins, say) stay in its own folder
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH", "")) if p)
    from grader.static import CRT_ENV, workers_crt_folder
    crt = workers_crt_folder()   # the crt/ headers the parent counts as include folders (WMMA)
    if crt:
        env[CRT_ENV] = crt
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _send(sig: signal.Signals, pids: "tuple[int, ...] | list[int]") -> None:
    """Send ``sig`` to each of ``pids`` in order (a negative one: that process group), skipping any
    that is gone or not this user's."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _private_log() -> tuple[int, int]:
    """A new, already unlinked file for a worker's output: (a descriptor to read it, a write-only
    O_APPEND descriptor to hand to every start of the worker). Raises OSError when no temporary
    file can be made."""
    fd, path = tempfile.mkstemp(prefix="grade-worker-", suffix=".log")
    os.unlink(path)   # before anything else: from here on no name in /tmp leads to it
    try:   # the same file again, through this process's descriptor (no path a worker could swap)
        write_fd = os.open(f"/proc/self/fd/{fd}", os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    except OSError:
        os.close(fd)
        raise
    return fd, write_fd


def _close_log(fds: list[int]) -> None:
    """Close the descriptors of :func:`_private_log` still open in ``fds``, marking them -1."""
    for i, fd in enumerate(fds):
        if fd >= 0:
            os.close(fd)
            fds[i] = -1


class Worker:
    """One worker process for one submission. Not thread-safe; one request at a time."""

    def __init__(self, config: WorkerConfig):
        self.config = config
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        # The worker's stdout/stderr: one file, opened once and unlinked at once, reached only
        # through descriptors (the worker's, append-only, and the grader's, for reading). A path
        # in the shared /tmp could be replaced by the worker (same uid) with a symlink to a file
        # the grader would then read into the report (the reference solution, the worker's own
        # /proc/self/environ) or hand to the next start for writing.
        self._log = list(_private_log())    # [read fd, write fd]; -1 once closed
        weakref.finalize(self, _close_log, self._log)   # a worker dropped without close() leaks no descriptor
        # A fresh, private working directory per worker: what one worker leaves there (a planted
        # `grader` package, say) is never seen by another.
        self.cwd: Path | None = None
        self.load_data: dict[str, Any] = {}
        self.starts = 0
        self.token = uuid.uuid4().hex
        self.strays_killed = 0     # processes found still running after the worker was killed
        self.escaped: set[int] = set()   # processes that left the worker's tree (see _escaped)
        self._killed_because = ""        # why the grader killed the worker between requests (see _stop_all)
        self.baseline_libraries: set[str] | None = None
        self._last_sample = 0.0
        self._resumed: list[int] = []   # the session's processes when it was last resumed
        self.view: isolation.View | None = None
        self.isolation = "trusted worker: not isolated" if config.trusted else "none"
        self.trace: kernel_trace.TraceFile | None = None
        self.kernel_check = "kernels not traced (host backend)" if config.backend != "cuda" else ""
        self.own_kernels_traced = 0   # kernels of the submission's own seen in graded requests
        self.own_launched: set[str] = set()   # their names
        self.module_ptx: dict[str, str] = {}   # {.cu file: PTX of the module the worker loaded from it}
        self.own_kernels: kernel_trace.OwnKernels | None = None   # the policy applied to module_ptx
        self._carried: list[kernel_trace.Launch] = []  # traced after an ungraded request's flush (see _foreign_kernels)
        watch.protect_parent()
        _watch_sigcont()
        if not config.trusted:
            note_grading_process()

    # -- lifecycle --------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ensure(self) -> Outcome:
        """Start the worker and load the submission unless a live one is ready."""
        if self.alive:
            return Outcome(True, data=self.load_data)
        return self._start()

    def _start(self) -> Outcome:
        self.kill()
        self._new_cwd()
        parent, child = socket.socketpair()
        command = [sys.executable, *_python_flags(), "-m", "grader.sandbox.worker", str(child.fileno()),
                   self.config.backend]
        cache = worker_kernel_cache(self.cwd, self.config)
        cache.mkdir(parents=True, exist_ok=True)
        env = _worker_env(self.token, self.cwd, self.config)
        tracer = kernel_trace.build(kernel_cache_root().parent) if self.config.backend == "cuda" else None
        pass_fds = [child.fileno()]
        if isinstance(tracer, kernel_trace.Tracer):
            self.trace = kernel_trace.TraceFile()
            env.update(self.trace.env(tracer))
            pass_fds.extend(self.trace.pass_fds)
        elif tracer is not None:
            self.kernel_check = f"kernels not traced: {tracer}"
        status_read = status_write = -1   # the isolation's own report (see isolation.wrap), never the worker's
        if not self.config.trusted:
            reason = isolation.unavailable_reason()
            if reason is None:
                self.view = self._view(cache, tracer.folders if isinstance(tracer, kernel_trace.Tracer) else ())
                status_read, status_write = os.pipe()
                command = isolation.wrap(command, self.view, status_write)
                pass_fds.append(status_write)
                self.isolation = self.view.describe()
            else:
                self.isolation = f"none: {reason}"
        inherited = self._inherited() if self.config.trusted else None
        if self._log[1] < 0:   # started again after close(): a new log (-1 would be subprocess.PIPE)
            self._log[:] = _private_log()
        try:
            self.proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=self._log[1], stderr=subprocess.STDOUT,
                pass_fds=tuple(pass_fds),
                env=env, cwd=self.cwd, start_new_session=True, preexec_fn=_limits)
        except BaseException:
            if status_read >= 0:
                os.close(status_read)
            raise
        finally:
            child.close()
            if status_write >= 0:
                os.close(status_write)
            if self.trace is not None:
                self.trace.handed_over()
        self.sock = parent
        self.starts += 1
        _LIVE_WORKERS.add(self.proc.pid)
        if inherited is not None:   # noted as it must be from its first instant, not as read later: a
            # submission's thread may change it before the worker has even started
            pid = self.proc.pid
            label = self.config.label or f"the trusted worker of {self.config.submission.name}"
            _NOTED[pid] = watch.NotedProcess(pid, label, {pid: replace(inherited, tid=pid)})
        self._killed_because = ""
        self.baseline_libraries = None
        try:
            hello = self.request({"op": "hello"}, self.config.compile_s, "[limits] compile_s")
        finally:
            status = isolation.read_status(status_read) if status_read >= 0 else "ok"
        if not hello.ok:
            if status != "ok":   # the isolation did not finish (no submission code has run): never "worker crashed"
                self.kill()
                why = status[len("failed:"):].strip() if status.startswith("failed:") else (
                    f"it stopped before reporting: {hello.message}")
                return Outcome(False, "isolation", f"the worker could not be isolated ({why}); the submission never "
                                                   f"ran", self.log_tail())
            return hello
        if self.trace is not None:
            self.kernel_check = (f"kernels traced ({self.trace.status}): only the submission's own may run"
                                 if self.trace.status and not self.trace.error else
                                 f"kernels not traced: {self.trace.error or 'the tracer did not start'}")
            if not self.trace.status or self.trace.error:
                self.trace.close()
                self.trace = None
        pre = self.request({"op": "preload", "dir": str(self.config.submission), "options": list(self.config.options),
                             "arch": self.config.arch},
                           self.config.compile_s, "[limits] compile_s")
        if not pre.ok:
            if pre.kind == "timeout":
                pre = replace(pre, message=f"compiling the submission's .cu files did not finish within "
                                           f"{self.config.compile_s:g} s ([limits] compile_s); the worker was killed")
            elif pre.kind == "crash" and (file := protocol.compiling_when_crashed(self.log_tail(lines=60))):
                pre = replace(pre, message=compiler_crash_message(pre.message, file))
            return pre
        self.module_ptx = dict(pre.data.get("ptx", {}))
        policy = self.config.kernel_policy
        self.own_kernels = policy.judge(self.module_ptx, dict(pre.data.get("failed", {}))) if policy else None
        self.baseline_libraries = self._libraries()  # mapped by the grader's own work, before any submission code
        out = self.request({"op": "load", "dir": str(self.config.submission),
                            "nargs": len(self.config.arg_names), "arg_names": list(self.config.arg_names),
                            "device_memory_bytes": self.config.device_memory_bytes,
                            "limit_s": self.config.compile_s},
                           self.config.compile_s, "[limits] compile_s")
        if out.ok:
            self.load_data = out.data
        elif out.kind == "timeout":
            out = replace(out, message=import_hang_message(self.config.compile_s, out.detail, self.config.submission))
        return out

    @staticmethod
    def _inherited() -> watch.SchedulingState | None:
        """How a trusted worker must be scheduled from its start: as the thread that starts it is
        (a child inherits its affinity, policy, nice value and cgroup), as that thread was noted
        (:func:`note_grading_process`) where it was, so that a change already made to the grading
        process is not passed on unseen; None when that thread cannot be read."""
        import threading
        me, tid = os.getpid(), threading.get_native_id()
        noted = _NOTED.get(me)
        if noted is not None and (tid in noted.threads or me in noted.threads):
            return noted.threads.get(tid) or noted.threads[me]
        return watch.SchedulingState.read(tid, me)

    def _view(self, cache: Path, tracer_folders: tuple[str, ...]) -> isolation.View:
        """The submission worker's filesystem view: hidden are the configured folders, the grader's
        own checkout when it is a course (it holds solutions/ or exercises/), the grader user's home
        (user site-packages, ~/.local/bin and the like: places to plant code for later) and the whole
        grader cache (every kernel cache, the measured ceilings); shown again are the submission
        (read-only), the grader package, the Python environment and the kernel tracer (read-only),
        its own kernel cache and its working directory."""
        import site
        import sysconfig
        package = Path(__file__).resolve().parents[1]
        env = {sys.prefix, sys.base_prefix, *(site.getsitepackages() if hasattr(site, "getsitepackages") else []),
               *(sysconfig.get_paths()[k] for k in ("purelib", "platlib", "stdlib", "platstdlib"))}
        keep_whole = [str(Path(p).resolve()) for p in env if p and os.path.isdir(p) and Path(p).resolve() != Path("/")]
        checkout = package.parent
        course_like = any((checkout / d).is_dir() for d in ("solutions", "exercises", "calibration"))
        courses = [Path(h).resolve() for h in (*self.config.hide, *([checkout] if course_like else []))]
        # hidden folders are replaced whole (anything below them the worker needs is shown again);
        # "/" itself cannot be: a folder right below it can
        hide = [str(h) for h in (*courses, kernel_cache_root().parent.resolve(), Path.home().resolve())
                if h != Path("/")]
        extra = [str(Path(p).resolve()) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                 if p and os.path.isdir(p) and not any(Path(p).resolve() == h or h in Path(p).resolve().parents
                                                       for h in courses)]
        show = [str(self.config.submission.resolve()), str(package), *keep_whole, *extra, *tracer_folders, str(cache),
                str(self.cwd)]
        return isolation.View(tuple(dict.fromkeys(hide)), tuple(dict.fromkeys(show)), (str(cache), str(self.cwd)))

    def kill(self) -> None:
        """SIGKILL the worker and every process of its (see :meth:`_pids`), then every other process
        still in its session (a /proc scan: one that left its tree while the grader was no child
        subreaper); then look for strays (watch.stray_processes) and kill them too."""
        if self.proc is not None:
            _LIVE_WORKERS.discard(self.proc.pid)
            _NOTED.pop(self.proc.pid, None)
            escaped = self._escaped()   # the grader's children: reaped by kill_all
            self._signal_group(signal.SIGKILL)
            watch.kill_all([*escaped, *(p for p in watch.session_members(self.proc.pid) if p != self.proc.pid)])
        if self.proc is not None:
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:  # pragma: no cover - a process stuck in the driver
                pass
            strays = watch.stray_processes(self.token, self.proc.pid, _LIVE_WORKERS)
            if strays:
                watch.kill_all(strays)
                self.strays_killed += len(strays)
        if self.sock is not None:
            self.sock.close()
        if self.trace is not None:
            self.trace.close()
        self.proc, self.sock, self.trace = None, None, None

    def pause(self) -> None:
        """Stop every process of the worker's group (SIGSTOP) while it is not being timed: the
        group at once, then every process of its session, found by a walk of /proc whose length the
        worker controls (a thousand idle threads make it tens of ms)."""
        self.stop_now()
        self._stop_all()

    # passes of :meth:`_stop_all` before it gives up on a worker whose processes keep changing
    STOP_PASSES = 50

    def _stop_all(self) -> None:
        """SIGSTOP every process of the worker, each the moment a walk finds it, and walk again until a
        whole walk finds no process it has not stopped yet. A walk that lists first and signals after
        signals PIDs a process that forks a successor and exits every few ms (a chain) has already
        left, however long the walk (threads held in a ptrace stop make it tens of ms at no cost to
        the worker's clock): the chain is never stopped and works between the timed rounds
        (red-team pass 12, evader_chain). A process found here cannot fork once the SIGSTOP is
        pending (a fork under way finishes, and its child is the stopped parent's, found by the next
        walk). A worker still making new processes after STOP_PASSES walks is killed."""
        if self.proc is None:
            return
        _send(signal.SIGSTOP, (-self.proc.pid,))
        stopped: set[int] = set()
        fresh = [False]

        def stop(pid: int) -> None:
            if pid in stopped:
                return
            stopped.add(pid)
            fresh[0] = True
            _send(signal.SIGSTOP, (pid,))

        for _ in range(self.STOP_PASSES):
            fresh[0] = False
            watch.session_pids(self.proc.pid, self._escaped(), visit=stop)
            if not fresh[0]:
                return
        self._killed_because = (f"the worker was killed: its processes kept changing while the grader stopped them "
                                f"between timed rounds ({self.STOP_PASSES} walks, each finding new ones)")
        self.kill()   # never settles: the next request reports it as the worker's crash

    def stop_now(self) -> None:
        """SIGSTOP the worker's process group and the processes the last :meth:`resume` found, with
        no walk of /proc first: a timed round's worker is stopped the moment its reply is read, so
        nothing it does after the reply (the parent's clock has stopped) goes unseen."""
        if self.proc is None:
            return
        _send(signal.SIGSTOP, (-self.proc.pid, *self._resumed))

    def resume(self) -> float:
        """Continue every process of the worker's session; returns ``time.perf_counter()`` just
        before the first signal (after the walk for its processes, whose length the worker
        controls), where a timed round's clock starts: the worker runs from that moment on."""
        return self._signal_group(signal.SIGCONT)

    def _signal_group(self, sig: signal.Signals) -> float:
        """Signal the worker's process group and every process of its session (a child that moved
        to a process group of its own stays in the session); returns the time of the first signal."""
        if self.proc is None:
            return time.perf_counter()
        pids = self._pids()  # first: nothing runs between the signals and the caller
        if sig == signal.SIGCONT:
            self._resumed = pids
        start = time.perf_counter()
        _send(sig, (-self.proc.pid, *pids))
        return start

    def _new_cwd(self) -> None:
        if self.cwd is not None:
            shutil.rmtree(self.cwd, ignore_errors=True)
        self.cwd = Path(tempfile.mkdtemp(prefix="grade-worker-cwd-", dir=workers_root()))

    def close(self) -> None:
        if self.alive and self.sock is not None:
            try:
                protocol.send(self.sock, {"op": "exit"})
                self.proc.wait(timeout=5)  # type: ignore[union-attr]
            except Exception:
                pass
        self.kill()
        if self.cwd is not None:
            shutil.rmtree(self.cwd, ignore_errors=True)
            self.cwd = None
        _close_log(self._log)

    def log_tail(self, lines: int = 15) -> str:
        """The last ``lines`` lines (of at most the last 8 KiB) of what the worker wrote to its
        stdout/stderr over all its starts, read through the grader's own descriptor of the log
        (never by a path the worker could replace); "" once the worker is closed or on a read error."""
        fd = self._log[0]
        if fd < 0:
            return ""
        try:
            size = os.fstat(fd).st_size
            start = max(0, size - 8192)
            data = os.pread(fd, size - start, start).decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(data.splitlines()[-lines:])

    # -- requests -----------------------------------------------------------------------------------
    def request(self, message: dict[str, Any], timeout: float, limit: str = "",
                on_reply: Callable[[], None] | None = None) -> Outcome:
        """Send one request and wait at most ``timeout`` seconds; any failure kills the worker.
        While waiting, the worker's memory is sampled against the caps; after a reply, its mapped
        libraries are checked against the forbidden ones. ``limit`` names the limit ``timeout``
        comes from, for the message (e.g. "[limits] case_s"). ``on_reply`` runs as soon as a reply
        has been read (``wall_s`` ends there), before any of the parent's checks after it: a timed
        round stops the worker and measures the GPU work it left there.

        After every request to a submission's (untrusted) worker, whatever its outcome, the
        scheduling of the grader's own processes is checked (:func:`scheduling_changes`, outside
        ``wall_s``): a change fails the request with kind "tampered" (the worker is killed) and is
        put back as far as this process may."""
        out = self._request(message, timeout, limit, on_reply)
        if self.config.trusted:
            return out
        changes = scheduling_changes()
        if not changes:
            return out
        self.kill()
        return Outcome(False, "tampered", tampered_message(changes), out.detail, wall_s=out.wall_s)

    def _request(self, message: dict[str, Any], timeout: float, limit: str = "",
                 on_reply: Callable[[], None] | None = None) -> Outcome:
        """:meth:`request` without the check of the grader's own processes."""
        if self.sock is None or self.proc is None:
            if self._killed_because:
                return Outcome(False, "crash", self._killed_because)
            return Outcome(False, "grader_error", "no worker running")
        if not self.alive:  # died between requests (a thread of the last call crashing it, say)
            return self._crashed(0.0)
        t0 = time.perf_counter()
        try:
            self.sock.settimeout(timeout)
            if self.trace is not None and message.get("op") != "exit":
                self.trace.request_sent()
            protocol.send(self.sock, message)
            over = self._wait_readable(t0 + timeout, message.get("op") not in UNGRADED_OPS)
            if over is not None:
                wall = time.perf_counter() - t0
                self.kill()
                return Outcome(False, over[0], over[1], self.log_tail(), wall_s=wall)
            reply = protocol.recv(self.sock, time.monotonic() + max(0.001, t0 + timeout - time.perf_counter()))
            wall = time.perf_counter() - t0
            if on_reply is not None:
                on_reply()
        except (socket.timeout, TimeoutError):
            wall = time.perf_counter() - t0
            self.kill()
            named = f" ({limit})" if limit else ""
            return Outcome(False, "timeout", f"no answer within {timeout:g} s{named} (a kernel or solve that never "
                           f"finishes?); the worker was killed", self.log_tail(), wall_s=wall)
        except (protocol.ProtocolError, OSError):
            wall = time.perf_counter() - t0
            return self._crashed(wall)
        if time.perf_counter() - self._last_sample >= WATCH_INTERVAL_S:
            over = self._memory_over_caps()
            if over is not None:
                self.kill()
                return Outcome(False, over[0], over[1], self.log_tail(), wall_s=wall)
        banned = self._forbidden_loaded()
        if banned:
            self.kill()
            return Outcome(False, "forbidden_library", f"the worker loaded {', '.join(banned)}, which this exercise "
                           f"forbids ([features] forbidden_libraries); write the kernel yourself", wall_s=wall)
        alien = self._foreign_kernels(message.get("op"), reply.get("ok") is True) or self._other_gpu_processes()
        if alien:
            self.kill()
            return Outcome(False, "foreign_kernel", alien, wall_s=wall)
        if reply.get("ok") is True:
            return Outcome(True, data={k: v for k, v in reply.items() if k != "ok"}, wall_s=wall)
        kind = str(reply.get("kind", "exception"))
        message = str(reply.get("message", ""))[:2000]
        if kind not in KIND_TEXT:
            kind = "exception"
        elif kind in PARENT_KINDS and not self.config.trusted:
            # the submission's code shares the worker's process and can make it reply anything
            # (a reply of its own written on the worker's socket, say): kinds that only the
            # grader's side decides, or that blame the grader, are not taken from it
            message = f"the submission's worker reported {KIND_TEXT[kind]!r}, which only the grader decides: {message}"
            kind = "exception"
        self.kill()  # the context may be unusable after any failure: start afresh
        return Outcome(False, kind, message, str(reply.get("detail", ""))[-4000:], wall_s=wall)

    def _wait_readable(self, deadline: float, graded: bool = True) -> tuple[str, str] | None:
        """Wait until a reply is readable (or the deadline passes: the caller's recv then times
        out), sampling memory every WATCH_INTERVAL_S, and in a ``graded`` request the GPU's
        processes too (a process the submission starts for one call, uses the GPU in and ends
        before the reply is seen only while it runs: a CUDA start-up alone takes longer than the
        interval); (kind, message) when a cap is exceeded or such a process is seen. Polls without
        sleeping for the first SPIN_S."""
        spin_end = min(deadline, time.perf_counter() + SPIN_S)
        while time.perf_counter() < spin_end:
            if select.select([self.sock], [], [], 0)[0]:
                return None
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.sock], [], [], min(WATCH_INTERVAL_S, left))
            if ready:
                return None
            over = self._memory_over_caps()
            if over is not None:
                return over
            alien = self._other_gpu_processes() if graded else ""
            if alien:
                return "foreign_kernel", alien
            if self.proc is None or self.proc.poll() is not None:
                return None  # died: recv reports the crash

    def _memory_over_caps(self) -> tuple[str, str] | None:
        cfg = self.config
        self._last_sample = time.perf_counter()
        if not (cfg.host_memory_bytes or cfg.device_memory_bytes) or self.proc is None or cfg.trusted:
            return None
        pids = self._pids()
        host = watch.host_memory_bytes(pids)
        if cfg.host_memory_bytes and host > cfg.host_memory_bytes:
            return "host_memory_limit", (f"the worker used {host / 2**30:.1f} GiB of host memory, over the "
                                         f"{cfg.host_memory_bytes / 2**30:g} GiB limit ([limits] host_memory_gib); "
                                         f"the worker was killed")
        if cfg.device_memory_bytes and cfg.backend == "cuda":
            dev = watch.device_memory_bytes(pids)
            if dev is not None and dev > cfg.device_memory_bytes:
                return "device_memory_limit", (
                    f"the worker used {dev / 2**30:.1f} GiB of device memory, over the "
                    f"{cfg.device_memory_bytes / 2**30:g} GiB limit ([limits] device_memory_gib); "
                    f"the worker was killed")
        return None

    def _pids(self) -> list[int]:
        """The worker, its descendants and the processes that left its tree (see :meth:`_escaped`),
        with theirs (see watch.session_pids); empty before it started."""
        return watch.session_pids(self.proc.pid, self._escaped()) if self.proc is not None else []

    def _escaped(self) -> tuple[int, ...]:
        """Processes that left this worker's process tree and were re-parented to the grader
        (watch.escaped_processes): those in its session and, for an untrusted worker, those in no
        live worker's session (a daemon that also called setsid; the trusted workers start none).
        They are the worker's: stopped, continued, measured and killed with it, and counted in
        :attr:`escaped`."""
        if self.proc is None:
            return ()
        mine = tuple(pid for pid, sid in watch.escaped_processes(_LIVE_WORKERS | {self.proc.pid}).items()
                     if sid == self.proc.pid or (not self.config.trusted and sid not in _LIVE_WORKERS))
        self.escaped.update(mine)
        return mine

    def _libraries(self) -> set[str]:
        libs: set[str] = set()
        for pid in self._pids():
            libs |= watch.mapped_libraries(pid)
        return libs

    def _forbidden_loaded(self) -> list[str]:
        """Forbidden libraries mapped since the worker's start-up (CuPy itself may map some, e.g.
        libcublasLt, before any submission code runs: those are not the submission's doing)."""
        if (not self.config.forbidden_libraries or self.proc is None or self.baseline_libraries is None
                or self.config.trusted):
            return []
        return watch.forbidden_in(self._libraries() - self.baseline_libraries, self.config.forbidden_libraries)

    def _foreign_kernels(self, op: Any, replied_ok: bool = True) -> str:
        """The message when kernels traced since the last request include one that is not the
        submission's own while a graded call ran (see grader.sandbox.kernel_trace); "" otherwise."""
        if self.trace is None:
            return ""
        closed = self.trace.windows_closed
        names = self.trace.names()
        late = self.trace.take_late()
        if late:
            return (f"{late[0].name} was started after a timed round's calls had been synchronised: work left to run "
                    f"after solve returns is outside the timed window (the clock stops at the reply); finish all "
                    f"GPU work inside solve")
        own = self.own_kernels
        if own is None or op in UNGRADED_OPS:
            # kernels launched after the worker's flush ended the request are not the grader's
            # start-up work: the next graded request answers for them (the tracer writes a name
            # once between flushes, so a later launch of the same kernel may leave no line)
            self._carried = list(self.trace.after_report)
            mapped = [x for x in names if x.name.startswith(kernel_trace.HOST_MEMORY_PREFIX) and not own.accepts(x)] \
                if own is not None and op == "load" else []
            if mapped:   # set up while solution.py was imported, for use in the graded calls
                hint = own.why_not(mapped[0])
                return f"{', '.join(x.name for x in mapped[:3])} ran while solution.py was imported ({hint})"
            return ""
        names, self._carried = self._carried + names, []
        if self.proc is not None:
            self.trace.check_descriptor(self.proc.pid)
        if not self.trace.reported and op != "time":   # the worker flushes before every reply but a timed round's
            self.trace.tampered("the tracer's flush did not run before the reply")
        # a timed round that failed (solve raised, the synchronisation reported a CUDA error) may end
        # before its W line: its own error is the report, not tampering
        if op == "time" and replied_ok and self.trace.status and self.trace.windows_closed == closed:
            self.trace.tampered("the timed round's synchronisation was not marked (W line)")
        if self.trace.error:
            return f"{self.trace.error}; the own-kernels check cannot vouch for this submission"
        alien = kernel_trace.foreign(names, own)
        ran = [x.name for x in names if x.own_module and x not in alien]
        self.own_kernels_traced += len(ran)
        self.own_launched.update(ran)
        if not alien:
            return ""
        mine = ", ".join(own.names()) or "none found"
        shown = ", ".join(x.name for x in alien[:3]) + (f" and {len(alien) - 3} more" if len(alien) > 3 else "")
        hints = "".join(f" ({h})" for h in dict.fromkeys(own.why_not(x) for x in alien[:3]) if h)
        return (f"{shown} ran during solve but {'is not a kernel' if len(alien) == 1 else 'are not kernels'} of "
                f"the submission's own sources (its kernels: {mine}){hints}; a library's kernel (CuPy, torch, "
                f"cuBLAS, Triton) does not count as your work: write the kernel yourself")

    def _other_gpu_processes(self) -> str:
        """The message when a process the submission started (its descendant, or an orphan now
        re-parented to the grader) holds a CUDA context: its kernels would not be traced."""
        if self.trace is None or self.own_kernels is None or self.proc is None:
            return ""
        users = watch.gpu_processes() or set()
        me, worker = os.getpid(), self.proc.pid
        others = sorted(p for p in users - {worker} - _LIVE_WORKERS
                        if watch.descends_from(p, worker) or
                        (watch.descends_from(p, me) and not any(watch.descends_from(p, w) for w in _LIVE_WORKERS)))
        if not others:
            return ""
        return (f"process {', '.join(map(str, others))}, started by the submission, used the GPU: every kernel must "
                f"run in the worker's own process, where the grader sees it (kernels elsewhere are not the "
                f"submission's own sources as far as the grader can tell)")

    def _crashed(self, wall: float) -> Outcome:
        code = None
        if self.proc is not None:
            try:
                code = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        if code is not None and code < 0:
            sig = signal.Signals(-code).name
            if sig == "SIGKILL":
                msg = "killed by SIGKILL (out of host memory?)"
            else:
                msg = f"killed by {sig}" + (" (segmentation fault)" if sig == "SIGSEGV" else "")
        else:
            msg = f"exited with status {code}" if code is not None else "stopped answering"
        return Outcome(False, "crash", f"the worker process {msg}", self.log_tail(), wall_s=wall)
