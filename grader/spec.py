"""Load and validate ``exercises/<name>/spec.toml`` into frozen dataclasses.

Every problem is reported as a :class:`SpecError` whose message names the file,
the field and the fix, e.g.::

    exercises/ex07_softmax/spec.toml: [dims.rows] max (0) is below min (1); fix: set max >= min

The format is documented field by field in ``docs/spec-format.md``.
"""
from __future__ import annotations

import functools
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from grader.dtypes import is_float, storage_dtype
from grader.expr import Expr, ExprError

DTYPES = ("float16", "bfloat16", "float8_e4m3fn", "float32", "float64", "int8", "uint8", "int32", "uint32", "int64")
BITS_DTYPES = ("bfloat16", "float8_e4m3fn")   # stored as raw bits (see grader.dtypes): arrays only, never a scalar
INPUT_ONLY_DTYPES: tuple[str, ...] = ()   # dtypes an output may not have (none today: bfloat16 outputs are
                                          # poisoned with a NaN bit pattern and decoded, see grader.compare)
# FP8 names an output is refused with a reason (they are not in DTYPES for inputs either): e4m3 has a
# single NaN code per sign (S.1111.111), so no spare pattern could mark an unwritten element
FP8_RE = re.compile(r"^(float8|fp8|e4m3|e5m2)", re.IGNORECASE)
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    # kind -> required parameters
    "normal": ("mean", "std"),
    "uniform": ("low", "high"),
    "integers": ("low", "high"),      # high exclusive
    "skewed": ("low", "high", "value", "fraction"),  # `fraction` of elements equal `value`
    "masked": ("mean", "std", "value", "fraction"),  # normal, with `fraction` of elements `value` (+-inf allowed)
    "cauchy": ("loc", "scale"),       # heavy-tailed; clipped to the dtype's finite range
    "row_constant": ("mean", "std"),  # one normal value per row (last axis), repeated along the row
    "ramp": ("low", "high"),          # evenly spaced from low to high (both included), in a random order
    "constant": ("value",),           # scalars only
}
OPTIONAL_PARAMS = {"skewed": ("value",)}   # skewed without `value`: the hot value is drawn per case
REAL_ONLY = ("masked", "cauchy", "row_constant")
CEILINGS = ("memory", "fp32", "fp16", "fp8")
# [features] forbidden_headers when a spec gives none: the algorithm libraries (CUB and Thrust
# whole; cooperative_groups' reduce and scan, whose tiles of up to a block's threads do a block's
# reduction or scan, and reduce_update_async a grid's combine; its tiles, shuffles, barriers and
# memcpy_async stay allowed)
DEFAULT_FORBIDDEN_HEADERS = ("cub/", "thrust/", "cooperative_groups/reduce.h", "cooperative_groups/scan.h",
                             "cooperative_groups/details/reduce.h", "cooperative_groups/details/scan.h",
                             "cooperative_groups/details/coalesced_reduce.h",
                             "cooperative_groups/details/coalesced_scan.h")
HEADER_FILE_SUFFIXES = (".h", ".hpp", ".hxx", ".cuh", ".inl")
NAME_RE = re.compile(r"^ex(\d\d)_[a-z0-9_]+$")
SECTIONS = ("exercise", "signature", "dims", "values", "edge_cases", "tolerance", "benchmark", "performance",
            "compile", "features", "limits", "types", "profile", "prepare")


# [features] arch: "sm_" + the compute capability (major and minor digits, e.g. 90 for 9.0), with an
# optional "a" for the architecture-specific target (sm_90a: wgmma, setmaxnreg; runs on 9.0 only).
ARCH_RE = re.compile(r"sm_(\d{2,3})(a?)")


class SpecError(ValueError):
    """A spec.toml problem: ``str(err)`` is one line with file, field and fix."""

    def __init__(self, path: Path | str, field_name: str, problem: str, fix: str):
        self.path, self.field, self.problem, self.fix = str(path), field_name, problem, fix
        where = f"[{field_name}] " if field_name else ""   # "": not a field's problem (a TOML syntax error)
        super().__init__(f"{path}: {where}{problem}; fix: {fix}")


MAX_EXTENT = 2**40   # the largest value a shape expression may give


@functools.lru_cache(maxsize=None)
def _shape_expr(source: str) -> Expr:
    return Expr(source)


def shape_expressions(tensors: tuple["TensorSpec", ...]) -> tuple[str, ...]:
    """The shape entries of ``tensors`` that are expressions of dims (not a dim name or an int)."""
    return tuple(dict.fromkeys(s for t in tensors for s in t.shape if isinstance(s, str) and not s.isidentifier()))


def shape_extent(source: str, dims: Mapping[str, int]) -> int:
    """The value of shape entry ``source``, an expression of the dims, for ``dims`` (see
    :meth:`TensorSpec.concrete_shape`). Raises ValueError unless it is an int >= 1."""
    try:
        value = _shape_expr(source).evaluate(dims)
    except (ArithmeticError, TypeError) as exc:   # a division by zero, ceil(K, K), ...
        raise ValueError(f"shape entry {source!r} for {dict(dims)}: {type(exc).__name__}: {exc}") from None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_EXTENT:
        raise ValueError(f"shape entry {source!r} is {value!r} for {dict(dims)}: an extent must be an int from 1 "
                         f"to 2**40 (use // or ceil(), not /)")
    return value


@dataclass(frozen=True)
class TensorSpec:
    """One array argument of ``solve``: name, dtype (a numpy name or a type variable of ``[types]``)
    and shape as dim symbols or ints. ``inplace`` outputs start from values drawn like an input's;
    ``offset`` (a dim name or 0) makes the array start that many elements after a 256-byte boundary."""
    name: str
    dtype: str
    shape: tuple[str | int, ...]
    inplace: bool = False
    offset: str | int = 0

    def concrete_shape(self, dims: Mapping[str, int]) -> tuple[int, ...]:
        """The extents for ``dims``: a dim name gives its value, an int itself, an expression of the
        dims (``"K // 128"``, ``"ceil(N / 128)"``) its value, which must be a positive int.

        Raises:
            ValueError: an expression gives a float or a value below 1 for these dims.
        """
        return tuple(s if isinstance(s, int) else dims[s] if s in dims else shape_extent(s, dims)
                     for s in self.shape)

    def concrete_dtype(self, types: Mapping[str, str]) -> str:
        return types.get(self.dtype, self.dtype)

    def offset_elements(self, dims: Mapping[str, int]) -> int:
        return dims[self.offset] if isinstance(self.offset, str) else int(self.offset)


@dataclass(frozen=True)
class ScalarSpec:
    """A scalar argument of ``solve`` (passed as a numpy scalar of ``dtype``)."""
    name: str
    dtype: str


@dataclass(frozen=True)
class DimSpec:
    """A shape symbol: inclusive range [min, max], values restricted to multiples of ``multiple_of``."""
    name: str
    min: int
    max: int
    multiple_of: int = 1


