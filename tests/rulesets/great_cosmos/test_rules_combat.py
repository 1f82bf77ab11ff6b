"""Great Cosmos encounter rules: postures, attacks, damage, grid, dash, turn order
(GC-P1..P7, GC-D1, GC-D3, GC-D4, GC-O1..O3), with table dice."""

from fractions import Fraction

import pytest

from app.kit.errors import Conflict
from app.rules.dice import TableDice
from app.rules.errors import InsufficientResource, RuleError
from app.rulesets.great_cosmos.rules.core import result_from_dice
from app.rulesets.great_cosmos.rules.postures import (
    Fighter,
    damage_multiplier,
    defense_holds,
    end_special_posture,
    enter_special_posture,
    final_skill_outcome,
    can_defend,
    resolve_attack,
    take_damage,
    use_final_skill,
)
from app.rulesets.great_cosmos.rules.turns import (
    Entrant,
    action_positions,
    check_turn,
    dash,
    distance,
    is_melee,
    turn_order,
)
from tests.factories import GC, stats

STATS = stats(GC, force=60)


def fighter(id_="a", posture="defensive", **kw):
    return Fighter(
        id=id_, stats=dict(STATS), karma=kw.pop("karma", 0), hp=kw.pop("hp", 50), hp_max=100, posture=posture, **kw
    )


def t(natural, target, karma=0):
    return result_from_dice(natural, None, target, karma)


def attack(dice, attacker, defender, **kw):
    src = TableDice(dice)
    kw.setdefault("stat", "force")
    kw.setdefault("damage", "2d6+3")
    out = resolve_attack(src, attacker, defender, **kw)
    src.finish()
    return out, [(r.die, r.value, r.purpose) for r in src.rolls]


# --- GC-P1 / GC-P4 ------------------------------------------------------------------------


def test_gc_p1_offensive_doubles_damage_and_cannot_defend():
    a = fighter(posture="offensive")
    r, rolls = attack([30, 4, 5], a, fighter("b"))
    assert r.hit and (r.damage.raw, r.damage.multiplier, r.damage.total) == (12, 2, 24)
    assert (r.wound.hp_before, r.wound.hp_after) == (50, 26)
    assert rolls == [("d100", 30, "test"), ("d6", 4, "damage"), ("d6", 5, "damage")]
    assert not can_defend(fighter(posture="offensive"))
    with pytest.raises(RuleError) as e:
        attack([30, 4, 5], a, fighter("b", posture="offensive"), reaction="dodge")
    assert e.value.field == "reaction"


def test_gc_p4_damage_expression_and_normal_multiplier():
    r, _ = attack([30, 1, 1, 6], fighter(), fighter("b"), damage="3d6")
    assert (r.damage.raw, r.damage.total) == (8, 8)


# --- GC-P2 ----------------------------------------------------------------------------------


def test_gc_p2_defense_holds_iff_success_and_score_at_most_attack():
    assert defense_holds(t(40, 60), t(35, 55)).holds
    assert not defense_holds(t(40, 60), t(45, 55)).holds
    assert not defense_holds(t(40, 60), t(58, 55)).holds
    assert defense_holds(t(40, 60), t(40, 55)).holds


def test_gc_p2_super_critical_defense_always_holds_and_only_it_stops_a_super_critical_attack():
    assert defense_holds(t(8, 60), t(42, 10)).holds
    assert not defense_holds(t(42, 60), t(5, 55)).holds
    assert defense_holds(t(42, 60), t(42, 55)).holds


def test_gc_p2_critical_defense_marks_riposte():
    d = defense_holds(t(40, 60), t(5, 55))
    assert d.holds and d.riposte_available
    assert not defense_holds(t(40, 60), t(20, 55)).riposte_available


def test_gc_p2_dodge_uses_agilite_and_karma_of_both():
    r, rolls = attack([40, 5], fighter(), fighter("b"), reaction="dodge")
    assert r.defense_holds and r.riposte_available and r.damage is None
    assert r.defender.karma == -1 and r.attacker.karma == 0
    assert r.defense.target == 55
    r, rolls = attack([40, 50, 2, 2], fighter(), fighter("b"), reaction="parry")
    assert not r.defense_holds and r.wound.hp_after == 43
    assert rolls[1] == ("d100", 50, "test")


