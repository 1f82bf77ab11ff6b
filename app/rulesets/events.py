"""The data of each Server-Sent Event of `GET /v1/campaigns/{id}/events` (`event:` name -> model).

An event carries the new state of what changed, as that viewer reads it (a
character as `GET /v1/characters/{id}` returns it…), or the roll-log entry; an
encounter's events carry its id and new version (read the state, filtered for
the caller, with `GET /v1/encounters/{id}`) and the action that made it, as
`GET /v1/encounters/{id}/actions/{aid}` returns it to that viewer. Every change sends
its events (API.md, a complete mirror): a fight's action sends
`character.updated` for each sheet it changed, `log.created` for its entry, then
`encounter.action`. Hidden things (a GM's hidden roll, a hidden combatant's action
and sheet) are in the GM's streams only (and its owner's). Every event is filtered
per viewer like the reads: a character is sent to the other players as their
`player_access` (and its fights) reads it (whole, limited, or not at all)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field, RootModel

from app.models.dice_epochs import DiceEpochPublic
from app.models.results.common import Result
from app.models.webhooks import WebhookPublic
from app.rulesets.wire import CombatEntry, LogEntry


class VersionRef(Result):
    id: str
    version: int


class CampaignUpdatedEvent(Result):
    """`campaign.updated`: renamed, or its options changed: the campaign as `GET /v1/campaigns/{id}`
    returns it (without the caller's `role`)."""

    id: str
    name: str
    ruleset: str
    options: dict[str, Any]
    version: int
    created_at: datetime
    metadata: dict[str, str]


class PlayerCreatedEvent(Result):
    """`player.created`: the new player (never its token)."""

    id: str
    campaign_id: str
    name: str
    created_at: datetime


class PlayerDeletedEvent(Result):
    """`player.deleted`: a player removed by the GM. Its token is dead (its own stream ends) and its
    characters stay, owned by nobody: their `character.updated` come before this event."""

    id: str


class CharacterEvent(Result):
    """The character as `GET /v1/characters/{id}` returns it."""

    id: str
    campaign_id: str
    name: str
    kind: str
    player_id: str | None
    ruleset: str
    sheet: dict[str, Any]
    derived: dict[str, Any]
    player_access: Literal["observer", "limited", "none"]
    version: int
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, str]


class PoolStatusEvent(Result):
    status: Literal["unhurt", "wounded", "bloodied", "down"]


class LimitedCharacterEvent(Result):
    """The character as a player with `limited` access reads it: no sheet, its pools as status words."""

    id: str
    campaign_id: str
    name: str
    kind: str
    ruleset: str
    player_access: Literal["limited"]
    pools: dict[str, PoolStatusEvent]
    version: int
    created_at: datetime
    updated_at: datetime


class CharacterCreatedEvent(RootModel[CharacterEvent | LimitedCharacterEvent]):
    """`character.created`: the new character, as `GET /v1/characters/{id}` returns it to this viewer
    (also each NPC copy an encounter makes)."""


class CharacterUpdatedEvent(RootModel[CharacterEvent | LimitedCharacterEvent]):
    """`character.updated`: the character as `GET /v1/characters/{id}` returns it now to this viewer,
    after a `PATCH` or a fight's change of its sheet (an action, a revert, the GM's heal, damage or
    condition, the end). A combatant's `resources` in the encounter's state come from this sheet: a
    tracker updates the combatants whose `character_id` it names (the encounter's version does not
    move on a `PATCH`, so no `encounter.updated` is sent for it)."""


class CharacterDeletedEvent(Result):
    """`character.deleted`."""

    id: str


class CharacterHiddenEvent(Result):
    """`character.hidden`: the players other than its owner may no longer see this character (its
    `player_access` became `none`): a page drops its card, as for a deleted one. Sent only when they
    saw it before (they knew its id); the GM and the owner still read it whole."""

    id: str


class LogCreatedEvent(Result):
    """`log.created`: a new roll-log entry, and the characters whose sheets it changed."""

    entry: LogEntry | None = Field(description="The entry, as its operation returned it.")
    characters_changed: list[VersionRef]


class EncounterEvent(Result):
    """The encounter and its new version: read its state (filtered for the caller) with
    `GET /v1/encounters/{id}`."""

    id: str = Field(description="The encounter's id.")
    version: int


class EncounterCreatedEvent(EncounterEvent):
    """`encounter.created`."""


