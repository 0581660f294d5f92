"""hlodsl against PyTorch on the CPU (issue 42): model steps, an eager loop, a scan, a GEMM.

``python -m benchmarks.torch_cpu [--quick] [--no-torch-compile] [--only gpt,euler,...]``

Each workload runs hlodsl, torch eager, ``torch.compile`` (where it compiles; the
first call's compile time is reported, and a workload it does not apply to says
why) and ``jax.jit`` (jax eager for the eager loop) in this process, their calls
interleaved (``timing.interleaved``: medians of samples of ~0.2 s), after checking
that every peer computes what hlodsl computes from the same inputs. The machine's
1-minute load average is printed before and after each workload: on a shared
machine, ratios move less than absolute times, and a row taken at a high load is
rough.

1. ``gpt``: one Adam training step of a 2-layer GPT (``torch_models.gpt_loss``:
   causal attention, LayerNorm, GELU MLP, tied embedding), B8 T128 D256, vocab 1024.
2. ``resnet``: one SGD training step (forward + backward + update) of a CIFAR-style
   ResNet (``torch_models.resnet_loss``: residual conv blocks, batch norm), batch
   32, 32x32x3, NCHW.
3. ``euler``: 200 explicit Euler steps ``x += dt (sin(x) / 2 - x x / 10)`` (7 ops a
   step) on a 64-vector, eagerly: hlodsl eager, torch eager, jax eager, numpy.
4. ``rnn``: an Elman RNN (tanh) forward through ``scan``, T1000 B16 H128, and
   ``mean(hs * hs)``: ``hd.compile`` of ``hd.scan``, ``torch.nn.RNN``, ``jax.lax.scan``.
5. ``gemm``: a 2048 x 2048 float32 product: ``hd.compile``, ``torch.mm``, numpy, jax.
6. ``transformer``: ``benchmarks.workloads``' transformer block Adam step (B8 T128
   D256, 8 heads), the same array-API code run on torch through a small shim.
7. ``vgg19``: the gradient of ``sum(vgg19(p, x))`` at batch 1, 224x224 (``benchmarks.vgg19``),
   torch's VGG19 forward + backward.
"""

from __future__ import annotations

import argparse
import os
import time
from types import SimpleNamespace

import numpy as np

from . import torch_models as tm
from .timing import interleaved

__all__ = ["WORKLOADS", "run", "table", "main"]

LR = 1e-3
DT = 0.01


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


class Cfg:
    """Sizes and repetitions: ``quick`` is a smoke run of tiny sizes (numbers mean nothing)."""

    def __init__(self, quick: bool, torch_compile: bool):
        self.quick = quick
        self.torch_compile = torch_compile and not quick
        self.repeat = 3 if quick else 9
        self.target_s = 0.0 if quick else 0.2


def _result(case: str, times, skipped: dict | None = None, notes=()) -> dict:
    """A workload's row: ``times`` is ``interleaved(..., cpu=True)``'s (wall, CPU) pair."""
    wall, cpu = times if isinstance(times, tuple) else (times, {})
    return {"case": case, "times": wall, "cpu": cpu, "skipped": dict(skipped or {}),
            "notes": list(notes)}


def _time(fns: dict, cfg: Cfg):
    """Wall and CPU medians per call, the sides interleaved (``timing.interleaved``)."""
    return interleaved(fns, cfg.repeat, cfg.target_s, cpu=True)


def _close_by_norm(ours, theirs, rel: float, what: str) -> None:
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    err = np.linalg.norm(ours - theirs) / np.linalg.norm(theirs)
    assert err <= rel, f"{what}: differs by {err:.3g} of its norm (allowed {rel})"


def _torch_compiled(fn, cfg: Cfg, run_once):
    """``(torch.compile(fn), seconds of its first call, None)`` or ``(None, None, reason)``."""
    if not cfg.torch_compile:
        return None, None, "--quick" if cfg.quick else "--no-torch-compile"
    import torch

    compiled = torch.compile(fn)
    t0 = time.perf_counter()
    try:
        run_once(compiled)
    except Exception as e:  # inductor needs a C++ compiler; say what failed
        return None, None, f"torch.compile failed: {type(e).__name__}: {str(e)[:80]}"
    return compiled, time.perf_counter() - t0, None


