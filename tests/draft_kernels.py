"""What the Hopper kernels' CPU tests (tests/test_ex13_host.py, test_ex15_host.py, and the draft's
test_ex16_draft.py) share: compiling a kernel.cu as grading does, with ptxas's resource log, and reading its SASS. CPU only; a test skips
when NVRTC, cuobjdump or nvdisasm cannot be found here."""
from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest


def nvrtc_compile(path: Path, arch: str, options: tuple[str, ...] = ("-std=c++17",)) -> tuple[str, bytes, str]:
    """(ptxas log, cubin, PTX) of ``path`` compiled by NVRTC for ``arch`` ("sm_90", "sm_90a") with the
    grading options (``grader.static.grading_options``), ``-lineinfo`` and ``-Xptxas=-v``. Skips the
    test when NVRTC cannot be loaded; fails it with NVRTC's log on a compile error."""
    from grader.static import _nvrtc, grading_options, nvrtc_unavailable
    why = nvrtc_unavailable()
    if why:
        pytest.skip(f"NVRTC cannot be loaded here: {why}")
    nvrtc = _nvrtc()
    path = path.resolve()
    prog = nvrtc.createProgram(path.read_text(), str(path), [], [])
    try:
        try:
            nvrtc.compileProgram(prog, [*grading_options(options, arch), "-lineinfo", "-Xptxas=-v"])
        except nvrtc.NVRTCError:
            pytest.fail(f"NVRTC failed on {path.name}:\n{nvrtc.getProgramLog(prog)}")
        log = nvrtc.getProgramLog(prog)
        ptx = nvrtc.getPTX(prog)
        return (log.decode(errors="replace") if isinstance(log, bytes) else log, nvrtc.getCUBIN(prog),
                ptx.decode(errors="replace") if isinstance(ptx, bytes) else ptx)
    finally:
        nvrtc.destroyProgram(prog)


def cuda_tool(name: str) -> str | None:
    """cuobjdump / nvdisasm: on PATH, in a CUDA toolkit under /usr/local, or from pip's nvidia-cuda-* wheels."""
    found = shutil.which(name) or next((str(p) for p in Path("/usr/local").glob(f"cuda*/bin/{name}")), None)
    if found:
        return found
    try:
        import nvidia
        for base in nvidia.__path__:
            for p in Path(base).glob(f"*/bin/{name}"):
                return str(p)
    except ImportError:
        pass
    return None


def sass_functions(cubin: bytes, folder: Path) -> dict[str, str]:
    """Kernel name -> its SASS text (``cuobjdump -sass``), the cubin written into ``folder``. Skips the
    test without cuobjdump and nvdisasm."""
    cuobjdump, nvdisasm = cuda_tool("cuobjdump"), cuda_tool("nvdisasm")
    if not cuobjdump or not nvdisasm:
        pytest.skip("cuobjdump and nvdisasm are needed to read the SASS (CUDA toolkit, or pip install "
                    "nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    # CuPy's nvrtc.getCUBIN hands back one byte short of the ELF (seen with CuPy 14.2 / NVRTC 13: the
    # ELF header's program header table ends 1 byte past the end); the driver loads it anyway,
    # cuobjdump does not: restore the zero padding the header says is there.
    phoff, = struct.unpack_from("<Q", cubin, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", cubin, 0x36)
    cubin = cubin + b"\0" * max(0, phoff + phentsize * phnum - len(cubin))
    (folder / "k.cubin").write_bytes(cubin)
    env = {"PATH": f"{Path(nvdisasm).parent}:/usr/bin:/bin"}
    sass = subprocess.run([cuobjdump, "-sass", str(folder / "k.cubin")], capture_output=True, text=True,
                          timeout=120, env=env, check=True).stdout
    return dict(re.findall(r"Function : (\w+)\n(.*?)(?=\n\s*Function : |\Z)", sass, re.S))
