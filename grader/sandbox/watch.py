"""Watching a worker from outside its process: what the submission cannot fake by patching Python.

Everything here reads ``/proc`` (Linux) or NVML in the parent:

- :func:`host_memory_bytes`: resident memory (VmRSS) summed over the worker's process session, so
  children it forks count too;
- :func:`device_memory_bytes`: device memory NVML attributes to those processes (its CUDA context
  included; None where NVML cannot tell, e.g. no pynvml or a PID namespace NVML does not share);
- :func:`mapped_libraries`: file names of the shared objects mapped into the worker, for the
  spec's ``[features] forbidden_libraries`` (cuBLAS loaded through ``cupy.matmul``, ``ctypes`` or
  another framework shows up here however it was reached);
- :func:`stray_processes`: processes a killed worker left behind (a daemon that left the worker's
  session with ``setsid``), by the worker's token in their environment or by re-parenting;
- :class:`SchedulingState` / :class:`NotedProcess`: the CPU affinity, scheduling policy, nice
  value and cgroup of the grader's own processes, which a worker of the same user can change;
- :class:`GpuDrain`: whether any other CUDA context still has work on the GPU (a stopped worker's
  queued kernels keep running: SIGSTOP stops processes, not the GPU).
"""
from __future__ import annotations

import math
import os
import signal
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

TOKEN_VAR = "GRADE_WORKER_TOKEN"   # set in every worker's environment; inherited by its children
_PROC = Path("/proc")


def session_pids(sid: int, escaped: tuple[int, ...] = (), visit: Callable[[int], None] | None = None) -> list[int]:
    """PIDs of the worker's processes: the worker (its session leader, sid == its PID) and its
    descendants, through /proc/PID/task/TID/children (fast); where the kernel has no such files,
    every process whose session id is ``sid`` (a scan of /proc: milliseconds). ``escaped``: more
    processes to include with their descendants (the worker's that left its tree, see
    :func:`escaped_processes`). ``visit``, when given, is called with each PID the moment it is
    found, before its children are read (a SIGSTOP sent there reaches it microseconds after it was
    seen, not after the rest of a walk whose length the worker controls)."""
    found, todo, walked = [], [sid, *escaped], False
    while todo:
        pid = todo.pop()
        tasks = _PROC / str(pid) / "task"
        try:
            tids = [t.name for t in tasks.iterdir()]
        except OSError:
            continue
        found.append(pid)
        if visit is not None:
            visit(pid)
        for tid in tids:
            try:
                todo += [int(c) for c in (tasks / tid / "children").read_text().split()]
                walked = True
            except (OSError, ValueError):
                continue
    if walked or not found:
        return found
    members = session_members(sid)
    if visit is not None:
        for pid in members:
            visit(pid)
    return members


def escaped_processes(live: set[int]) -> dict[int, int]:
    """Processes that left a worker's process tree: {PID: its session id} for this process's own
    children (where :func:`protect_parent`, the child subreaper, has them re-parented when their
    parent exits: a double fork) that are no live worker (``live``), not in this process's session
    (its own short-lived subprocesses are) and not dead (see :func:`_dead`; dead ones are reaped). A
    few /proc reads per thread of this process: tens of microseconds."""
    me, my_sid = os.getpid(), os.getsid(0)
    out: dict[int, int] = {}
    kids: list[int] = []
    try:
        tasks = list((_PROC / "self" / "task").iterdir())
    except OSError:
        tasks = []
    walked = False
    for task in tasks:
        try:
            kids += [int(c) for c in (task / "children").read_text().split()]
            walked = True
        except (OSError, ValueError):
            continue
    if not walked:   # a kernel without the children files: every process whose parent is this one
        kids = [int(d.name) for d in (_PROC.iterdir() if _PROC.is_dir() else ()) if d.name.isdigit()
                and _parent(int(d.name)) == me]
    for pid in kids:
        if pid in live or pid in out:
            continue
        try:
            fields = _stat_fields(pid)
            if int(fields[3]) == my_sid:
                continue
            if not _dead(pid, fields):
                out[pid] = int(fields[3])
            else:   # a zombie handed over by a double fork: reap it (a pile of them slows every walk)
                os.waitpid(pid, os.WNOHANG)
        except (OSError, ValueError, IndexError):
            continue
    return out


