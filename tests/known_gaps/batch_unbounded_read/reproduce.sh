#!/bin/sh
# eve (this folder + a huge sparse file) and bob (the reference) in one batch; then eve alone.
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../../.." && pwd); d=${1:-/tmp/known_gap_unbounded}
rm -rf "$d"; mkdir -p "$d/subs/eve/ex90_add" "$d/subs/bob"
cp "$here/kernel.cu" "$here/solution.py" "$d/subs/eve/ex90_add/"
cp -r "$repo/tests/fixtures/course/solutions/ex90_add" "$d/subs/bob/"
truncate -s 40G "$d/subs/eve/ex90_add/notes.txt"          # sparse: takes no disk
cd "$repo"
echo "== batch, 40 GB notes.txt"
python3 -m grader.cli batch "$d/subs" --root tests/fixtures/course --backend host --mode quick --out "$d/out" \
  --exercises ex90_add 2>&1 | tail -1; echo "summary: $(ls "$d/out" 2>/dev/null)"
mv "$d/subs/eve/ex90_add/notes.txt" "$d/subs/eve/ex90_add/notes.py"
echo "== grade, 40 GB notes.py"
python3 -m grader.cli 90 --root tests/fixtures/course --backend host --submission "$d/subs/eve/ex90_add" \
  --format gradescope --output "$d/eve.json" >"$d/grade.log" 2>&1; rc=$?
tail -1 "$d/grade.log"; echo "exit $rc; result file: $(ls "$d/eve.json" 2>&1)"
if [ "$(id -u)" = 0 ]; then
  rm "$d/subs/eve/ex90_add/notes.py"; ln -s /proc/kmsg "$d/subs/eve/ex90_add/notes.txt"
  echo "== batch, notes.txt -> /proc/kmsg (root), 30 s"
  timeout 30 python3 -m grader.cli batch "$d/subs" --root tests/fixtures/course --backend host --mode quick \
    --out "$d/out" --exercises ex90_add >/dev/null 2>&1; echo "exit $? (124: still running at 30 s)"
fi
