"""``compile``'s ``in_shardings``/``out_shardings``, matched to argument leaves and results.

The user gives one ``NamedSharding`` (or None) for everything, or a structure
shaped like the arguments or results; this turns it into one entry per leaf.
It sits above ``hlodsl.tree`` (it flattens the arguments) and ``hlodsl.sharding``.
"""

from __future__ import annotations

from hlodsl.arrays.sharding import NamedSharding
from hlodsl.arrays.tree import flatten, unflatten

__all__ = ["leaf_shardings"]


def _prefix(spec, x, path: str, what: str, leaves_of) -> list:
    """``spec`` (None, a NamedSharding, or a structure like ``x``'s) for each leaf of ``x``."""
    n = len(leaves_of(x))
    if spec is None or isinstance(spec, NamedSharding):
        return [spec] * n
    if isinstance(spec, (tuple, list)) and isinstance(x, (tuple, list)) and len(spec) == len(x):
        return [s for i, (sp, v) in enumerate(zip(spec, x))
                for s in _prefix(sp, v, f"{path}[{i}]", what, leaves_of)]
    if isinstance(spec, dict) and isinstance(x, dict) and set(spec) == set(x):
        return [s for k in x for s in _prefix(spec[k], x[k], f"{path}[{k!r}]", what, leaves_of)]
    raise TypeError(f"{what}{path} is {spec!r}, which does not match the structure of "
                    f"{type(x).__name__} {_short(x)}: give a hd.NamedSharding, None, or a "
                    "tuple/list/dict of them shaped like the value")


def _short(x) -> str:
    s = repr(x)
    return s if len(s) <= 60 else s[:57] + "..."


def leaf_shardings(name: str, args: tuple, kwargs: dict, staged, in_shardings, out_shardings):
    """Per argument leaf and per result: the NamedSharding the user gave, or None
    (inferred from the argument's own layout, or left to the partitioner)."""
    def leaves_of(x):
        return flatten(x)[0]

    what = f"compile({name}): in_shardings"
    if in_shardings is None or isinstance(in_shardings, NamedSharding):
        ins = _prefix(in_shardings, args, "", what, leaves_of)
    elif isinstance(in_shardings, (tuple, list)) and len(in_shardings) == len(args):
        ins = _prefix(tuple(in_shardings), tuple(args), "", what, leaves_of)
    else:
        raise TypeError(f"{what} must be a hd.NamedSharding, None, or one entry per positional "
                        f"argument ({len(args)}), got {_short(in_shardings)}")
    ins += [None] * len(leaves_of(kwargs))
    for s, t, i in zip(ins, staged.in_types, range(len(ins))):
        if s is not None:
            s.check(t.shape, f"compile({name}): in_shardings for argument leaf {i} ({t})")
    n_out = len(staged.out_types)
    structure = unflatten(staged.out_tree, [_Leaf()] * n_out)
    outs = _prefix(out_shardings, structure, "", f"compile({name}): out_shardings",
                   lambda x: [v for v in _leaves(x)])
    for s, t, i in zip(outs, staged.out_types, range(n_out)):
        if s is not None:
            s.check(t.shape, f"compile({name}): out_shardings for result {i} ({t})")
    return ins, outs


class _Leaf:
    def __repr__(self) -> str:
        return "<array>"


def _leaves(x) -> list:
    if isinstance(x, _Leaf):
        return [x]
    if isinstance(x, (tuple, list)):
        return [v for e in x for v in _leaves(e)]
    if isinstance(x, dict):
        return [v for e in x.values() for v in _leaves(e)]
    return []
