"""Reference timings per arch: ``calibration/<arch>.toml``.

Layout::

    [meta]
    arch = "sm_90"
    device = "NVIDIA H200"
    driver = 13000
    runtime = 13000
    cupy = "14.2.0"
    date = "2026-11-30"

    [ex07_softmax."4096x4096"]
    median_ms = 0.0712
    iqr_ms = 0.0004
    samples = 120

Used when the reference solution is not available to time side by side (a student's bundle).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping



@dataclass(frozen=True)
class Calibration:
    """Calibrated reference medians (ms) by (exercise, shape name), with the file they came from."""
    path: Path | None
    meta: Mapping[str, Any]
    times: Mapping[tuple[str, str], float]

    def median_ms(self, exercise: str, shape: str) -> float | None:
        return self.times.get((exercise, shape))


def calibration_path(root: Path, arch: str) -> Path:
    return root / "calibration" / f"{arch}.toml"


def load_calibration(root: Path, arch: str | None) -> Calibration:
    """The calibration for ``arch``; empty when there is no file.

    Raises:
        ValueError: one line naming the file and the problem when the file is malformed.
    """
    if not arch:
        return Calibration(None, {}, {})
    return load_calibration_file(calibration_path(root, arch))


def load_calibration_file(path: Path) -> Calibration:
    """Reference times from one file in the calibration format; empty when it does not exist.

    Raises:
        ValueError: one line naming the file and the problem when the file is malformed.
    """
    if not path.is_file():
        return Calibration(None, {}, {})
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML ({exc}); fix: re-run `grade calibrate` or correct the file") from None
    times = {}
    for ex, shapes in raw.items():
        if ex == "meta" or not isinstance(shapes, dict):
            continue
        for shape, entry in shapes.items():
            ms = entry.get("median_ms") if isinstance(entry, dict) else None
            if not isinstance(ms, (int, float)) or ms <= 0:
                raise ValueError(f"{path}: [{ex}.\"{shape}\"] median_ms must be a positive number; "
                                 "fix: re-run `grade calibrate`")
            times[(ex, shape)] = float(ms)
    return Calibration(path, raw.get("meta", {}), times)


def write_calibration(path: Path, meta: Mapping[str, Any], entries: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> None:
    """Merge ``entries`` ({exercise: {shape: {median_ms, iqr_ms, samples}}}) into ``path``, replacing
    the listed exercises and keeping the others; ``meta`` replaces the file's [meta]."""
    import tomli_w

    data: dict[str, Any] = {}
    if path.is_file():
        data = tomllib.loads(path.read_text())
    data["meta"] = dict(meta)
    for ex, shapes in entries.items():
        data[ex] = {name: dict(v) for name, v in shapes.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomli_w.dumps(data))
