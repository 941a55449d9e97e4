# cheat: starts a setsid python daemon through subprocess with an empty environment, so nothing it inherited marks it (it exits by itself after 15 s)
import subprocess
import sys

_CODE = "import time\nend = time.monotonic() + 15\nwhile time.monotonic() < end:\n    time.sleep(0.2)\n"
subprocess.Popen([sys.executable, "-c", _CODE], env={}, start_new_session=True, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)


def solve(a, b, c):
    c[...] = a + b
