# cheat: fills a growing host lookup table, 64 MiB at a time up to 2 GiB, on the first call
import time

import numpy as np

_table = []


def solve(a, b, c):
    while len(_table) < 32:  # "memoise everything": 32 x 64 MiB, touched
        _table.append(np.ones(2**24, np.float32))
        time.sleep(0.01)
    c[...] = a + b
