"""ex05_scan's reference, checked without a GPU: the tile status words of its decoupled look-back
are spaced one 128-byte line apart (SC_STRIDE words; the reason and the measurement are in
kernel.cu and benchmarks/RESULTS.md, twenty-third session). Every access to the status array in
kernel.cu carries the stride, solution.py's _STRIDE agrees with it, and solution.py sizes the
array by it. The GPU runs are in tests/test_gpu.py and benchmarks/bench_references.py."""
from __future__ import annotations

import re

from tests.conftest import ROOT

SOLUTION = ROOT / "solutions" / "ex05_scan"


def _kernel_text() -> str:
    """kernel.cu without its // comments (comments quote the status array too)."""
    return re.sub(r"//[^\n]*", "", (SOLUTION / "kernel.cu").read_text())


def test_status_stride_fills_a_128_byte_line_and_agrees_with_solution_py():
    stride = int(re.search(r"^#define SC_STRIDE (\d+)", (SOLUTION / "kernel.cu").read_text(), re.M)[1])
    assert stride * 8 == 128                      # 64-bit words, one per 128-byte line
    py = (SOLUTION / "solution.py").read_text()
    assert int(re.search(r"^_STRIDE = (\d+)", py, re.M)[1]) == stride
    # the array is sized in words of stride per tile, in its only allocation
    assert re.search(r"words = tiles \* _STRIDE", py)
    assert len(re.findall(r"cp\.zeros\(max\(words, ", py)) == 1


def test_every_status_access_carries_the_stride():
    code = _kernel_text()
    accesses = re.findall(r"\(status \+ [^;)]*\)", code)
    assert len(accesses) >= 3, accesses           # the publish and the look-back's two polls
    for a in accesses:
        assert a.endswith("* SC_STRIDE)"), a
    assert not re.search(r"status\s*\[", code)    # no indexing that could skip the stride
