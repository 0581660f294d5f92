"""No silent wrong answers: memory that is shared, cache keys, bounded caches, fork,
pickling, and Python control-flow conversion that must not change what a function does.

Each test is a defect that once returned a wrong value (or hung) without an error.
Threads have their own module (tests/test_concurrency.py).
"""

from __future__ import annotations

import copy
import gc
import importlib
import os
import pickle
import subprocess
import sys
import textwrap
import time
import warnings

import ml_dtypes
import numpy as np
import pytest

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl import StagingError, runtime
from hlodsl.transforms.flow import StaleSourceWarning

from buffers import aligned

pytestmark = pytest.mark.compat  # jax/jaxlib-release sensitive paths (.ci/compat)




# -- memory: an array never changes after it is made ---------------------------------------

def test_array_does_not_alias_its_numpy_source():
    src = aligned(np.zeros(4, np.float32))
    h = hd.array(src)
    src[:] = 100
    np.testing.assert_array_equal(np.asarray(h), np.zeros(4, np.float32))


def test_compiled_call_is_not_disturbed_by_mutating_its_numpy_argument():
    f = hd.compile(lambda a: xp.sum(a * 2))
    n = aligned(np.ones(1 << 20, np.float32))
    for _ in range(10):
        out = f(n)
        n[:] = np.nan  # while the program may still be running
        assert float(out) == 2.0 * n.size
        n[:] = 1


@pytest.mark.parametrize("make", [
    lambda v: v,                              # a numpy array
    lambda v: memoryview(v),                  # a buffer
    lambda v: v[::1],                         # a view
], ids=["ndarray", "memoryview", "view"])
def test_writable_sources_are_copied(make):
    src = make(aligned(np.arange(4, dtype=np.float32)))  # aligned: what PJRT would alias
    h = hd.array(src)
    np.asarray(src)[:] = -1
    np.testing.assert_array_equal(np.asarray(h), np.arange(4, dtype=np.float32))


def test_torch_tensors_are_copied_both_ways():
    torch = pytest.importorskip("torch")
    t = torch.arange(3.0)
    a, b = hd.array(t), xp.from_dlpack(t)
    t[0] = 9
    np.testing.assert_array_equal(np.asarray(a), [0, 1, 2])
    np.testing.assert_array_equal(np.asarray(b), [0, 1, 2])
    x = hd.array(np.arange(4, dtype=np.float32))
    torch.from_dlpack(x)[0] = 100  # the consumer gets its own copy
    np.testing.assert_array_equal(np.asarray(x), [0, 1, 2, 3])


def test_numpy_views_of_arrays_are_read_only_and_copies_are_copies():
    x = hd.array(np.arange(4, dtype=np.float32))
    view = np.asarray(x)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view.flags.writeable = True
    with pytest.raises(ValueError):
        view[0] = 1
    c = np.array(x, copy=True)
    assert c.flags.writeable and not np.shares_memory(c, view)
    c[0] = 7
    np.testing.assert_array_equal(np.asarray(x), [0, 1, 2, 3])


def test_jax_arrays_convert_both_ways():
    import jax.numpy as jnp

    x = hd.array(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(jnp.asarray(x)), [0, 1, 2])
    j = jnp.arange(3, dtype=jnp.int32)
    assert hd.array(j).dtype is hd.int32
    f = hd.compile(lambda a: a + 1)
    np.testing.assert_array_equal(np.asarray(f(hd.array(j))), [1, 2, 3])


def test_element_types_are_numpy_dtype_like():
    x = hd.array(np.float32([1, 2]))
    assert np.zeros(2, dtype=x.dtype).dtype == np.float32
    assert np.dtype("float32") == x.dtype


# -- static arguments: keyed by type and bit pattern ----------------------------------------

def test_signed_zero_static_arguments_are_different_signatures():
    f = hd.compile(lambda a, s: a / s)
    x = hd.array(np.float32([1.0]))
    assert float(f(x, 0.0)[0]) == np.inf
    assert float(f(x, -0.0)[0]) == -np.inf
    assert float(f(x, s=np.float32(-0.0))[0]) == -np.inf
    g = hd.compile(lambda a, t: a / t[0])
    assert float(g(x, (0.0, 1))[0]) == np.inf and float(g(x, (-0.0, 1))[0]) == -np.inf


def test_nan_static_argument_hits_the_cache():
    f = hd.compile(lambda a, s: a * s)
    x = hd.array(np.float32([1.0]))
    for _ in range(20):
        f(x, float("nan"))
    assert f.cache_size() == 1


