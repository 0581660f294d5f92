"""jax's own derivatives of a user's jax function, as jax functions to lower (``hd.from_jax``).

What jax lowers a function to keeps none of its derivative semantics:
``stop_gradient`` lowers to nothing, ``custom_vjp``/``custom_jvp`` to their
primal bodies, and the expansions of special functions (``erfc``) hold
branches whose per-instruction derivative is NaN. Only jax itself knows the
derivative it defines for the function. So ``hd.from_jax`` asks jax for it:
each function here wraps the user's flat function (arrays in, a list of
arrays out) in ``jax.jvp``/``jax.vjp``, for the bridge to lower and import
like the function itself. Only floating-point and complex arguments and
results carry derivatives; the others enter as constants of the trace and get
none (never jax's ``float0`` arrays).

>>> import numpy as np, jax, jax.numpy as jnp
>>> f = lambda x: [jnp.sum(x * jax.lax.stop_gradient(x))]
>>> vjp_fn, specs = vjp_program(f, jax_specs([np.float32([1, 2, 3])]))
>>> [np.asarray(c) for c in vjp_fn(np.float32([1, 2, 3]), np.float32(1))]
[array([1., 2., 3.], dtype=float32)]
"""

from __future__ import annotations

import functools

import jax
import numpy as np

from .jax_programs import jax_specs, lower_flat

__all__ = [
    "JaxDerivativeError",
    "inexact",
    "jvp_program",
    "lower_derivative",
    "residual_programs",
    "vjp_program",
]


class JaxDerivativeError(ValueError):
    """jax cannot take the derivative asked for (its own message says why)."""


def inexact(spec) -> bool:
    """Whether an array of ``spec``'s element type carries a derivative."""
    return bool(np.issubdtype(spec.dtype, np.inexact))


def _named(fn, prefix: str):
    def wrap(g):
        g = functools.wraps(fn)(g)
        g.__name__ = g.__qualname__ = f"{prefix}_{getattr(fn, '__name__', 'f')}"
        del g.__wrapped__  # jax would read fn's signature, not g's
        return g
    return wrap


def _split(flat_fn, specs: list, out_specs: list):
    """``flat_fn`` as a function of its inexact arguments (the others held) returning
    ``(inexact results, other results)``, and the positions of both."""
    moving = [i for i, s in enumerate(specs) if inexact(s)]
    moving_out = [k for k, s in enumerate(out_specs) if inexact(s)]

    def split(primals):
        def f(*xs):
            full = list(primals)
            for i, x in zip(moving, xs):
                full[i] = x
            outs = list(flat_fn(*full))
            return ([outs[k] for k in moving_out],
                    [o for k, o in enumerate(outs) if k not in moving_out])
        return f

    return split, moving, moving_out


def _merge(n: int, moving_out: list, inexact_outs, other_outs) -> list:
    outs, a, b = [None] * n, iter(inexact_outs), iter(other_outs)
    for k in range(n):
        outs[k] = next(a) if k in moving_out else next(b)
    return outs


def jvp_program(flat_fn, specs: list, out_specs: list | None = None):
    """``(jvp_fn, specs)``: ``jvp_fn(*primals, *tangents) -> [*results, *result tangents]``,
    tangents of the inexact arguments in, of the inexact results out."""
    out_specs = _out_specs(flat_fn, specs) if out_specs is None else out_specs
    split, moving, moving_out = _split(flat_fn, specs, out_specs)
    n = len(specs)

    @_named(flat_fn, "jvp")
    def jvp_fn(*primals_and_tangents):
        primals, tangents = primals_and_tangents[:n], primals_and_tangents[n:]
        outs, t_outs, others = jax.jvp(split(primals), tuple(primals[i] for i in moving),
                                       tuple(tangents), has_aux=True)
        return [*_merge(len(out_specs), moving_out, outs, others), *t_outs]

    return jvp_fn, [*specs, *(specs[i] for i in moving)]


def vjp_program(flat_fn, specs: list, out_specs: list | None = None):
    """``(vjp_fn, specs)``: ``vjp_fn(*primals, *cotangents) -> [argument cotangents]``,
    cotangents of the inexact results in, of the inexact arguments out; the forward
    pass is computed again inside."""
    out_specs = _out_specs(flat_fn, specs) if out_specs is None else out_specs
    split, moving, moving_out = _split(flat_fn, specs, out_specs)
    n = len(specs)

    @_named(flat_fn, "vjp")
    def vjp_fn(*primals_and_cts):
        primals, cts = primals_and_cts[:n], primals_and_cts[n:]
        _, pullback, _ = jax.vjp(split(primals), *(primals[i] for i in moving), has_aux=True)
        return list(pullback(list(cts)))

    return vjp_fn, [*specs, *(out_specs[k] for k in moving_out)]


def residual_programs(flat_fn, specs: list, out_specs: list | None = None):
    """``(fwd_fn, fwd_specs, bwd_fn, bwd_specs)`` for a first-order reverse pass that keeps
    jax's residuals: ``fwd_fn(*primals) -> [*results, *residuals]``,
    ``bwd_fn(*residuals, *cotangents) -> [argument cotangents]`` (as ``vjp_program``).
    The residuals are what jax's pullback holds; ``fwd_fn`` must be lowered before
    ``bwd_fn`` (the pullback's structure is read while jax traces it)."""
    out_specs = _out_specs(flat_fn, specs) if out_specs is None else out_specs
    split, moving, moving_out = _split(flat_fn, specs, out_specs)
    box: dict = {}

    @_named(flat_fn, "fwd")
    def fwd_fn(*primals):
        outs, pullback, others = jax.vjp(split(primals), *(primals[i] for i in moving),
                                         has_aux=True)
        residuals, box["tree"] = jax.tree_util.tree_flatten(pullback)
        return [*_merge(len(out_specs), moving_out, outs, others), *residuals]

    fwd_specs = list(specs)
    res_specs = jax.eval_shape(fwd_fn, *fwd_specs)[len(out_specs):]

    @_named(flat_fn, "bwd")
    def bwd_fn(*res_and_cts):
        residuals, cts = res_and_cts[:len(res_specs)], res_and_cts[len(res_specs):]
        return list(jax.tree_util.tree_unflatten(box["tree"], list(residuals))(list(cts)))

    bwd_specs = [*jax_specs(res_specs), *(out_specs[k] for k in moving_out)]
    return fwd_fn, fwd_specs, bwd_fn, bwd_specs


def _out_specs(flat_fn, specs: list) -> list:
    return jax_specs(jax.eval_shape(flat_fn, *specs))


def lower_derivative(make, flat_fn, specs: list, out_specs: list, platform: str | None = None):
    """``make(flat_fn, specs, out_specs)`` (one of the programs above) made and lowered
    for ``platform`` (jax's name; default the backend's): ``[(fn, specs, text, out_specs),
    ...]`` per program. jax's refusal (it cannot take that derivative) is a
    ``JaxDerivativeError`` carrying jax's message."""
    try:
        made = make(flat_fn, specs, out_specs)
        pairs = [made] if len(made) == 2 else [made[:2], made[2:]]
        return [(fn, sp, *lower_flat(fn, sp, platform)) for fn, sp in pairs]
    except Exception as e:  # noqa: BLE001 (jax raises many kinds: the message is what counts)
        raise JaxDerivativeError(f"{type(e).__name__}: {e}".strip()) from None
