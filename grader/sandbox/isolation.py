"""The worker's view of the filesystem: the submission, the grader package and the Python
environment, not the course's files (course files are out of its reach through the filesystem, not only through sys.path).

A submission's worker starts inside new Linux user and mount namespaces (``unshare``, from
util-linux; no privileges needed where unprivileged user namespaces are enabled). There, before
the worker's Python starts, this module's :func:`main`:

1. binds every folder the worker must keep (:attr:`View.show`: the submission, read-only; the
   grader package, read-only; the worker's private working directory) to a staging point;
2. mounts an empty tmpfs over every folder it must not see (:attr:`View.hide`: the course root,
   with exercises/, solutions/ and calibration/; the reference solution; in batch, the folder of
   every student's submissions; CuPy's shared kernel cache, which holds the reference's binaries);
3. binds the kept folders back at their own paths, inside those tmpfs mounts;
4. enters a second, nested user and mount namespace (in its own process,
   :func:`enter_nested_namespaces`) and execs the worker there: the mounts made in step 2 are then
   locked (mount_namespaces(7): mounts that come as a unit from a more privileged mount namespace
   cannot be unmounted one by one), so the worker cannot lift a tmpfs to look underneath.

CUDA works in such namespaces and so does CUDA IPC between the grader and the worker (checked on
the H200, 2026-12-01; a PID namespace breaks CUDA IPC, so there is none). Not covered: a worker
running as the same user as other processes can read their files through ``/proc/PID/root`` when
they are dumpable (the grader and the trusted workers make themselves non-dumpable); a worker whose
user is root (the grader runs as root) can do the same with any root process: grade as an
unprivileged user.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

_PROBE: dict[str, str | None] = {}
# The tools are looked up here only, never through the worker's PATH (a folder on it may be
# writable by the worker, which could plant its own `unshare` for the next worker's start).
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def tool(name: str) -> str | None:
    """Absolute path of a system tool (util-linux), from SYSTEM_PATH only."""
    return shutil.which(name, path=SYSTEM_PATH)


@dataclass(frozen=True)
class View:
    """What the worker sees: ``hide`` folders are replaced by an empty tmpfs; ``show`` folders
    (absolute, resolved) stay visible at their paths, read-only unless also in ``writable``."""
    hide: tuple[str, ...]
    show: tuple[str, ...]
    writable: tuple[str, ...] = field(default=())

    def to_json(self) -> str:
        return json.dumps({"hide": list(self.hide), "show": list(self.show), "writable": list(self.writable)})

    @staticmethod
    def from_json(text: str) -> "View":
        d = json.loads(text)
        return View(tuple(d["hide"]), tuple(d["show"]), tuple(d.get("writable", ())))

    def describe(self) -> str:
        """One line for reports: what was hidden."""
        return "mount namespace; hidden from the worker: " + ", ".join(self.hide)


def unavailable_reason() -> str | None:
    """None when workers can be isolated here, else why not (one line; probed once)."""
    if "reason" not in _PROBE:
        if os.environ.get("GRADER_ISOLATION", "").lower() in ("0", "off", "none", "no"):
            _PROBE["reason"] = "turned off (GRADER_ISOLATION=off)"
        elif sys.platform != "linux":
            _PROBE["reason"] = "needs Linux namespaces"
        elif tool("unshare") is None or tool("mount") is None or tool("umount") is None:
            _PROBE["reason"] = "the unshare and mount commands (util-linux) are not installed"
        else:   # the whole path once, on a scratch folder: hide one folder, show one inside it
            import tempfile
            with tempfile.TemporaryDirectory(prefix="grader-isolation-probe-") as tmp:
                hidden, shown = Path(tmp) / "hidden", Path(tmp) / "hidden" / "shown"
                shown.mkdir(parents=True)
                (hidden / "secret").write_text("x")
                check = f"import os, sys; sys.exit(0 if os.listdir({str(hidden)!r}) == ['shown'] else 3)"
                env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
                probe = subprocess.run(wrap([sys.executable, "-c", check], View((str(hidden),), (str(shown),))),
                                       capture_output=True, text=True, env=env, cwd=tmp, timeout=60)
            _PROBE["reason"] = None if probe.returncode == 0 else (
                "user and mount namespaces do not work here ("
                f"{(probe.stderr.strip().splitlines() or [f'exit status {probe.returncode}'])[-1]})")
    return _PROBE["reason"]


def wrap(command: list[str], view: View, status_fd: int = -1) -> list[str]:
    """``command`` run inside the isolated view (see the module docstring). With ``status_fd`` (the
    write end of a pipe the caller passes to the child), :func:`main` writes "ok" or "failed: WHY"
    there and closes it before ``command`` starts: a channel the worker never holds, so an exit
    status of the submission's cannot pass for a failure of the isolation, nor the reverse."""
    return [tool("unshare") or "unshare", "--user", "--map-root-user", "--mount", "--", sys.executable, "-S", "-P",
            "-m", "grader.sandbox.isolation", view.to_json(), str(status_fd), "--", *command]