# --- GC-P3 ----------------------------------------------------------------------------------


def test_gc_p3_failed_attack_misses_and_rolls_nothing_more():
    r, rolls = attack([95], fighter(), fighter("b"), reaction="dodge")
    assert not r.hit and r.damage is None and r.attacker.karma == 1
    assert len(rolls) == 1


def test_gc_p3_stat_named_by_the_request():
    r, _ = attack([50], fighter(), fighter("b"), stat="precision")
    assert r.attack.target == 45 and not r.hit


# --- GC-P5 ------------------------------------------------------------------------------------


def test_gc_p5_entering_illumination_costs_a_light_point_and_rolls_advantage():
    src = TableDice([5])
    e = enter_special_posture(src, "illumination", 2, 1)
    assert (e.light_points, e.dark_points, e.advantage_die, e.advantage) == (1, 1, 5, "bonus_20")
    with pytest.raises(InsufficientResource) as err:
        enter_special_posture(TableDice([]), "illumination", 0, 3)
    assert isinstance(err.value, Conflict)


def test_gc_p5_auto_defense_7_in_10():
    r, rolls = attack([30, 7], fighter(), fighter("b", posture="illumination"))
    assert r.auto_defended and r.damage is None and rolls[1] == ("d10", 7, "auto_defense")
    r, rolls = attack([30, 8, 3, 3], fighter(), fighter("b", posture="illumination"))
    assert not r.auto_defended and r.wound.hp_after == 41


def test_gc_p5_failed_auto_defense_may_still_dodge():
    r, rolls = attack([30, 9, 20, 5], fighter(), fighter("b", posture="illumination"), reaction="dodge")
    assert r.defense_holds and r.defense.karma_used == 10 and r.defense.score == 15
    assert rolls == [("d100", 30, "test"), ("d10", 9, "auto_defense"), ("d100", 20, "test"), ("d10", 5, "karma")]


def test_gc_p2_gc_p5_the_defender_rolls_its_own_dice_in_rule_order():
    """The automatic defence d10 and the dodge come from `defender_dice`; attack and damage from the attacker's."""
    mine, theirs = TableDice([30, 3, 4]), TableDice([9, 40, 5])
    r = resolve_attack(
        mine,
        fighter(),
        fighter("b", posture="illumination"),
        stat="force",
        damage="2d6",
        reaction="dodge",
        defender_dice=theirs,
    )
    mine.finish()
    theirs.finish()
    assert not r.defense_holds and r.damage.total == 7
    assert [(x.value, x.purpose) for x in mine.rolls] == [(30, "test"), (3, "damage"), (4, "damage")]
    assert [(x.value, x.purpose) for x in theirs.rolls] == [(9, "auto_defense"), (40, "test"), (5, "karma")]


def test_gc_p5_no_auto_defense_against_super_critical_unparryable_or_undodgeable():
    r, rolls = attack([42, 1, 1], fighter(), fighter("b", posture="illumination"))
    assert r.auto_defense_die is None and r.wound is not None
    for flag in ("unparryable", "undodgeable"):
        r, rolls = attack([30, 1, 1], fighter(), fighter("b", posture="illumination"), **{flag: True})
        assert r.auto_defense_die is None and r.wound is not None


def test_gc_p5_advantage_bonus_is_a_test_modifier():
    r, _ = attack([75, 5, 1, 1], fighter(posture="illumination", advantage="bonus_20"), fighter("b"))
    assert (r.attack.target, r.attack.score, r.hit) == (80, 70, True)


def test_gc_p5_gc_p6_critical_failures_ignored_on_the_final_skill():
    assert final_skill_outcome("critical_failure") == "failure"
    assert final_skill_outcome("super_critical_failure") == "failure"
    assert final_skill_outcome("critical_success") == "critical_success"


