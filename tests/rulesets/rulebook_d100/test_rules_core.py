"""Rules-level tests of rulebook-d100 (rulebook-d100.md), driven by table dice."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from app.rulesets.rulebook_d100.rules import core as rb
from app.rules.dice import TableDice, dice_source
from app.rules.errors import DiceNeeded, RuleError


def spec(stat: int = 50, **kw) -> rb.TestSpec:
    return rb.TestSpec(stat_value=stat, **kw)


def roll(s: rb.TestSpec, die: int) -> rb.TestResult:
    source = TableDice([die])
    r = rb.roll_test(s, source)
    source.finish()
    return r


# --- RB-T4: the seed's worked table ----------------------------------------------


@pytest.mark.parametrize(
    "pct, die, level, outcome",
    [
        (40, 51, -1, "failure"),
        (80, 34, 5, "success"),
        (75, 74, 0, "success"),
        (75, 78, 0, "failure"),
        (120, 22, 10, "success"),
        (-25, 90, -11, "failure"),
    ],
)
def test_rb_t4_seed_table(pct, die, level, outcome):
    # crit_chance 0 so that no critical interferes with the worked examples
    r = roll(spec(pct, crit_chance=0), die)
    assert (r.percentage, r.roll, r.level, r.outcome) == (pct, die, level, outcome)


def test_rb_t4_truncates_toward_zero():
    assert rb.trunc10(-25) == -2
    assert rb.trunc10(-9) == 0
    assert rb.trunc10(99) == 9
    assert rb.success_level(-25, 90) == -11


# --- RB-T1 / RB-T2 / RB-T3 -------------------------------------------------------------


def test_rb_t1_percentage_sums_stat_skill_difficulty_modifier():
    s = spec(55, skill_bonus=20, difficulty="difficile", modifier=3)
    assert rb.percentage(s) == 55 + 20 - 30 + 3


def test_rb_t1_weakened_roll_halves_stat_rounded_down_but_not_skill():
    assert rb.percentage(spec(55, weakened=True)) == 27
    assert rb.percentage(spec(55, skill_bonus=10, weakened=True, difficulty="facile")) == 27 + 10 + 30


@pytest.mark.parametrize(
    "difficulty, mod",
    [
        ("simple", 15),
        ("facile", 30),
        ("tres_facile", 50),
        ("simplissime", 100),
        ("complexe", -15),
        ("difficile", -30),
        ("tres_difficile", -50),
        ("hardcore", -100),
    ],
)
def test_rb_t2_difficulty_modifiers(difficulty, mod):
    assert rb.difficulty_modifier(difficulty) == mod
    assert rb.percentage(spec(50, difficulty=difficulty)) == 50 + mod


def test_rb_t2_unknown_difficulty_is_a_422_on_difficulty():
    with pytest.raises(RuleError) as e:
        rb.percentage(spec(50, difficulty="moyenne"))
    assert e.value.field == "difficulty"


def test_rb_t3_roll_under_success_iff_roll_le_percentage():
    assert roll(spec(60), 60).outcome == "success"
    assert roll(spec(60), 61).outcome == "failure"


def test_rb_t3_die_100_is_the_worst_failure():
    r = roll(spec(99, crit_chance=0), 100)
    assert (r.outcome, r.level) == ("failure", -1)


def test_rb_t3_out_of_range_table_die_is_refused():
    with pytest.raises(RuleError):
        rb.roll_test(spec(), TableDice([0]))
    with pytest.raises(DiceNeeded):
        rb.roll_test(spec(), TableDice([]))


# --- RB-T5 criticals ------------------------------------------------------------------


def test_rb_t5_critical_success_doubles_level_positive():
    r = roll(spec(60, crit_chance=5), 5)
    assert (r.outcome, r.level) == ("critical_success", 12)


def test_rb_t5_critical_success_of_a_low_percentage_is_positive():
    # 3% and a 3: level 0 − 0 = 0; with a 5% chance and 14 → level 1-1... use a 4 on 3%
    r = roll(spec(3, crit_chance=5), 4)  # would fail (4 > 3), but 4 ≤ 5 is critical
    assert (r.outcome, r.level) == ("critical_success", 0)
    r = roll(spec(-25, crit_chance=5), 5)  # level −2 − 0 = −2 → +4
    assert (r.outcome, r.level) == ("critical_success", 4)


def test_rb_t5_critical_failure_overrides_120_percent_the_seed_example():
    r = roll(spec(120, crit_chance=3), 98)
    assert r.outcome == "critical_failure"
    assert r.level == -2 * abs(12 - 9)


def test_rb_t5_critical_failure_range_is_above_100_minus_crit_chance():
    assert roll(spec(50, crit_chance=3), 97).outcome == "failure"
    assert roll(spec(50, crit_chance=3), 98).outcome == "critical_failure"
    assert roll(spec(50, crit_chance=3), 98).level == -2 * abs(5 - 9)
    assert roll(spec(50, crit_chance=3), 3).outcome == "critical_success"
    assert roll(spec(50, crit_chance=3), 4).outcome == "success"


def test_rb_t5_crit_chance_zero_has_no_criticals():
    assert roll(spec(50, crit_chance=0), 1).outcome == "success"
    assert roll(spec(50, crit_chance=0), 100).outcome == "failure"


# --- RB-T6 GM options -----------------------------------------------------------------


def test_rb_t6_critical_success_rescues_negative_percentage_by_default():
    assert roll(spec(-10), 2).outcome == "critical_success"


def test_rb_t6_option_off_critical_success_cannot_rescue_negative_percentage():
    r = roll(spec(20, difficulty="difficile", rescue_negative=False), 2)  # 20 - 30 = -10
    assert (r.percentage, r.outcome, r.level) == (-10, "failure", -1)
    # a non-negative percentage is still rescued
    assert roll(spec(0, rescue_negative=False), 2).outcome == "critical_success"


def test_rb_t6_critical_failure_ruins_over_100_by_default_and_not_when_off():
    assert roll(spec(130), 99).outcome == "critical_failure"
    r = roll(spec(130, ruin_over_100=False), 99)
    assert (r.outcome, r.level) == ("success", 13 - 9)
    assert roll(spec(100, ruin_over_100=False), 99).outcome == "critical_failure"


# --- RB-T7 overflow crit -----------------------------------------------------------------


def test_rb_t7_overflow_adds_one_crit_per_full_five_points_above_100():
    s = spec(114, crit_chance=5, overflow_crit=True)  # +2 (14 // 5)
    assert rb.crit_ranges(s, 114) == (7, 5)
    assert roll(s, 7).outcome == "critical_success"
    assert roll(s, 8).outcome == "success"
    assert roll(spec(114, crit_chance=5), 7).outcome == "success"  # not asked


def test_rb_t7_overflow_does_not_widen_critical_failure_nor_apply_at_100():
    s = spec(100, crit_chance=5, overflow_crit=True)
    assert rb.crit_ranges(s, 100) == (5, 5)
    huge = spec(1000, crit_chance=5, overflow_crit=True)
    assert rb.crit_ranges(huge, 1000) == (95, 5)
    assert roll(huge, 96).outcome == "critical_failure"


# --- RB-T8 special difficulties ----------------------------------------------------------


@pytest.mark.parametrize(
    "difficulty, die, outcome",
    [
        ("impossible", 1, "failure"),
        ("impossible", 50, "failure"),
        ("impossible", 96, "critical_failure"),
        ("quasi_impossible", 5, "critical_success"),
        ("quasi_impossible", 6, "failure"),
        ("quasi_impossible", 96, "critical_failure"),
        ("quasi_inratable", 5, "critical_success"),
        ("quasi_inratable", 95, "success"),
        ("quasi_inratable", 96, "critical_failure"),
        ("inratable", 5, "critical_success"),
        ("inratable", 96, "success"),
        ("inratable", 100, "success"),
    ],
)
def test_rb_t8_special_difficulties(difficulty, die, outcome):
    assert roll(spec(50, difficulty=difficulty), die).outcome == outcome


def test_rb_t8_special_difficulty_adds_no_modifier_and_level_follows_outcome():
    r = roll(spec(50, difficulty="impossible"), 12)  # level 5 − 1 = 4, but a failure
    assert (r.percentage, r.level, r.special) == (50, -4, "impossible")
    r = roll(spec(50, difficulty="inratable"), 90)  # level 5 − 9 = −4, but a success
    assert r.level == 4


# --- odds ----------------------------------------------------------------------------


def test_rb_t5_odds_plain_50_percent():
    outcomes, levels = rb.odds(spec(50))
    assert outcomes == {
        "critical_success": rb.Fraction(5, 100),
        "success": rb.Fraction(45, 100),
        "failure": rb.Fraction(45, 100),
        "critical_failure": rb.Fraction(5, 100),
    }
    assert sum(levels.values()) == 1


# --- RB-C1..C3 confrontation and ranking -----------------------------------------------


def test_rb_c1_higher_level_wins():
    a, b = roll(spec(60), 31), roll(spec(70), 55)  # levels 3, 2
    c = rb.confront(a, b, TableDice([]))
    assert (c.winner, c.tiebreak) == (0, "level")


# rule: RB-C2
def test_rb_c2_equal_levels_lower_units_wins():
    a, b = roll(spec(60), 38), roll(spec(60), 32)  # levels 3 and 3; units 8 and 2
    c = rb.confront(a, b, TableDice([]))
    assert (c.winner, c.tiebreak) == (1, "units")


# rule: RB-C2
def test_rb_c2_still_equal_rerolls_d100_lowest_wins_repeating_a_then_b():
    a, b = roll(spec(60), 33), roll(spec(60), 33)
    dice = TableDice([40, 40, 71, 12])
    c = rb.confront(a, b, dice)
    dice.finish()
    assert (c.winner, c.tiebreak, c.rerolls) == (1, "reroll", ((40, 71), (40, 12)))
    assert [r.purpose for r in dice.rolls] == ["tiebreak"] * 4


# rule: RB-C3
def test_rb_c3_ranking_sorts_by_level_then_units_then_rerolls():
    results = [
        roll(spec(50), 45),  # level 1, units 5
        roll(spec(80), 22),  # level 6
        roll(spec(50), 41),  # level 1, units 1
        roll(spec(50), 11),  # level 4
        roll(spec(50), 45),  # level 1, units 5 (tie with #0)
    ]
    sources = [TableDice(d) for d in ([60], [], [], [], [30])]
    placings = rb.rank(results, sources)
    assert [(p.index, p.place, p.tiebreak, p.rerolls) for p in placings] == [
        (1, 1, "level", ()),
        (3, 2, "level", ()),
        (2, 3, "units", ()),
        (4, 4, "reroll", (30,)),
        (0, 5, "reroll", (60,)),
    ]
    for s in sources:
        s.finish()


# rule: RB-C3
def test_rb_c3_three_way_tie_rerolls_only_those_still_tied():
    results = [roll(spec(50), 33)] * 3
    sources = [TableDice(d) for d in ([20, 90], [20, 10], [5])]
    placings = rb.rank(results, sources)
    assert [(p.index, p.rerolls) for p in placings] == [(2, (5,)), (1, (20, 10)), (0, (20, 90))]


# rule: RB-C4
def test_rb_c4_dodge_is_a_confrontation_of_attack_and_dodge():
    attack, dodge = roll(spec(60), 20), roll(spec(60), 10)  # levels 4 and 5
    hit = rb.resolve_attack(attack, "melee", "1d6", TableDice([]), defense="dodge", dodge=dodge)
    assert (hit.hit, hit.dodged, hit.tiebreak, hit.damage) == (False, True, "level", 0)


# --- RB-S ------------------------------------------------------------------------------


# rule: RB-S1
def test_rb_s1_crit_chance_defaults_to_5():
    assert rb.DEFAULT_CRIT_CHANCE == 5
    assert rb.TestSpec(stat_value=50).crit_chance == 5


# rule: RB-S2
def test_rb_s2_weapon_damage_is_any_dice_expression():
    attack = roll(spec(60), 30)  # level 3
    dice = TableDice([3, 7])
    hit = rb.resolve_attack(attack, "melee", "1d4+1d8+1", dice)
    assert hit.damage == 3 + 3 + 7 + 1


# --- RB-F combat --------------------------------------------------------------------------


# rule: RB-F1
def test_rb_f1_default_stats_are_the_ten_at_50():
    assert rb.DEFAULT_STATS == ("FOR", "CON", "HAB", "INT", "SAG", "VOL", "CHA", "DIS", "REL", "PER")
    assert rb.AVERAGE_STAT == 50


# rule: RB-F2
def test_rb_f2_attack_stats_and_pools():
    assert [rb.attack_stat(k) for k in ("melee", "ranged", "morale")] == ["FOR", "PER", "CHA"]
    assert rb.attack_stat("morale", "DIS") == "DIS"
    with pytest.raises(RuleError) as e:
        rb.attack_stat("melee", "PER")
    assert e.value.field == "stat"
    assert (rb.damage_pool("morale"), rb.damage_pool("melee")) == ("pe", "hp")


# rule: RB-F2
def test_rb_f2_damage_is_level_plus_weapon_plus_bonus_and_critical_doubles_level():
    attack = roll(spec(60), 4)  # critical: level (6 − 0) × 2 = 12
    hit = rb.resolve_attack(attack, "melee", "1d8", TableDice([5]), bonus=2)
    assert (hit.hit, hit.damage, hit.weapon_roll, hit.pool) == (True, 12 + 5 + 2, 5, "hp")
    miss = rb.resolve_attack(roll(spec(60), 70), "melee", "1d8", TableDice([]))
    assert (miss.hit, miss.damage) == (False, 0)
    morale = rb.resolve_attack(roll(spec(60), 30), "morale", "1d4", TableDice([2]))
    assert (morale.pool, morale.damage) == ("pe", 3 + 2)


# rule: RB-F3
def test_rb_f3_dodge_stat_and_further_dodges_penalty():
    assert (rb.dodge_stat("melee"), rb.dodge_stat("ranged"), rb.dodge_stat("morale")) == ("HAB", "HAB", "DIS")
    assert [rb.dodge_modifier(n) for n in range(3)] == [0, -10, -20]


# rule: RB-F3
def test_rb_f3_critical_dodge_grants_a_free_attack():
    attack, dodge = roll(spec(60), 20), roll(spec(60), 3)  # 4 vs critical (6 − 0) × 2
    hit = rb.resolve_attack(attack, "melee", "1d6", TableDice([]), defense="dodge", dodge=dodge)
    assert (hit.dodged, hit.free_attack) == (True, True)


# rule: RB-F3
def test_rb_f3_failed_dodge_takes_damage_and_critical_failure_doubles_it():
    attack = roll(spec(60), 20)  # level 4
    plain = rb.resolve_attack(attack, "melee", "1d6", TableDice([3]), defense="dodge", dodge=roll(spec(40), 55))
    assert (plain.hit, plain.damage, plain.doubled) == (True, 7, False)
    crit = rb.resolve_attack(attack, "melee", "1d6", TableDice([3]), defense="dodge", dodge=roll(spec(40), 97))
    assert (crit.hit, crit.damage, crit.doubled) == (True, 14, True)


# rule: RB-F3
def test_rb_f3_absorb_takes_armour_off_damage():
    attack = roll(spec(60), 20)  # level 4
    hit = rb.resolve_attack(attack, "melee", "1d6", TableDice([3]), defense="absorb", armor=5)
    assert hit.damage == 2
    hit = rb.resolve_attack(attack, "melee", "1d6", TableDice([3]), defense="absorb", armor=50)
    assert hit.damage == 0


# rule: RB-F4
def test_rb_f4_initiative_is_a_hab_ranking_with_critical_consequences():
    results = [roll(spec(60), 50), roll(spec(60), 2), roll(spec(60), 99)]
    entries = rb.initiative(results, [TableDice([])] * 3)
    assert [(e.index, e.place, e.extra_action, e.first_round) for e in entries] == [
        (1, 1, True, 1),
        (0, 2, False, 1),
        (2, 3, False, 2),
    ]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 150), st.integers(1, 100)), min_size=2, max_size=6), st.integers(0, 2**32))
# rule: RB-C3
def test_rb_c3_ranking_is_ordered_by_level_then_units_then_rerolls(tests, seed):
    results = [roll(spec(pct), die) for pct, die in tests]
    placings = rb.rank(results, [dice_source(seed=seed)] * len(results))

    def key(r):  # RB-C2: success first, then level, then units (a 100 counts as the worst)
        return (not r.success, -r.level, 10 if r.roll == 100 else r.roll % 10)

    keys = [key(results[p.index]) for p in placings]
    assert keys == sorted(keys)
    assert sorted(p.index for p in placings) == list(range(len(results)))
    assert [p.place for p in placings] == list(range(1, len(results) + 1))
    for p in placings:
        tied = [q for q in placings if q.index != p.index and key(results[q.index]) == key(results[p.index])]
        assert (p.tiebreak == "reroll") == bool(tied)
