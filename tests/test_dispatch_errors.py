"""A call no method of a generic takes is a TypeError naming the argument types.

numpy and the array API raise ``TypeError`` for operands of the wrong type, and
users catch that; hlodsl's generics raise ``hd.NoMethodError``, which is one
(and is also plum's ``NotFoundLookupError``, for code written against plum).
"""

import operator
import pickle

import numpy as np
import plum
import pytest

import hlodsl as hd
import hlodsl.stdlib as xp
from generics import Opaque, no_method_arities, public_generics


F3 = hd.array(np.float32([1, 2, 3]))
GENERICS = public_generics()
#: Generics with a method for any number of arguments of any type (``*args``), which
#: check their arguments themselves: no call is a "no method" case.
TAKE_ANYTHING = {"meshgrid", "result_type"}


@pytest.mark.parametrize("bad, shown", [(None, "NoneType"), ("a", "str"),
                                        ([[1, 2], [3]], "list"), (Opaque(), "Opaque")])
def test_add_of_an_array_and_a_wrong_type_is_a_type_error_naming_both_types(bad, shown):
    with pytest.raises(TypeError) as info:
        xp.add(F3, bad)
    message = str(info.value)
    assert isinstance(info.value, hd.NoMethodError)
    assert message.startswith("add: ") and "f32[3]" in message and shown in message
    assert "add(x: Array" in message  # what add takes instead
    assert __file__ in message  # the user's line


def test_no_method_is_still_plums_lookup_error_and_pickles():
    with pytest.raises(plum.NotFoundLookupError) as info:
        xp.exp("a")
    assert info.value.f_name == "exp" and info.value.target == ("a",)
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is hd.NoMethodError and str(again) == str(info.value)


def test_the_sweep_covers_the_namespace():
    assert {"add", "sum", "matmul", "inv", "fft", "cross_entropy", "where", "take"} <= set(GENERICS)
    assert len(GENERICS) > 150
    assert {n for n, g in GENERICS.items() if not no_method_arities(g)} == TAKE_ANYTHING


@pytest.mark.parametrize("name", sorted(GENERICS))
def test_every_public_generic_refuses_arguments_it_has_no_method_for_with_a_type_error(name):
    generic = GENERICS[name]
    for k in no_method_arities(generic):
        with pytest.raises(TypeError) as info:
            generic(*(Opaque(),) * k)
        message = str(info.value)
        assert isinstance(info.value, hd.NoMethodError), message
        assert message.startswith(f"{name}: no method for argument types ("), message
        assert message.count("Opaque") >= k, message


@pytest.mark.parametrize("rule", [hd.vjp_rule, hd.jvp_rule, hd.batch_rule],
                         ids=lambda g: g.__name__)
def test_the_cores_rule_generics_refuse_what_is_not_an_op_with_a_type_error(rule):
    assert no_method_arities(rule)
    for k in no_method_arities(rule):
        with pytest.raises(hd.NoMethodError, match=rf"^{rule.__name__}: no method for argument"):
            rule(*(Opaque(),) * k)


@pytest.mark.parametrize("name", sorted(TAKE_ANYTHING))
def test_generics_that_take_anything_still_refuse_an_opaque_value_with_a_type_error(name):
    with pytest.raises(TypeError, match=f"{name}|asarray"):
        GENERICS[name](Opaque())


BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
          operator.mod, operator.pow, operator.matmul, operator.and_, operator.or_,
          operator.xor, operator.lshift, operator.rshift, operator.lt, operator.le,
          operator.gt, operator.ge]


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("bad", [None, "a", Opaque()], ids=["None", "str", "Opaque"])
def test_array_operators_refuse_a_wrong_type_with_a_type_error_naming_it(op, bad):
    calls = [lambda: op(F3, bad), lambda: op(bad, F3)]
    if op is operator.mod and isinstance(bad, str):
        calls.pop()  # "a" % x is Python's string formatting, and x a mapping to it
    for call in calls:
        with pytest.raises(TypeError, match=type(bad).__name__):
            call()


def test_a_user_generic_gets_the_same_no_method_error():
    @hd.dispatch
    def scale_twice(A: hd.Matrix, k: int):
        return A * k * 2

    with pytest.raises(hd.NoMethodError, match=r"scale_twice: no method for argument types "
                                                r"\(f32\[3\], int\)") as info:
        scale_twice(F3, 2)
    assert "scale_twice(A: Array[ElementType, (None, None)], k: int)" in str(info.value)


def test_a_user_method_for_any_arguments_wins_over_the_no_method_error():
    @hd.dispatch
    def anything_goes_probe(*args):
        return len(args)

    @hd.dispatch
    def anything_goes_probe(x: int, *rest):  # noqa: F811  (as general, after the first)
        return -1

    assert anything_goes_probe(Opaque(), Opaque()) == 2
    assert anything_goes_probe(1, Opaque()) == -1
    assert anything_goes_probe() == 0


def test_an_abstract_generic_says_it_has_no_methods_yet():
    @hd.dispatch.abstract
    def not_yet_probe(x):
        """A generic declared before its methods."""

    with pytest.raises(hd.NoMethodError, match="not_yet_probe has no methods yet"):
        not_yet_probe(F3)
