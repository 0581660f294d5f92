"""Special functions (``scipy.special``'s names): ``xp.special``, built on hlodsl's special ops.

Beyond the array API, as ``scipy.special`` is beyond numpy. Each is an
elementwise generic with numpy's broadcasting; integer and bool operands become
float64 (numpy's rule for float-only functions), complex ones are refused (the
ops are real). ``erf``, ``erfc``, ``erfinv``, ``lgamma`` and ``digamma`` are
also ``xp.erf``, ... . Derivatives, ``vmap`` and ``hd.compile`` go through
the ops (``gammainc``/``gammaincc`` in both arguments).

>>> import numpy as np, hlodsl as hd
>>> import hlodsl.stdlib as xp
>>> xp.special.erfc(hd.array(np.float64([0.0, 3.0])))
hlodsl.Array[float64, (2,)]([1.0000000e+00, 2.2090497e-05])
>>> xp.special.gammaln(hd.array(np.float32([0.5, 4.0])))
hlodsl.Array[float32, (2,)]([0.5723649, 1.7917595])
>>> xp.special.gammainc(2.0, hd.array(np.float64([1.0, 3.0])))
hlodsl.Array[float64, (2,)]([0.26424112, 0.80085173])
"""

from hlodsl import ops
from hlodsl.arrays.dtypes import Bool, Floating, Integer

from .broadcasting import broadcast_arrays
from .elementwise import _generic, check_kinds
from .elementwise_more import _float
from .promotion import ArrayLike

__all__ = [
    "digamma",
    "erf",
    "erfc",
    "erfinv",
    "gammainc",
    "gammaincc",
    "gammaln",
    "i0e",
    "i1e",
    "lgamma",
    "psi",
]

_REAL = (Bool, Integer, Floating)
_ALLOWED = "real (float, integer or bool)"


def _unary(name: str, op, doc: str):
    def impl(x: ArrayLike):
        check_kinds(name, (x,), _REAL, _ALLOWED)
        (x,) = broadcast_arrays(x, what=name)
        return op(*_float(x))

    return _generic(name, impl, doc)


def _binary(name: str, op, doc: str):
    def impl(x1: ArrayLike, x2: ArrayLike):
        check_kinds(name, (x1, x2), _REAL, _ALLOWED)
        return op(*_float(*broadcast_arrays(x1, x2, what=name)))

    return _generic(name, impl, doc)


erf = _unary("erf", ops.Erf(), "The error function, 2/sqrt(pi) * integral of exp(-t^2) "
                               "from 0 to x.")
erfc = _unary("erfc", ops.Erfc(), "1 - erf(x), accurate where erf(x) is near 1.")
erfinv = _unary("erfinv", ops.ErfInv(), "The inverse of erf on [-1, 1] (+-inf at +-1, NaN "
                                        "outside).")
lgamma = _unary("lgamma", ops.Lgamma(), "log|Gamma(x)| (+inf at 0, -1, -2, ...).")
gammaln = lgamma
digamma = _unary("digamma", ops.Digamma(), "d/dx log Gamma(x) (NaN at 0, -1, -2, ...).")
psi = digamma
gammainc = _binary("gammainc", ops.Igamma(), "P(a, x): the regularized lower incomplete "
                                             "gamma function.")
gammaincc = _binary("gammaincc", ops.Igammac(), "Q(a, x) = 1 - P(a, x): the regularized upper "
                                                "incomplete gamma function.")
i0e = _unary("i0e", ops.BesselI0e(), "exp(-|x|) I0(x): the scaled modified Bessel function "
                                     "of order 0.")
i1e = _unary("i1e", ops.BesselI1e(), "exp(-|x|) I1(x): the scaled modified Bessel function "
                                     "of order 1.")
