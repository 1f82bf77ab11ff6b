"""Great Cosmos rules: stats, tests, classification and karma (GC-S1, GC-T1..T3, GC-K1..K5)."""

import pytest
from hypothesis import given, settings, strategies as st

from app.rules.dice import RandomDice, TableDice
from app.rules.errors import DiceNeeded, RuleError
from app.rulesets.great_cosmos.rules.core import (
    canonical_stat,
    classify,
    karma_after,
    resolve_intuition,
    resolve_test,
    result_from_dice,
)
import random


def roll(dice, target, karma=0, **kw):
    source = TableDice(dice)
    result = resolve_test(source, target, karma, **kw)
    source.finish()
    return result, [(r.die, r.value, r.purpose) for r in source.rolls]


# --- GC-S1 ------------------------------------------------------------------


def test_gc_s1_furtivite_is_agilite():
    assert canonical_stat("furtivite") == "agilite"
    assert canonical_stat("force") == "force"


def test_gc_s1_unknown_stat_is_refused_naming_the_field():
    with pytest.raises(RuleError) as e:
        canonical_stat("luck")
    assert e.value.field == "stat"


# --- GC-T1 ------------------------------------------------------------------


def test_gc_t1_roll_under_target_with_modifier():
    r, rolls = roll([60], 55 + 5)
    assert (r.natural, r.score, r.target, r.outcome) == (60, 60, 60, "success")
    assert rolls == [("d100", 60, "test")]
    r, _ = roll([61], 60)
    assert r.outcome == "failure"


def test_gc_t1_gc_k2_karma_minus_5_adds_a_d10_after_the_d100():
    r, rolls = roll([50, 7], 55, karma=-5)
    assert (r.natural, r.karma_die, r.score, r.outcome) == (50, 7, 57, "failure")
    assert rolls == [("d100", 50, "test"), ("d10", 7, "karma")]


def test_gc_t1_gc_k2_karma_plus_5_subtracts_a_d10():
    r, _ = roll([60, 8], 55, karma=5)
    assert (r.score, r.outcome) == (52, "success")


def test_gc_k2_karma_minus_4_and_plus_4_roll_no_karma_die():
    for karma in (-4, 4):
        r, rolls = roll([50], 55, karma=karma)
        assert r.karma_die is None and r.score == 50 and len(rolls) == 1


def test_gc_t1_natural_42_and_66_stand_as_rolled_no_karma_die():
    r, rolls = roll([42], 10, karma=7)
    assert (r.score, r.karma_die, r.outcome) == (42, None, "super_critical_success")
    assert len(rolls) == 1
    r, rolls = roll([66], 90, karma=-7)
    assert (r.score, r.karma_die, r.outcome) == (66, None, "super_critical_failure")
    assert len(rolls) == 1


def test_gc_t1_a_missing_karma_die_is_asked_for():
    with pytest.raises(DiceNeeded) as e:
        resolve_test(TableDice([50]), 55, -6)
    assert e.value.extra["needed"] == {"index": 1, "die": "d10", "purpose": "karma"}


# --- GC-T2: every branch ------------------------------------------------------


def test_gc_t2_score_42_is_super_critical_whatever_the_stat():
    r, _ = roll([42], 5)
    assert r.outcome == "super_critical_success" and r.success


def test_gc_t2_score_42_reached_through_the_karma_die():
    r, _ = roll([37, 5], 10, karma=-6)
    assert (r.score, r.outcome) == (42, "super_critical_success")


def test_gc_t2_score_66_is_super_critical_failure_whatever_the_stat():
    r, _ = roll([66], 95)
    assert r.outcome == "super_critical_failure" and not r.success


def test_gc_t2_score_at_most_0_is_super_critical_success_with_extreme_scores():
    r, _ = roll([3, 3], 50, karma=6, extreme_scores=True)
    assert (r.score, r.outcome) == (0, "super_critical_success")


def test_gc_t2_score_over_100_is_super_critical_failure_with_extreme_scores():
    r, _ = roll([95, 6], 50, karma=-6, extreme_scores=True)
    assert (r.score, r.outcome) == (101, "super_critical_failure")


def test_gc_t2_extreme_scores_off_counts_as_critical():
    r, _ = roll([3, 3], 50, karma=6, extreme_scores=False)
    assert (r.score, r.outcome) == (0, "critical_success")
    r, _ = roll([95, 6], 50, karma=-6, extreme_scores=False)
    assert (r.score, r.outcome) == (101, "critical_failure")


def test_gc_t2_score_10_is_critical_success_even_if_the_stat_is_lower():
    r, _ = roll([10], 5)
    assert r.outcome == "critical_success"


def test_gc_t2_score_91_is_critical_failure_even_if_the_stat_is_higher():
    r, _ = roll([91], 99)
    assert r.outcome == "critical_failure"


def test_gc_t2_otherwise_success_iff_score_at_most_target():
    assert roll([11], 11)[0].outcome == "success"
    assert roll([90], 89)[0].outcome == "failure"


