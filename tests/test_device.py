"""The device's measured ceilings and their cache (no GPU: the measurements are stand-ins)."""
from __future__ import annotations

import pytest

from grader import device
from grader.device import DeviceInfo

INFO = DeviceInfo(index=0, name="NVIDIA H200", arch="sm_90", sm_count=132, l2_bytes=60 << 20, memory_bytes=141 << 30,
                  driver=13000, runtime=13020, cupy="14.2.0")


@pytest.fixture
def measured(monkeypatch, tmp_path):
    """Stand-in measurements that count their calls; the cache in a temporary folder."""
    monkeypatch.setenv("GRADER_CACHE_DIR", str(tmp_path))
    calls: list[str] = []
    rates = {"copy": 4000.0, "float32": 50.0, "float16": 700.0}
    monkeypatch.setattr(device, "measure_copy_gbps", lambda: calls.append("copy") or rates["copy"])
    monkeypatch.setattr(device, "measure_matmul_tflops", lambda dtype: calls.append(dtype) or rates[dtype])
    return calls, rates


def test_ceilings_measured_on_a_quiet_gpu_are_cached(measured, monkeypatch) -> None:
    calls, _ = measured
    monkeypatch.setattr(device, "foreign_gpu_processes", lambda index=0: [])
    first = device.ceilings(INFO, {"fp32"})
    assert (first.copy_gbps, first.fp32_tflops, first.fp16_tflops) == (4000.0, 50.0, None)
    again = device.ceilings(INFO, {"fp32", "fp16"})   # only the missing fp16 rate is measured
    assert calls == ["copy", "float32", "float16"] and again.fp16_tflops == 700.0 and again.fp32_tflops == 50.0


def test_ceilings_measured_while_another_process_uses_the_gpu_are_not_cached(measured, monkeypatch) -> None:
    calls, rates = measured
    busy = ["4242 python3"]
    monkeypatch.setattr(device, "foreign_gpu_processes", lambda index=0: busy)
    rates["float32"] = 20.0   # what a shared GPU measures
    assert device.ceilings(INFO, {"fp32"}).fp32_tflops == 20.0   # this run uses what it measured
    busy.clear()
    rates["float32"] = 50.0
    assert device.ceilings(INFO, {"fp32"}).fp32_tflops == 50.0   # the next run measures again, and caches
    assert device.ceilings(INFO, {"fp32"}).fp32_tflops == 50.0
    assert calls == ["copy", "float32", "copy", "float32"]
