"""User classes as structures (hd.register_pytree_node, hd.register_dataclass), checked
against jax.tree_util with the same registrations, through every transformation that takes
structures; and the call plans of nested arguments (hlodsl.compilation.walkers) against
the general path."""

import dataclasses
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
from hlodsl.arrays.pytrees import NODES
from hlodsl.arrays.tree import flatten, leaf_paths


@dataclasses.dataclass
class Linear:
    w: object
    b: object
    act: str = dataclasses.field(default="tanh", metadata={"static": True})


class Pair:
    """A plain class, registered with flatten/unflatten functions."""

    def __init__(self, a, b, tag="pair"):
        self.a, self.b, self.tag = a, b, tag


def _pair_flatten(p):
    return (p.a, p.b), p.tag


def _pair_unflatten(tag, children):
    return Pair(*children, tag)


for _register in (hd.register_dataclass, jax.tree_util.register_dataclass):
    _register(Linear)
hd.register_pytree_node(Pair, _pair_flatten, _pair_unflatten)
jax.tree_util.register_pytree_node(Pair, _pair_flatten, _pair_unflatten)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _tree(put):
    """A nested tree of registered nodes inside dicts (sorted keys: jax sorts them) and
    lists, its arrays made by ``put`` (hd.array or jnp.asarray)."""
    return {"a": [Linear(put(_rand(3, 3)), put(_rand(3, seed=1)), "relu"),
                  Pair(put(_rand(3, seed=2)), Linear(put(_rand(2, seed=3)),
                                                     put(_rand(2, seed=4))))],
            "b": (put(_rand(3, seed=5)), {"c": Pair(put(_rand(3, seed=6)),
                                                    put(_rand(3, seed=7)), "q")})}


def f_tree(t):
    """Written with operators only, so the same code runs on hd and jax arrays."""
    lin, pair = t["a"]
    y = lin.w @ lin.b + t["b"][0] * pair.a
    return Pair(y, Linear(pair.b.w * 2, pair.b.b + t["b"][1]["c"].b[:2], lin.act), "out")


def _same(hd_tree, jax_tree):
    """Same structure (as jax sees it) and the same values leaf by leaf."""
    h_leaves, h_def = jax.tree_util.tree_flatten(hd_tree)
    j_leaves, j_def = jax.tree_util.tree_flatten(jax_tree)
    assert h_def == j_def
    for h, j in zip(h_leaves, j_leaves):
        assert isinstance(h, hd.Array)
        np.testing.assert_allclose(np.asarray(h), np.asarray(j), rtol=2e-5, atol=2e-6)


def test_leaves_paths_and_tree_map_are_jax_tree_utils():
    tree = _tree(hd.array)
    leaves = hd.tree_leaves(tree)
    assert [id(x) for x in leaves] == [id(x) for x in jax.tree_util.tree_leaves(tree)]
    keys = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]
    assert leaf_paths(flatten(tree)[1], "") == keys
    doubled = hd.tree_map(lambda a: a * 2, tree)
    _same(doubled, jax.tree_util.tree_map(lambda a: jnp.asarray(a) * 2, tree))
    assert doubled["a"][0].act == "relu" and doubled["b"][1]["c"].tag == "q"


def test_compiled_arguments_and_results_are_jax_jits():
    f = hd.compile(f_tree)
    out = f(_tree(hd.array))
    _same(out, jax.jit(f_tree)(_tree(jnp.asarray)))
    assert type(out) is Pair and out.tag == "out" and out.b.act == "relu"
    f(_tree(hd.array))  # the call plan (a walker) now
    assert f.compiles == 1
    other = _tree(hd.array)
    other["a"][0].act = "gelu"  # aux data (a meta field) is static: a new program
    assert f(other).b.act == "gelu" and f.compiles == 2


