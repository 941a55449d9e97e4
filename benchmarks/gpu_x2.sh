#!/usr/bin/env bash
# Issue 10's whole verification on a two-GPU machine (device kind nvidia-h200-x2) in two device
# calls of under 600 s each: the whole GPU suite (benchmarks/gpu_suite.py, every phase) and
# `grade calibrate` of every exercise twice, the two files compared shape by shape.
#
#   call 1: GPU 0 runs the suite's gate, shared, timed and full_marks phases; GPU 1 calibrates
#           every exercise twice, in a copy of the tree (calibrate rewrites calibration/sm_90.toml,
#           which the suite's bundle tests read), with its own ceilings cache;
#   call 2: GPU 0 runs ladder, isolated and serial; GPU 1 runs bundle.
#
# Usage (on the device, repository root): OUT=... bash benchmarks/gpu_x2.sh 1   (then ... 2)
# Nothing is written into the repository: the calibration files land in $OUT (calibration_1.toml,
# calibration_2.toml) with compare.txt (the two runs) and compare_committed.txt (run 2 against
# calibration/sm_90.toml); copy one back by hand if it is to be committed. Each GPU's work has its
# own time limit (CAL_TIMEOUT per calibrate, default 280 s; SUITE_LIMIT per suite call, 560 s), so a
# cut run still leaves its logs; a short table is printed last.
set -u
OUT=${OUT:-/tmp/gpu_x2}; mkdir -p "$OUT"
CAL_TIMEOUT=${CAL_TIMEOUT:-280}
SUITE_LIMIT=${SUITE_LIMIT:-560}
ROOT=$PWD
date -u +"gpu_x2 call ${1:-?} %F %T UTC"
nvidia-smi --query-gpu=index,name,pci.bus_id,clocks.sm,temperature.gpu --format=csv,noheader

suite() {   # suite GPU NAME PHASES
  CUDA_VISIBLE_DEVICES=$1 GRADER_CACHE_DIR=/tmp/gpu_x2_cache$1 timeout $((SUITE_LIMIT + 20)) \
    python3 benchmarks/gpu_suite.py --phases "$3" --limit-s "$SUITE_LIMIT" --out "$OUT/$2" > "$OUT/$2.txt" 2>&1
  echo "$2 ($3) on GPU $1: exit $?" >> "$OUT/$2.txt"
}

calibrate_twice() {   # on GPU 1, in a copy of the tree
  rm -rf /tmp/gpu_x2_tree && cp -r "$ROOT" /tmp/gpu_x2_tree && cd /tmp/gpu_x2_tree || return
  cp calibration/sm_90.toml "$OUT/calibration_committed.toml"
  for n in 1 2; do
    rm -f calibration/sm_90.toml      # a run cut by its limit must not leave the committed file behind
    local s=$(date +%s)
    CUDA_VISIBLE_DEVICES=1 GRADER_CACHE_DIR=/tmp/gpu_x2_cache1 timeout "$CAL_TIMEOUT" \
      python3 -m grader.cli calibrate > "$OUT/calibrate_$n.txt" 2>&1
    echo "calibrate $n: exit $? in $(( $(date +%s) - s )) s" >> "$OUT/calibrate_$n.txt"
    [ -f calibration/sm_90.toml ] && cp calibration/sm_90.toml "$OUT/calibration_$n.toml"
  done
  if [ -f "$OUT/calibration_1.toml" ] && [ -f "$OUT/calibration_2.toml" ]; then
    python3 benchmarks/compare_calibrations.py "$OUT/calibration_1.toml" "$OUT/calibration_2.toml" > "$OUT/compare.txt" 2>&1
    python3 benchmarks/compare_calibrations.py "$OUT/calibration_committed.toml" "$OUT/calibration_2.toml" \
      > "$OUT/compare_committed.txt" 2>&1
  fi
}

case "${1:-}" in
  1) calibrate_twice &
     suite 0 suite1 gate,shared,timed,full_marks
     wait ;;
  2) suite 1 suite2_bundle bundle &
     suite 0 suite2 ladder,isolated,serial
     wait ;;
  *) echo "usage: OUT=... bash benchmarks/gpu_x2.sh 1|2" >&2; exit 2 ;;
esac

echo; echo "== summary =="
for f in "$OUT"/suite*.txt; do
  [ -f "$f" ] && { echo "-- $(basename "$f")"; grep -A14 "^phase" "$f" | head -16; tail -1 "$f"; }
done
for f in "$OUT"/calibrate_*.txt; do
  [ -f "$f" ] && { echo "-- $(basename "$f"): $(grep -c ' ok ' "$f") shapes ok, $(grep -ci 'refused\|too noisy' "$f") refused; $(tail -1 "$f")"; }
done
for f in "$OUT"/compare*.txt; do [ -f "$f" ] && { echo "-- $(basename "$f"): $(tail -1 "$f")"; }; done
