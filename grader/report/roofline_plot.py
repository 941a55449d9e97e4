"""The roofline plot of one grade (matplotlib; PNG or SVG).

Where the spec gives FLOPs: the classic roofline (Williams, Waterman and Patterson, "Roofline: an
insightful visual performance model for multicore architectures", CACM 52(4), 2009), log-log,
arithmetic intensity (FLOP per byte of the spec's minimum bytes) against achieved TFLOP/s, under
the measured copy bandwidth (TB/s, a slope) and the measured matrix rates (TFLOP/s, flat), with the
submission's and the reference's point per benchmark shape. Without FLOPs (a transpose, a
histogram): achieved GB/s per shape against the copy bandwidth. The ceilings are the grade's own
(``GradeResult.ceilings``, measured on its GPU); without them only the points are drawn.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from grader.grade import GradeResult


class PlotUnavailable(Exception):
    """matplotlib is not installed, or the grade has nothing to plot (one line, with the fix)."""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise PlotUnavailable("the roofline plot needs matplotlib; fix: python3 -m pip install matplotlib") from None
    matplotlib.use("Agg")   # no display needed
    import matplotlib.pyplot as plt
    return plt


def _points(result: GradeResult) -> list[tuple[str, str, float, float | None, float]]:
    """(shape, who, bytes, flops, time ms) for every timed shape, the submission's and the reference's."""
    out = []
    for b in result.benchmarks:
        for who, shape in (("yours", b.submission), ("reference", b.reference)):
            t = shape.time_ms if shape is not None else None
            if t:
                out.append((b.name, who, b.bytes, b.flops, t))
    return out


def figure(result: GradeResult) -> Any:
    """The plot as a matplotlib Figure. Raises :class:`PlotUnavailable`."""
    points = _points(result)
    if not points:
        raise PlotUnavailable(f"{result.exercise}: no timed shape to plot (correctness failed, or --no-timing)")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    c = result.ceilings
    style = {"yours": dict(marker="o", color="tab:blue"), "reference": dict(marker="^", color="tab:gray")}
    if all(flops for _, _, _, flops, _ in points):
        xs = [flops / nbytes for _, _, nbytes, flops, _ in points]
        lo, hi = min(xs) / 4, max(xs) * 4
        if c is not None:
            bw = c.copy_gbps / 1e3   # TB/s = TFLOP/s per FLOP/byte
            rates = [(name, r) for name, r in (("fp32", c.fp32_tflops), ("fp16", c.fp16_tflops), ("fp8", c.fp8_tflops)) if r]
            top = max([r for _, r in rates], default=bw * hi)
            grid = [lo * (hi / lo) ** (i / 100) for i in range(101)]
            ax.plot(grid, [min(bw * x, top) for x in grid], color="black", lw=1.5,
                    label=f"copy bandwidth {c.copy_gbps:,.0f} GB/s")
            for name, r in rates:
                ax.plot([r / bw, hi], [r, r], ls="--", lw=1, label=f"{name} matrix rate {r:,.0f} TFLOP/s")
        labeled: set[str] = set()
        for shape, who, nbytes, flops, t in points:
            x, y = flops / nbytes, flops / (t * 1e9)
            ax.scatter([x], [y], s=40, zorder=3, label=None if who in labeled else who, **style[who])
            labeled.add(who)
            if who == "yours":   # the reference's point sits close by: one label per shape
                ax.annotate(shape, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP / byte)")
        ax.set_ylabel("achieved TFLOP/s")
    else:
        shapes = list(dict.fromkeys(shape for shape, *_ in points))
        for k, who in enumerate(("yours", "reference")):
            ys = {shape: nbytes / (t * 1e6) for shape, w, nbytes, _, t in points if w == who}
            ax.bar([i + 0.4 * k for i, s in enumerate(shapes) if s in ys], [ys[s] for s in shapes if s in ys],
                   width=0.4, color=style[who]["color"], label=who)
        if c is not None:
            ax.axhline(c.copy_gbps, color="black", lw=1.5, label=f"copy bandwidth {c.copy_gbps:,.0f} GB/s")
        ax.set_xticks([i + 0.2 for i in range(len(shapes))], shapes, fontsize=8)
        ax.set_ylabel("achieved GB/s (the spec's minimum bytes / time)")
    device = result.device.name if result.device is not None else "no GPU"
    ax.set_title(f"{result.exercise}: roofline ({device})" + ("" if c else ", no measured ceilings"), fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def svg(result: GradeResult) -> str:
    """The plot as an SVG document (text), for an HTML page. Raises :class:`PlotUnavailable`."""
    fig = figure(result)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})   # reproducible: no time stamp
    _pyplot().close(fig)
    text = buf.getvalue()
    return text[text.find("<svg"):]   # without the XML prolog and doctype: inline in HTML


def write(result: GradeResult, path: Path) -> None:
    """Save the plot to ``path``: PNG or SVG by its suffix. Raises :class:`PlotUnavailable` (also
    for another suffix) and OSError."""
    if path.suffix.lower() not in (".png", ".svg"):
        raise PlotUnavailable(f"{path}: the plot is written as .png or .svg; fix: name the file *.png or *.svg")
    fig = figure(result)
    fig.savefig(path)
    _pyplot().close(fig)
