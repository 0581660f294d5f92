"""Model benchmarks: VGG19 and the small CNN against jax.jit and PyTorch.

Every row runs hlodsl and a peer side by side in this process (times
interleaved, medians reported) and gives the ratio hlodsl / peer:

1. ``forward``: VGG19 inference (``stdlib.models.vgg19``, 224x224 float32,
   batch 1 and 8) compiled with ``hd.compile``, against ``jax.jit`` of the same
   network written here with ``jax.lax`` (:func:`vgg19_jax`), PyTorch eager
   (``torch.no_grad``, ``eval()``) and, when ``torch_compile=True``,
   ``torch.compile`` of the PyTorch model. All sides get the same weights and
   their outputs are checked equal first. hlodsl compiles with its own XLA
   options (``hlodsl.runtime.COMPILER_OPTIONS``: on CPU, YNNPACK takes the dots
   only); the "jax.jit, hlodsl's XLA options" rows compile the jax peer with
   the same options (``.lower(...).compile(compiler_options=...)``), so that
   they compare the two front ends under one XLA configuration.
2. ``compile_time``: staging + compiling the VGG19 forward pass and its
   gradient (of ``sum(vgg19(params, x))`` with respect to the parameters),
   ``hd.compile(f).entry(...)`` against ``jax.jit(f).lower(...).compile()``;
   neither runs the program.
3. ``gradient``: that gradient at batch 1, per call, against ``jax.jit`` of
   ``jax.grad`` of the peer (both sides' gradients checked equal first).
4. ``small_cnn_step``: one SGD training step (cross-entropy, forward,
   backward, update) of ``stdlib.models.small_cnn`` on 128 8x8 images, per call.
5. ``memory``: XLA's compiled memory statistics of the VGG19 training step
   (batch 8): hlodsl's ``Executable.memory_stats()`` against jax's
   ``compiled.memory_analysis()``. These rows hold bytes, not times.

A VGG19 forward pass at batch 8 takes seconds on two cores, so these rows use
few repetitions (see ``_repeats``); ``run(quick=True)`` does not include this
module (``python -m benchmarks --models`` does).
"""

from __future__ import annotations

import time

import numpy as np

from .foundation import row
from .timing import interleaved

__all__ = ["vgg19_jax", "forward", "forward_channels_last", "compile_time", "gradient",
           "small_cnn_step", "memory", "conv_layers", "ALL", "main"]

SECTION = "8. models"
IMAGE = 224
LR = 0.01


def vgg19_jax(params: dict, x, layout: str = "NCHW"):
    """VGG19 (torchvision's layout, as ``stdlib.models.vgg19``) in ``jax.lax``: the peer.

    ``params`` has the structure of ``models.vgg19_init``'s, as jax arrays; with
    ``layout="NHWC"``, ``x`` is channels-last and ``params`` are
    ``models.vgg19_to_channels_last``'s (HWIO conv weights).
    """
    import jax
    import jax.numpy as jnp

    from hlodsl.stdlib.models import VGG19_CONFIG

    last = layout == "NHWC"
    window = (1, 2, 2, 1) if last else (1, 1, 2, 2)
    numbers = ("NHWC", "HWIO", "NHWC") if last else ("NCHW", "OIHW", "NCHW")
    convs = iter(params["features"])
    for item in VGG19_CONFIG:
        if item == "M":
            x = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, window, window, "VALID")
        else:
            layer = next(convs)
            x = jax.lax.conv_general_dilated(x, layer["weight"], (1, 1), ((1, 1), (1, 1)),
                                             dimension_numbers=numbers)
            b = layer["bias"] if last else layer["bias"][None, :, None, None]
            x = jnp.maximum(x + b, 0.0)
    # the adaptive average pool is the identity only at 224
    if (x.shape[1:3] if last else x.shape[2:]) != (7, 7):
        raise ValueError(f"vgg19_jax: needs 224x224 images, got {x.shape}")
    x = x.reshape(x.shape[0], -1)
    layers = params["classifier"]
    for i, layer in enumerate(layers):
        x = _linear(x, layer["weight"]) + layer["bias"]
        if i < len(layers) - 1:
            x = jnp.maximum(x, 0.0)
    return x


