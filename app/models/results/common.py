"""What every result shares: the dice, the roll-log fields, exact odds, and the
two entries no ruleset makes (free rolls, GM sheet edits).

These models document the wire (openapi.json) and check it in the tests
(tests/api/test_result_models.py): the services build the bodies and the hot path
returns them as they are, without validating them again. Every model refuses
fields it does not declare, so a result that grows a field fails the tests until
its model says so."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

Outcome = Literal[
    "super_critical_success",
    "critical_success",
    "success",
    "failure",
    "critical_failure",
    "super_critical_failure",
]


class Result(BaseModel):
    """Base of every result model: exactly the fields it declares."""

    model_config = ConfigDict(extra="forbid")


class Die(Result):
    """One die, in the order the operation consumed it (API.md, dice provenance)."""

    die: str = Field(examples=["d100"])
    value: int
    purpose: str = Field(examples=["test", "karma"])
    dropped: bool = Field(False, description="Present (true) only for a die a keep/drop expression left out.")


class Entry(Result):
    """The fields the service adds to every roll-log entry."""

    id: str
    rolls: Sequence[Die]  # each entry's own kind of die (`CombatDie`, …): a Sequence so a subclass narrows it
    hidden: bool = Field(description="A GM roll hidden from the players.")
    created_at: datetime


class Logged(Entry):
    """The fields of every entry of an operation that rolls: the roll-log fields and how the
    caller's dice were made (API.md "Provenance and who may enter which die", issue 21 item 2)."""

    provenance: Literal["server", "seed", "table"] = Field(
        description="How the caller's dice were made: the server's secure RNG, the caller's `seed`, or "
        "dice the caller entered at the table (in a fight, the dice of what a player does not "
        "control are the server's all the same)."
    )
    seed: int | None = Field(
        None,
        description="The seed used (provenance `seed`); shown to the GM and in the "
        "caller's own response only: absent from a player's log reads.",
    )


class Change(Result):
    """A value before and after an operation."""

    before: int
    after: int


class TestFields(Result):
    """API.md's test result fields (those that do not apply are null)."""

    kind: Literal["test"]
    character_id: str
    natural: int | None
    score: int | None
    target: int | None
    outcome: Outcome
    success: bool
    success_level: int | None
    degree: str | None


class OddsValue(Result):
    """An exact probability: the fraction, and the same as a float."""

    probability: str = Field(examples=["169/1000"])
    p: float


class OutcomeOdds(Result):
    """The probability of each of the six outcomes (those a ruleset lacks are 0)."""

    super_critical_success: OddsValue
    critical_success: OddsValue
    success: OddsValue
    failure: OddsValue
    critical_failure: OddsValue
    super_critical_failure: OddsValue


class OddsFields(Result):
    """`POST …/tests/odds`: nothing rolled, nothing logged."""

    character_id: str
    outcomes: OutcomeOdds
    success: OddsValue = Field(description="The sum of the successful outcomes.")


class RollResult(Logged):
    """`POST /v1/campaigns/{id}/rolls`: a free dice roll."""

    kind: Literal["roll"]
    expression: str = Field(examples=["4d6kh3"])
    total: int
    purpose: str
    character_id: str | None


class SheetEditChange(Result):
    """One rule-governed sheet field a GM edit changed (null before: it was absent)."""

    field: str = Field(examples=["karma", "stats.force"])
    before: JsonValue
    after: JsonValue


class SheetEditEntry(Entry):
    """The roll-log entry of a GM's edit of rule-governed sheet fields (`PATCH /v1/characters/{id}`):
    no dice, so its provenance is always `server` (every entry has one, API.md round 3)."""

    provenance: Literal["server"] = "server"
    kind: Literal["sheet_edit"]
    character_id: str
    changes: list[SheetEditChange]
