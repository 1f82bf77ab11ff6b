"""Great Cosmos exact odds (GC-T1..T3, GC-K2..K5) against a brute-force enumeration
through the test rules and against icepool (test-only oracle)."""

from fractions import Fraction

import icepool
import pytest

from app.rules.dice import TableDice
from app.rules.errors import DiceNeeded
from app.rulesets.great_cosmos.rules.core import OUTCOMES, resolve_test
from app.rulesets.great_cosmos.rules.odds import intuition_odds, outcome_counts, odds_of_test


def brute_force(target, karma, posture=None, extreme=False):
    """Every (d100[, d10]) the rules can ask for, fed as table dice to resolve_test."""
    dist = {o: Fraction(0) for o in OUTCOMES}
    after = {}
    for natural in range(1, 101):
        try:
            cases = [([natural], Fraction(1, 100))]
            resolve_test(TableDice([natural]), target, karma, posture=posture, extreme_scores=extreme)
        except DiceNeeded:
            cases = [([natural, d], Fraction(1, 1000)) for d in range(1, 11)]
        for dice, p in cases:
            src = TableDice(dice)
            r = resolve_test(src, target, karma, posture=posture, extreme_scores=extreme)
            src.finish()
            dist[r.outcome] += p
            after[r.karma_after] = after.get(r.karma_after, Fraction(0)) + p
    return dist, dict(sorted(after.items()))


def oracle_outcome(natural, d10, target, karma, extreme=False):
    """GC-T1/T2/K2..K4 written independently from the page, for icepool."""
    if natural in (42, 66) or -5 < karma < 5:
        score = natural
    else:
        score = natural + d10 if karma <= -5 else natural - d10
    lo, hi = karma == -10, karma == 10
    if score == 42:
        return "critical_success" if lo else "super_critical_success"
    if score == 66:
        return "critical_failure" if hi else "super_critical_failure"
    if extreme and score <= 0 and not lo:
        return "super_critical_success"
    if extreme and score > 100 and not hi:
        return "super_critical_failure"
    if score <= 10 and not lo:
        return "critical_success"
    if score >= 91 and not hi:
        return "critical_failure"
    return "success" if score <= target else "failure"


@pytest.mark.parametrize("extreme", [False, True])
@pytest.mark.parametrize("karma", range(-10, 11))
@pytest.mark.parametrize("target", [-15, 0, 5, 10, 42, 55, 66, 90, 95, 100, 115])
def test_gc_t2_gc_k2_odds_match_brute_force_enumeration(karma, target, extreme):
    odds = odds_of_test(target, karma, extreme_scores=extreme)
    dist, after = brute_force(target, karma, extreme=extreme)
    assert odds.outcomes == dist
    assert odds.karma_after == after
    assert sum(odds.outcomes.values()) == 1


@pytest.mark.parametrize("posture", ["illumination", "sepulcrale"])
def test_gc_k5_odds_use_the_locked_karma_and_keep_the_stored_one(posture):
    odds = odds_of_test(55, 3, posture=posture)
    dist, after = brute_force(55, 3, posture=posture)
    assert odds.outcomes == dist
    assert odds.karma_after == {3: Fraction(1)} == after
    assert odds.outcomes == odds_of_test(55, 10 if posture == "illumination" else -10).outcomes


def test_gc_t2_odds_extreme_scores_off_match_brute_force():
    for karma in (-7, 7):
        assert odds_of_test(50, karma, extreme_scores=False).outcomes == brute_force(50, karma, extreme=False)[0]


def test_gc_t2_odds_extreme_scores_default_off():
    """GC-T2 (Decision): the conversion is the GM's opt-in; off, a score above 100 at karma
    -7 is a critical failure: super-critical failures are only the score 66 (a natural 66,
    10/1000, or 56..65 + the d10, 10/1000); on, the 55 pairs natural + d10 > 100 join them."""
    assert odds_of_test(50, -7).outcomes["super_critical_failure"] == Fraction(20, 1000)
    assert odds_of_test(50, -7, extreme_scores=True).outcomes["super_critical_failure"] == Fraction(75, 1000)


@pytest.mark.parametrize("extreme", [False, True])
@pytest.mark.parametrize("karma", [-10, -6, -5, 0, 5, 8, 10])
@pytest.mark.parametrize("target", [1, 55, 99])
def test_gc_t2_odds_agree_with_icepool(karma, target, extreme):
    die = icepool.map(lambda n, d: oracle_outcome(n, d, target, karma, extreme), icepool.d(100), icepool.d(10))
    odds = odds_of_test(target, karma, extreme_scores=extreme)
    for outcome in OUTCOMES:
        assert odds.outcomes[outcome] == die.probability(outcome), outcome


def test_gc_t2_odds_at_karma_0_stat_55_exact_values():
    odds = odds_of_test(55, 0)
    assert odds.outcomes == {
        "super_critical_success": Fraction(1, 100),
        "critical_success": Fraction(1, 10),
        "success": Fraction(44, 100),
        "failure": Fraction(34, 100),
        "critical_failure": Fraction(1, 10),
        "super_critical_failure": Fraction(1, 100),
    }
    assert odds.success == Fraction(11, 20)


def test_gc_t2_odds_far_targets_share_the_cache_and_agree():
    assert outcome_counts(-500, -7) == outcome_counts(-11, -7)
    assert outcome_counts(900, 7) == outcome_counts(111, 7)
    assert odds_of_test(-500, -7).outcomes == brute_force(-500, -7)[0]
    assert odds_of_test(900, 7).outcomes == brute_force(900, 7)[0]


def test_gc_t3_intuition_odds():
    o = intuition_odds(4)
    assert (o.outcomes["success"], o.outcomes["failure"]) == (Fraction(2, 3), Fraction(1, 3))
    assert intuition_odds(9).outcomes["success"] == 1
    assert intuition_odds(-1).outcomes["failure"] == 1
