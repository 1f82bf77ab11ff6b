"""Issue 12, rules fidelity (Asgard): where a line-by-line reading of the rulebook found
the pure engine wrong (rule pages in shared/rules/asgard.md), driven by table dice.

Modules are imported whole and their functions read as attributes, so a function the
old code lacked fails its own test only."""

from __future__ import annotations

import pytest

from app.rulesets.asgard.rules import combat as as_combat, contests as as_contests, hazards as as_hazards
from app.rulesets.asgard.rules.core import TestSpec as AsSpec, roll_test as as_roll
from app.rules.dice import TableDice
from app.rules.errors import RuleError


def as_rolled(skill, value, dice, **kw):
    src = TableDice(dice)
    r = as_roll(AsSpec(skill, value, **kw), src)
    src.finish()
    return r


# --- item 4: AS-C5 with AS-C9 / AS-C10 -----------------------------------------------------------------


def test_as_c5_mal_en_point_difficulty_is_5_plus_the_round_that_brought_vitality_to_0():
    # 10 vitality; fire rounds of 4, 5, 6, 3: the third round brings it to 0 → 5 + 6
    assert as_hazards.decisive_damage(10, [4, 5, 6, 3]) == 6
    assert as_hazards.decisive_damage(10, [4, 5]) is None  # still standing
    assert as_hazards.decisive_damage(0, [4]) is None  # already mal en point: no new check
    assert as_hazards.decisive_damage(7, [7]) == 7  # one blow
    src = TableDice([1, 2, 2, 2, 4, 6, 6])  # resistance 3d6, dying 1d6, volonte 3d6
    checks = as_hazards.mal_en_point(3, 0, as_hazards.decisive_damage(10, [4, 5, 6, 3]), src)
    src.finish()
    assert (checks.resistance.target, checks.resistance.success, checks.dies_in_rounds) == (11, False, 2)
    assert checks.volonte.target == 11 and checks.volonte.success


def test_as_c10_asphyxia_damage_per_round_feeds_the_mal_en_point_difficulty():
    src = TableDice([2, 5, 4])
    result = as_hazards.asphyxia(3, 3, src, from_round=20, out_of_breath=True)
    src.finish()
    assert result.damage_per_round == (2, 5, 4)
    assert as_hazards.decisive_damage(6, result.damage_per_round) == 5


# --- item 6 and 15: AS-T6 ------------------------------------------------------------------------------


def test_as_t6_leader_is_the_highest_margin_against_its_own_target():
    # a: close skill (target 15 + 5 = 20), 8 + 10 = 18, margin -2; b: proper skill, 2 + 13 = 15, margin 0
    a = as_rolled("survie", 8, [4, 3, 3], target=15, close_skill=True)
    b = as_rolled("survie", 2, [5, 5, 3], target=15)
    coop = as_contests.cooperate((a, b))
    assert coop.leader == 1
    assert (coop.score, coop.target, coop.success) == (16, 15, True)  # 15 + 1 (a's 18 >= 15)


# --- item 13: AS-C2 ------------------------------------------------------------------------------------------


def test_as_c2_1d6_reads_the_distinguished_first_die_2d6_the_two_others():
    attack = as_rolled("combat", 6, [6, 1, 2])
    assert as_combat.attack_damage(attack, 1, TableDice([])).weapon_dice == (6,)
    assert as_combat.attack_damage(attack, 2, TableDice([])).weapon_dice == (1, 2)
    assert as_combat.attack_damage(attack, 3, TableDice([])).total == 9
