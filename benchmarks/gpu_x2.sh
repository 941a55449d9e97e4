#!/usr/bin/env bash
# Issue 10's whole verification on a two-GPU machine (device kind nvidia-h200-x2) in three device
# calls of under 600 s each: the whole GPU suite (benchmarks/gpu_suite.py, every phase) and
# `grade calibrate` of every exercise twice.
#
# Durations on one H200 (benchmarks/RESULTS.md, twenty-fifth session, 2026-12-04): gate 20 s,
# shared x4 196 s, timed 54 s, isolated 4 s, full_marks 388 s, bundle ~520 s, ladder ~470 s; one
# `grade calibrate` of the twelve first exercises took 204 s (fourth session), and ex13-ex16 add
# 40-90 s each, so a whole run is estimated at ~500 s. Hence, with GPU 0 and GPU 1 side by side:
#
#   call 1: GPU 0 gate, shared, timed, isolated, serial;  GPU 1 calibrate, run 1
#   call 2: GPU 0 full_marks;                             GPU 1 calibrate, run 2 (and the comparison
#                                                         with the committed file)
#   call 3: GPU 0 ladder;                                 GPU 1 bundle
#
# Usage (on the device, repository root): OUT=... bash benchmarks/gpu_x2.sh 1   (then 2, then 3)
# Calibrate runs one exercise at a time (a cut loses one exercise, not the run) in a copy of the tree
# (it rewrites calibration/sm_90.toml, which the bundle tests read) with its own ceilings cache, and
# writes nothing into the repository: its file lands in $OUT/calibration_<n>.toml. The machine may be a fresh one at each call, so compare the two runs
# on this side afterwards: python3 benchmarks/compare_calibrations.py calibration_1.toml
# calibration_2.toml (files from the two calls' $OUT); copy one into calibration/ by hand if it is
# to be committed. Each GPU's work has its own time limit (CAL_TIMEOUT, default 560 s; SUITE_LIMIT,
# 560 s), so a cut run still leaves its logs; a short table is printed last.
set -u
OUT=${OUT:-/tmp/gpu_x2}; mkdir -p "$OUT"
CAL_TIMEOUT=${CAL_TIMEOUT:-560}
SUITE_LIMIT=${SUITE_LIMIT:-560}
ROOT=$PWD
date -u +"gpu_x2 call ${1:-?} %F %T UTC"
nvidia-smi --query-gpu=index,name,pci.bus_id,clocks.sm,temperature.gpu --format=csv,noheader

suite() {   # suite GPU NAME PHASES
  CUDA_VISIBLE_DEVICES=$1 GRADER_CACHE_DIR=/tmp/gpu_x2_cache$1 timeout $((SUITE_LIMIT + 20)) \
    python3 benchmarks/gpu_suite.py --phases "$3" --limit-s "$SUITE_LIMIT" --out "$OUT/$2" > "$OUT/$2.txt" 2>&1
  echo "$2 ($3) on GPU $1: exit $?" >> "$OUT/$2.txt"
}

calibrate() {   # calibrate N: on GPU 1, in a copy of the tree
  local n=$1
  rm -rf /tmp/gpu_x2_tree && cp -r "$ROOT" /tmp/gpu_x2_tree && cd /tmp/gpu_x2_tree || return
  cp calibration/sm_90.toml "$OUT/calibration_committed.toml"
  rm -f calibration/sm_90.toml      # a run cut by its limit must not leave the committed file behind
  local s=$(date +%s) ex left
  : > "$OUT/calibrate_$n.txt"
  for ex in $(ls exercises); do   # one exercise at a time: each writes (merges) its own entries, so a
    left=$(( CAL_TIMEOUT - ($(date +%s) - s) ))    # cut loses only the exercise in progress
    if [ "$left" -lt 20 ]; then echo "calibrate $n: $ex not started (CAL_TIMEOUT spent)" >> "$OUT/calibrate_$n.txt"; continue; fi
    CUDA_VISIBLE_DEVICES=1 GRADER_CACHE_DIR=/tmp/gpu_x2_cache1 timeout "$left" \
      python3 -m grader.cli calibrate "$ex" >> "$OUT/calibrate_$n.txt" 2>&1
    echo "calibrate $n $ex: exit $?" >> "$OUT/calibrate_$n.txt"
  done
  echo "calibrate $n: $(( $(date +%s) - s )) s" >> "$OUT/calibrate_$n.txt"
  if [ -f calibration/sm_90.toml ]; then
    cp calibration/sm_90.toml "$OUT/calibration_$n.toml"
    python3 benchmarks/compare_calibrations.py "$OUT/calibration_committed.toml" "$OUT/calibration_$n.toml" \
      > "$OUT/compare_committed.txt" 2>&1
  fi
}

case "${1:-}" in
  1) calibrate 1 &
     suite 0 suite1 gate,shared,timed,isolated,serial
     wait ;;
  2) calibrate 2 &
     suite 0 suite2 full_marks
     wait ;;
  3) suite 1 suite3_bundle bundle &
     suite 0 suite3 ladder
     wait ;;
  *) echo "usage: OUT=... bash benchmarks/gpu_x2.sh 1|2|3" >&2; exit 2 ;;
esac

echo; echo "== summary =="
for f in "$OUT"/suite*.txt; do
  [ -f "$f" ] && { echo "-- $(basename "$f")"; grep -A14 "^phase" "$f" | head -16; tail -1 "$f"; }
done
for f in "$OUT"/calibrate_*.txt; do
  [ -f "$f" ] && { echo "-- $(basename "$f"): $(grep -c ' ok ' "$f") shapes ok, $(grep -ci 'refused\|too noisy' "$f") refused; $(tail -1 "$f")"; }
done
for f in "$OUT"/compare*.txt; do [ -f "$f" ] && { echo "-- $(basename "$f"): $(tail -1 "$f")"; }; done