# -- 1, 2. training steps of the GPT and the ResNet -----------------------------------

def _hd_step(loss_fn, opt, donate: bool = True):
    """``hd.compile`` of one training step ``(params, state, *data) -> (params, state, loss)``,
    the old parameters and state donated (as jax's peer does)."""
    import hlodsl as hd

    def step(p, s, *data):
        loss, g = hd.value_and_grad(lambda p: loss_fn(p, *data))(p)
        p, s = opt.update(g, s, p)
        return p, s, loss

    return hd.compile(step, donate_argnums=(0, 1) if donate else None)


def _jax_step(loss_fn, opt):
    import jax
    import optax

    def step(p, s, *data):
        loss, g = jax.value_and_grad(lambda p: loss_fn(p, *data))(p)
        updates, s = opt.update(g, s, p)
        return optax.apply_updates(p, updates), s, loss

    return jax.jit(step, donate_argnums=(0, 1))


def _leaves(tree) -> list:
    """The leaves in jax's order (dicts by sorted keys), whatever their array type."""
    import jax

    return jax.tree.leaves(tree, is_leaf=lambda a: not isinstance(a, (dict, list, tuple)))


def _torch_params(np_params):
    import jax
    import torch

    leaves, tree = jax.tree.flatten(np_params)
    tensors = [torch.tensor(a, requires_grad=True) for a in leaves]
    return jax.tree.unflatten(tree, tensors), tensors


def _train_step(case: str, cfg: Cfg, np_params: dict, data: tuple, loss_of, hd_opt,
                jax_opt, torch_opt) -> dict:
    """One training step of ``loss_of(F, params, *data)`` on every side: checked, timed."""
    import jax
    import torch

    import hlodsl as hd

    HD, TF, JX = tm.hd_layers(), tm.torch_layers(), tm.jax_layers()
    f = _hd_step(lambda p, *d: loss_of(HD, p, *d), hd_opt)
    jf = _jax_step(lambda p, *d: loss_of(JX, p, *d), jax_opt)
    hdata = [hd.array(a) for a in data]
    jdata = [jax.device_put(a) for a in data]
    tdata = [torch.from_numpy(a) for a in data]
    hp = hd.tree_map(hd.array, np_params)
    hstate = [*f(hp, hd_opt.init(hp), *hdata)]
    jp = jax.device_put(np_params)
    jstate = [*jf(jp, jax_opt.init(jp), *jdata)]

    def torch_side(loss_fn):
        tp, leaves = _torch_params(np_params)
        opt = torch_opt(leaves)

        def step():
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(tp, *tdata)
            loss.backward()
            opt.step()
            return loss

        return step, leaves

    t_step, t_leaves = torch_side(lambda p, *d: loss_of(TF, p, *d))
    t_loss = t_step()
    # The first step from the same weights: the same loss, the same update (by norm:
    # Adam's first step is about lr * sign(g), whatever the rounding of a tiny g).
    start = _leaves(np_params)
    ours = [np.asarray(a) - s for a, s in zip(_leaves(hstate[0]), start, strict=True)]
    np.testing.assert_allclose(float(hstate[2]), float(jstate[2]), rtol=1e-4)
    np.testing.assert_allclose(float(hstate[2]), t_loss.item(), rtol=1e-4)
    for peer, leaves in (("jax", _leaves(jstate[0])),
                         ("torch", [t.detach().numpy() for t in t_leaves])):
        theirs = [np.asarray(a) - s for a, s in zip(leaves, start, strict=True)]
        _close_by_norm(np.concatenate([a.ravel() for a in ours]),
                       np.concatenate([a.ravel() for a in theirs]), 2e-2, f"{case}, {peer}")

    def ours_call():
        hstate[:2] = f(hstate[0], hstate[1], *hdata)[:2]
        hd.block_until_ready(hstate[0])

    def jax_call():
        jstate[:2] = jf(jstate[0], jstate[1], *jdata)[:2]
        jax.block_until_ready(jstate[0])

    fns = {"hlodsl": ours_call, "torch eager": t_step, "jax.jit": jax_call}
    compiled, compile_s, reason = _torch_compiled(
        lambda p, *d: loss_of(TF, p, *d), cfg, lambda c: torch_side(c)[0]())
    skipped, notes = {}, []
    if compiled is None:
        skipped["torch.compile"] = reason
    else:
        c_step, c_leaves = torch_side(compiled)
        np.testing.assert_allclose(c_step().item(), t_loss.item(), rtol=1e-4)
        fns["torch.compile"] = c_step
        notes.append(f"torch.compile's first call (compiling the loss) took {compile_s:.0f} s")
    return _result(case, _time(fns, cfg), skipped, notes)


