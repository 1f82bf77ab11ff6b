"""The ids a roll-log entry's body carries, and what each names: the one list that export (the
rows deleted since that a body still names) and import (a bundle names only the ids it defines)
read. A body is JSON whose steps are open (each rule adds its figures: `app.kit.steps.Step` and
the rulesets' `rules/steps.py`), so an id is known by its key, at any depth: a step, a change and
the turn order or counters it holds, a die, an opposition's side, a group's participant, an
attack's logged `request` (AS-H2 resolves it again).

The keys come from the result models (every `…_id` field), the step and change TypedDicts (their
`…_id` figures and those their comments call ids: `members`, `leader`, `against`…), the rulesets'
`naming_counters` and `naming_step_fields`, and what real fights of the four rulesets log
(tests/api/test_import_body_ids.py checks each source against this list). A key whose value is
not a string there (a group's `leader`, a placing's `rerolls`) names nothing there: only strings,
and lists of them, are ids."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

__all__ = ["BODY_IDS", "IdKind", "Place", "body_ids"]

IdKind = Literal["character", "encounter", "combatant", "entry"]

BODY_IDS: Final[Mapping[str, IdKind]] = {
    # a character of the campaign (or deleted since)
    "character_id": "character",  # an entry's own, a sheet change's, a side's, a die's, a revert's NPC copy
    "winner_character_id": "character",  # AS-T9
    "leader_character_id": "character",  # AS-T6
    "winner_id": "character",  # RB-C1
    "rerolled_for": "character",  # AS-H2 outside a fight
    "healer_id": "character",  # AS-C6, AS-C7
    "ally_id": "character",  # AS-H5
    # the fight of a combat entry
    "encounter_id": "encounter",
    # a combatant of that fight (or removed since)
    "actor_id": "combatant",
    "target_id": "combatant",  # an action's, a Final Skill step's (GC-S9), a logged request's
    "also_target_id": "combatant",  # AS-C4, in a logged request
    "group": "combatant",  # AS-C11, in a logged request
    "cooperating": "combatant",  # AS-T6, in a logged request
    "combatant_id": "combatant",  # a step's, a change's, a turn order entry's
    "combatant_ids": "combatant",  # the current turn's
    "parallel_with": "combatant",  # GC-O2
    "by": "combatant",  # whose die
    "members": "combatant",  # AS-C11, AS-T6
    "leader": "combatant",  # AS-C11, AS-T6 (a step's; a group entry's is a number)
    "against": "combatant",  # GC-P2, GC-P6
    "provoked_by": "combatant",  # GC-P6, a step's and a counter's
    "riposte": "combatant",  # GC-P2, a counter
    "counter_attack": "combatant",  # GC-P6, a counter
    "dodged": "combatant",  # RB-F3
    "defense_of": "combatant",  # WA-C1
    # an entry of the log (an encounter's action is its combat entry)
    "reverts": "entry",
    "reverted_by": "entry",
    "rerolls": "entry",  # AS-H2 (RB-C2's are dice)
    "retry_of": "entry",  # AS-T2
    "damage_id": "entry",  # AS-H4
}


Place = tuple[str | int, ...]


def body_ids(body: Any, *, places: bool = False) -> list[tuple[IdKind, str, Place | None]]:
    """Every id a log entry's body (JSON) carries, in document order: (what it names, the id, its
    place in the body when `places`; else None, the walk then builds no path: an import checks
    every body of a bundle, and asks for the places only to name a bad one)."""
    found: list[tuple[IdKind, str, Place | None]] = []
    _collect(body, found, () if places else None)
    return found


def _collect(value: Any, found: list[tuple[IdKind, str, Place | None]], path: Place | None) -> None:
    if type(value) is dict:
        for key, item in value.items():
            kind = BODY_IDS.get(key)
            if type(item) is str:
                if kind is not None:
                    found.append((kind, item, None if path is None else (*path, key)))
            elif type(item) is dict or type(item) is list:
                _collect_in(item, kind, found, None if path is None else (*path, key))
    elif type(value) is list:
        _collect_in(value, None, found, path)


def _collect_in(
    item: dict[str, Any] | list[Any],
    kind: IdKind | None,
    found: list[tuple[IdKind, str, Place | None]],
    path: Place | None,
) -> None:
    """A value under a key: a list of ids when the key names them (`members`, `parallel_with`…)."""
    if type(item) is dict:
        _collect(item, found, path)
        return
    for i, one in enumerate(item):
        if type(one) is str:
            if kind is not None:
                found.append((kind, one, None if path is None else (*path, i)))
        elif type(one) is dict or type(one) is list:
            _collect(one, found, None if path is None else (*path, i))
