"""Hopper support without a GPU: the spec's [features] arch, the compile target it gives, the
refusal on a GPU of another compute capability, an sm_90a (wgmma) compile through NVRTC, and
grader.tma.tensor_map's validation and the exact arguments it hands the driver (a fake driver)."""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

import grader.kernel as gk
from grader import tma
from grader.cases import PROFILES
from grader.calibration import Calibration
from grader.device import DeviceInfo, arch_refusal
from grader.grade import GradeOptions, grade
from grader.sandbox.buffers import HostBackend
from grader.spec import SpecError, load_spec
from tests.test_spec import BASE, write_spec


def gpu(arch: str, name: str = "NVIDIA H200") -> DeviceInfo:
    return DeviceInfo(index=0, name=name, arch=arch, sm_count=132, l2_bytes=60 << 20, memory_bytes=141 << 30,
                      driver=13000, runtime=13000, cupy="14.2.0")


def with_arch(line: str, options: str = '["-std=c++17"]') -> str:
    text = BASE.replace('[features]\n', f'[features]\n{line}\n', 1)
    return text.replace('options = ["-std=c++17"]', f"options = {options}", 1)


# -- [features] arch ----------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["sm_90a", "sm_90", "sm_80", "sm_100a", "sm_120"])
def test_arch_is_read(tmp_path: Path, value: str) -> None:
    assert load_spec(write_spec(tmp_path, with_arch(f'arch = "{value}"'))).arch == value


def test_no_arch_is_none(tmp_path: Path) -> None:
    assert load_spec(write_spec(tmp_path, BASE)).arch is None


@pytest.mark.parametrize("line, fix", [
    ('arch = "sm90a"', 'arch = "sm_90a"'),
    ('arch = "compute_90"', 'arch = "sm_90"'),
    ('arch = "-arch=sm_90a"', 'arch = "sm_90a"'),
    ('arch = "SM_90A"', 'arch = "sm_90a"'),
    ('arch = "sm_90x"', '"sm_90a"'),
    ('arch = "hopper"', '"sm_90a"'),
    ("arch = 90", '"sm_90a"'),
    ('arch = ["sm_90a"]', '"sm_90a"'),
    ('arch = "sm_80a"', 'arch = "sm_80"'),
])
def test_a_malformed_arch_is_one_line_naming_file_field_and_fix(tmp_path: Path, line: str, fix: str) -> None:
    path = write_spec(tmp_path, with_arch(line))
    with pytest.raises(SpecError) as err:
        load_spec(path)
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"{path}: [features] arch ")
    assert "fix: " in text and fix in text.split("fix: ", 1)[1], text


def test_arch_and_an_arch_compile_option_together_are_refused(tmp_path: Path) -> None:
    path = write_spec(tmp_path, with_arch('arch = "sm_90a"', '["-std=c++17", "-arch=sm_90a"]'))
    with pytest.raises(SpecError, match=r"\[compile\] option '-arch=sm_90a' sets the architecture.*fix: remove"):
        load_spec(path)


# -- the compile target ---------------------------------------------------------------------------------
KNOWN = (75, 80, 86, 89, 90, 100, 120)


@pytest.mark.parametrize("required, cc, target", [
    ("sm_90a", 90, "sm_90a"),      # pinned: wgmma exists only there
    ("sm_90a", None, "sm_90a"),    # --compile-only without a GPU
    ("sm_80", 90, "sm_90"),        # a minimum: the GPU's own target, so the cubin loads on it
    ("sm_80", None, "sm_80"),
    (None, 90, "sm_90"),
    (None, None, "sm_90"),
    (None, 121, "compute_120"),    # NVRTC does not know the GPU: PTX the driver compiles
])
def test_target_arch(required, cc, target) -> None:
    assert gk.target_arch(required, cc, KNOWN) == target


