"""Exact distributions of dice expressions (`app.rules.distribution`, the damage of issue 26's
odds) against icepool (test-only oracle, pinned in pyproject)."""

from __future__ import annotations

from fractions import Fraction

import icepool
import pytest

from app.rules.dice import parse
from app.rules.distribution import TooManyCombinations, of_expression


def oracle(expr: str) -> dict[int, Fraction]:
    """The same expressions written with icepool's own operators."""
    d6, d4, d8, d20 = icepool.d(6), icepool.d(4), icepool.d(8), icepool.d(20)
    die = {
        "3d6+2": (3 @ d6) + 2,
        "2d8-1": (2 @ d8) - 1,
        "4d6kh3": d6.pool(4).highest(3).sum(),
        "5d6kl2": d6.pool(5).lowest(2).sum(),
        "3-1d4": 3 - d4,
        "1d20+1d4": d20 + d4,
        "4d6dl1": d6.pool(4).highest(3).sum(),  # dropping the lowest keeps the three highest
    }[expr]
    total = die.denominator()
    return {int(v): Fraction(n, total) for v, n in die.items()}


@pytest.mark.parametrize("expr", ["3d6+2", "2d8-1", "4d6kh3", "5d6kl2", "3-1d4", "1d20+1d4", "4d6dl1"])
def test_issue26_expression_distributions_equal_icepool(expr):
    got = of_expression(parse(expr))
    assert {v: p for v, p in got.items() if p} == oracle(expr)
    assert sum(got.values()) == 1


def test_issue26_an_expression_too_large_to_combine_exactly_is_refused():
    with pytest.raises(TooManyCombinations):
        of_expression(parse("100d1000"))
    with pytest.raises(TooManyCombinations):
        of_expression(parse("10d20kh3"))  # 20^10 combinations of a kept term
