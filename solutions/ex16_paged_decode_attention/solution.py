"""ex16_paged_decode_attention -- reference solution (verified on an H200; see the exercise README).

q (B, HQ, 128), k_cache / v_cache (NB, 16, HKV, 128): float16, or bfloat16 delivered as uint16
arrays of bf16 bit patterns (CuPy has no bfloat16 dtype); block_tables (B, MB) int32; context_lens
(B,) int32; o (B, HQ, 128) float32 (written whole).

The host never reads context_lens (a device-to-host copy in solve is refused by the grader, and
would cost a synchronisation): the split plan depends on the shapes only. Every split covers P
logical blocks (P >= 32, i.e. 512 tokens), the grid is (S, HKV, B) with S = ceil(MB / P), and P
grows past 32 only when B * HKV * S would exceed _CTAS_PER_SM CTAs per SM (so a table far wider
than the contexts does not launch a sea of empty CTAs), or, for a batch of one sequence whose
splits would fill more than one wave of resident CTAs, to give exactly one wave (fewer CTAs start
and drain, fewer splits to combine: batch 1 at 131072 tokens went from 0.68x to 0.90x of the copy
bandwidth with the new combine; benchmarks/RESULTS.md, twenty-second session; several sequences
keep the short splits, which balance uneven contexts). A CTA whose split starts past its
sequence's last block returns at once. When S > 1, paged_decode_combine merges the splits.
"""
import math

import cupy as cp
import numpy as np

from grader.kernel import load

_D, _BS, _THREADS, _STAGES, _ROW = 128, 16, 128, 3, 136       # = PD_D, PD_BS, PD_THREADS, ...
_SMEM = 4 * _STAGES * 2 * _BS * _ROW * 2                     # = PD_SMEM_BYTES (104448)
_P_MIN = 32                    # blocks per split at least: 512 tokens, 256 KB of K and V per KV head
_CTAS_PER_SM = 64              # the cap on the grid, in CTAs per SM
_MAX_GROUP = 16                # = PD_MAX_GROUP: query heads per KV head
_RESIDENT_PER_SM = 2           # paged_decode CTAs per SM: __launch_bounds__(128, 2), 104 KB of shared memory each
_COMBINE_THREADS = 256         # = PD_COMBINE_WARPS * 32
_KINDS = {np.dtype(np.float16): "f16", np.dtype(np.uint16): "bf16"}   # uint16 = bfloat16 bits
_SCALE_LOG2 = 1.4426950408889634 / math.sqrt(_D)

_state = {}        # device -> ({kind: function}, combine, number of SMs)
_scratch = {}      # (device, B, HQ, S) -> (partial o, partial lse)


def _cdiv(a, b):
    return -(-a // b)


def _plan(B, HKV, MB, num_sms, p_min=_P_MIN, ctas_per_sm=_CTAS_PER_SM):
    """Blocks per split P, splits S (the grid's x) and the grid, from the shapes alone
    (replayed on the CPU by tests/test_ex16_host.py: every block of every context <= 16 MB is
    covered by exactly one split)."""
    cap = max(1, ctas_per_sm * num_sms)
    p = max(p_min, _cdiv(MB * B * HKV, cap))
    resident = _RESIDENT_PER_SM * num_sms
    if B == 1 and HKV * _cdiv(MB, p) > resident and HKV <= resident:     # one wave of splits
        p = max(p_min, _cdiv(MB, resident // HKV))
    s = _cdiv(MB, p)
    return {"P": p, "S": s, "grid": (s, HKV, B)}


def _device_state():
    dev = cp.cuda.runtime.getDevice()
    st = _state.get(dev)
    if st is None:
        module = load("kernel.cu")    # compiled on the first solve (NVRTC, the exercise's options)
        funcs = {}
        for kind in ("f16", "bf16"):
            f = module.get_function(f"paged_decode_{kind}")
            f.max_dynamic_shared_size_bytes = _SMEM
            funcs[kind] = f
        sms = cp.cuda.runtime.getDeviceProperties(dev)["multiProcessorCount"]
        st = _state[dev] = (funcs, module.get_function("paged_decode_combine"), sms)
    return st


def _partials(B, HQ, S):
    key = (cp.cuda.runtime.getDevice(), B, HQ, S)
    buf = _scratch.get(key)
    if buf is None:
        buf = _scratch[key] = (cp.empty((B, HQ, S, _D), cp.float32), cp.empty((B, HQ, S), cp.float32))
    return buf


def solve(q, k_cache, v_cache, block_tables, context_lens, o):
    B, HQ, D = q.shape
    HKV = k_cache.shape[2]
    MB = block_tables.shape[1]
    assert D == _D and k_cache.shape[1] == _BS and HQ % HKV == 0 and HQ // HKV <= _MAX_GROUP
    funcs, combine, sms = _device_state()
    plan = _plan(B, HKV, MB, sms)
    S, P = plan["S"], plan["P"]
    po, pl = _partials(B, HQ, S) if S > 1 else (o, o)          # unused when S == 1
    funcs[_KINDS[q.dtype]](plan["grid"], (_THREADS,),
                           (q, k_cache, v_cache, block_tables, context_lens, o, po, pl,
                            np.int32(HQ), np.int32(HKV), np.int32(MB), np.int32(P), np.float32(_SCALE_LOG2)),
                           shared_mem=_SMEM)
    if S > 1:
        combine((HQ, B), (_COMBINE_THREADS,), (context_lens, o, po, pl, np.int32(HQ), np.int32(S), np.int32(P)))
