"""Asgard encounter-time combat rules as pure functions (AS-C1..C4, AS-C11, AS-C13)."""

import pytest

from app.rulesets.asgard.rules import combat
from app.rulesets.asgard.rules.core import TestSpec, roll_test
from app.rules.dice import TableDice
from app.kit.errors import Conflict
from app.rules.errors import RuleError


def rolled(skill, value, dice, **kw):
    source = TableDice(dice)
    result = roll_test(TestSpec(skill, value, **kw), source)
    source.finish()
    return result


# --- AS-C1 -----------------------------------------------------------------


def test_as_c1_attack_is_combat_against_defense():
    hit = combat.resolve_attack(rolled("combat", 6, [4, 4, 4]), rolled("defense", 4, [3, 3, 3]))  # 18 vs 13
    assert (hit.hit, hit.opposition.decided_by) == (True, "score")
    parried = combat.resolve_attack(rolled("combat", 6, [3, 3, 3]), rolled("defense", 6, [3, 3, 3]))  # 15 vs 15
    assert (parried.hit, parried.opposition.decided_by) == (False, "defender")


def test_as_c1_unperceived_attack_needs_only_the_gm_difficulty():
    assert combat.resolve_attack(rolled("combat", 2, [3, 3, 2]), None).hit is True  # 10 >= 10
    assert combat.resolve_attack(rolled("combat", 2, [3, 2, 2]), None).hit is False  # 9
    assert combat.resolve_attack(rolled("combat", 2, [5, 5, 5]), None, difficulty=20).hit is False
    assert combat.resolve_attack(rolled("combat", 0, [6, 6, 6]), None, difficulty=30).hit is True  # AS-T3


# --- AS-C2 -----------------------------------------------------------------


@pytest.mark.parametrize("weapon,expected", [(1, (5,)), (2, (2, 4)), (3, (5, 2, 4))])
def test_as_c2_weapon_dice_are_read_from_the_attack_in_order(weapon, expected):
    """1d6: the distinguished first die; 2d6: the two others; 3d6: all three."""
    attack = rolled("combat", 6, [5, 2, 4])
    damage = combat.attack_damage(attack, weapon, TableDice([]))
    assert (damage.weapon_dice, damage.total) == (expected, sum(expected))


def test_as_c2_beyond_3d6_extra_dice_are_rolled_and_heroism_die_adds():
    attack = rolled("combat", 6, [5, 2, 4, 6], heroism_4d6=True)
    source = TableDice([3])
    damage = combat.attack_damage(attack, 4, source, bonus=2)
    source.finish()
    assert (damage.weapon_dice, damage.extra_dice, damage.heroism_die, damage.total) == ((5, 2, 4), (3,), 6, 22)
    assert [r.purpose for r in source.rolls] == ["damage"]


def test_as_c2_asset_dice_add_and_take_11_rolls_the_weapon_dice():
    source = TableDice([4])
    damage = combat.attack_damage(rolled("combat", 6, [1, 2, 3]), 1, source, asset_dice=1)
    assert damage.total == 1 + 4
    npc = rolled("combat", 6, [], take_11=True)
    source = TableDice([6, 5])
    damage = combat.attack_damage(npc, 2, source)
    source.finish()
    assert (damage.weapon_dice, damage.total) == ((6, 5), 11)


# --- AS-C3 -----------------------------------------------------------------


def test_as_c3_protection_and_the_defenders_heroism_die_come_off():
    defense = rolled("defense", 0, [1, 2, 2, 5], heroism_4d6=True)  # failed defense, 4th die 5
    assert combat.damage_taken(12, 2, defense=defense) == 5
    assert combat.damage_taken(12, 2) == 10
    assert combat.damage_taken(3, 4) == 0


# --- AS-C4 -----------------------------------------------------------------


def test_as_c4_efficacite_gives_2_per_prime_and_stacks_with_free_ones():
    effects = combat.prime_effects(combat.Primes(("efficacite",), ("danger",), free_primes=("efficacite",)))
    assert (effects.action_bonus, effects.danger_tests, effects.halvings) == (4, 1, 0)


def test_as_c4_attaques_multiples_halves_damage_rounded_up_after_everything_else():
    effects = combat.prime_effects(combat.Primes(("attaques_multiples",), ("danger",)))
    assert (effects.multiple_targets, effects.halvings) == (True, 1)
    after_protection = combat.damage_taken(13, 2)  # 11
    assert combat.final_damage(after_protection, effects) == 6
    with pytest.raises(RuleError):
        combat.prime_effects(combat.Primes(("attaques_multiples",), ("danger",), free_primes=("attaques_multiples",)))


def test_as_c4_blessure_legere_halves_damage_rounded_up():
    effects = combat.prime_effects(combat.Primes(("efficacite",), ("blessure_legere",)))
    assert (effects.action_bonus, combat.final_damage(7, effects)) == (2, 4)


