"""The shapes of a fight as the services hold it between the database and the rules: the encounter
row (`Fight.encounter`), a combatant row, a step of an action's explanation (`app.kit.steps.Step`, and
the encounter's own `FlowStep`) and a change record.

TypedDicts, not classes: they are the JSON the services already read and write (rows as SQLAlchemy
returns them, steps and changes as they are logged and stored), so naming their keys changes nothing
at run time; `fight_state` is what checks such JSON when it comes from outside (a bundle)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, NotRequired, TypedDict

from app.kit.steps import Step
from app.models.seen import PlayerVersions

__all__ = ["Change", "CombatantField", "CombatantRow", "EncounterField", "EncounterRow", "FlowStep", "Step"]

# the fields a fight writes back (the store's `ENCOUNTER_FIELDS`, `COMBATANT_FIELDS`; a combatant change's `field`)
EncounterField = Literal[
    "status", "round", "turn_order", "current_turn", "name", "options", "client_metadata", "player_versions"
]
CombatantField = Literal[
    "side", "hidden", "position", "initiative", "initiative_override", "actions", "reaction", "conditions", "counters"
]


class EncounterRow(TypedDict):
    """An encounter row (`app.models.tables.Encounter`), every column."""

    id: str
    campaign_id: str
    name: str
    status: Literal["setup", "active", "ended"]
    round: int
    version: int
    options: dict[str, Any]
    turn_order: list[dict[str, Any]]  # `fight_state.StoredOrderEntry` each
    current_turn: dict[str, Any] | None  # `fight_state.StoredCurrentTurn`
    client_metadata: dict[str, str]
    player_versions: PlayerVersions
    created_at: datetime
    updated_at: datetime


class CombatantRow(TypedDict):
    """A combatant row (`app.models.tables.Combatant`), every column the store reads."""

    id: str
    encounter_id: str
    character_id: str
    ordinal: int
    side: str
    hidden: bool
    position: dict[str, Any] | None  # a cell, `Position`
    initiative: int | None
    initiative_override: int | None
    actions: int
    reaction: str | None
    conditions: list[dict[str, Any]]  # `fight_state.StoredCondition` each
    counters: dict[str, Any]  # the shared `turn` and the ruleset's own (`fight_state.Counters`)
    created_at: NotRequired[datetime]  # a new row's (written, not read back)


class FlowStep(Step, total=False):
    """A step the encounter itself writes, in every ruleset (`FLOW_RULES`: a turn, a condition, the
    GM's heal or damage, a revert, a reveal): its figures beside the common keys."""

    round: int  # `new_round`
    slot: int | None  # a turn's place in the order (`turn_ends`: null when no slot was current)
    name: str  # a condition's
    rounds_left: int | None  # a condition's rounds left (null: until removed)
    ends: str  # when a condition counts its rounds off (`start_of_turn`, `end_of_turn`…)
    field: str  # a revert's change that could not be restored
    character_id: str  # a revert's deleted NPC copy


class Change(TypedDict):
    """One change of an action, before and after (`Changes.items`, stored in the action's row):
    where it lives (`on`, a sheet's `key`) is what a revert writes back; the public changes leave
    those keys out."""

    on: Literal["encounter", "combatant", "sheet", "roster"]
    combatant_id: str | None
    field: str
    before: Any
    after: Any
    character_id: NotRequired[str]
    key: NotRequired[str]  # a sheet field's key
    max: NotRequired[int | None]  # a pool's maximum, shown
    resource: NotRequired[bool]  # a pool's change
    copy: NotRequired[bool]  # a join's NPC copy (`turns.join`: `on` roster)
