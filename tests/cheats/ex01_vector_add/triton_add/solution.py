# cheat: the addition done by a Triton kernel (JIT-compiled at the first call)
import torch
import triton
import triton.language as tl


@triton.jit
def _add(a, b, c, n, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(c + i, tl.load(a + i, mask=m) + tl.load(b + i, mask=m), mask=m)


def solve(a, b, c):
    n = c.size
    if n:
        t = lambda v: torch.as_tensor(v, device="cuda")  # noqa: E731
        _add[(triton.cdiv(n, 1024),)](t(a), t(b), t(c), n, BLOCK=1024)
