"""Combat actions on the wire (API.md, "Encounters (combat)"): what `POST …/actions`,
`…/next-turn`, `…/revert` and `…/start` (its `action`) answer, what `GET …/actions`
lists, and the roll-log entry of kind `combat` (the very same body).

The envelope is the same for every ruleset; what differs is declared in each
ruleset's module: the action types it has, the rule ids its steps cite. A step
names its rule and what it did, then its figures (test results, reactions,
multipliers, protection, damage…), which differ from one rule to the next: they
are typed JSON values, declared as such."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, JsonValue
from typing_extensions import TypeAliasType

from app.models.encounters import ConditionPublic, CurrentTurn, OrderEntry, PoolStatusValue, Position
from app.models.results.common import Die, Logged, Result

# the steps the encounter itself writes, in every ruleset
FLOW_RULES = ("turn", "conditions", "GM", "revert", "reveal_on_turn")


class CombatDie(Die):
    """One die of an action, in the order consumed, and whose it is."""

    by: str | None = Field(description="The combatant whose die it is (null: nobody's in particular).")


class CombatStep(Result):
    """One rule applied, in order: its id, its kind (`key`), what it did, the combatant concerned, then its figures
    (typed JSON: each rule has its own). A step about a resource a player may not see exactly
    (`hp_visibility`) has no `amount`, `before` nor `after` in that player's view."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, JsonValue] = Field(init=False)

    rule: str = Field(examples=["GC-P3", "turn"])
    key: str = Field(
        pattern=r"^[a-z0-9]+(_[a-z0-9]+)*$",
        examples=["attack_test"],
        description="The kind of step, stable (snake_case): what a client translates; `what` is English prose.",
    )
    what: str = Field(examples=["attack test"])
    combatant_id: str | None = None


class _Change(Result):
    field: str = Field(examples=["hp", "position", "current"])


class ResourceChange(_Change):
    """A resource pool of the combatant's character's sheet (`field`: the pool's name): its value
    before and after, and its `max`; a resource a player may not see exactly shows `{status}`
    before and after, and a null `max`."""

    combatant_id: str
    character_id: str
    before: int | PoolStatusValue
    after: int | PoolStatusValue
    max: int | None = Field(description="The pool's maximum (null: none, or not shown to this viewer).")
    resource: Literal[True]


class SheetChange(_Change):
    """Another field of the combatant's character's sheet (`field`: its sheet key; the ruleset's
    sheet schema types it): its JSON value before and after (null: absent)."""

    combatant_id: str
    character_id: str
    before: JsonValue
    after: JsonValue


class StatusChange(_Change):
    """The encounter's status."""

    combatant_id: str | None = Field(description="Always null: a change of the encounter itself.")
    field: Literal["status"]
    before: Literal["setup", "active", "ended"]
    after: Literal["setup", "active", "ended"]


class RoundChange(_Change):
    """The encounter's round."""

    combatant_id: str | None = Field(description="Always null: a change of the encounter itself.")
    field: Literal["round"]
    before: int
    after: int


class OrderChange(_Change):
    """The encounter's turn order (as the viewer may see it)."""

    combatant_id: str | None = Field(description="Always null: a change of the encounter itself.")
    field: Literal["order"]
    before: list[OrderEntry]
    after: list[OrderEntry]


class CurrentChange(_Change):
    """The slot being played (null: none)."""

    combatant_id: str | None = Field(description="Always null: a change of the encounter itself.")
    field: Literal["current"]
    before: CurrentTurn | None
    after: CurrentTurn | None


class PositionChange(_Change):
    """A combatant's cell (null: off the grid)."""

    combatant_id: str
    field: Literal["position"]
    before: Position | None
    after: Position | None


class ConditionsChange(_Change):
    """A combatant's conditions."""

    combatant_id: str
    field: Literal["conditions"]
    before: list[ConditionPublic]
    after: list[ConditionPublic]


class CountersChange(_Change):
    """What the rules keep on a combatant during the fight (`CombatantPublic.counters`)."""

    combatant_id: str
    field: Literal["counters"]
    before: dict[str, JsonValue] | None
    after: dict[str, JsonValue] | None


class ActionsChange(_Change):
    """A combatant's actions a round (GC-O3)."""

    combatant_id: str
    field: Literal["actions"]
    before: int
    after: int


class InitiativeChange(_Change):
    """A combatant's initiative (null: none yet)."""

    combatant_id: str
    field: Literal["initiative"]
    before: int | None
    after: int | None


class HiddenChange(_Change):
    """Whether a combatant is hidden from the players (`reveal_on_turn`)."""

    combatant_id: str
    field: Literal["hidden"]
    before: bool
    after: bool


class JoinedChange(_Change):
    """A combatant that joined the running fight (`join`; its revert: `before` true, `after` false)."""

    combatant_id: str
    field: Literal["joined"]
    before: bool
    after: bool


# `before`/`after` typed by where the field lives and which it is. On the encounter
# (`combatant_id` null: status, round, order, current), on a combatant (no `character_id`: position,
# conditions, counters, actions, initiative, hidden, joined) or on its character's sheet (`character_id`
# given; a resource pool also gives `resource: true` and `max`). Each body fits one member only (the
# sheet's: `character_id`, no `resource`); the sheet's come first, for a client keeping the first that fits.
CombatChange = TypeAliasType(
    "CombatChange",
    Annotated[
        ResourceChange
        | SheetChange
        | StatusChange
        | RoundChange
        | OrderChange
        | CurrentChange
        | PositionChange
        | ConditionsChange
        | CountersChange
        | ActionsChange
        | InitiativeChange
        | HiddenChange
        | JoinedChange,
        Field(union_mode="left_to_right"),
    ],
)


class CombatFields(Logged):
    """The fields every ruleset's action has."""

    kind: Literal["combat"]
    encounter_id: str
    round: int
    actor_id: str | None
    target_id: str | None
    rolls: list[CombatDie]
    changes: list[CombatChange]
    encounter_version: int = Field(description="The encounter's version after this action.")
    reverted_by: str | None = Field(description="The revert that undid this action, if any.")
    reverts: str | None = Field(None, description="A revert only: the action it undid.")
    hidden: bool = Field(description="A GM action hidden from the players.")
    created_at: datetime


def rule_ids(prefix: str) -> str:
    """The pattern of the rule ids a ruleset's steps cite: its own (`GC-P3`) or the encounter's."""
    return f"^({prefix}-[A-Z]+[0-9]+|{'|'.join(FLOW_RULES)})$"
