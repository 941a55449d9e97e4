# cheat: writes the start of a reply on the worker's socket itself and then one byte every 2.5 s; each recv has its own time-out, so the parent never times out
import os
import struct
import sys
import time


def solve(a, b, c):
    fd = int(sys.argv[1])                       # the worker's socket (python -m grader.sandbox.worker FD BACKEND)
    os.write(fd, struct.pack("<Q", 1 << 20))    # "a 1 MiB reply follows"
    for _ in range(8):                          # bounded for the demo: 8 x 2.5 s = 20 s (case_s is 3 s)
        time.sleep(2.5)
        os.write(fd, b" ")
    os._exit(1)
