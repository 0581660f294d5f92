"""``einsum``: numpy's Einstein summation, lowered to dot_general, transposes and reductions.

The subscripts follow numpy's grammar: ``"ij,jk->ik"`` (explicit output),
``"ij,jk"`` (implicit: the labels that appear once, in alphabetical order),
``...`` for leading dimensions that broadcast (size 1 against size n) across
operands, and a label repeated in one operand for its diagonal (``"ii->i"``,
the trace ``"ii"``). Each operand is first reduced on its own (its diagonals
taken, labels no other operand or the output needs summed away); the rest is
a sequence of pairwise contractions, each one ``ops.Dot`` with batch and
contracting dimensions, in the order ``opt_einsum`` chooses (as
``jax.numpy.einsum`` and ``numpy.einsum(optimize=...)`` do); a last transpose
puts the labels in the output's order. Derivatives and ``vmap`` come from the
rules of those ops.

>>> import numpy as np, hlodsl as hd, hlodsl.stdlib as xp
>>> a = hd.array(np.arange(6.0).reshape(2, 3)); b = hd.array(np.ones((3, 2)))
>>> xp.einsum("ij,jk->ik", a, b)
hlodsl.Array[float64, (2, 2)](
  [[ 3.,  3.],
   [12., 12.]])
>>> xp.einsum("ii", hd.array(np.eye(3)))           # the trace
hlodsl.Array[float64, ()](3.)
"""

from __future__ import annotations

import string

import numpy as np
import opt_einsum

from hlodsl import ops
from hlodsl.arrays.array import Array, array
from hlodsl.arrays.dtypes import Bool, int32
from hlodsl.errors import ShapeError

from .elementwise import add
from .manipulation import fail
from .promotion import lift, result_dtype, truth
from .reductions import mapreduce

__all__ = ["einsum", "einsum_path"]

_LETTERS = set(string.ascii_letters)


# -- the subscripts -------------------------------------------------------------------------

def _parse(subscripts: str, shapes: list[tuple[int, ...]]):
    """``(terms, output)``: one list of labels per operand, and the output's labels.

    Letters are labels as they are; the dimensions an ellipsis covers become labels
    ``0, 1, ...`` counted from the right, so that they broadcast right-aligned.
    """
    if not isinstance(subscripts, str):
        raise fail(TypeError, f"einsum: subscripts must be a str such as 'ij,jk->ik', got "
                              f"{type(subscripts).__name__} {subscripts!r}")
    spec = subscripts.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    if "->" in output or "-" in inputs or ">" in inputs:
        raise fail(ValueError, f"einsum: subscripts {subscripts!r} must have at most one '->'")
    parts = inputs.split(",")
    if len(parts) != len(shapes):
        raise fail(ValueError, f"einsum: subscripts {subscripts!r} name {len(parts)} operand(s) "
                               f"but {len(shapes)} were given (shapes {shapes})")
    terms, ellipsis_rank = [], 0
    for k, (part, shape) in enumerate(zip(parts, shapes)):
        letters = _letters(part, subscripts, f"operand {k}")
        if "..." in part:
            n = len(shape) - (len(letters) - 1)
            if n < 0:
                raise fail(ValueError, f"einsum: operand {k} of shape {shape} has fewer "
                                       f"dimensions than its subscripts {part!r} name")
            at = letters.index("...")
            letters[at:at + 1] = list(range(n - 1, -1, -1))
            ellipsis_rank = max(ellipsis_rank, n)
        elif len(letters) != len(shape):
            raise fail(ValueError, f"einsum: operand {k} of shape {shape} has {len(shape)} "
                                   f"dimension(s) but its subscripts {part!r} name "
                                   f"{len(letters)}")
        terms.append(letters)
    used = [label for term in terms for label in term]
    if arrow:
        out = _letters(output, subscripts, "the output")
        if "..." in out:
            at = out.index("...")
            out[at:at + 1] = list(range(ellipsis_rank - 1, -1, -1))
        elif ellipsis_rank:
            raise fail(ValueError, f"einsum: {subscripts!r}: the operands' '...' covers "
                                   f"{ellipsis_rank} dimension(s) but the output has no '...' "
                                   "to put them in (numpy refuses it too)")
        for label in out:
            if isinstance(label, str) and label not in used:
                raise fail(ValueError, f"einsum: output label {label!r} of {subscripts!r} is "
                                       "in no operand")
            if out.count(label) > 1:
                raise fail(ValueError, f"einsum: output label {label!r} of {subscripts!r} "
                                       "appears more than once")
    else:  # implicit: the broadcast dimensions, then the letters used once, sorted
        once = sorted(c for c in set(used) if isinstance(c, str) and used.count(c) == 1)
        out = list(range(ellipsis_rank - 1, -1, -1)) + once
    return terms, out


