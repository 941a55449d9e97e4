#!/usr/bin/env bash
# Every candidate of benchmarks/candidates/ checked and timed in one GPU call (about 6 minutes of
# an H200), logs in OUT (default ./out/candidates), a short table last. Installs nothing.
#
#   bash benchmarks/try_candidates.sh [OUT]
#
# ex03, ex05: bench_references.py --tune (each variant checked on edge shapes, then timed beside
# the reference and the copy); ex16: verify_ex16.py --variants --bench (each variant checked on
# verify_ex16's shapes, then timed against the copy bandwidth and torch SDPA); ex14: the grader's
# correctness check of the candidate (grade --no-timing, hypothesis shapes against the float64
# oracle), then ex14_vs_sdpa.py --variants. A candidate that wins replaces its solution; then
# `grade calibrate` and the GPU suite run again (README, "GPU suite").
set -u
cd "$(dirname "$0")/.."
OUT=${1:-out/candidates}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
C=benchmarks/candidates
status=()
run() {   # run NAME LIMIT_S COMMAND...: log to OUT/NAME.log, remember the exit status
    local name=$1 limit=$2
    shift 2
    echo "== $name: $*"
    local t0=$SECONDS
    timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    tail -n 40 "$OUT/$name.log"
    status+=("$name rc=$rc $((SECONDS - t0))s")
}
run ex03_ex05 300 python3 benchmarks/bench_references.py --only ex03_transpose ex05_scan --tune
run ex14_grade 300 python3 -m grader.cli ex14 --submission "$C/ex14_flash_attention" --no-timing
run ex14_sdpa 300 python3 benchmarks/ex14_vs_sdpa.py --solution "$C/ex14_flash_attention" --variants
run ex16 400 python3 benchmarks/verify_ex16.py --solution "$C/ex16_paged_decode_attention" --variants --bench \
    --shapes 0 1 2 3 4 5 7
echo
echo "== summary (rc 124: cut by its time limit)"
printf '%s\n' "${status[@]}"