def _dead(pid: int, fields: list[str]) -> bool:
    """Whether ``pid`` is a zombie with no live thread: a thread-group leader that left by
    SYS_exit shows Z in /proc/PID/stat while its other threads run on."""
    if fields[0] not in "ZX":
        return False
    try:
        return all(_stat_fields(pid, t)[0] in "ZX" for t in os.listdir(_PROC / str(pid) / "task"))
    except OSError:
        return True


def _parent(pid: int) -> int | None:
    try:
        return int(_stat_fields(pid)[1])
    except (OSError, ValueError, IndexError):
        return None


def session_members(sid: int) -> list[int]:
    """Every process whose session id is ``sid``, by a scan of /proc (milliseconds)."""
    out = []
    for d in _PROC.iterdir() if _PROC.is_dir() else ():
        if not d.name.isdigit():
            continue
        try:
            if int(_stat_fields(int(d.name))[3]) == sid:
                out.append(int(d.name))
        except (OSError, ValueError, IndexError):
            continue
    return out


def host_memory_bytes(pids: list[int]) -> int:
    """Resident set size (bytes) summed over ``pids``; processes that vanished count 0."""
    total = 0
    for pid in pids:
        try:
            for line in (_PROC / str(pid) / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
                    break
        except (OSError, ValueError):
            continue
    return total


_nvml_state: dict[str, object] = {}


def _compute_processes() -> list[tuple[int, int]] | None:
    """(pid, device memory bytes) of every process NVML lists with a CUDA context on any GPU, or
    None when NVML is missing or fails (no verdict rather than a grader crash)."""
    try:
        import pynvml as nv
    except ImportError:
        return None
    try:
        if not _nvml_state.get("init"):
            nv.nvmlInit()
            _nvml_state["init"] = True
        return [(int(p.pid), int(p.usedGpuMemory or 0)) for i in range(nv.nvmlDeviceGetCount())
                for p in nv.nvmlDeviceGetComputeRunningProcesses(nv.nvmlDeviceGetHandleByIndex(i))]
    except Exception:
        return None


def device_memory_bytes(pids: list[int]) -> int | None:
    """Device memory (bytes) NVML reports for ``pids`` on any GPU, or None when NVML is missing
    or lists none of them (it cannot see into this PID namespace, or they hold no context yet)."""
    wanted = set(pids)
    mine = [used for pid, used in _compute_processes() or () if pid in wanted]
    return sum(mine) if mine else None


def gpu_processes() -> set[int] | None:
    """PIDs that hold a CUDA context on any GPU (NVML), or None when NVML cannot tell."""
    procs = _compute_processes()
    return None if procs is None else {pid for pid, _ in procs}


def descends_from(pid: int, ancestor: int) -> bool:
    """Whether ``ancestor`` is on ``pid``'s parent chain (``pid`` itself excluded), at any depth
    (a chain of any length is walked up to PID 1; a cycle, impossible in /proc, ends the walk)."""
    seen = {pid}
    while True:
        try:
            pid = int(_stat_fields(pid)[1])
        except (OSError, ValueError, IndexError):
            return False
        if pid == ancestor:
            return True
        if pid <= 1 or pid in seen:
            return False
        seen.add(pid)


def mapped_libraries(pid: int) -> set[str]:
    """File names (no folder) of the files mapped into ``pid``; empty when unreadable."""
    try:
        text = (_PROC / str(pid) / "maps").read_text()
    except OSError:
        return set()
    out = set()
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/"):
            out.add(parts[5].rsplit("/", 1)[-1].removesuffix(" (deleted)"))
    return out


def forbidden_in(libraries: set[str], forbidden: tuple[str, ...]) -> list[str]:
    """The mapped library names that start with a forbidden prefix (``libcublas`` matches
    ``libcublas.so.13`` and ``libcublasLt.so.13``), sorted."""
    return sorted(lib for lib in libraries for f in forbidden if lib.startswith(f))


def _stat_fields(pid: int, tid: str | None = None) -> list[str]:
    """Fields of /proc/PID/stat (of thread ``tid``: /proc/PID/task/TID/stat) after the command name
    (which may hold spaces and parentheses): [0] state, [1] ppid, [3] session id."""
    stat = ((_PROC / str(pid) / "stat") if tid is None else (_PROC / str(pid) / "task" / tid / "stat")).read_text()
    return stat[stat.rfind(")") + 2:].split()


def stray_processes(token: str, worker_sid: int, live: set[int]) -> list[int]:
    """Processes a killed worker left behind: those of this user whose environment holds
    ``TOKEN_VAR=token``, and this process's own children that are in another session than ours
    and are no live worker (``live``): a daemon that cleared its environment is re-parented here,
    because :func:`protect_parent` makes this process a child subreaper. Processes still in the
    worker's session (``worker_sid``) were just sent SIGKILL and are not counted."""
    needle = f"{TOKEN_VAR}={token}".encode()
    me, my_sid, uid = os.getpid(), os.getsid(0), os.getuid()
    out = []
    for d in _PROC.iterdir() if _PROC.is_dir() else ():
        if not d.name.isdigit() or int(d.name) in (me, *live):
            continue
        pid = int(d.name)
        try:
            if d.stat().st_uid != uid:
                continue
            fields = _stat_fields(pid)
            if _dead(pid, fields) or int(fields[3]) == worker_sid:
                continue
            orphan = int(fields[1]) == me and int(fields[3]) != my_sid
            if orphan or needle in (d / "environ").read_bytes().split(b"\0"):
                out.append(pid)
        except (OSError, ValueError, IndexError):
            continue
    return out


def kill_all(pids: list[int]) -> None:
    """SIGKILL each PID, then reap those that were re-parented to this process."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except (ChildProcessError, OSError):
            pass  # not our child: init reaps it


def protect_parent() -> bool:
    """Harden this (the grading) process against its workers, with prctl(2):

    - PR_SET_DUMPABLE 0: processes of the same user (the worker and anything it starts) can no
      longer read its ``/proc/PID/environ`` or ``mem`` or ptrace it. Root still can: grade as an
      unprivileged user where submissions are untrusted.
    - PR_SET_CHILD_SUBREAPER 1: a daemon a worker double-forks is re-parented to this process
      instead of init, so :func:`stray_processes` finds it however it hid.

    Returns whether both took effect (Linux only)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(4, 0, 0, 0, 0) == 0 and libc.prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


class GpuDrain:
    """Waits, from the parent's own CUDA context, until no other context has work on the GPU.

    Without MPS the GPU time-slices between the contexts of different processes. A probe (a
    one-thread kernel, launched and synchronised) therefore returns in microseconds when no other
    context has work, and waits about one time slice when one does. Measured on the H200,
    2026-12-01 (.devtest probe, 30 probes each): idle, median 11 us, worst 163 us; while another
    process ran a kernel, 2.38 ms per probe. A probe under QUIET_MS means the GPU is ours. A wait
    shorter than NOISE_MS is not counted: the first probe after another context ran pays a context
    switch (up to 0.16 ms seen with nothing left to run), so work left over for less than that per
    round is not seen.
    """
    QUIET_MS = 0.1
    NOISE_MS = 0.3

    def __init__(self) -> None:
        import cupy
        self._cupy = cupy
        self._kernel = cupy.RawKernel('extern "C" __global__ void grader_probe(int* x) { x[0] += 1; }',
                                      "grader_probe")
        self._buf = cupy.zeros(1, cupy.int32)

    def _probe_ms(self) -> float:
        t = time.perf_counter()
        self._kernel((1,), (1,), (self._buf,))
        self._cupy.cuda.runtime.deviceSynchronize()
        return (time.perf_counter() - t) * 1e3

    def wait(self, limit_s: float) -> float:
        """Milliseconds from this call until a probe finds the GPU quiet (0.0 when it already is);
        math.inf when it is still busy after ``limit_s`` seconds. The parent's own queued work is
        finished first and not counted."""
        self._cupy.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        if self._probe_ms() < self.QUIET_MS:
            return 0.0
        while self._probe_ms() >= self.QUIET_MS:
            if time.perf_counter() - t0 > limit_s:
                return math.inf
        waited = (time.perf_counter() - t0) * 1e3
        return waited if waited >= self.NOISE_MS else 0.0


# -- scheduling of the grader's own processes ------------------------------------------------------
_POLICY_NAMES = {getattr(os, n): n for n in ("SCHED_OTHER", "SCHED_BATCH", "SCHED_IDLE", "SCHED_FIFO", "SCHED_RR",
                                             "SCHED_DEADLINE") if hasattr(os, n)}
# policies an unprivileged process may set back (leaving SCHED_IDLE needs RLIMIT_NICE or CAP_SYS_NICE)
_PLAIN_POLICIES = tuple(getattr(os, n) for n in ("SCHED_OTHER", "SCHED_BATCH") if hasattr(os, n))


def _cpus(cpus: frozenset[int]) -> str:
    """A CPU set in words: ``{0..15}``, ``{0, 2, 4..7}``."""
    runs: list[str] = []
    for cpu in sorted(cpus):
        if runs and runs[-1].split("..")[-1] == str(cpu - 1):
            runs[-1] = f"{runs[-1].split('..')[0]}..{cpu}"
        else:
            runs.append(str(cpu))
    return "{" + ", ".join(runs) + "}"


def _cgroup_folders(cgroup: str) -> list[Path]:
    """The ``cgroup.procs`` files that put a process back into ``cgroup`` (the text of
    /proc/PID/cgroup): one per hierarchy, under /sys/fs/cgroup (v2: the root or ``unified``; v1:
    the folder named by the controllers)."""
    root = Path("/sys/fs/cgroup")
    out = []
    for line in cgroup.splitlines():
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        names = [n.removeprefix("name=") for n in controllers.split(",") if n] if controllers else []
        bases = [root / "unified", root] if not names else [root / ",".join(names), *(root / n for n in names)]
        base = next((b for b in bases if (b / "cgroup.procs").exists()), None)
        if base is not None:
            out.append(base / path.lstrip("/") / "cgroup.procs")
    return out


def _changed_lines(cgroup: str, other: str) -> list[str]:
    """The lines of ``cgroup`` (/proc/PID/cgroup text) that ``other`` lacks, without the hierarchy
    number (``memory:/a``, v2: ``:/a``)."""
    theirs = set(other.splitlines())
    return [line.split(":", 1)[-1] for line in cgroup.splitlines() if line not in theirs]


@dataclass(frozen=True)
class SchedulingState:
    """How the kernel schedules one thread (``tid``; a process's main thread has tid == pid): its
    CPU affinity (CPU numbers), scheduling ``policy`` (``os.SCHED_*``) and static ``priority``
    (0 for the normal policies), ``nice`` value (-20..19) and ``cgroup`` (the text of
    /proc/PID/cgroup: the cgroup of every hierarchy; the process's, the same for all its threads).

    A process of the same user can change each of these for another process (sched_setaffinity,
    sched_setscheduler, setpriority, a write to a cgroup.procs file) whether or not that process
    is dumpable. Resource limits are left out on purpose: NVRTC raises its own process's
    RLIMIT_STACK when it compiles."""
    tid: int
    affinity: frozenset[int]
    policy: int
    priority: int
    nice: int
    cgroup: str

    @classmethod
    def read(cls, tid: int, pid: int | None = None, cgroup: str | None = None) -> "SchedulingState | None":
        """The state of thread ``tid`` (of process ``pid``, for its cgroup; default: ``tid``), or None
        when it has exited (or cannot be read at all). ``cgroup``: the process's, when the caller
        has read it already (:func:`read_cgroup`). Four system calls (a few microseconds) and,
        without ``cgroup``, one /proc read (tens of microseconds)."""
        try:
            affinity = frozenset(os.sched_getaffinity(tid))
            policy = os.sched_getscheduler(tid)
            priority = os.sched_getparam(tid).sched_priority
            nice = os.getpriority(os.PRIO_PROCESS, tid)
        except (OSError, ValueError):
            return None
        if cgroup is None:
            cgroup = read_cgroup(tid if pid is None else pid)
            if cgroup is None:
                return None
        return cls(tid, affinity, policy, priority, nice, cgroup)

    def differences(self, other: "SchedulingState") -> list[str]:
        """What changed from this state to ``other``, one phrase each, e.g.
        ``"CPU affinity {0..15} -> {0}"``; empty when nothing did."""
        out = []
        if self.affinity != other.affinity:
            out.append(f"CPU affinity {_cpus(self.affinity)} -> {_cpus(other.affinity)}")
        if (self.policy, self.priority) != (other.policy, other.priority):
            def name(p: int, prio: int) -> str:
                return _POLICY_NAMES.get(p, f"policy {p}") + (f" priority {prio}" if prio else "")
            out.append(f"scheduling policy {name(self.policy, self.priority)} -> {name(other.policy, other.priority)}")
        if self.nice != other.nice:
            out.append(f"nice {self.nice} -> {other.nice}")
        if self.cgroup != other.cgroup:
            was, now = _changed_lines(self.cgroup, other.cgroup), _changed_lines(other.cgroup, self.cgroup)
            out.append(f"cgroup {' '.join(was) or '(none)'} -> {' '.join(now) or '(none)'}")
        return out

    def restore(self, current: "SchedulingState", pid: int | None = None) -> list[str]:
        """Put thread ``tid`` back from ``current`` into this state, as far as this process may:
        the affinity, the policy (from SCHED_IDLE only with the privilege or RLIMIT_NICE to), the
        nice value (lowering it needs CAP_SYS_NICE or RLIMIT_NICE) and the cgroup (where this
        process may write its cgroup.procs; ``pid``: the thread's process, default ``tid``). Returns
        what could not be put back, in words (each "nice 0 -> 19 (Operation not permitted)");
        empty when everything was, or when the thread has exited."""
        failed = []

        def attempt(what: str, fn: Callable[[], object]) -> None:
            try:
                fn()
            except ProcessLookupError:
                pass
            except OSError as exc:
                failed.append(f"{what} ({exc.strerror or exc})")

        if self.affinity != current.affinity:
            attempt(self.differences(replace(self, affinity=current.affinity))[0],
                    lambda: os.sched_setaffinity(self.tid, self.affinity))
        if self.cgroup != current.cgroup:
            def move() -> None:
                lost = set(self.cgroup.splitlines()) - set(current.cgroup.splitlines())
                for procs in _cgroup_folders("\n".join(lost)):
                    procs.write_text(str(self.tid if pid is None else pid))
            attempt(self.differences(replace(self, cgroup=current.cgroup))[0], move)
        if (self.policy, self.priority) != (current.policy, current.priority):
            attempt(self.differences(replace(self, policy=current.policy, priority=current.priority))[0],
                    lambda: os.sched_setscheduler(self.tid, self.policy, os.sched_param(self.priority)))
        if self.nice != current.nice:
            attempt(self.differences(replace(self, nice=current.nice))[0],
                    lambda: os.setpriority(os.PRIO_PROCESS, self.tid, self.nice))
        return failed


def read_cgroup(pid: int) -> str | None:
    """The text of /proc/PID/cgroup (stripped), or None when the process has exited."""
    try:
        fd = os.open(f"/proc/{pid}/cgroup", os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 65536).decode(errors="replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)


def thread_ids(pid: int) -> list[int]:
    """The thread ids of process ``pid`` (empty when it has exited)."""
    try:
        return sorted(int(t) for t in os.listdir(_PROC / str(pid) / "task"))
    except (OSError, ValueError):
        return []


@dataclass
class NotedProcess:
    """A process of the grader's own whose scheduling must not change while a submission runs:
    ``label`` names it in messages ("the grading process", "the baseline worker"); ``threads`` holds
    the state of each thread when it was noted. A thread started since is held to the noted state
    of the main thread (threads inherit their creator's)."""
    pid: int
    label: str
    threads: dict[int, SchedulingState]

    @classmethod
    def note(cls, pid: int, label: str) -> "NotedProcess":
        """Note every thread of ``pid`` now (none when it has exited)."""
        cgroup = read_cgroup(pid)
        states = {tid: SchedulingState.read(tid, pid, cgroup) for tid in thread_ids(pid)} if cgroup is not None else {}
        return cls(pid, label, {tid: s for tid, s in states.items() if s is not None})

    def changes(self, restore: bool = True) -> list[str]:
        """What changed since the process was noted, one line per changed thread (threads and
        processes that exited are skipped), e.g. "the baseline worker (pid 7, thread 7): CPU
        affinity {0..15} -> {0}"; with ``restore``, each change is put back where this process
        may, and what could not be is said ("; not put back: ..."). What could not be put back is
        noted as it is now, so that it is reported once."""
        main = self.threads.get(self.pid)
        cgroup = read_cgroup(self.pid)
        out: list[str] = []
        if cgroup is None:   # exited
            return out
        for tid in thread_ids(self.pid):
            was = self.threads.get(tid) or (replace(main, tid=tid) if main is not None else None)
            # a process's cgroup is said once, with its main thread
            now = SchedulingState.read(tid, self.pid, cgroup if tid == self.pid or was is None else was.cgroup)
            if was is None or now is None:
                continue
            diff = was.differences(now)
            if not diff:
                continue
            line = f"{self.label} (pid {self.pid}" + (f", thread {tid}" if tid != self.pid else "") + \
                f"): {', '.join(diff)}"
            if restore:
                failed = was.restore(now, self.pid)
                if failed:
                    line += f"; not put back: {', '.join(failed)}"
                    after = SchedulingState.read(tid, self.pid)
                    if after is not None:
                        self.threads[tid] = after
            out.append(line)
        return out
