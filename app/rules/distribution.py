"""Exact distributions of dice (the odds of an action: `actions/plan`).

A distribution is `{value: probability}` (Fractions summing to 1). Each die is uniform;
sums are convolutions, a kept/dropped term is counted over its dice's combinations."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable
from fractions import Fraction
from typing import TypeVar

from app.rules.dice import DiceTerm, Expression

K = TypeVar("K", bound=Hashable)
Dist = dict[int, Fraction]
MAX_KEPT_COMBINATIONS = 100_000  # a keep/drop term is counted over every combination of its dice
MAX_PAIRS = 200_000  # the pairs of values one expression's convolutions may combine, in all


class TooManyCombinations(ValueError):
    """A term whose combinations are too many to count one by one."""


def die(faces: int) -> Dist:
    share = Fraction(1, faces)
    return dict.fromkeys(range(1, faces + 1), share)


def constant(value: int) -> Dist:
    return {value: Fraction(1)}


def convolve(a: dict[int, Fraction], b: dict[int, Fraction]) -> Dist:
    """The distribution of the sum of two independent values."""
    out: Dist = {}
    for x, p in a.items():
        for y, q in b.items():
            out[x + y] = out.get(x + y, Fraction(0)) + p * q
    return out


def total(parts: Iterable[Dist], budget: int = MAX_PAIRS) -> Dist:
    """The distribution of the sum; more than `budget` pairs of values to combine in all is refused
    (`TooManyCombinations`: `100d1000` is not counted this way)."""
    out = constant(0)
    for part in parts:
        budget -= len(out) * len(part)
        if budget < 0:
            raise TooManyCombinations("too many values to combine exactly")
        out = convolve(out, part)
    return out


def mapped(dist: dict[K, Fraction], f: Callable[[K], K]) -> dict[K, Fraction]:
    """The distribution of f(value)."""
    out: dict[K, Fraction] = {}
    for x, p in dist.items():
        y = f(x)
        out[y] = out.get(y, Fraction(0)) + p
    return out


def of_term(term: DiceTerm) -> Dist:
    """`NdM` (a convolution), or `NdMkhK`/`klK` (every combination of its dice counted)."""
    if term.keep is None:
        dist = total(die(term.faces) for _ in range(term.count))
    else:
        if term.faces**term.count > MAX_KEPT_COMBINATIONS:
            raise TooManyCombinations(f"{term.count}d{term.faces} kept: too many combinations to count")
        which, n = term.keep
        counts: dict[int, int] = {}
        for values in itertools.product(range(1, term.faces + 1), repeat=term.count):
            kept = sorted(values, reverse=which == "h")[:n]
            counts[sum(kept)] = counts.get(sum(kept), 0) + 1
        whole = term.faces**term.count
        dist = {v: Fraction(c, whole) for v, c in counts.items()}
    return dist if term.sign > 0 else {-v: p for v, p in dist.items()}


def of_expression(expr: Expression) -> Dist:
    """The exact distribution of a parsed dice expression's total."""
    return convolve(total(of_term(t) for t in expr.terms), constant(expr.constant))
