"""What ``grade EX --sanitize`` runs under compute-sanitizer (see :mod:`grader.sanitize`), and
``grade EX --profile`` under Nsight Compute (see :mod:`grader.profiling`)::

    compute-sanitizer --tool T ... python -P -m grader.sanitize_run SPEC SUBMISSION TOKEN --status FILE
    ncu --profile-from-start off ... python -P -m grader.sanitize_run SPEC SUBMISSION TOKEN --status FILE --profiled 1

With ``--profiled N``, ``solve`` is called once as a warm-up (compiling, first-touch), then N
times between ``cudaProfilerStart`` and ``cudaProfilerStop``: only those calls' kernels are
profiled, not CuPy's input generation.

One process, no worker and no socket: turn CuPy's memory pool off (every array is then its own
``cudaMalloc``, so an access one element past an argument leaves the allocation and memcheck
sees it; the grader's guarded buffers would hide it), build the case's inputs with
:func:`grader.cases.make_inputs`, copy each argument into its own exact-size array (pure outputs
poisoned as the grader does), compile with the exercise's NVRTC options plus ``-lineinfo``, import
the submission's ``solution.py``, call ``solve`` once, synchronise, exit.

FILE gets a JSON status: ``ok``, the ``stage`` reached (spec, case, inputs, load, solve, done), a
one-line ``message`` when something failed, the submission's ``sources`` with their kernels, and
every argument's ``allocations`` (name, base pointer, bytes) so a report can name the array an
out-of-bounds address belongs to.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

LINEINFO = "-lineinfo"


class _Status:
    def __init__(self, path: Path):
        self.path = path
        self.data: dict[str, Any] = {"ok": False, "stage": "start", "message": "", "sources": [], "allocations": []}

    def update(self, **kw: Any) -> None:
        self.data.update(kw)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data))
        tmp.replace(self.path)


def allocate(spec: Any, case: Any, cupy: Any) -> tuple[list[Any], list[dict[str, Any]]]:
    """solve's arguments for ``case``, each array in its own exact-size allocation (with the spec's
    misaligned offset before the data, so the data still ends where the allocation ends), in the
    storage dtype of its spec dtype (``grader.dtypes.storage_dtype``: a bfloat16 tensor is uint16
    bits, as the grader's own buffers hold it; its drawn values come encoded from make_inputs, through
    the spec's [prepare] function when it has one; a pure bfloat16 output is poisoned with
    ``grader.compare.poison_value("bfloat16")``).
    Returns (the arguments in solve's order, each allocation's name, base pointer and bytes).
    ``cupy`` is the array module (numpy in tests); raises what it raises (out of memory)."""
    from grader.cases import make_inputs
    from grader.compare import poison_value
    from grader.dtypes import storage_dtype

    if spec.prepare:
        from grader.instance import draw_inputs, load_oracle
        values = draw_inputs(spec, case, cupy, load_oracle(spec))
    else:
        values = make_inputs(spec, case, cupy)
    dims, types = case.dim_dict, case.type_dict
    arrays: dict[str, Any] = {}
    allocations = []
    for t in (*spec.inputs, *spec.outputs):
        spec_dtype = t.concrete_dtype(types)
        shape, dtype = t.concrete_shape(dims), storage_dtype(spec_dtype)
        offset = t.offset_elements(dims)
        size = 1
        for s in shape:
            size *= s
        base = cupy.empty(offset + size, dtype=dtype)
        a = base[offset:].reshape(shape)
        if t.name in values:  # inputs and in-place outputs
            a[...] = values[t.name]
        else:
            view_dtype, bits = poison_value(spec_dtype)   # bfloat16: its own NaN pattern in the uint16 bits
            a.view(view_dtype)[...] = view_dtype(bits)
        arrays[t.name] = a
        ptr = base.data.ptr if hasattr(base.data, "ptr") else base.ctypes.data  # cupy / numpy (tests)
        allocations.append({"name": t.name, "ptr": int(ptr), "bytes": int(base.nbytes)})
    cupy.cuda.runtime.deviceSynchronize()
    args = [arrays[n] if n in arrays else values[n] for n in spec.arg_order]
    return args, allocations


def load_solve(folder: Path, options: tuple[str, ...], arch: str | None = None) -> tuple[Any, list[dict[str, Any]]]:
    """Import ``folder/solution.py`` (the folder on sys.path, as the worker does) with the NVRTC
    options and the spec's ``[features] arch`` set; returns solve and the sources it compiled with
    the kernels each declares."""
    import grader.kernel as gk
    gk.configure(options, arch)
    sys.path.insert(0, str(folder))
    mod_spec = importlib.util.spec_from_file_location("solution", folder / "solution.py")
    module = importlib.util.module_from_spec(mod_spec)  # type: ignore[arg-type]
    sys.modules["solution"] = module
    mod_spec.loader.exec_module(module)  # type: ignore[union-attr]
    solve = getattr(module, "solve", None)
    if not callable(solve):
        raise AttributeError(f"{folder / 'solution.py'}: defines no function solve(*inputs, *outputs)")
    return solve, sources(folder)


def sources(folder: Path) -> list[dict[str, Any]]:
    """The sources compiled so far, as names relative to the submission, with their kernels."""
    import grader.kernel as gk
    out = []
    for path, _ in gk.loaded:
        try:
            name = str(path.resolve().relative_to(folder))
        except ValueError:
            name = path.name
        out.append({"file": name, "kernels": gk.kernel_names(path.read_text(errors="replace"))})
    if not out and (folder / "kernel.cu").is_file():
        out.append({"file": "kernel.cu", "kernels": gk.kernel_names((folder / "kernel.cu").read_text(errors="replace"))})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.sanitize_run")
    ap.add_argument("spec", type=Path)
    ap.add_argument("submission", type=Path)
    ap.add_argument("token")
    ap.add_argument("--status", type=Path, required=True)
    ap.add_argument("--profiled", type=int, default=0, metavar="N",
                    help="after one warm-up call, N calls between cudaProfilerStart and cudaProfilerStop")
    a = ap.parse_args(argv)
    status = _Status(a.status)
    folder = a.submission.resolve()

    def fail(stage: str, exc: BaseException) -> int:
        from grader.sandbox.worker import classify
        f = classify(exc, folder)
        status.update(ok=False, stage=stage, message=f.message.splitlines()[0] if f.message else type(exc).__name__,
                      detail=f.detail[-2000:])
        return 1

    status.update(stage="spec")
    try:
        from grader.spec import load_spec
        spec = load_spec(a.spec)
    except Exception as exc:  # noqa: BLE001
        return fail("spec", exc)
    status.update(stage="case")
    try:
        from grader.cases import parse_token
        case = parse_token(spec, a.token)
    except Exception as exc:  # noqa: BLE001
        return fail("case", exc)

    import cupy
    cupy.cuda.set_allocator(None)          # no pool: each array is its own cudaMalloc
    cupy.cuda.set_pinned_memory_allocator(None)
    status.update(stage="inputs")
    try:
        args, allocations = allocate(spec, case, cupy)
    except Exception as exc:  # noqa: BLE001
        return fail("inputs", exc)
    status.update(stage="load", allocations=allocations)
    options = tuple(spec.compile_options) + ((LINEINFO,) if LINEINFO not in spec.compile_options else ())
    try:
        solve, srcs = load_solve(folder, options, spec.arch)
    except BaseException as exc:  # noqa: BLE001 - untrusted code: report any failure
        status.update(sources=sources(folder))
        return fail("load", exc)
    status.update(stage="solve", sources=srcs)
    try:
        solve(*args)
        cupy.cuda.runtime.deviceSynchronize()
        if a.profiled:
            cupy.cuda.runtime.profilerStart()
            for _ in range(a.profiled):
                solve(*args)
            cupy.cuda.runtime.deviceSynchronize()
            cupy.cuda.runtime.profilerStop()
    except BaseException as exc:  # noqa: BLE001
        status.update(sources=sources(folder))
        return fail("solve", exc)
    status.update(ok=True, stage="done", sources=sources(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
