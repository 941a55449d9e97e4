"""Correctness cases: hypothesis strategies from a spec, edge cases, and input generation.

A :class:`Case` is a shape (one value per dim), one value distribution per input,
and a seed; :func:`make_inputs` turns it into arrays deterministically, with
numpy (tests, CPU) or cupy (grading, GPU) as ``xp``. ``Case.token`` is a short
string that ``grade EX --case TOKEN`` runs again.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any, Mapping

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import strategies as st

from grader.dtypes import encode, value_dtype
from grader.spec import DimSpec, Spec, dims_label, elements

MAX_SEED = 2**32 - 1


@dataclass(frozen=True)
class Case:
    """One correctness case: dims, the index of each input's distribution in the spec, a seed."""
    dims: tuple[tuple[str, int], ...]
    dists: tuple[tuple[str, int], ...]
    seed: int
    origin: str = "hypothesis"  # "edge", "hypothesis", "repro" or "benchmark"
    types: tuple[tuple[str, str], ...] = ()

    @property
    def type_dict(self) -> dict[str, str]:
        return dict(self.types)

    @property
    def dim_dict(self) -> dict[str, int]:
        return dict(self.dims)

    @property
    def token(self) -> str:
        """``rows=3,cols=1025/x=1/seed=42``: what ``grade EX --case`` accepts."""
        dists = ",".join(f"{k}={v}" for k, v in self.dists)
        shape = ",".join(f"{k}={v}" for k, v in (*self.dims, *self.types))
        return f"{shape}/{dists}/seed={self.seed}"

    def describe(self, spec: Spec) -> str:
        vals = ", ".join(f"{name}~{spec.values[name][i].label}" for name, i in self.dists)
        types = "".join(f", {k}={v}" for k, v in self.types)
        return f"{dims_label(self.dim_dict)}{types} ({vals})"

    def size(self) -> int:
        """Product of the dims: a rough measure of how big the case is."""
        return math.prod(max(v, 1) for _, v in self.dims)


def parse_token(spec: Spec, token: str) -> Case:
    """Inverse of :attr:`Case.token`.

    Raises:
        ValueError: one line naming the bad part and the expected form.
    """
    form = "expected 'DIM=V,.../INPUT=K,.../seed=S' as printed by grade"
    parts = token.strip().split("/")
    if len(parts) != 3 or not parts[2].startswith("seed="):
        raise ValueError(f"--case {token!r}: {form}")
    try:
        pairs = [p.split("=") for p in parts[0].split(",") if p]
        types = {k: v for k, v in pairs if k in spec.types}
        dims = {k: int(v) for k, v in pairs if k not in spec.types}
        dists = {k: int(v) for k, v in (p.split("=") for p in parts[1].split(",") if p)}
        seed = int(parts[2][5:])
    except ValueError:
        raise ValueError(f"--case {token!r}: {form}") from None
    unknown = (set(dims) - {d.name for d in spec.dims}) | (set(dists) - set(spec.drawn))
    if unknown:
        raise ValueError(f"--case {token!r}: unknown name(s) {sorted(unknown)}; {form}")
    problem = spec.check_dims(dims)
    if problem:
        raise ValueError(f"--case {token!r}: {problem}")
    for name, choices in spec.types.items():
        types.setdefault(name, choices[0])
        if types[name] not in choices:
            raise ValueError(f"--case {token!r}: {name}={types[name]} is not one of {list(choices)}")
    for name in spec.drawn:
        k = dists.get(name, 0)
        if not 0 <= k < len(spec.values[name]):
            raise ValueError(f"--case {token!r}: {name}={k} but the spec has {len(spec.values[name])} distributions")
        dists[name] = k
    return Case(tuple((d.name, dims[d.name]) for d in spec.dims), tuple((n, dists[n]) for n in spec.drawn),
                seed % (MAX_SEED + 1), "repro", tuple((n, types[n]) for n in spec.types))


