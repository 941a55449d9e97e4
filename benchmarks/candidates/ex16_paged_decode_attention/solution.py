"""ex16_paged_decode_attention candidate (benchmarks only): the reference's attention kernel
(solutions/ex16_paged_decode_attention) with a choice of split plan and of combine pass.

    python3 benchmarks/verify_ex16.py --solution benchmarks/candidates/ex16_paged_decode_attention --variants --bench

checks every variant on verify_ex16's shapes and times it on the benchmark shapes.

Knobs: _PLAN, the blocks per split: "p32" (the reference: at least 32 blocks of 16 tokens per split,
more only past the reference's grid cap), "p64", "p128" (longer splits: fewer CTAs start and drain,
fewer splits to combine), or "one_wave" (for a batch of one sequence whose reference grid would
fill more than one wave of resident CTAs: as many splits as fill exactly one wave; a table much
wider than its context then leaves SMs idle, since the host never reads context_lens; batches of
several sequences keep the reference's plan, whose many short splits balance uneven contexts). _COMBINE:
"reference" (paged_decode_combine, a thread per output walking every split) or "parallel"
(kernel.cu: the splits spread over 8 warps). VARIANTS: the settings verify_ex16.py --variants runs.
"""
import cupy as cp
import numpy as np

from benchmarks.candidates import reference
from grader.kernel import load

_PLAN = "p32"
_COMBINE = "reference"
VARIANTS = [{"_PLAN": p, "_COMBINE": c} for p in ("p32", "p64", "p128", "one_wave") for c in ("reference", "parallel")]
_RESIDENT_PER_SM = 2        # paged_decode: __launch_bounds__(128, 2) and 104 KB of shared memory per CTA
_COMBINE_THREADS = 256      # = CB_WARPS * 32 in kernel.cu

ref = reference("ex16_paged_decode_attention")
_combine_par = {}           # device -> paged_decode_combine_par
_device_state, _SMEM = ref._device_state, ref._SMEM       # what verify_ex16.resources() reports


def plan(B, HKV, MB, sms):
    """The split plan of _PLAN: {"P": blocks per split, "S": splits, "grid": (S, HKV, B)}."""
    if _PLAN == "one_wave":
        p = ref._plan(B, HKV, MB, sms)
        resident = _RESIDENT_PER_SM * sms
        if B == 1 and HKV * p["S"] > resident and HKV <= resident:
            s_wave = resident // (B * HKV)
            P = max(ref._P_MIN, -(-MB // s_wave))
            S = -(-MB // P)
            return {"P": P, "S": S, "grid": (S, HKV, B)}
        return p
    return ref._plan(B, HKV, MB, sms, p_min=int(_PLAN[1:]))


def _combine(dev):
    f = _combine_par.get(dev)
    if f is None:
        f = _combine_par[dev] = load("kernel.cu").get_function("paged_decode_combine_par")
    return f


def solve(q, k_cache, v_cache, block_tables, context_lens, o):
    B, HQ, D = q.shape
    HKV = k_cache.shape[2]
    MB = block_tables.shape[1]
    assert D == ref._D and k_cache.shape[1] == ref._BS and HQ % HKV == 0 and HQ // HKV <= ref._MAX_GROUP
    funcs, combine, sms = ref._device_state()
    p = plan(B, HKV, MB, sms)
    S, P = p["S"], p["P"]
    po, pl = ref._partials(B, HQ, S) if S > 1 else (o, o)
    funcs[ref._KINDS[q.dtype]](p["grid"], (ref._THREADS,),
                               (q, k_cache, v_cache, block_tables, context_lens, o, po, pl,
                                np.int32(HQ), np.int32(HKV), np.int32(MB), np.int32(P), np.float32(ref._SCALE_LOG2)),
                               shared_mem=ref._SMEM)
    if S > 1:
        if _COMBINE == "parallel":
            _combine(cp.cuda.runtime.getDevice())((HQ, B), (_COMBINE_THREADS,),
                                                  (context_lens, o, po, pl, np.int32(HQ), np.int32(S), np.int32(P)))
        else:
            combine((HQ, B), (ref._D,), (context_lens, o, po, pl, np.int32(HQ), np.int32(S), np.int32(P)))
