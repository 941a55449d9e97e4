"""Compare a submission's output with the float64 oracle, and explain a mismatch.

An element passes when ``|out - ref| <= atol + rtol * |ref|`` (numpy.isclose's rule, with ref
in float64), or when both are the same infinity; NaN in the output fails unless the oracle has
NaN there too and the spec sets ``equal_nan``. With a norm-wise tolerance the whole output passes
when ``||out - ref||_F <= normwise * ||ref||_F`` and every element is finite where the oracle's is
(Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., sec. 3.5 and 6: matrix-product
error bounds are natural norm-wise). Works with numpy or cupy arrays (``xp``).

``atol`` may be one number or an array of the output's shape (a componentwise bound such as
``K * eps * |A| |B|``, see ``magnitude`` in docs/spec-format.md). Large outputs are compared in
chunks of :data:`CHUNK` elements, so the float64 temporaries stay small even for 2^31 elements.

Outputs are poisoned before every call with :func:`poison_value` (a NaN with a payload for floats),
so elements that were never written are counted separately from wrong ones. When the wrong
elements all lie at flat index >= 2^31, or an array of the case has more than 2^31 - 1
elements, the mismatch carries an "index overflow?" hint (32-bit index arithmetic).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from grader.dtypes import decode, is_float, storage_dtype
from grader.expr import Expr
from grader.spec import Tolerance, machine_epsilon

CHUNK = 2**25            # elements compared at once (float64 temporaries of 256 MiB)
INDEX_LIMIT = 2**31      # the first flat index a signed 32-bit int cannot hold

# Bit patterns written into outputs before each call. Float ones are quiet NaNs with a payload.
POISON_BITS = {
    "float16": (np.uint16, 0x7E5A),
    "float32": (np.uint32, 0x7FD1DEAD),
    "float64": (np.uint64, 0x7FF8DEADBEEFDEAD),
    # bfloat16 (stored as uint16 bits, see grader.dtypes): a quiet NaN whose payload (0x5A) differs
    # from the canonical 0x7FC0 that __float2bfloat16(NAN) and a float32 NaN's top half give, so a
    # kernel that computes a NaN is told from one that never wrote the element
    "bfloat16": (np.uint16, 0x7FDA),
    "int8": (np.uint8, 0xA5), "uint8": (np.uint8, 0xA5),
    "int32": (np.uint32, 0xA5A5A5A5), "uint32": (np.uint32, 0xA5A5A5A5),
    "int64": (np.uint64, 0xA5A5A5A5A5A5A5A5),
}


def poison_value(dtype: str) -> tuple[Any, int]:
    """(unsigned view dtype, bit pattern) to fill an output of spec dtype ``dtype`` with (a
    bfloat16 output, stored as uint16, gets its own pattern: pass the spec dtype, not the storage
    dtype). Raises KeyError for a dtype without one."""
    return POISON_BITS[dtype]


@dataclass(frozen=True)
class Mismatch:
    """How one output differs from the oracle. Indices are C-order multi-indices; ``atol`` is the
    absolute tolerance at the first wrong element (``atol_varies``: it differs per element);
    ``hint`` a likely cause (e.g. "index overflow?")."""
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
    atol_varies: bool = False
    hint: str | None = None
    first_bad_bits: str | None = None     # the raw bits there in hex, for outputs stored as bits (bfloat16)

    @property
    def normwise_failed(self) -> bool:
        return self.normwise_bound is not None and not (self.normwise_err or 0.0) <= self.normwise_bound

    def summary(self) -> str:
        """One or two lines for the report."""
        idx = ", ".join(map(str, self.first_bad_index))
        if self.normwise_failed:
            parts = [f"{self.output}: norm-wise relative error {self.normwise_err:.3g} "
                     f"(allowed {self.normwise_bound:.3g}); {self.n_bad} of {self.n_total} elements off by more "
                     f"than the allowed RMS error"]
        elif self.atol_varies:
            parts = [f"{self.output}: {self.n_bad} of {self.n_total} elements outside the componentwise bound"]
        else:
            parts = [f"{self.output}: {self.n_bad} of {self.n_total} elements wrong"]
        if self.n_unwritten:
            parts.append(f"{self.n_unwritten} never written (still hold the poison)")
        if self.n_nan:
            parts.append(f"{self.n_nan} NaN")
        text = "; ".join(parts)
        bits = f" (bits {self.first_bad_bits})" if self.first_bad_bits else ""
        text += f"; first at [{idx}]: got {self.first_bad_got:.7g}{bits}, expected {self.first_bad_expected:.7g}"
        if math.isfinite(self.max_abs_err):
            text += f"; max abs err {self.max_abs_err:.3g}, max rel err {self.max_rel_err:.3g}"
        if not self.normwise_failed:
            text += (f" (atol there {self.atol:.3g}, rtol {self.rtol:.3g})" if self.atol_varies
                     else f" (atol {self.atol:.3g}, rtol {self.rtol:.3g})")
        if self.pattern:
            text += f"; pattern: {self.pattern}"
        if self.hint:
            text += f"; {self.hint}"
        return text


def resolve_atol(tol: Tolerance, dtype: str, dims: Mapping[str, int], inputs: Mapping[str, Any], xp: Any,
                 magnitude: Any = None) -> Any:
    """The absolute tolerance at these dims and inputs (``atol`` may be an expression): a float, or
    an array of the output's shape when the expression uses ``magnitude`` (given here)."""
    if not isinstance(tol.atol, Expr):
        return float(tol.atol)
    env = {**dims, **inputs, "eps": machine_epsilon(dtype)}
    if "magnitude" in tol.atol.names:
        if magnitude is None:
            raise ValueError(f"atol {tol.atol.source!r} uses magnitude, but reference.py returned none; "
                             "fix: define magnitude(xp, *args) in reference.py")
        env["magnitude"] = magnitude
    value = tol.atol.evaluate(env, {"abs_sum": lambda a: float(xp.abs(a.astype(xp.float64)).sum())})
    return value if hasattr(value, "shape") and getattr(value, "ndim", 0) else float(value)


