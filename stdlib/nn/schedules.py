"""Learning-rate schedules: functions of the step count, evaluated inside the compiled step.

A schedule maps the optimiser's step count (an int32 scalar array in its
state, or a Python int) to a scalar float32 array, built from hlodsl ops.
Give one to an optimiser as a hyperparameter (``nn.adam(lr=schedule)``): the
optimiser evaluates it on the count it keeps, so every step of a compiled
training loop reuses one executable while the value changes. The formulas
are optax's (``optax.warmup_cosine_decay_schedule`` and the rest), with the
same arguments; the tests compare them over hundreds of steps.

A schedule is a frozen attrs value (hashable, printable); any callable from
the step count to a scalar array works as a schedule too.

>>> from hlodsl.stdlib import nn
>>> s = nn.schedules.warmup_cosine(0.0, 1.0, warmup_steps=2, decay_steps=6)
>>> [round(float(s(t)), 3) for t in range(8)]
[0.0, 0.5, 1.0, 0.854, 0.5, 0.146, 0.0, 0.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs

from hlodsl.arrays.array import Array
from hlodsl.arrays.dtypes import Integer, element_type, float32

from ..elementwise import cos, floor, maximum, minimum, pow
from ..manipulation import fail, where
from ..promotion import lift
from ._args import static_real

__all__ = ["Schedule", "constant", "linear", "cosine_decay", "warmup_cosine", "exponential",
           "piecewise_constant", "join"]

_frozen = attrs.frozen(kw_only=False)


def _count(step, dtype) -> Array:
    """The step count as a ``dtype`` scalar: a Python int or an integer scalar array."""
    if isinstance(step, Array):
        if step.shape != () or not issubclass(step.dtype, Integer):
            raise fail(TypeError, f"schedule: the step count must be an integer scalar, "
                                  f"got {step.type}")
    elif isinstance(step, bool) or not isinstance(step, int):
        raise fail(TypeError, f"schedule: the step count must be an int or an integer "
                              f"scalar array, got {type(step).__name__} {step!r}")
    return lift(step, element_type(dtype))


class Schedule:
    """The base of the built-in schedules: ``schedule(step) -> float32 scalar array``.

    ``schedule(step, dtype)`` computes in another floating type (the optimisers
    ask for their parameters' widest, so float64 parameters get a float64 rate).
    """

    def __call__(self, step, dtype=float32) -> Array:
        return self.at(_count(step, dtype))

    def at(self, t: Array) -> Array:  # t: the step count as a floating scalar
        raise NotImplementedError


def _real(value, what: str, name: str) -> float:
    return float(static_real(value, what, name))


def _steps(value, what: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(TypeError, f"{what}: {name} must be an int, got {type(value).__name__} "
                              f"{value!r}")
    return value


@_frozen
class constant(Schedule):
    """``value`` at every step (``optax.constant_schedule``).

    >>> constant(0.1)(5)
    hlodsl.Array[float32, ()](0.1)
    """

    value: float = attrs.field(converter=float)

    def at(self, t):
        return lift(self.value, t.dtype)


@_frozen
class linear(Schedule):
    """From ``init_value`` to ``end_value`` in a straight line over ``transition_steps``
    steps after ``transition_begin``, then ``end_value`` (``optax.linear_schedule``).

    >>> [float(linear(1.0, 0.0, 4)(t)) for t in (0, 1, 4, 9)]
    [1.0, 0.75, 0.0, 0.0]
    """

    init_value: float = attrs.field(converter=float)
    end_value: float = attrs.field(converter=float)
    transition_steps: int = 0
    transition_begin: int = 0

    def __attrs_post_init__(self):
        _steps(self.transition_steps, "linear", "transition_steps")
        _steps(self.transition_begin, "linear", "transition_begin")

    def at(self, t):
        if self.transition_steps <= 0:  # optax: a constant init_value then
            return lift(self.init_value, t.dtype)
        count = minimum(maximum(t - self.transition_begin, 0.0), float(self.transition_steps))
        frac = 1 - count / self.transition_steps
        return frac * (self.init_value - self.end_value) + self.end_value


@_frozen
class cosine_decay(Schedule):
    """Half a cosine from ``init_value`` down to ``alpha * init_value`` over
    ``decay_steps``, then flat (``optax.cosine_decay_schedule``).

    >>> [round(float(cosine_decay(1.0, 4)(t)), 4) for t in (0, 2, 4, 8)]
    [1.0, 0.5, 0.0, 0.0]
    """

    init_value: float = attrs.field(converter=float)
    decay_steps: int = 1
    alpha: float = attrs.field(default=0.0, converter=float)
    exponent: float = attrs.field(default=1.0, converter=float)

    def __attrs_post_init__(self):
        if _steps(self.decay_steps, "cosine_decay", "decay_steps") <= 0:
            raise fail(ValueError, f"cosine_decay: decay_steps must be > 0, got "
                                   f"{self.decay_steps}")

    def at(self, t):
        count = minimum(t, float(self.decay_steps))
        decay = (cos(count * (math.pi / self.decay_steps)) + 1) * 0.5
        if self.exponent != 1.0:
            decay = pow(decay, self.exponent)
        return (decay * (1 - self.alpha) + self.alpha) * self.init_value


@_frozen
class join(Schedule):
    """``schedules[0]`` until ``boundaries[0]``, then ``schedules[1]`` counted from
    that boundary, and so on (``optax.join_schedules``).

    >>> s = join((constant(1.0), linear(1.0, 0.0, 2)), (3,))
    >>> [float(s(t)) for t in range(6)]
    [1.0, 1.0, 1.0, 1.0, 0.5, 0.0]
    """

    schedules: tuple = attrs.field(converter=tuple)
    boundaries: tuple = attrs.field(converter=tuple)

    def __attrs_post_init__(self):
        if len(self.schedules) != len(self.boundaries) + 1:
            raise fail(ValueError, f"join: needs one boundary fewer than schedules, got "
                                   f"{len(self.schedules)} schedules and boundaries "
                                   f"{self.boundaries}")
        for b in self.boundaries:
            _steps(b, "join", "a boundary")

    def at(self, t):
        out = _evaluate(self.schedules[0], t)
        for boundary, schedule in zip(self.boundaries, self.schedules[1:]):
            out = where(t < boundary, out, _evaluate(schedule, t - boundary))
        return out


def _evaluate(schedule: Callable, t: Array) -> Array:
    if isinstance(schedule, Schedule):
        return schedule.at(t)
    return lift(schedule(lift(t, "int32")), t.dtype)  # a user's function of the count


def warmup_cosine(init_value: float, peak_value: float, warmup_steps: int, decay_steps: int,
                  end_value: float = 0.0, exponent: float = 1.0) -> join:
    """Linear warm-up from ``init_value`` to ``peak_value`` over ``warmup_steps``, then
    cosine decay to ``end_value`` at step ``decay_steps`` (counted from 0, warm-up
    included), as ``optax.warmup_cosine_decay_schedule``.

    >>> s = warmup_cosine(0.0, 1e-3, warmup_steps=10, decay_steps=100, end_value=1e-5)
    >>> [round(float(s(t)), 6) for t in (0, 5, 10, 55, 100, 200)]
    [0.0, 0.0005, 0.001, 0.000505, 1e-05, 1e-05]
    """
    peak = _real(peak_value, "warmup_cosine", "peak_value")
    end = _real(end_value, "warmup_cosine", "end_value")
    alpha = 0.0 if peak == 0.0 else end / peak
    return join((linear(init_value, peak, warmup_steps),
                 cosine_decay(peak, decay_steps - warmup_steps, alpha, exponent)),
                (warmup_steps,))


@_frozen
class exponential(Schedule):
    """``init_value * decay_rate ** ((step - transition_begin) / transition_steps)``
    (the exponent floored with ``staircase``), ``init_value`` before
    ``transition_begin``, bounded by ``end_value`` (``optax.exponential_decay``).

    >>> [round(float(exponential(1.0, 2, 0.5)(t)), 4) for t in (0, 1, 2, 4)]
    [1.0, 0.7071, 0.5, 0.25]
    >>> [round(float(exponential(1.0, 2, 0.5, staircase=True, end_value=0.3)(t)), 4)
    ...  for t in (1, 3, 5)]
    [1.0, 0.5, 0.3]
    """

    init_value: float = attrs.field(converter=float)
    transition_steps: int = 1
    decay_rate: float = attrs.field(default=1.0, converter=float)
    transition_begin: int = 0
    staircase: bool = False
    end_value: float | None = None

    def __attrs_post_init__(self):
        if _steps(self.transition_steps, "exponential", "transition_steps") <= 0:
            raise fail(ValueError, f"exponential: transition_steps must be > 0, got "
                                   f"{self.transition_steps}")
        if _steps(self.transition_begin, "exponential", "transition_begin") < 0:
            raise fail(ValueError, f"exponential: transition_begin must be >= 0, got "
                                   f"{self.transition_begin}")
        if self.end_value is not None:
            _real(self.end_value, "exponential", "end_value")

    def at(self, t):
        count = t - self.transition_begin
        p = count / self.transition_steps
        if self.staircase:
            p = floor(p)
        rate = lift(self.decay_rate, t.dtype)
        out = where(count <= 0, lift(self.init_value, t.dtype),
                    pow(rate, p) * self.init_value)
        if self.end_value is not None:
            bound = maximum if self.decay_rate < 1 else minimum  # end_value is a floor when decaying
            out = bound(out, lift(float(self.end_value), t.dtype))
        return out


@_frozen
class piecewise_constant(Schedule):
    """``init_value``, multiplied by ``scale`` from each ``boundary`` step on, for the
    ``{boundary: scale}`` of ``boundaries_and_scales`` (``optax.piecewise_constant_schedule``).

    >>> s = piecewise_constant(1.0, {2: 0.5, 4: 0.1})
    >>> [round(float(s(t)), 4) for t in range(6)]
    [1.0, 1.0, 0.5, 0.5, 0.05, 0.05]
    """

    init_value: float = attrs.field(converter=float)
    boundaries_and_scales: tuple = attrs.field(
        default=(), converter=lambda d: tuple(sorted(dict(d).items())))

    def __attrs_post_init__(self):
        for boundary, scale in self.boundaries_and_scales:
            _steps(boundary, "piecewise_constant", "a boundary")
            if _real(scale, "piecewise_constant", f"the scale at {boundary}") < 0:
                raise fail(ValueError, f"piecewise_constant: scales must be >= 0, got "
                                       f"{scale} at {boundary}")

    def at(self, t):
        out = lift(self.init_value, t.dtype)
        for boundary, scale in self.boundaries_and_scales:
            out = where(t < boundary, out, out * float(scale))
        return out