def test_as_c4_one_bought_prime_each_paid_by_one_penalty():
    with pytest.raises(RuleError) as e:
        combat.prime_effects(combat.Primes(("efficacite", "prudence"), ("danger", "danger")))
    assert e.value.field == "primes"
    with pytest.raises(RuleError) as e:
        combat.prime_effects(combat.Primes(("efficacite",), ()))
    assert e.value.field == "penalties"
    with pytest.raises(RuleError):
        combat.prime_effects(combat.Primes(("charge",), ("danger",)))


def test_as_c4_prudence_and_danger_apply_to_the_next_defense_tests():
    effects = combat.prime_effects(
        combat.Primes(("prudence",), ("danger",), free_primes=("prudence",), mandatory_penalties=("danger", "danger"))
    )
    assert (effects.prudence_tests, effects.danger_tests) == (2, 3)
    assert combat.next_defense(2, 3) == (0, 1, 2)
    assert combat.next_defense(1, 0) == (2, 0, 0)
    assert combat.next_defense(0, 1) == (-2, 0, 0)


# --- AS-C11 ----------------------------------------------------------------


def test_as_c11_extras_one_test_plus_one_per_other_member_and_damage_too():
    bonus = combat.figurant_group_bonus(4)
    attack = rolled("combat", 3, [3, 3, 3], modifier=bonus)  # 9 + 3 + 3
    damage = combat.attack_damage(attack, 1, TableDice([]), bonus=bonus)
    assert (bonus, attack.score, damage.total) == (3, 15, 6)
    with pytest.raises(RuleError):
        combat.figurant_group_bonus(6)


# --- AS-C13 ----------------------------------------------------------------


def test_as_c13_highest_perception_result_first_then_perception_value_then_roll_off():
    tests = [
        ("a", rolled("perception", 2, [3, 3, 3])),  # 11
        ("b", rolled("perception", 4, [3, 3, 1])),  # 11, higher value
        ("c", rolled("perception", 0, [6, 5, 5])),  # 16
        ("d", rolled("perception", 2, [4, 2, 3])),  # 11, same as a
    ]
    source = TableDice([3, 3, 2, 5])  # a 3, d 3: again a 2, d 5
    order = combat.initiative_order(tests, source)
    source.finish()
    assert [i.combatant for i in order] == ["c", "b", "d", "a"]
    assert [i.roll_offs for i in order] == [(), (), (3, 5), (3, 2)]
    assert [r.purpose for r in source.rolls] == ["initiative_roll_off:a", "initiative_roll_off:d"] * 2


def test_as_c13_npcs_may_take_11():
    order = combat.initiative_order(
        [("npc", rolled("perception", 3, [], take_11=True)), ("pc", rolled("perception", 3, [4, 4, 5]))], TableDice([])
    )
    assert [(i.combatant, i.test.score) for i in order] == [("pc", 16), ("npc", 14)]


# --- AS-C2 with a damage expression -------------------------------------------------


@pytest.mark.parametrize(
    "text,expected", [("1d6", (1, 0)), ("2d6+1", (2, 1)), ("d6+d6+d6-1", (3, -1)), ("4d6", (4, 0))]
)
def test_as_c2_damage_expression_counts_d6_and_a_constant(text, expected):
    assert combat.damage_expression(text) == expected


@pytest.mark.parametrize("text", ["1d8", "2d6kh1", "1d6-1d6", "11d6", "3"])
def test_as_c2_damage_expression_refuses_what_is_not_read_in_d6(text):
    with pytest.raises(RuleError) as exc:
        combat.damage_expression(text)
    assert exc.value.field == "damage"


# --- issue 24: combat fidelity -------------------------------------------------------------------


def test_as_c1_a_target_that_cannot_perceive_does_not_defend():
    assert combat.cannot_perceive({"unconscious_rounds": 3}) == "unconscious"
    assert combat.cannot_perceive({"dying": True, "dies_in_rounds": 2}) == "dying"
    assert combat.cannot_perceive({"dying": False, "unconscious_rounds": None, "dead": False}) is None
    assert combat.defense_reaction("defense_heroism", unperceived=False, condition={"unconscious_rounds": 1}) == (
        "none",
        "unconscious",
    )
    assert combat.defense_reaction("defense", unperceived=True, condition=None) == ("none", "unperceived")
    assert combat.defense_reaction("defense", unperceived=False, condition={}) == ("defense", None)


def test_as_t6_a_cooperative_attack_is_led_by_the_best_result_with_the_others_adjustments():
    own = rolled("combat", 6, [1, 1, 2], confrontation=True)  # 10: neither
    ally = rolled("combat", 4, [5, 5, 4], confrontation=True)  # 18 leads
    third = rolled("combat", 2, [1, 2, 3], confrontation=True)  # 8 < 10: −1
    group, attack = combat.cooperative_attack((own, ally, third))
    assert (group.leader, group.adjustments, attack.score, attack.dice) == (1, (0, 0, -1), 17, (5, 5, 4))
    fifteen = rolled("combat", 6, [3, 3, 3], confrontation=True)  # 15: +1
    assert combat.cooperative_attack((ally, fifteen), modifier=2)[1].score == 18 + 1 + 2