def resolve_rtol(tol: Tolerance, dtype: str, dims: Mapping[str, int]) -> float:
    """The relative tolerance at these dims (``rtol`` may be an expression of the dims and ``eps``)."""
    if not isinstance(tol.rtol, Expr):
        return float(tol.rtol)
    return float(tol.rtol.evaluate({**dims, "eps": machine_epsilon(dtype)}))


def resolve_normwise(tol: Tolerance, dtype: str, dims: Mapping[str, int]) -> float | None:
    """The norm-wise bound at these dims (None when the tolerance has none)."""
    if tol.normwise is None:
        return None
    return float(tol.normwise.evaluate({**dims, "eps": machine_epsilon(dtype)}))


def compare(name: str, out: Any, ref: Any, tol: Tolerance, atol: Any, equal_nan: bool, xp: Any,
            axis_names: Sequence[str] = (), normwise: float | None = None, rtol: float | None = None,
            large: Sequence[tuple[str, int]] = (), dtype: str | None = None) -> Mismatch | None:
    """None when ``out`` matches ``ref`` within tolerance, else a :class:`Mismatch`.

    Args:
        out: the submission's output (same shape as ``ref``), in the storage dtype of ``dtype``.
        ref: the oracle's output, float64 (or an integer dtype for exact outputs).
        atol: resolved absolute tolerance (see :func:`resolve_atol`): a float or an array of
            ``out``'s shape.
        axis_names: names for the axes in the pattern description (the spec's shape symbols).
        normwise: resolved norm-wise bound (see :func:`resolve_normwise`), or None.
        rtol: resolved relative tolerance (default: ``tol.rtol``, which must then be a number).
        large: (name, elements) of the case's arrays with more than 2^31 - 1 elements, for the
            "index overflow?" hint.
        dtype: the output's spec dtype (default: ``out``'s own dtype). "bfloat16": ``out`` holds
            uint16 bits, which are decoded to float32 chunk by chunk; the poison is looked for in
            the bits, and the mismatch carries the first wrong element's bits in hex.

    Raises:
        ValueError: shapes differ, ``atol``'s size differs, or ``out`` is not in ``dtype``'s storage dtype.
    """
    if rtol is None:
        rtol = float(tol.rtol)  # type: ignore[arg-type]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return _compare(name, out, ref, tol, atol, equal_nan, xp, axis_names, normwise, rtol, large,
                        dtype or str(out.dtype))


def _chunks(size: int) -> range:
    return range(0, max(size, 1), CHUNK)


