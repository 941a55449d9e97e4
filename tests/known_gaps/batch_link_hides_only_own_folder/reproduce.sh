#!/bin/sh
# Build SUBMISSIONS/{aaron,zoe} in $1 (default /tmp/known_gap_batch_link) and grade them in one batch.
set -e
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../../.." && pwd); d=${1:-/tmp/known_gap_batch_link}
rm -rf "$d"; mkdir -p "$d/subs/aaron/work/ex90_add" "$d/subs/zoe"
cp "$here/kernel.cu" "$here/solution.py" "$d/subs/aaron/work/ex90_add/"
ln -s work/ex90_add "$d/subs/aaron/ex90_add"
cp -r "$repo/tests/fixtures/course/solutions/ex90_add" "$d/subs/zoe/"
cd "$repo" && python3 -m grader.cli batch "$d/subs" --root tests/fixtures/course --backend host --mode quick \
  --out "$d/out" --exercises ex90_add >/dev/null 2>&1 || true
cat "$d/out/summary.csv"; echo "--- zoe's solution.py now:"; cat "$d/subs/zoe/ex90_add/solution.py"