def test_gc_p5_final_skill_needs_level_5_a_special_posture_and_its_points():
    said = {"punchline": "Par la lumière !"}
    assert use_final_skill(5, "illumination", "light", 2, 3, 1, **said) == (1, 1)
    assert use_final_skill(6, "sepulcrale", "dark", 1, 3, 1, **said) == (3, 0)
    with pytest.raises(RuleError) as e:
        use_final_skill(4, "illumination", "light", 1, 3, 1, **said)
    assert e.value.field == "final_skill"
    with pytest.raises(RuleError) as e:
        use_final_skill(5, "defensive", "light", 1, 3, 1, **said)
    assert e.value.field == "posture"
    with pytest.raises(InsufficientResource):
        use_final_skill(5, "sepulcrale", "dark", 2, 3, 1, **said)


# --- GC-P6 ------------------------------------------------------------------------------------


def test_gc_p6_entering_sepulcrale_costs_a_dark_point_no_die():
    src = TableDice([])
    e = enter_special_posture(src, "sepulcrale", 1, 1)
    assert (e.light_points, e.dark_points, e.advantage) == (1, 0, None) and src.rolls == []
    with pytest.raises(InsufficientResource):
        enter_special_posture(src, "sepulcrale", 1, 0)


def test_gc_p6_sepulchral_damage_multiplier_option_and_provocation():
    a = fighter(posture="sepulcrale")
    assert damage_multiplier(a) == 3 and damage_multiplier(a, sepulchral=4) == 4
    r, rolls = attack([30, 2, 2, 2], a, fighter("b"))
    assert (r.damage.total, r.provoked) == (21, True)
    assert r.attack.karma_used == -10 and rolls[1] == ("d10", 2, "karma")


def test_gc_p6_revive_once_and_counter_attack():
    f = fighter("b", posture="sepulcrale", hp=10)
    f, w = take_damage(f, 30)
    assert (w.hp_after, w.revived, w.counter_attack_available, f.revive_used) == (50, True, True, True)
    f, w = take_damage(f, 60)
    assert (w.hp_after, w.revived) == (-10, False)
    _, w = take_damage(fighter(hp=10), 30)
    assert (w.hp_after, w.revived, w.counter_attack_available) == (-20, False, False)


def test_gc_p6_apocalypse_when_revive_never_fired():
    end = end_special_posture(TableDice([]), fighter(posture="sepulcrale", hp=80), 2)
    assert (end.apocalypse, end.hp_after, end.backlash) == (True, 50, False)
    end = end_special_posture(TableDice([]), fighter(posture="sepulcrale", revive_used=True), 1)
    assert (end.apocalypse, end.hp_after) == (False, None)


# --- GC-P7 --------------------------------------------------------------------------------------


def test_gc_p7_illumination_backlash_after_more_than_2_turns():
    end = end_special_posture(TableDice([]), fighter(posture="illumination"), 3)
    assert (end.backlash, end.backlash_turns, end.cannot_act, end.acts_last) == (True, 2, True, False)
    assert not end_special_posture(TableDice([]), fighter(posture="illumination"), 2).backlash
    f = fighter(backlash="illumination")
    assert not can_defend(f)
    with pytest.raises(RuleError):
        attack([30], f, fighter("b"))


def test_gc_p7_sepulchral_backlash_rolls_disadvantage_and_halves_damage():
    src = TableDice([4])
    end = end_special_posture(src, fighter(posture="sepulcrale", revive_used=True), 3)
    assert (end.acts_last, end.damage_multiplier, end.disadvantage_die, end.disadvantage) == (
        True,
        Fraction(1, 2),
        4,
        "malus_10",
    )
    f = fighter(backlash="sepulcrale", backlash_disadvantage="malus_10", posture="offensive")
    assert damage_multiplier(f) == 1
    r, _ = attack([45, 3, 4], f, fighter("b"))
    assert r.attack.target == 50 and (r.damage.raw, r.damage.total) == (10, 10)  # offensive x2, backlash x0.5
    r, _ = attack([45, 3, 4], replace_posture(f, "defensive"), fighter("b"))
    assert r.damage.total == 5  # (3 + 4 + 3) x 0.5
    r, _ = attack([45, 3, 4], replace_posture(f, "defensive"), fighter("b"), backlash=0.25)
    assert r.damage.total == 2  # 10 x 0.25 rounded down


