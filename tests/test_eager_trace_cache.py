"""Eager control flow reuses its staged program only while it would stage the same one.

``hd.fori_loop`` & co. called eagerly cache the staged program by the
fingerprint of the functions they stage (transforms/fingerprint.py). Each test
changes one thing the body depends on between two eager calls and checks the
second call sees it: a cached program that ignored the change would give the
first call's answer.
"""

import types

import numpy as np
import pytest

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl.settings import config

x0 = hd.array(np.float32([1.0, 2.0]))
SCALE = 2.0


def _loop(body, n=3, init=x0):
    return np.asarray(hd.fori_loop(0, n, body, init))


def _stagings(monkeypatch):
    """Counts stagings of eager control flow (the work the cache skips)."""
    import hlodsl.ir.staging as staging

    count = [0]
    original = staging.stage_types

    def counting(*args, **kwargs):
        count[0] += 1
        return original(*args, **kwargs)

    # run_eagerly imports stage_types at each call, so the patched one is the one it runs
    monkeypatch.setattr(staging, "stage_types", counting)
    return count


def test_a_warm_eager_loop_is_not_staged_again(monkeypatch):
    count = _stagings(monkeypatch)

    def body(i, x):
        return x * 0.5 + 1.0

    first = _loop(body)
    second = _loop(body)
    np.testing.assert_array_equal(first, second)
    assert count[0] == 1


def test_a_changed_global_restages():
    global SCALE

    def body(i, x):
        return x * SCALE

    SCALE = 2.0
    np.testing.assert_array_equal(_loop(body), np.float32([8, 16]))
    SCALE = 3.0
    try:
        np.testing.assert_array_equal(_loop(body), np.float32([27, 54]))
    finally:
        SCALE = 2.0


def test_a_changed_closure_cell_restages():
    def make():
        k = 1.0

        def body(i, x):
            return x + k

        def set_k(v):
            nonlocal k
            k = v

        return body, set_k

    body, set_k = make()
    np.testing.assert_array_equal(_loop(body), np.float32([4, 5]))
    set_k(10.0)
    np.testing.assert_array_equal(_loop(body), np.float32([31, 32]))


def test_a_mutable_value_read_by_the_body_is_read_at_every_call(monkeypatch):
    table = [1.0]

    def body(i, x):
        return x + table[0]

    count = _stagings(monkeypatch)
    np.testing.assert_array_equal(_loop(body), np.float32([4, 5]))
    table[0] = 5.0
    np.testing.assert_array_equal(_loop(body), np.float32([16, 17]))
    assert count[0] == 2  # no fingerprint for a list: staged at each call


def test_a_captured_array_is_keyed_by_identity():
    def run(c):
        return _loop(lambda i, x: x + c)

    np.testing.assert_array_equal(run(hd.array(np.float32(1))), np.float32([4, 5]))
    np.testing.assert_array_equal(run(hd.array(np.float32(2))), np.float32([7, 8]))
    for v in range(5):  # new arrays, possibly at a freed array's address: never stale
        np.testing.assert_array_equal(run(hd.array(np.float32(v))),
                                      np.float32([1 + 3 * v, 2 + 3 * v]))


def test_a_replaced_attribute_of_a_user_module_restages(monkeypatch):
    mod = types.ModuleType("user_helpers")
    mod.__file__ = "/home/user/user_helpers.py"
    mod.factor = 2.0
    monkeypatch.setitem(globals(), "user_helpers", mod)

    def body(i, x):
        return x * user_helpers.factor  # noqa: F821  (the module above, as a global)

    np.testing.assert_array_equal(_loop(body), np.float32([8, 16]))
    mod.factor = 1.0
    np.testing.assert_array_equal(_loop(body), np.float32([1, 2]))


def test_a_called_user_function_is_fingerprinted_too():
    global SCALE

    def helper(x):
        return x * SCALE

    def body(i, x):
        return helper(x)

    SCALE = 2.0
    np.testing.assert_array_equal(_loop(body), np.float32([8, 16]))
    SCALE = 1.0
    try:
        np.testing.assert_array_equal(_loop(body), np.float32([1, 2]))
    finally:
        SCALE = 2.0


