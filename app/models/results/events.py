"""The data of each Server-Sent Event of `GET /v1/campaigns/{id}/events` (`event:` name -> model)."""
from __future__ import annotations

from typing import Any

from pydantic import Field

from app.models.results import LogEntry
from app.models.results.common import Result


class VersionRef(Result):
    id: str
    version: int


class CampaignUpdatedEvent(Result):
    """`campaign.updated`: renamed, or its options changed."""

    id: str
    version: int
    name: str
    options: dict[str, Any]


class PlayerCreatedEvent(Result):
    """`player.created`."""

    id: str
    name: str


class CharacterCreatedEvent(Result):
    """`character.created`."""

    id: str
    version: int
    name: str


class CharacterUpdatedEvent(Result):
    """`character.updated`: read it again (`GET /v1/characters/{id}`)."""

    id: str
    version: int


class CharacterDeletedEvent(Result):
    """`character.deleted`."""

    id: str


class LogCreatedEvent(Result):
    """`log.created`: a new roll-log entry, and the characters whose sheets it changed."""

    entry: LogEntry | None = Field(description="The entry, as its operation returned it.")
    characters_changed: list[VersionRef]


class StreamErrorEvent(Result):
    """`error`: the server ends the stream (database unavailable); reconnect with `Last-Event-ID`."""

    status: int
    detail: str


EVENTS: dict[str, type[Result]] = {
    "campaign.updated": CampaignUpdatedEvent,
    "player.created": PlayerCreatedEvent,
    "character.created": CharacterCreatedEvent,
    "character.updated": CharacterUpdatedEvent,
    "character.deleted": CharacterDeletedEvent,
    "log.created": LogCreatedEvent,
    "error": StreamErrorEvent,
}