def _linear(x, w):
    """``x @ w.T`` as one dot contracting ``w``'s dim 1, as ``nn.linear`` emits it.

    (``x @ w.T`` in jax.numpy lowers to a transpose and a dot, and XLA:CPU then
    copies the transposed weight on every call: 400 MB for VGG19's first layer.)
    """
    import jax

    return jax.lax.dot_general(x, w, (((1,), (1,)), ((), ())))


def _torch_vgg19(np_params: dict):
    """torchvision's VGG19 built from ``torch.nn`` (torchvision is not needed), our weights."""
    import torch
    from torch import nn as tnn

    from hlodsl.stdlib.models import VGG19_CONFIG

    layers, c_in = [], 3
    for item in VGG19_CONFIG:
        if item == "M":
            layers.append(tnn.MaxPool2d(2))
        else:
            layers += [tnn.Conv2d(c_in, item, 3, padding=1), tnn.ReLU(inplace=True)]
            c_in = item
    features = tnn.Sequential(*layers)
    classifier = tnn.Sequential(tnn.Linear(512 * 7 * 7, 4096), tnn.ReLU(True), tnn.Dropout(),
                                tnn.Linear(4096, 4096), tnn.ReLU(True), tnn.Dropout(),
                                tnn.Linear(4096, 1000))
    model = tnn.Sequential(features, tnn.AdaptiveAvgPool2d(7), tnn.Flatten(), classifier)
    convs = [m for m in features if isinstance(m, tnn.Conv2d)]
    linears = [m for m in classifier if isinstance(m, tnn.Linear)]
    with torch.no_grad():
        for module, p in zip(convs + linears, np_params["features"] + np_params["classifier"]):
            module.weight.copy_(torch.from_numpy(np.array(p["weight"])))
            module.bias.copy_(torch.from_numpy(np.array(p["bias"])))
    return model.eval()


_CACHE: dict = {}


def _vgg_params():
    """VGG19's parameters (torchvision's init) as hlodsl arrays and numpy arrays, once."""
    if "vgg" not in _CACHE:
        from hlodsl.stdlib import models, nn
        from hlodsl.arrays.tree import flatten, unflatten

        params = models.vgg19_init(nn.key(0))
        leaves, tree = flatten(params)
        _CACHE["vgg"] = params, unflatten(tree, [np.asarray(a) for a in leaves])
    return _CACHE["vgg"]


def _images(batch: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, 3, IMAGE, IMAGE)).astype(
        np.float32)


def _repeats(batch: int, quick: bool) -> int:
    """Timed calls per side (after one warm-up call): few, a batch-8 call takes seconds."""
    if quick:
        return 1
    return 7 if batch == 1 else 3


def _jit_same_options(fn, *args, **static):
    """``fn`` compiled by jax with hlodsl's XLA options (``runtime.compiler_options()``)."""
    import functools

    import jax

    from hlodsl import runtime

    return jax.jit(functools.partial(fn, **static)).lower(*args).compile(
        compiler_options=runtime.compiler_options())


def _interleaved(fns: dict, repeat: int) -> dict[str, float]:
    """Median seconds of one call of each function, calls interleaved, one warm-up each."""
    return interleaved(fns, repeat)


