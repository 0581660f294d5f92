"""The GPU issue's table: hlodsl against jax.jit on one device, in one process.

``python -m benchmarks.gpu`` measures, on whatever device hlodsl and jax run
on (``HLODSL_PLATFORM``; the jax peers run on jax's default device, the same
one), each row of the GPU issue (issue 27), every statement blocked until its
result is ready and the two sides' repeats interleaved (``benchmarks.timing``):

1. ``dense``: a 10x10 f32 dense layer, time per call (dispatch overhead);
2. ``gemm``: an 8192 x 8192 product in bf16 and in f32 (precision "default": TF32
   on NVIDIA GPUs, as in jax), in TFLOP/s and as a fraction of the device's peak
   where :data:`PEAK_TFLOPS` knows the device;
3. ``transformer``: one Adam step of a transformer block (B16 T512 D1024, 16 heads,
   ``benchmarks.workloads``'s block);
4. ``vgg19``: VGG19 forward + backward (gradient of ``sum(vgg19(p, x))``, batch 32,
   ``benchmarks.vgg19``'s network), against jax and, when torch sees a CUDA device,
   torch eager on it;
5. ``lstm``: the gradient of an LSTM (T200 B64 H1024) through ``scan``;
6. ``attention``: softmax attention forward + backward, 8 heads x 16384 x 64 f32,
   hlodsl under ``memory_limit="4GiB"`` (``benchmarks.memory_models``'s programs),
   with both sides' temporary bytes as XLA counts them;
7. ``sdpa``: ``nn.dot_product_attention`` forward + backward in bf16 (B1 T16384 N8 H64),
   hlodsl's default (cuDNN's fused attention on a GPU) under ``memory_limit="4GiB"``,
   against jax's fused cuDNN attention
   (``implementation="cudnn"``; jax's composite off a GPU) and torch's
   ``scaled_dot_product_attention`` when torch sees CUDA;
8. ``linalg``: solve, eigh, svd, qr, cholesky, inv, det, lu_factor, lstsq and pinv at
   n = 1024 f32 (cuSOLVER on a GPU, as jax).

``--quick`` shrinks every size so that the whole run takes about a minute on
two CPU cores (the rehearsal of the device run: same code, rough numbers);
``--rows gemm,linalg`` picks rows; ``--json FILE`` also writes the rows, the
device and the errors as JSON. A row that fails is reported (its error in the
table's notes and the JSON) and the run goes on: a device run is too scarce to
lose the other rows to one failure.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback

import numpy as np

from .foundation import row
from .timing import Settings, compare, settings

__all__ = ["PEAK_TFLOPS", "SIZES", "ROWS", "device_kind", "peak_tflops", "run", "main"]

SECTION = "GPU"

#: Dense (no sparsity) tensor-core peaks in TFLOP/s from NVIDIA's data sheets, as
#: (bf16, tf32): the peak an f32 product meets at precision "default" is TF32's.
#: Matched against jax's ``device_kind`` (e.g. "NVIDIA H100 80GB HBM3"), first match wins.
PEAK_TFLOPS = {
    "H100 PCIe": (756.0, 378.0),
    "H100 NVL": (835.0, 418.0),
    "H100": (989.0, 494.0),  # SXM
    "H200": (989.0, 494.0),  # SXM; H200 NVL is slower, not listed
}

#: The issue's sizes, and the rehearsal's (``--quick``), per row.
SIZES = {
    "full": dict(gemm=8192, block=(16, 512, 1024, 16, 4096), vgg_batch=32,
                 lstm=(200, 64, 1024, 256), attention=dict(b=1, h=8, s=16384, e=64),
                 attention_limit="4GiB", linalg=1024, sdpa=(1, 16384, 8, 64), sdpa_limit="4GiB"),
    "quick": dict(gemm=256, block=(2, 32, 64, 4, 128), vgg_batch=1,
                  lstm=(10, 4, 32, 16), attention=dict(b=1, h=8, s=1024, e=64),
                  attention_limit="32MiB", linalg=64, sdpa=(1, 512, 8, 64), sdpa_limit="12MiB"),
}


def device_kind() -> str:
    """hlodsl's device, in words: platform and device kind (``"gpu NVIDIA H200"``)."""
    from hlodsl import runtime

    return f"{runtime.platform()} {runtime.backend().devices()[0].device_kind}"


