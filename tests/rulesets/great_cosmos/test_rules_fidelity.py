"""Issue 12, rules fidelity (Great Cosmos): where a line-by-line reading of the rulebook found
the pure engine wrong (rule pages in shared/rules/great-cosmos.md), driven by table dice.

Modules are imported whole and their functions read as attributes, so a function the
old code lacked fails its own test only."""

from __future__ import annotations

from fractions import Fraction

import pytest

from app.rules.dice import TableDice
from app.rules.errors import RuleError
from app.rulesets.great_cosmos.rules import core as gc_core, levels as gc_levels, postures as gc_postures
from app.rulesets.great_cosmos.rules import sheet as gc_sheet, turns as gc_turns
from tests.factories import GC, stats

GC_STATS = stats(GC, force=60)


def fighter(id_="a", posture="defensive", **kw):
    return gc_postures.Fighter(
        id=id_, stats=dict(GC_STATS), karma=kw.pop("karma", 0), hp=kw.pop("hp", 50), hp_max=100, posture=posture, **kw
    )


def gc_attack(dice, attacker, defender, **kw):
    src = TableDice(dice)
    out = gc_postures.resolve_attack(src, attacker, defender, stat="force", damage="2d6", **kw)
    src.finish()
    return out


def gc_result(natural, target, karma=0):
    return gc_core.result_from_dice(natural, None, target, karma)


# --- item 1: GC-I4 -------------------------------------------------------------------------


def test_gc_i4_quantity_counts_for_the_two_handed_limit_and_for_slots():
    with pytest.raises(RuleError) as e:
        gc_sheet.check_inventory(100, [gc_sheet.Item("haches", "two_handed_weapon", 4, quantity=2)])
    assert e.value.field == "inventory.items"
    assert gc_sheet.check_inventory(100, [gc_sheet.Item("hache", "two_handed_weapon", 4, quantity=1)]).used == 4
    # slots: each of the quantity takes its slots (force 50 carries 20)
    assert gc_sheet.check_inventory(50, [gc_sheet.Item("potion", "item", 3, quantity=6)]).used == 18
    with pytest.raises(RuleError):
        gc_sheet.check_inventory(50, [gc_sheet.Item("potion", "item", 3, quantity=7)])


# --- items 2 and 15: GC-P5 ---------------------------------------------------------------------


@pytest.mark.parametrize("posture", ["defensive", "illumination"])
def test_gc_p5_unparryable_forbids_a_parry_and_undodgeable_a_dodge_in_every_posture(posture):
    d = fighter("b", posture=posture)
    with pytest.raises(RuleError) as e:
        gc_attack([30, 9], fighter(), d, reaction="parry", unparryable=True)
    assert e.value.field == "reaction"
    with pytest.raises(RuleError) as e:
        gc_attack([30, 9], fighter(), d, reaction="dodge", undodgeable=True)
    assert e.value.field == "reaction"
    # the other reaction stays open: an unparryable attack may be dodged (dice: attack, dodge)
    r = gc_attack([30, 20] if posture == "defensive" else [30, 20, 3], fighter(), d, reaction="dodge", unparryable=True)
    assert r.defense_holds and r.auto_defense_die is None


@pytest.mark.parametrize("flag", ["unparryable", "undodgeable"])
def test_gc_p5_unparryable_or_undodgeable_skips_the_illumination_automatic_defence(flag):
    r = gc_attack([30, 1, 2], fighter(), fighter("b", posture="illumination"), **{flag: True})
    assert r.auto_defense_die is None and (r.wound.hp_before, r.wound.hp_after) == (50, 47)


def test_gc_p5_only_the_illuminations_first_action_goes_first():
    # a in Illumination, 2 actions at 30 and 30 - (4 + 3) = 23; b at 50; c at 25
    src = TableDice([3])
    order = gc_turns.turn_order(
        src,
        [gc_turns.Entrant("a", 30, actions=2, acts_first=True), gc_turns.Entrant("b", 50), gc_turns.Entrant("c", 25)],
    )
    src.finish()
    assert [s.entries for s in order.slots] == [(("a", 1),), (("b", 1),), (("c", 1),), (("a", 2),)]


