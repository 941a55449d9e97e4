#!/usr/bin/env bash
# The GPU suite in one call, over the GPUs of one machine (two shards; one GPU runs them in turn).
# Installs nothing: tomli_w (for calibrate) must be importable, e.g. carried wheels on PYTHONPATH.
#
#   shard0 (GPU 0): benchmarks/overhead.py, tests/test_gpu.py and the cuda cheats (GPU_TESTS: a
#           pytest -k filter; WITH_SANITIZE=1 adds tests/test_sanitize.py), then a second
#           `grade calibrate` in a copy of the repository
#   shard1 (GPU 1): `grade calibrate` (writes calibration/<arch>.toml), then the published-bundle
#           tests (tests/test_bundle_gpu.py, which score the references against that calibration)
#   The two calibrations are compared per shape at the end.
#   First, on GPU 0 alone, a gate (GATE_TESTS, a pytest -k filter over tests/test_gpu.py: the tracer
#   and one reference by default; GATE_TESTS="" skips it): when it fails, nothing else runs, so a
#   broken tracer or worker costs seconds of device time, not the whole call.
#   Knobs: GPU_FILES (shard0's test files, in order), GPU_TESTS (-k over shard0's tests),
#   SHARD1_FILES (shard1's test files after its calibration; default the bundle tests), BUNDLE_TESTS (-k over the bundle tests),
#   SKIP_OVERHEAD=1, SKIP_CALIBRATE2=1 (shard0's second calibration), SKIP_CALIBRATE=1 (both).
#
#   bash benchmarks/gpu_shards.sh            # on a machine with one or two NVIDIA GPUs
#   SKIP_CALIBRATE=1 GPU_SHARD_TIMEOUT=400 bash benchmarks/gpu_shards.sh
#   ONLY_SHARD=1 bash benchmarks/gpu_shards.sh   # one shard only (0 or 1): the suite in two calls on one GPU
# Logs are packed into $OUT/gpu_shards.tar.gz; a summary table is printed last.
set -u
OUT=${OUT:-out}
LOGS="$OUT/logs"
mkdir -p "$LOGS"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 COLUMNS=160
T=${GPU_SHARD_TIMEOUT:-540}
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
date -u +"gpu_shards %Y-%m-%d %H:%M:%S UTC, $NGPU GPU(s)"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
START=$(date +%s)
left() { echo $(( T - ($(date +%s) - START) )); }
GATE=${GATE_TESTS-kernels_are_traced or (full_marks and ex01)}
if [ -n "$GATE" ]; then
  CUDA_VISIBLE_DEVICES=0 timeout -s INT -k 20 120 python3 -m pytest -m gpu -q -rfEs --tb=short -p no:cacheprovider \
    tests/test_gpu.py -k "$GATE" > "$LOGS/gate.txt" 2>&1
  rc=$?
  echo "gate exit $rc" >> "$LOGS/gate.txt"
  if [ $rc -ne 0 ]; then
    echo "== gate FAILED: nothing else was run"; grep -E "^(FAILED|ERROR|E )|passed|failed" "$LOGS/gate.txt" | cut -c1-400 | tail -30
    tar czf "$OUT/gpu_shards.tar.gz" -C "$OUT" logs
    exit 1
  fi
fi

pytest_shard() {  # pytest_shard NAME GPU TESTS...: stopped with SIGINT at the time limit, so pytest
  local name=$1 gpu=$2; shift 2   # still prints what passed and failed
  CUDA_VISIBLE_DEVICES=$gpu timeout -s INT -k 20 "$(left)" python3 -m pytest -m gpu -q -rA -s --tb=short \
    --durations=30 -p no:cacheprovider "$@" > "$LOGS/$name.txt" 2>&1
  echo "$name exit $?" >> "$LOGS/$name.txt"
}


