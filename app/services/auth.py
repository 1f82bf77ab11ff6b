"""Who is calling: bearer token → principal, and the campaign-scoped checks
(API.md: 401 missing/invalid, 404 another campaign's token, 403 player doing a GM thing)."""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import bindparam, select
from sqlmodel import Session

from app.kit.errors import Forbidden, NotFound, Unauthorized
from app.core.security import hash_token
from app.models.tables import Credential


@dataclass(frozen=True)
class Principal:
    campaign_id: str
    role: str  # "gm" | "player"
    player_id: str | None
    token_hash: str

    @property
    def is_gm(self) -> bool:
        return self.role == "gm"


def require_token(token: str | None) -> str:
    """The token's hash; 401 when there is no token."""
    if not token:
        raise Unauthorized("a bearer token is required (Authorization: Bearer <token>)",)
    return hash_token(token)


def known_principal(token_hash: str) -> Principal | None:
    """The principal of a token already seen by this process (no database access)."""
    return _known.get(token_hash)


def authenticate(session: Session, token: str | None) -> Principal:
    token_hash = require_token(token)
    principal = _known.get(token_hash)
    if principal is None:
        row = session.connection().execute(_CREDENTIAL, {"token_hash": token_hash}).first()
        if row is None:
            raise Unauthorized("invalid token")
        principal = Principal(row.campaign_id, row.role, row.player_id, token_hash)
        if len(_known) >= _KNOWN_MAX:
            _known.clear()
        _known[token_hash] = principal
    return principal


# Tokens are never edited nor revoked, so a credential once found is remembered
# (bounded): the hot path then needs no look-up to authenticate.
_KNOWN_MAX = 50_000
_known: dict[str, Principal] = {}
_cred = Credential.__table__
_CREDENTIAL = select(_cred.c.campaign_id, _cred.c.role, _cred.c.player_id).where(_cred.c.token_hash == bindparam("token_hash"))


def check_member(principal: Principal, campaign_id: str, what: str = "campaign") -> None:
    """Another campaign's token sees 404: existence never leaks."""
    if principal.campaign_id != campaign_id:
        raise NotFound(f"no {what} with this id")


def check_gm(principal: Principal, action: str) -> None:
    if not principal.is_gm:
        raise Forbidden(f"only the GM may {action}")


def check_owner_or_gm(principal: Principal, player_id: str | None, action: str) -> None:
    if not principal.is_gm and (player_id is None or principal.player_id != player_id):
        raise Forbidden(f"only the character's owner or the GM may {action}")