def replace_posture(f, posture):
    from dataclasses import replace

    return replace(f, posture=posture)


# --- GC-D1 / GC-D3 ---------------------------------------------------------------------------------


def test_gc_d1_manhattan_distance_and_melee():
    assert distance((0, 0), (2, 3)) == 5
    assert is_melee((1, 1), (1, 2)) and not is_melee((1, 1), (2, 2))


@pytest.mark.parametrize("steps", [(), ("move",), ("act",), ("move", "act"), ("act", "move")])
def test_gc_d3_legal_turns(steps):
    check_turn(steps)


@pytest.mark.parametrize("steps", [("move", "act", "move"), ("act", "act"), ("move", "move")])
def test_gc_d3_move_act_move_is_refused(steps):
    with pytest.raises(RuleError) as e:
        check_turn(steps)
    assert e.value.field == "steps"


def test_gc_d3_gc_d2_moved_cells_within_max_move():
    check_turn(("move",), moved=3, allowed_move=3)
    with pytest.raises(RuleError):
        check_turn(("move",), moved=4, allowed_move=3)


# --- GC-D4 -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dice,outcome,mult,new",
    [
        ([30], "success", Fraction(2), 6),
        ([5], "critical_success", Fraction(5, 2), 8),  # 7.5 rounded up
        ([42], "super_critical_success", Fraction(3), 9),
        ([70], "failure", Fraction(1), 3),
        ([95], "critical_failure", Fraction(1), 3),
    ],
)
def test_gc_d4_dash(dice, outcome, mult, new):
    src = TableDice(dice)
    d = dash(src, 55, 0)
    assert (d.test.outcome, d.base_move, d.multiplier, d.max_move) == (outcome, 3, mult, new)


# --- GC-O1..O3 ------------------------------------------------------------------------------------------


def order(dice, entrants):
    src = TableDice(dice)
    o = turn_order(src, entrants)
    src.finish()
    return o, [[e for e in s.entries] for s in o.slots]


def test_gc_o1_highest_agilite_first():
    _, slots = order([], [Entrant("a", 40), Entrant("b", 70), Entrant("c", 55)])
    assert slots == [[("b", 1)], [("c", 1)], [("a", 1)]]


def test_gc_o1_illumination_first_backlash_last():
    _, slots = order([], [Entrant("a", 90, acts_last=True), Entrant("b", 10, acts_first=True), Entrant("c", 50)])
    assert slots == [[("b", 1)], [("c", 1)], [("a", 1)]]


# rule: GC-O2
def test_gc_o2_ties_roll_d20_lowest_first():
    o, slots = order([15, 3], [Entrant("a", 50), Entrant("b", 50)])
    assert slots == [[("b", 1)], [("a", 1)]]
    assert o.slots[0].tie_dice == (("a", 15), ("b", 3))


# rule: GC-O2
def test_gc_o2_tied_again_act_in_parallel():
    o, slots = order([7, 7, 2], [Entrant("a", 50), Entrant("b", 50), Entrant("c", 50)])
    assert slots == [[("c", 1)], [("a", 1), ("b", 1)]]
    assert o.slots[1].parallel


# rule: GC-O3
def test_gc_o3_extra_actions_one_d6_per_entity():
    assert action_positions(60, 3, 2) == [60, 54, 48]
    o, slots = order([2, 5], [Entrant("a", 60, actions=3), Entrant("b", 52, actions=2)])
    # a: 60, 54, 48 (d6 = 2); b: 52, 43 (d6 = 5)
    assert slots == [[("a", 1)], [("a", 2)], [("b", 1)], [("a", 3)], [("b", 2)]]
    assert o.action_dice == (("a", 2), ("b", 5))


# rule: GC-O3
def test_gc_o3_extra_action_can_tie_with_another_entity():
    o, slots = order([4, 9, 1], [Entrant("a", 60, actions=2), Entrant("b", 52)])
    # a's second action at 60 - (4 + 4) = 52 ties with b: d20 a=9, b=1 -> b first
    assert slots == [[("a", 1)], [("b", 1)], [("a", 2)]]
