"""The unit of work of every operation that rolls dice.

Load (and lock) the campaign's characters, check who may do it, build the dice
source, call the ruleset, then write the roll-log entry, every changed sheet
(versioned) and the idempotency record, and commit once: nothing is
half-applied. A concurrent writer that slipped in between is detected by the
version check and the whole operation is retried on fresh state, so no update
is lost.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session

from app.kit.errors import Conflict, Forbidden, NotFound
from app.models.tables import Campaign, Character, IdempotencyRecord, LogEntry, LogEntryCharacter, new_id, utcnow
from app.rules.dice import dice_source
from app.services import events
from app.services.auth import Principal, check_member
from app.services.rulesets import get_adapter
from app.services.rulesets.base import CharacterState, OperationContext, Outcome, RollingRequest, RulesetAdapter
from app.services.validation import InvalidBody

MAX_ATTEMPTS = 8

Parse = Callable[[RulesetAdapter], RollingRequest]  # validates the body with the ruleset's model
# the characters an operation acts on: known from the path, or named by the body
Targets = Sequence[str] | Callable[[RollingRequest], Sequence[str]]
Authorize = Callable[[Principal, RulesetAdapter, RollingRequest, list[CharacterState]], None]
Run = Callable[[RulesetAdapter, RollingRequest, list[CharacterState], OperationContext], Outcome]


@dataclass(frozen=True)
class Idempotency:
    """An `Idempotency-Key` and the fingerprint of the request it came with."""

    key: str
    fingerprint: str

    @classmethod
    def of(cls, key: str | None, method: str, path: str, body: Any) -> "Idempotency | None":
        if key is None:
            return None
        if not 1 <= len(key) <= 200:
            raise InvalidBody("Idempotency-Key must be 1 to 200 characters", field="Idempotency-Key")
        canonical = json.dumps([method, path, body], sort_keys=True, separators=(",", ":"), default=str)
        return cls(key, hashlib.sha256(canonical.encode()).hexdigest())


class _Retry(Exception):
    """Another writer changed a sheet between our read and our write."""


def iso(ts) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def state(character: Character) -> CharacterState:
    """A snapshot of an ORM character (for reads outside the hot path)."""
    return CharacterState(
        id=character.id, campaign_id=character.campaign_id, name=character.name, kind=character.kind,
        player_id=character.player_id, sheet=character.sheet, version=character.version,
    )


def replay(session: Session, principal: Principal, idem: Idempotency | None) -> dict | None:
    """The first response to this key, or None; the key with another request → 422."""
    if idem is None:
        return None
    record = session.get(IdempotencyRecord, (principal.token_hash, idem.key))
    if record is None:
        return None
    if record.request_hash != idem.fingerprint:
        raise InvalidBody("this Idempotency-Key was already used with a different request", field="Idempotency-Key")
    return record.body


def check_provenance(principal: Principal, options: dict[str, Any], req: RollingRequest) -> None:
    """API.md: the GM may always enter dice; players only when the campaign allows it."""
    if req.dice is not None and not principal.is_gm and not options.get("players_may_enter_dice", False):
        raise Forbidden("players may not enter table dice in this campaign (option players_may_enter_dice)")
    if req.hidden and not principal.is_gm:
        raise Forbidden("only the GM may make hidden rolls")


def perform(
    session: Session,
    principal: Principal,
    *,
    campaign_id: str,
    parse: Parse,
    targets: Targets,
    authorize: Authorize,
    run: Run,
    idem: Idempotency | None,
) -> dict[str, Any]:
    """Run one rolling operation atomically; returns the logged body."""
    check_member(principal, campaign_id)
    if (body := replay(session, principal, idem)) is not None:
        return body
    integrity_retried = False
    for _attempt in range(MAX_ATTEMPTS):
        try:
            return _attempt_once(session, principal, campaign_id, parse, targets, authorize, run, idem)
        except _Retry:
            session.rollback()
        except OperationalError as exc:  # SQLite busy, Postgres deadlock, a connection found dead
            session.rollback()
            if not (exc.connection_invalidated or _transient(exc)):
                raise
        except IntegrityError:
            session.rollback()
            if (body := replay(session, principal, idem)) is not None:
                return body  # a concurrent request with the same key won the race
            if integrity_retried:
                raise
            integrity_retried = True  # a concurrent reroll of the same test won: the next attempt says so
    raise Conflict("the character is being changed by too many requests at once; try again", retry_after=1)


def _transient(exc: OperationalError) -> bool:
    text = str(exc.orig).lower()
    return any(s in text for s in ("database is locked", "deadlock", "could not serialize", "busy"))


def _attempt_once(session, principal, campaign_id, parse, targets, authorize, run, idem) -> dict[str, Any]:
    conn = session.connection()  # the hot path speaks SQLAlchemy Core: the ORM costs more than the rules
    campaign = conn.execute(_CAMPAIGN, {"id": campaign_id}).first()
    if campaign is None:
        raise NotFound("no campaign with this id")
    adapter = get_adapter(campaign.ruleset)
    if callable(targets):
        req = parse(adapter)
        characters = load_locked(conn, adapter, campaign_id, targets(req))
    else:  # a character named by the path: an unknown one is a 404 whatever the body
        characters = load_locked(conn, adapter, campaign_id, targets)
        req = parse(adapter)
    authorize(principal, adapter, req, characters)
    check_provenance(principal, campaign.options, req)
    ctx = OperationContext(
        dice=dice_source(seed=req.seed, dice=req.dice),
        options=adapter.parse_options(campaign.options),
        is_gm=principal.is_gm,
        get_log_entry=lambda entry_id: log_entry_body(session, campaign_id, entry_id, include_hidden=principal.is_gm),
    )
    outcome = run(adapter, req, characters, ctx)
    ctx.dice.finish()
    now = utcnow()
    body = _logged_body(outcome, ctx, req, now)
    rerolls = outcome.cancels
    if rerolls is not None:
        _check_not_rerolled(conn, rerolls, include_hidden=principal.is_gm)
    entry = {"id": body["id"], "campaign_id": campaign_id, "character_id": outcome.character_id,
             "kind": body["kind"], "hidden": req.hidden, "created_at": now, "body": body, "rerolls": rerolls}
    others = [c.id for c in characters if c.id != outcome.character_id]
    if others:  # a confrontation or group test: every character involved finds it in the log
        seq = conn.execute(_INSERT_LOG.returning(_log.c.seq), entry).scalar_one()
        conn.execute(_INSERT_LOG_CHARACTER, [{"seq": seq, "character_id": cid} for cid in others])
    else:
        conn.execute(_INSERT_LOG, entry)
    _save_sheets(conn, adapter, {c.id: c for c in characters}, outcome.sheets, now)
    changed = [{"id": c.id, "version": c.version + 1} for c in characters if c.id in outcome.sheets]
    events.record(session, campaign_id, "log.created", {"entry_id": body["id"], "characters_changed": changed}, hidden=req.hidden)
    if idem is not None:
        conn.execute(_INSERT_IDEMPOTENCY, {"token_hash": principal.token_hash, "key": idem.key, "request_hash": idem.fingerprint,
                                           "status_code": 201, "body": body, "created_at": now})
    session.commit()
    return body


_campaign = Campaign.__table__
_character = Character.__table__
_CAMPAIGN = select(_campaign.c.ruleset, _campaign.c.options).where(_campaign.c.id == bindparam("id"))
_CHARACTERS = (
    select(_character.c.id, _character.c.campaign_id, _character.c.name, _character.c.kind, _character.c.player_id,
           _character.c.sheet, _character.c.version)
    .where(_character.c.id.in_(bindparam("ids", expanding=True)))
    .order_by(_character.c.id)
    .with_for_update()
)
_log = LogEntry.__table__
_INSERT_LOG = insert(_log)
_INSERT_LOG_CHARACTER = insert(LogEntryCharacter.__table__)
_INSERT_IDEMPOTENCY = insert(IdempotencyRecord.__table__)
_UPDATE_SHEET = (
    update(_character)
    .where(_character.c.id == bindparam("character_id"), _character.c.version == bindparam("expected_version"))
    .values(sheet=bindparam("sheet"), version=bindparam("new_version"), updated_at=bindparam("now"))
)


def load_locked(conn, adapter: RulesetAdapter, campaign_id: str, character_ids: Sequence[str]) -> list[CharacterState]:
    """The characters in the order asked, locked (in id order, against deadlocks) until commit."""
    if len(set(character_ids)) != len(character_ids):
        raise InvalidBody("the same character is named twice", field="character_id")
    if not character_ids:
        return []
    rows = conn.execute(_CHARACTERS, {"ids": list(character_ids)}).all()
    by_id = {r.id: adapter.state(r) for r in rows if r.campaign_id == campaign_id}
    missing = [cid for cid in character_ids if cid not in by_id]
    if missing:
        raise NotFound(f"no character with id {missing[0]!r} in this campaign")
    return [by_id[cid] for cid in character_ids]


def _logged_body(outcome: Outcome, ctx: OperationContext, req: RollingRequest, now) -> dict[str, Any]:
    body = {"id": new_id(), "kind": outcome.kind, **outcome.body}
    if "rolls" not in body:
        body["rolls"] = [r.to_dict() for r in ctx.dice.rolls]
    body["hidden"] = req.hidden
    body["created_at"] = iso(now)
    return body


def _save_sheets(conn, adapter: RulesetAdapter, loaded: dict[str, CharacterState], sheets: dict, now) -> None:
    """Each sheet is written only if its version is still the one read (else retry on fresh state)."""
    for character_id, sheet in sheets.items():
        before = loaded.get(character_id)
        if before is None:
            raise RuntimeError(f"the ruleset changed character {character_id} it was not given")
        result = conn.execute(_UPDATE_SHEET, {"character_id": character_id, "expected_version": before.version,
                                              "sheet": adapter.dump_sheet(sheet), "new_version": before.version + 1, "now": now})
        if result.rowcount != 1:
            raise _Retry()


_LOG_BODY = select(_log.c.body, _log.c.hidden).where(_log.c.id == bindparam("id"), _log.c.campaign_id == bindparam("campaign_id"))


_REROLLED_BY = select(_log.c.id, _log.c.hidden).where(_log.c.rerolls == bindparam("rerolls"))


def _check_not_rerolled(conn, test_id: str, *, include_hidden: bool) -> None:
    """AS-H2 cancels a test once: a second reroll of the same test is refused.
    A hidden GM reroll is not named to a player (`rerolled_by` is null)."""
    by = conn.execute(_REROLLED_BY, {"rerolls": test_id}).first()
    if by is not None:
        shown = by.id if include_hidden or not by.hidden else None
        raise Conflict(f"test {test_id} was already cancelled and rolled again" + (f" (by {shown})" if shown else ""),
                       extra={"rerolled_by": shown})


def log_entry_body(session: Session, campaign_id: str, entry_id: str, *, include_hidden: bool) -> dict | None:
    """An earlier roll-log entry of the campaign, as it was returned, or None
    (a hidden GM entry is None to players: its existence never leaks)."""
    row = session.connection().execute(_LOG_BODY, {"id": entry_id, "campaign_id": campaign_id}).first()
    if row is None or (row.hidden and not include_hidden):
        return None
    return row.body