def gpt(cfg: Cfg) -> dict:
    import optax

    from .xla_options import QUICK
    import torch

    from hlodsl.stdlib import nn

    size = QUICK["gpt"] if cfg.quick else tm.GPT
    heads = size["heads"]
    case = (f"GPT, {size['layers']} layers, causal attention, LayerNorm, GELU MLP, tied "
            f"embedding, Adam; B{size['batch']} T{size['tokens']} D{size['width']} "
            f"V{size['vocab']}")
    return _train_step(case, cfg, tm.gpt_params(size), tm.gpt_tokens(size),
                       lambda F, p, ids, labels: tm.gpt_loss(F, p, ids, labels, heads),
                       nn.adam(LR), optax.adam(LR), lambda ps: torch.optim.Adam(ps, lr=LR))


def resnet(cfg: Cfg) -> dict:
    import optax

    from .xla_options import QUICK
    import torch

    from hlodsl.stdlib import nn

    size = QUICK["resnet"] if cfg.quick else tm.RESNET
    case = (f"ResNet ({len(size['widths'])} stages x {size['blocks']} residual conv blocks "
            f"+ batch norm, widths {size['widths']}) SGD step, batch {size['batch']}, "
            f"{size['side']}x{size['side']}x3 NCHW")
    return _train_step(case, cfg, tm.resnet_params(size), tm.resnet_images(size),
                       tm.resnet_loss, nn.sgd(0.1), optax.sgd(0.1),
                       lambda ps: torch.optim.SGD(ps, lr=0.1))


# -- 3. an eager loop -------------------------------------------------------------------

def euler_loop(sin, x, steps: int):
    """``steps`` explicit Euler steps of ``x' = sin(x) / 2 - x^2 / 10``: 7 ops a step."""
    for _ in range(steps):
        x = x + DT * (sin(x) * 0.5 - x * x * 0.1)
    return x


def euler(cfg: Cfg) -> dict:
    import jax.numpy as jnp
    import torch

    import hlodsl as hd
    import hlodsl.stdlib as xp

    steps = 20 if cfg.quick else 200
    x0 = np.linspace(-2, 2, 64, dtype=np.float32)
    hx, jx, tx = hd.array(x0), jnp.asarray(x0), torch.from_numpy(x0.copy())
    fns = {"hlodsl": lambda: np.asarray(euler_loop(xp.sin, hx, steps)),
           "torch eager": lambda: euler_loop(torch.sin, tx, steps).numpy(),
           "jax eager": lambda: np.asarray(euler_loop(jnp.sin, jx, steps)),
           "numpy": lambda: euler_loop(np.sin, x0, steps)}
    ours = fns["hlodsl"]()
    for k in ("torch eager", "jax eager", "numpy"):
        np.testing.assert_allclose(ours, fns[k](), rtol=1e-5, atol=1e-6, err_msg=k)
    return _result(f"eager explicit Euler, {steps} steps of 7 ops on a 64-vector f32",
                   _time(fns, cfg),
                   {"torch.compile": "an eager loop (compiling it is hd.compile's row, not "
                                     "eager)"})


# -- 4. an RNN through scan --------------------------------------------------------------

def rnn_loss(scan, xp, p, xs):
    """``mean(hs * hs)`` of an Elman RNN ``h = tanh(x Wx + h Wh + b)`` over ``xs`` (T, B, I)."""
    def cell(h, x):
        h = xp.tanh(x @ p["wx"] + h @ p["wh"] + p["b"])
        return h, h

    h0 = xp.zeros((xs.shape[1], p["wh"].shape[0]), dtype=xp.float32)
    return xp.mean(scan(cell, h0, xs)[1] ** 2)