def test_bounds_types_and_static_arguments_are_in_the_key():
    def body(i, x):
        return x + 1.0

    np.testing.assert_array_equal(_loop(body, n=2), np.float32([3, 4]))
    np.testing.assert_array_equal(_loop(body, n=5), np.float32([6, 7]))
    y = _loop(body, n=2, init=hd.array(np.float64([1.0, 2.0])))
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, [3, 4])
    np.testing.assert_array_equal(np.asarray(hd.scan(lambda c, x: (c + x, c), x0,
                                                     hd.array(np.float32([[1, 1], [2, 2]])),
                                                     reverse=True)[1]),
                                  np.float32([[3, 4], [1, 2]]))


def test_while_and_cond_use_the_cache_and_see_changes():
    global SCALE
    SCALE = 2.0

    def grow(x):
        return x * SCALE

    def small(x):
        return xp.sum(x) < 100.0

    try:
        np.testing.assert_array_equal(np.asarray(hd.while_loop(small, grow, x0)),
                                      np.float32([64, 128]))
        SCALE = 4.0
        np.testing.assert_array_equal(np.asarray(hd.while_loop(small, grow, x0)),
                                      np.float32([64, 128]))
        SCALE = 3.0
        np.testing.assert_array_equal(np.asarray(hd.while_loop(small, grow, x0)),
                                      np.float32([81, 162]))
        SCALE = 5.0
        out = hd.cond(hd.array(True), lambda v: grow(v), lambda v: v, x0)
        np.testing.assert_array_equal(np.asarray(out), np.float32([5, 10]))
    finally:
        SCALE = 2.0


def test_the_cache_can_be_switched_off(monkeypatch):
    monkeypatch.setattr(config, "eager_trace_cache", False)
    count = _stagings(monkeypatch)

    def body(i, x):
        return x + 1.0

    _loop(body)
    _loop(body)
    assert count[0] == 2


@pytest.mark.parametrize("n", [1, 7])
def test_eager_and_compiled_loops_agree(n):
    def body(i, x):
        return x * 0.9 + xp.sin(x) * 0.1 + i

    eager_out = _loop(body, n=n)
    compiled = np.asarray(hd.compile(lambda x: hd.fori_loop(0, n, body, x))(x0))
    np.testing.assert_allclose(eager_out, compiled, rtol=1e-6)


def test_eager_vmap_is_not_staged_again_and_sees_a_changed_global(monkeypatch):
    global SCALE
    count = _stagings(monkeypatch)

    def f(x):
        return xp.sum(x) * SCALE

    batched = hd.vmap(f)
    xs = hd.array(np.float32([[1, 2], [3, 4]]))
    SCALE = 2.0
    try:
        np.testing.assert_array_equal(np.asarray(batched(xs)), np.float32([6, 14]))
        np.testing.assert_array_equal(np.asarray(batched(xs)), np.float32([6, 14]))
        assert count[0] == 1
        SCALE = 3.0
        np.testing.assert_array_equal(np.asarray(batched(xs)), np.float32([9, 21]))
        assert count[0] == 2
    finally:
        SCALE = 2.0


# -- what the body reads beyond its globals and cells (issue 26 item 1) ---------------------
# The oracle of each test is the same calls with the cache switched off: eager control flow
# with the cache must answer what it answers without it.


def _uncached(monkeypatch, run):
    """``run()`` with the eager trace cache switched off (the reference semantics)."""
    with monkeypatch.context() as m:
        m.setattr(config, "eager_trace_cache", False)
        return run()


_COMBINATORS = {
    "fori_loop": lambda read: np.asarray(hd.fori_loop(0, 1, lambda i, a: a + read(), x0)),
    "cond": lambda read: np.asarray(hd.cond(hd.array(True), lambda a: a + read(),
                                            lambda a: a, x0)),
    "vmap": lambda read: np.asarray(hd.vmap(lambda a: a + read())(x0)),
}


