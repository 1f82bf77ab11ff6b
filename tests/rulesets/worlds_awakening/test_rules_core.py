"""Rules-level tests of worlds-awakening (worlds-awakening.md), driven by table dice."""

from __future__ import annotations

import pytest

from app.rulesets.worlds_awakening.rules import core as wa
from app.rules.dice import TableDice
from app.rules.errors import RuleError


def roll(spec: wa.TestSpec, natural: int) -> wa.TestResult:
    source = TableDice([natural])
    r = wa.roll_test(spec, source)
    source.finish()
    return r


# --- WA-T1 / WA-T2 ------------------------------------------------------------------


def test_wa_t1_total_is_d20_plus_characteristic_plus_modifiers_success_iff_ge_threshold():
    s = wa.TestSpec(stat_value=2, threshold=12, modifier=1)
    r = roll(s, 9)
    assert (r.natural, r.total, r.outcome) == (9, 12, "success")
    assert roll(s, 8).outcome == "failure"


@pytest.mark.parametrize(
    "name, default", [("tres_facile", 2), ("facile", 7), ("moderee", 12), ("difficile", 17), ("tres_difficile", 20)]
)
def test_wa_t2_name_only_gives_the_band_middle_rounded_down(name, default):
    assert wa.threshold(name, None) == default


def test_wa_t2_threshold_must_lie_in_the_named_band():
    assert wa.threshold("moderee", 14) == 14
    assert wa.threshold("tres_difficile", 27) == 27
    assert wa.threshold(None, 8) == 8
    with pytest.raises(RuleError) as e:
        wa.threshold("moderee", 15)
    assert e.value.field == "target"
    with pytest.raises(RuleError) as e:
        wa.threshold("tres_difficile", 19)
    assert e.value.field == "target"
    with pytest.raises(RuleError) as e:
        wa.threshold(None, None)
    assert e.value.field == "difficulty"


# --- WA-T3 / WA-T4 criticals ----------------------------------------------------------


def test_wa_t3_natural_20_succeeds_whatever_the_total():
    r = roll(wa.TestSpec(stat_value=-4, threshold=30), 20)
    assert (r.total, r.outcome, r.success) == (16, "critical_success", True)


def test_wa_t3_natural_1_fails_whatever_the_total():
    r = roll(wa.TestSpec(stat_value=6, threshold=2), 1)
    assert (r.total, r.outcome, r.success) == (7, "critical_failure", False)


@pytest.mark.parametrize(
    "cha, fail_max, success_min",
    [
        (-5, 3, 20),
        (-4, 3, 20),
        (-3, 2, 20),
        (-2, 2, 20),
        (-1, 1, 20),
        (0, 1, 20),
        (1, 1, 20),
        (2, 1, 19),
        (3, 1, 19),
        (4, 1, 18),
        (5, 1, 18),
        (6, 1, 17),
        (7, 1, 17),
    ],
)
def test_wa_t4_cha_widens_critical_ranges(cha, fail_max, success_min):
    assert (wa.crit_failure_max(cha), wa.crit_success_min(cha)) == (fail_max, success_min)


def test_wa_t4_cha_critical_ranges_apply_to_tests():
    assert roll(wa.TestSpec(stat_value=0, threshold=20, cha=4), 18).outcome == "critical_success"
    assert roll(wa.TestSpec(stat_value=0, threshold=20, cha=3), 18).outcome == "failure"
    assert roll(wa.TestSpec(stat_value=5, threshold=5, cha=-4), 3).outcome == "critical_failure"
    assert roll(wa.TestSpec(stat_value=5, threshold=5, cha=-1), 3).outcome == "success"


# --- WA-T5 pending ±2 -----------------------------------------------------------------


def test_wa_t5_pending_modifier_adds_to_the_total():
    assert roll(wa.TestSpec(stat_value=1, threshold=12, pending=2), 9).outcome == "success"
    assert roll(wa.TestSpec(stat_value=1, threshold=12), 9).outcome == "failure"
    assert roll(wa.TestSpec(stat_value=1, threshold=12, pending=-2), 11).total == 10


# --- WA-T6 challenges -------------------------------------------------------------------


def test_wa_t6_challenge_succeeds_at_the_successes_needed():
    c = wa.new_challenge("bombe", 2)
    c = wa.advance(c, True)
    assert (c.successes, c.turns, c.status) == (1, 1, "in_progress")
    c = wa.advance(wa.advance(c, False), True)
    assert (c.successes, c.failures, c.turns, c.status) == (2, 1, 3, "succeeded")
    with pytest.raises(RuleError) as e:
        wa.advance(c, True)
    assert e.value.field == "for_challenge"