def read_status(fd: int) -> str:
    """What :func:`main` wrote on ``fd`` (the read end of the status pipe), "" if nothing yet; closes
    ``fd``. Call it once the child has replied or exited."""
    try:
        os.set_blocking(fd, False)
        return os.read(fd, 4096).decode(errors="replace").strip()
    except (BlockingIOError, OSError):
        return ""
    finally:
        os.close(fd)


def _mount(*args: str) -> None:
    r = subprocess.run([tool("mount") or "mount", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise OSError(f"mount {' '.join(args)}: {r.stderr.strip()}")


def _under(path: str, folders: tuple[str, ...]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def build(view: View, stage: Path) -> None:
    """Steps 1-3 of the module docstring, inside the first namespaces (raises OSError)."""
    _mount("--make-rprivate", "/")
    staged = {}
    for i, path in enumerate(view.show):
        if os.path.isdir(path) and _under(path, view.hide):   # would vanish under a tmpfs: keep a handle
            point = stage / str(i)
            point.mkdir(parents=True, exist_ok=True)
            _mount("--rbind", path, str(point))
            staged[path] = point
    for path in view.hide:
        if os.path.isdir(path):
            _mount("-t", "tmpfs", "-o", "mode=755,size=1m", "tmpfs", path)
    for path in view.show:
        if not os.path.isdir(path) and path not in staged:
            continue
        if path in staged:
            os.makedirs(path, exist_ok=True)   # inside a tmpfs above
            _mount("--rbind", str(staged[path]), path)
        elif path not in view.writable:
            _mount("--rbind", path, path)
        if path not in view.writable:
            _mount("-o", "remount,bind,ro", path)
    for point in staged.values():
        subprocess.run([tool("umount") or "umount", "-l", str(point)], capture_output=True)


STAGE_CANDIDATES = ("/tmp", "/var/tmp", "/dev/shm")


def stage_folder(view: View) -> Path:
    """A new folder for the staging mounts, in the first temporary folder (the system's, then
    :data:`STAGE_CANDIDATES`) that the view does not hide and this process can write: a stage under
    a hidden folder would vanish under its tmpfs (red-team pass 15: TMPDIR elsewhere and a result
    file in /tmp). Raises OSError naming the folders tried."""
    import tempfile
    tried = []
    for base in dict.fromkeys((tempfile.gettempdir(), *STAGE_CANDIDATES)):
        folder = os.path.realpath(base)
        if os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK) and not _under(folder, view.hide):
            return Path(tempfile.mkdtemp(prefix="grader-stage-", dir=folder))
        tried.append(folder)
    raise OSError(f"no folder to stage the mounts in: {', '.join(tried)} are hidden from the worker or not writable")


def _report(fd: int, text: str) -> None:
    if fd >= 0:
        try:
            os.write(fd, text.encode()[:4000])
        finally:
            os.close(fd)


def enter_nested_namespaces() -> None:
    """Step 4 of the module docstring, in this process: new user and mount namespaces, root mapped
    to this namespace's root (what ``unshare --user --map-root-user --mount`` does), so the mounts
    of step 2 are locked for what runs next. In-process, so that :func:`main` reports "ok" only once
    every step has worked. Raises OSError."""
    import ctypes
    clone_newuser, clone_newns = 0x10000000, 0x00020000     # <linux/sched.h>
    uid, gid = os.getuid(), os.getgid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(clone_newuser | clone_newns) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare(CLONE_NEWUSER | CLONE_NEWNS): {os.strerror(err)}")
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def _remove_stage(stage: Path) -> None:
    """Remove the stage's empty points and the stage itself with rmdir only: a point still mounted
    (its unmount failed) is refused, never emptied through its read-write bind (red-team pass 16)."""
    for point in stage.iterdir() if stage.is_dir() else ():
        try:
            os.rmdir(point)
        except OSError:
            pass
    try:
        os.rmdir(stage)
    except OSError:
        pass


def main(argv: list[str]) -> None:
    """``python -m grader.sandbox.isolation VIEW_JSON STATUS_FD -- COMMAND...`` (see :func:`wrap`);
    exits 121 when the view cannot be built or the nested namespaces entered."""
    view = View.from_json(argv[0])
    sep = argv.index("--")
    status_fd = int(argv[1]) if sep == 2 else -1
    command = argv[sep + 1:]
    stage = None
    try:
        stage = stage_folder(view)
        build(view, stage)
        _remove_stage(stage)
        # this process's working folder was entered before the mounts: re-enter it by its path, so
        # that ".." goes through the hiding tmpfs, not the real folder underneath (the grader cache,
        # other workers' folders; red-team pass 16)
        os.chdir(os.getcwd())
        enter_nested_namespaces()
    except Exception as exc:   # noqa: BLE001 - any failure to build the view is the grader's side
        if stage is not None:
            _remove_stage(stage)
        _report(status_fd, f"failed: {exc}")
        print(f"grader isolation failed: {exc}", file=sys.stderr, flush=True)
        sys.exit(121)
    _report(status_fd, "ok")
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
