"""The paper's two examples, end to end: ``python -m hlodsl.demo``.

Stages ``dense`` and ``softmax`` (section 7.1 of the XLA.jl paper), prints the
staged program (``code_typed``) and the HLO module as emitted and as XLA
optimises it (``code_hlo``), runs both compiled and compares with numpy.
"""

from __future__ import annotations

import sys

import numpy as np

import hlodsl as hd
from hlodsl.stdlib import exp, sum

# The examples below are user code: errors and HLO metadata point at them.
__hlodsl_user_code__ = True


def dense(W, x, b):
    return W @ x + b


def softmax(xs):
    return exp(xs) / sum(exp(xs))


def _section(title: str) -> None:
    print(f"\n{'=' * 72}\n{title}\n{'=' * 72}")


def main() -> int:
    rng = np.random.default_rng(0)
    W_np = rng.standard_normal((10, 10)).astype(np.float32)
    x_np = rng.standard_normal(10).astype(np.float32)
    b_np = rng.standard_normal(10).astype(np.float32)
    W, x, b = hd.array(W_np), hd.array(x_np), hd.array(b_np)

    print(f"hlodsl {hd.__version__} on {hd.runtime.platform()}")
    ok = True
    for fn, args, expected in [
        (dense, (W, x, b), W_np @ x_np + b_np),
        (softmax, (x,), np.exp(x_np) / np.exp(x_np).sum()),
    ]:
        _section(f"code_typed({fn.__name__}, ...)")
        print(hd.code_typed(fn, *args))
        _section(f"code_hlo({fn.__name__}, ...)  -- as emitted")
        print(hd.code_hlo(fn, *args))
        _section(f"code_hlo({fn.__name__}, ..., optimize=True)  -- after XLA's passes")
        print(hd.code_hlo(fn, *args, optimize=True))
        compiled = hd.compile(fn)
        result = np.asarray(compiled(*args))
        err = float(np.max(np.abs(result - expected)))
        good = np.allclose(result, expected, rtol=1e-5, atol=1e-6)
        ok &= good
        _section(f"run {fn.__name__}")
        print(f"hlodsl : {np.array2string(result, precision=5)}")
        print(f"numpy  : {np.array2string(expected, precision=5)}")
        print(f"max |hlodsl - numpy| = {err:.3g}  ->  {'OK' if good else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
