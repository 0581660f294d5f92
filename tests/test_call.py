"""hlodsl.compilation.call: a compiled call runs in the call module and the runtime only, and its
per-signature plans find exactly the signature the general path (hlodsl.arrays.tree) finds."""

import sys
from collections import namedtuple

import numpy as np
import pytest

import hlodsl as hd
from benchmarks.foundation import dense, dict_params  # the benchmark's own workloads
from hlodsl import cache, runtime
from hlodsl.ir import staging

pytestmark = pytest.mark.compat  # execute and result handlers: jaxlib-release sensitive


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _compiles() -> int:
    return runtime.stats["compiles"]


def _modules_run_by(call) -> set[str]:
    """The modules whose Python functions run during ``call()``."""
    seen: set[str] = set()

    def profile(frame, event, arg):
        if event == "call" and frame.f_globals.get("__name__") != __name__:  # not the test's
            seen.add(frame.f_globals.get("__name__", "?"))

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen


@pytest.fixture(scope="module")
def workloads():
    """The issue-29 workloads, compiled once: (function, arguments, numpy result)."""
    W, x, b = _rand(4, 4), _rand(4, seed=1), _rand(4, seed=2)
    params = {f"w{i}": _rand(3, 3, seed=10 + i) for i in range(8)}
    xs = [_rand(3, seed=30 + i) for i in range(20)]
    expected_dict = sum(p[0] for p in params.values()) + params["w0"][0] + sum(xs)
    cases = {
        "dense": (hd.compile(dense), (hd.array(W), hd.array(x), hd.array(b)), W @ x + b),
        "dict": (hd.compile(dict_params),
                 ({k: hd.array(v) for k, v in params.items()}, *map(hd.array, xs)),
                 expected_dict),
        "positional": (hd.compile(lambda *a: dict_params({"w0": a[0]}, *a[1:])),
                       tuple(map(hd.array, [params["w0"], *xs])),
                       2 * params["w0"][0] + sum(xs)),
    }
    for f, args, want in cases.values():
        np.testing.assert_allclose(np.asarray(f(*args)), want, rtol=1e-5, atol=1e-5)
    return cases


@pytest.mark.parametrize("case", ["dense", "dict", "positional"])
def test_a_warm_call_runs_only_in_the_call_module_and_the_runtime(workloads, case):
    f, args, want = workloads[case]
    out = []
    seen = _modules_run_by(lambda: out.append(f(*args)))
    # The runtime's executables module runs the execute (hlodsl.runtime.executables); a
    # nested argument's plan runs code written for it (hlodsl.compilation.walkers).
    assert seen <= {"hlodsl.compilation.call", "hlodsl.compilation.walkers",
                    "hlodsl.runtime.executables"}, seen
    np.testing.assert_allclose(np.asarray(out[0]), want, rtol=1e-5, atol=1e-5)


def test_a_dict_plan_keys_on_the_dict_keys_and_their_order():
    f = hd.compile(lambda d: [v * (i + 1) for i, v in enumerate(d.values())])
    a, b = hd.array(np.float32([1, 2])), hd.array(np.float32([10, 20]))
    assert [np.asarray(r).tolist() for r in f({"a": a, "b": b})] == [[1, 2], [20, 40]]
    assert [np.asarray(r).tolist() for r in f({"b": b, "a": a})] == [[10, 20], [2, 4]]
    assert [np.asarray(r).tolist() for r in f({"a": b, "b": a})] == [[10, 20], [2, 4]]
    assert f.compiles == 2  # key order is part of the signature; values are not


def test_dict_keys_that_compare_equal_across_types_are_different_signatures():
    f = hd.compile(lambda d: {k: v * 2 for k, v in d.items()})
    x = hd.array(np.float32([1, 2]))
    assert list(f({"a": x})) == ["a"]  # a plan for dicts of string keys
    for key in (1, True, 1.0, 1, True):  # 1 == True == 1.0, but each is its own signature
        (k,) = f({key: x})
        assert k == key and type(k) is type(key)


