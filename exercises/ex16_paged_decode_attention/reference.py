"""Oracle for ex16_paged_decode_attention: decode attention over a paged KV cache in float64,
one (sequence, KV head) at a time, the row max subtracted before exp.

Token i of sequence b is slot i % 16 of physical block block_tables[b, i // 16]; sequence b has
context_lens[b] tokens; query head hq reads KV head hq // G, G = HQ // HKV; scale 1 / sqrt(D).
Only the blocks a sequence uses are read: table entries past ceil(L / 16) and the slots past L of
the last block may hold anything (the spec poisons them, spec.toml says how).
"""


def _gather(xp, cache, table, L, h):
    """(L, D) float64: the first L tokens of KV head h of one sequence."""
    nb = -(-L // cache.shape[1])
    blocks = cache[table[:nb].astype(xp.int64), :, h, :]            # (nb, 16, D)
    return blocks.reshape(-1, cache.shape[-1])[:L].astype(xp.float64)


def _groups(xp, q, k_cache, v_cache, block_tables, context_lens):
    """(b, hq slice, weights (G, L), V (L, D), scores (G, L)) per (sequence, KV head), float64."""
    B, HQ, D = q.shape
    HKV = k_cache.shape[2]
    G = HQ // HKV
    lens = [int(x) for x in (context_lens.get() if hasattr(context_lens, "get") else context_lens)]
    for b in range(B):
        for h in range(HKV):
            K = _gather(xp, k_cache, block_tables[b], lens[b], h)
            V = _gather(xp, v_cache, block_tables[b], lens[b], h)
            Q = q[b, h * G:(h + 1) * G].astype(xp.float64)
            s = (Q @ K.T) / float(D) ** 0.5
            e = xp.exp(s - s.max(axis=1, keepdims=True))
            yield b, slice(h * G, (h + 1) * G), e / e.sum(axis=1, keepdims=True), Q, K, V, s


def reference(xp, q, k_cache, v_cache, block_tables, context_lens):
    o = xp.empty(q.shape, xp.float64)
    for b, hs, w, _Q, _K, V, _s in _groups(xp, q, k_cache, v_cache, block_tables, context_lens):
        o[b, hs] = w @ V
    return o


def magnitude(xp, q, k_cache, v_cache, block_tables, context_lens):
    """The allowed error of each element of o (spec.toml, [tolerance.float32]):
    (u_T + 2 (L + 8) u32 + 2 ds) (P |V|), with u_T the unit roundoff of the inputs' type (P is
    rounded to it before P V), u32 = 2^-24, L the sequence's context length, P the softmax weights,
    and ds = D 2 u32 max_j (|q| . |k_j|) / sqrt(D) + 4 u32 max_j |s_j| a bound on a float32 score's
    error (dot product, scaling, subtracting the max); plus, for float16 inputs only,
    2^-24 sum_{j: 0 < p_j < 2^-14} |v_j| with p_j = exp(s_j - max s) <= 1: a weight rounded to
    float16 below its normal range (2^-14) errs by up to 2^-25 absolutely, not by u_T relatively."""
    import numpy as np
    fp16 = q.dtype == np.float16
    u_t = 2.0 ** -11 if fp16 else 2.0 ** -8    # bfloat16 arrives decoded to float32
    u32 = 2.0 ** -24
    D = q.shape[-1]
    lens = [int(x) for x in (context_lens.get() if hasattr(context_lens, "get") else context_lens)]
    out = xp.empty(q.shape, xp.float64)
    for b, hs, w, Q, K, V, s in _groups(xp, q, k_cache, v_cache, block_tables, context_lens):
        sens = (xp.abs(Q) @ xp.abs(K).T).max(axis=1) / float(D) ** 0.5
        ds = D * 2 * u32 * sens + 4 * u32 * xp.abs(s).max(axis=1)
        av = xp.abs(V)
        out[b, hs] = (u_t + 2 * (lens[b] + 8) * u32 + 2 * ds[:, None]) * (w @ av)
        if fp16:
            p = w / w.max(axis=1, keepdims=True)                  # exp(s_j - max s), the largest 1
            out[b, hs] += 2.0 ** -24 * (((p > 0) & (p < 2.0 ** -14)).astype(xp.float64) @ av)
    return out


# -- the input hook this exercise needs (spec.toml [prepare]; not a grader feature yet) ------------
POISON_INDEX = 2**31 - 1     # table entries past a sequence's last block: following one faults


def prepare(xp, rs, q, k_cache, v_cache, block_tables, context_lens):
    """The inputs as the exercise means them, from the independently drawn ones (what the grader
    cannot express today: values of one input that depend on another's, see README.md):

    - context_lens: L = 1 + (raw - 1) % (16 MB), so 1 <= L <= 16 MB whatever was drawn (a raw
      value of 1, 16 or 16 MB stays what it is: lengths 1 and exact block multiples survive);
    - block_tables: the blocks every sequence uses are distinct physical blocks in a random order
      (a random permutation of [0, NB)) when NB holds them all; otherwise the drawn entries modulo
      NB are kept (blocks shared between sequences, as prefix caching does);
    - entries past ceil(L / 16) are POISON_INDEX (a kernel that follows one reads 2^31 blocks away);
    - in K and V, every slot that no sequence uses within its context (the tail of each last block,
      every unused block) is NaN: a kernel that lets one into its result (say 0 * NaN in P V for a
      masked key it loaded anyway) writes NaN.

    ``rs`` is a numpy RandomState; returns the five arrays (new ones; the drawn ones untouched).
    """
    import numpy as np
    host = lambda a: a.get() if hasattr(a, "get") else np.asarray(a)       # noqa: E731
    nb_total, bs = k_cache.shape[0], k_cache.shape[1]
    raw_t, raw_l = host(block_tables).astype(np.int64), host(context_lens).astype(np.int64)
    B, MB = raw_t.shape
    lens = 1 + (raw_l - 1) % (bs * MB)
    nbs = -(-lens // bs)
    table = np.full((B, MB), POISON_INDEX, np.int64)
    need = int(nbs.sum())
    if need <= nb_total:
        phys = rs.permutation(nb_total)[:need]
        starts = np.concatenate([[0], np.cumsum(nbs)])
        for b in range(B):
            table[b, :nbs[b]] = phys[starts[b]:starts[b + 1]]
    else:
        for b in range(B):
            table[b, :nbs[b]] = raw_t[b, :nbs[b]] % nb_total
    used = np.zeros((nb_total, bs), bool)                  # slots some sequence reads within its context
    for b in range(B):
        used[table[b, :nbs[b] - 1]] = True
        used[table[b, nbs[b] - 1], :lens[b] - (nbs[b] - 1) * bs] = True
    poison = xp.asarray(~used)[:, :, None, None]
    nan = xp.asarray(np.float32("nan")).astype(k_cache.dtype) if k_cache.dtype != np.uint16 \
        else xp.asarray(np.uint16(0x7FC0))                 # bfloat16 bits (stored as uint16) of a NaN
    k2 = xp.where(poison, nan, k_cache)
    v2 = xp.where(poison, nan, v_cache)
    return (q, xp.ascontiguousarray(k2), xp.ascontiguousarray(v2),
            xp.asarray(table.astype(np.int32)), xp.asarray(lens.astype(np.int32)))