def rnn(cfg: Cfg) -> dict:
    import jax
    import jax.numpy as jnp
    import torch

    import hlodsl as hd
    import hlodsl.stdlib as xp

    t_, b, h = (20, 2, 8) if cfg.quick else (1000, 16, 128)
    rng = np.random.default_rng(2)
    p = {"wx": (rng.standard_normal((h, h)) / np.sqrt(h)).astype(np.float32),
         "wh": (rng.standard_normal((h, h)) / np.sqrt(h)).astype(np.float32),
         "b": (rng.standard_normal(h) * 0.1).astype(np.float32)}
    xs = rng.standard_normal((t_, b, h)).astype(np.float32)
    f = hd.compile(lambda p, xs: rnn_loss(hd.scan, xp, p, xs))
    jf = jax.jit(lambda p, xs: rnn_loss(jax.lax.scan, jnp, p, xs))
    model = torch.nn.RNN(h, h, nonlinearity="tanh")
    with torch.no_grad():
        model.weight_ih_l0.copy_(torch.from_numpy(p["wx"].T.copy()))
        model.weight_hh_l0.copy_(torch.from_numpy(p["wh"].T.copy()))
        model.bias_ih_l0.copy_(torch.from_numpy(p["b"]))
        model.bias_hh_l0.zero_()
    hp, hx = hd.tree_map(hd.array, p), hd.array(xs)
    jp, jx, tx = jax.device_put(p), jax.device_put(xs), torch.from_numpy(xs)

    def torch_fwd(m=model):
        with torch.no_grad():
            return (m(tx)[0] ** 2).mean()

    ours = float(f(hp, hx))
    np.testing.assert_allclose(ours, float(jf(jp, jx)), rtol=1e-4)
    np.testing.assert_allclose(ours, torch_fwd().item(), rtol=1e-4)
    fns = {"hlodsl": lambda: float(f(hp, hx)), "torch eager": lambda: torch_fwd().item(),
           "jax.jit": lambda: float(jf(jp, jx))}
    compiled, compile_s, reason = _torch_compiled(model, cfg, lambda c: torch_fwd(c))
    skipped, notes = {}, []
    if compiled is None:
        skipped["torch.compile"] = reason
    else:
        np.testing.assert_allclose(ours, torch_fwd(compiled).item(), rtol=1e-4)
        fns["torch.compile"] = lambda: torch_fwd(compiled).item()
        notes.append(f"torch.compile's first call took {compile_s:.0f} s")
    return _result(f"RNN (tanh) forward through scan, T{t_} B{b} H{h}, mean(hs * hs); "
                   "torch: nn.RNN", _time(fns, cfg), skipped, notes)


# -- 5. GEMM -------------------------------------------------------------------------------

def gemm(cfg: Cfg) -> dict:
    import jax
    import torch

    import hlodsl as hd

    n = 64 if cfg.quick else 2048
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    f, jf = hd.compile(lambda a, b: a @ b), jax.jit(lambda a, b: a @ b)
    ha, hb, ja, jb = hd.array(a), hd.array(b), jax.device_put(a), jax.device_put(b)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    ours = np.asarray(f(ha, hb))
    for k, v in (("numpy", a @ b), ("torch", (ta @ tb).numpy()), ("jax", jf(ja, jb))):
        np.testing.assert_allclose(ours, np.asarray(v), rtol=1e-3, atol=1e-3 * np.sqrt(n),
                                   err_msg=k)
    fns = {"hlodsl": lambda: f(ha, hb)._buf.block_until_ready(),
           "torch eager": lambda: torch.mm(ta, tb), "jax.jit": lambda: jf(ja, jb)
           .block_until_ready(), "numpy": lambda: a @ b}
    return _result(f"GEMM {n}x{n} f32", _time(fns, cfg),
                   {"torch.compile": "one library call (torch.compile calls the same mm)"})


# -- 6. the transformer block of benchmarks.workloads ------------------------------------

def _torch_xp():
    """The array-API names ``workloads._block`` and ``_adam`` use, on torch tensors."""
    import torch

    def keep(fn):
        return lambda a, axis, keepdims=False: fn(a, dim=axis, keepdim=keepdims)

    return SimpleNamespace(mean=keep(torch.mean), sum=keep(torch.sum), max=keep(torch.amax),
                           reshape=torch.reshape, permute_dims=torch.permute, exp=torch.exp,
                           sqrt=torch.sqrt, maximum=torch.clamp_min)


