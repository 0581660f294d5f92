"""Every branch and loop body is staged exactly once, however deeply control flow nests.

A body that captures arrays of the program around it is staged into its own
computation whose captured values become extra inputs (transforms/body.py);
nothing stages it a second time to bind them. So staging nested loops costs
time linear in depth (it was 2, 4, 8, 16, 32 stagings of the innermost body at
depths 1 to 5). Each test counts the Python calls of the innermost function
while one program is compiled, and checks the program's result.
"""

from __future__ import annotations

import numpy as np
import pytest

import hlodsl as hd
import hlodsl.stdlib as xp

DEPTHS = [1, 2, 3, 4, 5]


class Counter:
    def __init__(self):
        self.calls = 0


def _nested_fori(depth: int, counter: Counter, dynamic: bool):
    """``depth`` fori_loops of 2 steps around ``x + w`` (w captured from the outside)."""

    def program(x, w, n):
        def innermost(i, acc):
            counter.calls += 1
            return acc + w

        body = innermost
        for _ in range(depth - 1):
            body = (lambda inner: lambda i, acc: hd.fori_loop(0, n if dynamic else 2,
                                                                inner, acc))(body)
        return hd.fori_loop(0, n if dynamic else 2, body, x)

    return program


@pytest.mark.parametrize("dynamic", [False, True], ids=["static bounds", "array bounds"])
@pytest.mark.parametrize("depth", DEPTHS)
def test_nested_fori_loops_stage_the_innermost_body_once(depth, dynamic):
    counter = Counter()
    f = hd.compile(_nested_fori(depth, counter, dynamic))
    x, w = hd.array(np.float32([0, 1])), hd.array(np.float32([1, 10]))
    out = f(x, w, hd.array(np.int32(2)))
    assert counter.calls == 1
    np.testing.assert_array_equal(np.asarray(out), [2 ** depth, 1 + 10 * 2 ** depth])


@pytest.mark.parametrize("depth", DEPTHS)
def test_nested_conds_and_while_loops_stage_each_function_once(depth):
    counter = Counter()

    def innermost(v):
        counter.calls += 1
        return v * 2

    def nest(level, v):
        if level == 0:
            return innermost(v)
        if level % 2:  # a cond whose true branch nests further
            return hd.cond(xp.sum(v) > -1e9, lambda: nest(level - 1, v), lambda: v)
        return hd.while_loop(lambda s: s[0] < 1, lambda s: (s[0] + 1, nest(level - 1, s[1])),
                             (hd.array(np.int32(0)), v))[1]

    f = hd.compile(lambda v: nest(depth, v))
    out = f(hd.array(np.float32([1, 3])))
    assert counter.calls == 1
    np.testing.assert_array_equal(np.asarray(out), [2, 6])


@pytest.mark.parametrize("depth", DEPTHS)
def test_nested_scans_stage_the_innermost_function_once(depth):
    counter = Counter()

    def innermost(c, x):
        counter.calls += 1
        return c + x, c

    def nest(level):
        if level == 0:
            return innermost
        inner = nest(level - 1)
        return lambda c, x: (hd.scan(inner, c, xp.stack([x, x]))[0], c)

    f = hd.compile(lambda c, xs: hd.scan(nest(depth - 1), c, xs)[0])
    out = f(hd.array(np.float32(0)), hd.array(np.float32([1, 2])))
    assert counter.calls == 1
    np.testing.assert_allclose(float(out), 3 * 2 ** (depth - 1))


def _converted(depth: int, counter: Counter):
    """``depth`` nested Python ``for`` loops over symbolic bounds, an ``if`` in the middle."""

    def innermost(v):
        counter.calls += 1
        return v + 1

    def program(v, n):
        for _ in range(n):
            v = level(depth - 1, v, n)
        return v

    def level(k, v, n):
        if k == 0:
            return innermost(v)
        for _ in range(n):
            if xp.sum(v) >= 0:
                v = level(k - 1, v, n)
            else:
                v = v - 1
        return v

    return program


@pytest.mark.parametrize("depth", DEPTHS)
def test_converted_python_loops_and_ifs_stage_the_innermost_body_once(depth):
    counter = Counter()
    f = hd.compile(_converted(depth, counter))
    out = f(hd.array(np.float32(0)), hd.array(np.int32(2)))
    assert counter.calls == 1
    assert float(out) == 2 ** depth