def _letters(part: str, subscripts: str, where: str) -> list:
    rest = part.replace("...", "")
    if part.count("...") > 1:
        raise fail(ValueError, f"einsum: {where} of {subscripts!r} has more than one '...'")
    bad = sorted(set(rest) - _LETTERS)
    if bad:
        raise fail(ValueError, f"einsum: {where} of {subscripts!r} has invalid character(s) "
                               f"{bad}; labels are letters a-z, A-Z, and '...'")
    labels: list = []
    i = 0
    while i < len(part):
        if part.startswith("...", i):
            labels.append("...")
            i += 3
        else:
            labels.append(part[i])
            i += 1
    return labels


def _sizes(terms, shapes, subscripts) -> dict:
    """Each label's size; size 1 broadcasts against any other size, as in numpy."""
    sizes: dict = {}
    for k, (term, shape) in enumerate(zip(terms, shapes)):
        for label, n in zip(term, shape):
            have = sizes.get(label)
            if have is None or have == 1:
                sizes[label] = n
            elif n != have and n != 1:
                name = f"'{label}'" if isinstance(label, str) else "'...'"
                raise fail(ShapeError, f"einsum: label {name} of {subscripts!r} has size {have} "
                                       f"in one operand and {n} in operand {k} (shapes {shapes})")
    return sizes


# -- one operand alone ------------------------------------------------------------------------

def _diagonal(x: Array, term: list, label) -> tuple[Array, list]:
    """``x`` with the dimensions labelled ``label`` replaced by their diagonal (last)."""
    at = [i for i, lab in enumerate(term) if lab == label]
    rest = [i for i in range(x.ndim) if i not in at]
    n = x.shape[at[0]]
    x = ops.Transpose(tuple(rest + at))(x) if rest + at != list(range(x.ndim)) else x
    lead = tuple(x.shape[:len(rest)])
    x = ops.Reshape(lead + (n ** len(at),))(x)
    # The diagonal of k dimensions of size n, flattened: every (n^k - 1)/(n - 1)-th element.
    step = sum(n ** j for j in range(len(at)))
    x = ops.Slice((0,) * x.ndim, x.shape, (1,) * len(lead) + (step,))(x)
    return x, [term[i] for i in rest] + [label]


def _prepare(x: Array, term: list, sizes: dict, needed) -> tuple[Array, list]:
    """One operand with its diagonals taken, broadcast size-1 dimensions dropped, and the
    labels nothing else needs summed away."""
    for label in dict.fromkeys(term):
        if term.count(label) > 1:
            x, term = _diagonal(x, term, label)
    keep = [i for i, lab in enumerate(term) if not (x.shape[i] == 1 and sizes[lab] != 1)]
    if len(keep) < len(term):  # a size-1 dimension against size n: constant along it
        term = [term[i] for i in keep]
        x = ops.Reshape(tuple(x.shape[i] for i in keep))(x)
    drop = tuple(i for i, lab in enumerate(term) if lab not in needed)
    if drop:
        x = mapreduce(None, add, x, axis=drop)
        term = [lab for i, lab in enumerate(term) if i not in drop]
    return x, term


# -- contraction ---------------------------------------------------------------------------------

