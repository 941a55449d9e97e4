"""Text a report may carry: what a submission wrote reaches the reports (its exception messages and
tracebacks, its output in a crashed worker's log tail, a forged reply's message or kernel names,
names of its files in the grader's messages), and none of it may act on the reader's terminal or
break a report format.

:func:`printable` writes every character that is not plain text as a visible escape: control
characters other than newline and tab (an ANSI escape sequence could clear the screen or rewrite
the score line above it; a carriage return overwrites a line; most are not allowed in XML 1.0, so a
JUnit file holding one does not parse), lone surrogates (a JSON reply can carry "\\ud800", which no
UTF-8 file or terminal can encode: the report crashed the grade after it was graded and left a
0-byte ``--output`` file) and the bidirectional and line-separator formatting characters (text
shown in another order than it is stored). :func:`clean` applies it to every string of a result.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                     "\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every unsafe character (see the module docstring) written as ``\\xNN`` or
    ``\\uNNNN``; the same object when it has none."""
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


def clean(obj: Any) -> Any:
    """``obj`` with :func:`printable` applied to every string in it, through dataclasses (a copy
    with the changed fields), dicts (keys too), lists and tuples; the same object when nothing in it
    changes."""
    if isinstance(obj, str):
        return printable(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changed = {}
        for f in dataclasses.fields(obj):
            if not f.init:
                continue
            value = getattr(obj, f.name)
            new = clean(value)
            if new is not value:
                changed[f.name] = new
        return dataclasses.replace(obj, **changed) if changed else obj
    if isinstance(obj, dict):
        items = [(clean(k), clean(v)) for k, v in obj.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, obj.items())):
            return obj
        return type(obj)(items) if type(obj) is dict else dict(items)
    if isinstance(obj, (list, tuple)):
        items = [clean(x) for x in obj]
        if all(a is b for a, b in zip(items, obj)):
            return obj
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):   # a named tuple
            return type(obj)(*items)
        return type(obj)(items)
    return obj
