"""ex12_gemm_tensorcore candidate (benchmarks only): the reference (solutions/ex12_gemm_tensorcore)
with more (BK, STAGES, PIPE) instantiations of its kernel template to choose from.

The reference ships two: BK = 32 with 4 stages and fragment pipelining (its default, 0.58x cuBLAS
fp16 at 8192^3 on the H200) and BK = 64 with 3 stages without. Not tried: pipelining at BK = 64
(half the barriers per FLOP) and deeper rings (5-6 stages at BK = 32, 4 at BK = 64: 136-209 KB of
shared memory, one CTA per SM either way). The source compiled here is the reference's kernel.cu
with EXTRA appended (written to a temporary folder), so nothing of the reference is copied.
`python3 benchmarks/bench_gemm.py --only ex12 --tune` checks and times each configuration (rows
ex12_cand_f16[...]).

Knobs: _CONFIG (BK, STAGES, PIPE), one of CONFIGS; _GROUP_M as in the reference.
"""
import tempfile
from pathlib import Path

from benchmarks.candidates import reference
from grader.kernel import load

CONFIGS = ((32, 4, True), (64, 3, True), (64, 4, True), (32, 5, True), (32, 6, True))
EXTRA = "".join(
    f"\nextern \"C\" __global__ void __launch_bounds__(T_THREADS, 1) gemm_tc_{k}_k{bk}_s{st}{'p' if p else ''}"
    f"(T_ARGS({t}))\n{{ gemm_tc_body<{t}, {bk}, {st}, {'true' if p else 'false'}>(T_PASS); }}\n"
    for bk, st, p in CONFIGS[1:] for k, t in (("f16", "__half"), ("bf16", "__nv_bfloat16")))

ref = reference("ex12_gemm_tensorcore")
_src = Path(tempfile.mkdtemp(prefix="ex12-candidate-")) / "kernel.cu"
_src.write_text(Path(ref.__file__).with_name("kernel.cu").read_text() + EXTRA)
ref._module = load(_src)
ref._pad_rows = ref._module.get_function("pad_rows_u16")

_CONFIG = CONFIGS[0]
_GROUP_M = ref._GROUP_M


def solve(a, b, c):
    ref._CONFIG, ref._GROUP_M = _CONFIG, _GROUP_M
    ref.solve(a, b, c)