def test_numbers_in_data_fields_trace_and_meta_fields_are_static():
    f = hd.compile(lambda lin: lin.w * lin.b)
    x = hd.array(np.float32([1, 2]))
    assert np.asarray(f(Linear(x, 2.0))).tolist() == [2, 4]
    assert np.asarray(f(Linear(x, 3.0))).tolist() == [3, 6] and f.compiles == 1
    g = hd.compile(lambda lin: lin.w * lin.b, static_argnums=())  # lift_arguments' path
    assert np.asarray(g(Linear(x, 3.0))).tolist() == [3, 6]


def loss(lin, x):
    return ((lin.w @ x + lin.b) ** 2).sum()


def test_derivatives_are_jaxs():
    lin, jlin = _tree(hd.array)["a"][0], _tree(jnp.asarray)["a"][0]
    x = _rand(3, seed=9)
    # Compiled: one module each (eagerly, each op would compile its own).
    value, grads = hd.compile(hd.value_and_grad(loss))(lin, hd.array(x))
    jvalue, jgrads = jax.value_and_grad(loss)(jlin, jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(value), jvalue, rtol=1e-5)
    _same(grads, jgrads)
    tangent = Linear(hd.array(np.ones((3, 3), np.float32)), hd.array(np.ones(3, np.float32)),
                     "relu")
    jtangent = Linear(jnp.ones((3, 3), jnp.float32), jnp.ones(3, jnp.float32), "relu")
    t = hd.compile(lambda p, t: hd.jvp(lambda lin: lin.w @ lin.b, (p,), (t,))[1])(lin, tangent)
    np.testing.assert_allclose(np.asarray(t), jax.jvp(lambda lin: lin.w @ lin.b, (jlin,),
                                                      (jtangent,))[1], rtol=1e-5)

    def pair(lin):
        return Pair(lin.w.sum(), lin.b * 2)

    ct = Pair(hd.array(np.float32(1)), hd.array(np.ones(3, np.float32)))
    (got,) = hd.compile(lambda p, ct: hd.vjp(pair, p)[1](ct))(lin, ct)
    _same(got, jax.vjp(pair, jlin)[1](Pair(jnp.float32(1), jnp.ones(3, jnp.float32)))[0])


def test_vmap_axes_over_registered_nodes_are_jax_vmaps():
    lin = Linear(hd.array(_rand(4, 3, 3)), hd.array(_rand(3, seed=1)))
    jlin = Linear(jnp.asarray(_rand(4, 3, 3)), jnp.asarray(_rand(3, seed=1)))

    def f(lin, x):
        return Pair(lin.w @ x + lin.b, lin.b.sum())  # b is the same for every example

    axes = {"in_axes": (Linear(0, None), 0), "out_axes": Pair(1, None)}
    out = hd.vmap(f, **axes)(lin, hd.array(_rand(4, 3, seed=2)))
    want = jax.vmap(f, **axes)(jlin, jnp.asarray(_rand(4, 3, seed=2)))
    _same(out, want)
    assert out.a.shape == (3, 4) and out.b.shape == ()
    with pytest.raises(ValueError, match="aux data"):  # a spec must match the node
        hd.vmap(f, in_axes=(Linear(0, None, "other"), 0))(lin, hd.array(_rand(4, 3)))


def test_loop_carries_are_jax_laxs():
    init = Pair(hd.array(np.int32(0)), Linear(hd.array(np.float32(1)), hd.array(_rand(3))))
    jinit = jax.tree_util.tree_map(jnp.asarray, init)

    def body(c):
        return Pair(c.a + 1, Linear(c.b.w * 2, c.b.b + c.b.w, c.b.act), c.tag)

    _same(hd.while_loop(lambda c: c.a < 5, body, init),
          jax.lax.while_loop(lambda c: c.a < 5, body, jinit))
    _same(hd.fori_loop(0, 3, lambda i, c: body(c), init),
          jax.lax.fori_loop(0, 3, lambda i, c: body(c), jinit))
    xs = _rand(4, 3, seed=3)

    def step(c, x):
        return body(c), c.b.b * x

    _same(hd.scan(step, init, hd.array(xs)), jax.lax.scan(step, jinit, jnp.asarray(xs)))


