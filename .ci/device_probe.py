"""What only a device can say about issue 38's fixes, in one short run (.ci/device calls it).

Each probe prints one line `name: result` (or `name: FAILED <error>`), so a probe that
breaks costs nothing to the others:

- negate_nan: whether HLO negate flips a NaN's sign bit here (ops/_bits.py assumes not);
- dot_algorithm <name>: whether XLA compiles the algorithm on f32 operands, and its error
  against the f64 product relative to |A||B| (ops.dot.GPU_ALGORITHMS says which);
- complex_multiply: the optimised module of hlodsl's eager c64 multiply against jax's;
- profile: the planes and lines the profiler fills, and hd.profile's view of a loop;
- irfft_length_1: jnp's and hlodsl's irfftn(s=(3, 1)) against numpy;
- erfc, asin, atan: ulps and Annex G signs after the fixes;
- huge_shape: the error a too-large broadcast gets.

    python .ci/device_probe.py        (HLODSL_PLATFORM=gpu, as .ci/device runs it)
"""

from __future__ import annotations

import traceback

import numpy as np


def probe(name):
    def wrap(fn):
        try:
            print(f"{name}: {fn()}", flush=True)
        except Exception as e:  # a probe reports, it never stops the others
            last = traceback.format_exception_only(type(e), e)[-1].strip()
            print(f"{name}: FAILED {last[:400]}", flush=True)
        return fn
    return wrap


import hlodsl as hd  # noqa: E402
import hlodsl.stdlib as xp  # noqa: E402
from hlodsl import ops, runtime  # noqa: E402

print(f"platform: {runtime.platform()}, devices: {runtime.backend().devices()}")


@probe("negate_nan")
def _():
    out = np.asarray(ops.Negate()(hd.array(np.float32([np.nan, -np.nan]))))
    return f"signbit of -(+nan), -(-nan): {np.signbit(out).tolist()} (a flip: [True, False])"


A = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
B = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
# x9 crashes XLA:CPU's compiler (a segfault, ops.dot.REFUSED_ALGORITHMS): on a GPU only.
for name in ops.dot.ALGORITHMS + (("dot_bf16_bf16_f32_x9",) if runtime.platform() != "cpu"
                                  else ()):
    @probe(f"dot_algorithm {name}")
    def _(name=name):
        text = ("HloModule m\n\nENTRY m {\n  a = f32[64,64] parameter(0)\n"
                "  b = f32[64,64] parameter(1)\n  ROOT d = f32[64,64] dot(a, b), "
                f"lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, algorithm={name}\n}}\n")
        exe = runtime.compile_hlo(text)
        out = runtime.to_host(exe.execute([runtime.to_device(A), runtime.to_device(B)])[0])
        err = np.abs(out - A.astype(np.float64) @ B) / (np.abs(A) @ np.abs(B))
        return f"compiles, error/(|A||B|) max {err.max():.3g}"


@probe("complex_multiply")
def _():
    import jax
    from jax import lax

    x = np.complex64([1 + 2j, 3 - 1j])
    ours = hd.code_hlo(lambda a, b: ops.Multiply()(a, b), hd.array(x), hd.array(x),
                       optimize=True)
    theirs = jax.jit(lax.mul).lower(x, x).compile().as_text()
    def pick(text):
        return [ln.strip() for ln in str(text).splitlines() if "multiply" in ln or "fusion" in ln]

    return f"ours {pick(ours)} | jax {pick(theirs)}"


@probe("profile")
def _():
    import glob
    import os
    import tempfile

    import jax.profiler as jp

    w = hd.array(np.eye(128, dtype=np.float32) / 2)
    loop = hd.compile(lambda x: hd.fori_loop(0, 5, lambda i, v: xp.tanh(v @ w), x).sum())
    x = hd.array(np.ones((128, 128), np.float32))
    loop(x)
    with tempfile.TemporaryDirectory() as folder:
        jp.start_trace(folder)
        hd.block_until_ready(loop(x))
        jp.stop_trace()
        data = jp.ProfileData.from_file(glob.glob(os.path.join(folder, "**", "*.xplane.pb"),
                                                   recursive=True)[0])
        lines = sorted({(p.name, ln.name, tuple(sorted(dict(e.stats)))) for p in data.planes
                        for ln in p.lines for e in ln.events if "hlo_op" in dict(e.stats)})
    p = hd.profile(loop, x, runs=3)
    rows = [(i.opcode, i.events) for i in p.instructions]
    return f"event lines {lines[:12]} | hd.profile rows {rows}"


@probe("irfft_length_1")
def _():
    import jax.numpy as jnp

    x = (np.arange(3) + 1j * np.arange(3)[::-1]).astype(np.complex64).reshape(3, 1)
    want = np.fft.irfftn(x, s=(3, 1), axes=(0, 1))
    ours = np.asarray(ops.Fft("IRFFT", (3, 1))(hd.array(x)))
    jax_ = np.asarray(jnp.fft.irfftn(x, s=(3, 1), axes=(0, 1)))
    return (f"hlodsl off by {np.abs(ours - want).max():.3g}, "
            f"jnp off by {np.abs(jax_ - want).max():.3g}")


@probe("erfc")
def _():
    import mpmath

    out = []
    for dtype, v in ((np.float32, 8.146088), (np.float64, 25.83)):
        x = dtype(v)
        got = float(np.asarray(ops.Erfc()(hd.array(np.array([x])))[0]))
        want = float(mpmath.erfc(mpmath.mpf(float(x))))
        out.append(f"{np.dtype(dtype).name} {abs(got - want) / np.spacing(dtype(want)):.1f} ulp")
    return ", ".join(out)


@probe("asin_atan")
def _():
    z = hd.array(np.complex64([complex(np.inf, np.nan)]))
    return f"asin {np.asarray(xp.asin(z))[0]!r} (nan+infj), atan {np.asarray(xp.atan(z))[0]!r}"


@probe("huge_shape")
def _():
    n = (2 ** 63 - 1) // 4
    try:
        hd.code_hlo(lambda: xp.zeros((n,), dtype=hd.float32), optimize=True)
    except Exception as e:
        return f"{type(e).__name__}: {str(e)[:300]}"
    return "compiled (no error)"
