#!/usr/bin/env bash
# The Hopper kernels' checks outside the grader (benchmarks/verify_ex13.py, verify_ex15.py and the
# verify_ex16.py) in one device call.
# Correctness first, the three side by side (each under its own timeout: a pipeline bug
# hangs rather than crashes, exit 124); then memcheck on small shapes; then the benchmarks one at a
# time on a quiet GPU. Logs go to $LOGS (one file per step); a summary table is printed last.
# Usage (device, repository root): LOGS=/tmp/hopper bash benchmarks/hopper_gpu.sh [steps...]
# Steps: check memcheck bench fixtures (default: all). About 420 s on an H200.
set -u
LOGS=${LOGS:-/tmp/hopper}; mkdir -p "$LOGS"
STEPS=${*:-check memcheck fixtures bench}
run() {   # run NAME TIMEOUT CMD...
  local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout "$t" "$@" > "$LOGS/$name.txt" 2>&1
  echo "[exit $? after $(( $(date +%s) - s )) s]" >> "$LOGS/$name.txt"
}
date -u +"hopper_gpu %F %T UTC"; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
has() { [[ " $STEPS " == *" $1 "* ]]; }
if has check; then
  run ex13_check 240 python3 benchmarks/verify_ex13.py & run ex15_check 240 python3 benchmarks/verify_ex15.py &
  run ex16_check 240 python3 benchmarks/verify_ex16.py & wait
fi
if has memcheck; then
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  run ex13_memcheck 200 "$CS" --tool memcheck python3 benchmarks/verify_ex13.py --no-pool --shapes 17x17x17 251x257x263 --kinds f16 &
  run ex15_memcheck 200 "$CS" --tool memcheck python3 benchmarks/verify_ex15.py --no-pool --shapes 17x17x256 251x257x640 17x136x256 251x264x640 --kinds normal &
  run ex16_memcheck 200 "$CS" --tool memcheck python3 benchmarks/verify_ex16.py --no-pool --shapes 0 1 2 3 4 & wait
fi
has fixtures && run ex16_fixtures 150 python3 benchmarks/verify_ex16.py --fixtures
if has bench; then
  run ex13_bench 150 python3 benchmarks/verify_ex13.py --bench --shapes 128x256x64
  run ex15_bench 120 python3 benchmarks/verify_ex15.py --bench --shapes 128x128x128
  run ex16_bench 120 python3 benchmarks/verify_ex16.py --bench --shapes 0
fi
echo; echo "step | exit | last line before it"
for f in "$LOGS"/*.txt; do
  echo "$(basename "$f" .txt) | $(tail -1 "$f") | $(grep -v '^\s*$' "$f" | tail -2 | head -1 | cut -c1-150)"; done