def test_checkpoints_store_arrays_by_path_and_take_aux_data_from_like(tmp_path):
    tree = _tree(hd.array)
    path = tmp_path / "ckpt.npz"
    hd.save(path, tree)
    with np.load(path) as data:
        assert "tree['a'][0].w" in data.files and "tree['b'][1]['c'][<flat index 1>]" in data.files
    like = hd.tree_map(lambda a: a * 0, tree)
    like["a"][0].act = "relu6"  # aux data is not stored: like's structure is the result's
    back = hd.load(path, like=like)
    assert back["a"][0].act == "relu6"
    for got, want in zip(hd.tree_leaves(back), hd.tree_leaves(tree)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_export_keeps_registered_nodes_and_their_aux_data():
    tree = _tree(hd.array)
    exported = hd.export(f_tree, tree)
    again = hd.deserialize(exported.serialize())
    out = again(tree)
    _same(out, jax.jit(f_tree)(_tree(jnp.asarray)))
    assert out.b.act == "relu" and "Pair(" in repr(exported)
    node = NODES.pop(Pair)  # a process that has not registered the class
    try:
        with pytest.raises(hd.ExportError, match=r"test_pytrees\.Pair.*register it"):
            hd.deserialize(exported.serialize())
    finally:
        NODES[Pair] = node
    with pytest.raises(hd.ExportError, match="aux data holds a frozenset"):
        hd.export(lambda p: p.a, Pair(hd.array(1.0), hd.array(2.0), frozenset({1})))


def test_bad_registrations_and_unregistered_classes_say_what_to_do():
    @dataclasses.dataclass
    class Plain:
        w: object

    f = hd.compile(lambda d: d.w * 2)
    with pytest.raises(TypeError, match=r"dataclass that is not registered.*"
                                        r"hd\.register_dataclass\(Plain\)"):
        f(Plain(hd.array([1.0])))
    with pytest.raises(ValueError, match="registered already"):
        hd.register_dataclass(Linear)
    with pytest.raises(ValueError, match="must name every field.*missing \\['b'\\]"):
        hd.register_dataclass(dataclasses.make_dataclass("D", ["a", "b"]), ["a"], [])
    with pytest.raises(TypeError, match="give both data_fields and meta_fields"):
        hd.register_dataclass(dataclasses.make_dataclass("E", ["a"]), ["a"])
    with pytest.raises(TypeError, match="not a dataclass"):
        hd.register_dataclass(type("F", (), {}))
    with pytest.raises(ValueError, match="structure or an array of hlodsl"):
        hd.register_pytree_node(dict, _pair_flatten, _pair_unflatten)

    class Bag:
        def __init__(self, x):
            self.x = x

    hd.register_pytree_node(Bag, lambda b: ((b.x,), [1]), lambda aux, ch: Bag(*ch))
    with pytest.raises(TypeError, match="aux data.*must be hashable.*tuple instead of a list"):
        hd.tree_leaves(Bag(hd.array(1.0)))


# -- call plans of nested arguments: walkers against the general path -------------------

ARRAYS = [hd.array(_rand(2, seed=s)) for s in range(2)] + [hd.array(_rand(3, seed=7))]


def _structures():
    leaf = st.one_of(st.sampled_from(range(len(ARRAYS))).map(lambda i: ("array", i)),
                     st.sampled_from([0.5, -0.0, 2.0]).map(lambda v: ("float", v)),
                     st.sampled_from([3, "s", None, True]).map(lambda v: ("static", v)))
    return st.recursive(leaf, lambda inner: st.one_of(
        st.dictionaries(st.sampled_from("abc"), inner, max_size=3).map(lambda d: ("dict", d)),
        st.lists(inner, max_size=3).map(lambda v: ("list", v)),
        st.lists(inner, max_size=3).map(lambda v: ("tuple", v)),
        st.tuples(inner, inner).map(lambda v: ("pair", v))), max_leaves=8)


def _build(spec, scale=1.0):
    """The value a drawn structure describes, and the one ``tree_map(2 *)`` makes of it."""
    kind, v = spec
    if kind == "array":
        return ARRAYS[v], np.asarray(ARRAYS[v]) * 2
    if kind == "float":
        return v * scale, np.float32(v * scale * 2)
    if kind == "static":
        return v, v
    if kind == "dict":
        built = {k: _build(s, scale) for k, s in v.items()}
        return {k: b[0] for k, b in built.items()}, {k: b[1] for k, b in built.items()}
    if kind == "pair":
        (a, wa), (b, wb) = _build(v[0], scale), _build(v[1], scale)
        return Pair(a, b), Pair(wa, wb)
    built = [_build(s, scale) for s in v]
    make = list if kind == "list" else tuple
    return make(b[0] for b in built), make(b[1] for b in built)


def _check(got, want):
    if isinstance(want, Pair):
        assert type(got) is Pair and got.tag == want.tag
        _check(got.a, want.a), _check(got.b, want.b)
    elif isinstance(want, (dict, list, tuple)):
        assert type(got) is type(want) and len(got) == len(want)
        if isinstance(want, dict):
            assert list(got) == list(want)
        for g, w in zip(got.values() if isinstance(want, dict) else got,
                        want.values() if isinstance(want, dict) else want):
            _check(g, w)
    elif isinstance(want, (np.ndarray, np.floating)):
        assert isinstance(got, hd.Array)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    else:
        assert got == want and type(got) is type(want)


def _functions_run_by(call) -> set:
    """``(module, function)`` of every hlodsl function that runs during ``call()``."""
    seen: set = set()

    def profile(frame, event, arg):
        module = frame.f_globals.get("__name__", "?")
        if event == "call" and module.startswith("hlodsl"):
            seen.add((module, frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen


@settings(max_examples=int(os.environ.get("HLODSL_PYTREE_EXAMPLES", "12")), deadline=None)
@given(first=_structures(), second=_structures())
def test_nested_arguments_take_a_walker_and_give_the_general_paths_results(first, second):
    doubling = hd.compile(lambda x, t: (x, hd.tree_map(lambda a: a * 2, t)))
    x = ARRAYS[0]
    for spec in (first, second, first, second):  # alternating: one plan, two structures
        for scale in (1.0, 3.0):  # numbers trace: no new signature
            value, want = _build(("dict", {"k": spec}), scale)
            _check(doubling(x, value)[1], want)
    value, want = _build(("dict", {"k": first}), 5.0)
    out = []
    ran = _functions_run_by(lambda: out.append(doubling(x, value)))
    _check(out[0][1], want)
    assert ("hlodsl.compilation.compiler", "_general") not in ran, ran  # a walker's plan
    assert not {f for m, f in ran if m == "hlodsl.arrays.tree"} - {"static_key"}, ran


def test_a_walker_keys_on_dict_keys_their_order_and_container_lengths():
    f = hd.compile(lambda t: [v * (i + 1) for i, v in enumerate(hd.tree_leaves(t))])
    a, b = ARRAYS[0], ARRAYS[1]
    cases = [({"p": {"x": a, "y": b}}, [a, b]), ({"p": {"y": b, "x": a}}, [b, a]),
             ({"p": {"x": b, "y": a}}, [b, a]), ({"p": [a, b]}, [a, b]),
             ({"p": [a, b, a]}, [a, b, a]), ({"p": (a, b)}, [a, b])]
    for _ in range(2):
        for value, order in cases:
            got = f(value)
            for i, (g, w) in enumerate(zip(got, order)):
                np.testing.assert_allclose(np.asarray(g), np.asarray(w) * (i + 1))
    assert f.compiles == 5  # {"x","y"} twice (same keys, same order), then 4 more
    g = hd.compile(lambda t: ([len(v) for v in t.values()], t["p"][0] * 1))
    for _ in range(2):  # the same arrays and keys, lists of other lengths
        assert g({"p": [a, b], "q": [a]})[0] == [2, 1]
        assert g({"p": [a], "q": [a, b]})[0] == [1, 2]
