"""Great Cosmos: the fight's state between actions, turn by turn (GC-P1, GC-P2, GC-P6, GC-P7, GC-O2),
pure rules with fixed dice."""

from __future__ import annotations

import pytest

from app.kit.errors import Conflict
from app.rules.dice import TableDice
from app.rules.errors import RuleError
from app.rulesets.great_cosmos.rules import fight
from app.rulesets.great_cosmos.rules.fight import END, START
from app.rulesets.great_cosmos.rules.postures import (
    SEPULCRALE,
    Fighter,
    end_special_posture,
    half_of,
    take_damage,
)
from app.rulesets.great_cosmos.rules.turns import Entrant, turn_order


def _turns(counters: dict, *phases: tuple[str, int]) -> tuple[dict, list[dict], list[dict]]:
    """The counters after these (phase, round) turn passes, every sheet write and step on the way."""
    sheets, steps = [], []
    for phase, round_ in phases:
        passed = fight.turn_passes(counters, phase, round_)
        if passed is not None:
            counters = passed[0]
            sheets += [passed[1]] if passed[1] else []
            steps.extend(passed[2])
    return counters, sheets, steps


def test_gc_p1_a_posture_changes_before_acting_in_its_own_turn():
    fight.check_posture_change(on_turn=True, acted=False)
    fight.check_posture_change(on_turn=False, acted=True)  # the GM's call outside its turn
    with pytest.raises(Conflict) as refused:
        fight.check_posture_change(on_turn=True, acted=True)
    assert refused.value.extra == {"rule": "GC-P1"}


def test_gc_p7_posture_length_counts_the_entry_turn_and_not_a_turn_left_at_its_start():
    special = fight.new_special(SEPULCRALE, 1)
    counters, _, _ = _turns({"special": special}, (END, 1), (START, 2), (END, 2), (START, 3))
    held = counters["special"]
    assert (held["turns"], held["turn_round"]) == (3, 3)
    assert fight.posture_length(held, 3, on_turn=True, acted=False) == 2  # left at the start of round 3
    assert fight.posture_length(held, 3, on_turn=True, acted=True) == 3  # the Final Skill, after acting
    assert fight.posture_length(special, 1, on_turn=True, acted=False) == 1  # entered and left at once
    # counters of an older version (no `turns`): the rounds since its entry
    assert fight.posture_length({"posture": SEPULCRALE, "since_round": 2}, 4, on_turn=False, acted=False) == 3


def test_gc_p7_the_backlash_is_its_holders_next_two_turns_and_the_sheet_carries_it_while_it_runs():
    owed = fight.new_backlash(SEPULCRALE, 5, "malus_20", at_once=False)
    counters, sheets, steps = _turns({"backlash": owed}, (END, 4))
    assert counters["backlash"]["running"] is True and counters["backlash"]["turns_left"] == 2
    assert sheets == [{"backlash": {"posture": SEPULCRALE, "disadvantage_die": 5}}]
    counters, sheets, steps = _turns(counters, (START, 5), (END, 5))
    assert counters["backlash"]["turns_left"] == 1 and sheets == []
    counters, sheets, steps = _turns(counters, (START, 6), (END, 6))
    assert counters == {} and sheets == [{"backlash": None}]
    assert [s["what"] for s in steps] == ["backlash ends"]
    assert fight.new_backlash(SEPULCRALE, None, None, at_once=True)["running"] is True  # left outside its turn


def test_gc_p7_disadvantage_6_cancels_actions_and_4_5_are_a_malus():
    assert [fight.backlash_malus(d) for d in ("malus_10", "malus_20", "none", None)] == [-10, -20, 0, 0]
    fight.check_action_allowed("malus_10")
    with pytest.raises(Conflict) as refused:
        fight.check_action_allowed("action_cancelled")
    assert refused.value.extra == {"rule": "GC-P7"}


def test_gc_p6_provocation_binds_the_turn_of_its_next_action_and_lapses_at_its_end():
    counters: dict = {}
    fight.provoke(counters, "aiko", before_its_action=False)
    assert fight.provoker(counters) is None  # not yet: its next turn
    counters, _, steps = _turns(counters, (START, 2))
    assert fight.provoker(counters) == "aiko" and steps[0]["provoked_by"] == "aiko"
    with pytest.raises(RuleError):
        fight.check_provoked(dict(counters), "cleo", provoker_standing=True)
    assert fight.check_provoked(dict(counters), "aiko", provoker_standing=True) == "aiko"
    gone = dict(counters)
    assert fight.check_provoked(gone, "cleo", provoker_standing=False) is None and gone == {}  # provoker down
    counters, _, steps = _turns(counters, (END, 2))
    assert counters == {} and [s["what"] for s in steps] == ["provocation lapses: its turn ended"]
    now: dict = {}
    fight.provoke(now, "aiko", before_its_action=True)  # its turn, before it acts: this turn
    assert fight.provoker(now) == "aiko"


def test_gc_p2_p6_a_riposte_or_counter_attack_is_spent_once_and_lapses_when_the_turn_changes():
    counters = {"riposte": "aiko", "counter_attack": "brute", "special": {"posture": SEPULCRALE}}
    assert (fight.strike_back(counters, "aiko"), fight.strike_back(counters, "brute")) == ("GC-P2", "GC-P6")
    assert fight.strike_back(counters, "cleo") is None
    fight.use_strike_back(counters, "GC-P2")
    assert fight.strike_back(counters, "aiko") is None
    assert fight.lapse_at_turn_change(counters) == {"special": {"posture": SEPULCRALE}}
    assert fight.lapse_at_turn_change({"special": {}}) is None


def test_gc_p6_revive_and_apocalypse_leave_half_of_hp_max_rounded_up_and_no_counter_attack_once_down():
    f = Fighter(id="a", stats={}, karma=0, hp=10, hp_max=39, posture=SEPULCRALE)
    after, wound = take_damage(f, 15)
    assert (half_of(39), wound.hp_after, wound.revived, wound.counter_attack_available) == (20, 20, True, True)
    _, down = take_damage(after, 25)
    assert (down.hp_after, down.revived, down.counter_attack_available) == (-5, False, False)
    end = end_special_posture(TableDice([]), f, 1)
    assert (end.apocalypse, end.hp_after, end.backlash) == (True, 20, False)


def test_gc_o2_a_chosen_order_orders_a_one_sided_tie_without_dice():
    entrants = [
        Entrant("aiko", 50, side="heroes"),
        Entrant("bea", 50, side="heroes"),
        Entrant("brute", 50, side="foes"),
        Entrant("cleo", 40, side="foes"),
    ]
    with pytest.raises(RuleError) as mixed:
        turn_order(TableDice([]), entrants, chosen_orders=[["aiko", "bea", "brute"]])
    assert mixed.value.field == "chosen_orders.0"
    two = [e for e in entrants if e.id != "brute"]
    order = turn_order(TableDice([]), two, chosen_orders=[["bea", "aiko"]])
    assert [s.entries[0][0] for s in order.slots] == ["bea", "aiko", "cleo"]
    assert [s.tie_break for s in order.slots] == ["chosen", "chosen", None]
