"""``from_jax``: a jax function, lowered by jax, imported as an hlodsl function.

The bridge lets jax lower the user's function (``jax.jit(fn, keep_unused=True)``
on arrays like the examples, in ``hlodsl.runtime``) and imports the HLO with
``import_hlo``. The result takes and returns the same structures as ``fn``
(pytrees of arrays, flattened and rebuilt as jax does); everything it computes
is hlodsl ops, so ``hd.vmap``, ``hd.compile`` and its ``memory_limit`` apply
to it.

Its derivatives are jax's. The lowered text keeps none of what jax knows
about them (``stop_gradient`` lowers to nothing, a ``custom_vjp`` to its
primal body, ``erfc`` to an expansion whose per-instruction derivative is NaN
at 0), so the imported function is its own ``custom_vjp`` and ``custom_jvp``
whose rules are jax's derivative of ``fn``, lowered by jax when first needed
and imported the same way (``hlodsl.runtime.jax_derivatives``); those are
differentiable again, so higher orders are jax's too. A derivative jax refuses
(forward mode through a ``custom_vjp``, reverse mode through a ``while_loop``)
raises ``HloImportError`` with jax's message.

>>> import numpy as np, hlodsl as hd, jax, jax.numpy as jnp
>>> f = hd.from_jax(lambda p, x: jnp.tanh(p["w"] @ x), {"w": np.ones((2, 3), np.float32)},
...                 np.ones(3, np.float32))
>>> f({"w": hd.array(np.ones((2, 3), np.float32))}, hd.array(np.float32([0, 0, 1])))
hlodsl.Array[float32, (2,)]([0.7615942, 0.7615942])
>>> g = hd.from_jax(lambda x: jnp.sum(x * jax.lax.stop_gradient(x)), np.float32([1, 2, 3]))
>>> hd.grad(g)(hd.array(np.float32([1, 2, 3])))                # jax.grad's answer
hlodsl.Array[float32, (3,)]([1., 2., 3.])
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from hlodsl import runtime
from hlodsl.context import STATE
from hlodsl.ir.target import platform_name
from hlodsl.settings import staging_share

from .custom import custom_jvp, custom_vjp
from .hlo_import import HloImportError, ImportedFunction, import_hlo
from .traces import Tape

__all__ = ["JaxFunction", "from_jax"]


class JaxFunction:
    """A jax function imported into hlodsl: call it with ``fn``'s argument structure."""

    def __init__(self, fn: Callable, imported: ImportedFunction, flatten, unflatten,
                 flat: _Flat | None = None):
        self.fn, self.imported = fn, imported
        self._flatten, self._unflatten = flatten, unflatten
        self._flat = flat
        self.__name__ = self.__qualname__ = getattr(fn, "__name__", "jax_function")

    @property
    def text(self) -> str:
        """The HLO text jax lowered ``fn`` to (what was imported)."""
        return self.imported.text

    def __call__(self, *args):
        flat = self._flatten(args)
        if self._flat is None:
            return self._unflatten(self.imported(*flat))
        return self._unflatten(self._flat(*flat))

    def __repr__(self) -> str:
        return f"from_jax({self.__name__}: {self.imported!r})"


