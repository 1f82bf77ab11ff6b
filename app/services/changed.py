"""What a unit of work changed in the campaign's characters, as its use case says it
(cosmicpython's domain events): the unit of work collects them (`UnitOfWork.changed`) and,
before its commit, hands them to the one handler that tells everyone and moves the fights
showing those characters (`app.services.handlers`). Plain data: this module imports nothing
of `app.services` but the records."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from app.services.records import StoredCharacter


@dataclass(frozen=True)
class CharacterCreated:
    character: StoredCharacter
    hidden: bool = False  # a copy made for a hidden combatant: the GM's to know


@dataclass(frozen=True)
class CharacterChanged:
    """A character saved: as it was read (locked) and as it is saved."""

    before: StoredCharacter
    after: StoredCharacter
    hidden: bool = False  # a hidden roll's or action's change: the other players learn nothing of it
    # an edit (a PATCH): the other players are not told when their partial view of it is the same
    edited: bool = False


@dataclass(frozen=True)
class CharacterDeleted:
    """A character to delete: the handler deletes its row, once it has read who could see it and
    which fights show it."""

    character: StoredCharacter
    hidden: bool = False  # hidden where it was (an NPC copy hidden in its fight): the GM's to know


Change = CharacterCreated | CharacterChanged | CharacterDeleted


@dataclass(frozen=True)
class Seen:
    """A changed character as saved, as the other players know of it: `unknown` to them, else the
    version they read (that of their partial view, `characters.limited`, when theirs is)."""

    character: StoredCharacter
    unknown: bool
    version: int


@dataclass
class Telling:
    """What the handler made of some changes, read and locked already: its writes, to run when the
    unit of work writes (in a `writes()` batch too): `moves` (the rows deleted, the fights moved) then
    `events` (each change told); and each changed character as the other players know of it (`seen`)."""

    moves: list[Callable[[], object]] = field(default_factory=list)
    events: list[Callable[[], object]] = field(default_factory=list)
    seen: dict[str, Seen] = field(default_factory=dict)

    def __call__(self) -> None:
        self.move()
        self.tell()

    def move(self) -> None:
        for write in self.moves:
            write()
        self.moves = []

    def tell(self) -> None:
        for write in self.events:
            write()
        self.events = []