def _contract(a: Array, ta: list, b: Array, tb: list, keep, precision) -> tuple[Array, list]:
    """``a`` and ``b`` contracted over the labels they share that ``keep`` lacks."""
    shared = [lab for lab in ta if lab in tb]
    batch = [lab for lab in shared if lab in keep]
    contract = [lab for lab in shared if lab not in keep]
    # Labels of one operand that nothing later needs: summed before the product.
    for x_is_a in (True, False):
        x, t, other = (a, ta, tb) if x_is_a else (b, tb, ta)
        drop = tuple(i for i, lab in enumerate(t) if lab not in keep and lab not in other)
        if drop:
            x = mapreduce(None, add, x, axis=drop)
            t = [lab for i, lab in enumerate(t) if i not in drop]
            if x_is_a:
                a, ta = x, t
            else:
                b, tb = x, t
    dot = ops.Dot(lhs_contracting=tuple(ta.index(lab) for lab in contract),
                  rhs_contracting=tuple(tb.index(lab) for lab in contract),
                  lhs_batch=tuple(ta.index(lab) for lab in batch),
                  rhs_batch=tuple(tb.index(lab) for lab in batch), precision=precision)
    out = dot(a, b)
    free_a = [lab for lab in ta if lab not in shared]
    free_b = [lab for lab in tb if lab not in shared]
    return out, batch + free_a + free_b


def _symbols(terms, out) -> tuple[str, dict]:
    """The subscripts in letters opt_einsum reads (ellipsis labels get letters of their own)."""
    names: dict = {}
    for label in [lab for t in terms for lab in t] + list(out):
        if label not in names:
            names[label] = opt_einsum.get_symbol(len(names))
    text = ",".join("".join(names[lab] for lab in t) for t in terms)
    return text + "->" + "".join(names[lab] for lab in out), names


def _path(terms, out, shapes, optimize) -> list[tuple[int, ...]]:
    """The pairwise contraction order: a list of operand positions, as opt_einsum gives it."""
    n = len(terms)
    if n < 2:
        return []
    if optimize is False:  # left to right, as numpy's unoptimised loop
        return [(0, 1)] * (n - 1)
    if isinstance(optimize, (list, tuple)):
        path = list(optimize)
        if path and path[0] == "einsum_path":
            path = path[1:]
        return [tuple(p) for p in path]
    strategy = "greedy" if optimize is True else optimize
    if not isinstance(strategy, str):
        raise fail(TypeError, f"einsum: optimize must be a bool, a strategy name ('auto', "
                              f"'greedy', 'optimal', ...) or a path, got {optimize!r}")
    text, _ = _symbols(terms, out)
    try:
        path, _ = opt_einsum.contract_path(text, *shapes, shapes=True, optimize=strategy)
    except (KeyError, TypeError) as e:
        raise fail(ValueError, f"einsum: optimize={optimize!r} is not a path strategy "
                               f"opt_einsum knows ({e})") from None
    return [tuple(p) for p in path]


