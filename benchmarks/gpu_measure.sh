#!/usr/bin/env bash
# Issue 10's measurements on one GPU, in one device call, with the grader as committed (nothing
# is written into the repository's calibration/):
#   1. `grade calibrate` of every exercise, twice in a row, each into $OUT/calibration_N.toml, and
#      the per-shape spread between the two runs and against the committed calibration/sm_90.toml
#      (benchmarks/compare_calibrations.py);
#   2. benchmarks/bench_references.py for a few exercises (CUDA events, same buffers every rep), to
#      set beside the calibration medians;
#   3. benchmarks/overhead.py: where the harness's time per timed call goes.
# Usage (on the device, repository root): OUT=... bash benchmarks/gpu_measure.sh
# Knobs: CAL_TIMEOUT (s per calibrate, default 240), OVERHEAD_ROUNDS (6), BENCH_ONLY.
set -u
OUT=${OUT:-/tmp/gpu_measure}; mkdir -p "$OUT"
T=${CAL_TIMEOUT:-240}
date -u +"gpu_measure %F %T UTC"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
cp calibration/sm_90.toml "$OUT/calibration_committed.toml"
for n in 1 2; do
  s=$(date +%s)
  timeout "$T" python3 -m grader.cli calibrate > "$OUT/calibrate_$n.txt" 2>&1
  echo "calibrate $n: exit $? in $(( $(date +%s) - s )) s" | tee -a "$OUT/calibrate_$n.txt"
  cp calibration/sm_90.toml "$OUT/calibration_$n.toml"
done
cp "$OUT/calibration_committed.toml" calibration/sm_90.toml
timeout 150 python3 benchmarks/bench_references.py --only ${BENCH_ONLY:-ex01_vector_add ex03_transpose ex07_softmax} \
  > "$OUT/bench.txt" 2>&1; echo "bench exit $?" >> "$OUT/bench.txt"
timeout 150 python3 benchmarks/overhead.py --rounds "${OVERHEAD_ROUNDS:-6}" > "$OUT/overhead.txt" 2>&1
echo "overhead exit $?" >> "$OUT/overhead.txt"
echo "== calibrate"; grep -hE "wrote|not written|refus|exit" "$OUT"/calibrate_[12].txt | tail -12
echo "== run 1 vs run 2"; python3 benchmarks/compare_calibrations.py "$OUT/calibration_1.toml" "$OUT/calibration_2.toml" | tail -8
echo "== committed vs run 2"; python3 benchmarks/compare_calibrations.py "$OUT/calibration_committed.toml" "$OUT/calibration_2.toml" | tail -4
echo "== bench"; tail -25 "$OUT/bench.txt"
echo "== overhead"; cut -c1-260 "$OUT/overhead.txt" | tail -14
date -u +"done %T UTC"