def test_static_top_level_values_and_traced_numbers_take_their_plan():
    f = hd.compile(lambda x, n, s, flag: x * n * s if flag else x + n * s)
    x = hd.array(np.float32([1, 2]))
    before = _compiles()
    assert np.asarray(f(x, 2, 0.5, True)).tolist() == [1, 2]
    assert np.asarray(f(x, 3, 0.5, True)).tolist() == [1.5, 3]  # a static int: a new program
    assert np.asarray(f(x, 3, 2.0, True)).tolist() == [6, 12]  # a number: traced, no compile
    assert np.asarray(f(x, 1, 2.0, False)).tolist() == [3, 4]
    assert np.asarray(f(x, True, 2.0, False)).tolist() == [3, 4]  # bool, not int: new program
    assert _compiles() - before == 4
    assert np.asarray(f(x, 3, -1.0, True)).tolist() == [-3, -6]
    assert _compiles() - before == 4


def test_keyword_calls_and_other_structures_give_the_general_paths_results():
    Pair = namedtuple("Pair", "a b")
    f = hd.compile(lambda p, xs, *, scale: (p.a * scale + xs[0], [p.b - x for x in xs]))
    a, b = hd.array(_rand(3)), hd.array(_rand(3, seed=1))
    xs = [hd.array(_rand(3, seed=2)), hd.array(_rand(3, seed=3))]
    for _ in range(3):  # first call compiles, the others take the plan
        first, rest = f(Pair(a, b), xs, scale=2.0)
        np.testing.assert_allclose(np.asarray(first), np.asarray(a) * 2 + np.asarray(xs[0]),
                                   rtol=1e-6)
        assert len(rest) == 2
        np.testing.assert_allclose(np.asarray(rest[1]), np.asarray(b) - np.asarray(xs[1]))
    g = hd.compile(lambda x, y: x - y)
    for _ in range(2):
        assert np.asarray(g(y=a, x=b)).tolist() == (np.asarray(b) - np.asarray(a)).tolist()
        assert np.asarray(g(a, y=b)).tolist() == (np.asarray(a) - np.asarray(b)).tolist()


def test_results_keep_their_structure():
    f = hd.compile(lambda x: {"double": x * 2, "pair": (x, -x), "list": [x + 1]})
    x = hd.array(np.float32([1, 2]))
    for _ in range(2):
        out = f(x)
        assert list(out) == ["double", "pair", "list"]
        assert type(out["pair"]) is tuple and type(out["list"]) is list
        assert np.asarray(out["pair"][1]).tolist() == [-1, -2]
    g = hd.compile(lambda x: (x,))
    assert type(g(x)) is tuple and np.asarray(g(x)[0]).tolist() == [1, 2]


@pytest.mark.filterwarnings("ignore::hlodsl.RecompileWarning")
def test_evicted_signatures_leave_the_plans():
    f = hd.compile(lambda p, x: p["w"] * x, cache_size=2)
    for n in range(1, 8):
        p, x = {"w": hd.array(np.ones(n, np.float32))}, hd.array(np.arange(n, dtype=np.float32))
        assert np.asarray(f(p, x)).tolist() == list(range(n))
        assert np.asarray(f(p, x)).tolist() == list(range(n))  # through the plan
        assert len(f._plans) <= 2  # one per cached signature, not one per shape seen
    cache.clear_all()  # a setting that changes staging (hd.config) empties the caches
    assert not f._plans and f.cache_size() == 0


def test_a_symbolic_array_passed_outside_staging_is_named():
    leaked = []
    hd.compile(lambda x: (leaked.append(x * 2), x)[1])(hd.array(np.float32([1, 2])))
    f = hd.compile(lambda x: x + 1)
    f(hd.array(np.float32([1, 2])))  # the plan exists: the error comes from the call path
    with pytest.raises(hd.StagingError, match=r"<lambda>: a symbolic array f32\[2\] was passed "
                                              r"outside staging"):
        f(leaked[0])
    assert staging.stats["stagings"] > 0
