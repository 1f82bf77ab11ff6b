"""Admission control: a process serves a bounded number of requests at once and
sheds the rest with a fast 503 + Retry-After instead of queuing them without
bound (a queue of thousands of requests is a server that answers nobody).

A request over the limit waits a little for a slot (bursts are smoothed), and at
most `max_waiting` requests wait; past that, or past the wait, it is refused at
once. `/healthz` and the event streams (long-lived, bounded by their own caps)
are not counted."""

from __future__ import annotations

import asyncio
import json

from starlette.types import ASGIApp, Receive, Scope, Send


def exempt(path: str) -> bool:
    return path == "/healthz" or path.endswith("/events")


class Admission:
    def __init__(self, app: ASGIApp, max_in_flight: int, max_waiting: int, wait_seconds: float):
        self.app = app
        self.max_in_flight = max_in_flight
        self.max_waiting = max_waiting
        self.wait_seconds = wait_seconds
        self.waiting = 0
        self._slots: asyncio.Semaphore | None = None  # made on the serving loop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.max_in_flight <= 0 or exempt(scope["path"]):
            return await self.app(scope, receive, send)
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_in_flight)
        if not await self._admit():
            return await self._refuse(send)
        try:
            await self.app(scope, receive, send)
        finally:
            self._slots.release()

    async def _admit(self) -> bool:
        assert self._slots is not None
        if not self._slots.locked():
            await self._slots.acquire()  # a free slot: returns at once
            return True
        if self.waiting >= self.max_waiting:
            return False
        self.waiting += 1
        try:
            await asyncio.wait_for(self._slots.acquire(), self.wait_seconds)
            return True
        except TimeoutError:
            return False
        finally:
            self.waiting -= 1

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {
                "type": "https://jdr-rules-api.dev/problems/server-busy",
                "title": "Service unavailable",
                "status": 503,
                "code": "server_busy",
                "detail": f"the server is busy ({self.max_in_flight} requests in progress); retry shortly",
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [
                    (b"content-type", b"application/problem+json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", b"1"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
