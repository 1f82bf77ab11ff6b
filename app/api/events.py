"""Server-Sent Events: every change in a campaign, live.

Backed by the `event` table (written in the same transaction as each change),
so every worker process serves the same stream. Event ids count per campaign
(1, 2, 3…). A stream starts at the present; `Last-Event-ID` (or `?after=`)
resumes after an event: what was missed is read
from the database in pages, then the stream goes live, with no gap and no
duplicate. Live events come from the process's one poller (app.api.event_hub):
an idle stream holds no thread and no database connection.

A browser's `EventSource` cannot send `Authorization`: it asks for a one-use
ticket (`POST …/events/tickets`, with its token) and opens `…/events?ticket=`.
The bearer token itself is never accepted in a URL."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.security import HTTPAuthorizationCredentials
from sqlalchemy.exc import DBAPIError
from sse_starlette import EventSourceResponse
from starlette.types import Receive, Scope, Send

from app.api.boundary import BoundaryRoute
from app.api.deps import PrincipalDep, SessionFactory, access, bearer, confirm, get_principal, in_thread
from app.api.event_hub import REVOKED_FRAME, EventHub, Lease, Subscription, error_frame, frame
from app.api.openapi_doc import events_extension
from app.api.ratelimit import client_address
from app.core.config import get_settings
from app.core.db import Sessions
from app.kit.errors import BadRequest, TooManyRequests, Unauthorized, Unavailable, define
from app.rulesets.events import EventTicket
from app.services import events
from app.services.auth import check_member
from app.services.records import Principal

router = APIRouter(tags=["events"], route_class=BoundaryRoute)
log = logging.getLogger("app.events")
PAGE = 100  # events per catch-up read
MAX_CURSOR = 2**62
PING_SECONDS = 15
SEND_TIMEOUT_SECONDS = 30  # a client that reads nothing for this long is disconnected
RETRY = b"retry: 2000\n\n"
_CURSOR = re.compile(r"[0-9]{1,19}")
_PROBLEM = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}


class InvalidCursor(BadRequest):
    """`Last-Event-ID` or `after` that is not an event id."""

    code = "invalid_event_id"


define("invalid_event_id", InvalidCursor, "`Last-Event-ID` or `after` is not an event id.")


@router.get(
    "/v1/campaigns/{campaign_id}/events",
    summary="Server-Sent Events: every change in the campaign, live",
    description="Event ids count per campaign (1, 2, 3…). Starts at the present (a first message with only "
    "an `id:`). `Last-Event-ID` (which wins over `?after=`) resumes after that event: "
    "the missed events first, then live ones. Authenticated by `Authorization: Bearer`, or, from a "
    "browser's `EventSource` (which cannot send headers), by `?ticket=` from `POST …/events/tickets` "
    "(one use; the token itself is never accepted in a URL). At most a few streams per token (429) and per "
    "server "
    "(503), both with `Retry-After`. A stream the server must end (database unavailable) ends with "
    "an `error` event. Each message's `data` is a JSON object; `components.schemas.Event` types every "
    "message as `{event, data, id}`, a union discriminated by `event`, and `x-events` names the schema of "
    "each event's data: "
    + ", ".join(f"`{e['event']}` ({e['data']['$ref'].rsplit('/', 1)[1]})" for e in events_extension())
    + ".",
    response_class=EventSourceResponse,
    openapi_extra={"x-events": events_extension()},
    responses={
        200: {
            "description": "The event stream (`id:`, `event:`, `data:` lines).",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        400: {"description": "`Last-Event-ID` or `after` is not an event id", "content": _PROBLEM},
        401: {"description": "No token, or a ticket unknown, used or expired", "content": _PROBLEM},
    },
)
@access("member")  # enforced below: a stream ticket or the bearer token names the caller
async def stream_events(
    request: Request,
    campaign_id: str,
    sessions: SessionFactory,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    after: Annotated[str | None, Query(description="Resume after this event id (0: from the start).")] = None,
    follow: Annotated[bool, Query(description="false: send what is there after the cursor and close.")] = True,
    ticket: Annotated[
        str | None,
        Query(
            max_length=100,
            description="A stream ticket (`POST …/events/tickets`), "
            "instead of `Authorization` (a browser's `EventSource`).",
        ),
    ] = None,
) -> EventSourceResponse:
    if ticket is not None:
        principal = await _ticket_principal(request, sessions, ticket)
    else:
        principal = await get_principal(request, sessions, credentials)
        # a rotated or deleted token opens no stream, whichever worker remembers it
        principal = await confirm(sessions, principal)
    check_member(principal, campaign_id)
    cursor = _cursor("Last-Event-ID", last_event_id)
    if cursor is None:
        cursor = _cursor("after", after)
    hub = _hub(request, sessions)
    lease = hub.admit(principal.token_hash)
    try:
        if follow:
            lease.subscription = await hub.subscribe(campaign_id, principal)
            body = _follow(hub, lease, campaign_id, principal, cursor)
        else:
            body = _snapshot(hub, lease, campaign_id, principal, cursor)
    except BaseException:
        lease.release()
        raise
    return _Stream(body, lease)


@router.post(
    "/v1/campaigns/{campaign_id}/events/tickets",
    status_code=201,
    response_model=EventTicket,
    summary="A one-use ticket to open the event stream from a browser (any member)",
    description="`EventSource` cannot send `Authorization`: open `GET /v1/campaigns/{id}/events?ticket=<ticket>` "
    "within a minute. The ticket opens one stream, as the caller (its role: hidden events only for "
    "the GM), counted against the caller's token's streams; it dies with the token. To reconnect, "
    "ask for another and resume with `?after=<last event id>`.",
)
@access("member")
async def create_event_ticket(campaign_id: str, sessions: SessionFactory, principal: PrincipalDep) -> EventTicket:
    return EventTicket.model_validate(await in_thread(sessions, events.issue_ticket, principal, campaign_id))


async def _ticket_principal(request: Request, sessions: Sessions, ticket: str) -> Principal:
    """The ticket's principal (it is used up); a bad ticket counts as a failed authentication.
    A ticket refused before it is read (its address failed too often: 429) is spent all the
    same: it never works afterwards, from any address."""
    limiter = request.app.state.rate_limiter
    address = client_address(request)
    try:
        await limiter.refuse_failing_address(address)
    except TooManyRequests:
        await in_thread(sessions, events.spend_ticket, ticket)
        raise
    try:
        principal = await in_thread(sessions, events.redeem_ticket, ticket)
    except Unauthorized:
        await limiter.count_failure(address)
        raise
    await limiter.hit_token(principal.token_hash)
    return principal


def _cursor(name: str, value: str | None) -> int | None:
    """An event id: ASCII digits, at most 2**62; an empty header means none."""
    if value is None or value == "":
        return None
    if not _CURSOR.fullmatch(value) or int(value) > MAX_CURSOR:
        raise InvalidCursor(
            f"{name} must be an event id: an integer from 0 to 2**62",
            extra={
                "errors": [{"loc": ["header" if name == "Last-Event-ID" else "query", name], "msg": "not an event id"}]
            },
        )
    return int(value)


def _hub(request: Request, sessions: Sessions) -> EventHub:
    """The process's hub (one per application and event loop), made at the first stream."""
    hub = getattr(request.app.state, "event_hub", None)
    if hub is None or hub.loop is not asyncio.get_running_loop():
        settings = getattr(request.app.state, "settings", None) or get_settings()
        hub = EventHub(
            sessions,
            per_token=settings.event_streams_per_token,
            per_process=settings.event_streams_per_process,
            notify=settings.event_notify,
            fallback_seconds=settings.event_fallback_poll_seconds,
        )
        request.app.state.event_hub = hub
    return hub


