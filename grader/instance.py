"""One concrete call of ``solve``, owned by the parent: drawn values, the oracle's expected outputs,
the guarded buffers, and the checks after a call (outputs preallocated, poisoned and guarded by the parent;
inputs checked unchanged after every call).

Used for every correctness case and for each input set of a benchmark shape.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, Callable, Mapping

from grader.cases import Case, make_inputs
from grader.compare import INDEX_LIMIT, compare, poison_value, resolve_atol, resolve_normwise, resolve_rtol
from grader.dtypes import decode, storage_dtype
from grader.sandbox.buffers import Arena, Backend, GuardedArray, guarded_size
from grader.spec import ScalarSpec, Spec


def load_oracle(spec: Spec) -> Callable[..., Any]:
    """The exercise's ``reference(xp, *args)`` from ``reference.py``; its ``magnitude(xp, *args)``
    (per output, the scale of each element's rounding error, for tolerances that use
    ``magnitude``), when defined, is attached as the attribute ``magnitude`` (else None).

    Raises:
        FileNotFoundError / AttributeError: one line naming the file and the fix.
    """
    path = spec.directory / "reference.py"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing; fix: add reference.py with reference(xp, *args)")
    mod_spec = importlib.util.spec_from_file_location(f"oracle_{spec.name}", path)
    module = importlib.util.module_from_spec(mod_spec)  # type: ignore[arg-type]
    mod_spec.loader.exec_module(module)  # type: ignore[union-attr]
    fn = getattr(module, "reference", None)
    if not callable(fn):
        raise AttributeError(f"{path}: defines no reference(xp, *args); fix: add it")
    magnitude = getattr(module, "magnitude", None)
    if magnitude is None and any(t.uses_magnitude for t in spec.tolerances.values()):
        raise AttributeError(f"{path}: the spec's atol uses magnitude, but reference.py defines no "
                             f"magnitude(xp, *args); fix: add it (one array per output)")
    fn.magnitude = magnitude  # type: ignore[attr-defined]
    prepare = getattr(module, spec.prepare, None) if spec.prepare else None
    if spec.prepare and not callable(prepare):
        raise AttributeError(f"{path}: the spec's [prepare] names {spec.prepare}(xp, rs, *inputs), which "
                             f"reference.py does not define; fix: define it, or remove [prepare] from spec.toml")
    fn.prepare = prepare  # type: ignore[attr-defined]
    return fn


def draw_inputs(spec: Spec, case: Case, xp: Any, oracle: Callable[..., Any]) -> dict[str, Any]:
    """The values of ``case`` by name, as :func:`grader.cases.make_inputs` draws them, then passed
    through the spec's ``[prepare]`` function when it has one: ``prepare(xp, rs, *values)`` with
    the drawn values in ``spec.drawn`` order (storage dtypes: bfloat16 as uint16 bits, FP8 as uint8)
    and ``rs`` a ``numpy.random.RandomState`` seeded by the case (deterministic), returning as many
    arrays, each of the drawn one's shape and dtype.

    Raises:
        ValueError: the prepare function returned the wrong number, shapes or dtypes (one line
        naming reference.py and the fix).
    """
    import numpy as np
    values = make_inputs(spec, case, xp)
    prepare = getattr(oracle, "prepare", None)
    if prepare is None:
        return values
    names = list(spec.drawn)
    path = spec.directory / "reference.py"
    where = f"{path}: {spec.prepare}"
    try:
        out = prepare(xp, np.random.RandomState(case.seed), *(values[n] for n in names))
    except Exception as exc:   # the instructor's code: name the file and line, as for a spec error
        import traceback
        lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == path.resolve()]
        at = f" (reference.py:{lines[-1]})" if lines else ""
        raise ValueError(f"{where}(xp, rs, {', '.join(names)}) raised {type(exc).__name__}: {exc}{at}; fix: "
                         f"make it work for every case the spec allows") from None
    if out is None:
        raise ValueError(f"{where} returned None; fix: return the {len(names)} drawn values {names} "
                         f"(changed or not), in that order")
    out = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(out) != len(names):
        raise ValueError(f"{where} returned {len(out)} array{'s' if len(out) != 1 else ''} for the {len(names)} "
                         f"drawn values {names}; fix: return one per drawn value, in that order")
    prepared = {}
    for n, new in zip(names, out):
        old = values[n]
        if isinstance(old, np.generic):   # a scalar argument (drawn on the host)
            prepared[n] = old.dtype.type(new)
            continue
        new = xp.ascontiguousarray(xp.asarray(new))
        if new.shape != old.shape or new.dtype != old.dtype:
            raise ValueError(f"{where} returned {n!r} as {new.dtype} {tuple(new.shape)}, drawn as {old.dtype} "
                             f"{tuple(old.shape)}; fix: keep each value's shape and dtype")
        prepared[n] = new
    return prepared


def prepare_problem(spec: Spec, oracle: Callable[..., Any], case: Case) -> str | None:
    """Why the spec's [prepare] function is unfit for ``case`` (numpy), or None: it raised or
    returned the wrong values (:func:`draw_inputs`' message), or two draws of the same case differ
    (it used a random source other than its ``rs``, so a case could not be reproduced from its token)."""
    import numpy as np
    try:
        first, second = (draw_inputs(spec, case, np, oracle) for _ in range(2))
    except ValueError as exc:
        return str(exc)
    differ = [n for n in first if not np.array_equal(first[n], second[n], equal_nan=first[n].dtype.kind in "fc")]
    if differ:
        return (f"{spec.directory / 'reference.py'}: {spec.prepare} gave different {', '.join(differ)} for the same "
                f"case; fix: draw only from its rs argument (a case must be reproducible from its seed)")
    return None


def oracle_args(spec: Spec, values: Mapping[str, Any], xp: Any, types: Mapping[str, str] | None = None) -> list[Any]:
    """solve's arguments as the oracle takes them (see :func:`run_oracle`)."""
    args = []
    for n in spec.arg_order:
        if n not in values:
            continue
        arg = spec.argument(n)
        if isinstance(arg, ScalarSpec):
            args.append(values[n].item())
        else:
            args.append(decode(xp, values[n], arg.concrete_dtype(types or {})))
    return args


def run_magnitude(oracle: Callable[..., Any], spec: Spec, values: Mapping[str, Any], xp: Any,
                  dims: Mapping[str, int], types: Mapping[str, str] | None = None) -> list[Any]:
    """Per output, ``reference.magnitude(xp, *args)`` as a C-contiguous float64 array of the
    output's shape at ``dims`` (None for every output when reference.py defines no magnitude)."""
    fn = getattr(oracle, "magnitude", None)
    if fn is None:
        return [None] * len(spec.outputs)
    out = fn(xp, *oracle_args(spec, values, xp, types))
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(outs) != len(spec.outputs):
        raise ValueError(f"{spec.directory / 'reference.py'}: magnitude returned {len(outs)} arrays, the spec "
                         f"declares {len(spec.outputs)} outputs; fix: return one array per output")
    return [xp.ascontiguousarray(xp.broadcast_to(xp.asarray(m, dtype=xp.float64), t.concrete_shape(dims)))
            for m, t in zip(outs, spec.outputs)]


def run_oracle(oracle: Callable[..., Any], spec: Spec, values: Mapping[str, Any], xp: Any,
               types: Mapping[str, str] | None = None) -> list[Any]:
    """Expected outputs: ``oracle(xp, *args)`` with solve's arguments in order, pure outputs left
    out, in-place outputs at their initial values, scalars as Python numbers, bfloat16 tensors
    decoded to float32 (``types``: the case's type variables).

    Raises:
        ValueError: the oracle returned the wrong number of outputs.
    """
    out = oracle(xp, *oracle_args(spec, values, xp, types))
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(outs) != len(spec.outputs):
        raise ValueError(f"{spec.directory / 'reference.py'}: returned {len(outs)} outputs, the spec declares "
                         f"{len(spec.outputs)}; fix: return one array per output")
    return outs


class Instance:
    """The buffers of one call. ``refresh`` draws new values for ``case``; ``reset`` prepares the
    next call (poison pure outputs, restore in-place outputs, refill guards); ``check`` verifies."""

    def __init__(self, spec: Spec, backend: Backend, oracle: Callable[..., Any], case: Case):
        self.spec, self.backend, self.xp, self.oracle = spec, backend, backend.xp, oracle
        self.dims, self.types = case.dim_dict, case.type_dict
        self.arrays: dict[str, GuardedArray] = {}
        self._allocate(None)
        self.values: dict[str, Any] = {}
        self.expected: list[Any] = []
        self.magnitudes: list[Any] = []
        try:
            self.refresh(case)
        except BaseException:   # the oracle or prepare failed: give the buffers back (host: shared memory)
            self.free()
            raise

    def _layout(self) -> list[tuple[str, tuple[int, ...], str, int]]:
        return [(t.name, t.concrete_shape(self.dims), storage_dtype(t.concrete_dtype(self.types)),
                 t.offset_elements(self.dims)) for t in (*self.spec.inputs, *self.spec.outputs)]

    def _allocate(self, arena: Arena | None) -> None:
        for name, shape, dtype, offset in self._layout():
            self.arrays[name] = self.backend.alloc(shape, dtype, offset, arena)

    @property
    def arena_bytes(self) -> int:
        """Bytes this instance's guarded arrays take in an :class:`Arena`."""
        return sum(-(-guarded_size(shape, dtype, offset) // 256) * 256 for _, shape, dtype, offset in self._layout())

    def bind(self, arena: Arena) -> None:
        """:meth:`place` then :meth:`write`."""
        self.place(arena)
        self.write()

    def place(self, arena: Arena) -> None:
        """Move the arrays into fresh memory carved from ``arena`` (the old buffers are freed; the
        arena owns the new ones); nothing is written there yet. The values and the expected
        outputs stay as they were."""
        for g in self.arrays.values():
            g.free()
        self._allocate(arena)

    def write(self) -> None:
        """Write the current inputs into the placed arrays and prepare the next call (see
        :meth:`reset`)."""
        for t in self.spec.inputs:
            self.arrays[t.name].array[...] = self.values[t.name]
        self.reset()

    def unbind(self) -> None:
        """Drop the arrays (before their arena is freed); :meth:`bind` places them again."""
        for g in self.arrays.values():
            g.free()
        self.arrays.clear()

    def refresh(self, case: Case) -> None:
        """Draw the values of ``case`` (same dims and types), compute the expected outputs and write
        the inputs into the current buffers."""
        self.values = draw_inputs(self.spec, case, self.xp, self.oracle)
        self.expected = run_oracle(self.oracle, self.spec, self.values, self.xp, self.types)
        needed = any(self.spec.tolerances[t.concrete_dtype(self.types)].uses_magnitude for t in self.spec.outputs)
        self.magnitudes = (run_magnitude(self.oracle, self.spec, self.values, self.xp, self.dims, self.types)
                           if needed else [None] * len(self.spec.outputs))
        for t in self.spec.inputs:
            if t.name in self.arrays:
                self.arrays[t.name].array[...] = self.values[t.name]

    def reset(self) -> None:
        for t in self.spec.outputs:
            g = self.arrays[t.name]
            if t.inplace:
                g.array[...] = self.values[t.name]
            else:   # by the spec dtype: a bfloat16 output (uint16 storage) has its own NaN pattern
                g.poison(*poison_value(t.concrete_dtype(self.types)))
        for g in self.arrays.values():
            g.fill_guards()
        self.backend.synchronize()

    def descriptors(self) -> list[dict[str, Any]]:
        """solve's arguments, in order, as JSON for the worker."""
        out = []
        for name in self.spec.arg_order:
            if name in self.arrays:
                out.append(self.arrays[name].descriptor.to_json())
            else:
                v = self.values[name]
                out.append({"scalar": v.item(), "dtype": str(v.dtype)})
        return out

    @property
    def handles(self) -> list[str]:
        return [g.handle for g in self.arrays.values()]

    def check(self) -> tuple[str, list[str]]:
        """('', []) when guards, inputs and outputs are right, else (one-line message, per-output details)."""
        xp, spec = self.xp, self.spec
        problems = []
        for name, g in self.arrays.items():
            damage = g.guard_damage()
            if damage:
                problems.append(f"wrote outside {name!r}: {damage} of it were changed")
        for t in spec.inputs:
            g, a = self.arrays[t.name], self.values[t.name]
            # g.dtype is the storage dtype: bfloat16 (uint16 bits) compares bit for bit, NaN included
            same = (g.array == a) | (xp.isnan(g.array) & xp.isnan(a)) if g.dtype.startswith("float") else g.array == a
            changed = int(xp.count_nonzero(~same))
            if changed:
                problems.append(f"modified input {t.name!r} ({changed} elements changed); inputs must stay unchanged")
        details = []
        # the inputs' values as the tolerance expressions see them: bfloat16 and FP8 decoded, not
        # their storage bits (abs_sum of FP8 codes is not the sum of their values; red-team pass 16)
        named = {t.name: decode(xp, self.values[t.name], t.concrete_dtype(self.types)) for t in spec.inputs}
        large = self.large_arrays()
        for t, ref, mag in zip(spec.outputs, self.expected, self.magnitudes):
            g = self.arrays[t.name]
            dtype = t.concrete_dtype(self.types)   # the spec dtype (g.dtype is its storage dtype)
            tol = spec.tolerances[dtype]
            atol = resolve_atol(tol, dtype, self.dims, named, xp, mag)
            axes = [s if isinstance(s, str) else f"axis {i}" for i, s in enumerate(t.shape)]
            mm = compare(t.name, g.array, ref, tol, atol, spec.equal_nan, xp, axes,
                         resolve_normwise(tol, dtype, self.dims), resolve_rtol(tol, dtype, self.dims), large,
                         dtype=dtype)
            if mm is not None:
                details.append(mm.summary())
        if details:
            problems.insert(0, f"wrong output ({details[0].split(';')[0]})")
        return "; ".join(problems), details

    def large_arrays(self) -> list[tuple[str, int]]:
        """(name, elements) of the arrays with more elements than a signed 32-bit index reaches."""
        return large_arrays(self.spec, self.dims)

    def free(self) -> None:
        for g in self.arrays.values():
            g.free()
        self.arrays.clear()
        self.values.clear()
        self.expected = []
        self.magnitudes = []


def large_arrays(spec: Spec, dims: Mapping[str, int]) -> list[tuple[str, int]]:
    """(name, elements) of the spec's arrays that have more than 2^31 - 1 elements at ``dims``."""
    import math
    out = []
    for t in (*spec.inputs, *spec.outputs):
        n = math.prod(t.concrete_shape(dims))
        if n >= INDEX_LIMIT:
            out.append((t.name, n))
    return out