def forward(cfg, batches=(1, 8), torch_compile: bool = False) -> list[dict]:
    import jax
    import torch

    import hlodsl as hd
    from hlodsl.stdlib import models

    params, np_params = _vgg_params()
    jparams = jax.device_put(np_params)
    model = _torch_vgg19(np_params)
    f, jf = hd.compile(models.vgg19), jax.jit(vgg19_jax)
    compiled_model = None
    if torch_compile:
        t0 = time.perf_counter()
        compiled_model = torch.compile(model)
        with torch.no_grad():
            compiled_model(torch.from_numpy(_images(1)))
        torch_compile_s = time.perf_counter() - t0
    rows = []
    for batch in batches:
        images = _images(batch)
        x, jx, tx = hd.array(images), jax.device_put(images), torch.from_numpy(images)
        ours = np.asarray(f(params, x))
        with torch.no_grad():
            theirs = model(tx).numpy()
        jf_same = _jit_same_options(vgg19_jax, jparams, jx)
        for out in (jf(jparams, jx), jf_same(jparams, jx)):
            np.testing.assert_allclose(ours, np.asarray(out), rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-4)

        def torch_eager():
            with torch.no_grad():
                model(tx)

        fns = {"ours": lambda: f(params, x)._buf.block_until_ready(),
               "jax": lambda: jf(jparams, jx).block_until_ready(),
               "jax same": lambda: jf_same(jparams, jx).block_until_ready(),
               "torch": torch_eager}
        if compiled_model is not None:
            def torch_compiled():
                with torch.no_grad():
                    compiled_model(tx)
            fns["torch.compile"] = torch_compiled
        n = _repeats(batch, cfg.quick)
        t = _interleaved(fns, n)
        case = f"VGG19 forward, batch {batch}, 224x224 f32 ({n} calls, median)"
        rows.append(row(SECTION, case, "hd.compile", t["ours"], "jax.jit", t["jax"], unit="ms"))
        rows.append(row(SECTION, case, "hd.compile", t["ours"], "jax.jit, hlodsl's XLA options",
                        t["jax same"], unit="ms"))
        rows.append(row(SECTION, case, "hd.compile", t["ours"], "torch eager (no_grad)",
                        t["torch"], unit="ms"))
        if compiled_model is not None:
            rows.append(row(SECTION, case, "hd.compile", t["ours"], "torch.compile",
                            t["torch.compile"], unit="ms",
                            note=f"torch.compile's first call (compiling) took "
                                 f"{torch_compile_s:.0f} s" if batch == batches[0] else ""))
    return rows


