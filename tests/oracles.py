"""Oracles that work around crashes of the jaxlib installed here.

A test oracle that aborts the process loses the whole test run, not one test:
each helper here computes the same value by another jax route.
"""

from jax import lax


def reduce_window(operand, init, computation, window, strides, padding,
                  base_dilation=None, window_dilation=None):
    """``lax.reduce_window``, with negative padding applied first by ``lax.pad``.

    XLA's algebraic simplifier (jaxlib 0.10.2) aborts the process (a failed
    CHECK: "reduce-window s32[4,1] vs add s32[5,1]") on a window of size 1 with
    negative padding, e.g. window (1,), padding ((0, -1),). The reduce-window
    base-dilates its operand and pads it with ``init`` (negative padding crops);
    ``lax.pad`` with interior ``base - 1`` and the negative edges does the same
    to the operand, so the window that follows needs only the positive edges.
    Operands and inits may be tuples (a variadic reduce-window).

    >>> import numpy as np
    >>> reduce_window(np.arange(5.0), 0.0, lax.add, (1,), (1,), ((0, -1),)).tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    rank = len(window)
    base = base_dilation or (1,) * rank
    wdil = window_dilation or (1,) * rank
    variadic = isinstance(operand, tuple)
    operands, inits = (operand, init) if variadic else ((operand,), (init,))
    cut = [(min(lo, 0), min(hi, 0), b - 1) for (lo, hi), b in zip(padding, base)]
    operands = tuple(lax.pad(x, lax.convert_element_type(i, x.dtype), cut)
                     for x, i in zip(operands, inits))
    rest = tuple((max(lo, 0), max(hi, 0)) for lo, hi in padding)
    return lax.reduce_window(operands if variadic else operands[0], init, computation,
                             window, strides, rest, None, wdil)