def peak_tflops(kind: str, dtype: str) -> float | None:
    """The device's peak TFLOP/s for ``dtype`` ("bf16" or "f32"), or None when unknown.

    >>> peak_tflops("NVIDIA H100 80GB HBM3", "bf16"), peak_tflops("cpu cpu", "f32")
    (989.0, None)
    """
    for name, (bf16, tf32) in PEAK_TFLOPS.items():
        if name in kind:
            return bf16 if dtype == "bf16" else tf32
    return None


def _heavy(cfg: Settings) -> Settings:
    """``cfg`` with few warm-up calls and repeats, for calls of tens of milliseconds or more."""
    heavy = Settings(cfg.quick)
    heavy.warmup, heavy.repeat = min(cfg.warmup, 3), min(cfg.repeat, 7)
    return heavy


def _ns(**kw) -> dict:
    import jax

    import hlodsl as hd

    return {"hd": hd, "jax": jax, "np": np, **kw}


# -- the rows ------------------------------------------------------------------------------

def dense(cfg: Settings, size: dict) -> list[dict]:
    import jax

    import hlodsl as hd

    from .foundation import _inputs
    from .foundation import dense as fn

    args = _inputs()["dense"]
    f, jf = hd.compile(fn), jax.jit(fn)
    ha, ja = [hd.array(a) for a in args], [jax.device_put(a) for a in args]
    np.testing.assert_allclose(np.asarray(f(*ha)), np.asarray(jf(*ja)), rtol=1e-5, atol=1e-6)
    t = compare({"ours": "f(*ha).block_until_ready()",
                 "peer": "jf(*ja).block_until_ready()"}, _ns(f=f, jf=jf, ha=ha, ja=ja), cfg)
    return [row(SECTION, "dense 10x10 f32, per call", "hd.compile", t["ours"], "jax.jit",
                t["peer"])]


def gemm(cfg: Settings, size: dict) -> list[dict]:
    import jax
    import ml_dtypes

    import hlodsl as hd

    n, kind, rows = size["gemm"], device_kind(), []
    rng = np.random.default_rng(5)
    for label, dtype in (("bf16", ml_dtypes.bfloat16), ("f32", np.float32)):
        a, b = (rng.standard_normal((n, n)).astype(dtype) for _ in range(2))
        f, jf = hd.compile(lambda a, b: a @ b), jax.jit(lambda a, b: a @ b)
        ha, hb, ja, jb = hd.array(a), hd.array(b), jax.device_put(a), jax.device_put(b)
        # Same rounding on both sides (one device, one precision): equal to bf16's epsilon.
        np.testing.assert_allclose(np.asarray(f(ha, hb), np.float32),
                                   np.asarray(jf(ja, jb), np.float32), rtol=2e-2, atol=0.5)
        t = compare({"ours": "f(ha, hb).block_until_ready()",
                     "peer": "jf(ja, jb).block_until_ready()"},
                    _ns(f=f, jf=jf, ha=ha, hb=hb, ja=ja, jb=jb), _heavy(cfg))
        tflop = 2 * n ** 3 / 1e12
        ours, peer = tflop / t["ours"], tflop / t["peer"]
        peak = peak_tflops(kind, label)
        frac = f"; {ours / peak:.0%} of the device's {peak:.0f}" if peak else ""
        rows.append(row(SECTION, f"GEMM {n}x{n} {label}: {ours:.3g} against {peer:.3g} "
                                 f"TFLOP/s{frac}", "hd.compile", t["ours"], "jax.jit",
                        t["peer"], unit="ms"))
    return rows


def transformer(cfg: Settings, size: dict) -> list[dict]:
    import jax
    import jax.numpy as jnp

    import hlodsl as hd
    import hlodsl.stdlib as xp

    from .workloads import _block_params, _block_step

    b, t_, d, heads, f_ = size["block"]
    params = _block_params(d=d, f=f_)
    x = np.random.default_rng(1).standard_normal((b, t_, d)).astype(np.float32)

    step_hd, step_jax = _block_step(xp, hd.grad, heads), _block_step(jnp, jax.grad, heads)

    zeros = {k: np.zeros_like(a) for k, a in params.items()}
    hp, hz = ({k: hd.array(a) for k, a in t.items()} for t in (params, zeros))
    jp, jz = ({k: jax.device_put(a) for k, a in t.items()} for t in (params, zeros))
    hx, jx = hd.array(x), jax.device_put(x)
    f, jf = hd.compile(step_hd), jax.jit(step_jax)
    ours, theirs = f(hp, hz, hz, hx)[0], jf(jp, jz, jz, jx)[0]
    for k in params:  # Adam's first step moves each weight by about lr = 1e-3 (workloads.py)
        np.testing.assert_allclose(np.asarray(ours[k]), np.asarray(theirs[k]), rtol=2e-3,
                                   atol=1e-4)
    t = compare({"ours": "hd.block_until_ready(f(hp, hz, hz, hx))",
                 "peer": "jax.block_until_ready(jf(jp, jz, jz, jx))"},
                _ns(f=f, jf=jf, hp=hp, hz=hz, hx=hx, jp=jp, jz=jz, jx=jx), _heavy(cfg))
    return [row(SECTION, f"transformer block Adam step B{b} T{t_} D{d}, {heads} heads",
                "hd.compile", t["ours"], "jax.jit", t["peer"], unit="ms")]