def forward_channels_last(cfg, batch: int = 1) -> list[dict]:
    """VGG19 forward with ``data_format="NHWC"`` against jax (NHWC and NCHW) and torch eager.

    hlodsl's channels-last network (``vgg19_to_channels_last`` parameters, NHWC
    images) against: its own NCHW network, ``jax.jit`` of the NHWC/HWIO peer and
    of the NCHW/OIHW peer, torch eager (NCHW) and torch eager in
    ``torch.channels_last`` memory format. Interleaved calls, medians.
    """
    import jax
    import torch

    import hlodsl as hd
    from hlodsl.stdlib import models
    from hlodsl.arrays.tree import flatten, unflatten

    params, np_params = _vgg_params()
    cl = models.vgg19_to_channels_last(params)
    leaves, tree = flatten(cl)
    np_cl = unflatten(tree, [np.asarray(a) for a in leaves])
    jparams, jcl = jax.device_put(np_params), jax.device_put(np_cl)
    model = _torch_vgg19(np_params)
    model_cl = _torch_vgg19(np_params).to(memory_format=torch.channels_last)
    f = hd.compile(models.vgg19)
    jf = jax.jit(vgg19_jax, static_argnames="layout")
    images = _images(batch)
    nhwc = np.ascontiguousarray(images.transpose(0, 2, 3, 1))
    x, xl = hd.array(images), hd.array(nhwc)
    jx, jxl = jax.device_put(images), jax.device_put(nhwc)
    tx = torch.from_numpy(images)
    tx_cl = tx.contiguous(memory_format=torch.channels_last)
    ours = np.asarray(f(cl, xl, data_format="NHWC"))
    with torch.no_grad():
        for want in (model(tx), model_cl(tx_cl)):
            np.testing.assert_allclose(ours, want.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(ours, np.asarray(f(params, x)), rtol=1e-3, atol=1e-4)
    jf_same = _jit_same_options(vgg19_jax, jcl, jxl, layout="NHWC")
    for out in (jf(jcl, jxl, layout="NHWC"), jf(jparams, jx), jf_same(jcl, jxl)):
        np.testing.assert_allclose(ours, np.asarray(out), rtol=1e-3, atol=1e-4)

    def torch_eager(m, t):
        def call():
            with torch.no_grad():
                m(t)
        return call

    fns = {"ours": lambda: f(cl, xl, data_format="NHWC")._buf.block_until_ready(),
           "ours NCHW": lambda: f(params, x)._buf.block_until_ready(),
           "jax NHWC": lambda: jf(jcl, jxl, layout="NHWC").block_until_ready(),
           "jax NHWC same": lambda: jf_same(jcl, jxl).block_until_ready(),
           "jax NCHW": lambda: jf(jparams, jx).block_until_ready(),
           "torch": torch_eager(model, tx),
           "torch channels_last": torch_eager(model_cl, tx_cl)}
    n = _repeats(batch, cfg.quick)
    t = _interleaved(fns, n)
    case = f"VGG19 forward NHWC, batch {batch}, 224x224 f32 ({n} calls, median)"
    ours_label = 'hd.compile, data_format="NHWC"'
    peers = [("ours NCHW", 'hd.compile, data_format="NCHW"'), ("jax NHWC", "jax.jit NHWC/HWIO"),
             ("jax NHWC same", "jax.jit NHWC/HWIO, hlodsl's XLA options"),
             ("jax NCHW", "jax.jit NCHW/OIHW"), ("torch", "torch eager (no_grad), NCHW"),
             ("torch channels_last", "torch eager (no_grad), channels_last")]
    return [row(SECTION, case, ours_label, t["ours"], label, t[k], unit="ms")
            for k, label in peers]


def _sum_loss_grad_fns():
    import jax
    import jax.numpy as jnp

    import hlodsl as hd
    import hlodsl.stdlib as xp
    from hlodsl.stdlib import models

    def ours(p, x):
        return hd.grad(lambda p, x: xp.sum(models.vgg19(p, x)))(p, x)

    def peer(p, x):
        return jax.grad(lambda p, x: jnp.sum(vgg19_jax(p, x)))(p, x)

    return ours, peer


def compile_time(cfg) -> list[dict]:
    import jax

    import hlodsl as hd
    from hlodsl.stdlib import models

    params, np_params = _vgg_params()
    images = _images(1)
    x, jx = hd.array(images), jax.device_put(images)
    jparams = jax.device_put(np_params)
    grad_ours, grad_peer = _sum_loss_grad_fns()
    rows = []
    for name, ours_fn, peer_fn in (("forward", models.vgg19, vgg19_jax),
                                   ("gradient of sum(vgg19(p, x))", grad_ours, grad_peer)):
        def ours():
            hd.compile(lambda *a: ours_fn(*a)).entry(params, x)

        def peer():
            jax.jit(lambda *a: peer_fn(*a)).lower(jparams, jx).compile()

        def peer_same():
            _jit_same_options(lambda *a: peer_fn(*a), jparams, jx)

        n = 1 if cfg.quick else 5  # XLA's compile time varies by 20% from call to call
        t = _interleaved({"ours": ours, "peer": peer, "peer same": peer_same}, n)
        case = f"VGG19 {name}, batch 1: staging + compile ({n}x, median)"
        rows.append(row(SECTION, case, "hd.compile(f).entry(...)", t["ours"],
                        "jax.jit(f).lower(...).compile()", t["peer"], unit="ms"))
        rows.append(row(SECTION, case, "hd.compile(f).entry(...)", t["ours"],
                        "the same, hlodsl's XLA options", t["peer same"], unit="ms"))
    return rows


def gradient_setup(batch: int):
    """The backward pass's inputs and functions: ``(params, x)`` for hlodsl, ``(jparams,
    jx)`` for jax, ``hd.compile`` and ``jax.jit`` of the gradient, and jax's gradient."""
    import jax

    import hlodsl as hd

    params, np_params = _vgg_params()
    images = _images(batch)
    x, jx = hd.array(images), jax.device_put(images)
    jparams = jax.device_put(np_params)
    grad_ours, grad_peer = _sum_loss_grad_fns()
    return (params, x), (jparams, jx), hd.compile(grad_ours), jax.jit(grad_peer), grad_peer


def gradient(cfg, batch: int = 1) -> list[dict]:
    """The paper's backward pass, per call: the gradient of ``sum(vgg19(p, x))``."""
    import jax

    import hlodsl as hd

    (params, x), (jparams, jx), f, jf, grad_peer = gradient_setup(batch)
    jf_same = _jit_same_options(grad_peer, jparams, jx)
    ours = jax.tree.leaves(f(params, x), is_leaf=lambda a: isinstance(a, hd.Array))
    # Both in jax's key order. With the same XLA options the gradients agree to
    # rounding; XLA's default (YNNPACK) convolutions round differently in f32,
    # up to 5e-3 of a gradient's norm at 224x224, so that one is checked by norm.
    for a, b in zip(ours, jax.tree.leaves(jf_same(jparams, jx)), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)
    for a, b in zip(ours, jax.tree.leaves(jf(jparams, jx)), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert np.linalg.norm(a - b) <= 1e-2 * np.linalg.norm(b)

    fns = {"ours": lambda: hd.tree_leaves(f(params, x))[-1]._buf.block_until_ready(),
           "jax": lambda: jax.tree.leaves(jf(jparams, jx))[-1].block_until_ready(),
           "jax same": lambda: jax.tree.leaves(jf_same(jparams, jx))[-1].block_until_ready()}
    n = _repeats(batch, cfg.quick)
    t = _interleaved(fns, n)
    case = f"VGG19 gradient of sum(vgg19(p, x)), batch {batch}, per call ({n} calls, median)"
    return [row(SECTION, case, "hd.compile(hd.grad)", t["ours"], "jax.jit(jax.grad)",
                t["jax"], unit="ms"),
            row(SECTION, case, "hd.compile(hd.grad)", t["ours"],
                "jax.jit(jax.grad), hlodsl's XLA options", t["jax same"], unit="ms")]


def _cnn_fns():
    import jax
    import jax.numpy as jnp

    import hlodsl as hd
    from hlodsl.stdlib import models, nn

    def ours_step(p, x, y):
        g = hd.grad(lambda p, x, y: nn.cross_entropy(models.small_cnn(p, x), y))(p, x, y)
        return nn.tree_map(lambda a, b: a - LR * b, p, g)

    def cnn_jax(p, x):
        for layer in p["conv"]:
            x = jax.lax.conv_general_dilated(x, layer["weight"], (1, 1), "SAME",
                                             dimension_numbers=("NCHW", "OIHW", "NCHW"))
            x = jnp.maximum(x + layer["bias"][None, :, None, None], 0.0)
            x = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2),
                                      "VALID")
        x = x.reshape(x.shape[0], -1)
        return _linear(x, p["dense"]["weight"]) + p["dense"]["bias"]

    return ours_step, _jax_sgd_step(cnn_jax)