def test_the_worker_compiles_for_the_configured_arch(monkeypatch) -> None:
    """configure(options, arch) (what the worker's preload sets, for submission and reference) decides
    what load() compiles for: sm_90a pinned, sm_80 turned into the GPU's own."""
    seen = []

    class Stop(Exception):
        pass

    def fake_compile(source, path, opts, arch=None):
        seen.append(arch)
        raise Stop

    monkeypatch.setattr(gk, "compile_source", fake_compile)
    monkeypatch.setattr(gk, "_device_cc", lambda: 90)
    monkeypatch.setattr("grader.static.supported_arches", lambda: KNOWN)
    path = Path(__file__)
    try:
        for arch in ("sm_90a", "sm_80", None):
            gk.configure(("-std=c++17",), arch)
            with pytest.raises(Stop):
                gk._compiled(path, ("-std=c++17",))
    finally:
        gk.configure(gk.DEFAULT_OPTIONS)
    assert seen == ["sm_90a", "sm_90", "sm_90"]


def test_the_worker_config_carries_the_spec_arch(tmp_path: Path) -> None:
    from grader.grade import Grader
    spec = load_spec(write_spec(tmp_path, with_arch('arch = "sm_90a"')))
    sub = tmp_path / "sub"
    sub.mkdir()
    g = Grader.__new__(Grader)
    g.spec, g.submission, g.backend = spec, sub, HostBackend()
    g.arg_names = spec.arg_order
    g.opt = GradeOptions(PROFILES["quick"], backend="host")
    worker = g.new_worker(sub, trusted=True)
    worker.close()
    assert worker.config.arch == "sm_90a"


# -- refusing a GPU of another compute capability -----------------------------------------------------
@pytest.mark.parametrize("required, arch, refused", [
    ("sm_90a", "sm_90", False),
    ("sm_90a", "sm_100", True),    # a B200: sm_90a code does not run there
    ("sm_90a", "sm_89", True),
    ("sm_90a", "sm_80", True),
    ("sm_80", "sm_90", False),     # a minimum
    ("sm_80", "sm_80", False),
    ("sm_80", "sm_75", True),
    (None, "sm_75", False),
])
def test_arch_refusal(required, arch, refused) -> None:
    why = arch_refusal("ex20_wgmma_gemm", required, gpu(arch, "NVIDIA B200" if arch == "sm_100" else "GPU"))
    assert (why is not None) == refused
    if why:
        assert "\n" not in why
        assert why.startswith(f"ex20_wgmma_gemm needs {required} ")
        assert f"({arch})" in why and "fix: " in why and "--compile-only" in why


def test_refusal_names_the_gpu_and_exactness() -> None:
    why = arch_refusal("ex20_wgmma_gemm", "sm_90a", gpu("sm_100", "NVIDIA B200"))
    assert "NVIDIA B200 (sm_100)" in why and "compute capability 9.0 exactly" in why
    assert arch_refusal("ex20_wgmma_gemm", "sm_90a", None) is None   # no GPU: said elsewhere


def test_grade_refuses_before_any_case(tmp_path: Path) -> None:
    spec = load_spec(write_spec(tmp_path, with_arch('arch = "sm_90a"')))
    sub = tmp_path / "sub"
    sub.mkdir()   # empty: the refusal comes before the submission is even looked at
    r = grade(spec, sub, GradeOptions(PROFILES["quick"], backend="host"), HostBackend(), gpu("sm_100", "NVIDIA B200"),
              None, Calibration(None, {}, {}))
    assert r.status == "not_graded" and r.reason_kind == "wrong_gpu"
    assert r.cases == () and "\n" not in r.reason and "sm_90a" in r.reason and "NVIDIA B200" in r.reason


# -- compiling for sm_90a ---------------------------------------------------------------------------------
WGMMA_FENCE = r'''
extern "C" __global__ void fence_only(float* out) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    out[threadIdx.x] = 1.0f;
}
'''


def _nvrtc_or_skip() -> None:
    from grader.static import nvrtc_unavailable
    why = nvrtc_unavailable()
    if why:
        pytest.skip(f"NVRTC cannot be loaded here: {why}")


def test_wgmma_compiles_for_sm_90a_through_compile_source(tmp_path: Path) -> None:
    _nvrtc_or_skip()
    path = tmp_path / "kernel.cu"
    path.write_text(WGMMA_FENCE)
    cubin, ptx = gk.compile_source(WGMMA_FENCE, path, ("-std=c++17",), "sm_90a")
    assert isinstance(cubin, bytes) and cubin[:4] == b"\x7fELF"
    assert ".target sm_90a" in ptx and "wgmma.fence.sync.aligned" in ptx