def _torch_vgg_step(np_params: dict, images: np.ndarray):
    """torch eager VGG19 forward + backward on CUDA, or None without a CUDA device."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    from .vgg19 import _torch_vgg19

    model = _torch_vgg19(np_params).cuda()
    x = torch.from_numpy(images).cuda()

    def step():
        model.zero_grad(set_to_none=True)
        model(x).sum().backward()
        torch.cuda.synchronize()

    return step


def vgg19(cfg: Settings, size: dict) -> list[dict]:
    import jax

    import hlodsl as hd

    from .vgg19 import _images, _interleaved, _vgg_params, gradient_setup

    batch = size["vgg_batch"]
    (params, x), (jparams, jx), f, jf, _ = gradient_setup(batch)
    ours = jax.tree.leaves(f(params, x), is_leaf=lambda a: isinstance(a, hd.Array))
    for a, b in zip(ours, jax.tree.leaves(jf(jparams, jx)), strict=True):
        a, b = np.asarray(a), np.asarray(b)  # by norm: TF32 and conv algorithms differ
        assert np.linalg.norm(a - b) <= 2e-2 * np.linalg.norm(b)
    fns = {"ours": lambda: hd.block_until_ready(f(params, x)),
           "jax": lambda: jax.block_until_ready(jf(jparams, jx))}
    torch_step = _torch_vgg_step(_vgg_params()[1], _images(batch))
    if torch_step is not None:
        fns["torch"] = torch_step
    n = 1 if cfg.quick else 15
    t = _interleaved(fns, n)
    case = f"VGG19 forward + backward, batch {batch} ({n} calls, median)"
    rows = [row(SECTION, case, "hd.compile(hd.grad)", t["ours"], "jax.jit(jax.grad)",
                t["jax"], unit="ms")]
    if "torch" in t:
        rows.append(row(SECTION, case, "hd.compile(hd.grad)", t["ours"], "torch eager (CUDA)",
                        t["torch"], unit="ms"))
    return rows


def lstm(cfg: Settings, size: dict) -> list[dict]:
    from .workloads import lstm_setup

    steps, batch, hid, inp = size["lstm"]
    f, jf, (hp, hx), (jp, jx) = lstm_setup(steps, batch, hid, inp)
    a, b = np.asarray(f(hp, hx)["wh"]), np.asarray(jf(jp, jx)["wh"])
    assert np.linalg.norm(a - b) <= 1e-2 * np.linalg.norm(b), "LSTM gradients differ"
    t = compare({"ours": "hd.block_until_ready(f(hp, hx))",
                 "peer": "jax.block_until_ready(jf(jp, jx))"},
                _ns(f=f, jf=jf, hp=hp, hx=hx, jp=jp, jx=jx), _heavy(cfg))
    return [row(SECTION, f"LSTM gradient through scan, T{steps} B{batch} H{hid}",
                "hd.compile(hd.grad)", t["ours"], "jax.jit(jax.grad)", t["peer"], unit="ms")]


def attention(cfg: Settings, size: dict) -> list[dict]:
    import jax

    import hlodsl as hd

    from .memory_models import hd_models, inputs, jax_models

    dims, limit = size["attention"], size["attention_limit"]
    args = inputs("attention", dims)
    f = hd.compile(hd_models()["attention"], memory_limit=limit)
    jf = jax.jit(jax_models()["attention"])
    ha, ja = [hd.array(a) for a in args], [jax.device_put(a) for a in args]
    for a, b in zip(f(*ha), jf(*ja), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert np.linalg.norm(a - b) <= 1e-3 * np.linalg.norm(b), "attention gradients differ"
    ours_temp = f.memory_stats(*ha)["temp_size_in_bytes"]
    peer_temp = jf.lower(*ja).compile().memory_analysis().temp_size_in_bytes
    t = compare({"ours": "hd.block_until_ready(f(*ha))",
                 "peer": "jax.block_until_ready(jf(*ja))"},
                _ns(f=f, jf=jf, ha=ha, ja=ja), _heavy(cfg))
    shape = "x".join(str(dims[k]) for k in ("b", "h", "s", "e"))
    return [row(SECTION, f"attention forward + backward {shape} f32, memory_limit={limit!r} "
                         f"(XLA temp {_bytes(ours_temp)} against jax's {_bytes(peer_temp)})",
                "hd.compile(memory_limit)", t["ours"], "jax.jit", t["peer"],
                unit="ms")]


def sdpa(cfg: Settings, size: dict) -> list[dict]:
    """``nn.dot_product_attention`` (its default: cuDNN's fused attention on a GPU, the
    composite elsewhere; under a memory limit) against jax's fused cuDNN attention and
    torch's SDPA on a GPU (jax's composite elsewhere), bf16."""
    import jax
    import jax.numpy as jnp
    import ml_dtypes

    import hlodsl as hd
    import hlodsl.stdlib as xp
    from hlodsl.stdlib import nn

    b, t_, n, h = size["sdpa"]
    limit = size["sdpa_limit"]
    rng = np.random.default_rng(11)
    q, k, v, w = (rng.standard_normal((b, t_, n, h)).astype(ml_dtypes.bfloat16)
                  for _ in range(4))
    impl = "cudnn" if jax.devices()[0].platform == "gpu" else "xla"

    def loss_hd(q, k, v, w):
        return xp.sum(xp.astype(nn.dot_product_attention(q, k, v) * w, xp.float32))

    def loss_jax(q, k, v, w):
        out = jax.nn.dot_product_attention(q, k, v, implementation=impl)
        return jnp.sum((out * w).astype(jnp.float32))

    f = hd.compile(hd.grad(loss_hd, argnums=(0, 1, 2)), memory_limit=limit)
    jf = jax.jit(jax.grad(loss_jax, argnums=(0, 1, 2)))
    ha, ja = [hd.array(a) for a in (q, k, v, w)], [jax.device_put(a) for a in (q, k, v, w)]
    for a, b_ in zip(f(*ha), jf(*ja), strict=True):
        a, b_ = np.asarray(a, np.float32), np.asarray(b_, np.float32)
        assert np.linalg.norm(a - b_) <= 3e-2 * np.linalg.norm(b_), "attention gradients differ"
    fns = {"ours": lambda: hd.block_until_ready(f(*ha)),
           "jax": lambda: jax.block_until_ready(jf(*ja))}
    torch_step = _torch_sdpa_step(q, k, v, w)
    if torch_step is not None:
        fns["torch"] = torch_step
    from .vgg19 import _interleaved

    t = _interleaved(fns, 3 if cfg.quick else 21)
    ours = "cuDNN's fused attention" if impl == "cudnn" else "the composite"
    case = (f"attention forward + backward B{b} T{t_} N{n} H{h} bf16, hlodsl's default "
            f"({ours}) under memory_limit={limit!r}")
    rows = [row(SECTION, case, "nn.dot_product_attention", t["ours"],
                f"jax.nn.dot_product_attention({impl})", t["jax"], unit="ms")]
    if "torch" in t:
        rows.append(row(SECTION, case, "nn.dot_product_attention", t["ours"],
                        "torch scaled_dot_product_attention (CUDA)", t["torch"], unit="ms"))
    return rows


def _torch_sdpa_step(q, k, v, w):
    """torch SDPA forward + backward on CUDA in (B, N, T, H), or None without CUDA."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None

    def dev(a, grad):
        x = torch.from_numpy(np.asarray(a, np.float32)).cuda().to(torch.bfloat16)
        return x.transpose(1, 2).contiguous().requires_grad_(grad)

    tq, tk, tv, tw = dev(q, True), dev(k, True), dev(v, True), dev(w, False)

    def step():
        tq.grad = tk.grad = tv.grad = None
        out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv)
        (out * tw).float().sum().backward()
        torch.cuda.synchronize()

    return step


