"""hlodsl.compile: one module per signature, cached; equal to eager execution."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attrs
import hlodsl as hd
from hlodsl import ops, runtime
from hlodsl.ir import staging
from hlodsl.stdlib import exp, sum

pytestmark = pytest.mark.compat  # jax/jaxlib-release sensitive paths (.ci/compat)


def dense(W, x, b):
    return W @ x + b


def softmax(xs):
    return exp(xs) / sum(exp(xs))


def _counts():
    return runtime.stats["compiles"], staging.stats["stagings"]


def _rand(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def test_a_cache_hit_neither_stages_nor_compiles():
    f = hd.compile(dense)
    W, x, b = hd.array(_rand(10, 10)), hd.array(_rand(10)), hd.array(_rand(10))
    before = _counts()
    f(W, x, b)
    assert _counts() == (before[0] + 1, before[1] + 1)
    for seed in range(3):  # new values, same signature
        f(hd.array(_rand(10, 10, seed=seed)), x, b)
    assert _counts() == (before[0] + 1, before[1] + 1)
    assert f.cache_size() == 1


def test_a_new_signature_stages_and_compiles_again():
    f = hd.compile(dense)
    f(hd.array(_rand(4, 4)), hd.array(_rand(4)), hd.array(_rand(4)))
    before = _counts()
    f(hd.array(_rand(5, 5)), hd.array(_rand(5)), hd.array(_rand(5)))  # new shape
    f(hd.array(_rand(5, 5, dtype=np.float64)), hd.array(_rand(5, dtype=np.float64)),
      hd.array(_rand(5, dtype=np.float64)))  # new element type
    assert _counts() == (before[0] + 2, before[1] + 2)
    assert f.cache_size() == 3


def test_static_arguments_are_part_of_the_signature():
    calls = []

    def scale(x, k):
        calls.append(k)
        return x * k

    f = hd.compile(scale)
    x = hd.array(np.float32([1, 2]))
    np.testing.assert_array_equal(np.asarray(f(x, 2)), [2, 4])
    np.testing.assert_array_equal(np.asarray(f(x, 3)), [3, 6])
    f(x, 2)
    assert calls == [2, 3]


def test_unhashable_static_arguments_are_a_clear_error():
    f = hd.compile(lambda x, opts: x)
    with pytest.raises(TypeError, match="must be hashable"):
        f(hd.array(np.float32(1)), {1, 2})


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(0, 10**6))
def test_compiled_dense_equals_eager_and_numpy(m, n, seed):
    W, x, b = _rand(m, n, seed=seed), _rand(n, seed=seed + 1), _rand(m, seed=seed + 2)
    args = [hd.array(v) for v in (W, x, b)]
    staged = np.asarray(hd.compile(dense)(*args))
    eager = np.asarray(dense(*args))
    np.testing.assert_allclose(staged, eager, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(staged, W @ x + b, rtol=1e-5, atol=1e-5)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 50), st.integers(0, 10**6))
def test_compiled_softmax_equals_eager_and_numpy(n, seed):
    x = _rand(n, seed=seed)
    staged = np.asarray(hd.compile(softmax)(hd.array(x)))
    eager = np.asarray(softmax(hd.array(x)))
    np.testing.assert_allclose(staged, eager, rtol=1e-6)
    np.testing.assert_allclose(staged, np.exp(x) / np.exp(x).sum(), rtol=1e-5)


def test_dense_stages_into_one_module_with_one_dot_and_one_add():
    W, x, b = hd.array(_rand(10, 10)), hd.array(_rand(10)), hd.array(_rand(10))
    text = str(hd.code_hlo(dense, W, x, b))
    assert text.count("HloModule") == 1 and text.count("ENTRY") == 1
    assert text.count(" dot(") == 1 and text.count(" add(") == 1
    assert text.count(" parameter(") == 3 and text.count("\n  ") == 5


def test_nested_python_calls_flatten_into_one_module():
    def layer(W, x, b):
        return dense(W, x, b)

    inner = hd.compile(softmax)  # a compiled function called while staging is inlined

    def model(W, x, b):
        return inner(layer(W, layer(W, x, b), b))

    W, x, b = hd.array(_rand(4, 4)), hd.array(_rand(4)), hd.array(_rand(4))
    text = str(hd.code_hlo(model, W, x, b))
    assert text.count("ENTRY") == 1 and text.count(" dot(") == 2
    expected = np.asarray(softmax(dense(W, dense(W, x, b), b)))
    np.testing.assert_allclose(np.asarray(hd.compile(model)(W, x, b)), expected, rtol=1e-6)


def test_identical_subexpressions_are_shared():
    x = hd.array(_rand(8))
    text = str(hd.code_hlo(softmax, x))
    assert text.count(" exponential(") == 1  # exp(xs) written twice, staged once


def test_identical_sub_computations_are_emitted_once():
    def f(x, y):
        a = ops.Map(lambda u: u * u)(x)
        b = ops.Map(lambda v: v * v)(y)  # another lambda, the same computation
        return sum(a) + sum(b)

    x = hd.array(_rand(5))
    text = str(hd.code_hlo(f, x, x))
    blocks = [ln for ln in text.splitlines() if ln.endswith("{") and "ENTRY" not in ln]
    assert len(blocks) == 2  # one map body, one add
    np.testing.assert_allclose(np.asarray(hd.compile(f)(x, x)), 2 * (_rand(5) ** 2).sum(),
                               rtol=1e-5)


@attrs.frozen
class Params:
    W: object
    b: object


def test_structures_of_arrays_map_in_and_out():
    def f(p, xs, cfg):
        y = p.W @ xs[0] + p.b
        return {"y": y, "pair": (y, xs[1] * cfg["scale"]), "label": cfg["label"]}

    f_c = hd.compile(f)
    p = Params(hd.array(_rand(3, 3)), hd.array(_rand(3)))
    xs = [hd.array(_rand(3)), hd.array(_rand(2))]
    cfg = {"scale": 2.0, "label": "run"}
    out = f_c(p, xs, cfg)
    ref = f(p, xs, cfg)
    assert out["label"] == "run" and isinstance(out["pair"], tuple)
    np.testing.assert_allclose(np.asarray(out["y"]), np.asarray(ref["y"]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out["pair"][1]), np.asarray(xs[1]) * 2, rtol=1e-6)
    before = _counts()
    f_c(Params(hd.array(_rand(3, 3, seed=4)), p.b), xs, cfg)
    assert _counts() == before


def test_numpy_arguments_are_dynamic_arrays():
    f = hd.compile(lambda x: x + 1)
    out = f(np.float32([1, 2]))
    assert type(out) is hd.Array[hd.float32, (2,)]
    np.testing.assert_array_equal(np.asarray(out), [2, 3])


def test_captured_concrete_arrays_become_constants():
    C = hd.array(np.float32([1, 2, 3]))
    f = lambda x: x * C  # noqa: E731
    assert " constant({1.0, 2.0, 3.0})" in str(hd.code_hlo(f, C))
    np.testing.assert_array_equal(np.asarray(hd.compile(f)(C)), [1, 4, 9])


def test_several_results_come_back_as_a_tuple():
    f = hd.compile(lambda x: (x + 1, x * 2, -x))
    a, b, c = f(hd.array(np.int32([1, 2])))
    assert [np.asarray(v).tolist() for v in (a, b, c)] == [[2, 3], [2, 4], [-1, -2]]


def test_returning_an_argument_unchanged_works():
    x = hd.array(np.float32([1, 2]))
    np.testing.assert_array_equal(np.asarray(hd.compile(lambda x: x)(x)), [1, 2])


def test_compile_as_decorator_and_kwargs():
    @hd.compile
    def f(x, *, y):
        return x - y

    out = f(hd.array(np.float32(5)), y=hd.array(np.float32(2)))
    assert float(out) == 3.0


def test_eager_calls_with_fresh_lambdas_do_not_grow_the_caches_without_bound(monkeypatch):
    from hlodsl.ir import op as op_module, staging as staging_module

    monkeypatch.setattr(hd.config, "eager_cache_size", 3)
    monkeypatch.setattr(hd.config, "subcomputation_cache_size", 3)
    x = hd.array(np.float32([1, 2]))
    for k in range(6):
        np.testing.assert_array_equal(np.asarray(ops.Map(lambda a, k=k: a * k)(x)), [k, 2 * k])
    assert len(op_module._EAGER) <= 3 and len(staging_module._SUBCOMPUTATIONS) <= 3


# -- XLA options ----------------------------------------------------------------------------

@pytest.mark.skipif(runtime.platform() != "cpu", reason="the options are XLA:CPU's")
def test_cpu_compiles_leave_convolutions_to_xla_and_dots_to_ynnpack():
    from hlodsl.stdlib import nn

    assert runtime.compiler_options() == {
        "xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"}
    x = hd.array(np.ones((1, 16, 16, 8), np.float32))
    w = hd.array(np.ones((3, 3, 8, 8), np.float32))
    conv = hd.code_hlo(lambda x, w: nn.max_pool(nn.conv(x, w, padding=1, data_format="NHWC"),
                                                2, data_format="NHWC"), x, w, optimize=True)
    assert " convolution(" in conv and "ynn_fusion" not in conv  # (a temp dir in source paths may hold "ynn")
    m = hd.array(np.ones((64, 64), np.float32))
    assert "ynn_fusion" in hd.code_hlo(lambda a, b: a @ b, m, m, optimize=True)


def test_an_option_named_in_xla_flags_is_left_to_xla_flags(monkeypatch):
    monkeypatch.setitem(runtime.COMPILER_OPTIONS, runtime.platform(),
                        {"xla_cpu_experimental_ynn_fusion_type": "", "xla_other": "1"})
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_experimental_ynn_fusion_type=")
    assert runtime.compiler_options() == {"xla_other": "1"}


class _Knob:
    """A plain object: compared and hashed by identity, mutable."""

    def __init__(self, n):
        self.n = n


def test_a_static_argument_compared_by_identity_warns_once_naming_it():
    f = hd.compile(lambda a, knob: a * knob.n)
    v, knob = hd.array(np.float32([1, 2])), _Knob(1)
    with pytest.warns(hd.StaticArgumentWarning) as caught:
        f(v, knob)
    message = str(caught[0].message)
    assert "'knob'" in message and "<lambda>" in message
    assert "will not recompile" in message and "frozen" in message
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", hd.StaticArgumentWarning)
        f(hd.array(np.float32([1, 2, 3])), knob)  # a new signature: warned already


def test_a_static_inside_a_structure_is_named_by_its_path():
    f = hd.compile(lambda a, opts: a * opts["knob"].n)
    with pytest.warns(hd.StaticArgumentWarning, match=r"opts\['knob'\]"):
        f(hd.array(np.float32([1, 2])), {"knob": _Knob(2)})


@pytest.mark.parametrize("make", ["frozen dataclass", "namedtuple", "tuple", "attrs"])
def test_value_statics_are_keyed_by_value_and_do_not_warn(make):
    import collections
    import dataclasses
    import warnings

    @dataclasses.dataclass(frozen=True)
    class Frozen:
        n: int

    Named = collections.namedtuple("Named", "n")

    @attrs.define
    class Mutable:
        n: int

    build = {"frozen dataclass": Frozen, "namedtuple": Named, "tuple": lambda n: (n,),
             "attrs": Mutable}[make]
    read = (lambda k: k[0]) if make == "tuple" else (lambda k: k.n)
    f = hd.compile(lambda a, k: a * read(k))
    v = hd.array(np.float32([1, 2]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", hd.StaticArgumentWarning)
        k = build(1)
        np.testing.assert_array_equal(np.asarray(f(v, k)), [1, 2])
        if make == "attrs":
            k.n = 5  # an attrs instance is flattened field by field at each call
        else:
            k = build(5)
        np.testing.assert_array_equal(np.asarray(f(v, k)), [5, 10])
