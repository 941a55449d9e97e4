#!/usr/bin/env bash
# A short GPU check for one change, in one device call (one H200 is enough):
#   the kernel tracer's cost and what it sees (benchmarks/kernel_trace_overhead.py), then the GPU
#   tests selected by GPU_TESTS (a pytest -k filter over tests/test_gpu.py and tests/test_cheats.py).
#   GPU_TESTS="full_marks or torch" GPU_QUICK_TIMEOUT=420 [SKIP_TRACE_BENCH=1] [WITH_OVERHEAD=1] \
#     bash benchmarks/gpu_quick.sh          (WITH_OVERHEAD: benchmarks/overhead.py --rounds 6 first)
#   GPU_FILES="tests/test_gpu.py"  the test files (default: tests/test_gpu.py tests/test_cheats.py)
#   WITH_BATCH=1  first a small `grade batch` in --mode grading (the ex01 reference and stub as two students)
# The full suite is benchmarks/gpu_shards.sh. Logs go to $OUT (default out/).
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 COLUMNS=160
date -u +"gpu_quick %Y-%m-%d %H:%M:%S UTC"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
[ -z "${SKIP_TRACE_BENCH:-}" ] && timeout 120 python3 benchmarks/kernel_trace_overhead.py --reps 100 --rounds 2 2>&1 | tee "$OUT/kernel_trace.txt" | cut -c1-400
[ -n "${WITH_OVERHEAD:-}" ] && timeout 80 python3 benchmarks/overhead.py --rounds 6 2>&1 | tee "$OUT/overhead.txt" \
  | grep -E "sets=|Traceback|Error" | cut -c1-260
if [ -n "${WITH_BATCH:-}" ]; then
  subs=$(mktemp -d)
  mkdir -p "$subs/reference" "$subs/stub"
  cp -r solutions/ex01_vector_add "$subs/reference/ex01_vector_add"
  cp -r student_template/ex01_vector_add "$subs/stub/ex01_vector_add"
  timeout 150 python3 -m grader.cli batch "$subs" --exercises ex01 --out "$OUT/batch" > "$OUT/batch.txt" 2>&1
  echo "batch exit $?" >> "$OUT/batch.txt"
  tail -8 "$OUT/batch.txt" | cut -c1-200; cut -c1-200 "$OUT/batch/summary.csv" 2>/dev/null
fi
timeout -s INT -k 20 "${GPU_QUICK_TIMEOUT:-420}" python3 -m pytest -m gpu -q -rfEs --tb=short -p no:cacheprovider \
  --durations=40 ${GPU_FILES:-tests/test_gpu.py tests/test_cheats.py} ${GPU_TESTS:+-k "$GPU_TESTS"} > "$OUT/tests.txt" 2>&1
echo "tests exit $?" >> "$OUT/tests.txt"
grep -E "^(FAILED|ERROR)|passed|failed|exit|s call " "$OUT/tests.txt" | cut -c1-600 | tail -60