def transformer(cfg: Cfg) -> dict:
    import jax
    import jax.numpy as jnp
    import torch

    import hlodsl as hd
    import hlodsl.stdlib as xp

    from .workloads import B, D, F, H, T, _adam, _block, _block_params, _block_step

    b, t_, d, heads, f_ = (2, 8, 32, 2, 64) if cfg.quick else (B, T, D, H, F)
    params = _block_params(d=d, f=f_)
    x = np.random.default_rng(1).standard_normal((b, t_, d)).astype(np.float32)
    zeros = {k: np.zeros_like(a) for k, a in params.items()}

    step_hd, step_jax = _block_step(xp, hd.grad, heads), _block_step(jnp, jax.grad, heads)

    TX = _torch_xp()
    tp = {k: torch.tensor(a, requires_grad=True) for k, a in params.items()}
    tz = {k: torch.from_numpy(a) for k, a in zeros.items()}
    tx = torch.from_numpy(x)

    def torch_step(loss_fn):
        def step():
            g = dict(zip(tp, torch.autograd.grad(loss_fn(tp, tx), list(tp.values()))))
            with torch.no_grad():
                return _adam(TX, None, tp, g, tz, tz, 1)
        return step

    def torch_loss(p, x):
        return torch.mean(_block(TX, p, x, heads) ** 2)

    f, jf = hd.compile(step_hd), jax.jit(step_jax)
    hp, hz = hd.tree_map(hd.array, params), hd.tree_map(hd.array, zeros)
    jp, jz, hx, jx = jax.device_put(params), jax.device_put(zeros), hd.array(x), jax.device_put(x)
    ours = f(hp, hz, hz, hx)[0]
    step_t = torch_step(torch_loss)
    for peer, theirs in (("jax", jf(jp, jz, jz, jx)[0]), ("torch", step_t()[0])):
        for k in params:
            _close_by_norm(np.asarray(ours[k]) - params[k],
                           np.asarray(theirs[k].detach() if peer == "torch" else theirs[k])
                           - params[k], 2e-2, f"transformer {k}, {peer}")
    fns = {"hlodsl": lambda: hd.block_until_ready(f(hp, hz, hz, hx)),
           "torch eager": step_t,
           "jax.jit": lambda: jax.block_until_ready(jf(jp, jz, jz, jx))}
    compiled, compile_s, reason = _torch_compiled(torch_loss, cfg,
                                                  lambda c: torch_step(c)())
    skipped, notes = {}, []
    if compiled is None:
        skipped["torch.compile"] = reason
    else:
        fns["torch.compile"] = torch_step(compiled)
        notes.append(f"torch.compile's first call (compiling the loss) took {compile_s:.0f} s")
    return _result(f"transformer block Adam step B{b} T{t_} D{d}, {heads} heads "
                   "(benchmarks.workloads)", _time(fns, cfg),
                   skipped, notes)


# -- 7. VGG19 ------------------------------------------------------------------------------

def vgg19(cfg: Cfg) -> dict:
    import torch

    import hlodsl as hd

    from .vgg19 import _images, _torch_vgg19, _vgg_params, gradient_setup

    case = "VGG19 gradient of sum(vgg19(p, x)), batch 1, 224x224 (benchmarks.vgg19)"
    if cfg.quick:
        return _result(case, {}, {"all": "--quick (a call takes seconds on 2 cores)"})
    import jax

    (params, x), (jparams, jx), f, jf, _ = gradient_setup(1)
    model, tx = _torch_vgg19(_vgg_params()[1]), torch.from_numpy(_images(1))

    def torch_step(m):
        def step():
            m.zero_grad(set_to_none=True)
            m(tx).sum().backward()
        return step

    ours = f(params, x)
    torch_step(model)()
    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    jours = jf(jparams, jx)
    for what, mine, theirs, jaxs in (
            ("first conv", ours["features"][0]["weight"], convs[0].weight.grad,
             jours["features"][0]["weight"]),
            ("last linear", ours["classifier"][-1]["weight"], linears[-1].weight.grad,
             jours["classifier"][-1]["weight"])):
        # The first conv's gradient, 16 float32 convolutions deep, differs by 1.2% (norm)
        # between torch and XLA (jax's and ours alike), the last layers' by 2e-6.
        _close_by_norm(np.asarray(mine), theirs.numpy(), 3e-2, f"VGG19 {what}, torch")
        _close_by_norm(np.asarray(mine), np.asarray(jaxs), 1e-2, f"VGG19 {what}, jax")
    fns = {"hlodsl": lambda: hd.block_until_ready(f(params, x)),
           "torch eager": torch_step(model),
           "jax.jit": lambda: jax.block_until_ready(jf(jparams, jx))}
    compiled, compile_s, reason = _torch_compiled(model, cfg, lambda c: torch_step(c)())
    skipped, notes = {}, []
    if compiled is None:
        skipped["torch.compile"] = reason
    else:
        fns["torch.compile"] = torch_step(compiled)
        notes.append(f"torch.compile's first call took {compile_s:.0f} s")
    return _result(case, interleaved(fns, 5, 0.0, cpu=True), skipped, notes)