def test_wgmma_does_not_compile_for_plain_sm_90(tmp_path: Path) -> None:
    _nvrtc_or_skip()
    path = tmp_path / "kernel.cu"
    path.write_text(WGMMA_FENCE)
    with pytest.raises(gk.CompileError):
        gk.compile_source(WGMMA_FENCE, path, ("-std=c++17",), "sm_90")


@pytest.mark.parametrize("box", [(32, 16), (16, 32)])
def test_the_gpu_tests_tma_kernel_compiles_for_sm_90a(tmp_path: Path, box) -> None:
    """tests/test_hopper_gpu.py's TMA kernel (run once on an H200) assembles here: ptxas accepts its
    mbarrier / cp.async.bulk.tensor PTX for sm_90a, and the map is a 64-byte-aligned 128-byte parameter."""
    _nvrtc_or_skip()
    from tests.test_hopper_gpu import TMA_KERNEL
    path = tmp_path / "tma.cu"
    path.write_text(TMA_KERNEL)
    cubin, ptx = gk.compile_source(TMA_KERNEL, path, ("-std=c++17", f"-DBOX_ROWS={box[0]}", f"-DBOX_COLS={box[1]}"),
                                   "sm_90a")
    assert isinstance(cubin, bytes) and ".param .align 64 .b8 tma_load_tile_param_0[128]" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
    assert ".shared .align 1024 .b8" in ptx and "cvta.param.u64" in ptx   # the map addressed in place


def test_static_report_compiles_for_the_pinned_arch(tmp_path: Path) -> None:
    """--compile-only, grade check and grade batch pass an arch; a spec pinning sm_90a wins."""
    _nvrtc_or_skip()
    from grader.static import static_report
    spec = load_spec(write_spec(tmp_path, with_arch('arch = "sm_90a"')))
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "kernel.cu").write_text(WGMMA_FENCE)
    (sub / "solution.py").write_text("def solve(*args):\n    pass\n")
    rep = static_report(spec, sub, "sm_90")
    assert rep.arch == "sm_90a" and rep.compiled and rep.compile_errors == 0, rep.problems


# -- tensor_map: validation and the driver call -------------------------------------------------------------
class FakeDeviceArray:
    """Enough of a CuPy array for tensor_map: dtype and __cuda_array_interface__ (no GPU needed)."""

    def __init__(self, shape, dtype, address: int = 1 << 24, strides=None):
        self.dtype = np.dtype(dtype)
        self.shape = tuple(shape)
        self.__cuda_array_interface__ = {"shape": self.shape, "typestr": self.dtype.str, "data": (address, False),
                                         "strides": strides, "version": 3}


@pytest.fixture
def calls(monkeypatch):
    seen: list[dict] = []

    def fake_encode(tensor_map_ptr, layout, global_address):
        seen.append(dict(tensor_map_ptr=tensor_map_ptr, global_address=global_address, data_type=layout.data_type,
                         rank=layout.rank, global_dim=list(layout.global_dim),
                         global_strides=list(layout.global_strides), box_dim=list(layout.box_dim),
                         element_strides=list(layout.element_strides), interleave=layout.interleave,
                         swizzle=layout.swizzle, l2_promotion=layout.l2_promotion, oob_fill=layout.oob_fill))
        ctypes.memset(tensor_map_ptr, 0xAB, tma.TENSOR_MAP_BYTES)

    monkeypatch.setattr(tma, "_encode", fake_encode)
    return seen


