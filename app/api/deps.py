"""Typed dependencies: the session, the caller, the idempotency key."""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlmodel import Session

from app.core.db import get_session
from app.services.auth import Principal, authenticate
from app.services.operations import Idempotency

SessionDep = Annotated[Session, Depends(get_session)]
bearer = HTTPBearer(auto_error=False, description="The campaign's gm_token or a player's token.")


def get_principal(request: Request, session: SessionDep,
                  credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> Principal:
    principal = authenticate(session, credentials.credentials if credentials else None)
    request.app.state.rate_limiter.hit(principal.token_hash)
    return principal


PrincipalDep = Annotated[Principal, Depends(get_principal)]
IfMatch = Annotated[str | None, Header(alias="If-Match", max_length=200)]
IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key", max_length=200, description="Replays the first response to the same key and body.")]
JsonObject = Annotated[dict[str, Any], Body(description="The body; its schema depends on the campaign's ruleset (see GET /v1/rulesets/{id}).")]


def idempotency(request: Request, key: str | None, body: Any) -> Idempotency | None:
    return Idempotency.of(key, request.method, request.url.path, body)


def etag(version: int) -> str:
    return f'"{version}"'