def small_cnn_step(cfg) -> list[dict]:
    import jax

    import hlodsl as hd
    from hlodsl.stdlib import models, nn

    from .timing import compare

    rng = np.random.default_rng(0)
    images = rng.standard_normal((128, 1, 8, 8)).astype(np.float32)
    labels = rng.integers(0, 10, 128).astype(np.int32)
    params = models.small_cnn_init(nn.key(0))
    np_params = jax.tree.map(np.asarray, params, is_leaf=lambda a: isinstance(a, hd.Array))
    ours_step, jax_step = _cnn_fns()
    ns = {"f": hd.compile(ours_step), "jf": jax.jit(jax_step), "p": params,
          "x": hd.array(images), "y": hd.array(labels), "jp": jax.device_put(np_params),
          "jx": jax.device_put(images), "jy": jax.device_put(labels)}
    ns["jf_same"] = _jit_same_options(jax_step, ns["jp"], ns["jx"], ns["jy"])
    new_ours = jax.tree.leaves(ns["f"](ns["p"], ns["x"], ns["y"]),
                               is_leaf=lambda a: isinstance(a, hd.Array))
    new_jax = jax.tree.leaves(ns["jf"](ns["jp"], ns["jx"], ns["jy"]))
    for a, b in zip(new_ours, new_jax):  # the same step on both sides
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)
    t = compare({"ours": "f(p, x, y)['dense']['bias']._buf.block_until_ready()",
                 "peer": "jf(jp, jx, jy)['dense']['bias'].block_until_ready()",
                 "same": "jf_same(jp, jx, jy)['dense']['bias'].block_until_ready()"}, ns, cfg)
    case = "small CNN (8x8, 2 convs) SGD training step, batch 128, per call"
    return [row(SECTION, case, "hd.compile", t["ours"], "jax.jit", t["peer"], unit="µs"),
            row(SECTION, case, "hd.compile", t["ours"], "jax.jit, hlodsl's XLA options",
                t["same"], unit="µs")]