class EncounterUpdatedEvent(EncounterEvent):
    """`encounter.updated`: a setup change (combatants, options), its start or its end. A change
    about a hidden combatant is in the GM's streams only. The start's initiative rolls are also the
    first action of its history: its event carries it (`action_id`, `action`)."""

    action_id: str | None = Field(default=None, description="`start` only: its action in the history.")
    action: CombatEntry | None = Field(default=None, description="`start` only: that action as this viewer reads it.")


class EncounterActionEvent(EncounterEvent):
    """`encounter.action`: an action (or a `next_turn`), as `GET /v1/encounters/{id}/actions/{aid}`
    returns it to this viewer. A player's stream never has the action of a combatant it may not see."""

    action_id: str
    action: CombatEntry


class EncounterRevertedEvent(EncounterEvent):
    """`encounter.reverted`: `action_id` is the revert (`action`, as this viewer reads it), `reverted`
    the action it undid."""

    action_id: str
    reverted: str
    action: CombatEntry


class WebhookDisabledEvent(WebhookPublic):
    """`webhook.disabled` (the GM's streams and webhooks only): a webhook of the campaign was disabled,
    as `GET …/webhooks` lists it: `disabled_reason` `failing` (every attempt failed since
    `failing_since`, for WEBHOOK_DISABLE_AFTER_HOURS) or `gm`. Nothing is delivered to it until the
    GM enables it again (`PATCH …/webhooks/{id}` `{"enabled": true}`)."""


class DiceEpochSaltedEvent(Result):
    """`dice_epoch.salted`: a member added a salt to the current dice epoch (before its first die)."""

    epoch: DiceEpochPublic


class DiceEpochRevealedEvent(Result):
    """`dice_epoch.revealed`: the GM revealed the dice epoch (`epoch`, its seed now public); `next`
    is the campaign's new current epoch."""

    epoch: DiceEpochPublic
    next: DiceEpochPublic


class LogPublishedEvent(Result):
    """`log.published`: the GM published a hidden roll (its dice's epochs revealed): read it with
    `GET …/rolls/{entry_id}`."""

    entry_id: str


class StreamErrorEvent(Result):
    """`error`: the server ends the stream: `unavailable` (the database; reconnect with `Last-Event-ID`)
    or `token_revoked` (the stream's token was rotated or deleted, its player removed or its campaign
    deleted: authenticate again)."""

    status: int
    code: Literal["unavailable", "token_revoked"]
    detail: str


# The name of every event of a campaign, declared once: what a change records (`uow.record`,
# `events.record`), what a webhook subscribes to, and what the dashboard listens for
# (app/web/js/events.js `NAMES`, checked against this by tests/api/test_event_names.py).
EventName = Literal[
    "campaign.updated",
    "player.created",
    "player.deleted",
    "character.created",
    "character.updated",
    "character.deleted",
    "character.hidden",
    "log.created",
    "encounter.created",
    "encounter.updated",
    "encounter.action",
    "encounter.reverted",
    "webhook.disabled",
    "dice_epoch.salted",
    "dice_epoch.revealed",
    "log.published",
]
EVENT_NAMES: tuple[EventName, ...] = get_args(EventName)
# `error` is no change of the campaign: the server ends a stream with it
StreamEnd = Literal["error"]

EVENTS: dict[EventName | StreamEnd, type[BaseModel]] = {
    "campaign.updated": CampaignUpdatedEvent,
    "player.created": PlayerCreatedEvent,
    "player.deleted": PlayerDeletedEvent,
    "character.created": CharacterCreatedEvent,
    "character.updated": CharacterUpdatedEvent,
    "character.deleted": CharacterDeletedEvent,
    "character.hidden": CharacterHiddenEvent,
    "log.created": LogCreatedEvent,
    "encounter.created": EncounterCreatedEvent,
    "encounter.updated": EncounterUpdatedEvent,
    "encounter.action": EncounterActionEvent,
    "encounter.reverted": EncounterRevertedEvent,
    "webhook.disabled": WebhookDisabledEvent,
    "dice_epoch.salted": DiceEpochSaltedEvent,
    "dice_epoch.revealed": DiceEpochRevealedEvent,
    "log.published": LogPublishedEvent,
    "error": StreamErrorEvent,
}


class EventTicket(Result):
    """A one-use ticket for `GET /v1/campaigns/{id}/events?ticket=` (a browser's `EventSource`)."""

    ticket: str = Field(description="Opens one stream; it is used up then. Keep it out of logs.")
    expires_at: datetime = Field(description="About a minute after it was issued.")
