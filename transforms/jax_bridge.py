"""``from_jax``: a jax function, lowered by jax, imported as an hlodsl function.

The bridge lets jax lower the user's function (``jax.jit(fn, keep_unused=True)``
on arrays like the examples, in ``hlodsl.runtime``) and imports the HLO with
``import_hlo``. The result takes and returns the same structures as ``fn``
(pytrees of arrays, flattened and rebuilt as jax does); everything it computes
is hlodsl ops, so ``hd.grad``, ``hd.vmap``, ``hd.compile`` and its
``memory_limit`` apply to it.

>>> import numpy as np, hlodsl as hd, jax.numpy as jnp
>>> f = hd.from_jax(lambda p, x: jnp.tanh(p["w"] @ x), {"w": np.ones((2, 3), np.float32)},
...                 np.ones(3, np.float32))
>>> f({"w": hd.array(np.ones((2, 3), np.float32))}, hd.array(np.float32([0, 0, 1])))
hlodsl.Array[float32, (2,)]([0.7615942, 0.7615942])
"""

from __future__ import annotations

from typing import Any, Callable

from hlodsl import runtime
from hlodsl.ir.target import platform_name

from .hlo_import import ImportedFunction, import_hlo

__all__ = ["JaxFunction", "from_jax"]


class JaxFunction:
    """A jax function imported into hlodsl: call it with ``fn``'s argument structure."""

    def __init__(self, fn: Callable, imported: ImportedFunction, flatten, unflatten):
        self.fn, self.imported = fn, imported
        self._flatten, self._unflatten = flatten, unflatten
        self.__name__ = self.__qualname__ = getattr(fn, "__name__", "jax_function")

    @property
    def text(self) -> str:
        """The HLO text jax lowered ``fn`` to (what was imported)."""
        return self.imported.text

    def __call__(self, *args):
        return self._unflatten(self.imported(*self._flatten(args)))

    def __repr__(self) -> str:
        return f"from_jax({self.__name__}: {self.imported!r})"


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
        output structure of hlodsl arrays.
    """
    jax_platform = None if platform is None else \
        {"cpu": "cpu", "gpu": "cuda"}[platform_name(platform, "from_jax: platform")]
    text, flatten, unflatten = runtime.lower_jax(fn, example_args, jax_platform)
    name = getattr(fn, "__name__", "jax_function")
    name = name if name.isidentifier() else "jax_function"
    return JaxFunction(fn, import_hlo(text, name), flatten, unflatten)
