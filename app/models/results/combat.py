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
from typing import Literal

from pydantic import ConfigDict, Field, JsonValue

from app.models.results.common import Die, Logged, Result

# the steps the encounter itself writes, in every ruleset
FLOW_RULES = ("turn", "conditions", "GM", "revert", "reveal_on_turn")


class CombatDie(Die):
    """One die of an action, in the order consumed, and whose it is."""

    by: str | None = Field(description="The combatant whose die it is (null: nobody's in particular).")


class CombatStep(Result):
    """One rule applied, in order: its id, what it did, the combatant concerned, then its figures
    (typed JSON: each rule has its own). A step about a resource a player may not see exactly
    (`hp_visibility`) has no `amount`, `before` nor `after` in that player's view."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, JsonValue] = Field(init=False)

    rule: str = Field(examples=["GC-P3", "turn"])
    what: str = Field(examples=["attack test"])
    combatant_id: str | None = None


class CombatChange(Result):
    """A field the action changed, before and after: on the encounter (`combatant_id` null: `status`,
    `round`, `order`, `current`), on a combatant (`position`, `conditions`, `counters`…) or on its
    character's sheet (`character_id` given; a resource pool also gives `max` and `resource`). A
    resource a player may not see exactly shows `{status}` before and after, and no `max`."""

    combatant_id: str | None
    character_id: str | None = None
    field: str = Field(examples=["hp", "position", "current"])
    before: JsonValue
    after: JsonValue
    max: int | None = None
    resource: Literal[True] | None = None


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
