#!/usr/bin/env python3
"""Instruction mix of the K-tile loop of every GEMM kernel in a kernel.cu, read from its SASS.

    python3 drafts/ex12_faster/sass_mix.py solutions/ex12_gemm_tensorcore/kernel.cu

Compiles each file with NVRTC as grading does (sm_90, the grading options; grader.static), disassembles
with cuobjdump and nvdisasm (tests.draft_kernels.sass_functions: on PATH, under /usr/local/cuda*, or
from pip's nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm wheels), and for each kernel takes the backward branch
whose body holds the most HMMA (the K-tile loop). A forward branch inside the loop that skips a block
holding an integer division (MUFU.RCP: the copy cursor's move to the next tile, taken once per KT) is
reported apart, as "rare". Prints per K tile and warp: HMMA, LDSM, LDGSTS, the other instructions,
and how many HMMA are issued before the loop's BAR.SYNC.
"""
from __future__ import annotations

import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")


def cubin_of(path: Path) -> bytes:
    from grader.static import _nvrtc, grading_options
    nv = _nvrtc()
    prog = nv.createProgram(path.read_text(), str(path), [], [])
    nv.compileProgram(prog, grading_options(("-std=c++17",), "sm_90"))
    return nv.getCUBIN(prog)


def functions(sass: str) -> dict[str, list[tuple[int, str, str]]]:
    out, name = {}, None
    for raw in sass.splitlines():
        m = re.search(r"Function : (\S+)", raw)
        if m:
            name = m.group(1)
            out[name] = []
            continue
        m = LINE.search(raw)
        if m and name:
            out[name].append((int(m.group(1), 16), m.group(3), m.group(4)))
    return out


def loop_mix(ins):
    best = None
    for i, (addr, op, rest) in enumerate(ins):
        if op == "BRA":
            t = re.search(r"0x([0-9a-f]+)", rest)
            if t and int(t.group(1), 16) < addr:
                lo = int(t.group(1), 16)
                body = [x for x in ins if lo <= x[0] <= addr]
                n = sum(op2.startswith("HMMA") for _, op2, _ in body)
                if best is None or n > best[0]:
                    best = (n, body)
    if best is None:
        return None
    body = best[1]
    end = body[-1][0]
    rare = set()
    for addr, op, rest in body:   # forward branches skipping a block with a division, inside the loop
        if op == "BRA":           # (a spin wait's branch to its retry stub past the loop is not one)
            t = re.search(r"0x([0-9a-f]+)", rest)
            if t and addr < int(t.group(1), 16) <= end:
                blk = [x for x in body if addr < x[0] < int(t.group(1), 16)]
                if any(o.startswith("MUFU") for _, o, _ in blk):
                    rare |= {x[0] for x in blk}
    hot = [x for x in body if x[0] not in rare]
    c = Counter(op.split(".")[0] for _, op, _ in hot)
    bar = [i for i, x in enumerate(hot) if x[1].startswith("BAR")]
    before = sum(x[1].startswith("HMMA") for x in hot[:bar[0]]) if bar else None
    return c, len(hot), len(rare), before


def main(argv):
    import pytest
    from tests.draft_kernels import sass_functions
    for f in argv or [str(Path(__file__).resolve().parents[2] / "solutions" / "ex12_gemm_tensorcore" / "kernel.cu")]:
        path = Path(f).resolve()
        with tempfile.TemporaryDirectory() as d:
            try:
                funcs = sass_functions(cubin_of(path), Path(d))
            except pytest.skip.Exception as e:
                print(f"cannot read SASS here: {e}")
                return 2
        print(f"{path.relative_to(ROOT)}  (per K tile and warp; 'rare': the cursor's next-tile block)")
        for name, text in sorted(funcs.items()):
            if "pad_rows" in name or "_bf16_" in name:
                continue
            r = loop_mix(functions("Function : " + name + "\n" + text)[name])
            if r is None:
                continue
            c, n, nrare, before = r
            other = n - c["HMMA"] - c["LDSM"] - c["LDGSTS"]
            print(f"  {name:36s} {n:4d} instr: HMMA {c['HMMA']:3d}  LDSM {c['LDSM']:2d}  LDGSTS {c['LDGSTS']:2d}  "
                  f"other {other:3d} ({other / max(1, c['HMMA']):.2f}/HMMA)  rare {nrare:3d}  "
                  f"HMMA before BAR {before}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
