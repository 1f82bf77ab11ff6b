"""Asgard tests and heroism (AS-S1, AS-T1..T5, T7, T8, AS-H1, H6), driven by table dice."""

from fractions import Fraction
from itertools import product

import icepool
import pytest

from app.rulesets.asgard.rules import odds as odds_rules
from app.rulesets.asgard.rules.core import (
    TestSpec,
    automatic_failure,
    check_retry_of,
    degree_of,
    difficulty_target,
    roll_test,
    skill_key,
    skill_value,
    spend_heroism,
)
from app.rules.dice import TableDice
from app.rules.errors import InsufficientResource, RuleError
from app.kit.errors import Conflict


def roll(spec, dice):
    source = TableDice(dice)
    result = roll_test(spec, source)
    source.finish()
    return result, source


# --- AS-S1 -----------------------------------------------------------------


def test_as_s1_skill_names_are_normalized_and_standard_skills_default_to_zero():
    assert skill_key("Défense") == "defense"
    assert skill_value({"survie": 3}, "Survie") == 3
    assert skill_value({"survie": 3}, "volonte") == 0
    with pytest.raises(RuleError) as e:
        skill_value({"survie": 3}, "forge")
    assert e.value.field == "skill"


# --- AS-T1 / T2 ------------------------------------------------------------


def test_as_t1_success_iff_result_reaches_the_difficulty():
    ok, source = roll(TestSpec("survie", 3, target=15), [3, 4, 5])
    assert (ok.natural, ok.score, ok.target, ok.outcome, ok.success) == (12, 15, 15, "success", True)
    assert [r.purpose for r in source.rolls] == ["test", "test", "test"]
    ko, _ = roll(TestSpec("survie", 3, target=15), [3, 4, 4])
    assert (ko.natural, ko.score, ko.outcome, ko.success) == (11, 14, "failure", False)


def test_as_t1_modifier_adds_to_the_result():
    result, _ = roll(TestSpec("survie", 3, modifier=2, target=15), [3, 4, 3])
    assert (result.score, result.outcome) == (15, "success")


def test_as_t2_difficulty_table():
    assert [difficulty_target(d, None) for d in ("facile", "moyen", "difficile", "heroique")] == [10, 15, 20, 25]
    assert difficulty_target(None, 17) == 17
    assert difficulty_target(None, None) is None
    with pytest.raises(RuleError) as e:
        difficulty_target("impossible", None)
    assert e.value.field == "difficulty"


# --- AS-T3 -----------------------------------------------------------------


def test_as_t3_all_ones_is_an_automatic_failure_whatever_the_skill():
    result, _ = roll(TestSpec("survie", 30, target=10), [1, 1, 1])
    assert (result.score, result.automatic, result.outcome, result.success) == (
        33,
        "failure",
        "critical_failure",
        False,
    )


def test_as_t3_three_sixes_is_an_automatic_success_whatever_the_difficulty():
    result, _ = roll(TestSpec("survie", 0, target=40), [6, 6, 6])
    assert (result.score, result.automatic, result.outcome, result.success) == (18, "success", "critical_success", True)


def test_as_t3_with_4d6_any_three_sixes_succeed_and_all_four_ones_fail():
    three, _ = roll(TestSpec("survie", 0, target=40, heroism_4d6=True), [6, 2, 6, 6])
    assert three.outcome == "critical_success"
    ones, _ = roll(TestSpec("survie", 30, target=10, heroism_4d6=True), [1, 1, 1, 1])
    assert ones.outcome == "critical_failure"
    not_all, _ = roll(TestSpec("survie", 5, target=10, heroism_4d6=True), [1, 1, 1, 2])
    assert (not_all.automatic, not_all.score, not_all.outcome) == (None, 10, "success")
    two_sixes, _ = roll(TestSpec("survie", 0, target=40, heroism_4d6=True), [6, 6, 5, 6 - 1])
    assert two_sixes.outcome == "failure"


# --- AS-T4 -----------------------------------------------------------------


def test_as_t4_retry_without_improvement_fails_automatically_without_dice():
    failed = TestSpec("survie", 3, target=15)
    for same_or_worse in (
        TestSpec("survie", 3, target=15),
        TestSpec("survie", 3, modifier=-1, target=15),
        TestSpec("survie", 3, target=20),
    ):
        assert odds_rules.retry_odds([failed], same_or_worse).improved is False
    result = automatic_failure(TestSpec("survie", 3, target=15))
    assert (result.dice, result.natural, result.score, result.outcome, result.success) == (
        (),
        None,
        None,
        "failure",
        False,
    )


