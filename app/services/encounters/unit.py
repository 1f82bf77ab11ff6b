"""The unit of work of every encounter write: lock the encounter, do the use case,
write everything (action, roll-log entry, sheets, encounter version, event,
idempotency record) and commit once, or nothing at all.

Two writes on one encounter never interleave: the encounter row is locked
`FOR UPDATE` (PostgreSQL) before anything is read; SQLite writers are serialized
already (`BEGIN IMMEDIATE`). A sheet changed under us (a lost race) or a
transient database error retries the whole use case on fresh state."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session

from app.kit.errors import Conflict, Forbidden, NotFound
from app.models.tables import IdempotencyRecord, utcnow
from app.services.auth import Principal
from app.services.encounters import store
from app.services.encounters.store import Fight, Retry
from app.services.encounters.view import Scene, Viewer
from app.services.operations import Idempotency
from app.services.pages import check_if_match
from app.services.validation import InvalidBody

T = TypeVar("T")
MAX_ATTEMPTS = 8
_INSERT_IDEMPOTENCY = insert(IdempotencyRecord.__table__)


def viewer(principal: Principal) -> Viewer:
    return Viewer(is_gm=principal.is_gm, player_id=principal.player_id)


def replay(session: Session, principal: Principal, idem: Idempotency | None) -> dict | None:
    """API.md: the same key and body replay the first response; the key with another body → 422."""
    if idem is None:
        return None
    record = session.get(IdempotencyRecord, (principal.token_hash, idem.key))
    if record is None:
        return None
    if record.request_hash != idem.fingerprint:
        raise InvalidBody("this Idempotency-Key was already used with a different request", field="Idempotency-Key")
    return record.body


def write(session: Session, principal: Principal, encounter_id: str, work: Callable[[Any, Fight], dict[str, Any]],
          *, idem: Idempotency | None = None, status_code: int = 201) -> dict[str, Any]:
    """Run `work(conn, fight)` on the locked encounter and commit; the response it returns
    is stored under the Idempotency-Key in the same transaction."""
    if (body := replay(session, principal, idem)) is not None:
        return body
    retried_integrity = False
    for _attempt in range(MAX_ATTEMPTS):
        try:
            conn = session.connection()
            fight = store.load_fight(conn, encounter_id, lock=True)
            if fight.campaign_id != principal.campaign_id:
                raise NotFound("no encounter with this id")
            response = work(conn, fight)
            if idem is not None:
                conn.execute(_INSERT_IDEMPOTENCY, {"token_hash": principal.token_hash, "key": idem.key,
                                                   "request_hash": idem.fingerprint, "status_code": status_code,
                                                   "body": response, "created_at": utcnow()})
            session.commit()
            return response
        except Retry:
            session.rollback()
        except OperationalError as exc:
            session.rollback()
            if not (exc.connection_invalidated or _transient(exc)):
                raise
        except IntegrityError:
            session.rollback()
            if (body := replay(session, principal, idem)) is not None:
                return body  # a concurrent request with the same key won
            if retried_integrity:
                raise
            retried_integrity = True
        except BaseException:
            session.rollback()
            raise
    raise Conflict("the encounter is being changed by too many requests at once; try again", retry_after=1)


def _transient(exc: OperationalError) -> bool:
    text = str(exc.orig).lower()
    return any(s in text for s in ("database is locked", "deadlock", "could not serialize", "busy"))


def scene(conn, fight: Fight) -> Scene:
    """Visibility inputs: hidden combatants and their owners (loaded characters, else one query)."""
    missing = [c["character_id"] for c in fight.combatants if c["character_id"] not in fight.characters]
    owners = {cid: ch["player_id"] for cid, ch in fight.characters.items()}
    owners.update(store.owners(conn, missing))
    return Scene.of(fight, owners)


# --- checks shared by the use cases ----------------------------------------------------------

def check_version(fight: Fight, if_match: str | None) -> None:
    check_if_match(fight.encounter["version"], if_match, "encounter")


def check_not_ended(fight: Fight) -> None:
    if fight.encounter["status"] == "ended":
        raise Conflict("the encounter has ended: nothing more can be done in it")


def check_status(fight: Fight, wanted: str, what: str) -> None:
    check_not_ended(fight)
    status = fight.encounter["status"]
    if status != wanted:
        hint = "it has not started yet" if status == "setup" else "it has started (revert the start to go back)"
        raise Conflict(f"{what} needs an encounter in {wanted}; {hint}", extra={"encounter_status": status})


def check_provenance(principal: Principal, campaign_options: dict[str, Any], *, dice: Any, hidden: bool) -> None:
    """API.md: the GM may always enter dice; players only when the campaign allows it; hidden is the GM's."""
    if dice is not None and not principal.is_gm and not campaign_options.get("players_may_enter_dice", False):
        raise Forbidden("players may not enter table dice in this campaign (option players_may_enter_dice)")
    if hidden and not principal.is_gm:
        raise Forbidden("only the GM may make hidden actions")


def now():
    return utcnow()