def _compare(name: str, out: Any, ref: Any, tol: Tolerance, atol: Any, equal_nan: bool, xp: Any,
             axis_names: Sequence[str], normwise: float | None, rtol: float,
             large: Sequence[tuple[str, int]], dtype: str) -> Mismatch | None:
    if out.shape != ref.shape:
        raise ValueError(f"{name}: shape {out.shape} differs from the oracle's {ref.shape}")
    if str(out.dtype) != storage_dtype(dtype):
        raise ValueError(f"{name}: a {dtype} output is stored as {storage_dtype(dtype)}, got {out.dtype}")
    exact = not is_float(dtype)
    size = int(out.size)
    flat_out, flat_ref = out.reshape(-1), ref.reshape(-1)
    atol_arr = atol.reshape(-1) if hasattr(atol, "shape") else None
    if atol_arr is not None and atol_arr.size != size:
        raise ValueError(f"{name}: atol has {atol_arr.size} elements, the output {size}")
    view, bits = poison_value(dtype)
    bad = xp.empty(size, dtype=bool)
    n_unwritten = 0
    ref_sq = err_sq = 0.0
    nonfinite = False
    for lo in _chunks(size):
        hi = min(size, lo + CHUNK)
        o, r = flat_out[lo:hi], flat_ref[lo:hi]
        unwritten = o.view(view) == view(bits)
        o = decode(xp, o, dtype)   # bfloat16 bits -> float32 (other dtypes: unchanged)
        n_unwritten += int(unwritten.sum())
        if exact:
            ok = o.astype(xp.int64) == r.astype(xp.int64) if r.dtype.kind in "iu" else o.astype(xp.float64) == r
        else:
            got64, ref64 = o.astype(xp.float64), r.astype(xp.float64, copy=False)
            diff = xp.abs(got64 - ref64)
            # An infinite oracle value is matched only by the same infinity (inf <= inf would pass anything).
            if tol.elementwise:
                a = atol if atol_arr is None else atol_arr[lo:hi]
                ok = (xp.isfinite(ref64) & (diff <= a + rtol * xp.abs(ref64))) | (got64 == ref64)
            else:
                ok = xp.isfinite(got64) | (got64 == ref64)
            if equal_nan:
                ok |= xp.isnan(got64) & xp.isnan(ref64)
            ok &= ~unwritten  # the float poison is a NaN: never let equal_nan accept an unwritten element
            if normwise is not None:
                finite = xp.isfinite(ref64)
                ref_sq += float(xp.sum(xp.where(finite, ref64, 0.0) ** 2))
                err_sq += float(xp.sum(xp.where(finite, diff, 0.0) ** 2))
                nonfinite = nonfinite or bool((unwritten | ~(xp.isfinite(got64) | (got64 == ref64))).any())
        bad[lo:hi] = ~ok
    norm_err = None
    if normwise is not None and not exact:
        ref_norm, err_norm = math.sqrt(ref_sq), math.sqrt(err_sq)
        norm_err = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else math.inf)
        if nonfinite:
            norm_err = math.inf  # NaN, inf or unwritten elements never pass
        if not norm_err <= normwise:
            # elements "off": beyond the RMS error the bound allows per element
            rms_allowed = normwise * ref_norm / math.sqrt(max(size, 1))
            for cut in (rms_allowed, 0.0):  # if the error is spread thinly: every element that differs
                for lo in _chunks(size):
                    hi = min(size, lo + CHUNK)
                    d = xp.abs(decode(xp, flat_out[lo:hi], dtype).astype(xp.float64)
                               - flat_ref[lo:hi].astype(xp.float64))
                    bad[lo:hi] |= d > cut
                if bool(bad.any()):
                    break
    n_bad = int(bad.sum())
    if n_bad == 0 and (norm_err is None or norm_err <= normwise):
        return None
    n_nan = 0
    max_abs, max_rel = -1.0, -1.0
    for lo in _chunks(size):
        hi = min(size, lo + CHUNK)
        b = bad[lo:hi]
        got64 = decode(xp, flat_out[lo:hi], dtype).astype(xp.float64)
        ref64 = flat_ref[lo:hi].astype(xp.float64)
        if not exact:
            unwritten = flat_out[lo:hi].view(view) == view(bits)
            n_nan += int((xp.isnan(got64) & ~unwritten & b).sum())
        d = xp.abs(got64 - ref64)
        finite = xp.isfinite(d) & b
        if bool(finite.any()):
            max_abs = max(max_abs, float(d[finite].max()))
            rel = d / xp.maximum(xp.abs(ref64), np.finfo(np.float64).tiny)
            max_rel = max(max_rel, float(rel[finite].max()))
    max_abs = max_abs if max_abs >= 0 else float("inf")
    max_rel = max_rel if max_rel >= 0 else float("inf")
    flat_first = int(xp.argmax(bad)) if n_bad else 0
    first = tuple(int(i) for i in np.unravel_index(flat_first, out.shape)) if out.ndim else ()
    atol_first = float(atol_arr[flat_first]) if atol_arr is not None else float(atol)
    bad_nd = bad.reshape(out.shape)
    return Mismatch(
        output=name, n_total=size, n_bad=n_bad, n_unwritten=n_unwritten, n_nan=n_nan,
        max_abs_err=max_abs, max_rel_err=max_rel, first_bad_index=first,
        first_bad_got=float(decode(xp, flat_out[flat_first:flat_first + 1], dtype).astype(xp.float64)[0]),
        first_bad_expected=float(flat_ref[flat_first].astype(xp.float64)),
        pattern=describe_pattern(bad_nd, xp, axis_names), atol=atol_first, rtol=rtol,
        normwise_err=norm_err, normwise_bound=normwise, atol_varies=atol_arr is not None,
        hint=index_overflow_hint(flat_first if n_bad else None, large),
        first_bad_bits=f"0x{int(flat_out[flat_first]):04X}" if dtype == "bfloat16" else None)


