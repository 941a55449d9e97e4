"""What can be checked without a GPU, in one place (``grade`` runs :func:`static_check` before it
starts a worker; ``grade --compile-only`` runs :func:`static_report`): the submission's files (present,
not links, UTF-8) and the spec's required/forbidden source features; compiling ``kernel.cu`` with
NVRTC, the compiler grading uses (errors as ``kernel.cu:LINE``, registers / shared memory / spills
per kernel from ``-Xptxas -v``), or with nvcc when NVRTC cannot be loaded here (said as a warning:
the two differ); its PTX against ``required_ptx`` and ``forbidden_headers``; ``solution.py``
parsed, its imports and ``solve`` with the right number of arguments. What did not run is listed
in the report, never passed over."""
from __future__ import annotations

import ast
import contextlib
import functools
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from grader.kernel import hidden, parse_compiler_log
from grader.spec import Spec

# What CuPy adds to a RawModule's options when it compiles with NVRTC (cupy.cuda.compiler):
# grading compiles kernel.cu this way, so the static check does too.
CUPY_NVRTC_OPTIONS: tuple[str, ...] = ("-ftz=true", "--device-as-default-execution-space")
# Architectures NVRTC 13 accepts, for the message when it cannot be asked.
KNOWN_ARCHES: tuple[int, ...] = (75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121)
_ARCH = re.compile(r"^sm_(\d+)([af]?)$")
_PTXAS_FUNC = re.compile(r"Compiling entry function '(\w+)' for '(sm_\w+)'")
_PTXAS_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")
_PTXAS_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


@dataclass(frozen=True)
class StaticKernel:
    """ptxas's report for one kernel: registers per thread, static shared memory per block (bytes),
    stack frame and spill bytes per thread."""
    name: str
    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int


@dataclass(frozen=True)
class StaticReport:
    """Problems (each one line, naming file and line where known), per-kernel resources, what
    could not be checked here, and warnings (graded, but at a cost: e.g. no performance points)."""
    problems: tuple[str, ...]
    kernels: tuple[StaticKernel, ...]
    skipped: tuple[str, ...]
    arch: str
    warnings: tuple[str, ...] = ()
    compiler: str | None = None  # what compiled kernel.cu ("NVRTC 13.0", "nvcc"); None: it was NOT compiled
    compile_errors: int = 0      # errors that compiler reported (then kernel.cu did not compile)
    unreadable: bool = False     # the submission could not be read: nothing was compiled for that reason

    @property
    def ok(self) -> bool:
        """No problem found (``compiled`` says whether kernel.cu was compiled at all)."""
        return not self.problems

    @property
    def compiled(self) -> bool:
        """A compiler ran on kernel.cu (whether or not it accepted it)."""
        return self.compiler is not None

    def compile_line(self) -> str:
        """One line: what happened to kernel.cu."""
        if self.compiler is None:
            return ("kernel.cu was not compiled: the submission could not be read" if self.unreadable
                    else "kernel.cu was NOT compiled")
        if self.compile_errors:
            return f"compiling kernel.cu with {self.compiler} for {self.arch} FAILED ({self.compile_errors} error(s) below)"
        return f"kernel.cu compiled with {self.compiler} for {self.arch}"


SUBMISSION_FILES = ("kernel.cu", "solution.py")
CUDA_SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".hpp")   # where a submission's own kernels may be declared


def static_check(spec: Spec, submission: Path) -> tuple[str, str] | None:
    """(kind, message) when the submission folder cannot be graded as it stands: a missing file,
    a forbidden feature in its source, or a required one missing from kernel.cu."""
    if submission.is_file():
        return "bad_submission", (f"{submission}: is a file; fix: pass the folder that holds kernel.cu and "
                                  f"solution.py (--submission {submission.parent})")
    if not submission.is_dir():
        return "bad_submission", (f"{submission}: no such folder; fix: check the path (it should be a folder with "
                                  f"kernel.cu and solution.py)")
    unreadable = folder_problem(submission)
    if unreadable:
        return "bad_submission", unreadable
    for f in SUBMISSION_FILES:
        if not (submission / f).is_file():
            return "bad_submission", (f"{submission / f}: missing; a submission is a folder with "
                                      f"{' and '.join(SUBMISSION_FILES)}; fix: add it (the exercise's starting point "
                                      f"is student_template/{spec.name}/{f})")
    for f in SUBMISSION_FILES:
        undecodable = not_utf8(submission / f)
        if undecodable:
            return "bad_submission", undecodable
    files, computed = _source_files(submission)
    if computed:
        return "bad_submission", computed
    sources = {str(f.relative_to(submission)): strip_comments(f.read_text(errors="replace"), f.name) for f in files}
    for pattern in spec.forbidden:
        for f, text in sources.items():
            m = re.search(pattern, text)
            if m:
                line = text[:m.start()].count("\n") + 1
                return "forbidden", f"{f}:{line}: uses {m.group(0)!r}, which this exercise forbids ([features] forbidden)"
    for pattern in spec.required:
        if not re.search(pattern, sources["kernel.cu"]):
            return "required", f"kernel.cu: does not use {pattern!r}, which this exercise requires ([features] required)"
    try:
        copied = copied_library_code(spec, submission)
    except MacroExpansionTooLarge as exc:
        return "bad_submission", str(exc)
    if copied:
        return "forbidden", copied
    return None


# A copy of a forbidden library is found by its token sequences ("shingles", Broder 1997: every run
# of SHINGLE_TOKENS consecutive C tokens of the comment-free text), of which only those whose hash
# (CRC-32) is 0 mod FINGERPRINT_MOD are kept ("mod p" sampling, same paper): comments, whitespace,
# line breaks, file names and file boundaries change none of them, and the library's set stays
# small (about 100k fingerprints for CUB, Thrust and CG's reduce/scan headers). Measured 2026-12-01
# on the CPU machine (CuPy 14.2's and CUDA 13.0's include folders): the reference folders share
# 0-6 fingerprints with those headers (ex12's 6), templates, fixtures and the 123 folders of
# tests/cheats and tests/known_gaps at most 6; one CUB algorithm file has 179-560
# (block_reduce_raking.cuh 179, agent_scan.cuh 359), CG's details/reduce.h 671; a verbatim
# CUB/Thrust copy about 85000-88000. A run of T copied tokens gives about (T - 11) / 4, so
# LIBRARY_COPY_FINGERPRINTS is about 170 tokens (20-30 lines) of the library.
SHINGLE_TOKENS = 12
FINGERPRINT_MOD = 4
LIBRARY_COPY_FINGERPRINTS = 40
SUBMISSION_READ_LIMIT_BYTES = 256 << 20   # the most a submission folder may hold (static_check reads it all)
SUBMISSION_MAX_ENTRIES = 20_000   # files and folders a submission folder may hold
SUBMISSION_MAX_DEPTH = 32         # folders nested below the submission folder