def test_gc_t2_classification_limits_at_karma_extremes_pure():
    # GC-K3 / GC-K4 applied to the branches 3..5 (some only reachable in theory).
    assert classify(0, 50, -10) == "success"
    assert classify(0, -5, -10) == "failure"
    assert classify(101, 50, 10) == "failure"
    assert classify(101, 120, 10) == "success"
    assert classify(-3, 50, 10, extreme_scores=True) == "super_critical_success"
    assert classify(105, 50, -10, extreme_scores=True) == "super_critical_failure"
    assert classify(-3, 50, 10) == "critical_success"  # the conversion is off by default (GC-T2)
    assert classify(105, 50, -10) == "critical_failure"


# --- GC-T3 -------------------------------------------------------------------


def test_gc_t3_intuition_d6_at_most_intuition_is_good():
    src = TableDice([3])
    r = resolve_intuition(src, 3)
    assert (r.natural, r.target, r.good) == (3, 3, True)
    assert [(x.die, x.purpose) for x in src.rolls] == [("d6", "intuition")]
    assert resolve_intuition(TableDice([4]), 3).good is False


# --- GC-K1 --------------------------------------------------------------------


@pytest.mark.parametrize(
    "dice,target,outcome,after",
    [
        ([91], 50, "critical_failure", 1),
        ([66], 50, "super_critical_failure", 2),
        ([5], 50, "critical_success", -1),
        ([42], 50, "super_critical_success", -2),
        ([30], 50, "success", 0),
        ([70], 50, "failure", 0),
    ],
)
def test_gc_k1_karma_moves_with_the_outcome(dice, target, outcome, after):
    r, _ = roll(dice, target)
    assert (r.outcome, r.karma_before, r.karma_after) == (outcome, 0, after)


def test_gc_k1_karma_is_clamped():
    assert karma_after(9, "super_critical_failure") == 10
    assert karma_after(-9, "super_critical_success") == -10
    r, _ = roll([95, 1], 50, karma=9)
    assert (r.score, r.outcome, r.karma_after) == (94, "critical_failure", 10)


# --- GC-K3 / GC-K4 --------------------------------------------------------------


def test_gc_k3_karma_minus_10_42_is_only_critical_success():
    r, _ = roll([42], 50, karma=-10)
    assert (r.outcome, r.karma_after) == ("critical_success", -10)


def test_gc_k3_karma_minus_10_low_score_is_plain():
    r, _ = roll([2, 3], 50, karma=-10)
    assert (r.score, r.outcome) == (5, "success")
    r, _ = roll([2, 3], 4, karma=-10)
    assert (r.score, r.outcome) == (5, "failure")


def test_gc_k4_karma_plus_10_66_is_only_critical_failure():
    r, _ = roll([66], 50, karma=10)
    assert (r.outcome, r.karma_after) == ("critical_failure", 10)


def test_gc_k4_karma_plus_10_high_score_is_plain():
    r, _ = roll([99, 2], 50, karma=10)
    assert (r.score, r.outcome) == (97, "failure")
    r, _ = roll([99, 2], 98, karma=10)
    assert (r.score, r.outcome) == (97, "success")


# --- GC-K5 ------------------------------------------------------------------------


def test_gc_k5_illumination_locks_karma_at_plus_10_and_keeps_the_stored_one():
    r, rolls = roll([66], 50, karma=-3, posture="illumination")
    assert (r.karma_used, r.outcome, r.karma_before, r.karma_after, r.locked) == (10, "critical_failure", -3, -3, True)
    r, rolls = roll([50, 4], 50, karma=0, posture="illumination")
    assert (r.score, r.outcome) == (46, "success")
    assert rolls[1] == ("d10", 4, "karma")


def test_gc_k5_sepulcrale_locks_karma_at_minus_10():
    r, _ = roll([42], 50, karma=4, posture="sepulcrale")
    assert (r.karma_used, r.outcome, r.karma_after) == (-10, "critical_success", 4)
    r, _ = roll([95, 10], 50, karma=4, posture="sepulcrale", extreme_scores=True)
    assert (r.score, r.outcome, r.karma_after) == (105, "super_critical_failure", 4)


def test_gc_k5_ordinary_postures_do_not_lock():
    r, _ = roll([42], 50, karma=4, posture="offensive")
    assert (r.karma_used, r.karma_after, r.locked) == (4, 2, False)


# --- properties (GC-K1, GC-S4, replay) ---------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    karma=st.integers(-10, 10),
    target=st.integers(-20, 130),
    seed=st.integers(0, 2**32),
    posture=st.sampled_from([None, "offensive", "defensive", "illumination", "sepulcrale"]),
    extreme=st.booleans(),
    n=st.integers(1, 30),
)
def test_gc_k1_gc_s4_karma_stays_in_range_and_logged_dice_replay(karma, target, seed, posture, extreme, n):
    source = RandomDice(random.Random(seed))
    for _ in range(n):
        mark = source.mark()
        r = resolve_test(source, target, karma, posture=posture, extreme_scores=extreme)
        assert -10 <= r.karma_after <= 10
        logged = [x.value for x in source.since(mark)]
        table = TableDice(logged)
        replay = resolve_test(table, target, karma, posture=posture, extreme_scores=extreme)
        table.finish()
        assert replay == r
        assert result_from_dice(r.natural, r.karma_die, target, karma, posture=posture, extreme_scores=extreme) == r
        karma = r.karma_after
