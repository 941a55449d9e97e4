#!/usr/bin/env python3
"""CPU emulation of solutions/ex12_gemm_tensorcore/kernel.cu's gemm_body (promoted from this draft),
lane by lane (numpy; no GPU).

    python3 drafts/ex12_faster/emulate.py            # every _KERNELS config on odd and multi-tile shapes
    python3 drafts/ex12_faster/emulate.py --quick

A transliteration of the kernel's index arithmetic and control flow, not a compile of it: the copy
cursor (tile transitions, zero-fill bounds, running source offsets), the shared-memory layouts
(padded and XOR-swizzled), ldmatrix / ldmatrix.trans with the PTX's lane-to-row and
register-to-element rules, the m16n8k16 fragment layouts of A, B and the accumulators (PTX ISA,
"Matrix fragments for mma.m16n8k16"), the ring of STAGES buffers with cp.async groups, the
persistent tile loop, and both epilogues (16-byte stores after the quad shuffle, and float2 /
scalar stores). Inputs are small integers, so every product and sum is exact: C must equal A @ B
exactly, and every element of C must be written once (C starts as NaN).

Ordering is checked separately from values. With __syncthreads (SCHED 0, 1), by barrier epochs
(every __syncthreads starts a new epoch; warps are unordered inside one): a buffer read at epoch e
must hold the K tile the consumer expects, written by a cp.async group that its threads waited for
at an epoch < e (read after write), and a copy into a buffer issued at epoch e must come after
every read of that buffer's previous K tile (epoch < e: write after read). With mbarriers (SCHED
2), by phases: every mbarrier counts its arrivals and completed phases; a wait for a parity whose
phase has not completed is a deadlock here (the warps run in lockstep, so nobody else can still
arrive); a read must follow a full-barrier wait for that very fill (not an older or newer one) and
precede the warp's empty arrival; a copy into a buffer must follow the producer's empty wait for
the buffer's previous fill and precede the thread's full arrival for its own fill.

Also prints the bank-conflict count (wavefronts per instruction) of every ldmatrix phase and
cp.async store pattern of both layouts: 16-byte accesses, 8 lanes per 128-byte wavefront.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

CONFIGS = [  # (WM, WN, BK, STAGES, SWZ, SCHED): the draft's ten instantiations; the reference keeps three
    (2, 4, 32, 4, False, 0), (2, 4, 32, 4, True, 0), (2, 4, 32, 4, False, 1), (2, 4, 32, 4, True, 1),
    (2, 4, 32, 5, True, 1), (2, 4, 64, 3, True, 1), (2, 4, 64, 4, True, 1), (4, 2, 32, 4, True, 1),
    (2, 4, 32, 4, True, 2), (2, 4, 64, 4, True, 2),
]


def xr(cols: int, r):
    """Layout<COLS, true>::xr: the XOR pattern of row r."""
    return ((r >> 1) & 3) if cols // 8 == 4 else (r & 7)


def row_bytes(cols: int, swz: bool) -> int:
    return cols * 2 if swz else (cols + 8) * 2


def off(cols: int, swz: bool, r, c):
    """Layout<COLS, SWZ>::off(r, c): byte offset of 16-byte chunk c of row r."""
    return r * row_bytes(cols, swz) + ((np.bitwise_xor(c, xr(cols, r)) if swz else c) << 4)


class Hazard(Exception):
    pass


def ldmatrix(smem16: np.ndarray, addr: np.ndarray, trans: bool) -> np.ndarray:
    """ldmatrix.x4 (.trans): addr (32,) byte addresses, lane 8j + r gives row r of matrix j. Returns
    (32 lanes, 4 regs, 2 halves). Non-trans: reg j of lane l = matrix j row l/4, elements 2(l%4),
    +1; trans: elements (row 2(l%4), col l/4) and (row 2(l%4)+1, col l/4)."""
    assert np.all(addr % 16 == 0)
    mats = np.empty((4, 8, 8), dtype=smem16.dtype)
    for j in range(4):
        for r in range(8):
            a = addr[8 * j + r] // 2
            mats[j, r] = smem16[a:a + 8]
    out = np.empty((32, 4, 2), dtype=smem16.dtype)
    for lane in range(32):
        g, q = lane // 4, lane % 4
        for j in range(4):
            if trans:
                out[lane, j] = mats[j, 2 * q:2 * q + 2, g]
            else:
                out[lane, j] = mats[j, g, 2 * q:2 * q + 2]
    return out


def a_matrix(frag: np.ndarray) -> np.ndarray:
    """16 x 16 A tile from its fragment (32, 4 regs, 2): reg0 (g, 2q+e), reg1 (g+8, 2q+e),
    reg2 (g, 2q+8+e), reg3 (g+8, 2q+8+e)."""
    m = np.full((16, 16), np.nan)
    for lane in range(32):
        g, q = lane // 4, lane % 4
        for e in range(2):
            m[g, 2 * q + e] = frag[lane, 0, e]
            m[g + 8, 2 * q + e] = frag[lane, 1, e]
            m[g, 2 * q + 8 + e] = frag[lane, 2, e]
            m[g + 8, 2 * q + 8 + e] = frag[lane, 3, e]
    assert not np.isnan(m).any()
    return m


def b_matrix(reg0: np.ndarray, reg1: np.ndarray) -> np.ndarray:
    """16 x 8 B tile (k x n) from its fragment: reg0 (k 2q+e, n g), reg1 (k 2q+8+e, n g)."""
    m = np.full((16, 8), np.nan)
    for lane in range(32):
        g, q = lane // 4, lane % 4
        for e in range(2):
            m[2 * q + e, g] = reg0[lane, e]
            m[2 * q + 8 + e, g] = reg1[lane, e]
    assert not np.isnan(m).any()
    return m


def tile_coords(t, tiles_m, tiles_n, group_m):
    width = group_m * tiles_n
    first_m = (t // width) * group_m
    gsz = min(tiles_m - first_m, group_m)
    r = t % width
    return first_m + r % gsz, r // gsz


def run_cta(cfg, bid, grid, A, B, C, M, N, K, lda, ldb, ldc, tiles_m, tiles_n, group_m, vec4):
    WM, WN, BK, STAGES, SWZ, SCHED = cfg
    SPREAD, MBAR = SCHED >= 1, SCHED == 2
    BM, BN, THREADS = 64 * WM, 64 * WN, 32 * WM * WN
    KS = BK // 16
    A_RB, B_RB = row_bytes(BK, SWZ), row_bytes(BN, SWZ)
    A_STAGE, B_STAGE = BM * A_RB, BK * B_RB
    A_CPR, B_CPR = BK // 8, BN // 8
    A_CH, B_CH = BM * A_CPR // THREADS, BK * B_CPR // THREADS
    NCH = A_CH + B_CH
    A_RSTEP, B_RSTEP = THREADS // A_CPR, THREADS // B_CPR
    smem = np.full((STAGES * (A_STAGE + B_STAGE)) // 2, np.nan)   # 16-bit elements, NaN = never written
    bs_base = STAGES * A_STAGE

    total = tiles_m * tiles_n
    my_tiles = (total - bid + grid - 1) // grid
    if my_tiles <= 0:
        return
    KT = -(-K // BK)
    iters = my_tiles * KT
    tid = np.arange(THREADS)
    a_r, a_c = tid // A_CPR, tid % A_CPR
    b_r, b_c = tid // B_CPR, tid % B_CPR
    a_dst, b_dst = off(BK, SWZ, a_r, a_c), off(BN, SWZ, b_r, b_c)
    # the XOR pattern of chunk i's row equals chunk 0's (A_RSTEP, B_RSTEP multiples of 8)
    for i in range(A_CH):
        assert np.all(off(BK, SWZ, a_r + i * A_RSTEP, a_c) == a_dst + i * A_RSTEP * A_RB)
    for i in range(B_CH):
        assert np.all(off(BN, SWZ, b_r + i * B_RSTEP, b_c) == b_dst + i * B_RSTEP * B_RB)

    st_ = {}   # producer state
    # ordering bookkeeping
    epoch = [0]
    groups = []           # committed groups: list of dict(waited_epoch=None, writes=[(stage, seq)])
    pending = []          # writes issued since the last commit: (stage, seq)
    content = {}          # stage -> (seq, group index or None while uncommitted)
    reads = {s: [] for s in range(STAGES)}   # stage -> [(epoch, seq)]
    nwarps = WM * WN
    # MBAR: arrivals and completed phases of full[s] / empty[s]; the fill a buffer's copies belong
    # to and whether its full arrival has been made; the fill the producer last waited empty for;
    # the fill the consumer last waited full for; (stage, seq) the warps have released
    mb = {(k, s): {"count": THREADS if k == "full" else nwarps, "arrived": 0, "phases": 0}
          for k in ("full", "empty") for s in range(STAGES)}
    fill_state = {}       # stage -> [fill n, full arrival made]
    empty_waited = {}     # stage -> fill n whose consumption the producer waited for
    full_waited = {}      # stage -> fill n the consumer waited for
    released = set()

    def mb_arrive(kind, stage, n):
        b = mb[(kind, stage)]
        b["arrived"] += n
        assert b["arrived"] <= b["count"], f"{kind}[{stage}] over-arrived"
        if b["arrived"] == b["count"]:
            b["arrived"] = 0
            b["phases"] += 1

    def mb_wait(kind, stage, parity):
        b = mb[(kind, stage)]
        if (b["phases"] & 1) == parity:       # the phase of this parity is the one still open
            raise Hazard(f"deadlock: wait on {kind}[{stage}] parity {parity} with {b['phases']} phases completed")
        return b["phases"] - 1                # the phase the wait returned for

    def producer_tile():
        tm, tn = tile_coords(st_["p_tile"], tiles_m, tiles_n, group_m)
        row = tm * BM + a_r
        col = tn * BN + b_c * 8
        st_["a_src"] = row * lda + a_c * 8          # element offsets into A / B (flat)
        st_["b_src"] = b_r * ldb + col
        st_["a_rows_ok"] = [row + i * A_RSTEP < M for i in range(A_CH)]
        st_["b_col_ok"] = col < N

    st_.update(p_tile=bid, p_k0=0, p_seq=0)
    producer_tile()

    def copy_chunk(stage, j):
        p_k0 = st_["p_k0"]
        if j < A_CH:
            i = j
            ok = st_["a_rows_ok"][i] & (p_k0 + a_c * 8 < K)
            src = st_["a_src"] + i * A_RSTEP * lda
            dst = stage * A_STAGE + a_dst + i * A_RSTEP * A_RB
            flat = A.reshape(-1)
        else:
            i = j - A_CH
            ok = st_["b_col_ok"] & (p_k0 + b_r + i * B_RSTEP < K)
            src = st_["b_src"] + i * B_RSTEP * ldb
            dst = bs_base + stage * B_STAGE + b_dst + i * B_RSTEP * B_RB
            flat = B.reshape(-1)
        for t in range(THREADS):
            d = dst[t] // 2
            if ok[t]:
                assert 0 <= src[t] and src[t] + 8 <= flat.size, "copy reads outside the matrix"
                smem[d:d + 8] = flat[src[t]:src[t] + 8]
            else:
                smem[d:d + 8] = 0.0
        # write after read: every read of this buffer's previous K tile is in an earlier epoch
        seq = st_["p_seq"]
        prev = content.get(stage)
        if MBAR:
            n = seq // STAGES
            assert seq % STAGES == stage, "K tile in the wrong buffer"
            fs = fill_state.get(stage)
            if fs is None or fs[0] != n:      # first copy of fill n
                if n >= 1 and empty_waited.get(stage) != n - 1:
                    raise Hazard(f"copy of K tile {seq} into buffer {stage} without waiting for the reads of fill {n - 1}")
                fill_state[stage] = [n, False]
                content[stage] = (seq, None)
            elif fs[1]:
                raise Hazard(f"copy of K tile {seq} after its full arrival")
            return
        if prev is None or prev[0] != seq:
            for (e, s) in reads[stage]:
                if s != seq and e >= epoch[0]:
                    raise Hazard(f"copy of K tile {seq} into buffer {stage} at epoch {epoch[0]} while K tile {s} "
                                 f"is read there at epoch {e}")
            reads[stage] = [(e, s) for (e, s) in reads[stage] if s == seq]
            content[stage] = (seq, None)
            pending.append((stage, seq))

    def commit():
        groups.append({"waited": None, "writes": list(pending)})
        for (stage, seq) in pending:
            content[stage] = (seq, len(groups) - 1)
        pending.clear()

    def wait(n):
        for g in groups[:max(0, len(groups) - n)]:
            if g["waited"] is None:
                g["waited"] = epoch[0]

    def sync():
        epoch[0] += 1

    def advance_producer():
        st_["p_k0"] += BK
        st_["p_seq"] += 1
        st_["a_src"] = st_["a_src"] + BK
        st_["b_src"] = st_["b_src"] + BK * ldb
        if st_["p_k0"] >= K and st_["p_tile"] + grid < total:
            st_["p_tile"] += grid
            st_["p_k0"] = 0
            producer_tile()

    def copy_all(stage):
        for j in range(NCH):
            copy_chunk(stage, j)

    # fragment reads
    lanes = np.arange(32)
    hi = lanes >> 4

    def warp_lane(warp):
        wm, wn = warp // WN, warp % WN
        a_row = wm * 64 + (lanes & 15)
        a_x = (hi ^ xr(BK, lanes & 15)) if SWZ else hi
        a_lane = a_row * A_RB
        b_x = (hi ^ xr(BN, lanes & 15)) if SWZ else hi
        b_lane = (lanes & 15) * B_RB + wn * 8 * 16
        return wm, wn, a_lane, a_x, b_lane, b_x

    W = [warp_lane(w) for w in range(WM * WN)]

    def load_frags(stage, ks, expect_seq):
        # read after write: buffer `stage` holds K tile expect_seq, waited for before this epoch
        seq, gi = content.get(stage, (None, None))
        if seq != expect_seq:
            raise Hazard(f"buffer {stage} holds K tile {seq}, the consumer expects {expect_seq}")
        if MBAR:
            if full_waited.get(stage) != seq // STAGES or not fill_state[stage][1]:
                raise Hazard(f"K tile {seq} read from buffer {stage} without a full wait for its fill")
            if (stage, seq) in released:
                raise Hazard(f"K tile {seq} read from buffer {stage} after the warp released it")
        elif gi is None or groups[gi]["waited"] is None or groups[gi]["waited"] >= epoch[0]:
            raise Hazard(f"K tile {seq} in buffer {stage} read at epoch {epoch[0]} without a wait + barrier")
        reads[stage].append((epoch[0], seq))
        out = []
        for (wm, wn, a_lane, a_x, b_lane, b_x) in W:
            as_s = stage * A_STAGE + a_lane + (((2 * ks) ^ a_x) << 4)
            af = [ldmatrix(smem, as_s + mi * 16 * A_RB, False) for mi in range(4)]
            bs_s = bs_base + stage * B_STAGE + b_lane + ks * 16 * B_RB
            bf = []
            for nj in range(4):
                t = ldmatrix(smem, bs_s + (((2 * nj) ^ b_x) << 4), True)
                bf.append((t[:, 0], t[:, 1]))
                bf.append((t[:, 2], t[:, 3]))
            # warp-level operands: A 64 x 16 (rows wm*64..), B 16 x 64
            Aw = np.vstack([a_matrix(f) for f in af])
            Bw = np.hstack([b_matrix(r0, r1) for (r0, r1) in bf])
            out.append((Aw, Bw))
        return out

    nw = WM * WN
    acc = [np.zeros((64, 64)) for _ in range(nw)]

    def mma_all(frags):
        for w in range(nw):
            Aw, Bw = frags[w]
            acc[w] += Aw @ Bw

    def full_arrive(stage):               # cp.async.mbarrier.arrive.noinc by every thread
        fill_state[stage][1] = True
        content[stage] = (content[stage][0], -1)
        mb_arrive("full", stage, THREADS)   # lockstep: the copies have landed

    def wait_full(stage, parity, seq):
        phase = mb_wait("full", stage, parity)
        if phase != seq // STAGES:
            raise Hazard(f"full wait on buffer {stage} returned for fill {phase}, K tile {seq} is fill {seq // STAGES}")
        full_waited[stage] = phase

    PRE = STAGES - 1 if SPREAD else STAGES
    if MBAR:
        sync()                            # after mbarrier.init
    for s in range(PRE):
        copy_all(s)
        if MBAR:
            full_arrive(s)
        else:
            commit()
        advance_producer()
    if MBAR:
        wait_full(0, 0, 0)
    else:
        wait(PRE - 1)
        sync()
    fr = [None, None]
    fr[0] = load_frags(0, 0, 0)
    st = 0
    pst = STAGES - 1
    ph = pph = 0
    c_tile = bid
    it = 0
    for t in range(my_tiles):
        for kt in range(KT):
            for ks in range(KS):
                cur = ks & 1
                if MBAR:
                    if ks < KS - 1:
                        fr[cur ^ 1] = load_frags(st, ks + 1, it)
                    half = fr[cur]                # mma rows 0-1 use the same fragments
                    if ks == 0 and it > 0:
                        phase = mb_wait("empty", pst, pph)
                        if phase != (it - 1) // STAGES:
                            raise Hazard(f"empty wait on buffer {pst} returned for fill {phase}, expected {(it - 1) // STAGES}")
                        empty_waited[pst] = phase
                    for j in range(ks * NCH // KS, (ks + 1) * NCH // KS):
                        copy_chunk(pst, j)
                    if ks == KS - 1:
                        full_arrive(pst)
                        for _w in range(nwarps):    # lane 0 of each warp, after __syncwarp
                            released.add((st, it))
                        mb_arrive("empty", st, nwarps)
                        pph = ph
                        pst = st
                        st = 0 if st + 1 == STAGES else st + 1
                        ph ^= 1 if st == 0 else 0
                        if it + 1 < iters:
                            wait_full(st, ph, it + 1)
                            fr[cur ^ 1] = load_frags(st, 0, it + 1)
                    mma_all(half)
                    continue
                if ks < KS - 1:
                    fr[cur ^ 1] = load_frags(st, ks + 1, it)
                if SPREAD:
                    for j in range(ks * NCH // KS, (ks + 1) * NCH // KS):
                        copy_chunk(pst, j)
                if ks == KS - 1:
                    if SPREAD:
                        commit()
                    wait(STAGES - 2)
                    sync()
                    if not SPREAD:
                        copy_all(st)
                        commit()
                    else:
                        pst = st
                    st = 0 if st + 1 == STAGES else st + 1
                    if it + 1 < iters:
                        fr[cur ^ 1] = load_frags(st, 0, it + 1)
                mma_all(fr[cur])
            advance_producer()
            it += 1
        # epilogue
        tm, tn = tile_coords(c_tile, tiles_m, tiles_n, group_m)
        for w in range(nw):
            wm, wn = W[w][0], W[w][1]
            # accumulator layout: acc[lane][mi][ni][v]: v0, v1 (row g, col 2q+e), v2, v3 (row g+8)
            lacc = np.empty((32, 4, 8, 4))
            for lane in range(32):
                g, q = lane // 4, lane % 4
                for mi in range(4):
                    for ni in range(8):
                        for v in range(4):
                            lacc[lane, mi, ni, v] = acc[w][mi * 16 + g + (v // 2) * 8, ni * 8 + 2 * q + (v % 2)]
            rbase = tm * BM + wm * 64 + (lanes >> 2)
            cbase = tn * BN + wn * 64
            q = lanes & 3
            if vec4:
                odd = (q & 1).astype(bool)
                ch0 = (q >> 1) + np.where(odd, 2, 0)
                for mi in range(4):
                    for p in range(4):
                        v = lacc[:, mi, 2 * p]
                        wv = lacc[:, mi, 2 * p + 1]
                        s0 = np.where(odd, v[:, 0], wv[:, 0]); s1 = np.where(odd, v[:, 1], wv[:, 1])
                        s2 = np.where(odd, wv[:, 2], v[:, 2]); s3 = np.where(odd, wv[:, 3], v[:, 3])
                        x = lanes ^ 1                      # __shfl_xor_sync(..., 1)
                        r0, r1, r2, r3 = s0[x], s1[x], s2[x], s3[x]
                        g = [np.where(odd, r0, v[:, 0]), np.where(odd, r1, v[:, 1]),
                             np.where(odd, wv[:, 0], r0), np.where(odd, wv[:, 1], r1)]
                        h = [np.where(odd, r2, wv[:, 2]), np.where(odd, r3, wv[:, 3]),
                             np.where(odd, v[:, 2], r2), np.where(odd, v[:, 3], r3)]
                        c0 = cbase + p * 16 + ch0 * 4
                        c1 = cbase + p * 16 + (ch0 ^ 2) * 4
                        r = rbase + mi * 16
                        for lane in range(32):
                            for (row, col, vals) in ((r[lane], c0[lane], g), (r[lane] + 8, c1[lane], h)):
                                if row < M and col < N:
                                    assert (row * ldc + col) % 4 == 0 and col + 3 < N
                                    for e in range(4):
                                        assert np.isnan(C[row, col + e]), "element written twice"
                                        C[row, col + e] = vals[e][lane]
            else:
                vec2 = ldc % 2 == 0
                for mi in range(4):
                    for hh in range(2):
                        for lane in range(32):
                            r = rbase[lane] + mi * 16 + hh * 8
                            if r >= M:
                                continue
                            for ni in range(8):
                                c = cbase + ni * 8 + q[lane] * 2
                                v0, v1 = lacc[lane, mi, ni, 2 * hh], lacc[lane, mi, ni, 2 * hh + 1]
                                for (cc, vv) in ((c, v0), (c + 1, v1)):
                                    if cc < N:
                                        assert np.isnan(C[r, cc]), "element written twice"
                                        C[r, cc] = vv
                                if vec2 and c + 1 < N:
                                    assert (r * ldc + c) % 2 == 0
            acc[w][:] = 0.0
        c_tile += grid
    if not MBAR:
        wait(0)
    else:                                 # the kernel's final waits on every buffer's last fill
        fills = iters + STAGES - 1
        assert st_["p_seq"] == fills, (st_["p_seq"], fills)
        for s in range(STAGES):
            if mb_wait("full", s, ((fills - 1 - s) // STAGES) & 1) != (fills - 1 - s) // STAGES:
                raise Hazard(f"final wait on full[{s}] returned for another fill")


def gemm(cfg, M, N, K, grid=None, group_m=16, vec4=None, seed=0):
    """solution.py's solve() on the emulated kernel: returns (C, expected)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, size=(M, K)).astype(np.float64)
    b = rng.integers(-3, 4, size=(K, N)).astype(np.float64)
    lda, ldb = -(-K // 8) * 8, -(-N // 8) * 8     # zero-padded copies (the padding path)
    A = np.zeros((M, lda)); A[:, :K] = a
    B = np.zeros((K, ldb)); B[:, :N] = b
    WM, WN = cfg[0], cfg[1]
    tiles_m, tiles_n = -(-M // (64 * WM)), -(-N // (64 * WN))
    tiles = tiles_m * tiles_n
    grid = tiles if grid is None else min(grid, tiles)
    if vec4 is None:
        vec4 = N % 4 == 0
    C = np.full((M, N), np.nan)
    for bid in range(grid):
        run_cta(cfg, bid, grid, A, B, C, M, N, K, lda, ldb, N, tiles_m, tiles_n, min(group_m, tiles_m), vec4)
    return C, a @ b


def wavefronts(addrs) -> int:
    """Shared-memory wavefronts of one warp-wide 16-byte access (8 lanes per 128-byte wavefront at
    best): the largest number of distinct 16-byte chunks that fall on one 16-byte bank group."""
    groups = {}
    for a in set(int(x) for x in addrs):
        groups.setdefault((a % 128) // 16, set()).add(a)
    return max(len(v) for v in groups.values())


def bank_report():
    print("bank conflicts (wavefronts per 8-lane phase of ldmatrix; per 32-lane cp.async store, best 4):")
    for (BK, BN, swz) in [(32, 256, False), (32, 256, True), (64, 256, False), (64, 256, True),
                          (32, 128, True), (64, 128, True)]:
        worst_ld, worst_cp = 0, 0
        lanes = np.arange(32)
        for rows0 in range(0, 64, 16):              # A: 16 x 16 blocks, lanes 0-15 chunk 2ks, 16-31 chunk 2ks+1
            for ks in range(BK // 16):
                addr = off(BK, swz, rows0 + (lanes & 15), 2 * ks + (lanes >> 4))
                for ph in range(4):
                    worst_ld = max(worst_ld, wavefronts(addr[8 * ph:8 * ph + 8]))
        for ks in range(BK // 16):                  # B: k rows 16ks.., column chunk 2nj (+1)
            for nj in range(BN // 16):
                addr = off(BN, swz, 16 * ks + (lanes & 15), 2 * nj + (lanes >> 4))
                for ph in range(4):
                    worst_ld = max(worst_ld, wavefronts(addr[8 * ph:8 * ph + 8]))
        for w in range(8):                          # cp.async stores of each warp
            t = 32 * w + lanes
            worst_cp = max(worst_cp, wavefronts(off(BK, swz, t // (BK // 8), t % (BK // 8))) / 4,
                           wavefronts(off(BN, swz, t // (BN // 8), t % (BN // 8))) / 4)
        print(f"  BK={BK:2d} BN={BN} {'swizzled' if swz else 'padded  '}: ldmatrix {worst_ld} wavefront(s) per phase "
              f"(1 = conflict-free), cp.async {worst_cp:.0f}x the minimum")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="three configs (burst, spread, mbar), fewer shapes")
    args = ap.parse_args()
    import ast
    from pathlib import Path
    src = (Path(__file__).resolve().parents[2] / "solutions" / "ex12_gemm_tensorcore" / "solution.py").read_text()
    kernels = ast.literal_eval(src.split("_KERNELS = ", 1)[1].split("\n}", 1)[0] + "\n}")
    if not set(kernels) <= set(CONFIGS):   # CONFIGS: every schedule gemm_body has, instantiated or not
        print(f"solution.py's _KERNELS has configs not in CONFIGS: {sorted(set(kernels) - set(CONFIGS))}")
        return 1
    bank_report()
    # (M, N, K, grid): odd sizes, K tails, one tile, several tiles per CTA (persistent), tiles_m >
    # group_m, fewer K tiles than STAGES (the cursor runs several tiles ahead), more K tiles than
    # STAGES on several tiles per CTA (the ring wraps inside and across tiles), N % 4 != 0
    shapes = [(1, 1, 1, None), (17, 17, 17, None), (129, 257, 40, 1), (200, 300, 72, 2), (64, 8, 200, None),
              (300, 260, 33, 3), (2, 3, 130, None), (130, 516, 16, 2), (520, 130, 24, 3),
              (260, 300, 200, 2)]
    configs = CONFIGS
    if args.quick:
        configs = [CONFIGS[0], CONFIGS[3], CONFIGS[8]]
        shapes = shapes[:5]
    fails = 0
    for cfg in configs:
        for (M, N, K, grid) in shapes:
            for vec4 in ([True, False] if N % 4 == 0 else [False]):
                try:
                    C, ref = gemm(cfg, M, N, K, grid=grid, group_m=2, vec4=vec4)
                    ok = not np.isnan(C).any() and np.array_equal(C, ref)
                    why = "" if ok else f"max err {np.nanmax(np.abs(C - ref)):.3g}, unwritten {int(np.isnan(C).sum())}"
                except (Hazard, AssertionError) as e:
                    ok, why = False, f"{type(e).__name__}: {e}"
                fails += not ok
                print(f"{str(cfg):38s} {M:4d}x{N:4d}x{K:4d} grid {str(grid):4s} vec4 {int(vec4)}: "
                      f"{'ok' if ok else 'FAIL ' + why}", flush=True)
    print("all ok" if not fails else f"{fails} FAILED")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
