"""Kernel timing for the verify_exNN.py scripts: the median of CUDA-event times, for CuPy work and
for torch work (the baselines), each with a few untimed calls first.

Not the grader's protocol (grader.timing: fresh buffers, an L2 flush per round, a wall-clock
bound): these time the same buffers again and again, which is what a side-by-side comparison with
a library call on those buffers needs.
"""
from __future__ import annotations

from typing import Any, Callable

import cupy as cp
import numpy as np


def median_ms(fn: Callable[[], Any], reps: int = 20, warmup: int = 3) -> float:
    """Median ms of ``fn`` (CuPy work on the current stream) over ``reps`` calls, each between two
    CUDA events (grader.device.median_event_ms)."""
    from grader.device import median_event_ms
    return median_event_ms(fn, reps, warmup)


def median_torch_ms(fn: Callable[[], Any], reps: int = 20, warmup: int = 3) -> float:
    """Median ms of ``fn`` (torch work) by torch's own CUDA events on torch's current stream, with
    both libraries' queues drained before and after, so no baseline work runs into the next timing."""
    import torch
    cp.cuda.Device().synchronize()
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        ts.append(start.elapsed_time(end))
    torch.cuda.synchronize()
    return float(np.median(ts))
