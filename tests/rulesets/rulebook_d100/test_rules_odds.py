"""Exact odds of rulebook-d100 tests (RB-T3..T8): brute force through the dice path,
and icepool (test-only oracle) over an independent statement of the rules."""

from __future__ import annotations

from fractions import Fraction

import icepool
import pytest
from hypothesis import given, settings, strategies as st

from app.rulesets.rulebook_d100.rules import core as rb
from app.rules.dice import TableDice

SPECIAL = ("impossible", "quasi_impossible", "quasi_inratable", "inratable")
MODS = {
    "simple": 15,
    "facile": 30,
    "tres_facile": 50,
    "simplissime": 100,
    "complexe": -15,
    "difficile": -30,
    "tres_difficile": -50,
    "hardcore": -100,
}


def brute_force(spec: rb.TestSpec):
    """Every face through the same path a request takes (TableDice → roll_test)."""
    counts: dict[str, int] = {}
    levels: dict[int, int] = {}
    for face in range(1, 101):
        r = rb.roll_test(spec, TableDice([face]))
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
        levels[r.level] = levels.get(r.level, 0) + 1
    return counts, levels


def reference_outcome(spec: rb.TestSpec, die: int) -> str:
    """The page's rules restated independently (RB-T1..T8)."""
    stat = spec.stat_value // 2 if spec.weakened else spec.stat_value
    pct = stat + spec.skill_bonus + MODS.get(spec.difficulty, 0) + spec.modifier
    cs = spec.crit_chance + ((pct - 100) // 5 if spec.overflow_crit and pct > 100 else 0)
    cs = min(cs, 100 - spec.crit_chance)
    crit_s, crit_f = die <= cs, die > 100 - spec.crit_chance
    if spec.difficulty == "impossible":
        return "critical_failure" if crit_f else "failure"
    if spec.difficulty == "quasi_impossible":
        return "critical_success" if crit_s else ("critical_failure" if crit_f else "failure")
    if spec.difficulty == "quasi_inratable":
        return "critical_failure" if crit_f else ("critical_success" if crit_s else "success")
    if spec.difficulty == "inratable":
        return "critical_success" if crit_s else "success"
    without_difficulty = pct - MODS.get(spec.difficulty, 0)
    if crit_s and (spec.rescue_negative or not (pct <= 0 < without_difficulty)):
        return "critical_success"
    if crit_f and (pct <= 100 or spec.ruin_over_100):
        return "critical_failure"
    return "success" if die <= pct else "failure"


def icepool_odds(spec: rb.TestSpec) -> dict[str, Fraction]:
    die = icepool.d100.map(lambda x: reference_outcome(spec, x))
    return {o: die.probability(o) for o in die.outcomes()}


specs = st.builds(
    rb.TestSpec,
    stat_value=st.integers(-50, 250),
    skill_bonus=st.integers(-30, 60),
    weakened=st.booleans(),
    difficulty=st.sampled_from([None, *MODS, *SPECIAL]),
    modifier=st.integers(-40, 40),
    crit_chance=st.integers(0, 50),
    overflow_crit=st.booleans(),
    rescue_negative=st.booleans(),
    ruin_over_100=st.booleans(),
)


def nonzero(d: dict[str, Fraction]) -> dict[str, Fraction]:
    return {k: v for k, v in d.items() if v}


@settings(max_examples=150, deadline=None)
@given(specs)
def test_rb_t3_odds_match_brute_force_and_icepool(spec):
    outcomes, levels = rb.odds(spec)
    counts, level_counts = brute_force(spec)
    assert nonzero(outcomes) == {o: Fraction(n, 100) for o, n in counts.items()}
    assert levels == {lv: Fraction(n, 100) for lv, n in level_counts.items()}
    assert nonzero(outcomes) == icepool_odds(spec)
    assert sum(outcomes.values()) == 1


@pytest.mark.parametrize(
    "spec, expected",
    [
        # RB-T6: 130% — criticals ruin by default (5%), not when the option is off
        (
            rb.TestSpec(130),
            {"critical_success": Fraction(5, 100), "success": Fraction(90, 100), "critical_failure": Fraction(5, 100)},
        ),
        (rb.TestSpec(130, ruin_over_100=False), {"critical_success": Fraction(5, 100), "success": Fraction(95, 100)}),
        # RB-T6: −10% made so by the difficulty — rescued by a critical by default, not when off
        (
            rb.TestSpec(20, difficulty="difficile"),
            {"critical_success": Fraction(5, 100), "failure": Fraction(90, 100), "critical_failure": Fraction(5, 100)},
        ),
        (
            rb.TestSpec(20, difficulty="difficile", rescue_negative=False),
            {"failure": Fraction(95, 100), "critical_failure": Fraction(5, 100)},
        ),
        # RB-T6: −10% from the stat itself follows RB-T5 whatever the option
        (
            rb.TestSpec(-10, rescue_negative=False),
            {"critical_success": Fraction(5, 100), "failure": Fraction(90, 100), "critical_failure": Fraction(5, 100)},
        ),
        # RB-T7: 130% with overflow → crit success 5 + 6 = 11
        (
            rb.TestSpec(130, overflow_crit=True),
            {"critical_success": Fraction(11, 100), "success": Fraction(84, 100), "critical_failure": Fraction(5, 100)},
        ),
        # RB-T8
        (
            rb.TestSpec(90, difficulty="impossible"),
            {"failure": Fraction(95, 100), "critical_failure": Fraction(5, 100)},
        ),
        (
            rb.TestSpec(90, difficulty="quasi_inratable"),
            {"critical_success": Fraction(5, 100), "success": Fraction(90, 100), "critical_failure": Fraction(5, 100)},
        ),
    ],
)
def test_rb_t6_t7_t8_exact_odds(spec, expected):
    assert nonzero(rb.odds(spec)[0]) == expected
