"""The array API namespace as a whole: every name of the 2023.12 standard, the
inspection namespace, set functions, nextafter, take and DLPack interchange.

``unique_*`` are compared with numpy on hypothesis data with many ties, NaNs
and signed zeros, eagerly and staged with a static ``size=`` (checked against
numpy's result truncated or padded as ``jax.numpy.unique(size=...)`` pads).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hlodsl as hd
import hlodsl.stdlib as xp
from hlodsl.errors import StagingError

from buffers import aligned
from platform_rules import ON_CPU
from strategies import Domain, arrays, shapes

# The 2023.12 standard's names, from its function and constant lists.
STANDARD_2023_12 = """
e inf nan newaxis pi
bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 complex64 complex128
__array_api_version__ __array_namespace_info__
arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones
ones_like tril triu zeros zeros_like
astype can_cast finfo iinfo isdtype result_type
abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift
bitwise_invert bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign cos cosh
divide equal exp expm1 floor floor_divide greater greater_equal hypot imag isfinite isinf
isnan less less_equal log log1p log2 log10 logaddexp logical_and logical_not logical_or
logical_xor maximum minimum multiply negative not_equal positive pow real remainder round
sign signbit sin sinh square sqrt subtract tan tanh trunc
take
matmul matrix_transpose tensordot vecdot
broadcast_arrays broadcast_to concat expand_dims flip moveaxis permute_dims repeat reshape
roll squeeze stack tile unstack
argmax argmin nonzero searchsorted where
unique_all unique_counts unique_inverse unique_values
argsort sort
cumulative_sum max mean min prod std sum var
all any
""".split()
ARRAY_METHODS = """
__abs__ __add__ __and__ __array_namespace__ __bool__ __complex__ __dlpack__
__dlpack_device__ __eq__ __float__ __floordiv__ __ge__ __getitem__ __gt__ __index__ __int__
__invert__ __le__ __lshift__ __lt__ __matmul__ __mod__ __mul__ __ne__ __neg__ __or__ __pos__
__pow__ __rshift__ __setitem__ __sub__ __truediv__ __xor__ to_device
dtype device mT ndim shape size T
""".split()
# Owned by the linalg helper; checked once they land.
PENDING = {"tensordot", "vecdot"}

SETTINGS = settings(max_examples=10, deadline=None)
TIES = Domain(lo=-3, hi=3, step=1.0, special=True)
UNIQUE_DTYPES = (hd.pred, hd.int8, hd.uint16, hd.int64, hd.float32, hd.float64)


@pytest.mark.parametrize("name", STANDARD_2023_12)
def test_standard_name_exists(name):
    if name in PENDING and not hasattr(xp, name):
        pytest.xfail(f"{name} comes with the linalg work")
    assert hasattr(xp, name), f"hlodsl.stdlib lacks the standard's {name}"


@pytest.mark.parametrize("name", ARRAY_METHODS)
def test_array_has_standard_attribute(name):
    assert hasattr(hd.array(np.ones((2, 2), np.float32)), name)


def test_namespace_and_version():
    x = hd.array(np.float32([1, 2]))
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2023.12") is xp
    assert xp.__array_api_version__ == "2025.12"
    with pytest.raises(ValueError, match="api_version='1999.01'"):
        x.__array_namespace__(api_version="1999.01")


def test_constants_and_dtypes():
    assert (xp.e, xp.pi, xp.inf, xp.newaxis) == (np.e, np.pi, np.inf, None)
    assert np.isnan(xp.nan)
    assert xp.bool is hd.pred and xp.complex128 is hd.complex128
    assert xp.ones((2,), dtype=xp.int16).dtype == xp.int16


def test_info():
    info = xp.__array_namespace_info__()
    assert set(info.capabilities()) == {"boolean indexing", "data-dependent shapes",
                                        "max dimensions"}
    assert info.devices() == (info.default_device(),) == (hd.array([1.0]).device,)
    assert info.default_dtypes() == {"real floating": hd.float64,
                                     "complex floating": hd.complex128,
                                     "integral": hd.int64, "indexing": hd.int64}
    # Default dtypes are what creation functions really give.
    assert xp.zeros(1).dtype is info.default_dtypes()["real floating"]
    assert xp.arange(3).dtype is info.default_dtypes()["integral"]
    assert len(info.dtypes()) == 13
    assert set(info.dtypes(kind=("bool", "unsigned integer"))) == {
        "bool", "uint8", "uint16", "uint32", "uint64"}
    assert set(info.dtypes(kind="real floating")) == {"float32", "float64"}
    with pytest.raises(ValueError, match="not a device"):
        info.dtypes(device=hd.array([1.0]).device.__class__("tpu", 3))


def test_device_and_to_device():
    x = hd.array(np.int32([1, 2]))
    assert x.to_device(x.device) is x
    staged = hd.compile(lambda a: a.to_device(a.device) + 1)
    np.testing.assert_array_equal(staged(x), [2, 3])
    with pytest.raises(ValueError, match="to_device"):
        x.to_device(x.device.__class__(x.device.platform, 7))


# -- unique ------------------------------------------------------------------------------

STAGED_UNIQUE = {f.__name__: hd.compile(f) for f in (
    xp.unique_all, xp.unique_counts, xp.unique_inverse, xp.unique_values)}


@st.composite
def unique_data(draw):
    dtype = draw(st.sampled_from(UNIQUE_DTYPES))
    shape = draw(shapes(0, 3, min_side=0, max_side=4))
    return draw(arrays(dtype, shape, TIES))


def _same(got, expected):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got, expected)
    np.testing.assert_array_equal(got, expected)


def _numpy_unique(x):
    r = np.unique_all(x)
    # numpy >= 2 gives inverse_indices x's shape, as the standard asks.
    return r.values, r.indices.astype(np.int64), r.inverse_indices.astype(np.int64), \
        r.counts.astype(np.int64)


def _padded(v, size, fill):
    out = np.full(size, fill, v.dtype)
    out[:min(size, v.size)] = v[:size]
    return out


@SETTINGS
@given(unique_data())
def test_unique_eager_against_numpy(x):
    values, indices, inverse, counts = _numpy_unique(x)
    r = xp.unique_all(hd.array(x))
    for got, expected in zip(r, (values, indices, inverse, counts)):
        _same(got, expected)
    _same(xp.unique_values(hd.array(x)), values)
    c = xp.unique_counts(hd.array(x))
    _same(c.values, values), _same(c.counts, counts)
    i = xp.unique_inverse(hd.array(x))
    _same(i.values, values), _same(i.inverse_indices, inverse)


@SETTINGS
@given(unique_data().filter(lambda a: a.size > 0), st.integers(1, 8))
def test_unique_staged_with_size(x, size):
    values, indices, inverse, counts = _numpy_unique(x)
    expected = (_padded(values, size, values[0]), _padded(indices, size, indices[0]),
                inverse, _padded(counts, size, 0))
    for got in (STAGED_UNIQUE["unique_all"](hd.array(x), size=size),
                xp.unique_all(hd.array(x), size=size)):  # eager with size: the same padding
        for g, e in zip(got, expected):
            _same(g, e)
    _same(STAGED_UNIQUE["unique_values"](hd.array(x), size=size), expected[0])
    c = STAGED_UNIQUE["unique_counts"](hd.array(x), size=size)
    _same(c.counts, expected[3])
    i = STAGED_UNIQUE["unique_inverse"](hd.array(x), size=size)
    _same(i.inverse_indices, inverse)


def test_unique_nan_rules_and_complex():
    x = np.array([np.nan, 0.0, -0.0, np.nan, 1.0], np.float32)
    r = xp.unique_all(hd.array(x))
    np.testing.assert_array_equal(r.values, [0.0, 1.0, np.nan, np.nan])  # each NaN distinct
    _same(r.counts, np.int64([2, 1, 1, 1]))
    z = np.array([1 + 1j, 1 - 1j, 1 + 1j, np.nan], np.complex64)
    for got, expected in zip(xp.unique_all(hd.array(z)), _numpy_unique(z)):
        _same(got, expected)


def test_unique_staged_needs_size():
    with pytest.raises(StagingError, match="unique_values.*size="):
        STAGED_UNIQUE["unique_values"](hd.array(np.int32([1, 1])))
    with pytest.raises(ValueError, match="size must be non-negative"):
        xp.unique_values(hd.array(np.int32([1])), size=-1)


# -- elementwise, indexing and utility additions ----------------------------------------

NEXTAFTER = hd.compile(xp.nextafter)
SPECIAL = Domain(lo=-2, hi=2, special=True)


@SETTINGS
@given(st.sampled_from((hd.float32, hd.float64)).flatmap(
    lambda t: st.tuples(arrays(t, (6,), SPECIAL), arrays(t, (6,), SPECIAL))))
def test_nextafter_against_numpy(xy):
    x, y = xy
    expected = np.nextafter(x, y)
    for got in (xp.nextafter(hd.array(x), hd.array(y)), NEXTAFTER(hd.array(x), hd.array(y))):
        got = np.asarray(got)
        assert got.dtype == expected.dtype
        # Bitwise: signed zeros and the subnormal steps next to zero must agree.
        np.testing.assert_array_equal(got.view(f"u{got.itemsize}"),
                                      expected.view(f"u{got.itemsize}"))


def test_nextafter_edges_and_errors():
    x = np.float32([0.0, -0.0, 1.0, np.finfo(np.float32).max, 1.0])
    y = np.float32([1.0, -1.0, 1.0, np.inf, np.nan])
    got = np.asarray(xp.nextafter(hd.array(x), hd.array(y)))
    with np.errstate(over="ignore"):  # max toward inf steps to inf, as it should
        expected = np.nextafter(x, y)
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))
    with pytest.raises(TypeError, match="nextafter.*real floating"):
        xp.nextafter(hd.array(np.complex64([1])), hd.array(np.complex64([2])))


LOGICAL_XOR = hd.compile(xp.logical_xor)


def test_logical_xor_and_truthiness():
    a, b = np.array([0, 1, 2, 0], np.int32), np.array([0, 0, 3, 5], np.int32)
    for f in (xp.logical_xor, LOGICAL_XOR):
        _same(f(hd.array(a), hd.array(b)), np.logical_xor(a, b))
    _same(xp.logical_and(hd.array(a), hd.array(b)), np.logical_and(a, b))
    _same(xp.logical_or(hd.array(a), hd.array(b)), np.logical_or(a, b))
    _same(xp.logical_not(hd.array(a)), np.logical_not(a))


TAKE = hd.compile(xp.take)
TAKE_ALONG = hd.compile(xp.take_along_axis)
DIFF = hd.compile(xp.diff)


@SETTINGS
@given(shapes(1, 3, min_side=1, max_side=4).flatmap(lambda s: st.tuples(
    arrays(hd.int32, s, Domain(lo=-50, hi=50)), st.integers(-len(s), len(s) - 1),
    st.lists(st.integers(-9, 9), min_size=0, max_size=5))))
def test_take_against_numpy(case):
    x, axis, raw = case
    n = x.shape[axis]
    idx = np.int64([i % n - (n if i < 0 else 0) for i in raw])  # in range, some negative
    expected = np.take(x, idx, axis=axis)
    for f in (xp.take, TAKE):
        _same(f(hd.array(x), hd.array(idx), axis=axis), expected)


@SETTINGS
@given(shapes(1, 3, min_side=1, max_side=4).flatmap(lambda s: st.tuples(
    arrays(hd.float32, s, Domain(lo=-5, hi=5)), st.integers(-len(s), len(s) - 1),
    st.integers(0, 4), st.randoms())))
def test_take_along_axis_against_numpy(case):
    x, axis, m, rng = case
    shape = list(x.shape)
    shape[axis] = m
    idx = np.array([rng.randrange(x.shape[axis]) for _ in range(int(np.prod(shape)))],
                   np.int64).reshape(shape)
    expected = np.take_along_axis(x, idx, axis=axis)
    for f in (xp.take_along_axis, TAKE_ALONG):
        _same(f(hd.array(x), hd.array(idx), axis=axis), expected)


def test_take_errors():
    x = hd.array(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="take: axis is required"):
        xp.take(x, hd.array(np.int64([0])))
    with pytest.raises(IndexError, match="take: indices must be one-dimensional"):
        xp.take(x, hd.array(np.int64([[0]])), axis=0)
    with pytest.raises(ValueError, match="take_along_axis.*rank"):
        xp.take_along_axis(x, hd.array(np.int64([0])), axis=0)


@SETTINGS
@given(shapes(1, 3, min_side=0, max_side=5).flatmap(lambda s: st.tuples(
    arrays(hd.int64, s, Domain(lo=-9, hi=9)), st.integers(-len(s), len(s) - 1),
    st.integers(0, 3), st.booleans())))
def test_diff_against_numpy(case):
    x, axis, n, edges = case
    kw = {"prepend": 1, "append": 2} if edges else {}
    expected = np.diff(x, n=n, axis=axis, **kw)
    for f in (xp.diff, DIFF):
        _same(f(hd.array(x), axis=axis, n=n, **kw), expected)
    b = x > 0
    _same(xp.diff(hd.array(b), axis=axis), np.diff(b, axis=axis))


def test_conformance_fixes():
    """Behaviours the array-api-tests run asked for, against numpy."""
    u = np.uint8([0, 3, 255])
    _same(xp.abs(hd.array(u)), np.abs(u))
    _same(xp.sign(hd.array(u)), np.sign(u))
    for f in (xp.floor, xp.ceil):
        _same(f(hd.array(u)), u)
    _same(xp.isfinite(hd.array(u)), np.isfinite(u))
    f = np.float32([-0.0, 0.0, -2.5, np.nan])
    _same(xp.sign(hd.array(f)), np.float32([0.0, 0.0, -1.0, np.nan]))
    assert not np.signbit(np.asarray(xp.sign(hd.array(f)))[0])  # sign(-0.0) is +0
    z = np.complex64([0, 3 + 4j, complex(np.inf, np.nan), 1e30 + 1e30j])
    _same(xp.abs(hd.array(z)), np.abs(z))
    _same(xp.sign(hd.array(z[:2])), np.sign(z[:2]))
    _same(xp.isfinite(hd.array(z)), np.isfinite(z))
    # broadcast_arrays keeps each element type (no promotion).
    a, b = xp.broadcast_arrays(hd.array(np.int8([[1], [2]])), hd.array(np.uint64([1, 2])))
    assert (a.dtype, b.dtype, a.shape, b.shape) == (hd.int8, hd.uint64, (2, 2), (2, 2))
    _same(xp.sum(hd.array(np.int8([100, 100])), dtype=xp.int8), np.int8(-56))
    _same(xp.prod(hd.array(np.float32([2, 3])), dtype=xp.float64), np.float64(6))
    _same(xp.zeros(2, device=xp.__array_namespace_info__().default_device()), np.zeros(2))
    with pytest.raises(ValueError, match="zeros: device="):
        xp.zeros(2, device=hd.array([1.0]).device.__class__("tpu", 1))
    x = hd.array(np.int32([7, -7]))
    _same(x // 2, np.int32([3, -4]))
    _same(x >> 1, np.int32([3, -4]))
    _same(1 << hd.array(np.int32([3])), np.int32([8]))
    assert complex(hd.array(np.complex64(1 + 2j))) == 1 + 2j


# -- DLPack --------------------------------------------------------------------------



def _address(a) -> int:
    return np.from_dlpack(a).ctypes.data


@pytest.mark.compat
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.complex128, np.bool_])
def test_dlpack_export_is_a_copy_unless_copy_false_then_read_only(dtype):
    x = hd.array(np.arange(6).reshape(2, 3).astype(dtype))
    assert x.__dlpack_device__()[1] == 0
    # numpy reads host memory only: device="cpu" asks for it (a GPU array moves there).
    _same(np.from_dlpack(x, device="cpu"), np.arange(6).reshape(2, 3).astype(dtype))
    if not ON_CPU:  # moving it to the host is a copy: copy=False cannot be honoured
        with pytest.raises(BufferError, match="copy=False; moving it there is a copy"):
            np.from_dlpack(x, device="cpu", copy=False)
        return
    assert _address(x) != x._buf.unsafe_buffer_pointer()  # the consumer owns a copy
    shared = np.from_dlpack(x, copy=False)
    assert shared.ctypes.data == x._buf.unsafe_buffer_pointer() and not shared.flags.writeable


@pytest.mark.compat
def test_dlpack_export_to_another_device_is_the_transfer_or_a_clear_buffer_error():
    x = hd.array(np.float32([1, 2]))
    here = tuple(int(v) for v in x.__dlpack_device__())
    other = (2, 0) if here[0] == 1 else (1, 0)  # CUDA from the CPU, the host from a GPU
    with pytest.raises(BufferError, match=r"consumer asks for \((1: CPU|2: CUDA), 0\) with "
                                          r"copy=False; moving it there is a copy"):
        x.__dlpack__(dl_device=other, copy=False)
    if here[0] == 1:  # no CUDA backend here: said so, as the protocol's BufferError
        with pytest.raises(BufferError, match=r"cannot move the array from DLPack device "
                                              r"\(1: CPU, 0\) to \(2: CUDA, 0\)"):
            x.__dlpack__(dl_device=other)
    else:
        np.testing.assert_array_equal(np.from_dlpack(x, device="cpu"), [1, 2])


def test_from_dlpack_copy_false_of_memory_on_another_device_says_why():
    class OnCuda:  # a producer whose memory a CPU buffer cannot alias (nor a GPU the host's)
        def __dlpack_device__(self):
            return (2, 0) if ON_CPU else (1, 0)

        def __dlpack__(self, **kwargs):
            raise BufferError("no capsule")

    with pytest.raises(BufferError, match="a buffer there cannot alias it; copy=None or True"):
        xp.from_dlpack(OnCuda(), copy=False)


@pytest.mark.compat
def test_dlpack_bfloat16_through_jax():
    # numpy's DLPack import has no bfloat16; jax's has.
    import jax.numpy as jnp

    x = hd.array(np.float32([1.5, -2]).astype(ml_dtypes.bfloat16))
    back = jnp.from_dlpack(x)
    assert back.dtype == jnp.bfloat16
    y = xp.from_dlpack(back)
    assert y.dtype is hd.bfloat16
    np.testing.assert_array_equal(np.asarray(y, np.float32), [1.5, -2])


@pytest.mark.compat
def test_from_dlpack_of_numpy_copies_unless_copy_false():
    host = aligned(np.arange(12, dtype=np.float32).reshape(3, 4))
    if ON_CPU:
        x = xp.from_dlpack(host, copy=False)
        assert _address_of_buffer(x) == host.ctypes.data  # aliased, as asked
        _same(x, host)
    else:  # a GPU buffer cannot alias host memory
        with pytest.raises(BufferError, match="cannot alias it; copy=None or True copies it"):
            xp.from_dlpack(host, copy=False)
    for copy in (None, True):  # numpy memory is writable: an alias would change with it
        y = xp.from_dlpack(host, copy=copy)
        assert _address_of_buffer(y) != host.ctypes.data
        host[0, 0] = 100
        assert float(y[0, 0]) == 0
        host[0, 0] = 0
    # Strided views need a copy; copy=False refuses it clearly.
    _same(xp.from_dlpack(host[:, ::2]), host[:, ::2])
    with pytest.raises(BufferError, match="from_dlpack"):
        xp.from_dlpack(host[:, ::2], copy=False)
    with pytest.raises(TypeError, match="DLPack"):
        xp.from_dlpack([1, 2])


def _address_of_buffer(a) -> int:
    return a._buf.unsafe_buffer_pointer()


@pytest.mark.compat
def test_dlpack_round_trips_with_jax_and_hlodsl():
    import jax.numpy as jnp

    j = jnp.arange(5, dtype=jnp.int32)
    x = xp.from_dlpack(j)
    _same(x, np.arange(5, dtype=np.int32))
    assert _address_of_buffer(x) == j.unsafe_buffer_pointer()  # jax's buffer: immutable, shared
    back = jnp.from_dlpack(x)
    _same(back, np.arange(5, dtype=np.int32))
    z = xp.from_dlpack(x)
    assert _address_of_buffer(z) == _address_of_buffer(x)  # an hlodsl array is immutable too
    _same(z + 1, np.arange(1, 6, dtype=np.int32))  # an imported buffer feeds ops


def test_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    x = xp.from_dlpack(t)
    _same(x, t.numpy())
    back = torch.utils.dlpack.from_dlpack(x)  # on the array's device (a GPU's: cuda:0)
    np.testing.assert_array_equal(back.cpu().numpy(), t.numpy())
    # Neither side sees the other's writes: torch tensors are mutable, hlodsl arrays not.
    t[0, 0] = 100
    back[0, 1] = 100
    _same(x, np.arange(6, dtype=np.float32).reshape(2, 3))


@pytest.mark.compat
def test_dlpack_legacy_version_request():
    # A consumer that only knows DLPack < 1.0 gets the unversioned capsule.
    x = hd.array(np.float32([1, 2]))
    capsule = x.__dlpack__(max_version=(0, 0))  # jax itself refuses versions below 0.5
    assert "dltensor" in repr(capsule) and "versioned" not in repr(capsule)


def test_dlpack_of_symbolic_array_is_a_staging_error():
    with pytest.raises(StagingError, match="__dlpack__"):
        hd.compile(lambda a: a.__dlpack__())(hd.array([1.0]))
