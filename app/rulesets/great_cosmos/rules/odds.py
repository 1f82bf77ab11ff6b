"""Great Cosmos: exact odds of a d100 test (GC-T1..T3, GC-K1..K5).

Direct enumeration of the 100 naturals (x 10 karma d10 faces when GC-K2 rolls
one): integer counts over 1000, cached per (target, karma, extreme_scores).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from app.rulesets.great_cosmos.rules.core import (
    OUTCOMES,
    SUCCESSES,
    classify,
    karma_after,
    karma_die_sign,
    locked_karma,
)

DENOMINATOR = 1000  # 100 naturals x 10 karma-die faces (weight 10 when no d10 is rolled)
# Below -10 every score <= target holds, above 111 too: the classification no longer changes.
_TARGET_LOW, _TARGET_HIGH = -11, 111


@dataclass(frozen=True)
class TestOdds:
    """Exact probabilities of the six outcomes and of the stored karma afterwards."""

    outcomes: dict[str, Fraction]
    karma_after: dict[int, Fraction]

    @property
    def success(self) -> Fraction:
        return sum((p for o, p in self.outcomes.items() if o in SUCCESSES), Fraction(0))


@lru_cache(maxsize=4096)
def outcome_counts(target: int, karma: int, extreme_scores: bool = False) -> tuple[int, ...]:
    """GC-T1/GC-T2/GC-K2: how many of the 1000 equally likely (d100, d10) pairs give
    each outcome (in `OUTCOMES` order), for the karma the test runs with."""
    target = max(_TARGET_LOW, min(_TARGET_HIGH, target))
    index = {o: i for i, o in enumerate(OUTCOMES)}
    counts = [0] * len(OUTCOMES)
    sign = karma_die_sign(karma)
    for natural in range(1, 101):
        if sign == 0 or natural in (42, 66):
            counts[index[classify(natural, target, karma, extreme_scores)]] += 10
            continue
        for die in range(1, 11):
            counts[index[classify(natural + sign * die, target, karma, extreme_scores)]] += 1
    return tuple(counts)


def odds_of_test(target: int, karma: int, *, posture: str | None = None, extreme_scores: bool = False) -> TestOdds:
    """GC-T1..T2, GC-K1..K5: the exact distribution of a d100 test's outcome given the
    stored karma (or the karma a special posture locks) and of the stored karma after."""
    lock = locked_karma(posture)
    used = karma if lock is None else lock
    counts = outcome_counts(target, used, extreme_scores)
    outcomes = {o: Fraction(c, DENOMINATOR) for o, c in zip(OUTCOMES, counts)}
    after: dict[int, Fraction] = {}
    for outcome, p in outcomes.items():
        if p:
            k = karma if lock is not None else karma_after(karma, outcome)
            after[k] = after.get(k, Fraction(0)) + p
    return TestOdds(outcomes=outcomes, karma_after=dict(sorted(after.items())))


def intuition_odds(target: int) -> TestOdds:
    """GC-T3: a d6 <= intuition (+ modifier): success or failure, karma unchanged."""
    good = Fraction(max(0, min(6, target)), 6)
    outcomes = {o: Fraction(0) for o in OUTCOMES}
    outcomes["success"] = good
    outcomes["failure"] = 1 - good
    return TestOdds(outcomes=outcomes, karma_after={})
