"""Fixtures that are a reference solution with one named change, built at test time.

A fixture that differs from ``solutions/<exercise>/`` in a line or two is kept here as that change,
not as a copy of the solution: a copy drifts from the solution it claims to vary (issue 18). Each
:class:`Variant` names the exercise, the file, the exact text it replaces (which must occur once)
and what replaces it; :func:`build` copies the reference solution's folder and applies it.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Variant:
    """``solutions/<exercise>/`` with ``old`` replaced by ``new`` in ``file``; ``why``: what the
    change does and what the grader must make of it."""
    exercise: str
    file: str
    old: str
    new: str
    why: str


VARIANTS = {
    "ex16_paged_decode_attention_no_split": Variant(
        "ex16_paged_decode_attention", "solution.py",
        "_P_MIN = 32 ", "_P_MIN = 1 << 20  # FIXTURE no_split: never split (the reference: 32) ",
        "one CTA per (sequence, KV head), no split-K: correct, but batch 1 at 131072 tokens keeps 8 of "
        "132 SMs busy: clearly fewer performance points"),
    "ex16_paged_decode_attention_reads_past_context": Variant(
        "ex16_paged_decode_attention", "kernel.cu",
        "cp_async16(smem_addr(sv + t * PD_ROW + col), vc + off, t < ntok);",
        "cp_async16(smem_addr(sv + t * PD_ROW + col), vc + off, true);   // FIXTURE: V past the context loaded",
        "V rows past the context are loaded (their scores are still masked, p = 0): right on finite data, "
        "NaN (0 * NaN) where the grader poisons the slots no sequence reads: fails correctness"),
}


def build(name: str, dest: Path) -> Path:
    """Write variant ``name`` into the folder ``dest`` (created; must not exist) and return it.

    Raises:
        KeyError: no such variant. AssertionError: its ``old`` text does not occur exactly once in
        the reference's file (the reference changed: update the variant).
    """
    v = VARIANTS[name]
    shutil.copytree(ROOT / "solutions" / v.exercise, dest, ignore=shutil.ignore_patterns("__pycache__"))
    path = dest / v.file
    text = path.read_text()
    assert text.count(v.old) == 1, f"{name}: {v.old!r} occurs {text.count(v.old)} times in solutions/{v.exercise}/{v.file}"
    path.write_text(text.replace(v.old, v.new))
    return dest
