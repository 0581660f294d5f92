"""Every registered op has a derivative rule or is declared nondifferentiable.

The rules themselves are tested against jax and finite differences in the
other test_autodiff_*.py files; this test keeps a new op from arriving
without one (its author gets the list of ops that lack a rule).
"""

from hlodsl.ir.rules import has_derivative
from hlodsl.ops._catalog import library_ops
from hlodsl.ir.structural import Constant, GetTupleElement, Parameter, Tuple

#: Ops never called on arrays by users (staging creates them), so never observed.
STRUCTURAL = {Parameter, Constant, Tuple, GetTupleElement}


def test_every_library_op_has_a_derivative_rule_or_is_declared_nondifferentiable():
    missing = sorted(cls.__name__ for cls in library_ops().values()
                     if cls not in STRUCTURAL and not has_derivative(cls))
    assert not missing, f"ops without vjp_rule/jvp_rule or nondifferentiable(): {missing}"


def test_every_rule_has_a_name_of_its_own():
    """Rules show up in tracebacks and plum's ambiguity errors: no function called ``_``."""
    from hlodsl.ir.rules import batch_rule, jvp_rule, vjp_rule

    unnamed = sorted(f"{generic.__name__} for {m.signature.types[0].__name__}"
                     for generic in (vjp_rule, jvp_rule, batch_rule) for m in generic.methods
                     if m.implementation.__module__.startswith("hlodsl.")  # not tests' own
                     and m.implementation.__name__ in ("_", "<lambda>", "rule"))
    assert not unnamed, f"rules without a name of their own: {unnamed}"
