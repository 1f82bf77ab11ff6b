"""Who is calling: bearer token → principal, and the campaign-scoped checks
(API.md: 401 missing/invalid, 404 another campaign's token, 403 player doing a GM thing)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection
from sqlmodel import Session

from app.core.prepared import Prepared
from app.core.security import hash_token
from app.kit.errors import Forbidden, NotFound, Unauthorized
from app.models.tables import Character, Credential, Encounter, core_table
from app.services.records import Principal, Role, Unread
from app.services.visibility import in_hiding, in_hiding_query


def require_token(token: str | None) -> str:
    """The token's hash; 401 when there is no token."""
    if not token:
        raise Unauthorized("a bearer token is required (Authorization: Bearer <token>)", code="token_missing")
    return hash_token(token)


def known_principal(token_hash: str) -> Principal | None:
    """The principal of a token already seen by this process (no database access), `remembered`:
    its credential to be read once by this request (its own `Unread`)."""
    principal = _known.get(token_hash)
    return None if principal is None else replace(principal, unread=Unread())


def authenticate(session: Session, token: str | None) -> Principal:
    token_hash = require_token(token)
    principal = known_principal(token_hash)
    if principal is None:
        row = session.connection().execute(_CREDENTIAL, {"token_hash": token_hash}).first()
        if row is None:
            raise Unauthorized("invalid token")
        principal = Principal(row.campaign_id, row.role, row.player_id, token_hash)  # read now: not `remembered`
        if len(_known) >= _KNOWN_MAX:
            _known.clear()
        _known[token_hash] = principal
    return principal


# A credential once found is remembered (bounded), so authenticating costs no
# look-up of its own. Credentials are never edited, only deleted (a rotation
# deletes the old row, a removed player or campaign its rows), and other workers
# remember them too: so a remembered principal is checked by `verify` in the
# request's first database hop, on the connection it holds anyway (a primary-key
# read, or a part of the unit of work's first statement), and a dead token is refused at
# once in every worker.
_KNOWN_MAX = 50_000
_known: dict[str, Principal] = {}
_cred = core_table(Credential)
_CREDENTIAL = select(_cred.c.campaign_id, _cred.c.role, _cred.c.player_id).where(
    _cred.c.token_hash == bindparam("token_hash")
)
_ALIVE = select(_cred.c.token_hash).where(_cred.c.token_hash == bindparam("token_hash"))
_FAST_ALIVE = Prepared(_ALIVE)  # every request of a remembered caller: on the DBAPI cursor (app.core.prepared)


def verify(session: Session, principal: Principal) -> Principal:
    """The principal, its credential checked when it was `remembered` (a primary-key read);
    401 when the credential is gone (rotated, its player or campaign deleted)."""
    if principal.remembered:
        check_alive(principal, _FAST_ALIVE.all(session.connection(), {"token_hash": principal.token_hash}))
    return checked(principal)


def checked(principal: Principal) -> Principal:
    """The principal once this request has read its credential: no longer `remembered`, nor are the
    request's other copies of it (their `Unread` is one)."""
    if principal.unread is not None:
        principal.unread.due = False
    return principal


def alive_query(principal: Principal) -> tuple[Prepared, dict[str, str]]:
    """`verify`'s statement, to run with others (`fetch_together`); `check_alive` reads its rows."""
    return _FAST_ALIVE, {"token_hash": principal.token_hash}


def hold(conn: Connection, principal: Principal) -> None:
    """The caller's credential held until the commit (FOR KEY SHARE: what a row referring to it takes):
    one being deleted (a rotation, a removal) is waited for, then gone (401), rather than broken by the
    foreign key of what the caller inserts (a 500)."""
    check_alive(principal, conn.execute(_HOLD, {"token_hash": principal.token_hash}).all())


_HOLD = _ALIVE.with_for_update(key_share=True)


def check_alive(principal: Principal, rows: Sequence[tuple]) -> None:
    """401 unless `rows` (its credential, just read) has it; else it is read for this request (`checked`)."""
    if not rows:
        forget([principal.token_hash])
        raise Unauthorized("invalid token")
    checked(principal)


def forget(token_hashes: Iterable[str]) -> None:
    """This process stops remembering these credentials (others learn it from `verify`)."""
    for token_hash in token_hashes:
        _known.pop(token_hash, None)


