#!/bin/sh
# alice links bob's folder, carol links the course's reference solution; bob submitted the reference.
set -e
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../../.." && pwd); d=${1:-/tmp/known_gap_batch_link_other}
rm -rf "$d"; mkdir -p "$d/subs/alice" "$d/subs/bob" "$d/subs/carol"
cp -r "$repo/tests/fixtures/course/solutions/ex90_add" "$d/subs/bob/"
ln -s ../bob/ex90_add "$d/subs/alice/ex90_add"
ln -s "$repo/tests/fixtures/course/solutions/ex90_add" "$d/subs/carol/ex90_add"
cd "$repo" && python3 -m grader.cli batch "$d/subs" --root tests/fixtures/course --backend host --mode quick \
  --out "$d/out" --exercises ex90_add >/dev/null 2>&1 || true
cat "$d/out/summary.csv"
for s in alice carol; do python3 -c "import json,sys; print(sys.argv[1], 'graded from', json.load(open(sys.argv[2]))['submission'])" $s "$d/out/$s/ex90_add.json"; done