def _utf8(name: str) -> bool:
    """Whether a name os.listdir returned is valid UTF-8 (undecodable bytes arrive as surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def folder_problem(submission: Path) -> str | None:
    """One line (the path and the fix) when the folder ``submission`` cannot be read safely: it
    holds a symbolic link (the grader would read what it points to, outside the worker's view: a
    library's header, or a file that never ends such as /proc/kmsg), something that is neither a
    file nor a folder (a FIFO an ``#include`` would block on, a socket, a device), a folder the
    grader cannot list, more than SUBMISSION_READ_LIMIT_BYTES of files (a sparse 40 GB file would
    exhaust the grader's memory before any time limit applies), more than SUBMISSION_MAX_ENTRIES
    entries or folders nested deeper than SUBMISSION_MAX_DEPTH (a walk that would take minutes or
    overflow the stack; red-team pass 15), a name with a control character or bytes that are not
    UTF-8 (a newline in a name forges lines of the worker's log and of PTX ``.file`` directives;
    red-team pass 18); None when it is fine. Looks at file types and sizes
    only (``lstat``), reading nothing, with an explicit stack (no recursion)."""
    fix = "fix: submit kernel.cu, solution.py and the files they use"
    total, entries = 0, 0
    stack = [(submission, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            names = sorted(os.listdir(folder))
        except OSError as exc:
            return f"{folder}: cannot be listed ({exc.strerror or exc}); fix: make it readable, or remove it"
        for name in names:
            path = folder / name
            if any(ord(ch) < 32 or ord(ch) == 127 for ch in name) or not _utf8(name):
                return (f"{ascii(str(path))}: a file or folder name with a control character (a newline, a tab) or "
                        f"bytes that are not UTF-8; fix: rename it")
            entries += 1
            if entries > SUBMISSION_MAX_ENTRIES:
                return f"{submission}: the submission folder holds more than {SUBMISSION_MAX_ENTRIES} files and folders; {fix}"
            try:
                st = path.lstat()
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                return (f"{path}: is a symbolic link; fix: replace it with the file or folder itself, or move it out of "
                        f"{submission}")
            if stat.S_ISDIR(st.st_mode):
                if depth + 1 > SUBMISSION_MAX_DEPTH:
                    return f"{path}: nested more than {SUBMISSION_MAX_DEPTH} folders deep; {fix}"
                stack.append((path, depth + 1))
            elif not stat.S_ISREG(st.st_mode):
                return f"{path}: is neither a file nor a folder (a FIFO, socket or device); fix: remove it"
            else:
                total += st.st_size
                if total > SUBMISSION_READ_LIMIT_BYTES:
                    return (f"{submission}: the submission folder holds more than {SUBMISSION_READ_LIMIT_BYTES >> 20} "
                            f"MiB of files ({path.name} among them); {fix}")
    return None


_C_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|\S")


# A macro a submission file defines: its parameters (None: object-like; "..." for variadic ones)
# and the tokens of its body.
Macro = tuple[tuple[str, ...] | None, tuple[str, ...]]


def defined_macros(text: str) -> dict[str, Macro]:
    """The macros ``#define`` lines of :func:`strip_comments`' output (lines spliced) define: name
    -> (parameters or None, the body's tokens)."""
    out: dict[str, Macro] = {}
    for line in re.findall(r"^[ \t]*#[ \t]*define[ \t]+[^\n]*$", text, flags=re.M):
        m = re.match(r"\s*#\s*define\s+([A-Za-z_]\w*)(\(([^)]*)\))?(.*)$", line)
        if m:
            params = None if m.group(2) is None else tuple(p.strip() for p in m.group(3).split(",") if p.strip())
            out[m.group(1)] = (params, tuple(_C_TOKEN.findall(m.group(4))))
    return out


# The most tokens :func:`_expand` may add to a file's own: real macros add a few hundred (378 at
# most in the repository's 163 graded folders and its drafts, 2026-12-04); three levels of
# 1000-token macros add 10^9 per use from 20 KB of text (red-team pass 18: the grader's own process
# ran out of memory before any limit applied).
EXPAND_EXTRA_TOKENS = 2_000_000


class MacroExpansionTooLarge(ValueError):
    """A submission file's own ``#define`` macros expand past EXPAND_EXTRA_TOKENS extra tokens."""


def _expand(tokens: list[str], macros: dict[str, Macro], rounds: int = 3) -> list[str]:
    """``tokens`` with the submission's own ``macros`` replaced as the preprocessor replaces them:
    an object-like macro by its body, a call of a function-like one by its body with the arguments
    put in for the parameters (``__VA_ARGS__`` too); ``rounds`` times, for macros of macros. What a
    copy that hides behind macros of its own reads like after the preprocessor: an empty ``#define
    E`` between every two tokens, or every token wrapped in ``#define I(x) x``. A body that
    stringizes or pastes tokens (``#``, ``##``) stays as it is. Raises
    :class:`MacroExpansionTooLarge` once the result would hold more than EXPAND_EXTRA_TOKENS
    tokens beyond ``tokens``' own (checked before each replacement, so memory stays bounded)."""
    budget = len(tokens) + EXPAND_EXTRA_TOKENS

    def too_large() -> MacroExpansionTooLarge:
        return MacroExpansionTooLarge(f"its #define macros expand to more than {EXPAND_EXTRA_TOKENS:,} tokens "
                                      f"beyond its own")
    for _ in range(rounds):
        out: list[str] = []
        i, changed = 0, False
        while i < len(tokens):
            if len(out) > budget:
                raise too_large()
            t = tokens[i]
            macro = macros.get(t)
            if macro is None or (macro[0] is not None and tokens[i + 1:i + 2] != ["("]):
                out.append(t)
                i += 1
                continue
            params, body = macro
            if params is None:
                if len(out) + len(body) > budget:
                    raise too_large()
                out.extend(body)
                changed, i = True, i + 1
                continue
            args: list[list[str]] = [[]]
            depth, j = 1, i + 2
            while j < len(tokens) and depth:
                tok = tokens[j]
                depth += {"(": 1, ")": -1}.get(tok, 0)
                if depth == 1 and tok == ",":
                    args.append([])
                elif depth:
                    args[-1].append(tok)
                j += 1
            if depth or "#" in body:   # an unclosed call, or a body that stringizes or pastes
                out.append(t)
                i += 1
                continue
            named = [p for p in params if p != "..."]
            values = {p: args[k] if k < len(args) else [] for k, p in enumerate(named)}
            extra = args[len(named):]
            values["__VA_ARGS__"] = [tok for k, a in enumerate(extra) for tok in ([","] if k else []) + a]
            if len(out) + sum(len(values.get(b, ())) or 1 for b in body) > budget:
                raise too_large()
            for b in body:
                out.extend(values.get(b, [b]))
            changed, i = True, j
        tokens = out
        if not changed:
            break
    return tokens


def fingerprints(code: str, macros: dict[str, Macro] | None = None) -> dict[int, tuple[str, ...]]:
    """The sampled shingles of comment-free CUDA/C++ ``code`` (:func:`strip_comments`; see
    SHINGLE_TOKENS): hash -> its tokens; with ``macros`` (:func:`defined_macros`), those of the
    code with them expanded as well (:func:`_expand`). The hash is CRC-32 of the tokens, so a
    submission's count, and its verdict, is the same in every run."""
    tokens = _C_TOKEN.findall(code)
    streams = [tokens] + ([_expand(tokens, macros)] if macros else [])
    out: dict[int, tuple[str, ...]] = {}
    for stream in streams:
        for i in range(len(stream) - SHINGLE_TOKENS + 1):
            run = tuple(stream[i:i + SHINGLE_TOKENS])
            h = zlib.crc32("\x1f".join(run).encode())   # not hash(): the same sample in every process
            if h % FINGERPRINT_MOD == 0:
                out[h] = run
    return out


@functools.lru_cache(maxsize=4)
def library_fingerprints(entries: tuple[str, ...], roots: tuple[str, ...]) -> frozenset[int]:
    """The fingerprints (:func:`fingerprints`) of the header files under the include folders
    ``roots`` that the ``forbidden_headers`` ``entries`` name: every file under a folder entry
    ("cub/"), the file a file entry names ("cooperative_groups/reduce.h").

    Computing them reads about 1800 files (1.3 million tokens) for the default entries under CuPy
    14.2's and CUDA 13.0's include folders: 2 s on an idle CPU core, 9 s on a busy 2-core machine
    (CPU machine, 2026-12-01 and 2026-12-02), paid by every grade's process before this cache. So
    they are kept once per process and on disk, in the grader's cache folder
    (``grader.device.cache_dir()``, hidden from every submission's worker like the measured
    ceilings), under a key of the files' paths, sizes and modification times and this module's
    source (a change to the fingerprinting starts a new file), authenticated under $GRADER_SECRET
    when it is set (:func:`_fingerprint_cache_key`). A cache that cannot be read, is not whole or
    does not verify is recomputed; one that cannot be written is skipped."""
    from grader.sandbox.kernel_trace import header_entry_at   # what library_code counts as these headers
    found: dict[tuple[int, int], tuple[str, int, int]] = {}    # (device, inode) -> (path, size, mtime): the roots overlap
    for root in roots:
        for folder, _, names in os.walk(root):
            base = os.path.relpath(folder, root).replace(os.sep, "/")
            for name in names:
                path = os.path.join(folder, name)
                rel = name if base == "." else f"{base}/{name}"
                if any(header_entry_at(rel, e) is not None for e in entries):
                    try:
                        st = os.stat(path)
                    except OSError:
                        continue
                    found.setdefault((st.st_dev, st.st_ino), (path, st.st_size, st.st_mtime_ns))
    files = sorted(found.values())
    key = _fingerprint_cache_key()
    cache = _fingerprint_cache_path(entries, files, key)
    cached = _read_fingerprint_cache(cache, key)
    if cached is not None:
        return cached
    prints: set[int] = set()
    for path, _, _ in files:
        try:
            prints.update(fingerprints(strip_comments(Path(path).read_text(errors="replace"), "x.cu")))
        except OSError:
            continue
    result = frozenset(prints)
    _write_fingerprint_cache(cache, result, key)
    return result


def _fingerprint_cache_key() -> bytes | None:
    """The key the fingerprint cache is authenticated with (HMAC-SHA256): derived from
    ``$GRADER_SECRET`` when it is set (every ``--mode grading`` grade), else None. Code that runs as
    the grader's user outside the sandbox (``--sanitize``, ``--profile``, ``GRADER_ISOLATION=off``)
    can write the cache folder, and an empty set there switched the copied-library check off for
    every later grade (red-team pass 14b); it never sees the secret (tool runs get no GRADER_
    variable), so it cannot write a file a grading run accepts. Without a secret (a student's own
    quick grades) the file is not authenticated: whoever can write it grades only themselves."""
    secret = os.environ.get("GRADER_SECRET", "").strip()
    if not secret:
        return None
    import hashlib
    return hashlib.sha256(b"gpu-kernel-grader library fingerprints\0" + secret.encode()).digest()


def _cache_mac(key: bytes, data: bytes) -> bytes:
    """HMAC-SHA256 of ``data`` under ``key``: the 32 bytes that end an authenticated cache file."""
    import hashlib
    import hmac
    return hmac.new(key, data, hashlib.sha256).digest()


def _fingerprint_cache_path(entries: tuple[str, ...], files: list[tuple[str, int, int]],
                            key: bytes | None = None) -> Path | None:
    """The cache file of the fingerprints of ``files`` (path, size in bytes, modification time in
    ns; see :func:`library_fingerprints`) under the MAC ``key`` (:func:`_fingerprint_cache_key`; each
    key its own file), or None when the grader's cache folder cannot be made."""
    import hashlib
    name = hashlib.sha256(Path(__file__).read_bytes())
    name.update(repr((entries, files)).encode())
    suffix = f"-k{hashlib.sha256(key).hexdigest()[:12]}" if key is not None else ""
    try:
        from grader.device import cache_dir
        return cache_dir() / f"library-fingerprints-{name.hexdigest()[:24]}{suffix}.u32"
    except OSError:
        return None


def _read_fingerprint_cache(path: Path | None, key: bytes | None = None) -> frozenset[int] | None:
    """The fingerprints stored at ``path`` (little-endian uint32s after an 8-byte count; with ``key``,
    then the HMAC-SHA256 of all that), or None when there is no such file, it is not whole, or its
    MAC does not verify."""
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if key is not None:
        import hmac
        data, mac = data[:-32], data[-32:]
        if len(mac) != 32 or not hmac.compare_digest(mac, _cache_mac(key, data)):
            return None
    if len(data) < 8 or int.from_bytes(data[:8], "little") * 4 != len(data) - 8:
        return None
    import array
    values = array.array("I")
    if values.itemsize != 4:
        return None
    values.frombytes(data[8:])
    if sys.byteorder != "little":
        values.byteswap()
    return frozenset(values)


def _write_fingerprint_cache(path: Path | None, prints: frozenset[int], key: bytes | None = None) -> None:
    """Store ``prints`` at ``path`` (with ``key``, followed by their HMAC-SHA256; written whole to a
    temporary file, then renamed); a failure is ignored (the next grade computes them again)."""
    if path is None:
        return
    import array
    values = array.array("I", sorted(prints))
    if values.itemsize != 4:
        return
    if sys.byteorder != "little":
        values.byteswap()
    data = len(values).to_bytes(8, "little") + values.tobytes()
    if key is not None:
        data += _cache_mac(key, data)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _every_text_file(submission: Path) -> list[tuple[Path, str]]:
    """Every regular file under ``submission`` (links are not followed: :func:`folder_problem`
    refuses them, and bounds what this reads) that could be text an ``#include`` reads: any name
    or suffix, hidden folders too (NVRTC includes ``.cccl/x.inl`` as readily as ``kernel.cu``);
    files with a NUL byte in their first 8 KiB are skipped. Returns (path, text) pairs."""
    out = []
    for folder, _, names in os.walk(submission):
        for name in sorted(names):
            path = Path(folder) / name
            try:   # regular files only (a FIFO or a device would never end)
                if not stat.S_ISREG(path.lstat().st_mode):
                    continue
                data = path.read_bytes()
            except OSError:
                continue
            if b"\0" not in data[:8192]:
                out.append((path, data.decode("utf-8", errors="replace")))
    return out


def copied_library_code(spec: Spec, submission: Path) -> str | None:
    """One line when the files under the submission's folder (any name, hidden folders too, taken
    together) share at least LIBRARY_COPY_FINGERPRINTS fingerprints with the headers
    ``[features] forbidden_headers`` names: a copy of such a library in the submission's folder,
    or pasted into kernel.cu, is the library's work, though its ``.loc`` lines name the
    submission's files. Reformatting, comments, renamed files, splitting into many small files and
    macros of its own between the tokens do not hide a copy; renaming its identifiers throughout
    does (tests/known_gaps/README.md). None when nothing is shared that much, or the spec forbids
    no header. The folder must have passed :func:`folder_problem` (:func:`static_check` checks it
    first), which bounds what this reads. Raises :class:`MacroExpansionTooLarge` (naming the file)
    when a file's macros expand past EXPAND_EXTRA_TOKENS."""
    if not spec.forbidden_headers:
        return None
    library = library_fingerprints(tuple(spec.forbidden_headers), include_folders(spec.compile_options))
    files = _every_text_file(submission)
    code = [(path, strip_comments(text, "x.cu")) for path, text in files]
    shared: dict[int, tuple[str, ...]] = {}
    per_file: dict[Path, int] = {}
    macros: dict[str, Macro] = {}
    for _, text in code:   # the submission's own macros, from every file (a copy may define them anywhere)
        macros.update(defined_macros(text))
    for path, text in code:
        try:
            found = fingerprints(text, macros)
        except MacroExpansionTooLarge as exc:
            raise MacroExpansionTooLarge(f"{path.relative_to(submission)}: {exc} (macros of macros); the grader reads "
                                         f"the files as the preprocessor would, to find copied library code, and "
                                         f"cannot here; fix: nest fewer macros") from None
        mine = {h: run for h, run in found.items() if h in library}
        per_file[path] = len(mine)
        shared.update(mine)
    if len(shared) < LIBRARY_COPY_FINGERPRINTS:
        return None
    worst = max(per_file, key=per_file.__getitem__)
    example = " ".join(max(shared.values(), key=lambda run: sum(map(len, run))))
    return (f"{worst.relative_to(submission)}: shares {per_file[worst]} token sequences ({len(shared)} in the "
            f"submission's files together) with the headers of a library this exercise forbids ([features] "
            f"forbidden_headers), e.g. '{example}': a copy of the library is the library's work; fix: write that "
            f"part yourself")


def source_files(submission: Path) -> list[Path]:
    """kernel.cu, solution.py, then every other CUDA source (``CUDA_SOURCE_SUFFIXES``) and Python
    file under ``submission`` (an #include or an import can bring any of them in), except in
    hidden folders (``.ipynb_checkpoints``, ``.git``), then every other file of the folder that
    those CUDA sources ``#include`` (:func:`included_files`: any name or suffix, hidden folders too;
    NVRTC includes ``.vendor/x.inl`` as readily as ``kernel.cu``)."""
    return _source_files(submission)[0]


def _source_files(submission: Path) -> tuple[list[Path], str | None]:
    """:func:`source_files`, and :func:`included_files`' line about a computed include."""
    first = [submission / f for f in SUBMISSION_FILES]
    rest = sorted(f for f in submission.rglob("*") if f.suffix in (*CUDA_SOURCE_SUFFIXES, ".py") and f.is_file()
                  and f not in first and not hidden(f.relative_to(submission)))
    listed = first + rest
    included, computed = included_files(submission, [f for f in listed if f.suffix in CUDA_SOURCE_SUFFIXES
                                                     and f.is_file()])
    return listed + [f for f in included if f not in listed], computed


def cuda_sources(submission: Path) -> list[Path]:
    """The files of ``submission`` that can hold its CUDA code: :func:`source_files` but Python."""
    return [f for f in source_files(submission) if f.suffix != ".py"]


# A preprocessing directive that includes a file: `#` or its digraph `%:`, then include or
# include_next (NVRTC takes both); its operand is "name", <name>, or anything else (a macro: a
# computed include). Read in :func:`strip_comments`' output (backslash-newlines spliced, comments
# removed), as the preprocessor reads it (C++17 [lex.phases] phases 2 and 3).
_INCLUDE = re.compile(r'^[ \t]*(?:#|%:)[ \t]*include(?:_next)?\b[ \t]*(?:"([^"\n]*)"|<([^>\n]*)>|([^\n]*))', re.M)


def included_files(submission: Path, roots: list[Path]) -> tuple[list[Path], str | None]:
    """Every file under ``submission`` that the files ``roots`` ``#include``, directly or through
    each other (any name or suffix, hidden folders too), in the order found; and one line (file,
    line and the fix) for the first computed include (``#include MACRO``), which names no file the
    grader can check, else None. An include is resolved as NVRTC resolves it: next to the file
    that includes it, then in the submission's folder (the worker's include path); a name that
    resolves outside the folder (a CUDA header) or to nothing is skipped. Every include directive
    counts, also one under ``#if 0``: reading too much is safe. :func:`folder_problem` must have
    passed (no links; sizes bounded)."""
    base = submission.resolve()
    found: list[Path] = []
    seen = {f.resolve() for f in roots}
    queue = list(roots)
    computed: str | None = None
    while queue:
        path = queue.pop(0)
        try:
            text = strip_comments(path.read_text(errors="replace"), "x.cu")
        except OSError:
            continue
        for m in _INCLUDE.finditer(text):
            name = m.group(1) if m.group(1) is not None else m.group(2)
            if name is None:
                if computed is None and m.group(3).strip():
                    line = text.count("\n", 0, m.start()) + 1
                    computed = (f"{path.relative_to(submission)}:{line}: #include {m.group(3).strip()} names no file "
                                f"(a computed include): the grader checks every file kernel.cu includes; fix: write "
                                f'the file name, #include "file.cuh"')
                continue
            for folder in (path.parent, submission):
                target = (folder / name).resolve()
                if target.is_file() and target.is_relative_to(base):
                    if target not in seen:
                        seen.add(target)
                        found.append(submission / target.relative_to(base))
                        queue.append(submission / target.relative_to(base))
                    break
    return found, computed


def not_utf8(path: Path) -> str | None:
    """``FILE:LINE: ...`` (one line, with the fix) when ``path`` is not UTF-8 text, which is how
    Python and NVRTC read a submission's files; None when it is."""
    data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return (f"{path.name}:{line}: byte 0x{data[exc.start]:02X} is not UTF-8 text; fix: save {path.name} as "
                f"UTF-8 (or write that character in plain ASCII)")
    return None


def strip_comments(text: str, name: str) -> str:
    """``text`` (the contents of the file ``name``) with comments blanked out, and docstrings in
    Python, keeping line numbers, so a forbidden word in prose is not a hit. CUDA/C++ text is read
    as the compiler reads it (C++17 [lex.phases] phases 2 and 3): backslash-newlines spliced first
    (:func:`splice_lines`), then comments found outside string and character literals, so neither a
    splice inside a token (red-team pass 19: a library copy with a splice in every identifier
    shared no token run with the library) nor a ``//`` in a string hides code from the checks."""
    if name.endswith(".py"):
        return _strip_python_prose(text)

    def blank(m: re.Match) -> str:
        if m.lastgroup == "block":
            return re.sub(r"[^\n]", " ", m.group(0))
        return "" if m.lastgroup == "line" else m.group(0)
    return _C_LEXEME.sub(blank, splice_lines(text))


# String, character and raw string literals (kept as they are) and comments (blanked), leftmost
# first: a comment marker inside a literal is text, and a quote inside a comment is comment.
_C_LEXEME = re.compile(r'''
    (?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^ ()\\\t\v\f\n"]{0,16})\(.*?\)(?P=delim)")
  | (?P<str>"(?:[^"\\\n]|\\.)*"?)
  | (?P<chr>'(?:[^'\\\n]|\\.)*'?)
  | (?P<block>/\*.*?(?:\*/|\Z))
  | (?P<line>//[^\n]*)
''', re.S | re.X)


def splice_lines(text: str) -> str:
    """``text`` with every backslash-newline removed (C++17 [lex.phases] phase 2), and the newlines
    removed from a logical line put back at its end, so every later line keeps its number."""
    if "\\" not in text:
        return text
    lines = text.split("\n")
    out: list[str] = []
    held: list[str] = []
    for i, line in enumerate(lines):
        body = line[:-1] if line.endswith("\r") else line
        if i < len(lines) - 1 and body.endswith("\\"):
            held.append(body[:-1])
            continue
        out.append("".join(held) + line + "\n" * len(held))
        held = []
    return "\n".join(out)


def _strip_python_prose(text: str) -> str:
    import io
    import tokenize
    # the lines exactly as the tokenizer numbers them (split at "\n" only): str.splitlines also
    # splits at \x0b, \x1c, \u2028, ..., which shifted every later comment span onto code and
    # blanked a forbidden call (red-team pass 16)
    lines = io.StringIO(text).readlines()
    try:
        tokens = list(tokenize.generate_tokens(iter(lines).__next__))
    except (tokenize.TokenError, SyntaxError):
        return re.sub(r"#[^\n]*", "", text)
    spans = []
    prev = tokenize.NEWLINE
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            spans.append((tok.start, tok.end))
        elif tok.type == tokenize.STRING and prev in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT):
            spans.append((tok.start, tok.end))  # a string alone on its line: a docstring
        if tok.type not in (tokenize.COMMENT,):
            prev = tok.type
    for (r0, c0), (r1, c1) in reversed(spans):
        for r in range(r0, r1 + 1):
            line = lines[r - 1]
            a = c0 if r == r0 else 0
            b = c1 if r == r1 else len(line.rstrip("\n"))
            lines[r - 1] = line[:a] + " " * (b - a) + line[b:]
    return "".join(lines)


def missing_ptx(spec: Spec, ptx: str, what: str = "kernel.cu: its compiled PTX") -> list[str]:
    """One line per ``[features] required_ptx`` pattern that ``ptx`` (``what``, for the message)
    does not match once its comments and the contents of its strings are removed
    (``grader.ptx.code_text``: inline asm can put any text in a comment or a string, and a
    ``.file`` line names any file, ``mma.sync.cuh`` say); [] when it matches them all."""
    from grader.ptx import code_text
    code = code_text(ptx)
    return [f"{what} has no instruction matching '{p}', which this exercise requires ([features] required_ptx)"
            for p in spec.required_ptx if not re.search(p, code)]


def nvcc_path() -> str | None:
    """nvcc on PATH, or None."""
    return shutil.which("nvcc")


def _nvrtc():  # type: ignore[no-untyped-def]
    from cupy_backends.cuda.libs import nvrtc
    nvrtc.getVersion()  # loads libnvrtc: raises when it is not installed
    return nvrtc


def nvrtc_unavailable() -> str | None:
    """Why NVRTC (CuPy's compiler, the one grading uses) cannot be used here, or None when it can.
    It needs no GPU: only libnvrtc (the ``nvidia-cuda-nvrtc`` wheel, a dependency of the grader)."""
    try:
        _nvrtc()
    except Exception as exc:  # noqa: BLE001 - CuPy missing, libnvrtc missing or broken: all say the same
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"NVRTC cannot be loaded ({first[:160]}; it comes with `pip install nvidia-cuda-nvrtc`)"
    return None


def nvrtc_version() -> str:
    """NVRTC's version as "13.0". Raises when NVRTC cannot be loaded (see nvrtc_unavailable)."""
    major, minor = _nvrtc().getVersion()
    return f"{major}.{minor}"


def supported_arches() -> tuple[int, ...]:
    """Compute capabilities this NVRTC compiles for (e.g. 90 for sm_90); KNOWN_ARCHES without NVRTC."""
    try:
        nvrtc = _nvrtc()
        return tuple(int(a) for a in nvrtc.getSupportedArchs())
    except Exception:  # noqa: BLE001
        return KNOWN_ARCHES


def arch_problem(arch: str) -> str | None:
    """Why ``arch`` (e.g. "sm_90", "sm_90a") is not a target the compiler takes, listing the valid
    values; None when it is."""
    known = supported_arches()
    m = _ARCH.match(arch)
    if m and int(m[1]) in known and (not m[2] or int(m[1]) >= (90 if m[2] == "a" else 100)):
        return None
    listed = ", ".join(f"sm_{a}" for a in known)
    return (f"{arch!r} is not a GPU architecture; valid values: {listed} (with an 'a' suffix for "
            f"architecture-specific features from sm_90 on, e.g. sm_90a)")


CRT_PROBE = Path("crt") / "mma.h"   # CUDA 13's compiler runtime headers; <mma.h> includes it
CRT_ENV = "GRADE_CRT_INCLUDE"       # the parent's crt_include_folder, for its workers' compiles


def grading_options(options: tuple[str, ...] | list[str], arch: str) -> list[str]:
    """The NVRTC options grading compiles kernel.cu with for ``arch``: the exercise's ``options``
    (without an -arch of its own) as CuPy's RawModule assembles them (CuPy's and the CUDA
    toolkit's include folders), the CUDA headers' ``crt/`` folder where those lack it (see
    :func:`crt_include_folder`), the architecture, and what CuPy adds (CUPY_NVRTC_OPTIONS)."""
    opts = _cupy_options(options)
    crt = crt_include_folder(_include_args(opts))
    return [*opts, *([f"-I{crt}"] if crt else []), f"-arch={arch}", *CUPY_NVRTC_OPTIONS]


def _cupy_options(options: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``options`` (without an -arch of their own) as CuPy's RawModule assembles them."""
    opts = tuple(o for o in options if not o.startswith(("-arch", "--gpu-architecture")))
    try:
        from cupy._core.core import assemble_cupy_compiler_options
        return tuple(assemble_cupy_compiler_options(opts))
    except Exception:  # noqa: BLE001 - another CuPy: the exercise's options alone
        return opts


def workers_crt_folder() -> str | None:
    """The crt/ folder this process's compiles add (:func:`crt_include_folder`), which a worker
    gets in CRT_ENV: a worker's sys.path differs from its parent's (no user site-packages, the
    grader's package first), and its compile must read crt/ from the folder the parent counts
    among the include folders, or WMMA's inlined code (crt/mma.hpp) would not be the
    submission's own."""
    return crt_include_folder(_include_args(_cupy_options(())))


def _include_args(opts: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The folders ``-I`` and ``--include-path`` name in ``opts``, in order, resolved."""
    found = []
    for i, o in enumerate(opts):
        for flag in ("-I", "--include-path="):
            if o.startswith(flag):
                found.append(o[len(flag):] or (opts[i + 1] if i + 1 < len(opts) else ""))
        if o == "--include-path" and i + 1 < len(opts):
            found.append(opts[i + 1])
    return tuple(dict.fromkeys(str(Path(f).resolve()) for f in found if f))


@functools.lru_cache(maxsize=8)
def crt_include_folder(folders: tuple[str, ...]) -> str | None:
    """A folder to add after ``folders`` so that ``crt/`` headers resolve, or None when one of
    ``folders`` has them (or no candidate does). CUDA 13 ships the compiler's runtime headers
    (``crt/mma.h``, which ``<mma.h>`` includes) as a component of their own (the
    ``nvidia-cuda-crt`` wheel, conda's ``cuda-crt``); CuPy's pip headers may come without it: on
    the grading H200, 2026-12-01, ``#include <mma.h>`` failed with "cannot open source file
    crt/mma.h", which fails every WMMA submission. Candidates, first found wins:
    ``nvidia/cu13/include`` under every sys.path entry (the wheel installed beside another
    site-packages), then $CUDA_PATH, $CUDA_HOME, nvcc's toolkit and /usr/local/cuda (their
    ``include``). $GRADE_CRT_INCLUDE (CRT_ENV), when it has crt/, comes first: the parent sets it
    for its workers (:func:`workers_crt_folder`)."""
    if any((Path(f) / CRT_PROBE).is_file() for f in folders):
        return None
    given = os.environ.get(CRT_ENV)   # a worker compiles with its parent's choice
    if given and (Path(given) / CRT_PROBE).is_file():
        return str(Path(given).resolve())
    # absolute sys.path entries only: "" or a relative one is the working folder, which may be a
    # student's (python -m, PYTHONPATH=":..."), and differs between the parent and its workers
    candidates = [Path(p) / "nvidia" / "cu13" / "include" for p in sys.path if p and os.path.isabs(p)]
    roots = [os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME")]
    nvcc = nvcc_path()
    roots += [str(Path(nvcc).resolve().parent.parent) if nvcc else None, "/usr/local/cuda"]
    candidates += [Path(r) / "include" for r in roots if r]
    found = next((c for c in candidates if (c / CRT_PROBE).is_file()), None)
    return str(found.resolve()) if found is not None else None


def include_folders(options: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The folders grading's compile searches for ``#include`` (``-I`` and ``--include-path`` of
    :func:`grading_options`: CuPy's and the CUDA toolkit's, and any of the exercise's ``options``),
    resolved. Device code from an absolute path under none of them, nor in the submission, is not
    the submission's own (``grader.sandbox.kernel_trace.library_code``)."""
    return _include_args(grading_options(options, "sm_90"))


def compile_with_nvrtc(source: Path, arch: str, options: tuple[str, ...] = ()) -> tuple[list[str], list[StaticKernel]]:
    """Compile ``source`` for ``arch`` (e.g. "sm_90") with NVRTC as grading does (the exercise's
    ``options`` as CuPy assembles them, see grading_options; named by the file's absolute path, as
    ``grader.kernel`` names it, so ``#include "helper.cuh"`` finds a header beside it), with
    ``-Xptxas -v`` for the per-kernel resources.

    Returns (problems as ``kernel.cu:LINE: error: msg`` lines, kernels). Raises whatever loading
    NVRTC raises when it is not installed (check nvrtc_unavailable first).
    """
    nvrtc = _nvrtc()
    opts = grading_options(options, arch)
    text = source.read_text(encoding="utf-8")
    name = str(source.resolve())
    prog = nvrtc.createProgram(text, name, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, [*opts, "-Xptxas=-v"])
            failed = False
        except nvrtc.NVRTCError:
            failed = True
        log = nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)
    log = (log.decode(errors="replace") if isinstance(log, bytes) else log).replace("\x00", "")
    log = log.replace(name, source.name)
    diags = parse_compiler_log(log, source.name, source.resolve().parent)
    problems = [f"{where}:{ln}: {kind}: {msg}" for where, ln, kind, msg in diags if kind != "warning"]
    if failed and not problems:
        lines = [ln for ln in log.strip().splitlines() if ln.strip()]
        problems = [f"{source.name}: NVRTC failed: {' / '.join(lines[-3:]) if lines else 'no log'}"]
    return problems, ([] if failed else _parse_ptxas(log))


def compile_with_nvcc(source: Path, arch: str, options: tuple[str, ...] = ()) -> tuple[list[str], list[StaticKernel]]:
    """Compile ``source`` to a cubin for ``arch`` (e.g. "sm_90") with ``-Xptxas -v``.

    Returns (problems as ``kernel.cu:LINE: error: msg`` lines, kernels). Raises FileNotFoundError
    when nvcc is not on PATH.
    """
    nvcc = nvcc_path()
    if nvcc is None:
        raise FileNotFoundError("nvcc is not on PATH")
    opts = [o for o in options if not o.startswith(("-arch", "--gpu-architecture"))]
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, f"-arch={arch}", "-cubin", "-Xptxas", "-v", *opts, "-o", str(Path(tmp) / "k.cubin"), str(source)]
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=300)
    log = (proc.stdout + proc.stderr).replace(str(source), source.name)
    diags = parse_compiler_log(log, source.name, source.resolve().parent)
    problems = [f"{where}:{ln}: {kind}: {msg}" for where, ln, kind, msg in diags if kind != "warning"]
    # the host preprocessor reports missing includes gcc-style: kernel.cu:3:10: fatal error: x.h: No such file
    problems += [f"{source.name}:{m[1]}: {m[2]}" for m in re.finditer(r"^\S*?:(\d+):\d+: ((?:fatal )?error: .*)$",
                                                                      log, flags=re.M)]
    if proc.returncode != 0 and not problems:
        lines = [ln for ln in log.strip().splitlines() if ln.strip()]
        problems = [f"{source.name}: nvcc failed: {' / '.join(lines[-3:]) if lines else proc.returncode}"]
    return problems, _parse_ptxas(log)


_PTX_CACHE: dict[tuple[str, str, tuple[str, ...], str], str | None] = {}


def ptx_of(source: Path, options: tuple[str, ...], arch: str) -> str | None:
    """The PTX of ``source`` for ``arch`` (e.g. "sm_90"), with line information (``.file``/``.loc``
    naming absolute paths), compiled with NVRTC as grading does, else
    with nvcc when NVRTC cannot be loaded here; None when neither is available or the source does
    not compile (the compile error is reported elsewhere). With NVRTC it is the PTX of the worker's
    own compile (:func:`grader.kernel.compile_source`), the code grading judges. The last few are
    remembered per source path and text (``grade check`` asks again; the line information names the
    path)."""
    key = (str(source.resolve()), source.read_text(encoding="utf-8", errors="replace"), tuple(options), arch)
    if key not in _PTX_CACHE:
        if len(_PTX_CACHE) >= 8:   # a batch grades many submissions: keep the last few
            _PTX_CACHE.pop(next(iter(_PTX_CACHE)))
        _PTX_CACHE[key] = _compile_ptx(source, options, arch)
    return _PTX_CACHE[key]


def _compile_ptx(source: Path, options: tuple[str, ...], arch: str) -> str | None:
    virtual = "compute_" + arch.removeprefix("sm_")
    opts = [o for o in options if not o.startswith(("-arch", "--gpu-architecture"))]
    if nvrtc_unavailable() is None:   # the worker's own compile (grader.kernel.compile_source): the PTX judged
        from grader.kernel import compile_source
        try:
            return compile_source(source.read_text(encoding="utf-8"), source.resolve(), tuple(options), arch)[1]
        except Exception:  # noqa: BLE001 - the source does not compile
            return None
    nvcc = nvcc_path()
    if nvcc is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "k.ptx"
        proc = subprocess.run([nvcc, f"-arch={virtual}", "-ptx", "-lineinfo", *opts, "-o", str(out), str(source.resolve())],
                              capture_output=True, text=True, errors="replace", timeout=300)
        return out.read_text() if proc.returncode == 0 and out.is_file() else None


def _parse_ptxas(log: str) -> list[StaticKernel]:
    kernels: list[StaticKernel] = []
    name, stack = None, (0, 0, 0)
    for line in log.splitlines():
        m = _PTXAS_FUNC.search(line)
        if m:
            name = m.group(1)
            continue
        m = _PTXAS_PROPS.search(line)
        if m:
            stack = tuple(int(x) for x in m.groups())  # type: ignore[assignment]
            continue
        m = _PTXAS_USED.search(line)
        if m and name:
            smem = int(m.group(2) or 0)
            kernels.append(StaticKernel(name, int(m.group(1)), smem, *stack))
            name, stack = None, (0, 0, 0)
    return kernels


def check_solution_py(path: Path, nargs: int) -> list[str]:
    """Problems with ``solution.py``: syntax, a module it imports that is not installed, no
    ``solve``, or a ``solve`` that cannot take ``nargs`` arguments."""
    import importlib.util
    try:
        tree = ast.parse(path.read_text(errors="replace"), filename=path.name)
    except SyntaxError as exc:   # a NUL byte has no line number
        return [f"solution.py{f':{exc.lineno}' if exc.lineno else ''}: syntax error: {exc.msg}"]
    except (RecursionError, MemoryError, ValueError) as exc:   # e.g. an expression nested too deep for the parser
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return [f"solution.py: Python cannot parse it ({why}); fix: split very long or deeply nested expressions"]
    problems = []
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        for name in names:
            top = name.split(".")[0]
            here = path.parent   # the worker puts the submission folder on sys.path: its own modules import
            try:
                missing = (top not in sys.modules and not (here / f"{top}.py").is_file() and not (here / top).is_dir()
                           and importlib.util.find_spec(top) is None)
            except (ValueError, ImportError):   # a module without a spec (__main__): it is there
                missing = False
            if missing:
                problems.append(f"solution.py:{node.lineno}: imports {name!r}, which is not installed here; fix: "
                                f"use only the course's packages (see pyproject.toml) or put the module in the "
                                f"submission folder")
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "solve":
            a = node.args
            positional = len(a.posonlyargs) + len(a.args)
            required = positional - len(a.defaults)
            if a.vararg is None and positional < nargs or required > nargs:
                problems.append(f"solution.py:{node.lineno}: solve takes {positional} positional "
                                f"argument{'s' if positional != 1 else ''}; the exercise passes {nargs} (inputs then "
                                f"outputs)")
            return problems
    return problems + ["solution.py: defines no function solve(*inputs, *outputs); fix: define solve at the top level "
                       "of solution.py, taking the exercise's inputs then outputs (see the template)"]


def check_kernel_names(kernel: Path, solution: Path) -> list[str]:
    """Problems between kernel.cu and the names solution.py asks for: no kernel at all, kernels
    that are not ``extern "C"`` (get_function cannot find a C++-mangled name), and literal
    ``get_function("name")`` calls for a kernel kernel.cu does not declare."""
    from grader.kernel import kernel_names
    source = kernel.read_text(errors="replace")
    declared = kernel_names(source)
    if not declared:
        return ["kernel.cu: declares no __global__ kernel"]
    problems = []
    if 'extern "C"' not in source:
        problems.append('kernel.cu: its kernels are not declared extern "C", so get_function cannot find them by '
                        'name; fix: write extern "C" __global__ void ...')
    text = solution.read_text(errors="replace")
    for m in re.finditer(r"get_function\(\s*[\"'](\w+)[\"']\s*\)", text):
        if m.group(1) not in declared:
            line = text[:m.start()].count("\n") + 1
            problems.append(f"solution.py:{line}: get_function({m.group(1)!r}) but kernel.cu declares "
                            f"{', '.join(declared)}")
    return problems


def static_report(spec: Spec, submission: Path, arch: str = "sm_90") -> StaticReport:
    """Everything that can be checked without a GPU; see the module docstring. kernel.cu is
    compiled with NVRTC (as grading does), else with nvcc and a warning that the two differ, else
    not at all: then ``compiler`` is None and ``skipped`` says that kernel.cu was NOT compiled.
    It is compiled for ``arch``, except where the spec's ``[features] arch`` pins an exact target
    ("sm_90a"): then for that one, as grading compiles it (``grader.kernel.target_arch``)."""
    arch = spec.arch if spec.arch and spec.arch.endswith("a") else arch

    problems, kernels, skipped, warnings = [], [], [], []
    bad = static_check(spec, submission)
    if bad and bad[0] == "bad_submission":
        return StaticReport((bad[1],), (), (f"everything else: {submission} could not be read as a submission",), arch,
                            unreadable=True)
    if bad:
        problems.append(bad[1])
    problems += check_solution_py(submission / "solution.py", len(spec.arg_order))
    problems += check_kernel_names(submission / "kernel.cu", submission / "solution.py")
    compiler: str | None = None
    errs: list[str] = []
    why_not = nvrtc_unavailable()
    if why_not is None:
        errs, kernels = compile_with_nvrtc(submission / "kernel.cu", arch, spec.compile_options)
        problems += errs
        compiler = f"NVRTC {nvrtc_version()}"
    elif nvcc_path() is not None:
        errs, kernels = compile_with_nvcc(submission / "kernel.cu", arch, spec.compile_options)
        problems += errs
        compiler = "nvcc"
        warnings.append(f"kernel.cu was compiled with nvcc, not with NVRTC, the compiler grading uses ({why_not}): "
                        "what nvcc accepts can still fail to compile when graded (NVRTC has no host headers such "
                        "as <vector>)")
    else:
        skipped.append(f"compiling kernel.cu: it was NOT compiled ({why_not}; nvcc is not on PATH either)")
    ptx = ptx_of(submission / "kernel.cu", spec.compile_options, arch) if compiler is not None and not errs else None
    if compiler is not None and not errs:
        from grader.ptx import parse as parse_ptx
        from grader.sandbox.kernel_trace import indirect_text, library_code, library_text, unreadable_message
        module = parse_ptx(ptx or "")
        problems += [f"kernel.cu: {unreadable_message(module.unreadable)}"] if module.unreadable else []
        indirect = tuple(sorted(e for e in module.entries if module.calls_indirectly(e)))
        problems += [f"kernel.cu: {indirect_text(indirect)}"] if indirect else []
        problems += [f"kernel.cu: kernel {library_text(entry, header)}" for entry, header in
                     library_code(module, spec.forbidden_headers, submission, include_folders(spec.compile_options)).items()]
    if spec.required_ptx and not problems and ptx is not None:
        warnings += [f"{line}: it would score no performance points" for line in missing_ptx(spec, ptx)]
    skipped.append("running the kernel (correctness and timing need a GPU)")
    return StaticReport(tuple(problems), tuple(kernels), tuple(skipped), arch, tuple(warnings), compiler, len(errs))


def first_problem(rep: StaticReport) -> str | None:
    """A report's problems as one line: the first, and how many more (None: no problem)."""
    if not rep.problems:
        return None
    more = f" (and {len(rep.problems) - 1} more)" if len(rep.problems) > 1 else ""
    return rep.problems[0] + more


def without_gpu(spec: Spec, submission: Path, arch: str = "sm_90") -> tuple[str | None, StaticReport]:
    """What a grade can still find on a machine without a GPU (``grade batch`` and ``grade EXERCISE``
    there): the static report that ``--compile-only`` prints, and its problems as one line (None
    when it found none: then only a GPU can tell)."""
    rep = static_report(spec, submission, arch)
    return first_problem(rep), rep