class _Flat:
    """A flat jax function (arrays in, a list of arrays out), imported, with jax's rules.

    ``__call__`` returns the results as a tuple. Derivative programs are lowered when a
    rule first needs them, each a ``_Flat`` of its own (so it is differentiable again).
    """

    def __init__(self, fn: Callable, specs: list, name: str, text: str | None = None,
                 out_specs: list | None = None, user_name: str | None = None,
                 platform: str | None = None):
        if text is None:
            text, out_specs = runtime.lower_flat(fn, specs, platform)
        self.fn, self.specs, self.out_specs, self.name = fn, specs, out_specs, name
        self.platform = platform  # jax's name of the platform its programs are lowered for
        self.user_name = user_name or name
        self.imported = import_hlo(text, name)
        self._derived: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._moving = [i for i, s in enumerate(specs) if runtime.inexact(s)]
        self._moving_out = [k for k, s in enumerate(out_specs) if runtime.inexact(s)]
        primal = custom_vjp(self._primal).defvjp(self._fwd, self._bwd)
        primal.__name__ = name
        self._call = custom_jvp(primal).defjvp(self._jvp)
        self._call.__name__ = name

    def __call__(self, *leaves) -> tuple:
        return self._call(*leaves)

    def _primal(self, *leaves) -> tuple:
        out = self.imported(*leaves)
        return out if isinstance(out, tuple) else (out,)

    # -- jax's derivative programs, lowered once, when first needed ----------------------

    def _program(self, kind: str):
        # The share before the lock: whoever holds the lock stages (settings.staging_share).
        with staging_share(), self._lock:
            if kind not in self._derived:
                self._derived[kind] = self._lower(kind)
            return self._derived[kind]

    def _lower(self, kind: str):
        make = {"jvp": runtime.jvp_program, "vjp": runtime.vjp_program,
                "residual": runtime.residual_programs}[kind]
        try:
            made = runtime.lower_derivative(make, self.fn, self.specs, self.out_specs,
                                            self.platform)
        except runtime.JaxDerivativeError as e:
            mode = "forward mode (hd.jvp)" if kind == "jvp" else "reverse mode (hd.grad, hd.vjp)"
            raise HloImportError(f"from_jax({self.user_name}): jax cannot differentiate "
                                 f"{self.user_name} in {mode}: {e}") from None
        return [_Flat(fn, sp, f"{kind}_{self.name}", text, out, self.user_name, self.platform)
                for fn, sp, text, out in made]

    # -- the rules ------------------------------------------------------------------------

    def _fwd(self, *leaves):
        # A lone reverse pass (hd.grad, not of a derivative, not under hd.jvp) keeps jax's
        # residuals; otherwise the backward program computes the forward pass again from
        # the arguments, which outer derivatives follow.
        if len(STATE.traces) == 1 and isinstance(STATE.traces[0], Tape):
            fwd, _ = self._program("residual")
            outs = fwd(*leaves)
            n = len(self.out_specs)
            return outs[:n], ("residuals", outs[n:])
        return self._primal(*leaves), ("arguments", leaves)

    def _bwd(self, residuals, ct) -> tuple:
        kind, values = residuals
        cts = [ct[k] for k in self._moving_out]
        if kind == "residuals":
            got = self._program("residual")[1](*values, *cts) if self._moving else ()
        else:
            got = self._program("vjp")[0](*values, *cts) if self._moving else ()
        out: list = [None] * len(self.specs)
        for i, c in zip(self._moving, got):
            out[i] = c
        return tuple(out)

    def _jvp(self, primals, tangents):
        ts = [tangents[i] for i in self._moving]
        got = self._program("jvp")[0](*primals, *ts)
        n = len(self.out_specs)
        outs, t_some = got[:n], iter(got[n:])
        return tuple(outs), tuple(next(t_some) if k in self._moving_out else None
                                  for k in range(n))


def from_jax(fn: Callable, *example_args: Any, platform: str | None = None) -> JaxFunction:
    """``fn`` (a jax function) lowered on arrays like ``example_args`` and imported.

    Args:
        fn: a function jax can ``jit``.
        example_args: arrays (numpy, jax or hlodsl) or pytrees of them, giving
            the shapes and element types the import is for.
        platform: the platform jax lowers ``fn`` for (``"cpu"`` or ``"gpu"``;
            default: the runtime's). jax lowers for a GPU without one
            (``lowering_platforms=("cuda",)``): ``platform="gpu"`` imports the
            program with jax's cuSOLVER calls, to look at (``hd.code_hlo(...,
            platform="gpu")``) or export, not to run on a CPU.

    Returns:
        A ``JaxFunction``: called with arguments structured as ``example_args``
        (hlodsl arrays, or symbolic ones inside staging), it returns ``fn``'s
        output structure of hlodsl arrays. ``hd.grad``, ``hd.jvp`` and their
        compositions of it are jax's own derivatives of ``fn``.
    """
    jax_platform = None if platform is None else \
        {"cpu": "cpu", "gpu": "cuda"}[platform_name(platform, "from_jax: platform")]
    flat_fn, specs, flatten, unflatten = runtime.flat_jax(fn, example_args)
    text, out_specs = runtime.lower_flat(flat_fn, specs, jax_platform)
    shown = getattr(fn, "__name__", "jax_function")
    name = shown if shown.isidentifier() else "jax_function"
    flat = _Flat(flat_fn, specs, name, text, out_specs, shown, jax_platform)
    return JaxFunction(fn, flat.imported, flatten, unflatten, flat)
