# cheat: prints about 20 MB of output from solve
_LINE = "x" * 1_000_000


def solve(a, b, c):
    for _ in range(20):
        print(_LINE)
    c[...] = a + b