def test_static_keys_tell_types_apart():
    f = hd.compile(lambda a, s: a * s)
    x = hd.array(np.float64([3.0]))
    assert f(x, 1).dtype is hd.float64 and f(x, True).dtype is hd.float64
    assert f.cache_size() == 2  # 1 and True: equal, and different signatures


def test_ops_with_signed_zero_fields_are_not_shared():
    from hlodsl.ir.op import HloOp, frozen
    from hlodsl import ops

    @frozen
    class Scaled(HloOp, opcode="scaled-safety-test"):
        factor: float

        def result_type(self, x):
            return x

    assert Scaled(0.0) != Scaled(-0.0) and hash(Scaled(1.0)) == hash(Scaled(1.0))
    from hlodsl.ir.op import _REGISTRY
    del _REGISTRY["scaled-safety-test"]
    assert ops.Transpose((1, 0)) == ops.Transpose((1, 0))


# -- caches are bounded, and say why they grow ----------------------------------------------

def test_compile_cache_is_bounded_and_keeps_the_hot_signature():
    f = hd.compile(lambda a: a + 1, cache_size=3)
    hot = hd.array(np.float32([1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hd.RecompileWarning)
        for n in range(2, 12):
            f(hot)  # used between every new signature: never the one evicted
            f(hd.array(np.zeros(n, np.float32)))
    assert f.cache_size() == 3 and f.compiles == 11
    before = runtime.stats["compiles"]
    f(hot)
    assert runtime.stats["compiles"] == before


def test_a_full_cache_of_hot_entries_keeps_the_new_one():
    from hlodsl.cache import BoundedCache

    c = BoundedCache(3, "test")
    for k in "abc":
        c.put(k, k)
        c.get(k)  # every entry used since the clock last passed
    c.put("d", "d")  # the clock gives a, b, c a second chance, then drops a: not d
    assert "d" in c and len(c) == 3 and "a" not in c


def test_recompiling_warns_and_names_the_argument_that_changes():
    f = hd.compile(lambda x, lr: x * lr, static_argnames="lr")  # static: each value compiles
    x = hd.array(np.float32([1]))
    with pytest.warns(hd.RecompileWarning, match=r"lr: static 0\.7\d* before, static 0\.8\d* now"):
        for i in range(9):
            f(x, 0.1 * i)
    assert "compiled already" in f.explain(x, 0.0)
    assert "x: f32[1] before, f32[2] now" in f.explain(hd.array(np.float32([1, 2])), 0.0)


def test_a_dropped_compiled_function_frees_its_executables():
    import weakref

    f = hd.compile(lambda a: a * 3)
    f(hd.array(np.float32([1])))
    exe = weakref.ref(f.entry(hd.array(np.float32([1]))).exe)
    del f
    gc.collect()
    assert exe() is None


def test_eager_caches_are_bounded(monkeypatch):
    from hlodsl.ir import op as op_module

    monkeypatch.setattr(hd.config, "eager_cache_size", 5)
    x = hd.array(np.float32([1, 2]))
    for n in range(12):
        hd.ops.Broadcast((n + 1, 2), (1,))(x)
    assert len(op_module._EAGER) <= 5


# -- fork: a clear error at once, never a hang ----------------------------------------------

FORK_CHILD = textwrap.dedent("""
    import os, sys, time, warnings
    warnings.simplefilter("ignore")
    import numpy as np, hlodsl as hd
    x = hd.array(np.float32([1, 2, 3]))
    f = hd.compile(lambda a: a * 2)
    y = f(x)
    pid = os.fork()
    if pid == 0:
        results = []
        for what, fn in [("read", lambda: np.asarray(y)), ("compiled", lambda: f(x)),
                         ("eager", lambda: x * x), ("new", lambda: hd.array([1.0]))]:
            start = time.time()
            try:
                fn()
                results.append(what + ":ran")
            except RuntimeError as e:
                assert "forked" in str(e) and "spawn" in str(e), e
                results.append(what + ":error")
            assert time.time() - start < 2
        print(" ".join(results), flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
    print("parent still works", float(f(x)[0]))
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform")
def test_forked_child_fails_clearly_within_seconds():
    out = subprocess.run([sys.executable, "-c", FORK_CHILD], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "read:error compiled:error eager:error new:error" in out.stdout
    assert "parent still works 2.0" in out.stdout


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform")
def test_child_forked_before_xla_started_works():
    code = ("import os, numpy as np, hlodsl as hd\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    print('child', float(hd.compile(lambda a: a + 1)(hd.array(np.float32(1)))))\n"
            "    os._exit(0)\n"
            "os.waitpid(pid, 0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert "child 2.0" in out.stdout, out.stderr


# -- pickling: by value -----------------------------------------------------------------------

@pytest.mark.parametrize("value", [
    np.arange(5, dtype=np.float32), np.float16(2.5), np.zeros((2, 0), np.int8),
    np.float32([1.5, -2]).astype(ml_dtypes.bfloat16), np.complex128([1 + 2j]),
])
def test_arrays_pickle_by_value(value):
    x = hd.array(value)
    y = pickle.loads(pickle.dumps(x))
    assert type(y) is type(x)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    assert pickle.loads(pickle.dumps(type(x))) is type(x)
    assert copy.deepcopy(x) is x and copy.copy(x) is x


def test_parameter_trees_pickle_and_symbolic_arrays_refuse():
    tree = {"w": [hd.array(np.ones((2, 2))), hd.array(np.int32(3))], "name": "mlp"}
    back = pickle.loads(pickle.dumps(tree))
    np.testing.assert_array_equal(np.asarray(back["w"][0]), np.ones((2, 2)))
    assert back["name"] == "mlp"
    with pytest.raises(StagingError, match="pickling"):
        hd.compile(lambda a: pickle.dumps(a))(hd.array([1.0]))


# -- Python control-flow conversion never changes what a function does --------------------

def _write_module(tmp_path, name: str, body: str):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    sys.path.insert(0, str(tmp_path))
    try:
        importlib.invalidate_caches()
        return importlib.import_module(name), path
    finally:
        sys.path.remove(str(tmp_path))


def test_conversion_refuses_a_source_file_edited_after_import(tmp_path):
    module, path = _write_module(tmp_path, "edited_after_import", """
        import hlodsl.stdlib as xp

        def f(x):
            if xp.sum(x) > 0:
                x = x * 2
            return x
    """)
    time.sleep(0.01)
    path.write_text(path.read_text().replace("x * 2", "x * 5"))
    os.utime(path, (time.time() + 5, time.time() + 5))  # a new mtime: linecache rereads it
    x = hd.array(np.float32([1.0]))
    np.testing.assert_array_equal(np.asarray(module.f(x)), [2.0])
    with pytest.warns(StaleSourceWarning, match="does not match the code that was loaded"), \
            pytest.raises(StagingError):
        hd.compile(module.f)(x)  # never x * 5


def test_conversion_of_an_unchanged_file_still_works(tmp_path):
    module, _ = _write_module(tmp_path, "unchanged_module", """
        import hlodsl.stdlib as xp

        def f(x):
            if xp.sum(x) > 0:
                x = x * 2
            return x
    """)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaleSourceWarning)
        out = hd.compile(module.f)(hd.array(np.float32([1.0])))
    np.testing.assert_array_equal(np.asarray(out), [2.0])


counter = None


def _assigns_a_global(x):
    global counter
    if xp.sum(x) > 0:
        counter = x
    return x * 2


def test_a_global_assigned_under_a_symbolic_condition_is_a_clear_error():
    global counter
    counter = None
    with pytest.raises(StagingError, match="assigns the global variable 'counter'"):
        hd.compile(_assigns_a_global)(hd.array(np.float32([1.0])))
    assert counter is None  # no symbolic array left behind


class _Base:
    def scale(self, x):
        return x * 10


class _Derived(_Base):
    def scale(self, x):
        if xp.sum(x) > 0:
            y = super().scale(x)
        else:
            y = -x
        return y


def test_zero_argument_super_in_a_converted_method():
    x = hd.array(np.float32([1.0]))
    np.testing.assert_array_equal(np.asarray(hd.compile(_Derived().scale)(x)), [10.0])
    np.testing.assert_array_equal(np.asarray(hd.compile(_Derived().scale)(-x)), [1.0])


def _hlodsl_factory(_hlodsl_flow):  # the names conversion once used for itself
    while xp.sum(_hlodsl_flow) < 10:
        _hlodsl_flow = _hlodsl_flow * 2
    return _hlodsl_flow


def test_user_names_cannot_collide_with_conversion():
    out = hd.compile(_hlodsl_factory)(hd.array(np.float32([1.0, 2.0])))
    np.testing.assert_array_equal(np.asarray(out), [4.0, 8.0])
