"""Combat encounters (API.md, "Encounters (combat)"): setup, initiative, turns,
actions, undo, per-viewer visibility. Each ruleset's own pieces are in
`rulesets/`, behind `EncounterRules`."""

from __future__ import annotations

from app.services.encounters.actions import act, list_actions, revert
from app.services.encounters.setup import (
    add_combatants,
    create_encounter,
    delete_combatant,
    end,
    list_encounters,
    read_encounter,
    update_combatant,
    update_encounter,
)
from app.services.encounters.turns import next_turn, start

__all__ = [
    "act",
    "add_combatants",
    "create_encounter",
    "delete_combatant",
    "end",
    "list_actions",
    "list_encounters",
    "next_turn",
    "read_encounter",
    "revert",
    "start",
    "update_combatant",
    "update_encounter",
]