shard0() {   # overhead table, the GPU tests, then the second calibration (in a copy: both write calibration/)
  if [ -z "${SKIP_OVERHEAD:-}" ]; then
    CUDA_VISIBLE_DEVICES=0 timeout 150 python3 benchmarks/overhead.py --rounds ${OVERHEAD_ROUNDS:-10} > "$LOGS/overhead.txt" 2>&1
    echo "overhead exit $?" >> "$LOGS/overhead.txt"
  fi
  local tests=(${GPU_FILES:-tests/test_gpu.py tests/test_cheats.py})
  [ -n "${WITH_SANITIZE:-}" ] && tests+=(tests/test_sanitize.py)
  local reserve=${CALIBRATE_RESERVE_S:-170}
  [ -n "${SKIP_CALIBRATE2:-}${SKIP_CALIBRATE:-}" ] && reserve=5
  T0=$(( T - reserve ))   # leave time for the second calibration
  CUDA_VISIBLE_DEVICES=0 timeout -s INT -k 20 "$(( T0 - ($(date +%s) - START) ))" python3 -m pytest -m gpu -q -rA -s \
    --tb=short --durations=30 -p no:cacheprovider "${tests[@]}" ${GPU_TESTS:+-k "$GPU_TESTS"} > "$LOGS/tests0.txt" 2>&1
  echo "tests0 exit $?" >> "$LOGS/tests0.txt"
  if [ -z "${SKIP_CALIBRATE:-}${SKIP_CALIBRATE2:-}" ]; then
    rm -rf /tmp/gpu_shards_copy && cp -r . /tmp/gpu_shards_copy
    (cd /tmp/gpu_shards_copy && CUDA_VISIBLE_DEVICES=0 timeout "$(left)" python3 -m grader.cli calibrate \
      > "$OLDPWD/$LOGS/calibrate2.txt" 2>&1; echo "calibrate2 exit $?" >> "$OLDPWD/$LOGS/calibrate2.txt"
      cp calibration/sm_90.toml "$OLDPWD/$LOGS/calibration2.toml")
  fi
}

shard1() {   # the first calibration (written to calibration/), then the bundle tests against it
  local gpu=$1
  if [ -z "${SKIP_CALIBRATE:-}" ]; then
    CUDA_VISIBLE_DEVICES=$gpu timeout "$(left)" python3 -m grader.cli calibrate > "$LOGS/calibrate1.txt" 2>&1
    echo "calibrate1 exit $?" >> "$LOGS/calibrate1.txt"
    cp calibration/sm_90.toml "$LOGS/calibration1.toml" 2>/dev/null
  fi
  pytest_shard bundle "$gpu" ${SHARD1_FILES:-tests/test_bundle_gpu.py} ${BUNDLE_TESTS:+-k "$BUNDLE_TESTS"}
}

second=$(( NGPU > 1 ? 1 : 0 ))
if [ "${ONLY_SHARD:-}" != 0 ]; then
  shard1 "$second" &
  p1=$!
  if [ "$NGPU" -lt 2 ]; then wait $p1; fi
fi
[ "${ONLY_SHARD:-}" != 1 ] && shard0
wait
if [ -f "$LOGS/calibration1.toml" ] && [ -f "$LOGS/calibration2.toml" ]; then
  python3 benchmarks/compare_calibrations.py "$LOGS/calibration1.toml" "$LOGS/calibration2.toml" > "$LOGS/calibration_spread.txt" 2>&1
fi
tar czf "$OUT/gpu_shards.tar.gz" -C "$OUT" logs
cp calibration/sm_90.toml "$OUT/" 2>/dev/null
for f in tests0 bundle; do
  [ -f "$LOGS/$f.txt" ] || continue
  echo "== $f"; grep -E "^(FAILED|ERROR)|passed|failed|LADDER|BUNDLE|ROOFLINE|NVML|exit" "$LOGS/$f.txt" | cut -c1-300 | tail -45
  echo "   passed: $(grep -c '^PASSED' "$LOGS/$f.txt"), e.g. $(grep '^PASSED' "$LOGS/$f.txt" | head -3 | cut -c8-90 | tr '\n' ' ')"
done
[ -f "$LOGS/overhead.txt" ] && { echo "== overhead"; grep -E "sets=|exit" "$LOGS/overhead.txt" | cut -c1-230; }
for i in 1 2; do [ -f "$LOGS/calibrate$i.txt" ] && { echo "== calibrate$i"; grep -E "refused|wrote|not written|exit" "$LOGS/calibrate$i.txt" | tail -12; }; done
[ -f "$LOGS/calibration_spread.txt" ] && { echo "== calibration spread"; tail -45 "$LOGS/calibration_spread.txt"; }
