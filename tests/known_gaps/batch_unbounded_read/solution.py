def solve(a, b, c):
    c[...] = a - b   # wrong: this submission should score 0, and everyone else as usual