def _vgg_train_fns():
    import hlodsl as hd
    from hlodsl.stdlib import models, nn

    def ours_step(p, x, y):
        g = hd.grad(lambda p, x, y: nn.cross_entropy(models.vgg19(p, x), y))(p, x, y)
        return nn.tree_map(lambda a, b: a - LR * b, p, g)

    return ours_step, _jax_sgd_step(vgg19_jax)


def _jax_sgd_step(model):
    """The peer's SGD step on mean cross-entropy of ``model(p, x)`` against int labels."""
    import jax
    import jax.numpy as jnp

    def jax_loss(p, x, y):
        logits = model(p, x)
        logp = logits - jax.nn.logsumexp(logits, axis=1, keepdims=True)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def jax_step(p, x, y):
        g = jax.grad(jax_loss)(p, x, y)
        return jax.tree.map(lambda a, b: a - LR * b, p, g)

    return jax_step


def memory(cfg, batch: int = 8) -> list[dict]:
    import jax

    import hlodsl as hd

    params, np_params = _vgg_params()
    images = _images(batch)
    labels = np.arange(batch, dtype=np.int32)
    ours_step, jax_step = _vgg_train_fns()
    ours = hd.compile(ours_step).entry(params, hd.array(images), hd.array(labels)).exe
    ours_m = ours.memory_stats()
    lowered = jax.jit(jax_step).lower(jax.device_put(np_params), jax.device_put(images),
                                      jax.device_put(labels))
    peers = {"jax.jit": lowered.compile().memory_analysis(),
             "jax.jit, hlodsl's XLA options": lowered.compile(
                 compiler_options=hd.runtime.compiler_options()).memory_analysis()}

    def peak(m):
        return (m["argument_size_in_bytes"] + m["output_size_in_bytes"]
                + m["temp_size_in_bytes"] - m["alias_size_in_bytes"])

    case = f"VGG19 SGD training step, batch {batch}: compiled memory"
    rows = []
    for label, peer in peers.items():
        peer_m = {k: getattr(peer, k) for k in ours_m}
        rows += [row(SECTION, f"{case}, temporaries (MiB)", "hd.compile",
                     ours_m["temp_size_in_bytes"] / 2**20, label,
                     peer_m["temp_size_in_bytes"] / 2**20, unit="MiB"),
                 row(SECTION, f"{case}, arguments + outputs + temporaries - aliased (MiB)",
                     "hd.compile", peak(ours_m) / 2**20, label, peak(peer_m) / 2**20,
                     unit="MiB")]
    return rows


