"""Turn the calibration.json that benchmarks/gpu_check.py leaves in its archive into
calibration/<arch>.toml (merging with the exercises already there).

    python3 benchmarks/write_calibration.py path/to/calibration.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.calibration import calibration_path, write_calibration  # noqa: E402


def main(path: str) -> None:
    data = json.loads(Path(path).read_text())
    target = calibration_path(ROOT, data["meta"]["arch"])
    write_calibration(target, data["meta"], data["entries"])
    print(f"wrote {target}")


if __name__ == "__main__":
    main(sys.argv[1])
