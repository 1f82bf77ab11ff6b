"""A fight's stored state, typed: what an encounter row and its combatants keep between requests
(the turn order, the current turn, a combatant's cell and conditions, the flow's per-turn
bookkeeping) and the change records of its action history (what a revert restores).

The services write these as JSON and read them back as they wrote them; an imported bundle
(app.services.bundles) is the one way such state comes from outside, so it is read with these
models, strictly, before anything of it is written: a bundle whose fight the services could not
play on (a turn order naming no combatant, a condition without its rounds, a position that is not
a cell) is a 422 naming its place, never a 500 at the next turn."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from app.kit.models import Strict
from app.models.encounters import Position
from app.models.fields import Int32

__all__ = [
    "CombatantState",
    "StoredCondition",
    "StoredCurrentTurn",
    "EncounterState",
    "Kept",
    "StoredOrderEntry",
    "Counters",
    "StoredChange",
    "Turn",
]

Round = Annotated[StrictInt, Field(ge=0, le=1_000_000)]
Slot = Annotated[StrictInt, Field(ge=0, le=100_000)]
Ref = Annotated[str, Field(min_length=1, max_length=32)]  # an id of the bundle (checked against it)


class StoredCondition(Strict):
    """A condition a combatant bears (`ConditionAdd`, or a rule's: AS-C5 dying, unconscious…)."""

    name: str = Field(min_length=1, max_length=60)
    rounds_left: Annotated[StrictInt, Field(ge=0, le=1_000_000)] | None
    ends: Literal["start_of_turn", "end_of_turn", "end_of_round"]
    since_round: Round | None = None


class StoredOrderEntry(Strict):
    """One slot of the turn order (`app.rulesets.contract.combat.entry`)."""

    combatant_id: Ref
    slot: Slot
    initiative: StrictInt | None = Field(ge=-1_000_000, le=1_000_000)
    extra_action: StrictBool
    tiebreak: dict[str, Any] | None
    parallel_with: list[Ref]
    action: Annotated[StrictInt, Field(ge=1, le=100)] | None = None  # GC-O3
    from_round: Round | None = None  # RB-F4


class StoredCurrentTurn(Strict):
    """The slot being played and who acts in it."""

    slot: Slot
    combatant_id: Ref | None
    combatant_ids: list[Ref]


class Kept(BaseModel):
    """A value a rule keeps in a fight: its keys that rules read typed, any other kept as it is."""

    model_config = ConfigDict(extra="allow")


class Turn(Strict):
    """The flow's per-turn bookkeeping (`counters["turn"]`, README "Actions per turn"): keyed by the
    round and slot it was kept in, the action types counted in it; a ruleset's own notes of a turn
    (GC-P3 phases, a move's reach, RB-F3's free attack) are typed by its `Turn` (`Counters.turn`)."""

    model_config = ConfigDict(extra="allow")
    round: Round
    slot: Slot | None
    actions: list[Annotated[str, Field(max_length=40)]] = Field(default_factory=list)


class Counters(Strict):
    """What a fight keeps on a combatant beside its sheet (`CombatantPublic.counters`): the shared
    `turn`, and each ruleset's own keys, typed by its subclass (`EncounterRules.Counters`). A key
    no rule reads is kept as it is (allowed); a key a rule reads must be of its type."""

    model_config = ConfigDict(extra="allow")
    turn: Turn | None = None


class CombatantState(Strict):
    """What a fight keeps of a combatant beside its character's sheet (its counters: the shared
    `turn`; the rest is its ruleset's, each value JSON)."""

    position: Position | None
    conditions: list[StoredCondition]
    counters: dict[Annotated[str, Field(max_length=60)], Any]  # and each as its ruleset's `Counters`
    initiative: Int32 | None
    initiative_override: Int32 | None
    actions: Annotated[StrictInt, Field(ge=1, le=5)]
    reaction: str | None = Field(max_length=20)
    side: str = Field(min_length=1, max_length=40)
    hidden: StrictBool


class EncounterState(Strict):
    """The encounter row's part of the fight (`ENCOUNTER_FIELDS` of the store)."""

    status: Literal["setup", "active", "ended"]
    round: Round
    turn_order: list[StoredOrderEntry]
    current_turn: StoredCurrentTurn | None


# an action's change record, by where the field lives (`app.services.encounters.changes.Changes`)
ENCOUNTER_FIELDS = {"status": "status", "round": "round", "order": "turn_order", "current": "current_turn"}


class StoredChange(Strict):
    """One change of an action, before and after (`Changes.items`): what a revert writes back."""

    on: Literal["encounter", "combatant", "sheet", "roster"]
    combatant_id: Ref | None
    character_id: Ref | None = None
    field: str = Field(min_length=1, max_length=60)
    before: Any
    after: Any
    key: str | None = Field(None, min_length=1, max_length=60)  # a sheet field's key
    max: StrictInt | None = None  # a pool's maximum, shown
    resource: StrictBool | None = None  # a pool's change
    copy_: StrictBool | None = Field(None, alias="copy")  # a join's NPC copy (`turns.join`: `on` roster)
