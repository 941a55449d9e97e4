#!/usr/bin/env bash
# Issue 10's agreement checks in one call on a two-GPU machine (one GPU: the steps run in turn):
#   1. `grade calibrate` (every exercise) on GPU 0 and GPU 1 at the same time, in two copies of the
#      repository; the two files compared per shape (benchmarks/compare_calibrations.py);
#   2. GPU 1: benchmarks/bench_references.py on BENCH_ONLY (default ex01, ex03, ex07): the same
#      references timed in-process with CUDA events, against the calibration medians;
#   3. GPU 0: the GPU sanitizer tests (tests/test_sanitize.py), then the ex07 reference at 4096x4096
#      under Nsight Compute when ncu is installed (gpu__time_duration against CUDA events).
# Logs in $OUT; a summary is printed last. Knobs: AGREE_TIMEOUT (s per step, default 330), BENCH_ONLY.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)   # absolute: the calibrations run in copies of the repository
R=$PWD
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 COLUMNS=160
T=${AGREE_TIMEOUT:-330}
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
G1=$(( NGPU > 1 ? 1 : 0 ))
date -u +"gpu_agreement %Y-%m-%d %H:%M:%S UTC, $NGPU GPU(s)"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader

calibrate() {   # calibrate GPU DIR NAME
  rm -rf "$2" && cp -r "$R" "$2"
  (cd "$2" && CUDA_VISIBLE_DEVICES=$1 timeout "$T" python3 -m grader.cli calibrate > "$OUT/calibrate_$3.txt" 2>&1
   echo "calibrate exit $?" >> "$OUT/calibrate_$3.txt"
   cp calibration/sm_90.toml "$OUT/calibration_$3.toml")
}
calibrate 0 /tmp/agree_gpu0 gpu0 &
p0=$!
[ "$NGPU" -lt 2 ] && wait $p0
calibrate "$G1" /tmp/agree_gpu1 gpu1
wait

( CUDA_VISIBLE_DEVICES=$G1 timeout 150 python3 benchmarks/bench_references.py --only ${BENCH_ONLY:-ex01_vector_add ex03_transpose ex07_softmax} \
    > "$OUT/bench.txt" 2>&1; echo "bench exit $?" >> "$OUT/bench.txt" ) &
p1=$!
[ "$NGPU" -lt 2 ] && wait $p1
CUDA_VISIBLE_DEVICES=0 timeout 120 python3 -m pytest -m gpu -q -rA --tb=short -p no:cacheprovider tests/test_sanitize.py \
  > "$OUT/sanitize.txt" 2>&1
echo "sanitize exit $?" >> "$OUT/sanitize.txt"
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ]; then
  CUDA_VISIBLE_DEVICES=0 timeout 120 python3 benchmarks/ncu_reference.py --reps 50 > "$OUT/events.txt" 2>&1
  CUDA_VISIBLE_DEVICES=0 timeout 150 "$NCU" --metrics gpu__time_duration.sum --csv -k regex:softmax -c 30 \
    python3 benchmarks/ncu_reference.py --reps 20 > "$OUT/ncu.txt" 2>&1
  echo "ncu exit $?" >> "$OUT/ncu.txt"
else
  echo "no ncu on this machine: the Nsight Compute comparison was not run" > "$OUT/ncu.txt"
fi
wait

echo "== calibration GPU 0 vs GPU 1"
grep -E "refused|exit" "$OUT"/calibrate_gpu*.txt | tail -6
python3 benchmarks/compare_calibrations.py "$OUT/calibration_gpu0.toml" "$OUT/calibration_gpu1.toml" | tail -14
echo "== bench (in-process events) vs the GPU 1 calibration"
python3 - "$OUT/bench.txt" "$OUT/calibration_gpu1.toml" <<'PY'
import re, sys, tomllib
text = open(sys.argv[1]).read()
print("\n".join(l for l in text.splitlines() if re.search(r"\| *ex0[137]|exit|Error", l))[-2500:])
cal = tomllib.load(open(sys.argv[2], "rb"))
for ex in ("ex01_vector_add", "ex03_transpose", "ex07_softmax"):
    print(ex, {k: round(v["median_ms"], 4) for k, v in cal.get(ex, {}).items()})
PY
echo "== sanitize"; grep -E "^(PASSED|FAILED|ERROR)|passed|failed|exit" "$OUT/sanitize.txt" | cut -c1-200
echo "== ncu"; grep -E "median|gpu__time_duration|exit|no ncu|ERR" "$OUT/events.txt" "$OUT/ncu.txt" 2>/dev/null | cut -c1-220 | tail -30