def test_tensor_map_2d_arguments_are_innermost_first(calls) -> None:
    a = FakeDeviceArray((100, 72), np.float32, address=0x7000_0000)
    m = gk.tensor_map(a, (32, 16))
    [c] = calls
    assert c["data_type"] == 7 and c["rank"] == 2 and c["global_address"] == 0x7000_0000
    assert c["global_dim"] == [72, 100]             # columns, then rows
    assert c["global_strides"] == [72 * 4]          # bytes, dims 1.. only
    assert c["box_dim"] == [16, 32] and c["element_strides"] == [1, 1]
    assert (c["interleave"], c["swizzle"], c["l2_promotion"], c["oob_fill"]) == (0, 3, 2, 0)
    # what CuPy passes by value: one 128-byte element, in the buffer the driver wrote, 128-byte aligned
    assert isinstance(m, np.ndarray) and m.shape == (1,) and m.dtype.itemsize == 128 and m.nbytes == 128
    assert c["tensor_map_ptr"] == m.ctypes.data and m.ctypes.data % 128 == 0 and m.ctypes.data % 64 == 0
    assert m.tobytes() == b"\xab" * 128


def test_tensor_map_3d_strides_and_element_strides(calls) -> None:
    a = FakeDeviceArray((4, 6, 8), np.float16)
    gk.tensor_map(a, (2, 3, 8), swizzle=None, element_strides=(1, 2, 1), l2_promotion=256, oob_nan=True)
    [c] = calls
    assert c["data_type"] == 6 and c["rank"] == 3
    assert c["global_dim"] == [8, 6, 4] and c["global_strides"] == [16, 96]
    assert c["box_dim"] == [8, 3, 2] and c["element_strides"] == [1, 2, 1]
    assert (c["swizzle"], c["l2_promotion"], c["oob_fill"]) == (0, 3, 1)


