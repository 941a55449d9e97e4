"""What a grade runs on, assembled in one place: the buffer backend, the GPU, its measured ceilings
and the calibration of its architecture (:class:`GradingContext`). The CLI's commands, the negative
controls and the tests build one and grade through it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grader.calibration import Calibration, load_calibration, load_calibration_file

if TYPE_CHECKING:
    from grader.device import Ceilings, DeviceInfo
    from grader.grade import GradeOptions, GradeResult, Progress
    from grader.sandbox.buffers import Backend
    from grader.spec import Spec

NO_CALIBRATION = Calibration(None, {}, {})


@dataclass(frozen=True)
class GradingContext:
    """The backend ("cuda" or "host"), the GPU (None on the host backend) and the calibration
    (reference times in ms per exercise and shape; empty without one). The roofline ceilings are
    measured per kind (grader.device.ceilings caches them) when a spec asks for them."""
    backend: Backend
    device: DeviceInfo | None
    calibration: Calibration

    @classmethod
    def host(cls) -> GradingContext:
        """NumPy submissions on the CPU, without a GPU or a calibration (the grader's own tests,
        the negative controls)."""
        from grader.sandbox.buffers import HostBackend
        return cls(HostBackend(), None, NO_CALIBRATION)

    @classmethod
    def on(cls, info: DeviceInfo | None, root: Path, reference_times: Path | None = None) -> GradingContext:
        """The CUDA backend on GPU ``info`` (the host backend when None). The calibration is
        ``reference_times`` (a calibration file) when given, else ``root``'s
        calibration/<arch>.toml (empty when there is none, or without a GPU). Raises ValueError for
        a malformed calibration file."""
        from grader.sandbox.buffers import CudaBackend, HostBackend
        calibration = (load_calibration_file(reference_times) if reference_times is not None
                       else load_calibration(root, info.arch if info is not None else None))
        return cls(CudaBackend() if info is not None else HostBackend(), info, calibration)

    def ceilings(self, spec: Spec) -> Ceilings | None:
        """The measured ceilings ``spec``'s roofline needs (None without a GPU)."""
        from grader import device as dev
        return dev.ceilings(self.device, {spec.ceiling}) if self.device is not None else None

    def grade(self, spec: Spec, submission: Path, options: GradeOptions, progress: Progress | None = None,
              repro_options: str = "") -> GradeResult:
        """grader.grade.grade in this context (same arguments, same errors)."""
        from grader.grade import grade
        return grade(spec, submission, options, self.backend, self.device, self.ceilings(spec), self.calibration,
                     progress, repro_options)
