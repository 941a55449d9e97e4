# cheat: returns a new array instead of writing into the preallocated output
def solve(a, b, c):
    return a + b
