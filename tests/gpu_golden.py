"""What hlodsl stages for a GPU against what jax emits there: the golden comparison.

Each case is one linear algebra function or attention call, with jax's twin
(the functions ``../shared/gpu/h200-2026-11-28/dump_lowerings.py`` lowered on
an H200) and hlodsl's (``hd.code_hlo(f, *types, platform="gpu")``). From each
module we read every custom call as a *record*: target, API version, operand
and result types with their layouts, ``output_to_operand_aliasing``,
frontend attributes (less XLA's ``xla.sdy.*``) and backend config (typed FFI
attributes with their types; legacy JSON up to key order). The rule: every
record of a target that survives XLA's optimisation in jax's program (INDEX.txt
names them; jax also emits calls XLA deletes as dead, ``det``'s permutation)
is one hlodsl emits, and hlodsl emits no record jax's module lacks. Forward
cases also compare their HLO ``triangular-solve``s (attributes and operand
types, as a multiset); derivative cases only their custom calls (hlodsl's
reverse rules are its own, with the same kernels).

Three sources for jax's side: the golden files of the H200 run vendored in
tests/golden/ (``golden_text``); jax lowering for CUDA here, without a GPU
(``lowering_platforms=("cuda",)``; eig and cuDNN need the device); and on the
device, jax lowering for the live GPU: ``python tests/gpu_golden.py --out
golden.json`` (.ci/device runs it) writes each case's differences, and the
lowered modules beside it, to refresh tests/golden/.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).resolve().parent / "golden" / "gpu-h200-jax-0.11.2"
DTYPES = ("float32", "float64", "complex64")
SHAPES = ((64, 64), (4, 32, 32))
LINALG = ("solve", "inv", "det", "slogdet", "cholesky", "qr", "eigh", "svd", "svdvals", "lu",
          "trsm", "eig", "lstsq", "pinv", "grad_solve", "grad_det", "grad_eigh")
#: (B, T, N, K, H) of the attention cases, each full and causal, forward and forward+backward.
ATTENTION = ((1, 4096, 8, 8, 64), (2, 1024, 8, 2, 128))
#: Why jax cannot be compared without a device for eig and attention.
CROSS_SKIP = ("without a device jax lowers eig to its hybrid (host) kernel, as it reads "
              "cuSOLVER's version to pick geev, and refuses cuDNN attention ('cuDNN is not "
              "detected'): the golden files and a device run cover them")
#: Targets XLA:GPU makes itself (from triangular-solve, dots, top-k): not emitted by frontends.
XLA_MADE = ("__cublas$", "__gpu$", "__cudnn$conv")


class Case:
    """One comparison: ``name`` (as the golden files), the argument types, both twins."""

    def __init__(self, name: str, op: str, dtype: str, shapes: tuple, forward: bool):
        self.name, self.op, self.dtype, self.shapes, self.forward = name, op, dtype, shapes, forward

    def __repr__(self) -> str:
        return self.name


def cases() -> list[Case]:
    """Every case the H200 run lowered and the golden files hold (jax's own failures out:
    2-D-only lstsq on a stack, grad of a non-scalar det)."""
    out = []
    for dtype in DTYPES:
        for shape in SHAPES:
            tag = "x".join(map(str, shape))
            b = shape[:-1] + (3,)
            for op in LINALG:
                if op in ("grad_det", "grad_eigh") and dtype == "complex64":
                    continue
                if op in ("lstsq", "grad_det") and len(shape) == 3:
                    continue
                args = (shape, b) if op in ("solve", "trsm", "lstsq", "grad_solve") else (shape,)
                out.append(Case(f"{op}_{dtype}_{tag}", op, dtype, args, not op.startswith("grad")))
    for (b, t, n, k, h) in ATTENTION:
        for causal in ("full", "causal"):
            for kind in ("fwd", "fwdbwd"):
                shapes = ((b, t, n, h), (b, t, k, h), (b, t, k, h))
                out.append(Case(f"sdpa_{kind}_B{b}_T{t}_N{n}_K{k}_H{h}_{causal}",
                                f"sdpa_{kind}_{causal}", "bfloat16", shapes, kind == "fwd"))
    return out


def extra_cases() -> list[Case]:
    """Cases beyond the H200 run's, for jax lowered here (no golden file): SVD by ``gesvd``
    (above 1024 rows or columns; wide: jax's ``transposed`` form), Jacobi's ``econ``
    mode (above 32 x 32), rectangular and complete QR, complex128, eigvalsh."""
    table = (("svd", "float32", ((1100, 1030),)), ("svd", "float32", ((1030, 1100),)),
             ("svdvals", "float32", ((1100, 1030),)),
             ("svd_reduced", "float32", ((1030, 1100),)),
             ("svd_reduced", "complex128", ((40, 36),)),
             ("svd_reduced", "float64", ((3, 8, 5),)), ("qr", "float64", ((5, 3),)),
             ("qr", "float64", ((3, 5),)), ("qr_complete", "float64", ((5, 3),)),
             ("qr_complete", "complex128", ((2, 5, 3),)), ("eigvalsh", "complex128", ((3, 3),)),
             ("solve", "complex128", ((2, 3, 3), (2, 3, 2))),
             ("cholesky", "complex128", ((2, 3, 3),)))
    return [Case(f"{op}_{dtype}_{'x'.join(map(str, shapes[0]))}", op, dtype, shapes, True)
            for op, dtype, shapes in table]


# -- the twins ------------------------------------------------------------------------

def hlodsl_function(case: Case):
    import hlodsl.stdlib as xp
    from hlodsl.stdlib import nn

    import hlodsl as hd
    la = xp.linalg

    if case.op.startswith("sdpa"):
        causal = case.op.endswith("causal")

        def f(q, k, v):
            return nn.dot_product_attention(q, k, v, is_causal=causal)

        if "fwdbwd" in case.op:
            return hd.grad(lambda q, k, v: xp.sum(xp.astype(f(q, k, v), xp.float32)),
                           argnums=(0, 1, 2))
        return f
    real = xp.real if case.dtype.startswith("complex") else (lambda x: x)
    return {
        "solve": la.solve, "inv": la.inv, "det": la.det, "slogdet": la.slogdet,
        "cholesky": la.cholesky, "qr": la.qr, "eigh": la.eigh, "svd": la.svd,
        "svdvals": la.svdvals, "lu": lambda a: la.lu_factor(a)[:2], "eig": la.eig,
        "pinv": la.pinv,
        "trsm": lambda a, b: la.solve_triangular(a, b, lower=True),
        "lstsq": lambda a, b: la.lstsq(a, b).solution,
        "grad_solve": hd.grad(lambda a, b: xp.sum(real(la.solve(a, b)))),
        "grad_det": hd.grad(lambda a: real(la.det(a))),
        "grad_eigh": hd.grad(lambda a: xp.sum(la.eigh(a)[0])),
        "svd_reduced": lambda a: la.svd(a, full_matrices=False),
        "qr_complete": lambda a: la.qr(a, mode="complete"), "eigvalsh": la.eigvalsh,
    }[case.op]


def jax_function(case: Case):
    import jax
    import jax.numpy as jnp

    if case.op.startswith("sdpa"):
        causal = case.op.endswith("causal")

        def f(q, k, v):
            return jax.nn.dot_product_attention(q, k, v, is_causal=causal,
                                                implementation="cudnn")

        if "fwdbwd" in case.op:
            return jax.grad(lambda q, k, v: f(q, k, v).astype(jnp.float32).sum(),
                            argnums=(0, 1, 2))
        return f
    return {
        "solve": jnp.linalg.solve, "inv": jnp.linalg.inv, "det": jnp.linalg.det,
        "slogdet": lambda x: jnp.linalg.slogdet(x), "cholesky": jnp.linalg.cholesky,
        "qr": jnp.linalg.qr, "eigh": jnp.linalg.eigh, "svd": jnp.linalg.svd,
        "svdvals": lambda x: jnp.linalg.svd(x, compute_uv=False),
        "lu": jax.scipy.linalg.lu_factor, "eig": jnp.linalg.eig, "pinv": jnp.linalg.pinv,
        "trsm": lambda x, y: jax.scipy.linalg.solve_triangular(x, y, lower=True),
        "lstsq": lambda x, y: jnp.linalg.lstsq(x, y)[0],
        "grad_solve": jax.grad(lambda x, y: jnp.real(jnp.linalg.solve(x, y)).sum()),
        "grad_det": jax.grad(lambda x: jnp.real(jnp.linalg.det(x))),
        "grad_eigh": jax.grad(lambda x: jnp.linalg.eigh(x)[0].sum()),
        "svd_reduced": lambda x: jnp.linalg.svd(x, full_matrices=False),
        "qr_complete": lambda x: jnp.linalg.qr(x, mode="complete"),
        "eigvalsh": jnp.linalg.eigvalsh,
    }[case.op]


def hlodsl_text(case: Case, platform: str = "gpu") -> str:
    """The module hlodsl stages for ``platform`` (no device needed for a foreign one)."""
    import hlodsl as hd

    dtype = getattr(hd, case.dtype)
    return hd.code_hlo(hlodsl_function(case), *(hd.ArrayType(dtype, s) for s in case.shapes),
                       platform=platform)


def jax_lowered(case: Case, cross: bool = True):
    """jax's twin lowered for CUDA: ``cross`` from any machine (``lowering_platforms``),
    else for the live device."""
    import jax
    import ml_dtypes

    jax.config.update("jax_enable_x64", True)
    dtype = ml_dtypes.bfloat16 if case.dtype == "bfloat16" else np.dtype(case.dtype)
    specs = [jax.ShapeDtypeStruct(s, dtype) for s in case.shapes]
    jitted = jax.jit(jax_function(case))
    return jitted.trace(*specs).lower(lowering_platforms=("cuda",)) if cross \
        else jitted.lower(*specs)


def jax_text(case: Case, cross: bool = True) -> str:
    """HLO text of ``jax_lowered``."""
    return jax_lowered(case, cross).as_text(dialect="hlo")


def golden_text(case: Case) -> str | None:
    """HLO text of the vendored H200 lowering (None where jax failed there)."""
    from hlodsl.runtime import jaxlib_compat

    path = GOLDEN / f"{case.name}.stablehlo.mlir"
    if not path.exists():
        return None
    return jaxlib_compat.stablehlo_to_computation(path.read_text()).as_hlo_text()


def surviving_targets() -> dict[str, set[str]]:
    """INDEX.txt: the custom-call targets of each case's module after XLA:GPU's passes."""
    out = {}
    for line in (GOLDEN / "INDEX.txt").read_text().splitlines()[1:]:
        m = re.match(r"(\w+): ok; custom calls: (.*)", line)
        if m:
            out[m[1]] = {t.strip() for t in m[2].split(",") if t.strip() not in ("-", "")}
    return out


# -- reading custom calls ---------------------------------------------------------------

_ARRAY = re.compile(r"(\w+)\[([^\]]*)\](?:\{([^}]*)\})?")
_ALIAS = re.compile(r"\{([\d,\s]*)\}:\s*\((\d+),\s*\{([\d,\s]*)\}\)")
_FRONTEND = re.compile(r'([\w.]+)="((?:[^"\\]|\\.)*)"')
_TYPED = re.compile(r'(\w+) = ("(?:[^"\\]|\\.)*"|true|false|\S+ : [a-z]+\d+)')


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(t) for t in text.replace(" ", "").split(",") if t)


def _arrays(text: str) -> tuple:
    """``(dtype, dims, minor_to_major)`` of each array in a type; a missing layout is the
    default (row-major), as XLA reads one."""
    out = []
    for m in _ARRAY.finditer(text):
        if m[1] == "token":
            continue
        dims = _ints(m[2])
        layout = _ints(m[3].split(":")[0]) if m[3] is not None else \
            tuple(range(len(dims) - 1, -1, -1))
        out.append((m[1], dims, layout))
    return tuple(out)


def _config(api: str, raw: str):
    if raw.startswith('"'):
        raw = raw[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    if api == "API_VERSION_TYPED_FFI":
        return tuple(sorted((k, v) for k, v in _TYPED.findall(raw)))
    try:
        return json.dumps(json.loads(raw), sort_keys=True) if raw.strip() else ""
    except json.JSONDecodeError:  # an opaque string
        return raw


def custom_calls(text: str) -> list[tuple]:
    """The record of each custom call in HLO module ``text`` (module docstring)."""
    from hlodsl.introspect.hlo_text import parse_attributes, parse_module

    out = []
    for comp in parse_module(text).computations:
        for inst in comp.instructions:
            if inst.opcode != "custom-call":
                continue
            a = parse_attributes(inst.attributes)
            api = a.get("api_version", "API_VERSION_ORIGINAL")
            front = tuple(sorted((k, v) for k, v in _FRONTEND.findall(
                a.get("frontend_attributes", "")) if not k.startswith("xla.sdy")))
            aliases = tuple(sorted((_ints(o), int(k), _ints(i)) for o, k, i in _ALIAS.findall(
                a.get("output_to_operand_aliasing", ""))))
            out.append((a["custom_call_target"].strip('"'), api,
                        _arrays(a.get("operand_layout_constraints", "")), _arrays(inst.type),
                        aliases, front, _config(api, a.get("backend_config", ""))))
    return out


def triangular_solves(text: str) -> collections.Counter:
    """``(left_side, lower, unit_diagonal, transpose_a, operand types)`` of each HLO
    triangular-solve, counted."""
    from hlodsl.introspect.hlo_text import parse_attributes, parse_module

    out = collections.Counter()
    for comp in parse_module(text).computations:
        types = comp.shapes()
        for inst in comp.instructions:
            if inst.opcode != "triangular-solve":
                continue
            a = parse_attributes(inst.attributes)
            operands = tuple(tuple(x[:2] for x in _arrays(types[o])) for o in inst.operands)
            out[tuple(a.get(k, d) for k, d in (("left_side", "false"), ("lower", "false"),
                                                 ("unit_diagonal", "false"),
                                                 ("transpose_a", "NO_TRANSPOSE")))
                + operands] += 1
    return out


def compare(case: Case, ours: str, theirs: str, survivors: set[str] | None) -> list[str]:
    """What differs between hlodsl's module ``ours`` and jax's ``theirs`` (empty: equal),
    by the rule of the module docstring; ``survivors``: the targets XLA kept in jax's
    (None: all of them)."""
    mine = {r for r in custom_calls(ours) if not r[0].startswith(XLA_MADE)}
    jax_records = {r for r in custom_calls(theirs) if not r[0].startswith(XLA_MADE)}
    kept = {r for r in jax_records if survivors is None or r[0] in survivors}
    out = [f"jax's {r[0]} is not one hlodsl emits: {r}" for r in sorted(kept - mine, key=str)]
    out += [f"hlodsl's {r[0]} is not one jax emits: {r}" for r in sorted(mine - jax_records,
                                                                         key=str)]
    if case.forward:
        a, b = triangular_solves(ours), triangular_solves(theirs)
        if a != b:
            out.append(f"triangular-solves differ: hlodsl {dict(a)}, jax {dict(b)}")
    return out


# -- on the device: freshly lowered jax, live cuSOLVER and cuDNN ---------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--cross", action="store_true",
                        help="lower jax for CUDA from this machine (no device needed)")
    parser.add_argument("--only", default="", help="a regex the case names must match")
    args = parser.parse_args(argv)
    from hlodsl import runtime

    platform = "gpu" if args.cross else runtime.platform()
    lowered = Path(args.out).with_suffix("")  # jax's modules beside the JSON
    lowered.mkdir(parents=True, exist_ok=True)
    survivors = surviving_targets()
    results = {}
    try:
        for case in cases() + extra_cases():
            if args.only and not re.search(args.only, case.name):
                continue
            if args.cross and (case.op == "eig" or case.op.startswith("sdpa")):
                results[case.name] = {"equal": None, "skipped": CROSS_SKIP}
                continue
            try:
                stage = jax_lowered(case, cross=args.cross)
                theirs = stage.as_text(dialect="hlo")
                (lowered / f"{case.name}.stablehlo.mlir").write_text(stage.as_text())
                diffs = compare(case, hlodsl_text(case, platform), theirs,
                                survivors.get(case.name))
                results[case.name] = {"equal": not diffs, "differences": diffs}
            except Exception as e:  # noqa: BLE001 (one case's failure is that case's result)
                results[case.name] = {"equal": False,
                                      "error": f"{type(e).__name__}: {e}"[:2000]}
            status = "equal" if results[case.name]["equal"] else "DIFFERENT"
            print(f"{case.name}: {status}", flush=True)
    except KeyboardInterrupt:  # the device script's time limit: keep what ran
        print("interrupted", flush=True)
    summary = collections.Counter("equal" if r["equal"] else "error" if "error" in r else
                                  "skipped" if "skipped" in r else "different"
                                  for r in results.values())
    report = {"platform": platform, "cross_lowered": args.cross,
              "jax": __import__("jax").__version__, "summary": dict(summary), "cases": results}
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(f"golden comparison on {platform}: {dict(summary)} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.path = [p for p in sys.path if os.path.abspath(p) != str(Path(__file__).parent)]
    sys.exit(main())
