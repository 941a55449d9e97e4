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


def test_the_fp8_ceiling_is_twice_the_measured_fp16_rate_and_only_for_an_fp8_exercise(measured, monkeypatch) -> None:
    """CuPy has no FP8 product: an fp8 exercise measures the fp16 rate and is scored against
    FP8_PER_FP16 (2, Hopper's dense FP8 / FP16 rate) times it; other exercises carry no fp8 rate."""
    calls, _ = measured
    monkeypatch.setattr(device, "foreign_gpu_processes", lambda index=0: [])
    fp8 = device.ceilings(INFO, {"fp8"})
    assert calls == ["copy", "float16"]
    assert fp8.fp8_tflops == 1400.0 == fp8.for_kind("fp8") and fp8.fp16_tflops == 700.0
    assert device.ceilings(INFO, {"fp16"}).fp8_tflops is None and calls == ["copy", "float16"]   # cached
    assert "fp8_tflops" not in (device.cache_dir() / next(p.name for p in device.cache_dir().glob("ceilings-*"))).read_text()


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


# -- the GPU's timing lock: two grades on one machine never time at once -----------------------------------
HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_gpu_lock_waits_for_another_process_and_says_so(monkeypatch, tmp_path) -> None:
    import subprocess
    import sys
    import time
    lock = tmp_path / "gpu-0000_00_00.0.lock"
    monkeypatch.setattr(device, "gpu_lock_path", lambda index=0: lock)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(lock), "1.5"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        waits: list[str] = []
        t0 = time.monotonic()
        with device.gpu_lock(0, waits.append):
            waited = time.monotonic() - t0   # entered only once the holder let go (it holds 1.5 s)
            with device.gpu_lock(0, waits.append):   # re-entrant in one process: no self-deadlock
                pass
        assert waits == [str(lock)] and waited >= 1.0
        with device.gpu_lock(0, waits.append):   # free now: no wait reported
            pass
        assert waits == [str(lock)]
    finally:
        holder.kill()
        holder.wait()


def test_gpu_lock_without_a_device_runs_unlocked(monkeypatch) -> None:
    def no_device(index=0):
        raise RuntimeError("cudaErrorNoDevice")
    monkeypatch.setattr(device, "gpu_lock_path", no_device)
    ran = []
    with device.gpu_lock(0, lambda path: ran.append("waited")):
        ran.append("body")
    assert ran == ["body"]
