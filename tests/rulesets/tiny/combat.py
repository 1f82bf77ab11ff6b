"""Tiny in an encounter: one pool (`hp`), initiative TINY-C1, no combat action of its own
(the GM's heal, damage and condition are every ruleset's).

Table dice of `start`: a d6 per combatant (none for a GM override), in the order added."""

from __future__ import annotations

from typing import Any

from app.models.encounters import EncounterOptions
from app.rulesets.contract.combat import CombatDice, EncounterRules, Entrant, Initiative, Pool, one_per_slot
from tests.rulesets.tiny.results import RULESET
from tests.rulesets.tiny.rules import core as rules


class TinyCombat(EncounterRules):
    ruleset = RULESET
    pools = (Pool("hp", "hp", "hp_max"),)
    dice_order = "TINY-C1 d6 per combatant in the order added"

    def roll_initiative(
        self, dice: CombatDice, entrants: list[Entrant], options: EncounterOptions, campaign_options: Any
    ) -> Initiative:
        """TINY-C1: a d6 each (the GM's override replaces it), highest first."""
        values = [
            e.override if e.override is not None else dice.of(e.combatant_id).roll(6, "initiative") for e in entrants
        ]
        ranked = rules.turn_order(values)
        steps = [
            {
                "rule": "TINY-C1",
                "key": "initiative_d6",
                "what": "initiative d6",
                "combatant_id": e.combatant_id,
                "initiative": v,
            }
            for e, v in zip(entrants, values)
        ]
        return Initiative(
            order=one_per_slot([(entrants[i].combatant_id, values[i], None) for i in ranked]),
            initiatives={e.combatant_id: v for e, v in zip(entrants, values)},
            steps=steps,
        )


COMBAT = TinyCombat()
