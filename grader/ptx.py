"""What a module's PTX says about its code: its functions (``.entry`` kernels and ``.func`` device
functions), the source files each one's instructions come from (``.file``/``.loc`` line
information, compiled with ``-lineinfo``), and which functions each kernel can reach through
calls. The own-kernels check (``grader.sandbox.kernel_trace``), ``[features] forbidden_headers``
and ``required_ptx`` read PTX only through here.

PTX is parsed as the assembler reads it: comments are removed first (a submission's inline
``asm`` is copied into the PTX verbatim, so a comment there could hold lines that look like
``.entry`` or ``.loc`` directives); a string literal other than those the compiler writes (a
``.file`` path, a pragma like "nounroll") makes the module unreadable (``Module.unreadable``:
asm strings may span lines and hide comment markers), and a function's line information and calls include those of
every function it can call, so code moved into a ``__noinline__`` device function still counts
for the kernel that runs it. An indirect call (a function pointer) can reach any function of the
module, and beyond it code of another module (``Module.calls_indirectly``: the own-kernels check
refuses such kernels). Reference: PTX ISA, "Debugging Directives" (.file, .loc) and "Function declarations and
definitions" (.entry, .func, call).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_COMMENT_OR_STRING = re.compile(r'"[^"\n]*"|/\*.*?\*/|//[^\n]*', re.S)
_STRING = re.compile(r'"[^"\n]*"')
# the only string literals the compiler writes: .file paths and pragmas such as "nounroll" or
# "used_bytes_mask 4095"; any other comes from inline asm, whose strings can span lines and hide
# directives from a reader that does not tokenize as ptxas does
_COMPILER_STRINGS = re.compile(r'^[ \t]*(?:\.file\s+\d+\s+"[^"\n]*"(?:\s*,\s*\d+\s*,\s*\d+)?|\.pragma\s+"[\w ]*"\s*;)[ \t]*$',
                               re.M)
_FUNCTION = re.compile(r"^[ \t]*(?:\.(?:visible|weak|extern)\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)", re.M)
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', re.M)
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s", re.M)
_CALL = re.compile(r"\bcall(?:\.uni)?(?![\w$.])\s*(?:\([^)]*\)\s*,\s*)?(%?[\w$]+)")   # ptxas needs no space


@dataclass(frozen=True)
class Function:
    """One function of a PTX module: ``kind`` "entry" (a kernel) or "func"; ``files``: the
    ``.file`` indices of its own ``.loc`` lines; ``calls``: the functions it calls by name;
    ``indirect``: it calls through a pointer; ``code``: its text (comments removed)."""
    name: str
    kind: str
    files: frozenset[str]
    calls: frozenset[str]
    indirect: bool
    code: str


@dataclass(frozen=True)
class Module:
    """A PTX module: its ``functions`` by name and its ``files`` (``.file`` index -> path);
    ``unreadable``: the first line that holds a string literal the compiler does not write (inline
    asm such as ``.pragma "..."``), "" when there is none. Such a module cannot be read reliably
    (its strings may span lines and hold comment markers), so its judges refuse it."""
    functions: dict[str, Function]
    files: dict[str, str]
    unreadable: str = ""

    @property
    def entries(self) -> set[str]:
        """The names of its kernels (``.entry``)."""
        return {n for n, f in self.functions.items() if f.kind == "entry"}

    def reachable(self, roots: set[str] | frozenset[str]) -> set[str]:
        """``roots`` and every function they can reach through calls (all of the module's
        functions once one of them calls through a pointer)."""
        seen, todo = set(), [r for r in roots if r in self.functions]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            f = self.functions[name]
            if f.indirect:
                return seen | set(self.functions)
            todo += [c for c in f.calls if c in self.functions and c not in seen]
        return seen

    def calls_indirectly(self, entry: str) -> bool:
        """Whether ``entry`` or a function it reaches calls through a pointer (a function pointer or
        a virtual function: PTX ``call`` with a register operand)."""
        return any(self.functions[n].indirect for n in self.reachable({entry}))

    def files_of(self, entry: str) -> set[str]:
        """The paths (``.file``) of every line of code ``entry`` can run: its own and those of the
        functions it reaches."""
        return {self.files[i] for n in self.reachable({entry}) for i in self.functions[n].files if i in self.files}

    def code_of(self, roots: set[str] | frozenset[str]) -> str:
        """The text (comments removed) of ``roots`` and every function they reach."""
        return "\n".join(self.functions[n].code for n in sorted(self.reachable(roots)))


def strip_comments(ptx: str) -> str:
    """``ptx`` without its comments (``//`` to the end of the line, ``/* ... */`` kept as its
    newlines); string literals (``.file`` paths) are left alone."""
    def blank(m: re.Match) -> str:
        text = m.group(0)
        return text if text.startswith('"') else "\n" * text.count("\n")
    return _COMMENT_OR_STRING.sub(blank, ptx)


def code_text(ptx: str) -> str:
    """``ptx`` without comments or the contents of its string literals (``.file`` paths, inline
    asm's strings): the text to search for instructions, which a file named ``mma.sync.cuh`` or a
    ``.pragma "mma.sync"`` must not satisfy."""
    return _STRING.sub('""', strip_comments(ptx))


def parse(ptx: str) -> Module:
    """The :class:`Module` of a PTX text. A function declared before it is defined is one
    function (the declaration adds nothing)."""
    allowed = _COMPILER_STRINGS.sub("", ptx)
    odd = next((line.strip() for line in allowed.splitlines() if '"' in line), "")
    text = code_text(ptx)
    starts = list(_FUNCTION.finditer(text))
    functions: dict[str, Function] = {}
    for m, end in zip(starts, [s.start() for s in starts[1:]] + [len(text)]):
        kind, name = m.group(1), m.group(2)
        body = text[m.start():end]
        callees = [c for c in _CALL.findall(body)]
        f = Function(name, kind, frozenset(_LOC.findall(body)), frozenset(c for c in callees if not c.startswith("%")),
                     any(c.startswith("%") for c in callees), body)
        old = functions.get(name)
        if old is not None:
            f = Function(name, kind if kind == "entry" else old.kind, old.files | f.files, old.calls | f.calls,
                         old.indirect or f.indirect, old.code + f.code)
        functions[name] = f
    files: dict[str, str] = {}
    for index, path in _FILE.findall(strip_comments(ptx)):
        if files.setdefault(index, path) != path:   # an index given twice: which lines are whose?
            odd = odd or f'.file {index} "{path}" (index {index} named twice)'
    return Module(functions, files, odd[:160])


def under(path: str, folder: Path) -> bool:
    """Whether a ``.file`` path lies inside ``folder`` (an absolute path, resolved)."""
    p = Path(path)
    return p.is_absolute() and p.resolve().is_relative_to(folder.resolve())
