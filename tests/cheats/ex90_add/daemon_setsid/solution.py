# cheat: double-forks a setsid daemon at import that outlives the worker (it exits by itself after 15 s)
import os
import time


def _daemon():
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)
        return
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        for fd in range(3, 256):  # let go of the worker's socket and log
            try:
                os.close(fd)
            except OSError:
                pass
        end = time.monotonic() + 15  # a background helper that would wait for the next worker
        while time.monotonic() < end:
            time.sleep(0.2)
    finally:
        os._exit(0)


_daemon()


def solve(a, b, c):
    c[...] = a + b
