#!/usr/bin/env bash
# The examples issue 16 asks for, on the device: `grade --profile` of the ex07 reference and of the
# ex08 naive fixture and reference (what a student sees: DRAM % of peak, occupancy, stalls), and the
# roofline plot (SVG) and the HTML page of the ex11 previous-rung fixture. Writes to $OUT (default out/);
# copy the plot and page into benchmarks/examples/ afterwards. About 2-3 minutes on an H200.
#   OUT=out bash benchmarks/report_examples.sh
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
grade() { local t0=$SECONDS; python3 -m grader.cli "$@"; echo "[rc=$? $((SECONDS - t0)) s: grade $*]"; }
grade ex07 --submission solutions/ex07_softmax --profile > "$OUT/ex07_solution_profile.txt" 2>&1
grade ex08 --submission tests/fixtures/gpu/ex08_layernorm_naive --profile > "$OUT/ex08_naive_profile.txt" 2>&1
grade ex08 --submission solutions/ex08_layernorm --profile > "$OUT/ex08_solution_profile.txt" 2>&1
grade ex11 --submission tests/fixtures/gpu/ex11_gemm_regtile_prev --plot "$OUT/ex11_prev_roofline.svg" \
  --format html --output "$OUT/ex11_prev.html" > "$OUT/ex11_prev.txt" 2>&1
for f in "$OUT"/*.txt; do echo "== $f"; tail -n 45 "$f"; done
