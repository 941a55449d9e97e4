"""Grade every cheat of tests/cheats/ and print a markdown table: cheat, what it tries, what caught
it (the first line of the result that names the detection), points, and whether the expectation in
its cheat.toml held. Host cheats always; cuda cheats only where a GPU is available.

    PYTHONPATH=. python3 benchmarks/cheat_table.py [--backend host|cuda|all]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_cheats import (FOLDERS, GPU_POLICY, GPU_PROFILE, check_expectation, cheat_id,  # noqa: E402
                               exercise_dirs, grade_host, meta, result_text)


def caught_by(text: str, needle: str) -> str:
    line = next((ln for ln in text.splitlines() if needle in ln), "")
    return (line[:110] + "...") if len(line) > 110 else line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=("host", "cuda", "all"), default="all")
    args = ap.parse_args()
    from grader.device import unavailable_reason
    gpu = unavailable_reason() is None
    print("| cheat | tries | caught by | points | as expected |\n|---|---|---|---|---|")
    for folder in FOLDERS:
        m = meta(folder)
        if args.backend != "all" and m["backend"] != args.backend or m["backend"] == "cuda" and not gpu:
            continue
        ex, ref = exercise_dirs(m)
        if m["backend"] == "host":
            r, _ = grade_host(folder, ex / "spec.toml", ref)
        else:
            from grader.spec import load_spec
            from tests.conftest import grade_folder
            import tempfile
            from tests.conftest import cheat_submission
            with tempfile.TemporaryDirectory() as tmp:
                r = grade_folder(load_spec(ex / "spec.toml"), cheat_submission(folder, Path(tmp)),
                                 reference=ref if ref.is_dir() else None, profile=GPU_PROFILE, policy=GPU_POLICY)
        try:
            check_expectation(r, m)
            ok = "yes"
        except AssertionError:
            ok = "NO"
        text = result_text(r)
        print(f"| {cheat_id(folder)} | {m['tries']} | {caught_by(text, m['detected_by'].lower())} | "
              f"{r.score.total:g}/{r.score.correctness_max + r.score.performance_max:g} | {ok} |", flush=True)


if __name__ == "__main__":
    main()
