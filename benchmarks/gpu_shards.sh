#!/usr/bin/env bash
# The GPU test suite split over the GPUs of one machine (two shards; one GPU runs them in turn),
# then the GEMM ladder benchmark. Logs are packed into $OUT/gpu_shards.tar.gz; a summary is printed.
#
#   bash benchmarks/gpu_shards.sh            # on a machine with one or two NVIDIA GPUs
#   GPU_SHARD_TIMEOUT=400 bash benchmarks/gpu_shards.sh
set -u
OUT=${OUT:-out}
LOGS="$OUT/logs"
mkdir -p "$LOGS"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 COLUMNS=160
T=${GPU_SHARD_TIMEOUT:-520}
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
date -u +"gpu_shards %Y-%m-%d %H:%M:%S UTC, $NGPU GPU(s)"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
which compute-sanitizer nvcc || true

shard() {  # shard NAME GPU TESTS...
  local name=$1 gpu=$2; shift 2
  CUDA_VISIBLE_DEVICES=$gpu timeout "$T" python3 -m pytest -m gpu -q -rfEs -s --tb=short --durations=40 \
    -p no:cacheprovider "$@" > "$LOGS/$name.txt" 2>&1
  echo "$name exit $?" >> "$LOGS/$name.txt"
}
second=$(( NGPU > 1 ? 1 : 0 ))
shard shard0 0 tests/test_gpu.py &
p0=$!
if [ "$NGPU" -lt 2 ]; then wait $p0; fi
( shard shard1 "$second" tests/test_cheats.py tests/test_sanitize.py
  CUDA_VISIBLE_DEVICES=$second timeout 240 python3 benchmarks/bench_gemm.py > "$LOGS/bench_gemm.txt" 2>&1
  echo "bench_gemm exit $?" >> "$LOGS/bench_gemm.txt"
  if [ -n "${CALIBRATE:-}" ]; then   # e.g. CALIBRATE="ex09 ex10": needs tomli_w importable
    CUDA_VISIBLE_DEVICES=$second timeout 300 python3 -m grader.cli calibrate $CALIBRATE > "$LOGS/calibrate.txt" 2>&1
    echo "calibrate exit $?" >> "$LOGS/calibrate.txt"
    cp calibration/*.toml "$LOGS"/
  fi ) &
wait
cp "$OUT"/bench_gemm.json "$LOGS"/ 2>/dev/null
tar czf "$OUT/gpu_shards.tar.gz" -C "$OUT" logs
for f in "$LOGS"/shard0.txt "$LOGS"/shard1.txt; do
  echo "== $f"; grep -E "^(FAILED|ERROR)|passed|failed|LADDER|NVML|exit" "$f" | tail -40
done
echo "== bench_gemm"; tail -45 "$LOGS/bench_gemm.txt"
[ -f "$LOGS/calibrate.txt" ] && { echo "== calibrate"; tail -30 "$LOGS/calibrate.txt"; }