def me(session: Session, principal: Principal) -> dict[str, str | None]:
    """Who the token names (GET /v1/me); its credential was verified by the caller's hop."""
    return {"campaign_id": principal.campaign_id, "role": principal.role, "player_id": principal.player_id}


_char = core_table(Character)
_enc = core_table(Encounter)
_CHARACTER = select(_char.c.campaign_id, _char.c.player_id, _char.c.player_access).where(_char.c.id == bindparam("id"))
_ENCOUNTER = select(_enc.c.campaign_id).where(_enc.c.id == bindparam("id"))


def granted(principal: Principal, role: Role, action: str, path: Mapping[str, str]) -> Principal:
    """The route's declared rule, enforced once (by the caller's dependency, app.api.deps):
    what needs no database at once — the campaign the path names is the caller's (else 404),
    a campaign's GM route is the GM's (else 403); a rule on the character or encounter the
    path names (its owner, the GM once that row is known to be of the caller's campaign: 404
    before 403) is handed to the use case in the principal (`access`), which applies it with
    `authorize` on the row it reads anyway (no read of its own on the hot path)."""
    if "campaign_id" in path:
        check_member(principal, path["campaign_id"])
    if role in ("member", "admin") or principal.is_gm:  # admin: `require_admin`, before any token
        return principal
    if "character_id" in path or "encounter_id" in path:
        return replace(principal, access=role, action=action)
    check_gm(principal, action)  # a campaign's route: `owner_or_gm` names a character
    return principal


def authorize(principal: Principal, owner_id: str | None = None) -> None:
    """The route's rule handed over by `granted` (`principal.access`), on the row the path
    names, now read (of the caller's campaign): 403 unless the caller is the GM (`gm`), or the
    owner of the character (`owner_or_gm`: `owner_id`, its player)."""
    if principal.access == "gm":
        check_gm(principal, principal.action)
    elif principal.access == "owner_or_gm":
        check_owner_or_gm(principal, owner_id, principal.action)


def check_access(
    session: Session, principal: Principal, role: str, path: Mapping[str, str], action: str = "use this route"
) -> None:
    """A route's access rule, from its path alone: 404 when the campaign, character
    or encounter it names is not the caller's campaign's, then 403 when the caller
    is not the GM (`gm`) or the character's owner (`owner_or_gm`). The rule the route
    declares, asked only before a refused request is answered (`CheckedRoute`: the caller
    learns nothing of a schema it may not use); else `granted` and `authorize` apply it."""
    owner = None
    if "campaign_id" in path:
        check_member(principal, path["campaign_id"])
    if "character_id" in path:
        row = session.connection().execute(_CHARACTER, {"id": path["character_id"]}).first()
        check_member(principal, row.campaign_id if row else "", "character")
        assert row is not None  # an unknown character is refused just above (404)
        owner = row.player_id
        if not principal.is_gm and owner != principal.player_id and row.player_access == "none":
            raise NotFound("no character with this id")  # unknown to this player (API.md)
    if "encounter_id" in path:
        row = session.connection().execute(_ENCOUNTER, {"id": path["encounter_id"]}).first()
        check_member(principal, row.campaign_id if row else "", "encounter")
    if role == "gm":
        check_gm(principal, action)
    elif role == "owner_or_gm":
        if "character_id" in path and not principal.is_gm and owner is None:
            query, params = in_hiding_query(principal.campaign_id, path["character_id"])
            if in_hiding(query.all(session.connection(), params)):
                raise NotFound("no character with this id")  # a character in hiding is not a player's to know of
        check_owner_or_gm(principal, owner, action)


def check_member(principal: Principal, campaign_id: str, what: str = "campaign") -> None:
    """Another campaign's token sees 404: existence never leaks."""
    if principal.campaign_id != campaign_id:
        raise NotFound(f"no {what} with this id")


def check_gm(principal: Principal, action: str) -> None:
    if not principal.is_gm:
        raise Forbidden(f"only the GM may {action}", code="gm_only")


def check_owner_or_gm(principal: Principal, player_id: str | None, action: str) -> None:
    if not principal.is_gm and (player_id is None or principal.player_id != player_id):
        raise Forbidden(f"only the character's owner or the GM may {action}", code="owner_or_gm_only")