@dataclass(frozen=True)
class Distribution:
    """How one input's values are drawn (never all zero); ``params`` are (key, value) pairs."""
    kind: str
    params: tuple[tuple[str, float], ...]

    @property
    def label(self) -> str:
        return f"{self.kind}(" + ",".join(f"{k}={v:g}" for k, v in self.params) + ")"

    def param(self, key: str) -> float:
        return dict(self.params)[key]


@dataclass(frozen=True)
class EdgeCase:
    """Dim values (and optionally type-variable values) that are always tested; ``hidden`` ones run
    only in grading mode. ``values`` pins the distribution index of some drawn arguments (the others
    take the edge case's turn)."""
    dims: tuple[tuple[str, int], ...]
    hidden: bool = False
    types: tuple[tuple[str, str], ...] = ()
    values: tuple[tuple[str, int], ...] = ()

    def as_dict(self) -> dict[str, int]:
        return dict(self.dims)


@dataclass(frozen=True)
class Tolerance:
    """How an output is compared with the float64 oracle.

    Elementwise (when ``elementwise``): |out - ref| <= atol + rtol * |ref|; ``rtol`` may be an
    expression of the dims and ``eps`` (the output dtype's machine epsilon); ``atol`` an expression
    of the dims, ``eps``, ``abs_sum(input)`` and ``magnitude`` (per element: the array that the
    exercise's ``reference.py`` ``magnitude(xp, *args)`` returns for this output, e.g. |A| |B|).
    Norm-wise (when ``normwise`` is set): ||out - ref||_F / ||ref||_F <= normwise, an expression of
    the dims and ``eps``; for sums of many products (GEMM), where the elementwise error of an
    element that cancels to near zero says nothing. Non-finite values never pass either check.
    """
    rtol: float | Expr
    atol: float | Expr
    normwise: Expr | None = None
    elementwise: bool = True

    @property
    def uses_magnitude(self) -> bool:
        return isinstance(self.atol, Expr) and "magnitude" in self.atol.names


@dataclass(frozen=True)
class Benchmark:
    """A timed shape with its minimum work: ``flops`` and ``bytes`` are expressions of the dims."""
    name: str
    dims: tuple[tuple[str, int], ...]
    bytes: Expr
    flops: Expr | None = None
    hidden: bool = False
    types: tuple[tuple[str, str], ...] = ()
    values: tuple[tuple[str, int], ...] = ()  # pinned distribution index per drawn argument (default 0)

    def distribution(self, name: str) -> int:
        return dict(self.values).get(name, 0)

    def as_dict(self) -> dict[str, int]:
        return dict(self.dims)


@dataclass(frozen=True)
class Thresholds:
    """Piecewise-linear score curve: zero points at or below ``*_zero``, full at or above ``*_full``.

    ``ratio`` is t_reference / t_student; ``roofline`` is the achieved fraction of the ceiling.
    Ratios are clamped to [ratio_floor, ratio_cap] before the geometric mean over shapes.
    A ratio above ``implausible_ratio`` or a roofline fraction above 1.05 is flagged for review.
    """
    ratio_zero: float = 0.1
    ratio_full: float = 0.8
    roofline_zero: float = 0.05
    roofline_full: float = 0.7
    ratio_floor: float = 0.01
    ratio_cap: float = 1.25
    implausible_ratio: float = 3.0


@dataclass(frozen=True)
class Limits:
    """Per-worker limits: wall-clock seconds for compiling/importing the submission, one call and
    the whole grade; resident host memory and device memory of the worker process in GiB (device
    memory as NVML reports it per process, its CUDA context included)."""
    compile_s: float = 120.0
    case_s: float = 20.0
    total_s: float = 900.0
    host_memory_gib: float = 16.0
    device_memory_gib: float = 24.0


@dataclass(frozen=True)
class Spec:
    """A validated exercise spec; see ``docs/spec-format.md``."""
    name: str
    title: str
    path: Path
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    dims: tuple[DimSpec, ...]
    constraints: tuple[Expr, ...]
    values: Mapping[str, tuple[Distribution, ...]]
    edge_cases: tuple[EdgeCase, ...]
    tolerances: Mapping[str, Tolerance]
    equal_nan: bool
    benchmarks: tuple[Benchmark, ...]
    ceiling: str
    performance: Mapping[str, Thresholds]  # "default" and arch keys like "sm_90"
    compile_options: tuple[str, ...]
    required: tuple[str, ...]
    forbidden: tuple[str, ...]
    points_correctness: float
    points_performance: float
    limits: Limits = field(default_factory=Limits)
    scalars: tuple[ScalarSpec, ...] = ()
    order: tuple[str, ...] = ()             # solve's argument order; empty: inputs, outputs, scalars
    types: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    declared_hidden: tuple[int, int] = (0, 0)  # hidden (cases, benchmarks) removed by `grade publish`
    required_ptx: tuple[str, ...] = ()      # regexes the PTX of kernel.cu must match (e.g. mma)
    forbidden_libraries: tuple[str, ...] = ()  # shared libraries the worker must not load (e.g. libcublas)
    allowed_kernels: tuple[str, ...] = ()   # fnmatch patterns: kernels not of kernel.cu (or traced copies) a graded call may run
    # header folders whose device code a kernel of the submission may not inline (matched against
    # the files its PTX line information names): CUB's and Thrust's algorithms (cub::BlockReduce,
    # cub::AgentScan, ...) would do the exercise's work inside a kernel the student only wraps
    forbidden_headers: tuple[str, ...] = DEFAULT_FORBIDDEN_HEADERS
    # metric groups `grade --profile` reports (grader.profiling.GROUPS); empty: chosen by the ceiling
    profile_metrics: tuple[str, ...] = ()
    # [features] arch: the target kernel.cu needs ("sm_90a" for wgmma/setmaxnreg; see ARCH_RE), None:
    # the GPU's own. Only a compile target: calibration files and [performance.sm_XY] thresholds stay
    # keyed by the device's arch ("sm_90", grader.device.DeviceInfo.arch), never by this value.
    arch: str | None = None
    # [prepare] function: the name of a function in reference.py that turns each case's drawn inputs
    # into the inputs the exercise means (values of one input that depend on another's: a block
    # table that is a permutation, poison past a length drawn in another input); None: as drawn.
    # Called by grader.instance.draw_inputs; see docs/spec-format.md.
    prepare: str | None = None

    @property
    def arg_order(self) -> tuple[str, ...]:
        """Names of solve's arguments in call order."""
        return self.order or tuple(a.name for a in (*self.inputs, *self.outputs, *self.scalars))

    @property
    def drawn(self) -> tuple[str, ...]:
        """Names whose values are drawn from ``[values]``: inputs, in-place outputs, scalars."""
        return (*(t.name for t in self.inputs), *(t.name for t in self.outputs if t.inplace),
                *(s.name for s in self.scalars))

    def argument(self, name: str) -> "TensorSpec | ScalarSpec":
        return next(a for a in (*self.inputs, *self.outputs, *self.scalars) if a.name == name)

    def dtypes_of(self, t: "TensorSpec | ScalarSpec") -> tuple[str, ...]:
        """Every concrete dtype the argument can have."""
        return self.types.get(t.dtype, (t.dtype,))

    @property
    def directory(self) -> Path:
        return self.path.parent

    @property
    def number(self) -> int:
        return int(self.name[2:4])

    @property
    def total_points(self) -> float:
        return self.points_correctness + self.points_performance

    def dim(self, name: str) -> DimSpec:
        return next(d for d in self.dims if d.name == name)

    def thresholds(self, arch: str | None) -> Thresholds:
        """The thresholds for ``arch`` (e.g. "sm_90"), falling back to the spec's defaults."""
        return self.performance.get(arch or "", self.performance["default"])

    @property
    def shape_expressions(self) -> tuple[str, ...]:
        """The shape entries of inputs and outputs that are expressions of dims ("K // 128")."""
        return shape_expressions(self.inputs + self.outputs)

    def check_dims(self, dims: Mapping[str, int]) -> str | None:
        """None when ``dims`` satisfy ranges, multiples, constraints and every shape expression
        (each an int from 1 to 2**40), else the reason."""
        for d in self.dims:
            v = dims.get(d.name)
            if v is None:
                return f"{d.name} is missing"
            if not d.min <= v <= d.max:
                return f"{d.name}={v} is outside [{d.min}, {d.max}]"
            if v % d.multiple_of:
                return f"{d.name}={v} is not a multiple of {d.multiple_of}"
        for c in self.constraints:
            if not c.evaluate(dims):
                return f"constraint {c.source!r} does not hold"
        for source in self.shape_expressions:   # each an extent >= 1: dims that break one are not allowed
            try:
                shape_extent(source, dims)
            except ValueError as exc:
                return str(exc)
        return None


