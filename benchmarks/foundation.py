"""Foundation benchmarks: per-call overhead, eager ops, staging + compile, dispatch.

Every case runs hlodsl and its peer side by side in this process and returns
rows (dicts) with both times and the ratio hlodsl / peer:

1. ``percall``: a compiled ``dense`` (10x10 float32) and ``softmax`` (1000
   float32) against ``jax.jit`` of the same function in ``jax.numpy``; without
   blocking on the result, and with ``block_until_ready`` on both sides. Then
   the call path's workloads (``calls``: a dict of arrays and many arrays) and
   nested parameter trees (``nested``: an 8-layer MLP taking ``{layer_i: {w, b}}``,
   the same parameters as a flat dict and as a list of registered dataclasses,
   a 3-level tree, and an update returning the nested tree).
2. ``eager``: one elementwise add on 1000 float32 eagerly: ``hd.ops.Add()`` and
   the stdlib operator ``a + b`` against ``jnp.add`` (jax arrays) and
   ``np.add`` (numpy arrays); and a loop of 1000 operator calls (array operands,
   Python float operands) against the same loop on jax arrays (jax eager).
3. ``compile``: staging + compiling (first call of a fresh ``hd.compile``)
   against ``jax.jit(lambda ...).lower(...).compile()`` of a fresh lambda.
4. ``dispatch``: a plum function with methods on ``hd.Matrix`` and
   ``hd.Vector`` called on an hlodsl Array, against the same plum setup on
   plain Python classes and against a plain function call.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .timing import Settings, compare, time_once

__all__ = ["percall", "eager", "compile_time", "dispatch", "nested", "ALL"]

US = 1e-6
MS = 1e-3


def row(section, case, ours_label, ours_s, peer_label, peer_s, unit="µs", note=""):
    return {
        "section": section,
        "case": case,
        "ours": ours_label,
        "ours_s": ours_s,
        "peer": peer_label,
        "peer_s": peer_s,
        "ratio": ours_s / peer_s,
        "unit": unit,
        "note": note,
    }


# -- the functions, in hlodsl and in jax.numpy -----------------------------------

def dense(W, x, b):
    return W @ x + b


def softmax(xs):
    from hlodsl.stdlib import exp, sum

    return exp(xs) / sum(exp(xs))


def dense_jnp(W, x, b):
    return W @ x + b


def softmax_jnp(xs):
    import jax.numpy as jnp

    return jnp.exp(xs) / jnp.sum(jnp.exp(xs))


def _inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    return {
        "dense": (rng.random((10, 10), dtype=np.float32),
                  rng.random(10, dtype=np.float32),
                  rng.random(10, dtype=np.float32)),
        "softmax": (rng.random(1000, dtype=np.float32),),
    }


_CASES = {
    "dense": ("dense 10x10 f32", dense, dense_jnp),
    "softmax": ("softmax 1000 f32", softmax, softmax_jnp),
}


# -- 1. per-call time of a compiled function -------------------------------------

def percall(cfg: Settings) -> list[dict]:
    import jax

    import hlodsl as hd

    rows = []
    for key, host_args in _inputs().items():
        label, fn, fn_jnp = _CASES[key]
        ns = {
            "f": hd.compile(fn),
            "jf": jax.jit(fn_jnp),
            "args": tuple(hd.array(a) for a in host_args),
            "jargs": tuple(jax.device_put(a) for a in host_args),
        }
        # Same result on both sides before anything is timed.
        np.testing.assert_allclose(np.asarray(ns["f"](*ns["args"])),
                                   np.asarray(ns["jf"](*ns["jargs"])), rtol=1e-5, atol=1e-6)
        t = compare({"ours": "f(*args)", "peer": "jf(*jargs)"}, ns, cfg)
        rows.append(row("1. compiled per-call", f"{label}, not blocked",
                        "hd.compile", t["ours"], "jax.jit", t["peer"]))
        t = compare({"ours": "f(*args)._buf.block_until_ready()",
                     "peer": "jf(*jargs).block_until_ready()"}, ns, cfg)
        rows.append(row("1. compiled per-call", f"{label}, block_until_ready",
                        "hd.compile", t["ours"], "jax.jit", t["peer"]))
    rows.extend(calls(cfg))
    rows.extend(nested(cfg))
    return rows


def dict_params(params, *xs):
    """A call whose arguments are a dict of arrays and more arrays, positional."""
    s = params["w0"][0]
    for k in params:
        s = s + params[k][0]
    for x in xs:
        s = s + x
    return s


def positional(*xs):
    """A call of positional arrays only."""
    s = xs[0]
    for x in xs[1:]:
        s = s + x
    return s


#: Issue 29's call-path workloads: (case, dict entries or None, positional arrays, blocked).
CALLS = (
    ("dict of 8 arrays + 20 arrays", 8, 20, False),
    ("dict of 8 arrays + 20 arrays", 8, 20, True),
    ("dict of 11 arrays + 50 arrays", 11, 50, False),
    ("dict of 11 arrays + 50 arrays", 11, 50, True),
    ("50 positional arrays", None, 50, False),
)


def calls(cfg: Settings) -> list[dict]:
    """The call path's Python work for many and structured arguments (issues 16 and 29:
    flattening, the signature key, the buffer list; 3.85x jax.jit before issue 16)."""
    import jax

    import hlodsl as hd

    rows = []
    for case, n_params, n_xs, blocked in CALLS:
        rng = np.random.default_rng(2)
        params = {f"w{i}": rng.standard_normal((8, 8)).astype(np.float32)
                  for i in range(n_params or 0)}
        xs = [rng.standard_normal(8).astype(np.float32) for _ in range(n_xs)]
        ns = {"p": {k: hd.array(v) for k, v in params.items()}, "xs": [hd.array(x) for x in xs],
              "jp": {k: jax.device_put(v) for k, v in params.items()},
              "jxs": [jax.device_put(x) for x in xs]}
        if n_params is None:
            ns["f"], ns["jf"] = hd.compile(positional), jax.jit(positional)
            ours, peer = "f(*xs)", "jf(*jxs)"
        else:
            ns["f"], ns["jf"] = hd.compile(dict_params), jax.jit(dict_params)
            ours, peer = "f(p, *xs)", "jf(jp, *jxs)"
        np.testing.assert_allclose(np.asarray(eval(ours, ns)), np.asarray(eval(peer, ns)),
                                   rtol=1e-5)
        if blocked:
            ours, peer = f"{ours}._buf.block_until_ready()", f"{peer}.block_until_ready()"
        t = compare({"ours": ours, "peer": peer}, ns, cfg)
        how = "block_until_ready" if blocked else "not blocked"
        rows.append(row("1. compiled per-call", f"{case}, {how}", "hd.compile", t["ours"],
                        "jax.jit", t["peer"]))
    return rows


# -- nested parameter trees (issue 41) ------------------------------------------------

LAYERS, WIDTH, BATCH = 8, 16, 4


def _tanh(x):
    if type(x).__module__.startswith("hlodsl"):
        from hlodsl.stdlib import tanh

        return tanh(x)
    import jax.numpy as jnp

    return jnp.tanh(x)


def mlp_nested(params, x):
    """``{layer_i: {"w", "b"}}``: the parameter tree of real models."""
    for layer in params.values():
        x = _tanh(x @ layer["w"] + layer["b"])
    return x


def mlp_flat(params, x):
    """The same parameters as one flat dict ``{layer_i_w, layer_i_b}``."""
    for i in range(LAYERS):
        x = _tanh(x @ params[f"layer{i}_w"] + params[f"layer{i}_b"])
    return x


def mlp_layers(layers, x):
    """A list of registered dataclasses (``Dense``: w, b)."""
    for layer in layers:
        x = _tanh(x @ layer.w + layer.b)
    return x


def mlp_3_levels(params, x):
    """``{group: {block_j: {"w", "b"}}}``: encoder and decoder of 4 blocks each."""
    for group in ("encoder", "decoder"):  # by name: jax.jit sorts a dict's keys
        for j in range(LAYERS // 2):
            block = params[group][f"block{j}"]
            x = _tanh(x @ block["w"] + block["b"])
    return x


def sgd_nested(params, x):
    """An update that returns the nested tree (its results are rebuilt as a tree)."""
    return {k: {"w": layer["w"] * 0.99, "b": layer["b"] - 0.01 * x[0]}
            for k, layer in params.items()}


@dataclasses.dataclass
class Dense:
    """A layer as a dataclass, registered as a pytree with hlodsl and jax (``_dense``)."""

    w: object
    b: object


_REGISTERED: list = []


def _dense() -> type:
    import jax

    import hlodsl as hd

    if not _REGISTERED:
        hd.register_dataclass(Dense)
        jax.tree_util.register_dataclass(Dense)
        _REGISTERED.append(Dense)
    return Dense


#: (case, function, what its arguments are made of)
NESTED = (
    ("MLP 8 layers, params {layer_i: {w, b}}", mlp_nested, "nested"),
    ("MLP 8 layers, params as one flat dict of 16", mlp_flat, "flat"),
    ("MLP 8 layers, params a list of 8 registered dataclasses", mlp_layers, "dataclasses"),
    ("MLP 2x4 blocks, a 3-level tree {group: {block_j: {w, b}}}", mlp_3_levels, "3 levels"),
    ("SGD update returning {layer_i: {w, b}}", sgd_nested, "nested"),
)


def _nested_params(kind: str, put):
    rng = np.random.default_rng(3)
    layers = [(put((rng.standard_normal((WIDTH, WIDTH)) * 0.3).astype(np.float32)),
               put(rng.standard_normal(WIDTH).astype(np.float32))) for _ in range(LAYERS)]
    if kind == "nested":
        return {f"layer{i}": {"w": w, "b": b} for i, (w, b) in enumerate(layers)}
    if kind == "flat":
        return {f"layer{i}_{n}": v for i, (w, b) in enumerate(layers)
                for n, v in (("w", w), ("b", b))}
    if kind == "dataclasses":
        return [_dense()(w, b) for w, b in layers]
    half = LAYERS // 2
    return {group: {f"block{j}": {"w": w, "b": b}
                    for j, (w, b) in enumerate(layers[k * half:(k + 1) * half])}
            for k, group in enumerate(("encoder", "decoder"))}


def nested(cfg: Settings) -> list[dict]:
    """Issue 41: nested parameter trees per call (1.5-1.9x jax.jit before call plans
    covered them, where a flat dict of the same arrays was 0.81x)."""
    import jax

    import hlodsl as hd

    rows = []
    x = np.random.default_rng(4).standard_normal((BATCH, WIDTH)).astype(np.float32)
    for case, fn, kind in NESTED:
        ns = {"f": hd.compile(fn), "jf": jax.jit(fn), "p": _nested_params(kind, hd.array),
              "jp": _nested_params(kind, jax.device_put), "x": hd.array(x),
              "jx": jax.device_put(x)}
        ours, peer = eval("f(p, x)", ns), eval("jf(jp, jx)", ns)
        for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(peer)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
        blocked = [False, True] if kind in ("nested", "3 levels") and fn is not sgd_nested \
            else [False]
        for block in blocked:
            stmts = ({"ours": "f(p, x)._buf.block_until_ready()",
                      "peer": "jf(jp, jx).block_until_ready()"} if block
                     else {"ours": "f(p, x)", "peer": "jf(jp, jx)"})
            t = compare(stmts, ns, cfg)
            how = "block_until_ready" if block else "not blocked"
            rows.append(row("1. compiled per-call", f"{case}, {how}", "hd.compile", t["ours"],
                            "jax.jit", t["peer"]))
    return rows


# -- 2. eager per-op time --------------------------------------------------------

def eager(cfg: Settings) -> list[dict]:
    import jax
    import jax.numpy as jnp

    import hlodsl as hd

    rng = np.random.default_rng(1)
    a_np = rng.random(1000, dtype=np.float32)
    b_np = rng.random(1000, dtype=np.float32)
    ns = {
        "add": hd.ops.Add(), "a": hd.array(a_np), "b": hd.array(b_np),
        "jnp": jnp, "ja": jax.device_put(a_np), "jb": jax.device_put(b_np),
        "np": np, "na": a_np, "nb": b_np,
    }
    np.testing.assert_array_equal(np.asarray(ns["add"](ns["a"], ns["b"])), a_np + b_np)
    np.testing.assert_array_equal(np.asarray(ns["a"] + ns["b"]), a_np + b_np)
    # Blocked on the result on both sides (issue 42): an eager hlodsl op is recorded and
    # runs when its value is read (hlodsl.transforms.lazy), a jax op is dispatched
    # asynchronously; unread, neither row would say what computing costs.
    t = compare({"op": "add(a, b).block_until_ready()",
                 "operator": "(a + b).block_until_ready()",
                 "jax": "jnp.add(ja, jb).block_until_ready()", "numpy": "np.add(na, nb)"},
                ns, cfg)
    section, case = "2. eager op", "add 1000 f32, block_until_ready"
    return [
        row(section, case, "hd.ops.Add()(a, b)", t["op"], "jnp.add", t["jax"]),
        row(section, case, "a + b (stdlib)", t["operator"], "jnp.add", t["jax"]),
        row(section, case, "hd.ops.Add()(a, b)", t["op"], "np.add", t["numpy"]),
        row(section, case, "a + b (stdlib)", t["operator"], "np.add", t["numpy"]),
        *_eager_loops(cfg, a_np, b_np),
    ]


def loop_arrays(x, b, c):
    """1000 elementwise ops on array operands (the same code runs on jax arrays)."""
    for _ in range(500):
        x = x * b + c
    return x


def loop_scalars(x):
    """1000 elementwise ops, each with a Python float operand."""
    for _ in range(500):
        x = x * 0.999 + 0.001
    return x


def _eager_loops(cfg: Settings, a_np, b_np) -> list[dict]:
    """Issue 29: a loop of 1000 eager operator calls (1.27x jax eager with array
    operands, 1.20x with Python scalars, before the operators' fast path)."""
    import jax

    import hlodsl as hd

    c_np = np.full(1000, 0.5, np.float32)
    ns = {"loop_arrays": loop_arrays, "loop_scalars": loop_scalars,
          "a": hd.array(a_np), "b": hd.array(b_np * 0.001 + 0.9995), "c": hd.array(c_np),
          "ja": jax.device_put(a_np), "jb": jax.device_put(b_np * 0.001 + 0.9995),
          "jc": jax.device_put(c_np)}
    np.testing.assert_allclose(np.asarray(loop_arrays(ns["a"], ns["b"], ns["c"])),
                               np.asarray(loop_arrays(ns["ja"], ns["jb"], ns["jc"])), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(loop_scalars(ns["a"])),
                               np.asarray(loop_scalars(ns["ja"])), rtol=1e-5)
    t = compare({"arrays": "loop_arrays(a, b, c).block_until_ready()",
                 "jax_arrays": "loop_arrays(ja, jb, jc).block_until_ready()",
                 "scalars": "loop_scalars(a).block_until_ready()",
                 "jax_scalars": "loop_scalars(ja).block_until_ready()"}, ns, cfg)
    section = "2. eager op"
    return [
        row(section, "1000 ops in a loop, x = x * b + c, 1000 f32, blocked",
            "operators on hd arrays",
            t["arrays"], "the same on jax arrays", t["jax_arrays"], unit="ms"),
        row(section, "1000 ops in a loop, x = x * 0.999 + 0.001, 1000 f32, blocked",
            "operators on hd arrays", t["scalars"], "the same on jax arrays",
            t["jax_scalars"], unit="ms"),
    ]


# -- 3. staging + compile time ---------------------------------------------------

def compile_time(cfg: Settings) -> list[dict]:
    import jax

    import hlodsl as hd

    rows = []
    for key, host_args in _inputs().items():
        label, fn, fn_jnp = _CASES[key]
        args = tuple(hd.array(a) for a in host_args)
        jargs = tuple(jax.device_put(a) for a in host_args)

        def ours():
            f = hd.compile(fn)  # fresh: stages, prints, compiles on its first call
            f(*args)._buf.block_until_ready()

        def peer():
            # A fresh function object each time, so no jax tracing/lowering cache hits.
            jax.jit(lambda *a: fn_jnp(*a)).lower(*jargs).compile()

        t = time_once({"ours": ours, "peer": peer}, cfg)
        rows.append(row("3. staging + compile", label, "hd.compile(f)(*args), first call",
                        t["ours"], "jax.jit(f).lower().compile()", t["peer"], unit="ms"))
    return rows


# -- 4. plum dispatch cost -------------------------------------------------------

class PlainArray:
    """A plain Python class hierarchy standing in for hd.Matrix / hd.Vector."""


class PlainMatrix(PlainArray):
    pass


class PlainVector(PlainArray):
    pass


def dispatch(cfg: Settings) -> list[dict]:
    from plum import Dispatcher

    import hlodsl as hd

    d = Dispatcher()

    @d
    def kind(x: hd.Matrix):
        return 2

    @d
    def kind(x: hd.Vector):  # noqa: F811
        return 1

    d_plain = Dispatcher()

    @d_plain
    def kind_plain(x: PlainMatrix):
        return 2

    @d_plain
    def kind_plain(x: PlainVector):  # noqa: F811
        return 1

    def kind_fn(x):
        return 2

    A = hd.array(np.ones((3, 4), np.float32))
    P = PlainMatrix()
    assert kind(A) == kind_plain(P) == kind_fn(P) == 2
    in_cache = None
    try:  # plum's resolution cache (internal): a hit means ~1 µs, a miss ~40 µs
        in_cache = (type(A),) in kind._cache
    except AttributeError:
        pass
    note = "" if in_cache is None else f"plum cache hit for Array: {in_cache}"
    ns = {"kind": kind, "kind_plain": kind_plain, "kind_fn": kind_fn, "A": A, "P": P}
    t = compare({"ours": "kind(A)", "plain": "kind_plain(P)", "fn": "kind_fn(P)"}, ns, cfg)
    section, case = "4. plum dispatch", "f(x), methods on Matrix/Vector"
    return [
        row(section, case, "plum on hd.Array", t["ours"], "plum on plain class", t["plain"],
            note=note),
        row(section, case, "plum on hd.Array", t["ours"], "plain Python function", t["fn"]),
    ]


ALL = (percall, eager, compile_time, dispatch)


def main(argv=None) -> None:
    """``python -m benchmarks.foundation``: section 1 alone (the compiled call path)."""
    from .report import main_of

    main_of("python -m benchmarks.foundation", "Section 1: compiled per-call time.",
            (percall,), argv)


if __name__ == "__main__":
    main()