@pytest.mark.parametrize("combinator", sorted(_COMBINATORS))
def test_a_changed_class_attribute_restages(combinator, monkeypatch):
    class Cfg:
        scale = 2.0

    run = lambda: _COMBINATORS[combinator](lambda: Cfg.scale)
    first = run()
    Cfg.scale = 100.0
    second = run()
    np.testing.assert_array_equal(first, np.asarray(x0) + 2.0)
    np.testing.assert_array_equal(second, _uncached(monkeypatch, run))
    np.testing.assert_array_equal(second, np.asarray(x0) + 100.0)


def test_a_class_attribute_read_by_a_method_the_body_does_not_name_restages():
    class Base:
        offset = 1.0

        @classmethod
        def shift(cls, a):
            return a + cls.extra()

        @classmethod
        def extra(cls):
            return cls.offset

    class Cfg(Base):
        pass

    body = lambda i, a: Cfg.shift(a)
    np.testing.assert_array_equal(_loop(body, n=1), np.asarray(x0) + 1.0)
    Base.offset = 7.0  # an attribute of a base class, read through cls by another method
    np.testing.assert_array_equal(_loop(body, n=1), np.asarray(x0) + 7.0)


def test_a_module_attribute_of_a_nested_user_module_restages(monkeypatch):
    pkg = types.ModuleType("user_pkg")
    pkg.__file__ = "/home/user/user_pkg/__init__.py"
    pkg.sub = types.ModuleType("user_pkg.sub")
    pkg.sub.__file__ = "/home/user/user_pkg/sub.py"
    pkg.sub.factor = 2.0
    monkeypatch.setitem(globals(), "user_pkg", pkg)

    def body(i, x):
        return x * user_pkg.sub.factor  # noqa: F821  (the module above, as a global)

    np.testing.assert_array_equal(_loop(body, n=1), np.asarray(x0) * 2.0)
    pkg.sub.factor = 5.0
    np.testing.assert_array_equal(_loop(body, n=1), np.asarray(x0) * 5.0)


def test_a_mutated_object_in_a_closure_is_read_at_every_call(monkeypatch):
    class Box:
        def __init__(self, v):
            self.v = v

    box = Box(1.0)
    run = lambda: _loop(lambda i, a: a + box.v, n=1)
    np.testing.assert_array_equal(run(), np.asarray(x0) + 1.0)
    box.v = 9.0
    np.testing.assert_array_equal(run(), _uncached(monkeypatch, run))
    np.testing.assert_array_equal(run(), np.asarray(x0) + 9.0)


@pytest.mark.parametrize("combinator", sorted(_COMBINATORS))
def test_a_body_drawing_from_np_random_draws_at_every_call(combinator):
    run = lambda: _COMBINATORS[combinator](lambda: np.random.rand())
    np.random.seed(0)
    draws = [np.random.rand(), np.random.rand()]
    np.random.seed(0)
    outs = [run(), run()]
    for out, draw in zip(outs, draws):
        np.testing.assert_allclose(out, np.asarray(x0) + np.float32(draw), rtol=1e-6)


def test_a_body_calling_time_time_reads_the_clock_at_every_call():
    import time

    start = time.time()
    run = lambda: _loop(lambda i, a: a * 0.0 + (time.time() - start), n=1)
    first = run()
    time.sleep(0.05)
    second = run()
    assert (second - first >= 0.04).all(), (first, second)


def test_a_body_calling_random_random_draws_at_every_call():
    import random

    run = lambda: _loop(lambda i, a: a + random.random(), n=1)
    random.seed(3)
    want = [random.random(), random.random()]
    random.seed(3)
    got = [run(), run()]
    for out, draw in zip(got, want):
        np.testing.assert_allclose(out, np.asarray(x0) + np.float32(draw), rtol=1e-6)


def test_pure_bodies_over_arrays_and_constants_still_hit_the_cache(monkeypatch):
    import math

    count = _stagings(monkeypatch)

    class Frozen:  # a user class whose attributes do not change: keyed by its contents
        gain = 0.5

    def body(i, x):
        return xp.sin(x) * Frozen.gain + np.float32(np.pi) + math.sqrt(2.0) + i

    first = _loop(body)
    second = _loop(body)
    np.testing.assert_array_equal(first, second)
    assert count[0] == 1