# --- item 3: GC-P2 -------------------------------------------------------------------------------


def test_gc_p2_no_riposte_after_a_failed_critical_defence():
    # a critical attack (score 8) and a critical parry that scores higher (9): it fails
    verdict = gc_postures.defense_holds(gc_result(8, 60), gc_result(9, 60))
    assert (verdict.holds, verdict.riposte_available) == (False, False)
    # a critical defence against a super-critical attack fails too
    verdict = gc_postures.defense_holds(gc_result(42, 60), gc_result(5, 60))
    assert (verdict.holds, verdict.riposte_available) == (False, False)
    # through an attack: attack 8, parry 9, damage 2 + 3
    r = gc_attack([8, 9, 2, 3], fighter(), fighter("b"), reaction="parry")
    assert (r.defense.outcome, r.defense_holds, r.riposte_available) == ("critical_success", False, False)
    assert r.wound.hp_after == 45
    # a critical defence that holds still marks it
    assert gc_postures.defense_holds(gc_result(40, 60), gc_result(5, 60)).riposte_available


# --- items 10 and 11: GC-S6, GC-S9 ----------------------------------------------------------------------------


def progress(level):
    return gc_levels.Progress(
        level=level,
        stats=dict(GC_STATS),
        hp=80,
        hp_max=100,
        mp=30,
        mp_max=40,
        light_points=1,
        dark_points=1,
        intuition=3,
        karma=0,
    )


@pytest.mark.parametrize(
    "level,choices,level_dice",
    [
        (1, {"mode": "one_d20", "stats": ("force",)}, [5]),
        (2, {}, [5]),
        (3, {"pool": "hp"}, [50]),
        (5, {"changes": ()}, []),
    ],
)
def test_gc_s6_light_and_dark_points_granted_at_any_level_up(level, choices, level_dice):
    src = TableDice(level_dice + [70])  # the level's dice, then a failed chance test (GC-L6)
    r = gc_levels.level_up(progress(level), gc_levels.Choices(chance_bonus_pool="hp", light=2, dark=1, **choices), src)
    src.finish()
    assert (r.after.level, r.after.light_points, r.after.dark_points) == (level + 1, 3, 2)
    granted = {c.field: (c.before, c.after) for c in r.changes if c.field.endswith("_points")}
    assert granted == {"light_points": (1, 3), "dark_points": (1, 2)}


def test_gc_s6_level_5_adds_its_3_points_and_any_grant_on_top():
    r = gc_levels.level_up(progress(4), gc_levels.Choices(chance_bonus_pool="hp", light=4, dark=1), TableDice([70]))
    assert (r.after.light_points, r.after.dark_points) == (5, 2)
    with pytest.raises(RuleError) as e:
        gc_levels.level_up(progress(4), gc_levels.Choices(chance_bonus_pool="hp", light=1, dark=1), TableDice([70]))
    assert e.value.field == "light"


def test_gc_s9_a_final_skill_costs_at_least_1_point_and_needs_its_punchline():
    gc_sheet.check_final_skill("light", 1, "Que la lumière soit !")
    for args, field in (
        (("light", 0, "Lumière !"), "final_skill.cost_points"),
        (("dark", 2, "   "), "final_skill.punchline"),
        (("dark", 2, ""), "final_skill.punchline"),
    ):
        with pytest.raises(RuleError) as e:
            gc_sheet.check_final_skill(*args)
        assert e.value.field == field
    with pytest.raises(RuleError) as e:
        gc_postures.use_final_skill(5, "illumination", "light", 0, 3, 1, punchline="Lumière !")
    assert e.value.field == "final_skill.cost_points"


# --- item 14: GC-D4 ------------------------------------------------------------------------------------------


def test_gc_d4_dash_distances_round_up():
    # agilite 55: max move 3; a critical success x2.5 = 7.5 → 8
    d = gc_turns.dash(TableDice([5]), 55, 0)
    assert (d.test.outcome, d.base_move, d.max_move) == ("critical_success", 3, 8)
    assert gc_turns.dash_move(1, "critical_success") == (Fraction(5, 2), 3)