# ---------------------------------------------------------------------------------------------
def load_spec(path: Path | str) -> Spec:
    """Parse and validate one spec.toml.

    Raises:
        SpecError: with file, field and fix, for unreadable TOML and every invalid field.
    """
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise SpecError(path, "file", "does not exist", "create it (see docs/spec-format.md)") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(path, "", *_toml_syntax_error(exc)) from None
    return _Parser(path, raw).spec()


def _toml_syntax_error(exc: tomllib.TOMLDecodeError) -> tuple[str, str]:
    """(problem, fix) of a TOML syntax error: "TOML syntax error at line L, column C: what"."""
    text = str(exc)
    m = re.search(r"\s*\(at line (\d+), column (\d+)\)$", text)
    if m:
        return (f"TOML syntax error at line {m[1]}, column {m[2]}: {text[:m.start()]}",
                f"correct the syntax at line {m[1]} (see docs/spec-format.md)")
    m = re.search(r"\s*\(at end of document\)$", text)
    what = text[:m.start()] if m else text
    return f"TOML syntax error at the end of the file: {what}", "correct the syntax there (see docs/spec-format.md)"


def _closest(word: str, known) -> str | None:  # type: ignore[no-untyped-def]
    """The known word closest to a misspelt ``word`` (difflib), None when none is close."""
    import difflib
    close = difflib.get_close_matches(word, [str(k) for k in known], n=1)
    return close[0] if close else None


