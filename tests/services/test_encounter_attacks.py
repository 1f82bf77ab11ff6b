"""Each ruleset's attack resolution in an encounter, as functions (table dice): Asgard
(AS-C1..C5, AS-C11, AS-H1), Rulebook D100 (RB-F1..F3, RB-C4), Worlds Awakening (WA-C1..C3, WA-C5).
The parties' sheets are their ruleset's `Sheet` models, as the flow gives them (issue 23)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from app.rules.errors import DiceNeeded, InsufficientResource, RuleError
from app.services.encounters.dice import CombatDice
from app.rulesets.asgard import combat as asg
from app.rulesets.asgard.schemas import Sheet as AsSheet
from app.rulesets.rulebook_d100 import combat as rb
from app.rulesets.rulebook_d100.schemas import Options as RbOptions
from app.rulesets.rulebook_d100.schemas import Sheet as RbSheet
from app.rulesets.worlds_awakening import combat as wa
from app.rulesets.worlds_awakening.schemas import Sheet as WaSheet


@dataclass
class Fighter:
    """What the resolution reads and changes of a `Party`."""

    id: str
    sheet: Any  # the ruleset's `Sheet` model
    counters: dict[str, Any] = field(default_factory=dict)
    conditions: list[dict[str, Any]] = field(default_factory=list)
    dice: Any = None  # what it rolls itself (AS-C5's tests after a blow): the action's dice as its own
    turn: dict[str, Any] = field(default_factory=dict)  # what it did this turn (RB-F3's free attack)


def party(id_, sheet, counters=None, conditions=None, dice=None):
    return Fighter(
        id=id_,
        sheet=sheet.model_copy(deep=True),
        counters=dict(counters or {}),
        conditions=list(conditions or []),
        dice=dice.of(id_) if dice is not None else None,
    )


def rules(steps):
    return [(s["rule"], s["what"]) for s in steps]


# --- Asgard ------------------------------------------------------------------------------------


def a_sheet(**kw):
    return AsSheet.model_validate(
        {
            "skills": {"combat": 6, "defense": 4, "resistance": 2, "volonte": 1},
            "vitality": 20,
            "vitality_max": 20,
            "heroism": 2,
            "protection": 2,
            "weapons": [{"name": "epee", "damage_dice": 2, "ranged": False}],
            **kw,
        }
    )


def test_as_c1_c2_c3_hit_reads_damage_from_the_attack_dice():
    dice = CombatDice(dice=[5, 2, 4, 3, 3, 3])  # attack 11 + 6 = 17 vs defense 9 + 4 = 13
    a, t = party("a", a_sheet()), party("t", a_sheet())
    steps = asg.resolve_attack(dice, a, [(t, "defense")], asg.AttackChoice())
    dice.finish()
    assert rules(steps) == [
        ("AS-C1", "attack test"),
        ("AS-C1", "defense test"),
        ("AS-T9", "opposition"),
        ("AS-C2", "damage"),
        ("AS-C3", "protection"),
        ("AS-C3", "vitality"),
    ]
    assert (steps[3]["read_dice"], steps[4]["taken"], t.sheet.vitality) == ([2, 4], 4, 16)
    assert [(r["purpose"], r["by"]) for r in dice.rolls()] == [("attack", "a")] * 3 + [("defense", "t")] * 3


def test_as_c1_defender_wins_ties_and_takes_nothing():
    dice = CombatDice(dice=[3, 3, 3, 3, 3, 3])  # 15 vs 15, skills 6 and 6: the defender (AS-T9)
    a, t = party("a", a_sheet()), party("t", a_sheet(skills={"defense": 6}))
    steps = asg.resolve_attack(dice, a, [(t, "defense")], asg.AttackChoice())
    assert steps[-1]["decided_by"] == "defender" and steps[-1]["hit"] is False
    assert t.sheet.vitality == 20


def test_as_c1_unperceived_attack_needs_only_the_difficulty():
    dice = CombatDice(dice=[1, 1, 2])  # 4 + 6 = 10 >= 10
    a, t = party("a", a_sheet()), party("t", a_sheet())
    steps = asg.resolve_attack(dice, a, [(t, "none")], asg.AttackChoice())
    assert steps[1]["what"] == "unperceived attack: no defense" and steps[1]["hit"] is True
    assert t.sheet.vitality == 20 - (1 + 2 - 2)
    dice = CombatDice(dice=[1, 1, 2])
    steps = asg.resolve_attack(
        dice, a, [(party("t", a_sheet()), "defense")], asg.AttackChoice(unperceived=True, difficulty=11)
    )
    assert steps[1]["hit"] is False


def test_as_c4_efficacite_blessure_legere_prudence_danger():
    dice = CombatDice(dice=[5, 2, 4, 3, 3, 3])
    a, t = party("a", a_sheet()), party("t", a_sheet(), counters={"danger": 1})
    choice = asg.AttackChoice(primes=("efficacite",), penalties=("blessure_legere",))
    steps = asg.resolve_attack(dice, a, [(t, "defense")], choice)
    attack = next(s for s in steps if s["what"] == "attack test")
    assert attack["modifier"] == 2 and attack["score"] == 19
    danger = next(s for s in steps if s["what"] == "prudence / danger on this defense test")
    assert (danger["modifier"], t.counters) == (-2, {})
    halved = next(s for s in steps if s["what"] == "damage halved, rounded up")
    assert (halved["before"], halved["after"], t.sheet.vitality) == (4, 2, 18)
    dice = CombatDice(dice=[5, 2, 4, 3, 3, 3])
    a = party("a", a_sheet())
    asg.resolve_attack(
        dice, a, [(party("t", a_sheet()), "defense")], asg.AttackChoice(primes=("prudence",), penalties=("danger",))
    )
    assert a.counters == {"prudence": 1, "danger": 1}
    with pytest.raises(RuleError):
        asg.resolve_attack(
            CombatDice(dice=[]), a, [(party("t", a_sheet()), "defense")], asg.AttackChoice(primes=("efficacite",))
        )


def test_as_c4_attaques_multiples_two_targets_one_test():
    dice = CombatDice(dice=[5, 2, 4, 3, 3, 3, 1, 2, 1])
    a, t1, t2 = party("a", a_sheet()), party("t1", a_sheet()), party("t2", a_sheet())
    choice = asg.AttackChoice(primes=("attaques_multiples",), penalties=("danger",))
    asg.resolve_attack(dice, a, [(t1, "defense"), (t2, "defense")], choice)
    dice.finish()
    assert (t1.sheet.vitality, t2.sheet.vitality) == (18, 18)  # 6 − 2 = 4, halved: 2
    with pytest.raises(RuleError):
        asg.resolve_attack(CombatDice(dice=[]), a, [(t1, "defense")], choice)


def test_as_h1_heroism_dice_add_to_damage_and_protection():
    dice = CombatDice(dice=[5, 2, 4, 6, 3, 3, 3, 5])  # attack 4d6, defense 4d6
    a, t = party("a", a_sheet()), party("t", a_sheet())
    steps = asg.resolve_attack(dice, a, [(t, "defense_heroism")], asg.AttackChoice(heroism_4d6=True))
    assert (a.sheet.heroism, t.sheet.heroism) == (1, 1)
    protection = next(s for s in steps if s["what"] == "protection")
    # 23 vs 14 + 5 = 19: hit; 2 + 4 + 6 = 12 − 2 − 5 = 5
    assert (protection["damage"], protection["heroism_die"], protection["taken"]) == (12, 5, 5)
    broke = party("b", a_sheet(heroism=0))
    with pytest.raises(InsufficientResource):  # AS-H6: a 409, nothing rolled
        asg.resolve_attack(CombatDice(dice=[]), broke, [(t, "defense")], asg.AttackChoice(heroism_4d6=True))


def test_as_c5_mal_en_point_dying_and_unconscious_conditions():
    # attack 6+6+5 + 6 = 23 vs 3 + 4 = 7; 2d6 → 6 + 5 = 11 − 2 = 9 ≥ vitality 5: 0
    # resistance 1+1+2 + 2 = 6 < 5 + 9 → dying, d6 = 3; volonte 2+2+2 + 1 = 7 < 14 → unconscious 2d6 = 4 + 1
    dice = CombatDice(dice=[6, 6, 5, 1, 1, 1, 1, 1, 2, 3, 2, 2, 2, 4, 1])
    a, t = party("a", a_sheet()), party("t", a_sheet(vitality=5), dice=dice)
    steps = asg.resolve_attack(dice, a, [(t, "defense")], asg.AttackChoice())
    dice.finish()
    mal = steps[-1]
    assert (mal["rule"], mal["difficulty"], mal["dying"], mal["dies_in_rounds"], mal["unconscious_rounds"]) == (
        "AS-C5",
        14,
        True,
        3,
        5,
    )
    assert t.sheet.condition.model_dump(exclude_defaults=True) == {
        "dying": True,
        "dies_in_rounds": 3,
        "unconscious_rounds": 5,
    }
    # AS-C5 rounds are counted at each round's end, from the round they began
    assert t.conditions == [
        {"name": "dying", "rounds_left": 3, "ends": "end_of_round", "since_round": 1},
        {"name": "unconscious", "rounds_left": 5, "ends": "end_of_round", "since_round": 1},
    ]
    assert [r["purpose"] for r in dice.rolls()][6:] == ["resistance"] * 3 + ["dying_rounds"] + ["volonte"] * 3 + [
        "unconscious_rounds"
    ] * 2


def test_as_c11_extras_in_a_group_one_test_plus_one_per_member():
    extra = a_sheet(tier="figurant", skills={"combat": 2})
    dice = CombatDice(dice=[4, 3, 3, 3, 3, 3])  # 10 + 2 + 2 (two other members) = 14 vs 9 + 4 = 13
    a, t = party("a", extra), party("t", a_sheet())
    steps = asg.resolve_attack(
        dice, a, [(t, "defense")], asg.AttackChoice(), group=[party("b", extra), party("c", extra)]
    )
    group = steps[0]
    assert (group["rule"], group["bonus"], group["members"]) == ("AS-C11", 2, ["a", "b", "c"])
    assert next(s for s in steps if s["what"] == "damage")["damage"] == 3 + 3 + 2
    assert t.sheet.vitality == 20 - (8 - 2)
    with pytest.raises(RuleError):
        asg.resolve_attack(CombatDice(dice=[]), a, [(t, "defense")], asg.AttackChoice(), group=[party("x", a_sheet())])
    with pytest.raises(RuleError):
        asg.resolve_attack(
            CombatDice(dice=[]), a, [(t, "defense")], asg.AttackChoice(), group=[party(str(i), extra) for i in range(5)]
        )


def test_asgard_damage_expression_and_missing_dice_named():
    dice = CombatDice(dice=[5, 2, 4, 1, 1, 1, 6])  # 4d6+1: the three dice and one more
    a, t = party("a", a_sheet()), party("t", a_sheet())
    steps = asg.resolve_attack(dice, a, [(t, "defense")], asg.AttackChoice(damage="4d6+1"))
    assert next(s for s in steps if s["what"] == "damage")["damage"] == 5 + 2 + 4 + 6 + 1
    with pytest.raises(DiceNeeded) as exc:
        asg.resolve_attack(
            CombatDice(dice=[5, 2, 4]), party("a", a_sheet()), [(party("t", a_sheet()), "defense")], asg.AttackChoice()
        )
    assert exc.value.extra["needed"]["purpose"] == "defense"


# --- Rulebook D100 -----------------------------------------------------------------------------


def r_sheet(**kw):
    return RbSheet.model_validate(
        {
            "stats": {"FOR": 50, "HAB": 60, "PER": 40, "CHA": 55, "DIS": 45},
            "crit_chance": 5,
            "hp": 14,
            "hp_max": 14,
            "pe": 14,
            "pe_max": 14,
            "armor": 2,
            "weapons": [{"name": "epee", "damage": "1d6", "kind": "melee"}],
            **kw,
        }
    )


def test_rb_f2_f3_dodge_confrontation_then_level_plus_weapon():
    dice = CombatDice(dice=[23, 45, 4])  # attack 50%: level 3; dodge 60%: level 2; 3 + 4
    a, t = party("a", r_sheet()), party("t", r_sheet())
    steps = rb.resolve_attack(dice, a, t, "dodge", rb.AttackChoice(), round_=1, campaign_options=RbOptions())
    dice.finish()
    assert rules(steps) == [
        ("RB-F2", "attack test"),
        ("RB-F3", "dodge test"),
        ("RB-C4", "dodge: confrontation"),
        ("RB-F2", "damage"),
        ("RB-F1", "hp"),
    ]
    assert (t.sheet.hp, t.counters) == (7, {"dodges": 1, "dodge_round": 1})


def test_rb_f3_further_dodges_minus_ten_each_and_a_won_dodge():
    t = party("t", r_sheet(), counters={"dodges": 2, "dodge_round": 3})
    dice = CombatDice(dice=[44, 12])  # attack level 1; dodge 60 − 20 = 40%: level 3 → dodged
    steps = rb.resolve_attack(
        dice, party("a", r_sheet()), t, "dodge", rb.AttackChoice(), round_=3, campaign_options=RbOptions()
    )
    assert steps[1]["penalty"] == -20 and steps[1]["percentage"] == 40
    assert steps[-1]["winner"] == "defender" and t.sheet.hp == 14
    t = party("t", r_sheet(), counters={"dodges": 2, "dodge_round": 2})  # another round: no penalty
    rb.resolve_attack(
        CombatDice(dice=[44, 12]),
        party("a", r_sheet()),
        t,
        "dodge",
        rb.AttackChoice(),
        round_=3,
        campaign_options=RbOptions(),
    )
    assert t.counters == {"dodges": 1, "dodge_round": 3}


def test_rb_f3_critical_dodge_free_attack_and_critical_failure_doubles():
    steps = rb.resolve_attack(
        CombatDice(dice=[30, 3]),
        party("a", r_sheet()),
        party("t", r_sheet()),
        "dodge",
        rb.AttackChoice(),
        round_=1,
        campaign_options=RbOptions(),
    )
    assert steps[-1] == {
        "rule": "RB-F3",
        "key": "critical_dodge_a_free_attack",
        "what": "critical dodge: a free attack",
        "combatant_id": "t",
    }
    t = party("t", r_sheet())
    steps = rb.resolve_attack(
        CombatDice(dice=[30, 99, 2]),
        party("a", r_sheet()),
        t,
        "dodge",
        rb.AttackChoice(),
        round_=1,
        campaign_options=RbOptions(),
    )
    # attack level 2; dodge fumbles; (2 + 2) × 2
    assert ("RB-F3", "critical failure of the dodge: damage doubled") in rules(steps) and t.sheet.hp == 6


def test_rb_f2_absorb_ranged_and_morale_on_pe_and_a_miss():
    t = party("t", r_sheet())
    steps = rb.resolve_attack(
        CombatDice(dice=[12, 5]),
        party("a", r_sheet()),
        t,
        "absorb",
        rb.AttackChoice(kind="ranged", damage="1d6+1"),
        round_=1,
        campaign_options=RbOptions(),
    )
    # PER 40, roll 12: level 4 − 1 = 3; + 5 + 1 = 9 − armour 2 = 7
    assert steps[0]["stat"] == "PER" and t.sheet.hp == 7
    t = party("t", r_sheet())
    rb.resolve_attack(
        CombatDice(dice=[25, 3]),
        party("a", r_sheet()),
        t,
        "none",
        rb.AttackChoice(kind="morale", stat="DIS", damage="1d4"),
        round_=1,
        campaign_options=RbOptions(),
    )
    assert (t.sheet.pe, t.sheet.hp) == (14 - (4 - 2 + 3), 14)
    steps = rb.resolve_attack(
        CombatDice(dice=[80]),
        party("a", r_sheet()),
        t,
        "dodge",
        rb.AttackChoice(),
        round_=1,
        campaign_options=RbOptions(),
    )
    assert rules(steps) == [("RB-F2", "attack test"), ("RB-F2", "the attack misses")]
    with pytest.raises(RuleError):
        rb.resolve_attack(
            CombatDice(dice=[]),
            party("a", r_sheet()),
            t,
            "dodge",
            rb.AttackChoice(kind="melee", stat="PER"),
            round_=1,
            campaign_options=RbOptions(),
        )


# --- Worlds Awakening --------------------------------------------------------------------------


def w_sheet(**kw):
    return WaSheet.model_validate(
        {
            "level": 1,
            "stats": {"FOR": 2, "DEX": 1, "CON": 0, "INT": 3, "SAG": -1, "CHA": 0},
            "hp": 12,
            "hp_max": 12,
            "weapons": [{"name": "epee_longue", "stat": "FOR", "damage": "1d8"}],
            **kw,
        }
    )


def test_wa_c1_physical_against_ten_plus_con_plus_level():
    t = party("t", w_sheet())
    steps = wa.resolve_attack(CombatDice(dice=[8, 5]), party("a", w_sheet()), t, wa.AttackChoice())
    assert (steps[0]["total"], steps[0]["defense"], steps[0]["hit"], t.sheet.hp) == (11, 11, True, 7)
    steps = wa.resolve_attack(CombatDice(dice=[7]), party("a", w_sheet()), t, wa.AttackChoice())
    assert steps[0]["hit"] is False and len(steps) == 1


def test_wa_c1_magical_against_ten_plus_sag_plus_level():
    steps = wa.resolve_attack(
        CombatDice(dice=[6, 3]),
        party("a", w_sheet()),
        party("t", w_sheet()),
        wa.AttackChoice(kind="magical", damage="1d6"),
    )
    assert (steps[0]["stat"], steps[0]["total"], steps[0]["defense"], steps[0]["hit"]) == ("INT", 10, 10, True)


def test_wa_c2_c3_criticals_and_c5_down_at_zero():
    t = party("t", w_sheet(hp=9))
    steps = wa.resolve_attack(CombatDice(dice=[20, 5, 6]), party("a", w_sheet()), t, wa.AttackChoice())
    assert ("WA-C2", "critical success: damage dice rolled twice") in rules(steps)
    assert (t.sheet.hp, t.sheet.down) == (0, True) and steps[-1]["rule"] == "WA-C5"
    steps = wa.resolve_attack(
        CombatDice(dice=[1]), party("a", w_sheet(stats={"FOR": 30})), party("t", w_sheet()), wa.AttackChoice()
    )
    assert rules(steps)[1] == ("WA-C3", "critical failure: a miss")
    strong = party("t", w_sheet(level=8, stats={"CON": 6}))  # defense 24; a 20 still hits, normal damage
    steps = wa.resolve_attack(CombatDice(dice=[20, 5]), party("a", w_sheet()), strong, wa.AttackChoice())
    assert steps[1]["bonus_damage"] is False and strong.sheet.hp == 7
