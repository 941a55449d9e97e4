#!/usr/bin/env bash
# The examples issue 16 asks for, on the device: `grade --profile` of the ex07 reference, of the ex08
# naive fixture and of the ex08 reference (what a student sees: DRAM % of peak, occupancy, stalls),
# and the roofline plot (SVG) and HTML page of the ex11 previous-rung fixture. Writes
# $OUT/report.txt (every grade's output, one after the other), $OUT/ex11_prev_roofline.svg and
# $OUT/ex11_prev.html (default OUT=out); copy the plot and page into benchmarks/examples/ afterwards.
# About 2-3 minutes on an H200.
#   OUT=out bash benchmarks/report_examples.sh
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
LOG="$OUT/report.txt"; : > "$LOG"
grade() {
  local t0=$SECONDS
  echo "===== grade $*" >> "$LOG"
  python3 -m grader.cli "$@" >> "$LOG" 2>&1
  echo "===== rc=$? after $((SECONDS - t0)) s" >> "$LOG"
}
grade ex07 --submission solutions/ex07_softmax --profile
grade ex08 --submission tests/fixtures/gpu/ex08_layernorm_naive --profile
grade ex08 --submission solutions/ex08_layernorm --profile
grade ex11 --submission solutions/ex10_gemm_smem --plot "$OUT/ex11_prev_roofline.svg" \
  --format html --output "$OUT/ex11_prev.html"
grep -E "^=====|score|profile|DRAM|occupancy|stall" "$LOG" | head -80
