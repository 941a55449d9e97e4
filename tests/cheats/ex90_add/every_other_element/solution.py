# cheat: computes every other element (a grid half the size it should be)
def solve(a, b, c):
    c[::2] = a[::2] + b[::2]
