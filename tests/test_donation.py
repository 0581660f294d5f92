"""hd.compile(f, donate_argnums=..., donate_argnames=...): XLA input/output aliasing.

The results are those of the same call without donation (and of numpy); XLA's own
memory statistics show the aliased bytes and a lower peak; a donated array read
afterwards raises an error naming the call that consumed it.
"""

import warnings

import numpy as np
import pytest

import hlodsl as hd

pytestmark = pytest.mark.compat  # input_output_alias through jaxlib's StableHLO and PJRT


def sgd(params, grads, lr):
    return {k: params[k] - lr * grads[k] for k in params}


def _host():
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((64, 32)).astype(np.float32),
              "b": rng.standard_normal(32).astype(np.float32)}
    grads = {k: rng.standard_normal(v.shape).astype(np.float32) for k, v in params.items()}
    return params, grads


def _arrays(tree):
    return {k: hd.array(v) for k, v in tree.items()}


@pytest.fixture(scope="module")
def steps():
    """The SGD step compiled with and without donation (compiled once for the module)."""
    return hd.compile(sgd, donate_argnums=0), hd.compile(sgd)


def test_results_equal_the_call_without_donation_and_numpy(steps):
    donating, plain = steps
    params, grads = _host()
    g = _arrays(grads)
    expected = plain(_arrays(params), g, 0.1)
    p = donating(_arrays(params), g, 0.1)
    for k in params:  # the same program but for the aliasing: the same bits
        np.testing.assert_array_equal(np.asarray(p[k]), np.asarray(expected[k]))
    want = params
    for _ in range(3):  # then the plan's path, donating each time
        want = {k: want[k] - np.float32(0.1) * grads[k] for k in want}
        for k in params:
            np.testing.assert_allclose(np.asarray(p[k]), want[k], rtol=1e-5, atol=1e-6)
        p = donating(p, g, 0.1)
    assert donating.compiles == 1


def test_memory_stats_show_the_aliased_bytes_and_a_lower_peak(steps):
    donating, plain = steps
    params, grads = _host()
    p, g = _arrays(params), _arrays(grads)
    with_donation, without = donating.memory_stats(p, g, 0.1), plain.memory_stats(p, g, 0.1)
    param_bytes = sum(v.nbytes for v in params.values())
    assert with_donation["alias_size_in_bytes"] == param_bytes
    assert without["alias_size_in_bytes"] == 0
    assert with_donation["peak_memory_in_bytes"] <= without["peak_memory_in_bytes"] - param_bytes
    assert "input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias) }" in \
        hd.code_hlo(donating, p, g, 0.1)


def test_reading_a_donated_array_raises_naming_the_call(steps):
    donating, _ = steps
    params, grads = _host()
    p, g = _arrays(params), _arrays(grads)
    out = donating(p, g, 0.1)
    consumed = r"this array was donated to the compiled function 'sgd'"
    with pytest.raises(hd.DonatedArrayError, match=consumed):
        np.asarray(p["w"])
    with pytest.raises(hd.DonatedArrayError, match=consumed):
        p["b"].tolist()
    with pytest.raises(hd.DonatedArrayError, match=consumed):
        p["b"].block_until_ready()
    with pytest.raises(hd.DonatedArrayError, match=r"sgd called on an array f32\[64,32\]: "
                                                    + consumed):
        donating(p, g, 0.1)  # the old parameters again
    with pytest.raises(hd.DonatedArrayError, match=consumed):
        p["b"] + 1.0  # an eager op
    with pytest.raises(RuntimeError):  # as jax's deleted arrays
        np.asarray(p["b"])
    assert "<donated to sgd>" in repr(p["w"])
    np.testing.assert_allclose(np.asarray(g["w"]), grads["w"])  # not donated: readable
    np.testing.assert_allclose(np.asarray(out["b"]), params["b"] - 0.1 * grads["b"], rtol=1e-6)