# -- profiles -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Profile:
    """How hard to look: ``examples`` hypothesis cases after the edge cases, and a size budget
    (elements over all arrays) for generated cases so a quick run stays quick."""
    name: str
    examples: int
    max_elements: int
    hidden: bool  # run hidden edge cases and benchmark shapes

    def hypothesis_settings(self) -> settings:
        """Explicit settings, independent of any hypothesis profile loaded from the environment
        (CI=true loads hypothesis' "ci" profile; a grade must not depend on where it ran)."""
        return settings(
            settings.get_profile("default"),
            max_examples=self.examples, deadline=None, database=None, derandomize=False,
            print_blob=False, report_multiple_bugs=False, verbosity=Verbosity.quiet,
            suppress_health_check=list(HealthCheck),
            phases=(Phase.explicit, Phase.generate, Phase.shrink),
        )


PROFILES = {
    "quick": Profile("quick", examples=25, max_elements=2**24, hidden=False),
    "grading": Profile("grading", examples=120, max_elements=2**27, hidden=True),
}


def combine_seed(seed: int, secret: str | None) -> int:
    """The seed hypothesis uses: ``seed`` alone, or mixed with a secret (grading mode) via SHA-256."""
    if not secret:
        return seed
    digest = hashlib.sha256(f"{seed}:{secret}".encode()).digest()
    return int.from_bytes(digest[:8], "little") % (MAX_SEED + 1)