class _Parser:
    def __init__(self, path: Path, raw: dict[str, Any]):
        self.path, self.raw = path, raw
        self.dim_lows: dict[str, int] = {}   # each dim's smallest allowed value (set by parse)
        self.shape_sources: tuple[str, ...] = ()   # the shape entries that are expressions (set by parse)

    def err(self, fld: str, problem: str, fix: str) -> SpecError:
        return SpecError(self.path, fld, problem, fix)

    def table(self, data: Any, fld: str, required: bool = True) -> dict[str, Any]:
        if data is None and not required:
            return {}
        if not isinstance(data, dict):
            raise self.err(fld, "is missing or not a table", f"add a [{fld}] table")
        return data

    def only(self, data: dict, fld: str, keys: set[str] | tuple[str, ...], what: str = "") -> None:
        """Reject keys a table does not know (a misspelt key must not be silently ignored); checked
        before the table's required keys, so that a misspelt one is named as such."""
        extra = set(data) - set(keys)
        if extra:
            raise self.unknown(fld, extra, keys, what)

    def unknown(self, fld: str, extra, known, what: str = "", kind: str = "key") -> SpecError:  # type: ignore[no-untyped-def]
        """The error for keys ``extra`` that [fld] does not know: each named, with the closest known
        key (did you mean ...?) when one is close; ``what`` qualifies it (e.g. " for normal")."""
        extra = sorted(extra)
        hints = {k: _closest(k, known) for k in extra}
        guesses = [f"{hints[k]!r}" + (f" for {k!r}" if len(extra) > 1 else "") for k in extra if hints[k]]
        problem = (f"unknown {kind}{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))}{what}"
                   + (f" (did you mean {', '.join(guesses)}?)" if guesses else ""))
        renames = [f"rename {k!r} to {hints[k]!r}" for k in extra if hints[k]]
        return self.err(fld, problem, "; ".join(renames) if len(renames) == len(extra)
                        else f"use only {', '.join(sorted(str(k) for k in known))}")

    def get(self, data: dict, fld: str, key: str, kind: type | tuple, default: Any = ...) -> Any:
        if key not in data:
            if default is ...:
                raise self.err(fld, f"has no '{key}'", f"add {key} = ... to [{fld}]")
            return default
        value = data[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
            names = " or ".join(k.__name__ for k in kinds)
            article = "an" if names[0] in "aeiou" else "a"
            raise self.err(fld, f"'{key}' is {value!r}, expected {names}", f"give '{key}' {article} {names} value")
        return value

    def expr(self, source: Any, fld: str, allowed: set[str], funcs: set[str] = frozenset()) -> Expr:
        if not isinstance(source, str):
            raise self.err(fld, f"expression {source!r} is not a string", 'write it as a string, e.g. "4 * n"')
        try:
            e = Expr(source)
        except ExprError as exc:
            raise self.err(fld, str(exc), "use numbers, dim names, + - * / // % ** and comparisons") from None
        unknown = e.names - allowed
        if unknown:
            raise self.err(fld, f"{source!r} uses unknown name(s) {sorted(unknown)}",
                           f"use only {sorted(allowed)}")
        from grader.expr import FUNCTIONS
        bad = e.calls - set(FUNCTIONS) - set(funcs)
        if bad:
            raise self.err(fld, f"{source!r} calls unknown function(s) {sorted(bad)}",
                           f"use only {sorted(set(FUNCTIONS) | set(funcs))}")
        return e

    # -- sections ------------------------------------------------------------------------------
    def spec(self) -> Spec:
        unknown = set(self.raw) - set(SECTIONS)
        if unknown:   # first: a misspelt section is not "missing"
            raise self.unknown(sorted(unknown)[0], unknown, SECTIONS, kind="section")
        ex = self.table(self.raw.get("exercise"), "exercise")
        self.only(ex, "exercise", ("name", "title", "points", "hidden"))
        name = self.get(ex, "exercise", "name", str)
        if not NAME_RE.match(name):
            raise self.err("exercise", f"name {name!r} is not like 'ex07_softmax'", "use exNN_lowercase_words")
        if name != self.path.parent.name:
            raise self.err("exercise", f"name {name!r} differs from its folder {self.path.parent.name!r}",
                           "make the name equal the folder name")
        title = self.get(ex, "exercise", "title", str)
        hid = self.table(ex.get("hidden"), "exercise.hidden", required=False)
        self.only(hid, "exercise.hidden", ("cases", "benchmarks"))
        declared_hidden = (self.get(hid, "exercise.hidden", "cases", int, 0),
                           self.get(hid, "exercise.hidden", "benchmarks", int, 0))
        points = self.table(ex.get("points"), "exercise.points")
        self.only(points, "exercise.points", ("correctness", "performance"))
        p_corr = float(self.get(points, "exercise.points", "correctness", (int, float)))
        p_perf = float(self.get(points, "exercise.points", "performance", (int, float)))
        if p_corr < 0 or p_perf < 0 or p_corr + p_perf <= 0:
            raise self.err("exercise.points", "points must be >= 0 and add up to more than 0",
                           "give correctness and performance non-negative points")

        dims, constraints = self.dims()
        dim_names = {d.name for d in dims}
        self.dim_lows = {d.name: -(-d.min // d.multiple_of) * d.multiple_of for d in dims}
        types = self.type_vars()
        inputs, outputs, scalars, order = self.signature(dim_names, types)
        self.shape_sources = shape_expressions(inputs + outputs)
        values = self.values(inputs, outputs, scalars, types)
        edge_cases = self.edge_cases(dims, constraints, types)
        tolerances, equal_nan = self.tolerances(outputs, dim_names, {t.name for t in inputs}, types)
        benchmarks = self.benchmarks(dims, constraints, types)
        ceiling, performance = self.performance()
        comp = self.table(self.raw.get("compile"), "compile", required=False)
        self.only(comp, "compile", ("options",))
        options = self.str_list(comp, "compile", "options")
        feats = self.table(self.raw.get("features"), "features", required=False)
        self.only(feats, "features", ("required", "forbidden", "required_ptx", "forbidden_libraries", "allowed_kernels",
                                      "forbidden_headers", "arch"))
        arch = self.arch(feats)
        required = self.str_list(feats, "features", "required")
        forbidden = self.str_list(feats, "features", "forbidden")
        required_ptx = self.str_list(feats, "features", "required_ptx")
        forbidden_libraries = self.str_list(feats, "features", "forbidden_libraries")
        for lib in forbidden_libraries:
            if not re.fullmatch(r"[A-Za-z0-9_.+-]+", lib):
                raise self.err("features", f"forbidden_libraries entry {lib!r} is not a library name",
                               'give names like "libcublas" (matched against the file names of mapped libraries)')
        allowed_kernels = self.str_list(feats, "features", "allowed_kernels")
        for pattern in allowed_kernels:
            if not re.fullmatch(r"[A-Za-z0-9_*?]+|<(memcpy|stream-memory-op|host-memory):[A-Za-z0-9_*?]+>", pattern):
                raise self.err("features", f"allowed_kernels entry {pattern!r} is not a kernel name pattern",
                               'give kernel names, * for any characters (e.g. "cupy_copy*"), or other traced work '
                               'as "<memcpy:FUNCTION>" (e.g. "<memcpy:cudaMemcpyAsync*>"), '
                               '"<stream-memory-op:FUNCTION>" or "<host-memory:FUNCTION>"')
        forbidden_headers = (self.str_list(feats, "features", "forbidden_headers") if "forbidden_headers" in feats
                             else list(DEFAULT_FORBIDDEN_HEADERS))
        for entry in forbidden_headers:
            if not (re.fullmatch(r"[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+)*/", entry)
                    or (re.fullmatch(r"[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+)*", entry)
                        and entry.endswith(HEADER_FILE_SUFFIXES))):
                raise self.err("features", f"forbidden_headers entry {entry!r} is neither a header folder nor a header file",
                               'give folders or files as they appear in #include lines: a folder ends in "/" '
                               '(e.g. "cub/"), a file in .h, .hpp, .hxx, .cuh or .inl (e.g. "cooperative_groups/reduce.h")')
        for pattern in required + forbidden + required_ptx:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise self.err("features", f"pattern {pattern!r} is not a regular expression ({exc})",
                               "escape special characters") from None
        prof = self.table(self.raw.get("profile"), "profile", required=False)
        self.only(prof, "profile", ("metrics",))
        profile_metrics = self.str_list(prof, "profile", "metrics")
        from grader.profiling import GROUPS
        for group in profile_metrics:
            if group not in GROUPS:
                close = _closest(group, list(GROUPS))
                raise self.err("profile", f"metrics entry {group!r} is not a metric group",
                               (f"did you mean {close!r}? " if close else "") + f"use some of {', '.join(GROUPS)}")
        prep = self.table(self.raw.get("prepare"), "prepare", required=False)
        self.only(prep, "prepare", ("function",))
        prepare = self.get(prep, "prepare", "function", str) if "prepare" in self.raw else None
        if prepare is not None and not prepare.isidentifier():
            raise self.err("prepare", f"function {prepare!r} is not a Python function name",
                           'name a function of reference.py, e.g. function = "prepare"')
        if prepare in ("reference", "magnitude"):
            raise self.err("prepare", f"function {prepare!r} is the oracle's own; prepare(xp, rs, *values) "
                           "turns drawn values into inputs", 'write a function of its own, e.g. function = "prepare"')
        lim = self.table(self.raw.get("limits"), "limits", required=False)
        keys = tuple(Limits.__dataclass_fields__)
        self.only(lim, "limits", keys)
        limits = Limits(**{k: float(self.get(lim, "limits", k, (int, float), getattr(Limits, k))) for k in keys})
        bad = [k for k in keys if getattr(limits, k) <= 0]
        if bad:
            raise self.err("limits", f"{bad[0]} must be positive", f"give {bad[0]} a number > 0")
        return Spec(name=name, title=title, path=self.path, inputs=inputs, outputs=outputs, dims=dims,
                    constraints=constraints, values=values, edge_cases=edge_cases, tolerances=tolerances,
                    equal_nan=equal_nan, benchmarks=benchmarks, ceiling=ceiling, performance=performance,
                    compile_options=tuple(options), required=tuple(required), forbidden=tuple(forbidden),
                    required_ptx=tuple(required_ptx), forbidden_libraries=tuple(forbidden_libraries),
                    allowed_kernels=tuple(allowed_kernels), forbidden_headers=tuple(forbidden_headers),
                    points_correctness=p_corr, points_performance=p_perf, limits=limits, scalars=scalars,
                    order=order, types=types, declared_hidden=declared_hidden,
                    profile_metrics=tuple(dict.fromkeys(profile_metrics)), arch=arch, prepare=prepare)

    def arch(self, feats: dict) -> str | None:
        """``[features] arch``: "sm_XY" (at least compute capability X.Y) or "sm_XYa" (exactly X.Y, with
        its architecture-specific instructions such as wgmma); None when absent."""
        if "arch" not in feats:
            return None
        value = feats["arch"]
        if not isinstance(value, str) or not ARCH_RE.fullmatch(value):
            return self._bad_arch(value)
        if value.endswith("a") and int(ARCH_RE.fullmatch(value)[1]) < 90:
            raise self.err("features", f"arch {value!r}: architecture-specific ('a') targets exist from sm_90a on",
                           f'write arch = "{value[:-1]}", or arch = "sm_90a" for Hopper instructions')
        for opt in self.raw.get("compile", {}).get("options", []) if isinstance(self.raw.get("compile"), dict) else []:
            if isinstance(opt, str) and opt.startswith(("-arch", "--gpu-architecture")):
                raise self.err("compile", f"option {opt!r} sets the architecture, which [features] arch sets too",
                               f"remove {opt!r} from [compile] options")
        return value

    def _bad_arch(self, value: Any) -> None:
        guess = re.fullmatch(r"\s*(?:-arch=|--gpu-architecture=)?(?:sm|compute)_?(\d{2,3})(a?)\s*", str(value).lower())
        fix = (f'write arch = "sm_{guess[1]}{guess[2]}"' if guess and isinstance(value, str)
               else 'write arch = "sm_90a" (exactly that GPU, with wgmma) or "sm_80" (that GPU or a newer one)')
        raise self.err("features", f"arch {value!r} is not a GPU architecture like \"sm_90\" or \"sm_90a\"", fix)

    def str_list(self, data: dict, fld: str, key: str) -> list[str]:
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.err(fld, f"'{key}' must be a list of strings", f'write {key} = ["..."]')
        return value

    def dims(self) -> tuple[tuple[DimSpec, ...], tuple[Expr, ...]]:
        raw = self.table(self.raw.get("dims"), "dims")
        dims = []
        for name, d in raw.items():
            if name == "constraints":
                continue
            fld = f"dims.{name}"
            if not name.isidentifier():
                raise self.err(fld, f"{name!r} is not an identifier", "use letters, digits and _")
            d = self.table(d, fld)
            self.only(d, fld, ("min", "max", "multiple_of"))
            lo = self.get(d, fld, "min", int)
            hi = self.get(d, fld, "max", int)
            mult = self.get(d, fld, "multiple_of", int, 1)
            if lo < 0:
                raise self.err(fld, f"min ({lo}) is negative", "set min >= 0")
            if hi < lo:
                raise self.err(fld, f"max ({hi}) is below min ({lo})", "set max >= min")
            if mult < 1:
                raise self.err(fld, f"multiple_of ({mult}) is below 1", "set multiple_of >= 1")
            if (hi // mult) * mult < lo:
                raise self.err(fld, f"no multiple of {mult} lies in [{lo}, {hi}]", "widen the range")
            dims.append(DimSpec(name, lo, hi, mult))
        if not dims:
            raise self.err("dims", "declares no dimension", "add e.g. [dims.n] min = 1, max = 1024")
        names = {d.name for d in dims}
        constraints = tuple(self.expr(c, "dims.constraints", names)
                            for c in self.str_list(raw, "dims", "constraints"))
        return tuple(dims), constraints

    def type_vars(self) -> dict[str, tuple[str, ...]]:
        raw = self.table(self.raw.get("types"), "types", required=False)
        out = {}
        for name, choices in raw.items():
            if not name.isidentifier() or name in DTYPES:
                raise self.err("types", f"{name!r} is not a usable type-variable name", "use a name like T")
            if (not isinstance(choices, list) or not choices
                    or not all(isinstance(c, str) and c in DTYPES for c in choices)):
                raise self.err("types", f"{name} must be a non-empty list of dtypes", f"choose from {', '.join(DTYPES)}")
            stored: dict[str, str] = {}
            for c in choices:   # solve and the controls tell the choices apart by the array's dtype
                other = stored.setdefault(storage_dtype(c), c)
                if other != c:
                    raise self.err("types", f"{name} offers {other} and {c}, which arrive as the same "
                                   f"{storage_dtype(c)} array, so solve could not tell them apart",
                                   "keep one of them, or use two type variables or two exercises")
            out[name] = tuple(choices)
        return out

    def tensors(self, raw: Any, fld: str, dim_names: set[str], types: Mapping[str, tuple[str, ...]],
                outputs: bool = False) -> tuple[TensorSpec, ...]:
        if not isinstance(raw, list) or not raw:
            raise self.err(fld, "must be a non-empty list of {name, dtype, shape}",
                           f'write {fld.split(".")[-1]} = [{{ name = "x", dtype = "float32", shape = ["n"] }}]')
        out = []
        for i, t in enumerate(raw):
            f = f"{fld}[{i}]"
            t = self.table(t, f)
            self.only(t, f, ("name", "dtype", "shape", "offset") + (("inplace",) if outputs else ()))
            name = self.get(t, f, "name", str)
            dtype = self.get(t, f, "dtype", str)
            if outputs and any(FP8_RE.match(d) for d in types.get(dtype, (dtype,))):
                raise self.err(f, f"dtype {dtype!r} cannot be an output's: FP8 e4m3 has no NaN code to spare for "
                               "the poison that marks unwritten elements (its only NaN is S.1111.111)",
                               "make the output bfloat16, float16 or float32")
            if dtype not in DTYPES and dtype not in types:
                raise self.err(f, f"dtype {dtype!r} is not supported",
                               f"use one of {', '.join(DTYPES)} or a type variable of [types]")
            inplace = self.get(t, f, "inplace", bool, False)
            if (outputs or inplace) and set(types.get(dtype, (dtype,))) & set(INPUT_ONLY_DTYPES):
                raise self.err(f, f"dtype {dtype!r} can only be an input's (outputs are compared as numbers)",
                               "make the output float32 or float16")
            offset = self.get(t, f, "offset", (str, int), 0)
            if isinstance(offset, str) and offset not in dim_names or isinstance(offset, int) and offset < 0:
                raise self.err(f, f"offset {offset!r} is neither a dim nor a non-negative int",
                               "declare the offset as a dim, e.g. [dims.ox] min = 0, max = 3")
            shape = self.get(t, f, "shape", list)
            for s in shape:
                if isinstance(s, str) and s.isidentifier() and s not in dim_names:
                    raise self.err(f, f"shape uses {s!r}, which is not a dim", f"declare [dims.{s}] or use {sorted(dim_names)}")
                if isinstance(s, str) and not s.isidentifier():
                    self.shape_expression(s, f, dim_names)
                elif not isinstance(s, (str, int)) or isinstance(s, bool) or (isinstance(s, int) and s < 1):
                    raise self.err(f, f"shape entry {s!r} is neither a dim name, an expression of dims nor a "
                                      "positive int", "fix the shape")
            out.append(TensorSpec(name, dtype, tuple(shape), inplace, offset))
        return tuple(out)

    def shape_expression(self, source: str, fld: str, dim_names: set[str]) -> None:
        """Check a shape entry that is an expression of dims: it parses, names dims only and gives an
        int (not a float) at the dims' smallest values (SpecError otherwise)."""
        try:
            expr = _shape_expr(source)
        except ExprError as exc:
            raise self.err(fld, f"shape entry {source!r} is not an expression of dims ({exc})",
                           'write e.g. "K // 128" or "ceil(N / 128)"') from None
        unknown = sorted(expr.names - dim_names)
        if unknown:
            raise self.err(fld, f"shape entry {source!r} uses {unknown}, which are not dims",
                           f"use only dims ({sorted(dim_names)})")
        try:
            shape_extent(source, {d: self.dim_lows.get(d, 1) for d in dim_names})
        except ValueError as exc:
            raise self.err(fld, f"shape entry {source!r} at the dims' smallest values: {exc}",
                           'make it an int >= 1 for every allowed dim, e.g. "K // 128" with K a multiple of 128, '
                           'or "ceil(N / 128)"') from None

    def signature(self, dim_names: set[str], types: Mapping[str, tuple[str, ...]]) -> tuple[
            tuple[TensorSpec, ...], tuple[TensorSpec, ...], tuple[ScalarSpec, ...], tuple[str, ...]]:
        sig = self.table(self.raw.get("signature"), "signature")
        self.only(sig, "signature", ("inputs", "outputs", "scalars", "order"))
        inputs = self.tensors(sig.get("inputs"), "signature.inputs", dim_names, types)
        outputs = self.tensors(sig.get("outputs"), "signature.outputs", dim_names, types, outputs=True)
        scalars = []
        for i, sc in enumerate(sig.get("scalars", [])):
            f = f"signature.scalars[{i}]"
            sc = self.table(sc, f)
            self.only(sc, f, ("name", "dtype"))
            dtype = self.get(sc, f, "dtype", str)
            if dtype not in DTYPES and dtype not in types:
                raise self.err(f, f"dtype {dtype!r} is not supported", f"use one of {', '.join(DTYPES)}")
            if set(types.get(dtype, (dtype,))) & set(BITS_DTYPES):
                raise self.err(f, f"a scalar cannot be {dtype!r}", "pass it as float32")
            scalars.append(ScalarSpec(self.get(sc, f, "name", str), dtype))
        names = [t.name for t in (*inputs, *outputs, *scalars)]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise self.err("signature", f"name(s) {sorted(dup)} used twice", "give every argument its own name")
        clash = set(names) & (dim_names | set(types))
        if clash:
            raise self.err("signature", f"argument name(s) {sorted(clash)} are also dims or types",
                           "give arguments names of their own")
        order = tuple(self.str_list(sig, "signature", "order"))
        if order and sorted(order) != sorted(names):
            raise self.err("signature", f"order {list(order)} must list every argument once ({sorted(names)})",
                           "list each input, output and scalar exactly once")
        return inputs, outputs, tuple(scalars), order

    def values(self, inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...],
               scalars: tuple[ScalarSpec, ...], types: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[Distribution, ...]]:
        raw = self.table(self.raw.get("values"), "values")
        out = {}
        for t in (*inputs, *(o for o in outputs if o.inplace), *scalars):
            fld = f"values.{t.name}"
            dists = raw.get(t.name)
            if not isinstance(dists, list) or not dists:
                raise self.err(fld, "is missing or empty", f'add [[values.{t.name}]] kind = "normal", mean = 0, std = 1')
            parsed = []
            for i, d in enumerate(dists):
                f = f"{fld}[{i}]"
                d = self.table(d, f)
                kind = self.get(d, f, "kind", str)
                if kind not in DISTRIBUTIONS:
                    raise self.err(f, f"kind {kind!r} is unknown", f"use one of {', '.join(DISTRIBUTIONS)}")
                if kind == "constant" and not isinstance(t, ScalarSpec):
                    raise self.err(f, "a constant is allowed only for scalars (constant arrays hide bugs)",
                                   "use normal, uniform, integers or skewed")
                self.only(d, f, ("kind", *DISTRIBUTIONS[kind]), f" for {kind}")
                params = {}
                for key in DISTRIBUTIONS[kind]:
                    if key in OPTIONAL_PARAMS.get(kind, ()) and key not in d:
                        continue
                    params[key] = float(self.get(d, f, key, (int, float)))
                    if not math.isfinite(params[key]) and not (kind == "masked" and key == "value"):
                        raise self.err(f, f"{key} = {params[key]} is not finite", "give a finite number")
                if kind in ("normal", "masked", "row_constant") and params["std"] <= 0:
                    raise self.err(f, "std must be > 0 (never all-constant data)", "set std > 0")
                if kind == "cauchy" and params["scale"] <= 0:
                    raise self.err(f, "scale must be > 0", "set scale > 0")
                if kind in ("uniform", "integers", "skewed", "ramp") and params["high"] <= params["low"]:
                    raise self.err(f, "high must be > low", "set high > low")
                concrete = types.get(t.dtype, (t.dtype,))
                int_types = [c for c in concrete if not is_float(c)]
                if kind == "uniform" and int_types and len(concrete) == 1:
                    raise self.err(f, f"uniform draws reals, but {t.name} is {t.dtype}", 'use kind = "integers"')
                if kind in REAL_ONLY and int_types:
                    raise self.err(f, f"{kind} draws reals (and maybe inf), but {t.name} may be {int_types[0]}",
                                   "use it for float inputs only")
                for dt in int_types if kind in ("integers", "skewed", "ramp") else ():
                    info = _int_range(dt)
                    values = [params["low"], params["high"] - (kind != "ramp")] + ([params["value"]] if "value" in params else [])
                    if min(values) < info[0] or max(values) > info[1]:
                        raise self.err(f, f"values {[int(v) for v in values]} do not all fit {dt}",
                                       f"keep low, high - 1 and value within [{info[0]}, {info[1]}]")
                if kind in ("integers", "skewed"):
                    possible = {params["low"]} if params["high"] - params["low"] <= 1 else {0.0, 1.0}
                    if kind == "skewed":
                        possible.add(params.get("value", 1.0))  # a drawn hot value is never 0
                    if possible == {0.0}:
                        raise self.err(f, "every value drawn would be 0 (all-zero data hides unwritten outputs)",
                                       "widen [low, high) or choose a non-zero value")
                if kind in ("skewed", "masked") and not 0 < params["fraction"] <= 1:
                    raise self.err(f, "fraction must be in (0, 1]", "e.g. fraction = 0.9")
                if kind == "skewed" and params["fraction"] == 1 and params.get("value", 1.0) == 0:
                    raise self.err(f, "fraction = 1 with value = 0 is all-zero data", "choose a non-zero value")
                if kind == "skewed" and "value" not in params and params["high"] - params["low"] < 2 \
                        and params["low"] == 0:
                    raise self.err(f, "the hot value is drawn from [low, high) without 0, which is empty",
                                   "widen [low, high)")
                parsed.append(Distribution(kind, tuple(params.items())))
            out[t.name] = tuple(parsed)
        extra = set(raw) - set(out)
        if extra:
            raise self.err("values", f"names {sorted(extra)} that are not inputs, in-place outputs or scalars",
                           "remove them or fix the names")
        return out

    def pinned_types(self, data: dict, fld: str, types: Mapping[str, tuple[str, ...]]) -> tuple[tuple[str, str], ...]:
        """Remove and check type-variable entries (``T = "int32"``) of an edge case or benchmark."""
        pinned = []
        for name in list(data):
            if name in types:
                value = data.pop(name)
                if value not in types[name]:
                    raise self.err(fld, f"{name} = {value!r} is not one of {list(types[name])}", "pick one of those")
                pinned.append((name, value))
        return tuple(pinned)

    def dims_table(self, data: Any, fld: str, dims: tuple[DimSpec, ...], constraints: tuple[Expr, ...],
                   other: tuple[str, ...] = ()) -> tuple[tuple[str, int], ...]:
        """The dims of an edge case or a benchmark: a value for every dim, nothing else (``other``:
        the table's other keys, already taken out, named in the suggestions)."""
        data = self.table(data, fld)
        names = [d.name for d in dims]
        missing = [n for n in names if n not in data]
        extra = [k for k in data if k not in names]
        no_value = f"no value for dim{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}"
        if extra:
            err = self.unknown(fld, extra, (*names, *other))
            raise self.err(fld, err.problem + (f"; {no_value}" if missing else ""), err.fix)
        if missing:
            raise self.err(fld, f"has {no_value}", f"give every dim a value ({', '.join(f'{n} = ...' for n in missing)})")
        for k in names:
            if not isinstance(data[k], int) or isinstance(data[k], bool):
                raise self.err(fld, f"{k} = {data[k]!r} is not an integer", "use an integer")
        probe = Spec.check_dims(_DimsOnly(dims, constraints, self.shape_sources), data)  # type: ignore[arg-type]
        if probe:
            raise self.err(fld, f"{probe}", "choose dims the spec allows")
        return tuple((n, data[n]) for n in names)

    def edge_cases(self, dims, constraints, types) -> tuple[EdgeCase, ...]:
        raw = self.raw.get("edge_cases", [])
        if not isinstance(raw, list):
            raise self.err("edge_cases", "must be an array of tables", "write [[edge_cases]] blocks")
        cases = []
        for i, c in enumerate(raw):
            fld = f"edge_cases[{i}]"
            c = dict(self.table(c, fld))
            hidden = self.get(c, fld, "hidden", bool, False)
            c.pop("hidden", None)
            pins = self.value_pins(c.pop("values", {}), f"{fld}.values")
            pinned = self.pinned_types(c, fld, types)
            cases.append(EdgeCase(self.dims_table(c, fld, dims, constraints, ("hidden", "values", *types)), hidden,
                                  pinned, pins))
        return tuple(cases)

    def value_pins(self, data: Any, fld: str) -> tuple[tuple[str, int], ...]:
        """``values = { x = 1 }``: the 0-based index of a distribution of ``[[values.x]]``."""
        pins = self.table(data, fld)
        raw_values = self.raw.get("values", {})
        for k, v in pins.items():
            if k not in raw_values or not isinstance(v, int) or isinstance(v, bool) \
                    or not 0 <= v < len(raw_values[k]):
                raise self.err(fld, f"{k} = {v!r} is not an index into [[values.{k}]]",
                               "give the 0-based index of one of its distributions")
        return tuple(pins.items())

    def tolerances(self, outputs, dim_names, input_names, types) -> tuple[dict[str, Tolerance], bool]:
        raw = self.table(self.raw.get("tolerance"), "tolerance")
        equal_nan = self.get(raw, "tolerance", "equal_nan", bool, False)
        out_dtypes = sorted({dt for t in outputs for dt in types.get(t.dtype, (t.dtype,))})
        tols = {}
        for dtype in out_dtypes:
            fld = f"tolerance.{dtype}"
            t = self.table(raw.get(dtype), fld)
            self.only(t, fld, ("rtol", "atol", "normwise"))
            normwise = None
            if "normwise" in t:
                normwise = self.expr(self.get(t, fld, "normwise", str), f"{fld}.normwise", dim_names | {"eps"})
            elementwise = normwise is None or "rtol" in t or "atol" in t
            rtol_raw = self.get(t, fld, "rtol", (int, float, str), 0 if normwise is not None else ...)
            if isinstance(rtol_raw, str):
                rtol: float | Expr = self.expr(rtol_raw, f"{fld}.rtol", dim_names | {"eps"})
            else:
                rtol = float(rtol_raw)
                if rtol < 0:
                    raise self.err(fld, "rtol is negative", "set rtol >= 0 (0 means exact)")
            atol_raw = self.get(t, fld, "atol", (int, float, str), 0 if normwise is not None else ...)
            if isinstance(atol_raw, str):
                atol: float | Expr = self.expr(atol_raw, fld, dim_names | {"eps", "magnitude"} | input_names,
                                               {"abs_sum"})
                args = _abs_sum_args(atol)
                bare = sorted((atol.names & input_names) - set(args))
                if bare or any(a not in input_names for a in args):
                    raise self.err(fld, f"{atol_raw!r}: inputs may appear only as abs_sum(<input>)",
                                   f"write abs_sum({sorted(input_names)[0]})")
            else:
                atol = float(atol_raw)
                if atol < 0:
                    raise self.err(fld, "atol is negative", "set atol >= 0")
            tols[dtype] = Tolerance(rtol, atol, normwise, elementwise)
        self.only(raw, "tolerance", ("equal_nan", *out_dtypes))
        return tols, equal_nan

    def benchmarks(self, dims, constraints, types) -> tuple[Benchmark, ...]:
        raw = self.raw.get("benchmark", [])
        if not isinstance(raw, list) or not raw:
            raise self.err("benchmark", "has no shape", "add a [[benchmark]] block with name, dims and bytes")
        names = {d.name for d in dims}
        out = []
        for i, b in enumerate(raw):
            fld = f"benchmark[{i}]"
            b = self.table(b, fld)
            self.only(b, fld, ("name", "dims", "bytes", "flops", "hidden", "types", "values"))
            pinned = self.pinned_types(dict(self.table(b.get("types", {}), f"{fld}.types")), f"{fld}.types", types)
            missing_types = sorted(set(types) - {k for k, _ in pinned})
            if missing_types:
                raise self.err(f"{fld}.types", f"type variable(s) {missing_types} not pinned",
                               f'add types = {{ {missing_types[0]} = "{types[missing_types[0]][0]}" }}')
            name = self.get(b, fld, "name", str)
            bdims = self.dims_table(b.get("dims"), f"{fld}.dims", dims, constraints)
            nbytes = self.expr(self.get(b, fld, "bytes", str), f"{fld}.bytes", names)
            flops = self.expr(b["flops"], f"{fld}.flops", names) if "flops" in b else None
            hidden = self.get(b, fld, "hidden", bool, False)
            pins = self.value_pins(b.get("values", {}), f"{fld}.values")
            out.append(Benchmark(name, bdims, nbytes, flops, hidden, pinned, pins))
        seen = [b.name for b in out]
        if len(set(seen)) != len(seen):
            raise self.err("benchmark", "two shapes share a name", "give each [[benchmark]] its own name")
        return tuple(out)

    def performance(self) -> tuple[str, dict[str, Thresholds]]:
        raw = self.table(self.raw.get("performance"), "performance", required=False)
        ceiling = self.get(raw, "performance", "ceiling", str, "memory")
        if ceiling not in CEILINGS:
            raise self.err("performance", f"ceiling {ceiling!r} is unknown", f"use one of {', '.join(CEILINGS)}")
        keys = Thresholds.__dataclass_fields__.keys()
        base = {k: raw[k] for k in keys if k in raw}
        result = {"default": self.thresholds("performance", base)}
        for key, sub in raw.items():
            if key in keys or key == "ceiling":
                continue
            if not re.fullmatch(r"sm_\d+a?", key) or not isinstance(sub, dict):
                close = _closest(key, [*keys, "ceiling"])
                raise self.err(f"performance.{key}", "is neither a threshold nor an arch table like [performance.sm_90]"
                               + (f" (did you mean {close!r}?)" if close else ""),
                               f"rename it to {close}" if close else f"use one of {', '.join(keys)} or an arch key")
            result[key] = self.thresholds(f"performance.{key}", {**base, **sub})
        return ceiling, result

    def thresholds(self, fld: str, values: dict) -> Thresholds:
        keys = Thresholds.__dataclass_fields__.keys()
        extra = set(values) - set(keys)
        if extra:
            raise self.unknown(fld, extra, keys)
        for k, v in values.items():
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
                raise self.err(fld, f"{k} = {v!r} is not a non-negative number", "give a number >= 0")
        t = Thresholds(**{k: float(v) for k, v in values.items()})
        if t.ratio_full <= t.ratio_zero:
            raise self.err(fld, f"ratio_full ({t.ratio_full}) must exceed ratio_zero ({t.ratio_zero})", "raise ratio_full")
        if t.roofline_full <= t.roofline_zero:
            raise self.err(fld, f"roofline_full ({t.roofline_full}) must exceed roofline_zero ({t.roofline_zero})",
                           "raise roofline_full")
        if not 0 < t.ratio_floor < t.ratio_cap:
            raise self.err(fld, "need 0 < ratio_floor < ratio_cap", "e.g. ratio_floor = 0.01, ratio_cap = 1.25")
        return t


@dataclass(frozen=True)
class _DimsOnly:
    dims: tuple[DimSpec, ...]
    constraints: tuple[Expr, ...]
    shape_expressions: tuple[str, ...] = ()


def _int_range(dtype: str) -> tuple[int, int]:
    bits = int(re.sub(r"\D", "", dtype))
    if dtype.startswith("u"):
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def _abs_sum_args(e: Expr) -> list[str]:
    import ast
    calls = [n for n in ast.walk(e._tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "abs_sum"]  # noqa: SLF001
    return [n.args[0].id if len(n.args) == 1 and isinstance(n.args[0], ast.Name) else "" for n in calls]


def machine_epsilon(dtype: str) -> float:
    """Unit roundoff step (numpy finfo eps: the spacing of the dtype's numbers at 1.0) for float dtypes,
    2**-7 for bfloat16 (7 explicit mantissa bits; numpy has no bfloat16); 0 for integers (exact)."""
    import numpy as np
    if dtype == "bfloat16":
        return 2.0 ** -7
    return float(np.finfo(dtype).eps) if is_float(dtype) else 0.0


# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Exercise:
    """Where an exercise's files live: the spec folder, the reference solution and the stub."""
    name: str
    directory: Path
    solution: Path
    template: Path

    @property
    def spec_path(self) -> Path:
        return self.directory / "spec.toml"


def find_root(start: Path | None = None) -> Path:
    """The course root: the nearest folder at or above ``start`` (default cwd) holding ``exercises/``.

    Raises:
        FileNotFoundError: with a one-line hint when none is found.
    """
    start = (start or Path.cwd()).resolve()
    for p in (start, *start.parents):
        if (p / "exercises").is_dir():
            return p
    raise FileNotFoundError(f"no exercises/ folder in {start} or above: run grade in the course repository "
                            "(or pass --root DIR)")


def list_exercises(root: Path) -> list[Exercise]:
    """All exercises under ``root/exercises``, sorted by name."""
    out = []
    for d in sorted((root / "exercises").iterdir()):
        if d.is_dir() and NAME_RE.match(d.name):
            out.append(Exercise(d.name, d, root / "solutions" / d.name, root / "student_template" / d.name))
    return out


def resolve_exercise(root: Path, query: str, commands: tuple[str, ...] = ()) -> Exercise:
    """Resolve ``7``, ``07``, ``ex07``, ``ex07_softmax`` or ``softmax`` to an exercise.
    ``commands``: the other words ``grade`` takes there (its subcommands), for the suggestion.

    Raises:
        LookupError: naming the known exercises when nothing (or more than one) matches, and the
            closest exercise names or commands (difflib) when one is close.
    """
    exercises = list_exercises(root)
    q = query.strip().lower()
    m = re.fullmatch(r"(?:ex)?(\d{1,2})", q)
    if m:
        matches = [e for e in exercises if int(e.name[2:4]) == int(m.group(1))]
    else:
        matches = [e for e in exercises if e.name == q or e.name[5:] == q]
    if len(matches) != 1:
        known = ", ".join(e.name for e in exercises) or "none"
        raise LookupError(f"no exercise matches {query!r}{_did_you_mean(q, exercises, commands)}; known: {known} "
                          f"(see `grade list`)")
    return matches[0]


def _did_you_mean(query: str, exercises: list[Exercise], commands: tuple[str, ...]) -> str:
    """" (did you mean ex07_softmax?)" (or "`grade list`" for a command), from difflib's closest
    match over the exercise names, their words after exNN_, and ``commands``; "" when none is close."""
    import difflib
    typed = re.fullmatch(r"(?:ex)?([0-9o]{1,2})", query)   # the letter o for a zero: "exo1", "ex1o"
    if typed and "o" in typed.group(1):
        number = int(typed.group(1).replace("o", "0"))
        hit = next((e.name for e in exercises if int(e.name[2:4]) == number), None)
        if hit:
            return f" (did you mean {hit}?)"
    words = {e.name: e.name for e in exercises} | {e.name[5:]: e.name for e in exercises}
    words |= {c: f"`grade {c}`" for c in commands}
    close = difflib.get_close_matches(query, list(words), n=1)
    return f" (did you mean {words[close[0]]}?)" if close else ""


def dims_label(dims: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in dims.items())


def elements(spec: Spec, dims: Mapping[str, int]) -> int:
    """Total number of elements over all inputs and outputs at ``dims``."""
    return sum(math.prod(t.concrete_shape(dims)) for t in spec.inputs + spec.outputs)
