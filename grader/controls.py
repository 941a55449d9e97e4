"""Negative controls, generated for any exercise from its oracle, and graded on the host backend.

A control is a fake submission whose ``solve`` runs the exercise's ``reference.py`` with numpy and
then spoils the result in one known way. The grader must pass the untouched oracle and fail every
spoiled one: this proves that the spec's cases, tolerance and checks can tell right from wrong,
without a GPU. ``grade check`` runs them for every exercise, so a new exercise has them for free.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from grader.cases import PROFILES
from grader.dtypes import E4M3
from grader.spec import EdgeCase, Spec, elements

CONTROLS = {
    "oracle": "the float64 oracle itself, cast to the output dtype (must pass)",
    "all_zero": "every output element 0",
    "perturbed": "three elements (first, middle, last) off by half their value plus one",
    "partial": "only the first half of each output written",
    "off_by_one": "the last element of each output not written",
    "multiple_of_256": "only the first n - n % 256 elements handled (a kernel without a tail loop): for an "
                       "output the size of the input, the rest is not written; for a reduction, the last "
                       "n % 256 inputs are left out (the outputs' tail instead, where an input cut short "
                       "is no valid problem: an indexed axis)",
    "low_precision": "inputs rounded to float16 before the oracle runs",
}
MAX_CONTROL_ELEMENTS = 2**20   # edge cases larger than this are skipped (host memory and time)

_TEMPLATE = '''"""Negative control {name!r}: {description}."""
import importlib.util

import numpy as np

_spec = importlib.util.spec_from_file_location("oracle", {oracle!r})
_oracle = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_oracle)
ORDER, PURE, OUTPUTS, SCALARS, CONTROL = {order!r}, {pure!r}, {outputs!r}, {scalars!r}, {name!r}
REDUCED = {reduced!r}  # input -> axes along a dim no output has (a reduction over it)
BFLOAT16 = {bfloat16!r}  # inputs that may be bfloat16, which arrive as uint16 bits
BFLOAT16_OUT = {bfloat16_out!r}  # outputs that may be bfloat16: written as uint16 bits
FP8_E4M3 = {fp8!r}  # inputs that may be float8_e4m3fn, which arrive as uint8 bits
_E4M3 = np.array([np.nan if x is None else x for x in {e4m3!r}], dtype=np.float32)   # each e4m3 code's value


def _decode(v, name):
    if name in BFLOAT16 and v.dtype == np.uint16:
        return (v.astype(np.uint32) << 16).view(np.float32)
    if name in FP8_E4M3 and v.dtype == np.uint8:
        return _E4M3[v]
    return v


def _cast(values, arr, name):
    """float64/int64 ``values`` in the storage of output ``arr`` (bfloat16: bits, nearest even)."""
    if name not in BFLOAT16_OUT or arr.dtype != np.uint16:
        return values.astype(arr.dtype)
    f = np.ascontiguousarray(values, dtype=np.float32)
    u = f.view(np.uint32)
    bits = (u + (((u >> 16) & 1) + 0x7FFF)) >> 16
    return np.where(np.isnan(f), np.uint32(0x7FC0), bits).astype(np.uint16)


def _inputs(named, cut_reduced=True):
    out = []
    for n in ORDER:
        if n in PURE:
            continue
        v = named[n]
        if n in SCALARS:
            v = v.item()
            if CONTROL == "low_precision" and isinstance(v, float):
                v = float(np.float16(v))
        else:
            v = np.array(_decode(v, n), copy=True)
            if CONTROL == "low_precision" and v.dtype.kind == "f":
                v = v.astype(np.float16).astype(v.dtype)
            if CONTROL == "multiple_of_256" and cut_reduced:
                for axis in REDUCED.get(n, ()):
                    v = np.take(v, np.arange(v.shape[axis] - v.shape[axis] % 256), axis=axis)
        out.append(v)
    return out


def solve(*args):
    named = dict(zip(ORDER, args))
    cut_inputs = CONTROL == "multiple_of_256" and bool(REDUCED)
    try:
        result = _oracle.reference(np, *_inputs(named))
    except Exception:
        if not cut_inputs:
            raise
        # the inputs cut short are no problem the oracle can solve (an axis that is indexed, not
        # summed over, such as a paged cache's blocks): the outputs are cut short instead
        cut_inputs = False
        result = _oracle.reference(np, *_inputs(named, cut_reduced=False))
    result = list(result) if isinstance(result, (tuple, list)) else [result]
    for name, value in zip(OUTPUTS, result):
        arr = named[name]
        real = arr.dtype.kind == "f" or (name in BFLOAT16_OUT and arr.dtype == np.uint16)
        value = np.asarray(value, dtype=np.float64 if real else np.int64).reshape(arr.shape)
        flat_out, flat = arr.reshape(-1), value.reshape(-1).copy()
        if CONTROL == "all_zero":
            flat[:] = 0
        elif CONTROL == "perturbed":
            for i in {{0, flat.size // 2, flat.size - 1}}:
                flat[i] = flat[i] + np.abs(flat[i]) // 2 + 1 if not real else flat[i] * 1.5 + 1.0
        if CONTROL == "partial":
            flat_out[: flat.size // 2] = _cast(flat[: flat.size // 2], arr, name)
        elif CONTROL == "off_by_one":
            flat_out[: flat.size - 1] = _cast(flat[: flat.size - 1], arr, name)
        elif CONTROL == "multiple_of_256" and not cut_inputs:
            k = flat.size - flat.size % 256
            flat_out[:k] = _cast(flat[:k], arr, name)
        else:
            flat_out[:] = _cast(flat, arr, name)
'''


@dataclass(frozen=True)
class ControlResult:
    """How one control fared: ``expected_pass`` for the oracle; ``passed`` is the grade's verdict;
    ``diagnosis`` the first failure's message (or the reason a control does not apply)."""
    name: str
    expected_pass: bool
    passed: bool | None
    diagnosis: str
    graded: bool = True
    details: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Not applicable, or graded with the expected verdict."""
        return self.passed is None or (self.graded and self.passed == self.expected_pass)


def applicable(spec: Spec, control: str) -> str | None:
    """None when the control applies to the exercise, else why not (one line, printed by
    ``grade check`` as the control's skip reason)."""
    if control == "low_precision" and not any(dt in ("float32", "float64")
                                              for t in spec.inputs for dt in spec.dtypes_of(t)):
        return "no float32/float64 inputs to round"
    if control == "low_precision" and all(spec.dtypes_of(t) == ("bfloat16",) for t in spec.outputs):
        # float16's rounding of the inputs (relative 2^-11) is below the outputs' own (2^-8): a
        # tolerance that accepts a correctly rounded bfloat16 result accepts this control too
        return ("every output is bfloat16, whose own rounding (2^-8) exceeds the float16 rounding of the "
                "inputs (2^-11): a tolerance that accepts a right bfloat16 answer accepts this control too")
    return None


def control_spec(spec: Spec) -> Spec:
    """The spec with edge cases small enough for numpy on the host."""
    def small(e: EdgeCase) -> bool:
        return elements(spec, e.as_dict()) <= MAX_CONTROL_ELEMENTS
    return replace(spec, edge_cases=tuple(e for e in spec.edge_cases if small(e)))


def control_budget(spec: Spec) -> int:
    """Elements (over all arrays) a control's generated case may have: 2^16, or four times the
    smallest case the dims allow when that is larger (ex16's paged cache is 2^18 elements at its
    smallest: under 2^16 hypothesis could draw no case at all), at most MAX_CONTROL_ELEMENTS."""
    smallest = elements(spec, {d.name: -(-d.min // d.multiple_of) * d.multiple_of for d in spec.dims})
    return min(MAX_CONTROL_ELEMENTS, max(2**16, 4 * smallest))


def write_control(spec: Spec, name: str, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.cu").write_text("// negative control: no kernel\n")
    (folder / "solution.py").write_text(_TEMPLATE.format(
        name=name, description=CONTROLS[name], oracle=str((spec.directory / "reference.py").resolve()),
        order=list(spec.arg_order), pure=[t.name for t in spec.outputs if not t.inplace],
        outputs=[t.name for t in spec.outputs], scalars=[s.name for s in spec.scalars],
        reduced=reduced_axes(spec),
        bfloat16=[t.name for t in spec.inputs if "bfloat16" in spec.dtypes_of(t)],
        bfloat16_out=[t.name for t in spec.outputs if "bfloat16" in spec.dtypes_of(t)],
        fp8=[t.name for t in spec.inputs if "float8_e4m3fn" in spec.dtypes_of(t)],
        e4m3=[None if v != v else float(v) for v in E4M3]))
    return folder


def reduced_axes(spec: Spec) -> dict[str, list[int]]:
    """Input -> its axes along a reduced dim: the leading dim of an input that no output has
    (n of a sum over x[n]; K of a product a[M, K] @ b[K, N])."""
    reduced = {t.shape[0] for t in spec.inputs if t.shape and isinstance(t.shape[0], str)
               and t.shape[0].isidentifier()   # a dim, not an expression such as "ceil(N / 128)"
               and all(t.shape[0] not in o.shape for o in spec.outputs)}
    out = {t.name: [i for i, s in enumerate(t.shape) if s in reduced] for t in spec.inputs}
    return {k: v for k, v in out.items() if v}


def run_controls(spec: Spec, examples: int = 12, seed: int = 0) -> list[ControlResult]:
    """Grade every control on the host backend (correctness only)."""
    from grader.context import GradingContext
    from grader.grade import GradeOptions

    small = control_spec(spec)
    profile = replace(PROFILES["quick"], examples=examples, max_elements=control_budget(spec))
    results = []
    ctx = GradingContext.host()
    with tempfile.TemporaryDirectory(prefix="grade-controls-") as tmp:
        for name in CONTROLS:
            why_not = applicable(spec, name)
            if why_not:
                results.append(ControlResult(name, False, None, f"not applicable: {why_not}"))
                continue
            folder = write_control(spec, name, Path(tmp) / name)
            r = ctx.grade(small, folder, GradeOptions(profile=profile, seed=seed, backend="host", benchmark=False,
                                                      isolate=False))   # the grader's own code: it reads the oracle
            f = r.smallest_failure
            diagnosis = r.reason if not r.graded else (f"{f.description}: {f.message}" if f else "all cases passed")
            results.append(ControlResult(name, name == "oracle", r.correct, diagnosis, r.graded,
                                         f.details if f else ()))
    return results