def _bytes(n: int) -> str:
    return f"{n / 2 ** 30:.3g} GiB" if n >= 2 ** 30 else f"{n / 2 ** 20:.3g} MiB"


def _spd(rng, n: int) -> np.ndarray:
    m = rng.standard_normal((n, n))
    return (m @ m.T / n + np.eye(n)).astype(np.float32)


def linalg(cfg: Settings, size: dict) -> list[dict]:
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg

    import hlodsl as hd
    import hlodsl.stdlib as xp

    n, rows = size["linalg"], []
    rng = np.random.default_rng(7)
    general = (rng.standard_normal((n, n)) / np.sqrt(n) + np.eye(n)).astype(np.float32)
    rhs = rng.standard_normal((n, 1)).astype(np.float32)
    spd = _spd(rng, n)
    la, jla = xp.linalg, jnp.linalg
    cases = [  # name, hlodsl function, jax function, inputs
        ("solve", la.solve, jla.solve, (general, rhs)),
        ("eigh", la.eigh, jla.eigh, (spd,)),
        ("svd", lambda a: la.svd(a, full_matrices=False),
         lambda a: jla.svd(a, full_matrices=False), (general,)),
        ("qr", la.qr, jla.qr, (general,)),
        ("cholesky", la.cholesky, jla.cholesky, (spd,)),
        ("inv", la.inv, jla.inv, (general,)),
        ("det", la.det, jla.det, (general,)),
        ("lu_factor", lambda a: la.lu_factor(a)[:2], jax.scipy.linalg.lu_factor, (general,)),
        ("lstsq", lambda a, b: la.lstsq(a, b).solution, lambda a, b: jla.lstsq(a, b)[0],
         (general, rhs)),
        ("pinv", la.pinv, jla.pinv, (general,)),
    ]
    for name, fn, jfn, args in cases:
        f, jf = hd.compile(fn), jax.jit(jfn)
        ha, ja = [hd.array(a) for a in args], [jax.device_put(a) for a in args]
        hd.block_until_ready(f(*ha))
        jax.block_until_ready(jf(*ja))
        t = compare({"ours": "hd.block_until_ready(f(*ha))",
                     "peer": "jax.block_until_ready(jf(*ja))"},
                    _ns(f=f, jf=jf, ha=ha, ja=ja), _heavy(cfg))
        rows.append(row(SECTION, f"{name} n={n} f32", "hd.compile", t["ours"], "jax.jit",
                        t["peer"], unit="ms"))
    return rows