def test_as_t4_retry_with_improvement_rolls_normally():
    """AS-T4 (Decision): the exact chance of success, strictly higher: a higher skill or
    modifier, a lower target, the heroism die, the proper skill after a close one."""
    failed = TestSpec("survie", 3, target=15)
    for better in (
        TestSpec("survie", 4, target=15),
        TestSpec("survie", 3, modifier=2, target=15),
        TestSpec("survie", 3, target=10),
        TestSpec("survie", 3, target=15, heroism_4d6=True),
    ):
        odds = odds_rules.retry_odds([failed], better)
        assert odds.improved is True and odds.retry > odds.failed == Fraction(81, 216)
    close = TestSpec("perception", 3, target=15, close_skill=True)  # needs 20
    assert odds_rules.retry_odds([close], TestSpec("survie", 3, target=15)).improved is True
    # the best of the failed attempts is the bar
    assert (
        odds_rules.retry_odds([TestSpec("survie", 3, target=20), failed], TestSpec("survie", 3, target=17)).improved
        is False
    )


def test_as_t4_only_a_failed_test_of_the_same_skill_is_retried():
    with pytest.raises(RuleError) as e:
        check_retry_of(TestSpec("survie", 3, target=15), True, TestSpec("survie", 4, target=15))
    assert e.value.field == "retry_of"
    with pytest.raises(RuleError):
        check_retry_of(TestSpec("combat", 3, target=15), False, TestSpec("survie", 3, target=15))
    # AS-T7: another skill when one of the two is a close skill
    check_retry_of(TestSpec("perception", 3, target=15, close_skill=True), False, TestSpec("survie", 3, target=15))


# --- AS-T5 -----------------------------------------------------------------


@pytest.mark.parametrize(
    "score,degree",
    [
        (9, "none"),
        (10, "facile"),
        (14, "facile"),
        (15, "moyen"),
        (19, "moyen"),
        (20, "difficile"),
        (24, "difficile"),
        (25, "heroique"),
        (40, "heroique"),
    ],
)
def test_as_t5_degree_thresholds(score, degree):
    assert degree_of(score) == degree


def test_as_t5_open_test_fills_the_degree():
    result, _ = roll(TestSpec("survie", 3), [5, 5, 4])
    assert (result.target, result.score, result.degree, result.outcome) == (None, 17, "moyen", "success")
    low, _ = roll(TestSpec("survie", 3), [2, 2, 2])
    assert (low.score, low.degree, low.outcome) == (9, "none", "failure")


def test_as_t5_with_as_t3_automatic_results_in_an_open_test():
    ones, _ = roll(TestSpec("survie", 20), [1, 1, 1])
    assert (ones.score, ones.degree, ones.outcome) == (23, "none", "critical_failure")
    sixes, _ = roll(TestSpec("survie", -15), [6, 6, 6])
    assert (sixes.score, sixes.degree, sixes.outcome) == (3, "facile", "critical_success")


# --- AS-T7 / T8 ------------------------------------------------------------


def test_as_t7_close_skill_raises_a_simple_difficulty_by_5():
    result, _ = roll(TestSpec("perception", 5, target=15, close_skill=True), [5, 5, 5])
    assert (result.score, result.target, result.outcome) == (20, 20, "success")
    miss, _ = roll(TestSpec("perception", 5, target=15, close_skill=True), [5, 5, 4])
    assert (miss.score, miss.target, miss.outcome) == (19, 20, "failure")


def test_as_t7_close_skill_in_a_confrontation_takes_5_off_the_result():
    result, _ = roll(TestSpec("combat", 6, close_skill=True, confrontation=True), [4, 4, 4])
    assert (result.score, result.target) == (13, None)


# rule: AS-T8
def test_as_t8_take_11_rolls_no_dice():
    result, source = roll(TestSpec("combat", 4, target=15, take_11=True), [])
    assert (result.dice, result.natural, result.score, result.outcome) == ((), 11, 15, "success")
    assert source.rolls == []


# --- AS-H1 / H6 ------------------------------------------------------------


def test_as_h1_heroism_rolls_4d6_all_summed():
    result, source = roll(TestSpec("survie", 2, target=20, heroism_4d6=True), [5, 4, 3, 6])
    assert (result.natural, result.score, result.outcome, result.heroism_die) == (18, 20, "success", 6)
    assert [r.purpose for r in source.rolls] == ["test", "test", "test", "heroism"]


