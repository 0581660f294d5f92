"""Big-endian numpy data is taken as numpy and jax take it: its values, in native order.

Byte order is how numpy stores a value, not which value it is: ``np.array([1.5], '>f4')``
is float32 1.5 wherever an array enters hlodsl (``hd.array``, ``asarray``, an operand
of a stdlib function or operator, an argument of a compiled function, a dtype).
"""

import numpy as np
import pytest

import hlodsl as hd
import hlodsl.stdlib as xp

BIG_ENDIAN = [">f2", ">f4", ">f8", ">i2", ">i4", ">i8", ">u2", ">u4", ">u8", ">c8", ">c16"]


def _big_endian(code: str, shape) -> np.ndarray:
    values = np.arange(1, 1 + int(np.prod(shape)), dtype=np.dtype(code).newbyteorder("="))
    return values.reshape(shape).astype(code)


def _check(out, expected: np.ndarray):
    """``out`` holds ``expected``'s values, with ``expected``'s type in native order."""
    native = expected.dtype.newbyteorder("=")
    assert out.dtype is hd.element_type(native) and out.shape == expected.shape
    result = np.asarray(out)
    assert result.dtype == native and result.dtype.isnative
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("code", BIG_ENDIAN)
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_array_of_big_endian_data_has_its_values(code, shape):
    _check(hd.array(_big_endian(code, shape)), _big_endian(code, shape))


def test_strided_big_endian_data_and_a_later_write_to_it():
    host = _big_endian(">f4", (3, 4))
    view = host[:, ::2]
    x = hd.array(view)
    expected = view.copy()
    host[:] = -1  # the array is a value: the source changing later changes nothing
    _check(x, expected)


def test_big_endian_operands_of_stdlib_functions_operators_and_compiled_functions():
    be = np.array([1.5, 2.5], ">f4")
    le = be.astype("<f4")
    x = hd.array(np.float32([1, 2]))
    for got, want in [(xp.asarray(be), le), (xp.add(x, be), le + 1 + [0, 1]),
                      (x + be, np.asarray(x) + le), (be * x, le * np.asarray(x)),
                      (xp.where(np.array([True, False]), be, x), np.where([True, False], le, np.asarray(x))),
                      (hd.compile(lambda a, b: a * b)(be, x), le * np.asarray(x)),
                      (x[np.array([1, 0], ">i8")], np.asarray(x)[[1, 0]])]:
        _check(got, np.asarray(want, np.float32))
    # a big-endian argument and a native one share a compile signature
    f = hd.compile(lambda a: a + 1)
    f(le)
    f(be)
    assert f.compiles == 1


def test_big_endian_dtypes_name_their_native_element_type():
    assert hd.element_type(">f4") is hd.float32 and hd.element_type(np.dtype(">i8")) is hd.int64
    _check(hd.array([1, 2], dtype=">f4"), np.float32([1, 2]))
    _check(xp.zeros(2, dtype=">f8"), np.zeros(2))
    _check(xp.astype(hd.array(np.float32([1.5, 2.5])), ">i4"), np.int32([1, 2]))


def test_structured_and_void_dtypes_are_still_refused_by_name():
    with pytest.raises(TypeError, match=r"array: numpy dtype .* is structured \(fields a, b\)"):
        hd.array(np.zeros(2, dtype=[("a", ">f4"), ("b", "<i4")]))
    with pytest.raises(TypeError, match=r"array: numpy dtype \|V4 has no XLA element type"):
        hd.array(np.zeros(2, dtype="V4"))


def test_from_dlpack_of_big_endian_data_says_what_to_do_instead():
    # numpy itself refuses to export it: DLPack carries native byte order only.
    with pytest.raises(BufferError, match=r"from_dlpack: .*byte order.*asarray\(x\)"):
        xp.from_dlpack(np.array([1.5], ">f4"))


def test_a_big_endian_constant_is_its_values_and_equals_the_native_one():
    from hlodsl.ir.structural import Constant

    be, le = np.array([1.5, -2.0], ">f4"), np.array([1.5, -2.0], "<f4")
    assert Constant(be) == Constant(le) and hash(Constant(be)) == hash(Constant(le))
    x = hd.array(np.float32([1, 2]))
    _check(hd.compile(lambda a: Constant(be)() + a)(x), le + np.float32([1, 2]))