# -- strategies -----------------------------------------------------------------------------------
def _dim_value(d: DimSpec, cap: int) -> st.SearchStrategy[int]:
    """Log-uniform over [min, min(max, cap)] in steps of multiple_of; shrinks towards min."""
    lo = -(-d.min // d.multiple_of)
    hi = min(d.max, max(cap, d.min)) // d.multiple_of
    hi = max(hi, lo)
    span_bits = max(0, (hi - lo).bit_length())

    @st.composite
    def draw(draw_fn: Any) -> int:
        bits = draw_fn(st.integers(0, span_bits))
        top = min(hi - lo, (1 << bits) - 1)
        offset = draw_fn(st.integers(0, top))
        return (lo + offset) * d.multiple_of

    return draw()


def case_strategy(spec: Spec, profile: Profile) -> st.SearchStrategy[Case]:
    """Cases whose dims satisfy every range, multiple and constraint of the spec and whose total
    element count stays within ``profile.max_elements``."""
    per_dim_cap = max(64, int(profile.max_elements))

    @st.composite
    def draw(draw_fn: Any) -> Case:
        dims = {d.name: draw_fn(_dim_value(d, per_dim_cap)) for d in spec.dims}
        from hypothesis import assume
        assume(spec.check_dims(dims) is None)
        assume(elements(spec, dims) <= profile.max_elements)
        types = tuple((n, draw_fn(st.sampled_from(choices))) for n, choices in spec.types.items())
        dists = tuple((n, draw_fn(st.integers(0, len(spec.values[n]) - 1))) for n in spec.drawn)
        seed = draw_fn(st.integers(0, MAX_SEED))
        return Case(tuple((d.name, dims[d.name]) for d in spec.dims), dists, seed, types=types)

    return draw()


def edge_cases(spec: Spec, profile: Profile, seed: int) -> list[Case]:
    """The spec's edge cases (hidden ones only when the profile runs them), each paired with the
    distributions (and unpinned type variables) in turn, so every distribution meets several
    shapes, unless the edge case pins them (``values = { x = 2 }``); seeds derive from ``seed``."""
    out = []
    for i, e in enumerate(c for c in spec.edge_cases if profile.hidden or not c.hidden):
        pins = dict(e.values)
        dists = tuple((n, pins.get(n, i % len(spec.values[n]))) for n in spec.drawn)
        pinned = dict(e.types)
        types = tuple((n, pinned.get(n, choices[i % len(choices)])) for n, choices in spec.types.items())
        out.append(Case(e.dims, dists, (seed * 7919 + i) % (MAX_SEED + 1), "edge", types))
    return out


def hidden_counts(spec: Spec) -> tuple[int, int]:
    """(hidden edge cases, hidden benchmark shapes): those in the spec plus those a published
    bundle declares it removed."""
    return (sum(c.hidden for c in spec.edge_cases) + spec.declared_hidden[0],
            sum(b.hidden for b in spec.benchmarks) + spec.declared_hidden[1])


# -- inputs -----------------------------------------------------------------------------------------
def make_inputs(spec: Spec, case: Case, xp: Any) -> dict[str, Any]:
    """The drawn values of ``case`` by name (inputs, in-place outputs' initial values, scalars):
    arrays in their concrete dtypes and shapes, C-contiguous, drawn with ``xp.random.RandomState``;
    scalars as numpy scalars of their dtype.

    Deterministic for a given (case, xp): numpy and cupy draw different numbers for one seed.
    """
    import numpy as np

    dists = dict(case.dists)
    dims, types = case.dim_dict, case.type_dict
    values: dict[str, Any] = {}
    for i, name in enumerate(spec.drawn):
        arg = spec.argument(name)
        dist = spec.values[name][dists[name]]
        dtype = types.get(arg.dtype, arg.dtype)
        seed = (case.seed + 1_000_003 * i) % (MAX_SEED + 1)
        if not hasattr(arg, "shape"):  # a scalar: drawn on the host
            v = dist.param("value") if dist.kind == "constant" else draw_values(
                np, np.random.RandomState(seed), dist.kind, dict(dist.params), (1,), dtype)[0]
            values[name] = np.dtype(dtype).type(v)
            continue
        rs = xp.random.RandomState(seed)
        values[name] = draw_values(xp, rs, dist.kind, dict(dist.params), arg.concrete_shape(dims), dtype)
    return values


def draw_values(xp: Any, rs: Any, kind: str, p: Mapping[str, float], shape: tuple[int, ...], dtype: str) -> Any:
    """Values of one distribution (see ``spec.DISTRIBUTIONS``), cast to ``dtype`` (bfloat16 as its
    bits, see ``grader.dtypes``).

    ``skewed`` without ``value`` draws the hot value per call from [low, high) without 0;
    ``masked`` is normal(mean, std) with each element replaced by ``value`` (which may be +-inf)
    with probability ``fraction``; ``cauchy`` is clipped to the dtype's largest finite value;
    ``row_constant`` repeats one normal(mean, std) value along the last axis of each row;
    ``ramp`` spaces the values evenly from low to high (both included; rounded for integer dtypes)
    and shuffles them: uneven values whose sum is the same in every draw (a benchmark's work then
    does not vary between its input sets).
    """
    import numpy as np

    if kind == "normal":
        a = rs.normal(p["mean"], p["std"], size=shape)
    elif kind == "uniform":
        a = rs.uniform(p["low"], p["high"], size=shape)
    elif kind in ("integers", "skewed"):
        a = rs.randint(int(p["low"]), int(p["high"]), size=shape, dtype=xp.int64)
        if kind == "skewed":
            value = int(p["value"]) if "value" in p else hot_value(rs, int(p["low"]), int(p["high"]))
            mask = rs.random_sample(size=shape) < p["fraction"]
            a = xp.where(mask, value, a)
    elif kind == "masked":
        a = rs.normal(p["mean"], p["std"], size=shape)
        mask = rs.random_sample(size=shape) < p["fraction"]
        a = xp.where(mask, p["value"], a)
    elif kind == "cauchy":
        big = float(np.finfo(value_dtype(dtype)).max)
        a = xp.clip(p["loc"] + p["scale"] * rs.standard_cauchy(size=shape), -big, big)
    elif kind == "row_constant":
        lead = tuple(shape[:-1]) + (1,) if shape else ()
        a = xp.broadcast_to(rs.normal(p["mean"], p["std"], size=lead), shape)
    elif kind == "ramp":
        n = math.prod(shape)
        a = p["low"] + (p["high"] - p["low"]) * xp.arange(n, dtype=xp.float64) / max(n - 1, 1)
        if np.dtype(value_dtype(dtype)).kind in "iu":
            a = xp.rint(a)
        a = a[xp.asarray(rs.permutation(n))].reshape(shape)
    else:  # pragma: no cover - spec validation rejects unknown kinds
        raise ValueError(kind)
    return encode(xp, a, dtype)


def hot_value(rs: Any, low: int, high: int) -> int:
    """A value drawn uniformly from [low, high) without 0 (so a fraction of 1 is never all zero)."""
    count = high - low - (1 if low <= 0 < high else 0)
    v = low + int(rs.randint(0, max(count, 1)))
    return v + 1 if low <= 0 <= v else v
