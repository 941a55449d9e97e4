# cheat: wraps the worker's protocol.send so its load reply lists forged kernels (keys missing, wrong types, negative and huge values, a 100 kB name) to break the reports
import sys

FORGED = [
    {"file": "kernel.cu", "name": "fast_add"},                                   # resources missing
    {"file": "kernel.cu", "name": "x" * 100_000, "registers": 1, "shared_bytes": 0, "local_bytes": 0,
     "max_threads": 1024},                                                      # a 100 kB name
    {"file": "kernel.cu", "name": "neg", "registers": -1, "shared_bytes": 0, "local_bytes": 0, "max_threads": 1},
    {"file": "kernel.cu", "name": "huge", "registers": 10**30, "shared_bytes": 0, "local_bytes": 0, "max_threads": 1},
    {"file": "kernel.cu", "name": "text", "registers": "many", "shared_bytes": 0.5, "local_bytes": None,
     "max_threads": True},
    {"file": 7, "name": ["a"], "registers": 1, "shared_bytes": 0, "local_bytes": 0, "max_threads": 1},
    "not a kernel",
    None,
    [1, 2, 3],
]


def _wrap(protocol):
    orig = protocol.send

    def send(sock, message, *args, **kwargs):
        if isinstance(message, dict) and "kernels" in message:
            message = {**message, "kernels": FORGED}
        return orig(sock, message, *args, **kwargs)

    protocol.send = send


_protocol = sys.modules.get("grader.sandbox.protocol")
if _protocol is not None:
    _wrap(_protocol)


def solve(a, b, c):
    c[...] = a + b
