"""Compare a submission's output with the float64 oracle, and explain a mismatch.

An element passes when ``|out - ref| <= atol + rtol * |ref|`` (numpy.isclose's rule, with ref
in float64), or when both are the same infinity; NaN in the output fails unless the oracle has
NaN there too and the spec sets ``equal_nan``. With a norm-wise tolerance the whole output passes
when ``||out - ref||_F <= normwise * ||ref||_F`` and every element is finite where the oracle's is
(Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., sec. 3.5 and 6: matrix-product
error bounds are natural norm-wise). Works with numpy or cupy arrays (``xp``).

Outputs are poisoned before every call with :func:`poison_value` (a NaN with a payload for floats),
so elements that were never written are counted separately from wrong ones.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from grader.expr import Expr
from grader.spec import Tolerance, machine_epsilon

# Bit patterns written into outputs before each call. Float ones are quiet NaNs with a payload.
POISON_BITS = {
    "float16": (np.uint16, 0x7E5A),
    "float32": (np.uint32, 0x7FD1DEAD),
    "float64": (np.uint64, 0x7FF8DEADBEEFDEAD),
    "int8": (np.uint8, 0xA5), "uint8": (np.uint8, 0xA5),
    "int32": (np.uint32, 0xA5A5A5A5), "uint32": (np.uint32, 0xA5A5A5A5),
    "int64": (np.uint64, 0xA5A5A5A5A5A5A5A5),
}


def poison_value(dtype: str) -> tuple[Any, int]:
    """(unsigned view dtype, bit pattern) to fill an output of ``dtype`` with."""
    return POISON_BITS[dtype]


@dataclass(frozen=True)
class Mismatch:
    """How one output differs from the oracle. Indices are C-order multi-indices."""
    output: str
    n_total: int
    n_bad: int
    n_unwritten: int
    n_nan: int
    max_abs_err: float
    max_rel_err: float
    first_bad_index: tuple[int, ...]
    first_bad_got: float
    first_bad_expected: float
    pattern: str | None
    atol: float
    rtol: float
    normwise_err: float | None = None     # ||out - ref||_F / ||ref||_F, when a norm-wise bound applies
    normwise_bound: float | None = None

    def summary(self) -> str:
        """One or two lines for the report."""
        idx = ", ".join(map(str, self.first_bad_index))
        if self.normwise_bound is not None:
            parts = [f"{self.output}: norm-wise relative error {self.normwise_err:.3g} "
                     f"(allowed {self.normwise_bound:.3g}); {self.n_bad} of {self.n_total} elements off by more "
                     f"than the allowed RMS error"]
        else:
            parts = [f"{self.output}: {self.n_bad} of {self.n_total} elements wrong"]
        if self.n_unwritten:
            parts.append(f"{self.n_unwritten} never written (still hold the poison)")
        if self.n_nan:
            parts.append(f"{self.n_nan} NaN")
        text = "; ".join(parts)
        text += f"; first at [{idx}]: got {self.first_bad_got:.7g}, expected {self.first_bad_expected:.7g}"
        if math.isfinite(self.max_abs_err):
            text += f"; max abs err {self.max_abs_err:.3g}, max rel err {self.max_rel_err:.3g}"
        if self.normwise_bound is None:
            text += f" (atol {self.atol:.3g}, rtol {self.rtol:.3g})"
        if self.pattern:
            text += f"; pattern: {self.pattern}"
        return text


def resolve_atol(tol: Tolerance, dtype: str, dims: Mapping[str, int], inputs: Mapping[str, Any], xp: Any) -> float:
    """The absolute tolerance at these dims and inputs (``atol`` may be an expression)."""
    if not isinstance(tol.atol, Expr):
        return float(tol.atol)
    env = {**dims, **inputs, "eps": machine_epsilon(dtype)}
    return float(tol.atol.evaluate(env, {"abs_sum": lambda a: float(xp.abs(a.astype(xp.float64)).sum())}))


def resolve_normwise(tol: Tolerance, dtype: str, dims: Mapping[str, int]) -> float | None:
    """The norm-wise bound at these dims (None when the tolerance has none)."""
    if tol.normwise is None:
        return None
    return float(tol.normwise.evaluate({**dims, "eps": machine_epsilon(dtype)}))


def compare(name: str, out: Any, ref: Any, tol: Tolerance, atol: float, equal_nan: bool, xp: Any,
            axis_names: Sequence[str] = (), normwise: float | None = None) -> Mismatch | None:
    """None when ``out`` matches ``ref`` within tolerance, else a :class:`Mismatch`.

    Args:
        out: the submission's output (any dtype, same shape as ``ref``).
        ref: the oracle's output, float64 (or an integer dtype for exact outputs).
        atol: resolved absolute tolerance (see :func:`resolve_atol`).
        axis_names: names for the axes in the pattern description (the spec's shape symbols).
        normwise: resolved norm-wise bound (see :func:`resolve_normwise`), or None.
    """
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return _compare(name, out, ref, tol, atol, equal_nan, xp, axis_names, normwise)


def _compare(name: str, out: Any, ref: Any, tol: Tolerance, atol: float, equal_nan: bool, xp: Any,
             axis_names: Sequence[str], normwise: float | None = None) -> Mismatch | None:
    if out.shape != ref.shape:
        raise ValueError(f"{name}: shape {out.shape} differs from the oracle's {ref.shape}")
    dtype = str(out.dtype)
    exact = not dtype.startswith("float")
    if exact:
        ok = out.astype(xp.int64) == ref.astype(xp.int64) if ref.dtype.kind in "iu" else out.astype(xp.float64) == ref
        got64 = out.astype(xp.float64)
        ref64 = ref.astype(xp.float64)
    else:
        got64 = out.astype(xp.float64)
        ref64 = ref.astype(xp.float64)
        diff = xp.abs(got64 - ref64)
        # An infinite oracle value is matched only by the same infinity (inf <= inf would pass anything).
        if tol.elementwise:
            ok = (xp.isfinite(ref64) & (diff <= atol + tol.rtol * xp.abs(ref64))) | (got64 == ref64)
        else:
            ok = xp.isfinite(got64) | (got64 == ref64)
        if equal_nan:
            ok |= xp.isnan(got64) & xp.isnan(ref64)
    view, bits = poison_value(dtype)
    unwritten = out.view(view) == view(bits)
    if not exact:
        ok &= ~unwritten  # the float poison is a NaN: never let equal_nan accept an unwritten element
    norm_err = None
    if normwise is not None and not exact:
        finite = xp.isfinite(ref64)
        ref_norm = float(xp.sqrt(xp.sum(xp.where(finite, ref64, 0.0) ** 2)))
        err_norm = float(xp.sqrt(xp.sum(xp.where(finite, diff, 0.0) ** 2)))
        norm_err = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else math.inf)
        if bool((unwritten | ~(xp.isfinite(got64) | (got64 == ref64))).any()):
            norm_err = math.inf  # NaN, inf or unwritten elements never pass
        if not norm_err <= normwise:
            # elements "off": beyond the RMS error the bound allows per element
            rms_allowed = normwise * ref_norm / math.sqrt(max(int(out.size), 1))
            ok &= ~(diff > rms_allowed)
            if bool(ok.all()):  # the error is spread thinly: report every element that differs
                ok &= ~(diff > 0)
    bad = ~ok
    n_bad = int(bad.sum())
    if n_bad == 0 and (norm_err is None or norm_err <= normwise):
        return None
    n_unwritten = int(unwritten.sum())
    n_nan = 0 if exact else int((xp.isnan(got64) & ~unwritten & bad).sum())
    diff_all = xp.abs(got64 - ref64)
    finite = xp.isfinite(diff_all) & bad
    max_abs = float(diff_all[finite].max()) if bool(finite.any()) else float("inf")
    rel = diff_all / xp.maximum(xp.abs(ref64), np.finfo(np.float64).tiny)
    max_rel = float(rel[finite].max()) if bool(finite.any()) else float("inf")
    flat_first = int(xp.argmax(bad.ravel()))
    first = tuple(int(i) for i in np.unravel_index(flat_first, out.shape)) if out.ndim else ()
    return Mismatch(
        output=name, n_total=int(out.size), n_bad=n_bad, n_unwritten=n_unwritten, n_nan=n_nan,
        max_abs_err=max_abs, max_rel_err=max_rel, first_bad_index=first,
        first_bad_got=float(got64.ravel()[flat_first]), first_bad_expected=float(ref64.ravel()[flat_first]),
        pattern=describe_pattern(bad, xp, axis_names), atol=atol, rtol=tol.rtol,
        normwise_err=norm_err, normwise_bound=normwise)


def describe_pattern(bad: Any, xp: Any, axis_names: Sequence[str] = ()) -> str | None:
    """A short description of which elements are wrong when they follow a simple rule:
    all of them; every element with an index at/above or below a bound along one axis;
    a contiguous range of flat indices; every element with flat index % m == r (m a power of 2)."""
    n_bad, size = int(bad.sum()), int(bad.size)
    if n_bad == size:
        return "every element"
    if n_bad == 0:
        return None
    shape = bad.shape
    names = [axis_names[i] if i < len(axis_names) else f"axis {i}" for i in range(len(shape))]
    for axis, extent in enumerate(shape):
        if extent < 2:
            continue
        idx = xp.arange(extent).reshape([-1 if i == axis else 1 for i in range(len(shape))])
        idx = xp.broadcast_to(idx, shape)
        lo, hi = int(idx[bad].min()), int(idx[bad].max())
        if bool(xp.all(bad == (idx >= lo))):
            return f"every element with {names[axis]} >= {lo}"
        if bool(xp.all(bad == (idx <= hi))):
            return f"every element with {names[axis]} <= {hi}"
        if bool(xp.all(bad == ((idx >= lo) & (idx <= hi)))):
            return f"every element with {lo} <= {names[axis]} <= {hi}"
    flat = bad.ravel()
    pos = xp.nonzero(flat)[0]
    lo, hi = int(pos[0]), int(pos[-1])
    if hi - lo + 1 == n_bad:
        return f"the {n_bad} elements with flat index {lo}..{hi}"
    iota = xp.arange(size)
    m = 2
    while m <= 1024 and m < size:
        r = lo % m
        if bool(xp.all(flat == (iota % m == r))):
            return f"every element with flat index % {m} == {r}"
        m *= 2
    if n_bad <= 8:
        return "only flat indices " + ", ".join(str(int(p)) for p in pos.tolist())
    return None
