"""Asgard in an encounter: vitality and heroism, turn order AS-C13.

Table dice of `start`: each combatant's open perception test, 3d6, in the order
combatants were added (none for an NPC taking 11, AS-T8, nor for a GM
override), then the 1d6 roll-offs of the ties (AS-C13)."""
from __future__ import annotations

from typing import Any

from app.rules.asgard.combat import initiative_order
from app.rules.asgard.core import TestSpec, resolve, roll_test, skill_value
from app.rules.errors import RuleError
from app.services.encounters.dice import CombatDice
from app.services.encounters.rulesets.base import (
    EncounterRules,
    Entrant,
    Initiative,
    Pool,
    one_per_slot,
)


class Asgard(EncounterRules):
    ruleset = "asgard"
    pools = (Pool("vitality", "vitality", "vitality_max"), Pool("heroism", "heroism", None))
    reactions = ("defense", "none")  # AS-C1: opposition by a defense test; none = unperceived
    default_reaction = "defense"
    dice_order = ("AS-C13 3d6 perception per combatant in the order added (none when taking 11 or given the GM's "
                  "initiative), then 1d6 roll-offs")

    def is_down(self, sheet: dict[str, Any]) -> bool:
        """AS-C5: dead, or unconscious (a sheet condition); "mal en point" alone still acts."""
        condition = sheet.get("condition") or {}
        return bool(condition.get("dead")) or bool(condition.get("unconscious_rounds"))

    def roll_initiative(self, dice: CombatDice, entrants: list[Entrant], options, campaign_options) -> Initiative:
        """AS-C13 (Decision): an open `perception` test each (NPCs may take 11, AS-T8),
        highest result first; ties by the higher perception value, then 1d6 roll-offs."""
        if any(e.take_11 for e in entrants) and not campaign_options.get("take_11_allowed", True):
            raise RuleError("this campaign does not allow taking 11 (option take_11_allowed)", field="take_11")
        tests, steps = [], []
        for e in entrants:
            if e.take_11 and e.kind != "npc":
                raise RuleError("only NPCs take 11 (AS-T8)", field="take_11")
            perception = skill_value(e.sheet.get("skills") or {}, "perception")
            spec = TestSpec(skill="perception", skill_value=perception, take_11=e.take_11)
            if e.override is not None:  # the GM's result replaces the test
                test = resolve(spec, (), natural=e.override - perception)
            else:
                test = roll_test(spec, dice.of(e.combatant_id), "initiative")
            tests.append((e.combatant_id, test))
            steps.append({"rule": "AS-C13", "what": "open perception test", "combatant_id": e.combatant_id,
                          "dice": list(test.dice), "perception": perception, "result": test.score,
                          "take_11": e.take_11, "override": e.override is not None})
        ranked = initiative_order(tests, dice.source)
        for r in ranked:
            if r.roll_offs:
                steps.append({"rule": "AS-C13", "what": "tie: 1d6 roll-off", "combatant_id": r.combatant,
                              "d6": list(r.roll_offs)})
        order = one_per_slot([(r.combatant, r.test.score, _tiebreak(r)) for r in ranked])
        return Initiative(order=order, initiatives={r.combatant: r.test.score for r in ranked}, steps=steps)


def _tiebreak(r) -> dict[str, Any] | None:
    if not r.roll_offs:
        return None
    return {"die": "d6", "value": r.roll_offs[-1], "rolls": list(r.roll_offs)}
