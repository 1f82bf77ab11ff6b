"""What every result shares: the dice, the roll-log fields, exact odds, and the
two entries no ruleset makes (free rolls, GM sheet edits).

These models are the wire (openapi.json). A ruleset's operation returns its result
model (`Head` … `Tail`: the roll-log entry, built with `Head.of`); the service stamps
the roll-log fields on it and serialises it once (`Head.wire`) for the log, the
idempotency record and the response. The fields are laid out in the order they are
sent: the model's field order IS the wire order, a field given (even null) is sent, a
field left out is not (`exclude_unset`). Every model refuses fields it does not declare,
so a result that grows a field fails the tests until its model says so."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, JsonValue, PlainSerializer, WithJsonSchema

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


def wire_time(ts: datetime) -> str:
    """A timestamp as the API writes it: UTC, always six digits of microseconds."""
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# a datetime written by `wire_time` (pydantic would drop the fraction of a whole second)
Timestamp = Annotated[
    datetime,
    PlainSerializer(wire_time, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]


# how the caller's dice were made, and the seed: the last fields of every entry of an operation that rolls
Provenance = Annotated[
    Literal["server", "seed", "table", "imported"],
    Field(
        description="How the caller's dice were made: the server's secure RNG, the caller's `seed`, or "
        "dice the caller entered at the table (in a fight, the dice of what a player does not "
        "control are the server's all the same); `imported`: an entry of an imported bundle, whose "
        "dice this service did not roll (`imported_provenance`: what the bundle claimed)."
    ),
]
# what a bundle claimed of an imported entry's dice: a claim, vouched for by nobody
ImportedProvenance = Annotated[
    Literal["server", "seed", "table"] | None,
    Field(
        description="Only on an entry of `provenance` `imported`: the provenance the imported bundle "
        "claimed for it (an entry exported before provenance was recorded claims `server`); absent "
        "when the bundle did not say. A claim only: this service did not roll these dice."
    ),
]
SeedUsed = Annotated[
    int | None,
    Field(
        description="The seed used (provenance `seed`); shown to the GM and in the "
        "caller's own response only: absent from a player's log reads."
    ),
]


class Die(Result):
    """One die, in the order the operation consumed it (API.md, dice provenance)."""

    die: str = Field(examples=["d100"])
    value: int
    purpose: str = Field(examples=["test", "karma"])
    dropped: bool = Field(False, description="Present (true) only for a die a keep/drop expression left out.")
    epoch: str | None = Field(
        None,
        description="A server die's dice epoch (`GET …/dice-epochs`): present on every die the server rolled, "
        "absent on dice a caller entered (`table`, `seed`).",
    )
    k: int | None = Field(
        None, ge=0, description="The die's number in its epoch (with `epoch`): 0, 1, 2… without a gap."
    )


# a hidden GM roll the GM published once its dice's epochs were revealed (`POST …/rolls/{id}/publish`)
PublishedAt = Annotated[
    Timestamp | None,
    Field(
        description="Present on a hidden GM roll the GM published after its dice epochs were revealed: "
        "the players read it (and check its dice) from then on."
    ),
]


class Entry(Result):
    """The fields the service adds to every roll-log entry."""

    id: str
    rolls: Sequence[Die]  # each entry's own kind of die (`CombatDie`, …): a Sequence so a subclass narrows it
    hidden: bool = Field(description="A GM roll hidden from the players.")
    created_at: datetime


class Logged(Entry):
    """The fields of every entry of an operation that rolls: the roll-log fields and how the
    caller's dice were made (API.md "Provenance and who may enter which die")."""

    provenance: Provenance
    seed: SeedUsed = None
    imported_provenance: ImportedProvenance = None
    published_at: PublishedAt = None


class Head(Result):
    """First on the wire of a ruleset's roll-log entry: its id (the service's) and its kind.

    An entry model lists its bases in reverse wire order (pydantic lays out the fields of
    the last base first; a field declared again keeps its first place):
    `class XResult(Tail, Dice, XFields, Head)` is id, kind, X's fields, rolls, then the
    `Tail`. A ruleset builds it with `XResult.of(...)`: the roll-log fields are left to the
    service, which stamps them (`stamped`) before the entry is serialised (`wire`)."""

    id: str
    kind: str

    # the placeholders of the service's fields until `stamped` (never sent)
    pending: ClassVar[dict[str, Any]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        pending: dict[str, Any] = {"id": "", "hidden": False, "created_at": _EPOCH, "provenance": "server"}
        if issubclass(cls, Dice):
            pending["rolls"] = []
        cls.pending = {k: v for k, v in pending.items() if k in cls.model_fields}

    @classmethod
    def of(cls, **fields: Any) -> Self:
        """The result as the ruleset makes it (validated), the service's fields still to stamp."""
        return cls.model_validate({**cls.pending, **fields})

    def stamped(self, **entry: Any) -> Self:
        """The entry with the service's fields (`id`, `hidden`, `created_at`, `provenance`, `seed`
        when there is one, and `rolls` for a `Dice` entry): values the service made, not validated again."""
        return self.model_copy(update=entry)

    def wire(self) -> dict[str, Any]:
        """The entry as it is sent and logged: JSON values, its fields in order, those given only."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Dice(Result):
    """Every die of the operation, in the order consumed: the service's (an entry that lists its
    dice its own way, by side or participant, declares `rolls` itself)."""

    rolls: list[Die]


class Tail(Result):
    """Last on the wire of a ruleset's roll-log entry: the service's roll-log fields and how the
    caller's dice were made (API.md "Provenance and who may enter which die")."""

    hidden: bool = Field(description="A GM roll hidden from the players.")
    created_at: Timestamp
    provenance: Provenance
    seed: SeedUsed = None
    imported_provenance: ImportedProvenance = None
    published_at: PublishedAt = None


class Change(Result):
    """A value before and after an operation."""

    before: int
    after: int


class TestFields(Result):
    """API.md's test result fields (those that do not apply are null), in their order inside
    another result (a side, a placing; a test entry puts `id` and `kind` first, `Head`)."""

    character_id: str
    ruleset: str
    kind: Literal["test"]
    natural: int | None
    score: int | None
    target: int | None
    outcome: Outcome
    success: bool
    success_level: int | None
    degree: str | None
    effects: Result


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


class RollResult(Tail, Dice, Head):
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
    no dice, so its provenance is always `server` (every entry has one, API.md), or `imported`
    for an entry of an imported bundle."""

    provenance: Literal["server", "imported"] = "server"
    imported_provenance: ImportedProvenance = None
    kind: Literal["sheet_edit"]
    character_id: str
    changes: list[SheetEditChange]
