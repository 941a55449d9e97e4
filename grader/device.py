"""GPU detection, the arch key (``sm_90``), measured ceilings and the SM clock.

Nothing here raises when there is no GPU: :func:`detect` returns None and :func:`unavailable_reason`
says why in one line. Ceilings are measured on the device (not taken from datasheets) and cached per
device and driver in ``~/.cache/gpu-kernel-grader/`` (``GRADER_CACHE_DIR`` overrides).
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator


@dataclass(frozen=True)
class DeviceInfo:
    """The GPU grading runs on. ``arch`` is the compute-capability key, e.g. "sm_90"; l2_bytes and
    memory_bytes in bytes; ``driver`` and ``runtime`` are CUDA versions as integers (13000 = 13.0)."""
    index: int
    name: str
    arch: str
    sm_count: int
    l2_bytes: int
    memory_bytes: int
    driver: int
    runtime: int
    cupy: str


# Hopper's dense FP8 tensor-core rate is twice its FP16/BF16 rate (NVIDIA H100 and H200 datasheets:
# 1,979 vs 989 TFLOP/s dense, SXM). A bound, not a library's speed: torch._scaled_mm per-tensor FP8
# reached 1228-1342 TFLOP/s at 8192^3 on the H200 (benchmarks/RESULTS.md, 2026-12-03)
# where cuBLAS fp16 reached 748-839, 1.6x rather than 2x.
FP8_PER_FP16 = 2.0


@dataclass(frozen=True)
class Ceilings:
    """Measured ceilings: device-to-device copy bandwidth (GB/s, bytes read + written) and, when an
    exercise needs them, dense matrix-product rates through cuBLAS (TFLOP/s). ``fp8_tflops``, for an
    exercise scored against it only, is not measured (CuPy has no FP8 product): it is
    :data:`FP8_PER_FP16` times the measured fp16 rate."""
    copy_gbps: float
    fp32_tflops: float | None = None
    fp16_tflops: float | None = None
    fp8_tflops: float | None = None
    measured: str = ""

    def for_kind(self, kind: str) -> float | None:
        """Ceiling in the unit the exercise scores in: GB/s for "memory", TFLOP/s otherwise."""
        return {"memory": self.copy_gbps, "fp32": self.fp32_tflops, "fp16": self.fp16_tflops,
                "fp8": self.fp8_tflops}[kind]


@dataclass(frozen=True)
class ClockState:
    """SM clock (MHz) against its maximum, temperature (C), and any active throttle reasons
    (NVML clock-event reasons other than idle and application-clock settings). ``throttled`` is
    about the clock alone: under a heavy matrix product the H200 reports SwPowerCap while it runs
    at 1965-1980 of 1980 MHz (2026-12-01), which is its normal working state, not a slowdown."""
    sm_mhz: int
    max_sm_mhz: int
    temperature_c: int
    throttle: tuple[str, ...]

    @property
    def throttled(self) -> bool:
        return self.sm_mhz < 0.9 * self.max_sm_mhz


def driver_installed() -> bool:
    """Whether this machine has an NVIDIA driver at all: a /dev/nvidia0 device node or a
    loadable libcuda.so.1 (the driver's user-space library)."""
    import ctypes
    import os
    if os.path.exists("/dev/nvidia0"):
        return True
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def unavailable_reason() -> str | None:
    """None when CuPy can use a CUDA GPU here, else a one-line reason."""
    try:
        import cupy
    except Exception as exc:  # noqa: BLE001
        return f"CuPy cannot be imported ({type(exc).__name__}: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "InsufficientDriver" in text or "NoDevice" in text:
            if not driver_installed():   # CUDA reports a missing driver as an insufficient one
                return "no NVIDIA GPU or driver on this machine (no /dev/nvidia0, no libcuda.so.1)"
            return f"no NVIDIA GPU or driver found (CUDA says: {text})"
        return f"no usable CUDA GPU ({text})"
    return None if count > 0 else "no CUDA GPU found"


def detect(index: int = 0) -> DeviceInfo | None:
    """The GPU at ``index``, or None when there is none."""
    if unavailable_reason() is not None:
        return None
    import cupy
    rt = cupy.cuda.runtime
    props = rt.getDeviceProperties(index)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return DeviceInfo(index=index, name=name, arch=f"sm_{props['major']}{props['minor']}",
                      sm_count=int(props["multiProcessorCount"]), l2_bytes=int(props["l2CacheSize"]),
                      memory_bytes=int(props["totalGlobalMem"]), driver=int(rt.driverGetVersion()),
                      runtime=int(rt.runtimeGetVersion()), cupy=cupy.__version__)


def arch_refusal(exercise: str, required: str | None, device: DeviceInfo | None) -> str | None:
    """Why ``exercise``, whose spec's ``[features] arch`` is ``required`` ("sm_90a", "sm_80"; None: any
    GPU), cannot be graded on ``device``, as one line naming the exercise, the arch it needs, the GPU
    found and what to do; None when it can (or there is no GPU: that is said elsewhere).

    "sm_XYa" code (wgmma, setmaxnreg) runs on compute capability X.Y only; "sm_XY" on X.Y or newer.
    The device's own key (``device.arch``, "sm_90") still picks calibration and thresholds."""
    if required is None or device is None:
        return None
    m = re.fullmatch(r"sm_(\d{2,3})(a?)", required)
    if m is None:
        return None   # the spec loader rejects malformed values
    need, exact = int(m[1]), bool(m[2])
    have = int(device.arch.removeprefix("sm_")) if device.arch.removeprefix("sm_").isdigit() else -1
    if have == need or (have > need and not exact):
        return None
    cc = f"{need // 10}.{need % 10}"
    needs = f"compute capability {cc} exactly" if exact else f"compute capability {cc} or newer"
    return (f"{exercise} needs {required} ({needs}; its spec's [features] arch), but this GPU is {device.name} "
            f"({device.arch}): its kernels cannot run here; fix: grade it on a GPU of {needs}"
            f"{' (an H100 or H200)' if need == 90 and exact else ''}, or run `grade {exercise} --compile-only` "
            f"to check that kernel.cu compiles for {required}")


def cache_dir() -> Path:
    d = Path(os.environ.get("GRADER_CACHE_DIR", Path.home() / ".cache" / "gpu-kernel-grader"))
    d.mkdir(parents=True, exist_ok=True)
    return d


_GPU_LOCKS_HELD: set[int] = set()


def gpu_lock_path(index: int = 0) -> Path:
    """The lock file of CUDA device ``index``, named by its PCI bus id (the same file whatever
    CUDA_VISIBLE_DEVICES numbers it). Raises whatever CuPy raises without that device."""
    import cupy
    bus = cupy.cuda.runtime.deviceGetPCIBusId(index)
    return cache_dir() / f"gpu-{str(bus).replace(':', '_')}.lock"


@contextlib.contextmanager
def gpu_lock(index: int = 0, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Holds this machine's exclusive timing lock of GPU ``index`` (an ``flock`` on
    ``gpu-<PCI bus id>.lock`` in :func:`cache_dir`) for the ``with`` block, so that two grades
    (or a grade and a ceiling measurement) on one machine never time on the same GPU at once:
    each would see the other's kernels as work left on the GPU. ``on_wait(path)`` is called once
    when another process holds the lock; the wait has no limit (the kernel drops the lock of a
    process that dies). Re-entrant within a process. Without a writable cache folder or fcntl
    (not Linux) the block runs unlocked."""
    if index in _GPU_LOCKS_HELD:
        yield
        return
    try:
        import fcntl
        path = gpu_lock_path(index)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except Exception:  # noqa: BLE001 - no fcntl, no CuPy device or no writable cache: unlocked
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait(str(path))
            fcntl.flock(fd, fcntl.LOCK_EX)
        _GPU_LOCKS_HELD.add(index)
        yield
    finally:
        _GPU_LOCKS_HELD.discard(index)
        os.close(fd)   # releases the lock


def median_event_ms(fn: Callable[[], Any], reps: int, warmup: int = 1) -> float:
    """Median time in ms of ``fn`` (CuPy work on the current stream) over ``reps`` calls, each
    between two CUDA events and synchronised, after ``warmup`` untimed calls. For trusted code on
    buffers it reuses (the ceilings here, the benchmarks' side-by-side scripts), not the grading
    protocol (grader.timing: fresh buffers, an L2 flush, a wall-clock bound)."""
    import cupy
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(cupy.cuda.get_elapsed_time(a, b))
    return statistics.median(times)


def measure_copy_gbps(nbytes: int = 1 << 30) -> float:
    """Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written (median of 30)."""
    import cupy
    src = cupy.ones(nbytes // 4, cupy.float32)
    dst = cupy.empty_like(src)
    ms = median_event_ms(lambda: cupy.copyto(dst, src), 30)
    return 2 * nbytes / ms / 1e6


def measure_matmul_tflops(dtype: str, n: int = 8192) -> float:
    """cuBLAS (``cupy.matmul``) rate on random n x n x n inputs, TFLOP/s (2 n^3 per product, median of 10)."""
    import cupy
    a = cupy.random.standard_normal((n, n), dtype=cupy.float32).astype(dtype)
    b = cupy.random.standard_normal((n, n), dtype=cupy.float32).astype(dtype)
    c = cupy.empty((n, n), dtype)
    ms = median_event_ms(lambda: cupy.matmul(a, b, out=c), 10)
    return 2 * n**3 / ms / 1e9


def ceilings(info: DeviceInfo, kinds: set[str], refresh: bool = False) -> Ceilings:
    """Measured ceilings for this device, from the cache when present (``refresh`` re-measures).

    A measurement taken while another process has a context on the GPU (NVML, see
    :func:`foreign_gpu_processes`, checked before and after measuring) serves this run only and is
    not cached: a shared GPU measures low ceilings, and a cached low ceiling would make honest
    results look implausible (above the ceiling) in every later grade on this machine."""
    path = cache_dir() / f"ceilings-{info.name.replace(' ', '_')}-{info.arch}-drv{info.driver}.json"
    cached: dict[str, Any] = {}
    if path.is_file() and not refresh:
        try:
            cached = json.loads(path.read_text())
        except ValueError:
            cached = {}
    missing = ["copy_gbps"] if "copy_gbps" not in cached else []
    rates = {"fp16" if kind == "fp8" else kind for kind in kinds} & {"fp32", "fp16"}   # fp8: from fp16
    missing += [f"{kind}_tflops" for kind in sorted(rates) if cached.get(f"{kind}_tflops") is None]
    if missing:
        with gpu_lock(info.index):
            busy = foreign_gpu_processes(info.index)
            for key in missing:
                cached[key] = (measure_copy_gbps() if key == "copy_gbps"
                               else measure_matmul_tflops("float32" if key == "fp32_tflops" else "float16"))
        cached["measured"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        if not (busy or foreign_gpu_processes(info.index)):
            path.write_text(json.dumps(cached, indent=1))
    fields = Ceilings.__dataclass_fields__
    found = {k: v for k, v in cached.items() if k in fields and k != "fp8_tflops"}
    if "fp8" in kinds and found.get("fp16_tflops"):
        found["fp8_tflops"] = FP8_PER_FP16 * found["fp16_tflops"]
    return Ceilings(**found)


_THROTTLE_IGNORED = {"GpuIdle", "ApplicationsClocksSetting", "None"}
_NVML_HANDLES: dict[int, Any] = {}


def nvml_handle(index: int = 0) -> Any:
    """The NVML handle of CUDA device ``index``, found by PCI bus id (NVML numbers every GPU of the
    machine and ignores CUDA_VISIBLE_DEVICES). Raises whatever NVML or CuPy raise."""
    if index not in _NVML_HANDLES:
        import cupy
        import pynvml as nv
        nv.nvmlInit()
        bus = cupy.cuda.runtime.deviceGetPCIBusId(index)
        _NVML_HANDLES[index] = nv.nvmlDeviceGetHandleByPciBusId(bus.encode() if isinstance(bus, str) else bus)
    return _NVML_HANDLES[index]


def clock_state(index: int = 0) -> ClockState | None:
    """Current SM clock and throttle reasons through NVML; None when NVML is unavailable. An idle
    GPU clocks down (345 of 1980 MHz on the H200): read it while a kernel runs
    (:class:`ClockSampler`), never at idle."""
    try:
        import pynvml as nv
        h = nvml_handle(index)
        sm = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)
        mx = nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)
        temp = nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)
        reasons = nv.nvmlDeviceGetCurrentClocksEventReasons(h)
        names = tuple(label for bit, label in _reason_bits() if reasons & bit)
        return ClockState(int(sm), int(mx), int(temp), names)
    except Exception:  # noqa: BLE001 - NVML missing or not permitted: no clock information
        return None


_REASON_BITS: list[tuple[int, str]] = []


def _reason_bits() -> list[tuple[int, str]]:
    """NVML's clock-event reason bits and their names (read once: a scan of the module's names
    takes about a millisecond, during which a sampling thread would hold the GIL)."""
    if not _REASON_BITS:
        import pynvml as nv
        for attr in sorted(dir(nv)):
            if attr.startswith("nvmlClocksEventReason") and attr != "nvmlClocksEventReasonAll":
                bit, label = getattr(nv, attr), attr.removeprefix("nvmlClocksEventReason")
                if isinstance(bit, int) and bit and label not in _THROTTLE_IGNORED:
                    _REASON_BITS.append((bit, label))
    return _REASON_BITS


class ClockSampler:
    """Samples the SM clock (:func:`clock_state`) every ``interval_s`` in a background thread
    while timing runs; :meth:`during` summarises the samples that fell inside timed requests, so
    a clock is only ever reported from moments when the GPU was working. Use as a context manager."""

    def __init__(self, index: int = 0, interval_s: float = 0.01):
        import threading
        self.index, self.interval_s = index, interval_s
        self.samples: list[tuple[float, float, ClockState]] = []   # (start, end, state) of each read
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = time.perf_counter()
            state = clock_state(self.index)
            if state is None:
                return
            self.samples.append((t0, time.perf_counter(), state))
            self._stop.wait(self.interval_s)

    def __enter__(self) -> "ClockSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def during(self, windows: list[tuple[float, float]]) -> ClockState | None:
        """The median SM clock of the reads that overlapped one of ``windows`` ((start, end)
        perf_counter seconds), the largest temperature and every throttle reason seen then; None
        when no read did."""
        inside = [s for a, b, s in self.samples if any(a < w1 and b > w0 for w0, w1 in windows)]
        if not inside:
            return None
        return ClockState(int(statistics.median(s.sm_mhz for s in inside)), max(s.max_sm_mhz for s in inside),
                          max(s.temperature_c for s in inside),
                          tuple(sorted({r for s in inside for r in s.throttle})))


def foreign_gpu_processes(index: int = 0) -> list[str]:
    """Processes with a context on GPU ``index`` that are neither this process nor one it
    started, as "PID NAME" (empty when NVML cannot tell): another user of the GPU makes timings
    noisy."""
    try:
        import pynvml as nv
        procs = nv.nvmlDeviceGetComputeRunningProcesses(nvml_handle(index))
    except Exception:  # noqa: BLE001 - NVML missing or not permitted
        return []
    from grader.sandbox.watch import descends_from
    me, out = os.getpid(), []
    for p in procs:
        if int(p.pid) != me and not descends_from(int(p.pid), me):
            try:
                name = Path(f"/proc/{p.pid}/comm").read_text().strip()
            except OSError:
                name = "?"
            out.append(f"{p.pid} {name}")
    return out


def as_dict(obj: Any) -> dict[str, Any] | None:
    return asdict(obj) if obj is not None else None