def test_donated_numpy_arguments_leave_the_numpy_array_alone():
    f = hd.compile(lambda x: x * 2, donate_argnums=0)
    x = np.arange(6, dtype=np.float32)
    for _ in range(2):
        assert np.asarray(f(x)).tolist() == (np.arange(6) * 2).tolist()
    assert x.tolist() == list(range(6))


def test_donate_argnames_and_keyword_calls():
    f = hd.compile(lambda state, x: {"sum": state["sum"] + x}, donate_argnames="state")
    state = {"sum": hd.array(np.zeros(3, np.float32))}
    x = hd.array(np.float32([1, 2, 3]))
    for i in range(1, 4):
        old = state
        state = f(state=state, x=x) if i % 2 else f(state, x)
        assert np.asarray(state["sum"]).tolist() == [i, 2 * i, 3 * i]
        with pytest.raises(hd.DonatedArrayError):
            np.asarray(old["sum"])
    assert f.compiles == 2  # by keyword, and positionally


def test_an_argument_with_no_result_of_its_type_is_not_donated_and_warns():
    f = hd.compile(lambda x, y: (x * y).sum(), donate_argnums=(0, 1))
    x, s = hd.array(np.ones(4, np.float32)), hd.array(np.float32(2))
    with pytest.warns(hd.DonationWarning, match=r"<lambda>: the donated argument 'x' cannot be "
                                                 r"donated: no result") as caught:
        assert float(f(x, s)) == 8
    assert caught[0].filename == __file__  # the user's call, not hlodsl's
    assert np.asarray(x).tolist() == [1, 1, 1, 1]
    assert float(s) == 2  # rank 0: never donated (traced Python numbers share such buffers)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(x, s)  # warned once, when the signature compiled


def test_a_donated_array_passed_twice_is_a_clear_error():
    f = hd.compile(lambda a, b: a + b, donate_argnums=0)
    x = hd.array(np.ones(5, np.float32))
    with pytest.raises(ValueError, match=r"<lambda>: the donated argument 'a' is also passed "
                                         r"as 'b'"):
        f(x, x)
    assert np.asarray(x).tolist() == [1] * 5  # nothing ran
    y = hd.array(np.ones(5, np.float32))
    assert np.asarray(f(x, y)).tolist() == [2] * 5


@pytest.mark.parametrize("options, error, message", [
    ({"donate_argnums": 2}, ValueError, r"compile\(step\): donate_argnums=2 is out of range: "
                                        r"step\(x, n\) has 2 positional parameters"),
    ({"donate_argnums": -3}, ValueError, r"out of range"),
    ({"donate_argnums": "x"}, TypeError, r"compile\(step\): donate_argnums must be ints"),
    ({"donate_argnames": "y"}, ValueError, r"donate_argnames names 'y', which is not a "
                                           r"parameter of step\(x, n\)"),
    ({"donate_argnums": 0, "static_argnames": "x"}, ValueError,
     r"argument 'x' is both static and donated"),
    ({"donate_argnums": 0, "in_shardings": hd.NamedSharding(hd.make_mesh((1,), ("d",)),
                                                          hd.P())},
     ValueError, r"cannot be combined yet"),
])
def test_bad_donation_options_are_named_at_compile(options, error, message):
    def step(x, n):
        return x * n

    with pytest.raises(error, match=message):
        hd.compile(step, **options)


def test_donating_a_static_or_absent_argument_is_named_at_the_call():
    def step(x, n=2, *rest):
        return x * n

    x = hd.array(np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"step: donate_argnums/donate_argnames name argument 1, "
                                        r"which holds no array \(3\): only arrays can be donated"):
        hd.compile(step, donate_argnums=1)(x, 3)
    with pytest.raises(ValueError, match=r"step: donate_argnums names argument 4, which this "
                                         r"call does not pass"):
        hd.compile(step, donate_argnums=4)(x, 3)