def index_overflow_hint(first_bad: int | None, large: Sequence[tuple[str, int]] = ()) -> str | None:
    """"index overflow? ..." when the first wrong element lies at flat index >= 2^31 (what a signed
    32-bit index cannot reach) or the case has an array with more than 2^31 - 1 elements."""
    if first_bad is not None and first_bad >= INDEX_LIMIT:
        return (f"index overflow? every wrong element lies at flat index >= {INDEX_LIMIT} (2^31), which a "
                f"32-bit int cannot hold: compute indices in 64 bits (long long / size_t)")
    if large:
        names = ", ".join(f"{n} ({e} elements)" for n, e in large)
        return (f"index overflow? {names} exceed{'s' if len(large) == 1 else ''} 2^31 - 1 elements, more than "
                f"a 32-bit int indexes: compute indices in 64 bits (long long / size_t)")
    return None


def describe_pattern(bad: Any, xp: Any, axis_names: Sequence[str] = ()) -> str | None:
    """A short description of which elements are wrong when they follow a simple rule:
    all of them; every element with an index at/above or below a bound along one axis;
    a contiguous range of flat indices; every element with flat index % m == r (m a power of 2).
    Uses reductions and slices only (no index arrays), so it works on 2^31-element masks."""
    size = int(bad.size)
    n_bad = int(bad.sum())
    if n_bad == size:
        return "every element"
    if n_bad == 0:
        return None
    shape = bad.shape
    names = [axis_names[i] if i < len(axis_names) else f"axis {i}" for i in range(len(shape))]
    for axis, extent in enumerate(shape):
        if extent < 2:
            continue
        others = tuple(i for i in range(len(shape)) if i != axis)
        along = bad.any(axis=others) if others else bad       # 1-D: is any element bad at index i
        full = bad.all(axis=others) if others else bad
        lo = int(xp.argmax(along))
        hi = extent - 1 - int(xp.argmax(along[::-1]))
        # the bad set is exactly the slab lo..hi along this axis
        if int(full[lo:hi + 1].sum()) != hi - lo + 1 or n_bad != (hi - lo + 1) * (size // extent):
            continue
        if hi == extent - 1:
            return f"every element with {names[axis]} >= {lo}"
        if lo == 0:
            return f"every element with {names[axis]} <= {hi}"
        return f"every element with {lo} <= {names[axis]} <= {hi}"
    flat = bad.reshape(-1)
    lo = int(xp.argmax(flat))
    hi = size - 1 - int(xp.argmax(flat[::-1]))
    if hi - lo + 1 == n_bad:
        return f"the {n_bad} elements with flat index {lo}..{hi}"
    m = 2
    while m <= 1024 and m < size:
        r = lo % m
        expected = (size - r + m - 1) // m      # elements with flat index % m == r
        whole = size // m * m
        if n_bad == expected and bool(flat[:whole].reshape(-1, m)[:, r].all()) \
                and (whole + r >= size or bool(flat[whole + r])):
            return f"every element with flat index % {m} == {r}"
        m *= 2
    if n_bad <= 8:
        pos = xp.nonzero(flat)[0]
        return "only flat indices " + ", ".join(str(int(p)) for p in pos.tolist())
    return None