#: The rows in the issue's order, by name (``--rows``).
ROWS = {"dense": dense, "gemm": gemm, "transformer": transformer, "vgg19": vgg19,
        "lstm": lstm, "attention": attention, "sdpa": sdpa, "linalg": linalg}


def run(quick: bool = False, rows: tuple[str, ...] = tuple(ROWS), log=None) -> dict:
    """Measure ``rows``; returns ``{"device", "mode", "rows", "errors", "seconds"}``.

    A row that raises is recorded in ``errors`` (its error's first line, per row name)
    and the others still run; an interrupt (SIGINT, the device script's time limit)
    ends the run with the rows measured so far. ``log``, a text stream, gets each
    row's table lines as soon as they are measured.
    """
    from .report import table

    cfg, size = settings(quick), SIZES["quick" if quick else "full"]
    out = {"device": device_kind(), "mode": "quick" if quick else "full", "rows": [],
           "errors": {}}
    start = time.perf_counter()
    for name in rows:
        t0, got = time.perf_counter(), []
        try:
            got = ROWS[name](cfg, size)
        except KeyboardInterrupt:
            out["errors"][name] = "interrupted (time limit): this row and the rest not run"
            break
        except Exception as e:  # keep the rest of a scarce device run
            out["errors"][name] = f"{type(e).__name__}: {e}".splitlines()[0][:500]
            if log:
                traceback.print_exc(file=log)
        finally:
            if log:
                status = "FAILED" if name in out["errors"] else f"{len(got)} rows"
                print(f"[benchmarks.gpu] {name}: {status}, {time.perf_counter() - t0:.1f} s",
                      file=log, flush=True)
                if got:
                    print("\n".join(table(got).splitlines()[2:]), file=log, flush=True)
        out["rows"].extend(got)
    out["seconds"] = time.perf_counter() - start
    return out


def main(argv=None) -> None:
    from .report import machine, table

    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes: the CPU rehearsal (numbers are rough)")
    parser.add_argument("--rows", default=",".join(ROWS),
                        help=f"comma-separated rows to run (default all: {','.join(ROWS)})")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)
    names = tuple(r for r in args.rows.split(",") if r)
    unknown = [r for r in names if r not in ROWS]
    if unknown:
        parser.error(f"unknown rows {unknown}; known: {', '.join(ROWS)}")
    result = run(args.quick, names, log=sys.stderr)
    result["machine"] = machine()
    print(f"Device: {result['device']}")
    print(f"Machine: {result['machine']}")
    print(f"Mode: {result['mode']}; medians of interleaved repeats, every call blocked until "
          f"ready; took {result['seconds']:.1f} s\n")
    print(table(result["rows"]))
    for name, err in result["errors"].items():
        print(f"\nFAILED {name}: {err}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)
    if result["errors"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
