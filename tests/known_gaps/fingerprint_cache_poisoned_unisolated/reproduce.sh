#!/bin/sh
# 1. a verbatim CUB copy (agent_scan.cuh beside the reference solution) is refused, isolated;
# 2. this folder is graded once with GRADER_ISOLATION=off; 3. the same copy, isolated, is graded.
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../../.." && pwd); d=${1:-/tmp/known_gap_fp_cache}
rm -rf "$d"; mkdir -p "$d/copy"; export GRADER_CACHE_DIR="$d/cache"   # never the machine's own cache
cp "$repo"/tests/fixtures/course/solutions/ex90_add/* "$d/copy/"
cd "$repo"
cub=$(python3 -c "from grader.static import include_folders as f; import glob; print(next(p for r in f(()) for p in glob.glob(r + '/**/cub/agent/agent_scan.cuh', recursive=True)))")
cp "$cub" "$d/copy/scan_helpers.cuh"
G="python3 -m grader.cli 90 --root tests/fixtures/course --backend host --no-timing"
echo "== 1. copy, isolated";  $G --submission "$d/copy" 2>&1 | grep -oE "^grade: [^(]*|^Score.*"
echo "== 2. this folder, GRADER_ISOLATION=off"; GRADER_ISOLATION=off $G --submission "$here" 2>&1 | grep -E "^Score"
ls -l "$GRADER_CACHE_DIR"/library-fingerprints-*.u32
echo "== 3. copy, isolated"; $G --submission "$d/copy" 2>&1 | grep -oE "^grade: [^(]*|^Score.*|^isolation: [a-z ]*"
