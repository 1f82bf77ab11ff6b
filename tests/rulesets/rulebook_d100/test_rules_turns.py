"""RB-F3's free attack and the rules granting more than a turn's one action (README "Actions per
turn"), pure: `rulebook_d100.rules.turns` on a turn's bookkeeping, and the dice that earn it."""

from __future__ import annotations

import pytest

from app.kit.errors import Conflict
from app.rules.dice import TableDice
from app.rulesets.rulebook_d100.rules import core as rb
from app.rulesets.rulebook_d100.rules import turns


def test_rb_f3_a_critical_dodge_that_wins_earns_the_free_attack():
    attack = rb.resolve(rb.TestSpec(stat_value=60), 30)  # level 3
    critical = rb.resolve(rb.TestSpec(stat_value=60, crit_chance=5), 3)  # critical: level 12
    plain = rb.resolve(rb.TestSpec(stat_value=60), 10)  # level 5: wins, not critical
    dice = TableDice([])
    assert rb.resolve_attack(attack, "melee", "1d6", dice, defense="dodge", dodge=critical).free_attack is True
    assert rb.resolve_attack(attack, "melee", "1d6", dice, defense="dodge", dodge=plain).free_attack is False


def test_rb_f3_the_free_attack_is_taken_once_in_the_turn_it_was_earned():
    turn = {"round": 1, "slot": 1}
    assert turns.has_free_attack(turn) is False
    turns.grant_free_attack(turn, "attacker")
    assert turns.has_free_attack(turn) and turn == {"round": 1, "slot": 1, "free_attack": "attacker"}
    assert turns.take_free_attack(turn, "dodger") == "attacker"
    assert turn == {"round": 1, "slot": 1}
    with pytest.raises(Conflict) as refused:
        turns.take_free_attack(turn, "dodger")
    assert refused.value.extra == {"rule": "RB-F3"} and refused.value.field == "free_attack"
    assert turn == {"round": 1, "slot": 1}  # nothing spent