# --- item 15: GC-O2, GC-P6 ---------------------------------------------------------------------------------------


def test_gc_o2_the_gms_parallel_method_shares_one_slot_without_dice():
    src = TableDice([])
    order = gc_turns.turn_order(
        src, [gc_turns.Entrant("a", 50), gc_turns.Entrant("b", 50), gc_turns.Entrant("c", 60)], tie_method="parallel"
    )
    assert [s.entries for s in order.slots] == [(("c", 1),), (("a", 1), ("b", 1))]
    assert order.slots[1].parallel and order.slots[1].tie_dice == () and src.rolls == []
    with pytest.raises(RuleError) as e:
        gc_turns.turn_order(src, [gc_turns.Entrant("a", 50)], tie_method="coin")
    assert e.value.field == "tie_method"


def test_gc_o2_players_choose_the_order_of_a_tie_all_on_one_side():
    pcs = [gc_turns.Entrant("a", 50, side="pcs"), gc_turns.Entrant("b", 50, side="pcs")]
    order = gc_turns.turn_order(TableDice([]), pcs, chosen_orders=[("b", "a")])
    assert [s.entries for s in order.slots] == [(("b", 1),), (("a", 1),)]
    mixed = [gc_turns.Entrant("a", 50, side="pcs"), gc_turns.Entrant("o", 50, side="npcs")]
    with pytest.raises(RuleError) as e:
        gc_turns.turn_order(TableDice([]), mixed, chosen_orders=[("o", "a")])
    assert e.value.field == "chosen_orders.0"


def test_gc_o2_no_dodge_nor_parry_against_an_attack_from_the_same_parallel_slot():
    order = gc_turns.turn_order(
        TableDice([]), [gc_turns.Entrant("a", 50), gc_turns.Entrant("b", 50)], tie_method="parallel"
    )
    assert order.same_slot("a", "b", 0)
    with pytest.raises(RuleError) as e:
        gc_attack([30], fighter(), fighter("b"), reaction="dodge", same_slot=True)
    assert e.value.field == "reaction"
    # nor the Illumination's automatic one: attack 30, damage 2 + 3
    r = gc_attack([30, 2, 3], fighter(), fighter("b", posture="illumination"), same_slot=True)
    assert r.auto_defense_die is None and r.wound.hp_after == 45


def test_gc_o2_an_attack_on_a_target_that_moved_away_in_the_same_slot_fails():
    r = gc_attack([5], fighter(), fighter("b"), same_slot=True, target_moved_away=True)
    assert r.attack.outcome == "critical_success" and not r.hit and r.target_moved_away and r.wound is None
    assert r.attacker.karma == -1  # the test was rolled, its karma counts


def test_gc_p6_no_defence_in_sepulcrale():
    assert not gc_postures.can_defend(fighter(posture="sepulcrale"))
    for reaction in ("dodge", "parry"):
        with pytest.raises(RuleError) as e:
            gc_attack([30], fighter(), fighter("b", posture="sepulcrale"), reaction=reaction)
        assert e.value.field == "reaction"
    r = gc_attack([30, 2, 3], fighter(), fighter("b", posture="sepulcrale"))
    assert r.auto_defense_die is None and r.wound.counter_attack_available


# --- item 16: GC-T2 -------------------------------------------------------------------------------------------


def test_gc_t2_extreme_scores_conversion_is_opt_in_default_off():
    src = TableDice([95, 6])  # karma -6: 95 + 6 = 101
    r = gc_core.resolve_test(src, 50, -6)
    assert (r.score, r.outcome, r.karma_after) == (101, "critical_failure", -5)
    r = gc_core.resolve_test(TableDice([95, 6]), 50, -6, extreme_scores=True)
    assert r.outcome == "super_critical_failure"
    r = gc_core.resolve_test(TableDice([3, 5]), 50, 6)  # 3 - 5 = -2
    assert (r.score, r.outcome) == (-2, "critical_success")
    # GC-K3/K4 as the rulebook says: at karma +10 a critical failure only on 66
    assert gc_core.classify(101, 50, 10) == "failure"
    assert gc_core.classify(-2, 50, -10) == "success"