def forward_channels_last_1_and_8(cfg) -> list[dict]:
    """``forward_channels_last`` at batch 1 and at batch 8."""
    return forward_channels_last(cfg, 1) + forward_channels_last(cfg, 8)


#: VGG19's distinct 3x3 convolutions: (height = width, in channels, out channels).
CONV_LAYERS = ((224, 3, 64), (224, 64, 64), (112, 64, 128), (112, 128, 128), (56, 128, 256),
               (56, 256, 256), (28, 256, 512), (28, 512, 512), (14, 512, 512))


def conv_layers(cfg, batch: int = 1) -> list[dict]:
    """Each distinct VGG19 convolution (+ bias + ReLU) alone, channels-last, against torch.

    hlodsl's ``nn.relu(nn.conv(x, w, b, padding=1, data_format="NHWC"))``
    compiled, against torch eager ``F.relu(F.conv2d(...))`` on the same data in
    ``torch.channels_last`` memory format: XLA:CPU's convolution kernel against
    PyTorch's, one layer at a time (15 interleaved calls, medians).
    """
    import torch
    import torch.nn.functional as F

    import hlodsl as hd
    from hlodsl.stdlib import nn

    rng = np.random.default_rng(0)
    f = hd.compile(lambda x, w, b: nn.relu(nn.conv(x, w, b, padding=1, data_format="NHWC")))
    rows = []
    for size, c_in, c_out in CONV_LAYERS:
        x = rng.standard_normal((batch, size, size, c_in)).astype(np.float32)
        w = (rng.standard_normal((3, 3, c_in, c_out)) * 0.05).astype(np.float32)
        b = rng.standard_normal(c_out).astype(np.float32)
        args = hd.array(x), hd.array(w), hd.array(b)
        tx = torch.from_numpy(x).permute(0, 3, 1, 2)  # an NCHW view of channels-last memory
        tw = torch.from_numpy(w).permute(3, 2, 0, 1).contiguous(memory_format=torch.channels_last)
        tb = torch.from_numpy(b)
        with torch.no_grad():
            want = F.relu(F.conv2d(tx, tw, tb, padding=1)).permute(0, 2, 3, 1).numpy()
        np.testing.assert_allclose(np.asarray(f(*args)), want, rtol=1e-3, atol=1e-3)

        def theirs():
            with torch.no_grad():
                F.relu(F.conv2d(tx, tw, tb, padding=1))

        t = _interleaved({"ours": lambda: f(*args)._buf.block_until_ready(),
                          "torch": theirs}, 3 if cfg.quick else 15)
        rows.append(row(SECTION, f"conv 3x3 + bias + ReLU, {batch}x{size}x{size}x{c_in} -> "
                                 f"{c_out} (NHWC, 15 calls, median)", "hd.compile", t["ours"],
                        "torch eager, channels_last", t["torch"], unit="ms"))
    return rows


ALL = (forward, compile_time, gradient, small_cnn_step, memory, forward_channels_last_1_and_8)


def main(argv=None) -> None:
    """``python -m benchmarks.vgg19 [--quick] [--batch N] [--layers]``: the channels-last rows."""
    import argparse

    from . import machine, table
    from .timing import settings

    parser = argparse.ArgumentParser(prog="python -m benchmarks.vgg19",
                                     description=forward_channels_last.__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one timed call per side")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--layers", action="store_true",
                        help="time each distinct convolution alone against torch instead")
    args = parser.parse_args(argv)
    run = conv_layers if args.layers else forward_channels_last
    rows = run(settings(args.quick), args.batch)
    print(f"Machine: {machine()}\n")
    print(table(rows))


if __name__ == "__main__":
    main()
