#!/usr/bin/env bash
# The candidates of benchmarks/candidates/ checked and timed on a GPU, logs in OUT (default
# ./out/candidates), a short table last. Installs nothing. All of them take about 9 minutes of an
# H200: more than one device call's 10, with start-up; name some to split them over two calls.
#
#   bash benchmarks/try_candidates.sh [OUT [NAME ...]]     NAME: ex03_ex05 ex12 ex14 ex16 (default: all)
#
# ex03, ex05: bench_references.py --tune (each variant checked on edge shapes, then timed beside
# the reference and the copy); ex12: bench_gemm.py --tune (each configuration checked, then timed
# beside cuBLAS at 4096^3 and 8192^3); ex14: the grader's correctness check of the candidate
# (grade --no-timing, hypothesis shapes against the float64 oracle), then ex14_vs_sdpa.py
# --variants; ex16: verify_ex16.py --variants --bench (each variant checked on verify_ex16's shapes,
# then timed against the copy bandwidth and torch SDPA). A candidate that wins replaces its
# solution; then `grade calibrate` and the GPU suite run again (README, "GPU suite").
set -u
cd "$(dirname "$0")/.."
OUT=${1:-out/candidates}
shift $(( $# > 0 ? 1 : 0 ))
NAMES=${*:-ex03_ex05 ex12 ex14 ex16}
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
for name in $NAMES; do
    case $name in
        ex03_ex05) run ex03_ex05 300 python3 benchmarks/bench_references.py --only ex03_transpose ex05_scan --tune ;;
        ex12) OUT="$OUT" run ex12 300 python3 benchmarks/bench_gemm.py --only ex12 --tune ;;
        ex14) run ex14_grade 300 python3 -m grader.cli ex14 --submission "$C/ex14_flash_attention" --no-timing
              run ex14_sdpa 300 python3 benchmarks/ex14_vs_sdpa.py --solution "$C/ex14_flash_attention" --variants ;;
        ex16) run ex16 400 python3 benchmarks/verify_ex16.py --solution "$C/ex16_paged_decode_attention" --variants \
                  --bench --shapes 0 1 2 3 4 5 6 7 8 10 ;;
        *) echo "unknown candidate $name (ex03_ex05 ex12 ex14 ex16)"; status+=("$name unknown") ;;
    esac
done
echo
echo "== summary (rc 124: cut by its time limit)"
printf '%s\n' "${status[@]}"