# rule: AS-H6
def test_as_h6_heroism_never_below_zero():
    assert spend_heroism(2, 2, "x") == 0
    with pytest.raises(InsufficientResource) as e:
        spend_heroism(1, 2, "cancelling damage")
    assert isinstance(e.value, Conflict)
    assert (e.value.field, e.value.extra) == ("heroism", {"needed": 2, "available": 1})


# --- odds ------------------------------------------------------------------


def brute_force(spec):
    n = 4 if spec.heroism_4d6 else 3
    counts, degrees = {}, {}
    for dice in product(range(1, 7), repeat=n):
        result = odds_rules.resolve(spec, dice, natural=sum(dice))
        counts[result.outcome] = counts.get(result.outcome, 0) + 1
        if result.degree:
            degrees[result.degree] = degrees.get(result.degree, 0) + 1
    total = 6**n
    return {k: Fraction(v, total) for k, v in counts.items()}, {k: Fraction(v, total) for k, v in degrees.items()}


def icepool_odds(spec):
    n = 4 if spec.heroism_4d6 else 3
    bonus = odds_rules.score_bonus(spec)
    target = odds_rules.effective_target(spec)

    def classify(t):
        if all(x == 1 for x in t):
            return "critical_failure"
        if t.count(6) >= 3:
            return "critical_success"
        threshold = 10 if target is None else target
        return "success" if sum(t) + bonus >= threshold else "failure"

    die = icepool.d6.pool(n).expand().map(classify, star=False)
    return {k: die.probability(k) for k in die.outcomes()}


SPECS = [
    TestSpec("survie", s, modifier=mod, target=t, heroism_4d6=h, close_skill=c)
    for s in (-20, 0, 3, 10, 30)
    for mod in (0, -2)
    for t in (None, 10, 15, 25)
    for h in (False, True)
    for c in (False, True)
]


@pytest.mark.parametrize("spec", SPECS)
def test_as_t1_t3_t5_h1_odds_match_brute_force_and_icepool(spec):
    outcomes, degrees = odds_rules.odds_of_test(spec)
    expected, expected_degrees = brute_force(spec)
    assert {k: v for k, v in outcomes.items() if v} == expected
    assert sum(outcomes.values()) == 1
    assert {k: v for k, v in outcomes.items() if v} == icepool_odds(spec)
    if spec.target is None:
        assert {k: v for k, v in degrees.items() if v} == expected_degrees
    else:
        assert degrees is None


def test_as_t3_odds_of_automatic_results_exact():
    three, _ = odds_rules.odds_of_test(TestSpec("survie", 3, target=15))
    assert (three["critical_success"], three["critical_failure"]) == (Fraction(1, 216), Fraction(1, 216))
    four, _ = odds_rules.odds_of_test(TestSpec("survie", 3, target=15, heroism_4d6=True))
    assert (four["critical_success"], four["critical_failure"]) == (Fraction(21, 1296), Fraction(1, 1296))


# rule: AS-T8
def test_as_t8_odds_of_take_11_are_certain():
    outcomes, _ = odds_rules.odds_of_test(TestSpec("combat", 4, target=15, take_11=True))
    assert outcomes == {"success": 1, "failure": 0, "critical_success": 0, "critical_failure": 0}


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5])
def test_as_t1_t3_h1_multiset_table_equals_the_ordered_rolls(n):
    """AS-T3 on the sorted multisets, weighted by their orderings, counts every ordered roll exactly."""
    plain, auto_success_by_sum, auto_failure = {}, {}, 0
    for dice in product(range(1, 7), repeat=n):
        auto = odds_rules.automatic_result(dice)
        if auto == "success":
            auto_success_by_sum[sum(dice)] = auto_success_by_sum.get(sum(dice), 0) + 1
        elif auto == "failure":
            auto_failure += 1
        else:
            plain[sum(dice)] = plain.get(sum(dice), 0) + 1
    t = odds_rules._Table(n)
    assert t.total == 6**n
    assert {s: c for s, c in enumerate(t.plain) if c} == plain
    assert {s: c for s, c in enumerate(t.auto_success_by_sum) if c} == auto_success_by_sum
    assert (t.auto_success, t.auto_failure) == (sum(auto_success_by_sum.values()), auto_failure)
    assert [t.plain_at_least(s) for s in range(-2, 6 * n + 3)] == [
        sum(c for k, c in plain.items() if k >= s) for s in range(-2, 6 * n + 3)
    ]
