"""What of a reference solution shows elsewhere: the solution's lines that its stub does not have
(to look for in everything published), and whether a stub is the solution itself, exactly or in
most of its lines (a reference copied over the stub).

Lines are compared normalised (whitespace collapsed). Blank, brace-only and very short lines are
ignored; comments are not: a solution's comment can give the answer away as well as its code.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

TRIVIAL = re.compile(r"^[\s{}()\[\];,:.]*$")
MIN_LINE_CHARS = 8
SOLUTION_FILES = ("kernel.cu", "solution.py")
STUB_SHARE_LIMIT = 0.5  # a stub with at least this share of the solution's lines is the solution


@dataclass(frozen=True)
class StubMatch:
    """A stub that is (mostly) its reference solution: ``file`` and ``line`` (1-based) of the
    first solution line in the stub, and how many of the solution's ``total`` lines it has."""
    file: str
    line: int
    shared: int
    total: int
    identical: bool

    def describe(self, where: str) -> str:
        """One line, ``where`` being the stub folder as the reader knows it."""
        what = ("is a copy of the reference solution" if self.identical else
                f"has {self.shared} of the {self.total} non-trivial lines of the reference solution")
        return f"{where}/{self.file}:{self.line}: the stub {what}; fix: restore the stub (students would get the answer)"


def normal(line: str) -> str | None:
    """The line with whitespace collapsed, or None when it is too trivial to give anything away."""
    s = " ".join(line.split())
    if not s or TRIVIAL.match(s) or len(s.replace(" ", "")) < MIN_LINE_CHARS:
        return None
    return s


def _lines(path: Path) -> list[str | None]:
    return [normal(x) for x in path.read_text(errors="replace").splitlines()] if path.is_file() else []


def solution_only_lines(solution: Path, stub: Path, label: str) -> dict[str, str]:
    """Normalised lines of the solution folder's files that the stub's matching file does not have,
    each mapped to where it is (``label/FILE:LINE``)."""
    leaks: dict[str, str] = {}
    for name in SOLUTION_FILES:
        stub_lines = set(_lines(stub / name))
        for i, n in enumerate(_lines(solution / name), 1):
            if n and n not in stub_lines:
                leaks.setdefault(n, f"{label}/{name}:{i}")
    return leaks


def stub_matches_solution(solution: Path, stub: Path, limit: float = STUB_SHARE_LIMIT) -> StubMatch | None:
    """A StubMatch when the stub folder is the solution: every file identical, or at least
    ``limit`` of the solution's non-trivial lines (kernel.cu and solution.py together) in the
    stub's matching files; None otherwise (or when either folder is missing)."""
    pairs = [(solution / n, stub / n) for n in SOLUTION_FILES if (solution / n).is_file() and (stub / n).is_file()]
    if not pairs:
        return None
    identical = all(s.read_bytes() == t.read_bytes() for s, t in pairs)
    total = shared = 0
    first: tuple[str, int] | None = None
    for sol, st in pairs:
        sol_lines = {n for n in _lines(sol) if n}
        stub_lines = _lines(st)
        total += len(sol_lines)
        shared += len(sol_lines & set(stub_lines))
        if first is None:
            hit = next((i for i, n in enumerate(stub_lines, 1) if n in sol_lines), None)
            if hit is not None:
                first = (st.name, hit)
    if not identical and (total == 0 or shared < limit * total):
        return None
    file, line = first or (pairs[0][1].name, 1)
    return StubMatch(file, line, shared, total, identical)