class _Stream(EventSourceResponse):
    """The SSE response (pings, disconnect detection, send timeout from sse-starlette)
    that gives its stream's slot back however the response ends."""

    def __init__(self, body: AsyncIterator[bytes], lease: Lease):
        super().__init__(
            body, ping=PING_SECONDS, sep="\n", send_timeout=SEND_TIMEOUT_SECONDS, headers={"Cache-Control": "no-cache"}
        )
        self.lease = lease

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.lease.release()


async def _follow(
    hub: EventHub, lease: Lease, campaign_id: str, viewer: Principal, cursor: int | None
) -> AsyncIterator[bytes]:
    """From `cursor` (None: the present) to the live events, then on until the client leaves
    or its credential dies (the hub closes its subscription: "revoked")."""
    sub = lease.subscription
    assert sub is not None
    try:
        yield RETRY
        if cursor is None:  # the present: an id-only message sets the client's Last-Event-ID, no event
            cursor = sub.start
            yield f"id: {cursor}\n\n".encode()
        while True:
            try:  # what was missed, (cursor, start], from the database: every later event is queued
                while cursor < sub.start and sub.closed != "revoked":
                    page = await hub.read(
                        events.events_page, campaign_id, cursor, viewer=viewer, upto=sub.start, limit=PAGE
                    )
                    for event in page:
                        yield frame(event, viewer)
                    cursor = page[-1].number if len(page) == PAGE else sub.start
            except Exception as exc:
                yield _failed(exc)
                return
            async for number, encoded in _live(sub):
                if number > cursor:  # a resume past the hub's position skips what it already has
                    cursor = number
                    yield encoded
            if sub.closed == "revoked":
                yield REVOKED_FRAME
                return
            if sub.closed != "lagging":
                yield _failed(None)
                return
            try:  # dropped for falling behind: catch up from the database by the cursor, then follow again
                sub = lease.subscription = await hub.subscribe(campaign_id, viewer)
            except Exception as exc:
                yield _failed(exc)
                return
    finally:
        lease.release()


async def _live(sub: Subscription) -> AsyncIterator[tuple[int, bytes]]:
    while True:
        item = await sub.queue.get()
        if sub.closed is not None or item is None:
            return
        yield item


async def _snapshot(
    hub: EventHub, lease: Lease, campaign_id: str, viewer: Principal, cursor: int | None
) -> AsyncIterator[bytes]:
    try:
        yield RETRY
        try:
            if cursor is None:
                yield f"id: {await hub.read(events.latest_number, campaign_id)}\n\n".encode()
                return
            while True:
                page = await hub.read(events.events_page, campaign_id, cursor, viewer=viewer, limit=PAGE)
                for event in page:
                    yield frame(event, viewer)
                if len(page) < PAGE:
                    return
                cursor = page[-1].number
        except Exception as exc:
            yield _failed(exc)
    finally:
        lease.release()


def _failed(exc: Exception | None) -> bytes:
    if exc is not None and not isinstance(exc, (Unavailable, DBAPIError)):
        log.exception("event stream failed", exc_info=exc)
    return error_frame("the database is unavailable; reconnect with Last-Event-ID to resume")