@pytest.mark.parametrize("dtype, code", [("uint8", 0), ("int8", 0), ("int16", 1), ("int32", 3), ("float64", 8)])
def test_tensor_map_data_types(calls, dtype, code) -> None:
    gk.tensor_map(FakeDeviceArray((8, 64), dtype), (8, 16 // np.dtype(dtype).itemsize * 2), swizzle=32)
    assert calls[0]["data_type"] == code


@pytest.mark.parametrize("make, kwargs, error, names", [
    (lambda: np.zeros((8, 8), np.float32), {"box": (8, 8)}, TypeError, "array:"),
    (lambda: FakeDeviceArray((8, 8), np.complex64), {"box": (8, 2)}, TypeError, "array: dtype complex64"),
    (lambda: FakeDeviceArray((8, 8), np.float32, strides=(4, 32)), {"box": (8, 8)}, ValueError, "not C-contiguous"),
    (lambda: FakeDeviceArray((8, 8), np.float32, address=(1 << 24) + 4), {"box": (8, 8)}, ValueError, "16-byte aligned"),
    (lambda: FakeDeviceArray((8, 5), np.float32), {"box": (8, 4)}, ValueError, "not a multiple of 16"),
    (lambda: FakeDeviceArray((8, 0), np.float32), {"box": (8, 4)}, ValueError, "empty"),
    (lambda: FakeDeviceArray((2,) * 6, np.float32), {"box": (2,) * 6}, ValueError, "1 to 5"),
    (lambda: FakeDeviceArray((8, 8), np.float32), {"box": (8,)}, ValueError, "box: has 1 entries"),
    (lambda: FakeDeviceArray((8, 8), np.float32), {"box": (0, 8)}, ValueError, "box:"),
    (lambda: FakeDeviceArray((512, 8), np.float32), {"box": (257, 8)}, ValueError, "outside 1..256"),
    (lambda: FakeDeviceArray((8, 8), np.float32), {"box": (8, 5)}, ValueError, "20 bytes is not a multiple of 16"),
    (lambda: FakeDeviceArray((8, 64), np.float32), {"box": (8, 64)}, ValueError, "128-byte swizzle span"),
    (lambda: FakeDeviceArray((8, 64), np.float32), {"box": (8, 16), "swizzle": 32}, ValueError, "32-byte swizzle"),
    (lambda: FakeDeviceArray((8, 8), np.float32), {"box": (8, 8), "swizzle": 100}, ValueError, "swizzle:"),
    (lambda: FakeDeviceArray((8, 8), np.float32), {"box": (8.0, 8)}, TypeError, "box:"),
    (lambda: FakeDeviceArray((8, 8), np.float32), {"box": (8, 8), "element_strides": (9, 1)}, ValueError,
     "element_strides:"),
    (lambda: FakeDeviceArray((8, 8), np.float32), {"box": (8, 8), "l2_promotion": 32}, ValueError, "l2_promotion:"),
    (lambda: FakeDeviceArray((8, 8), np.int32), {"box": (8, 8), "oob_nan": True}, ValueError, "oob_nan:"),
])
def test_tensor_map_rejects(calls, make, kwargs, error, names) -> None:
    with pytest.raises(error) as err:
        gk.tensor_map(make(), **kwargs)
    assert names in str(err.value) and "\n" not in str(err.value)
    assert calls == []   # nothing reached the driver


def test_tensor_map_validates_a_layout_once_and_encodes_every_address(calls) -> None:
    """The second call for the same shape, dtype and box at a new address reuses the validated layout
    (the cache), yet every call reaches the driver with its own address and gets its own buffer."""
    tma._layout.cache_clear()
    first = gk.tensor_map(FakeDeviceArray((100, 72), np.float32, address=0x7000_0000), (32, 16))
    second = gk.tensor_map(FakeDeviceArray((100, 72), np.float32, address=0x7100_0000), [32, np.int64(16)])
    info = tma._layout.cache_info()
    assert (info.misses, info.hits) == (1, 1)
    assert [c["global_address"] for c in calls] == [0x7000_0000, 0x7100_0000]
    assert calls[0]["global_dim"] == calls[1]["global_dim"] == [72, 100]
    assert first.ctypes.data != second.ctypes.data and second.ctypes.data % 128 == 0


@pytest.mark.parametrize("box", [(8.0, 8), (True, 8), ([8], 8)])
def test_tensor_map_cache_does_not_let_equal_non_integers_pass(calls, box) -> None:
    """8.0 == 8 and True == 1 as cache keys: a cached (8, 8) layout must not accept them."""
    gk.tensor_map(FakeDeviceArray((8, 8), np.float32), (8, 8))
    with pytest.raises(TypeError, match="box: expected integers"):
        gk.tensor_map(FakeDeviceArray((8, 8), np.float32), box)
    assert len(calls) == 1


@pytest.mark.parametrize("kwargs, names", [({"swizzle": [128]}, "swizzle: [128]"),
                                            ({"l2_promotion": {128: 1}}, "l2_promotion: {128: 1}")])
def test_tensor_map_an_unhashable_option_is_named(calls, kwargs, names) -> None:
    """An option the layout cache cannot take as a key gets the same one-line error as any bad value
    (not the cache's 'unhashable type')."""
    with pytest.raises(ValueError) as err:
        gk.tensor_map(FakeDeviceArray((8, 16), np.float32), (8, 16), **kwargs)
    assert names in str(err.value)
    assert calls == []


def test_a_failing_cuda_python_fallback_raises_tensor_map_error(monkeypatch) -> None:
    """Without libcuda.so.1 the binding is the fallback; whatever it raises (cuda-python's own
    'driver library not found', say) reaches the solution as TensorMapError with one line."""
    def no_lib():
        raise tma.TensorMapError("the CUDA driver library libcuda.so.1 cannot be loaded")

    class DriverNotFound(RuntimeError):
        pass

    def binding_encode(ptr, layout, address):
        raise DriverNotFound("libcuda.so.1 not found")

    monkeypatch.setattr(tma, "_libcuda", no_lib)
    monkeypatch.setattr(tma, "_cuda_python_encoder", lambda: binding_encode)
    with pytest.raises(tma.TensorMapError) as err:
        tma.tensor_map(FakeDeviceArray((100, 72), np.float32), (32, 16))
    assert "DriverNotFound: libcuda.so.1 not found" in str(err.value) and "\n" not in str(err.value)


def test_tensor_map_without_swizzle_takes_a_wide_box(calls) -> None:
    gk.tensor_map(FakeDeviceArray((8, 64), np.float32), (8, 64), swizzle=0)
    assert calls[0]["box_dim"] == [64, 8] and calls[0]["swizzle"] == 0


def test_the_ctypes_call_passes_arrays_innermost_first(monkeypatch) -> None:
    """The libcuda path: the arrays cuTensorMapEncodeTiled receives (cuuint64_t / cuuint32_t) hold
    what tensor_map computed; a non-zero CUresult becomes TensorMapError with the driver's name."""
    got = {}

    class FakeLib:
        def cuTensorMapEncodeTiled(self, ptr, dtype, rank, address, dims, strides, boxes, steps, il, sw, l2, oob):
            got.update(ptr=ptr.value, dtype=dtype, rank=rank, address=address.value, dims=list(dims),
                       strides=list(strides), boxes=list(boxes), steps=list(steps), rest=(il, sw, l2, oob))
            return got.get("result", 0)

        def cuGetErrorName(self, result, out):
            out._obj.value = b"CUDA_ERROR_INVALID_VALUE"
            return 0

    monkeypatch.setattr(tma, "_libcuda", lambda: FakeLib())
    monkeypatch.setattr(tma, "_cuda_python_encoder", lambda: None)
    m = tma.tensor_map(FakeDeviceArray((100, 72), np.float32, address=0x7000_0000), (32, 16), swizzle=64)
    assert got["ptr"] == m.ctypes.data and got["dtype"] == 7 and got["rank"] == 2 and got["address"] == 0x7000_0000
    assert got["dims"] == [72, 100] and got["strides"] == [288] and got["boxes"] == [16, 32] and got["steps"] == [1, 1]
    assert got["rest"] == (0, 2, 2, 0)
    got["result"] = 1
    with pytest.raises(tma.TensorMapError, match="CUDA_ERROR_INVALID_VALUE"):
        tma.tensor_map(FakeDeviceArray((100, 72), np.float32), (32, 16))


def test_the_ctypes_prototype_matches_cuda_h() -> None:
    """cuda.h (CUDA 13) declares cuTensorMapEncodeTiled with these parameter types, where a header is here."""
    header = Path("/usr/local/cuda/include/cuda.h")
    if not header.is_file():
        pytest.skip("no /usr/local/cuda/include/cuda.h here")
    text = header.read_text(errors="replace")
    assert ("CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, "
            "cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t "
            "*globalStrides, const cuuint32_t *boxDim, const cuuint32_t *elementStrides, CUtensorMapInterleave "
            "interleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill "
            "oobFill);") in text
    for name, value in (("CU_TENSOR_MAP_DATA_TYPE_FLOAT32", 7), ("CU_TENSOR_MAP_SWIZZLE_128B", 3),
                        ("CU_TENSOR_MAP_L2_PROMOTION_L2_128B", 2)):
        enum = text[text.rindex("typedef enum", 0, text.index(name + ",")):text.index(name + ",")]
        assert enum.count(",") == value, name   # its position in the enum = its value
    assert "#define CU_TENSOR_MAP_NUM_QWORDS 16" in text


def test_cupy_takes_the_tensor_map_as_a_by_value_argument(calls) -> None:
    """CuPy's kernel-argument conversion (cupy.cuda.function._pointer) accepts the one-element V128
    array (CNumpyArray: a pointer to its 128 bytes, at our aligned address) and refuses a larger
    numpy array. Probed without a GPU: the conversion happens before the launch fails for want of a
    driver; a TypeError would mean CuPy refused the argument itself."""
    from grader.device import unavailable_reason
    if unavailable_reason() is None:
        pytest.skip("a GPU is here: tests/test_hopper_gpu.py launches with a real map instead")
    from cupy.cuda import function

    class NoStream:
        ptr = 0

    m = gk.tensor_map(FakeDeviceArray((100, 72), np.float32), (32, 16))
    assert function.CNumpyArray(m).ptr == m.ctypes.data
    probe = function.Function.__new__(function.Function)   # no module: only the argument conversion runs
    with pytest.raises(Exception) as err:
        probe((1,), (1,), (m,), stream=NoStream())
    assert not isinstance(err.value, TypeError), err.value
    with pytest.raises(TypeError, match="size one"):
        probe((1,), (1,), (np.zeros(2, np.float32),), stream=NoStream())
