"""Server-Sent Events: every change in a campaign, live.

Backed by the `event` table (written in the same transaction as each change),
so every worker process serves the same stream; `Last-Event-ID` resumes it."""
from __future__ import annotations

import asyncio
import json
from typing import Annotated, AsyncIterator

from fastapi import APIRouter, Header, Query
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from app.api.deps import PrincipalDep, SessionFactory
from app.services.auth import Principal, check_member
from app.services.events import events_after

router = APIRouter(tags=["events"])
POLL_SECONDS = 0.5
HEARTBEAT_SECONDS = 15.0


def _frame(event: dict) -> str:
    return f"id: {event['seq']}\nevent: {event['type']}\ndata: {json.dumps(event['data'], separators=(',', ':'))}\n\n"


@router.get(
    "/v1/campaigns/{campaign_id}/events",
    summary="Server-Sent Events: every change in the campaign, live",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}}},
)
async def stream_events(
    campaign_id: str,
    principal: PrincipalDep,
    sessions: SessionFactory,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID", max_length=20)] = None,
    after: Annotated[int | None, Query(ge=0, le=2**62, description="Resume after this event id.")] = None,
    follow: Annotated[bool, Query(description="false: send what is there and close.")] = True,
) -> StreamingResponse:
    check_member(principal, campaign_id)
    start = after if after is not None else _parse_last_id(last_event_id)
    return StreamingResponse(_events(sessions, principal, campaign_id, start, follow), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _parse_last_id(value: str | None) -> int:
    return int(value) if value and value.isdigit() else 0


def _poll(sessions, principal: Principal, campaign_id: str, after: int) -> list[dict]:
    with sessions() as session:
        return events_after(session, principal, campaign_id, after)


async def _events(sessions, principal: Principal, campaign_id: str, after: int, follow: bool) -> AsyncIterator[str]:
    yield "retry: 2000\n\n"
    idle = 0.0
    while True:
        batch = await run_in_threadpool(_poll, sessions, principal, campaign_id, after)
        for event in batch:
            after = event["seq"]
            yield _frame(event)
        if len(batch) == 200:
            continue
        if not follow:
            return
        idle = 0.0 if batch else idle + POLL_SECONDS
        if idle >= HEARTBEAT_SECONDS:
            idle = 0.0
            yield ": keep-alive\n\n"
        await asyncio.sleep(POLL_SECONDS)