def test_wa_t6_challenge_fails_once_failures_exceed_those_allowed():
    c = wa.new_challenge("rituel", 3, failures_allowed=1)
    c = wa.advance(c, False)
    assert c.status == "in_progress"
    c = wa.advance(c, False)
    assert (c.failures, c.status) == (2, "failed")


def test_wa_t6_challenge_without_failures_allowed_never_fails():
    c = wa.new_challenge("machine", 1)
    for _ in range(10):
        c = wa.advance(c, False)
    assert (c.failures, c.turns, c.status) == (10, 10, "in_progress")


def test_wa_t6_new_challenge_validates():
    with pytest.raises(RuleError) as e:
        wa.new_challenge("x", 0)
    assert e.value.field == "successes_needed"
    with pytest.raises(RuleError) as e:
        wa.new_challenge("x", 1, -1)
    assert e.value.field == "failures_allowed"


# --- WA-S -------------------------------------------------------------------------------


def test_wa_s1_six_characteristics():
    assert wa.STATS == ("FOR", "DEX", "CON", "INT", "SAG", "CHA")


# rule: WA-S2
def test_wa_s2_level_range_and_weapon_damage_dice():
    assert wa.MAX_LEVEL == 8


# rule: WA-S3
def test_wa_s3_defenses_and_initiative():
    assert wa.physical_defense(con=2, level=3) == 15
    assert wa.magical_defense(sag=-1, level=3) == 12
    assert wa.initiative(dex=1) == 11


# --- WA-C combat ---------------------------------------------------------------------------


# rule: WA-C1
def test_wa_c1_attack_adds_characteristic_and_level_hits_iff_total_ge_defense():
    a = wa.attack(2, 3, 0, "1d8", 15, TableDice([10, 6]))  # 10 + 2 + 3 = 15
    assert (a.total, a.hit, a.damage, a.bonus_damage) == (15, True, 6, False)
    miss = wa.attack(2, 3, 0, "1d8", 16, TableDice([10]))
    assert (miss.hit, miss.damage) == (False, 0)


# rule: WA-C2
def test_wa_c2_critical_at_or_above_defense_rolls_damage_dice_twice_modifiers_once():
    dice = TableDice([20, 5, 7])
    a = wa.attack(2, 1, 0, "1d8+2", 15, dice)
    dice.finish()
    assert (a.critical, a.bonus_damage, a.damage, a.damage_rolls) == ("success", True, 5 + 7 + 2, (5, 7))
    assert [r.purpose for r in dice.rolls] == ["attack", "damage", "bonus damage"]


# rule: WA-C2
def test_wa_c2_critical_below_defense_hits_for_normal_damage():
    dice = TableDice([19, 4])  # CHA 2 → critical on 19; 19 + 0 + 1 = 20 < 25
    a = wa.attack(0, 1, 2, "1d6", 25, dice)
    dice.finish()
    assert (a.critical, a.hit, a.bonus_damage, a.damage) == ("success", True, False, 4)


# rule: WA-C3
def test_wa_c3_critical_failure_always_misses():
    a = wa.attack(10, 8, 0, "1d8", 5, TableDice([1]))
    assert (a.critical, a.hit, a.damage) == ("failure", False, 0)
    a = wa.attack(10, 8, -4, "1d8", 5, TableDice([3]))
    assert (a.critical, a.hit) == ("failure", False)


# rule: WA-C4
def test_wa_c4_turn_order_initiative_highest_first_ties_by_d20_rolloff():
    dice = TableDice([12, 12, 3, 15])  # indices 0 and 2 tie at 11: 12/12, then 3/15
    order = wa.turn_order([1, 4, 1, -2], dice)
    dice.finish()
    assert [(e.index, e.initiative, e.rolloffs) for e in order] == [
        (1, 14, ()),
        (2, 11, (12, 15)),
        (0, 11, (12, 3)),
        (3, 8, ()),
    ]


# rule: WA-C5
def test_wa_c5_hp_at_level_1_is_hit_dice_max_and_damage_stops_at_0_down():
    assert wa.apply_damage(12, 5) == (7, False)
    assert wa.apply_damage(5, 12) == (0, True)
    assert wa.apply_damage(5, 5) == (0, True)


def test_wa_t5_a_pending_modifier_is_used_up_by_the_next_test_of_its_characteristic_only():
    pending = {"CHA": 2, "FOR": -2}
    assert wa.use_pending(pending, "CHA") == 2
    assert pending == {"FOR": -2}  # taken out of the sheet's map; the other stays pending
    assert wa.use_pending(pending, "CHA") == 0  # used once: the next test has none
    assert wa.use_pending(pending, "DEX") == 0 and pending == {"FOR": -2}