def test_as_t6_as_c11_acting_together_takes_one_shared_slot_at_the_leaders_place():
    slots = combat.combat_slots(["A", "B", "C", "D"], [("C", ["A", "D"])])
    assert [(s.combatants, s.leader) for s in slots] == [(("B",), "B"), (("C", "A", "D"), "C")]
    assert combat.slots_lost(["A", "B", "C", "D"], "C", ["A", "D"]) == ["A", "D"]
    with pytest.raises(RuleError):
        combat.combat_slots(["A", "B"], [("A", ["A"])])
    with pytest.raises(RuleError):
        combat.combat_slots(["A", "B", "C"], [("A", ["B"]), ("C", ["B"])])


def test_as_c11_a_group_is_of_extras_able_to_act_each_once():
    assert combat.check_group([("E1", "figurant", False), ("E2", "figurant", False), ("E3", "figurant", False)]) == 2
    for members in (
        [("E1", "figurant", False), ("E1", "figurant", False)],
        [("E1", "figurant", False), ("B", "boss", False)],
        [("E1", "figurant", False), ("E2", "figurant", True)],
    ):
        with pytest.raises(RuleError):
            combat.check_group(members)


def test_as_c5_mal_en_point_states_become_counted_conditions():
    condition, conditions = combat.mal_en_point_conditions(
        {"dying": False, "dead": False},
        [{"name": "stunned", "rounds_left": 1, "ends": "end_of_turn"}],
        dies_in_rounds=3,
        unconscious_rounds=None,
        round_=2,
    )
    assert condition == {"dying": True, "dies_in_rounds": 3, "dead": False}
    assert conditions[-1] == {"name": "dying", "rounds_left": 3, "ends": "end_of_round", "since_round": 2}
    assert combat.counted(conditions) and not combat.counted(conditions[:1])


def test_as_c5_a_state_from_a_fire_starts_counting_after_its_round_and_the_dying_one_dies():
    sheet = {"dying": True, "dies_in_rounds": 1, "unconscious_rounds": 2, "dead": False}
    condition, kept, steps = combat.count_rounds("F", sheet, [], 1)  # the fire's round: adopted, not counted
    assert [c["name"] for c in kept] == ["dying", "unconscious"] and all(c["since_round"] == 1 for c in kept)
    assert [s["what"] for s in steps] == ["dying: counted in the fight", "unconscious: counted in the fight"]
    condition, kept, steps = combat.count_rounds("F", condition, kept, 2)
    assert (condition["dead"], kept) == (True, [])
    assert [s["what"] for s in steps] == ["dies at the end of the round", "no longer unconscious"]
    # nothing to count, nothing adopted: a dead or an unharmed character
    assert combat.count_rounds("F", {"dead": True, "dying": False}, [], 3)[1:] == ([], [])
    assert combat.adopt_states({"dying": False, "unconscious_rounds": None}, [], 1) == ([], [])


def test_as_h2_in_combat_the_spender_rerolls_its_own_test_of_the_action_once():
    request = {"type": "attack", "actor_id": "H", "target_id": "F", "weapon": "dague"}
    logged = {
        "id": "a1",
        "type": "attack",
        "actor_id": "H",
        "steps": [
            {"rule": "AS-C1", "key": "attack_test", "what": "attack test", "combatant_id": "H", "request": request},
            {"rule": "AS-C1", "key": "defense_test", "what": "defense test", "combatant_id": "F"},
        ],
    }
    assert combat.combat_reroll(logged, "H") == (request, "attack")
    assert combat.combat_reroll(logged, "F") == (request, "defense")
    with pytest.raises(Conflict):
        combat.combat_reroll(logged, "X")  # made no test in it
    with pytest.raises(Conflict):
        combat.combat_reroll({**logged, "type": "heroism_reroll"}, "H")  # once per action
    with pytest.raises(Conflict):
        combat.combat_reroll({"id": "m", "type": "move", "steps": []}, "H")
    # the combatants named besides actor and target are read back from the steps naming them
    both = {
        **logged,
        "steps": [
            *logged["steps"],
            {
                "rule": "AS-C1",
                "key": "unperceived_attack_no_defense",
                "what": "unperceived attack: no defense",
                "combatant_id": "G",
            },
            {
                "rule": "AS-T6",
                "key": "cooperation_the_best_result_leads",
                "what": "cooperation: the best result leads",
                "members": ["H", "A", "B"],
            },
        ],
    }
    assert combat.combat_reroll(both, "H")[0] == {**request, "also_target_id": "G", "cooperating": ["A", "B"]}


def test_as_c4_attaques_multiples_takes_exactly_two_targets_any_other_attack_one():
    multiple = combat.prime_effects(combat.Primes(("attaques_multiples",), ("danger",)))
    plain = combat.prime_effects(combat.Primes())
    combat.check_targets(multiple, 2)
    combat.check_targets(plain, 1)
    for effects, count in ((multiple, 1), (plain, 2), (multiple, 3)):
        with pytest.raises(RuleError):
            combat.check_targets(effects, count)