WORKLOADS = {"gpt": gpt, "resnet": resnet, "euler": euler, "rnn": rnn, "gemm": gemm,
             "transformer": transformer, "vgg19": vgg19}

_PEERS = ("torch eager", "torch.compile", "jax.jit")


def run(quick: bool = False, torch_compile: bool = True, only=None, log=print) -> list[dict]:
    """Every workload's result (times in seconds by side, skipped sides with the reason,
    notes, the 1-minute load average before and after it)."""
    cfg = Cfg(quick, torch_compile)
    results = []
    for name, fn in WORKLOADS.items():
        if only and name not in only:
            continue
        before = _load()
        r = fn(cfg)
        r["load"] = (before, _load())
        results.append(r)
        if log:
            log(table([r]).splitlines()[2])
    return results


def _ms(s: float | None) -> str:
    return "" if s is None else f"{s * 1e3:.3g} ms" if s < 0.1 else f"{s * 1e3:.0f} ms"


def table(results: list[dict]) -> str:
    """A Markdown table: each side's time, hlodsl / each peer, and the load average."""
    lines = ["| workload | hlodsl | torch eager | torch.compile | jax.jit / jax eager | numpy "
             "| hlodsl / torch | hlodsl / torch.compile | hlodsl / jax | hlodsl / torch, "
             "CPU time | load before, after |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        t, c = r["times"], r.get("cpu", {})
        jax_t = t.get("jax.jit", t.get("jax eager"))
        ours = t.get("hlodsl")

        def ratio(mine, peer):
            return f"{mine / peer:.2f}" if mine and peer else ""

        lines.append(
            f"| {r['case']} | {_ms(ours)} | {_ms(t.get('torch eager'))} | "
            f"{_ms(t.get('torch.compile')) or r['skipped'].get('torch.compile', '')} | "
            f"{_ms(jax_t)} | {_ms(t.get('numpy'))} | {ratio(ours, t.get('torch eager'))} | "
            f"{ratio(ours, t.get('torch.compile'))} | {ratio(ours, jax_t)} | "
            f"{ratio(c.get('hlodsl'), c.get('torch eager'))} | "
            f"{r['load'][0]:.1f}, {r['load'][1]:.1f} |")
    notes = [f"- {r['case'].split(',')[0]}: {n}" for r in results for n in r["notes"]]
    notes += [f"- {r['case'].split(',')[0]}: {side} skipped: {why}" for r in results
              for side, why in r["skipped"].items() if side != "torch.compile"]
    return "\n".join(lines + ([""] + notes if notes else []))


def main(argv=None) -> None:
    import torch

    from .report import machine

    parser = argparse.ArgumentParser(prog="python -m benchmarks.torch_cpu",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    parser.add_argument("--no-torch-compile", action="store_true",
                        help="leave torch.compile out (its compiles take minutes here)")
    parser.add_argument("--only", default="", help=f"comma-separated: {', '.join(WORKLOADS)}")
    args = parser.parse_args(argv)
    only = set(filter(None, args.only.split(",")))
    if only - set(WORKLOADS):
        parser.error(f"unknown workloads {sorted(only - set(WORKLOADS))}")
    print(f"Machine: {machine()}; torch {torch.__version__}, {torch.get_num_threads()} "
          "threads\n")
    t0 = time.perf_counter()
    print("rows as they finish:", flush=True)
    results = run(args.quick, not args.no_torch_compile, only,
                  log=lambda line: print(line, flush=True))
    print()
    print(table(results))
    print(f"\ntook {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