def einsum(subscripts: str, *operands, optimize="auto", precision=None,
           preferred_element_type=None):
    """Einstein summation over ``operands``, as ``numpy.einsum``.

    Args:
        subscripts: numpy's subscripts: comma-separated labels per operand,
            optionally ``->`` and the output's labels; ``...`` for broadcast
            leading dimensions; a label repeated in one operand takes its
            diagonal.
        operands: arrays (hlodsl, numpy, or Python numbers); promoted to one
            element type.
        optimize: the contraction order: ``"auto"`` (the default, as
            ``jax.numpy.einsum``), ``True``/``"greedy"``, ``"optimal"`` or any
            strategy ``opt_einsum.contract_path`` knows; ``False`` for left to
            right; or an explicit path (a list of position tuples, optionally
            led by ``"einsum_path"``, as ``numpy.einsum_path`` returns).
        precision: the dots' precision, as ``matmul``'s.
        preferred_element_type: the result's element type (the operands are
            converted to it first); None keeps the promoted type.

    Returns:
        The array of the output labels' shape. Booleans contract as numpy's
        (logical or of logical ands).

    >>> import numpy as np, hlodsl as hd
    >>> x = hd.array(np.arange(4.0).reshape(2, 2))
    >>> einsum("ij->ji", x)
    hlodsl.Array[float64, (2, 2)](
      [[0., 2.],
       [1., 3.]])
    >>> einsum("...i,...i", x, x)                   # a batch of dot products
    hlodsl.Array[float64, (2,)]([ 1., 13.])
    """
    if not isinstance(subscripts, str):  # numpy's other form: op0, sublist0, op1, ...
        subscripts, operands = _from_sublists((subscripts, *operands))
    if not operands:
        raise fail(ValueError, "einsum: needs at least one operand after the subscripts")
    arrays = [x if isinstance(x, Array) else array(np.asarray(x)) for x in operands]
    dtype = result_dtype(*arrays) if preferred_element_type is None else preferred_element_type
    boolean = isinstance(dtype, type) and issubclass(dtype, Bool)
    arrays = [lift(x, int32 if boolean else dtype) for x in arrays]
    shapes = [tuple(x.shape) for x in arrays]
    terms, out = _parse(subscripts, shapes)
    sizes = _sizes(terms, shapes, subscripts)
    path = _path(terms, out, [tuple(sizes[lab] for lab in t) for t in terms], optimize)
    items = []
    for k, (x, t) in enumerate(zip(arrays, terms)):
        others = {lab for j, u in enumerate(terms) if j != k for lab in u}
        items.append(_prepare(x, t, sizes, others | set(out)))
    for step in path:
        # Popped from the back (positions stay valid), contracted in the path's order:
        # ("ij,jk->ik") is then one dot with no transpose after it.
        picked = [items.pop(i) for i in sorted(step, reverse=True)][::-1]
        if len(picked) == 1:
            items.append(picked[0])
            continue
        rest = {lab for _, t in items for lab in t} | set(out)
        x, t = picked[0]
        for y, u in picked[1:]:
            later = rest | {lab for _, v in picked for lab in v if v is not u and v is not t}
            x, t = _contract(x, t, y, u, later, precision)
        items.append((x, t))
    while len(items) > 1:  # a path that left operands over: contract them in order
        (x, t), (y, u) = items[0], items[1]
        rest = {lab for _, v in items[2:] for lab in v} | set(out)
        items[:2] = [_contract(x, t, y, u, rest, precision)]
    x, t = items[0]
    drop = tuple(i for i, lab in enumerate(t) if lab not in out)
    if drop:
        x = mapreduce(None, add, x, axis=drop)
        t = [lab for lab in t if lab in out]
    missing = [lab for lab in out if lab not in t]
    if missing:  # output labels whose operands all had size 1 there
        x = ops.Reshape(tuple(x.shape) + (1,) * len(missing))(x)
        t = t + missing
    perm = tuple(t.index(lab) for lab in out)
    if perm != tuple(range(len(perm))):
        x = ops.Transpose(perm)(x)
    return truth(x) if boolean else x


def _from_sublists(args: tuple) -> tuple[str, tuple]:
    """``einsum(a, [0, 1], b, [1, 2], [0, 2])`` as ``("ab,bc->ac", (a, b))``."""
    def term(sub) -> str:
        try:
            return "".join("..." if s is Ellipsis else opt_einsum.get_symbol(int(s))
                           for s in sub)
        except (TypeError, ValueError):
            raise fail(TypeError, f"einsum: a sublist holds ints and Ellipsis, got "
                                  f"{sub!r}") from None

    pairs, out = list(args), None
    if len(pairs) % 2:
        out = pairs.pop()
    operands, terms = pairs[0::2], [term(s) for s in pairs[1::2]]
    text = ",".join(terms) + ("" if out is None else "->" + term(out))
    return text, tuple(operands)


def einsum_path(subscripts: str, *operands, optimize="greedy"):
    """numpy's ``einsum_path``: ``(path, report)`` for ``operands``' shapes (by opt_einsum).

    >>> import numpy as np, hlodsl as hd
    >>> a = hd.array(np.ones((2, 3))); b = hd.array(np.ones((3, 4))); c = hd.array(np.ones(4))
    >>> einsum_path("ij,jk,k->i", a, b, c)[0]
    ['einsum_path', (1, 2), (0, 1)]
    """
    if not isinstance(subscripts, str):
        subscripts, operands = _from_sublists((subscripts, *operands))
    shapes = [tuple(np.shape(x)) for x in operands]
    terms, out = _parse(subscripts, shapes)
    sizes = _sizes(terms, shapes, subscripts)
    text, _ = _symbols(terms, out)
    strategy = "greedy" if optimize is True else optimize
    path, info = opt_einsum.contract_path(
        text, *[tuple(sizes[lab] for lab in t) for t in terms], shapes=True, optimize=strategy)
    return ["einsum_path", *path], str(info)
