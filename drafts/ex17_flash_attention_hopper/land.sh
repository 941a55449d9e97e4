#!/usr/bin/env bash
# Land ex17_flash_attention_hopper into the course (run from the repository root, on main, with a
# clean tree). CPU part only: afterwards, on the H200, calibrate it twice and run its GPU tests
# (README.md next to this script, "After landing"). Idempotent only in the sense that it refuses to
# run twice (it checks that exercises/ex17_flash_attention_hopper does not exist yet).
set -euo pipefail
D=drafts/ex17_flash_attention_hopper
EX=ex17_flash_attention_hopper
[ -d "$D" ] || { echo "land.sh: run from the repository root ($D not found)"; exit 2; }
[ ! -e "exercises/$EX" ] || { echo "land.sh: exercises/$EX exists already"; exit 2; }
mkdir -p "solutions/$EX"
# the reference: drafts/ex14_fa3's kernel and launch code (moved, not copied), the pipelined variant
git mv drafts/ex14_fa3/kernel.cu "solutions/$EX/kernel.cu"
git mv drafts/ex14_fa3/solution.py "solutions/$EX/solution.py"
python3 - "$EX" <<'PY'
import re, sys
ex = sys.argv[1]
p = f"solutions/{ex}/solution.py"
s = open(p).read()
head, rest = s.split('"""', 2)[1], s.split('"""', 2)[2]
doc = f'''{ex} -- reference solution: FlashAttention-3-style forward pass on Hopper (sm_90a: TMA +
wgmma, one producer and two consumer warpgroups); kernel.cu has the design. Written as drafts/ex14_fa3
(2026-12-04) and measured there on the H200 (80 of 80 checks for each kernel variant; exercises/{ex}/
README.md has the times).

q (B, H, Sq, D), k and v (B, H, Sk, D), float16, or bfloat16 as a uint16 array of bf16 bit patterns;
D 64 or 128; causal 0 or 1; o (B, H, Sq, D) and lse (B, H, Sq) float32.

What solve does per call: V transposed into a cached scratch (B*H, D, Sk rounded up to 8), zeros
past Sk (fa3_transpose_v, timed: it is this solution's cost); three tensor maps (q and k as
(B*H, S, D), box (1, 128, 64); V^T as (B*H, D, Skp), box (1, D, 64); 128-byte swizzle); one launch
of (B*H, ceil(Sq / 128)) CTAs of 384 threads, of the kernel `_VARIANT` names (kernel.cu: fa3, fa3p,
fa3pp; the default "p" is the pipelined loop, the fastest on the H200). An input whose address is
not 16-byte aligned (the TMA's requirement) is copied into an aligned scratch first.
'''
s = '"""' + doc + '"""' + rest
s = s.replace('_VARIANT = ""                           # kernel: "" (fa3_*', '_VARIANT = "p"                          # kernel: "" (fa3_*')
assert '_VARIANT = "p"' in s
open(p, "w").write(s)
k = f"solutions/{ex}/kernel.cu"
t = open(k).read()
t = t.replace("// drafts/ex14_fa3 -- a FlashAttention-3-style forward pass for ex14 on Hopper (sm_90a)",
              f"// {ex} -- reference solution: a FlashAttention-3-style forward pass on Hopper (sm_90a)")
open(k, "w").write(t)
v = "drafts/ex14_fa3/verify.py"
t = open(v).read()
t = t.replace('load_solution_module(HERE / "solution.py", "ex14_fa3")',
              f'load_solution_module(ROOT / "solutions" / "{ex}" / "solution.py", "ex14_fa3")')
open(v, "w").write(t)
g = "benchmarks/gpu_suite.py"
t = open(g).read()
old = '"test_ex12_reference_on_ex13_is_correct_and_scores_no_performance_points",'
assert old in t
t = t.replace(old, old + '\n    "test_ex14_reference_on_ex17_is_correct_and_scores_no_performance_points",')
open(g, "w").write(t)
PY
cp -r "$D/exercises/$EX" exercises/
cp -r "$D/student_template/$EX" student_template/
cp "$D/tests/test_ex17_host.py" tests/
cat >> tests/test_gpu.py <<'PY'


def test_ex14_reference_on_ex17_is_correct_and_scores_no_performance_points() -> None:
    """The rung below ex17: ex14's FlashAttention-2 reference (mma.sync; the same solve) graded on
    ex17's spec is correct and, without wgmma in its PTX, keeps none of ex17's performance points.
    Its ratios go to the log for the README."""
    name = "ex17_flash_attention_hopper"
    r = grade_folder(spec_of(name), ROOT / "solutions" / "ex14_flash_attention", reference=ROOT / "solutions" / name)
    print(f"LADDER ex14 reference on ex17: ratios {({b.name: round(b.ratio, 3) for b in r.benchmarks})}")
    assert r.correct, r.smallest_failure
    assert r.score.performance == 0 and "required_ptx" in r.score.note
PY
git rm -rq "$D"
git add -A exercises solutions student_template tests drafts benchmarks
echo "landed $EX; now: pytest -q tests/test_ex17_host.py tests/test_nvcc.py -k 'ex17 or fa3', grade check, then the GPU steps"