def test_a_compiled_function_inlined_into_the_body_is_fingerprinted_by_its_function(
        monkeypatch):
    global SCALE
    scaled = hd.compile(lambda x: x * SCALE)
    run = lambda: _loop(lambda i, a: scaled(a), n=1)
    SCALE = 2.0
    try:
        np.testing.assert_array_equal(run(), np.asarray(x0) * 2.0)
        SCALE = 3.0
        np.testing.assert_array_equal(run(), _uncached(monkeypatch, run))
        np.testing.assert_array_equal(run(), np.asarray(x0) * 3.0)
    finally:
        SCALE = 2.0


def test_a_module_imported_inside_the_body_is_keyed_as_a_global_one_would_be():
    def body(i, a):
        import random

        return a + random.random()

    random_module = __import__("random")
    random_module.seed(5)
    want = [random_module.random(), random_module.random()]
    random_module.seed(5)
    got = [_loop(body, n=1), _loop(body, n=1)]
    for out, draw in zip(got, want):
        np.testing.assert_allclose(out, np.asarray(x0) + np.float32(draw), rtol=1e-6)


def test_an_operand_compared_by_identity_is_read_at_every_call(monkeypatch):
    class Box:
        def __init__(self, v):
            self.v = v

    box = Box(1.0)
    run = lambda: np.asarray(hd.cond(hd.array(True), lambda a, b: a + b.v,
                                     lambda a, b: a, x0, box))
    np.testing.assert_array_equal(run(), np.asarray(x0) + 1.0)
    box.v = 4.0
    np.testing.assert_array_equal(run(), _uncached(monkeypatch, run))
    np.testing.assert_array_equal(run(), np.asarray(x0) + 4.0)


def test_a_derivative_of_a_user_function_is_fingerprinted_through_its_wrapper(monkeypatch):
    global SCALE
    count = _stagings(monkeypatch)
    slope = hd.grad(lambda a: xp.sum(a * a) * SCALE)  # hlodsl's closure around the user's
    run = lambda: _loop(lambda i, a: slope(a), n=1)
    SCALE = 2.0
    try:
        np.testing.assert_array_equal(run(), np.asarray(x0) * 4.0)
        np.testing.assert_array_equal(run(), np.asarray(x0) * 4.0)
        assert count[0] == 1  # unchanged: the cached program
        SCALE = 3.0
        np.testing.assert_array_equal(run(), np.asarray(x0) * 6.0)
    finally:
        SCALE = 2.0


def test_a_module_in_a_closure_cell_has_its_named_attributes_keyed():
    mod = types.ModuleType("user_settings")
    mod.__file__ = "/home/user/user_settings.py"
    mod.factor = 2.0

    def make(m):
        return lambda i, a: a * m.factor  # m: a module held by a closure cell, not a global

    body = make(mod)
    np.testing.assert_array_equal(_loop(body, n=1), np.asarray(x0) * 2.0)
    mod.factor = 3.0
    np.testing.assert_array_equal(_loop(body, n=1), np.asarray(x0) * 3.0)


@pytest.mark.parametrize("kind", ["dataclass", "attrs"])
def test_a_frozen_instance_in_a_closure_is_keyed_by_its_values(kind, monkeypatch):
    import dataclasses

    import attrs

    if kind == "dataclass":
        @dataclasses.dataclass(frozen=True)
        class Config:
            gain: float

            def apply(self, a):
                return a * self.gain
    else:
        @attrs.frozen
        class Config:
            gain: float

            def apply(self, a):
                return a * self.gain

    count = _stagings(monkeypatch)

    def run(cfg):
        return _loop(lambda i, a: cfg.apply(a), n=1)

    np.testing.assert_array_equal(run(Config(2.0)), np.asarray(x0) * 2.0)
    np.testing.assert_array_equal(run(Config(2.0)), np.asarray(x0) * 2.0)
    assert count[0] == 1  # an equal frozen value: the cached program
    np.testing.assert_array_equal(run(Config(3.0)), np.asarray(x0) * 3.0)
    assert count[0] == 2
