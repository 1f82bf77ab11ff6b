"""Who is calling: bearer token → principal, and the campaign-scoped checks
(API.md: 401 missing/invalid, 404 another campaign's token, 403 player doing a GM thing)."""
from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session

from app.core.errors import Forbidden, NotFound, Unauthorized
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


def authenticate(session: Session, token: str | None) -> Principal:
    if not token:
        raise Unauthorized("a bearer token is required (Authorization: Bearer <token>)",
                           extra={"headers": {"WWW-Authenticate": "Bearer"}})
    token_hash = hash_token(token)
    cred = session.get(Credential, token_hash)
    if cred is None:
        raise Unauthorized("invalid token", extra={"headers": {"WWW-Authenticate": "Bearer"}})
    return Principal(cred.campaign_id, cred.role, cred.player_id, token_hash)


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
