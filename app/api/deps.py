"""Typed dependencies: the session, the caller, the idempotency key."""
from __future__ import annotations

from typing import Annotated, Any, Callable, ContextManager, TypeVar

from fastapi import Body, Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from app.api.ratelimit import RateLimiter, client_address
from app.core.db import get_session, open_session
from app.kit.errors import Unauthorized
from app.core.security import hash_token
from app.services.auth import Principal, authenticate, known_principal, require_token
from app.services.operations import Idempotency

T = TypeVar("T")
SessionDep = Annotated[Session, Depends(get_session)]
bearer = HTTPBearer(auto_error=False, description="The campaign's gm_token or a player's token.")


async def session_factory() -> Callable[..., ContextManager[Session]]:
    """Opens sessions for work done off the event loop (one threadpool hop per
    request): `sessions()` to write, `sessions(read_only=True)` to only read."""
    return open_session


SessionFactory = Annotated[Callable[..., ContextManager[Session]], Depends(session_factory)]


async def get_principal(request: Request, sessions: SessionFactory,
                        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> Principal:
    """The caller; a token this process has seen costs no database access. A
    missing or unknown token counts as a failed authentication of the client's
    address; an address over that limit gets 429 before any look-up."""
    token = credentials.credentials if credentials else None
    limiter: RateLimiter = request.app.state.rate_limiter
    principal = known_principal(hash_token(token)) if token else None
    if principal is None:
        address = client_address(request)
        await limiter.refuse_failing_address(address)
        try:
            require_token(token)
            principal = await read(sessions, authenticate, token)
        except Unauthorized:
            await limiter.count_failure(address)
            raise
    await limiter.hit_token(principal.token_hash)
    return principal


async def in_thread(sessions: Callable[..., ContextManager[Session]], fn: Callable[..., T], *args: Any,
                    read_only: bool = False) -> T:
    """Run `fn(session, *args)` in the threadpool with a fresh session (sync DB work off the loop).

    The session, and its pooled connection, is opened and closed inside that one
    thread: no handler holds a connection while it waits for another thread (the
    response is serialised on the event loop), so requests cannot wait on each other."""
    def work() -> T:
        with (sessions(read_only=True) if read_only else sessions()) as session:
            return fn(session, *args)
    return await run_in_threadpool(work)


async def read(sessions: Callable[..., ContextManager[Session]], fn: Callable[..., T], *args: Any) -> T:
    """`in_thread` for work that only reads (a deferred transaction: no SQLite write lock)."""
    return await in_thread(sessions, fn, *args, read_only=True)


PrincipalDep = Annotated[Principal, Depends(get_principal)]
IfMatch = Annotated[str | None, Header(alias="If-Match", max_length=200)]
IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key", max_length=200, description="Replays the first response to the same key and body.")]
JsonObject = Annotated[dict[str, Any], Body(description="The body; its schema depends on the campaign's ruleset (see GET /v1/rulesets/{id}).")]


def idempotency(request: Request, key: str | None, body: Any) -> Idempotency | None:
    return Idempotency.of(key, request.method, request.url.path, body)


def etag(version: int) -> str:
    return f'"{version}"'
