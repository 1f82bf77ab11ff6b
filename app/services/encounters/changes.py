"""Every change an action makes, before and after: what a client animates and what
a revert restores (API.md). Each item also says where the field lives (`on`:
the encounter, a combatant, or a character's sheet, with its sheet `key`); the
public `changes` leave that out."""

from __future__ import annotations

from typing import Any

from app.models.fight_rows import Change, CombatantField, CombatantRow, EncounterField
from app.rulesets.contract.combat import Pool
from app.services.encounters.store import Fight, clone

__all__ = ["Changes", "clone"]

# public name -> column of the encounter row
ENCOUNTER_COLUMNS: dict[str, EncounterField] = {
    "status": "status",
    "round": "round",
    "order": "turn_order",
    "current": "current_turn",
}
_INTERNAL = ("on", "key", "copy")  # where a change lives; a join's NPC copy (`turns.join`)


class Changes:
    def __init__(self, fight: Fight) -> None:
        self.fight = fight
        self.items: list[Change] = []

    def encounter(self, field: str, value: Any) -> None:
        column = ENCOUNTER_COLUMNS[field]
        before = self.fight.encounter[column]
        if before == value:
            return
        self.fight.encounter[column] = clone(value)
        self.items.append(
            {"combatant_id": None, "field": field, "before": clone(before), "after": clone(value), "on": "encounter"}
        )

    def combatant(self, c: CombatantRow, field: CombatantField, value: Any) -> None:
        before = c[field]
        if before == value:
            return
        c[field] = clone(value)
        self.fight.dirty_combatants.add(c["id"])
        self.items.append(
            {"combatant_id": c["id"], "field": field, "before": clone(before), "after": clone(value), "on": "combatant"}
        )

    def resource(self, c: CombatantRow, pool: Pool, value: int) -> None:
        """A pool of the combatant's sheet (the character must be loaded, locked)."""
        character = self.fight.loaded_character(c)
        typed = self.fight.sheet_of(character)
        before = pool.value(typed)
        if before == value:
            return
        sheet = dict(character.sheet)
        sheet[pool.key] = value
        self.fight.set_sheet(character, sheet)
        self.items.append(
            {
                "combatant_id": c["id"],
                "character_id": character.id,
                "field": pool.name,
                "before": before,
                "after": value,
                "max": pool.maximum(typed),
                "resource": True,
                "on": "sheet",
                "key": pool.key,
            }
        )

    def sheet(self, c: CombatantRow, key: str, value: Any) -> None:
        """A field of the combatant's sheet (a pool's value goes through `resource`)."""
        pool = next((p for p in self.fight.rules.pools if p.key == key), None)
        if pool is not None:
            self.resource(c, pool, value)
            return
        character = self.fight.loaded_character(c)
        sheet = dict(character.sheet)
        before = sheet.get(key)
        if before == value:
            return
        sheet[key] = clone(value)
        self.fight.set_sheet(character, sheet)
        self.items.append(
            {
                "combatant_id": c["id"],
                "character_id": character.id,
                "field": key,
                "before": clone(before),
                "after": clone(value),
                "on": "sheet",
                "key": key,
            }
        )

    def typed_sheet(self, c: CombatantRow, after: Any) -> None:
        """Every field of the combatant's sheet that `after` (a changed copy of its typed sheet,
        `Fight.sheet_copy`) changed: the two sheets' `model_dump()` compared key by key,
        each change written as JSON (a pool's through `resource`)."""
        character = self.fight.loaded_character(c)
        before, dumped = self.fight.sheet_of(character).model_dump(mode="json"), after.model_dump(mode="json")
        for key in list(dict.fromkeys([*before, *dumped])):
            if before.get(key) != dumped.get(key):
                self.sheet(c, key, dumped.get(key))

    def public(self) -> list[dict[str, Any]]:
        """The changes an action shows: without where each lives, and without the flow's per-turn
        bookkeeping (`counters["turn"]`, out of the state too): a change of counters that changed
        nothing else is left out. `items` keep everything, for a revert."""
        out = []
        for item in self.items:
            shown = {k: v for k, v in item.items() if k not in _INTERNAL}
            if item["on"] == "combatant" and item["field"] == "counters":
                shown["before"], shown["after"] = _without_turn(item["before"]), _without_turn(item["after"])
                if shown["before"] == shown["after"]:
                    continue
            out.append(shown)
        return out


def _without_turn(counters: dict[str, Any] | None) -> dict[str, Any] | None:
    return {k: v for k, v in counters.items() if k != "turn"} if counters else counters
