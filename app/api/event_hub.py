"""One event poller per process, fanning new events out to the open streams.

Every open stream of this process is a `Subscription` (a bounded queue) of the
process's `EventHub`. One asyncio task reads the new events of every campaign
that has a subscriber in a single database round trip per tick (in a worker
thread, under a limiter of its own, with a connection only for that read), then
puts each event's encoded frame into its subscribers' queues — never a hidden
event into a player's. An idle stream holds no thread and no connection.

A subscriber too slow to keep up (its queue full) is dropped and told so: its
stream reads what it missed from the database by its own cursor, then subscribes
again. When the database fails for `OUTAGE_TICKS` ticks in a row, every
subscriber is told to end its stream (an SSE `error` event, then close).
A stream belongs to a live credential: each tick also reads which
of the subscribers' tokens still exist, in the same round trip; a subscriber whose
token was rotated or deleted (its player removed, its campaign deleted) is told
so and ends (`event: error`, `{"code": "token_revoked"}`), on every worker,
within one poll interval.
The poller stops when the last subscriber leaves and starts again with the next.

On PostgreSQL the poller is woken by the database (LISTEN/NOTIFY, app.core.notify):
a commit adding events to a campaign it follows, or changing credentials, wakes it at
once, on every worker and instance; it then polls at most every `NOTIFIED_GAP` seconds (a burst
of commits is read in a few ticks, not one each), and otherwise only every `fallback_seconds`
while notifications are heard (the outbox stays the truth: a lost notification is caught up
then), or every `POLL_SECONDS` while they are not (the LISTEN connection down or being made).
On either database a commit of this process that adds events wakes it at once too
(app.core.committed): on SQLite, which has no notifications, that is what brings a table its own
dice without the 0.5 s poll; the other processes' commits still wait for it."""

from __future__ import annotations

import asyncio
import ctypes
import gc
import json
import logging
from collections import Counter, defaultdict
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from app.core.db import Sessions
from app.core.notify import CREDENTIALS, EVENTS, Listener, hear_own_commits, listener_of, wake_or_timeout
from app.kit.errors import TooManyRequests, Unavailable
from app.services import events
from app.services.events import StoredEvent
from app.services.records import Principal

log = logging.getLogger("app.events")
T = TypeVar("T")

POLL_SECONDS = 0.5  # without notifications (SQLite, EVENT_NOTIFY off, the LISTEN connection down)
FALLBACK_SECONDS = 5.0  # with them (EVENT_FALLBACK_POLL_SECONDS)
NOTIFIED_GAP = 0.05  # the shortest time between two ticks woken by notifications
POLL_LIMIT = 500  # events read per tick (a longer backlog goes on at the next tick, at once)
QUEUE_SIZE = 256  # frames a subscriber may have waiting before it is dropped (it then catches up from the DB)
OUTAGE_TICKS = 3  # consecutive failed ticks before every stream is ended
READERS = 4  # concurrent catch-up reads (replays) per process
RETRY_AFTER = 5
TRIM_AFTER_SECONDS = 1.0


def _libc_malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


_malloc_trim = _libc_malloc_trim()


def frame(event: StoredEvent, viewer: Principal) -> bytes:
    """The event's SSE message as `viewer` reads it (the caller checked it is for `viewer`)."""
    return _encoded(event, event.payload_for(viewer) or {})


def _encoded(event: StoredEvent, data: dict) -> bytes:
    return f"id: {event.number}\nevent: {event.type}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def error_frame(detail: str, *, status: int = 503, code: str = "unavailable") -> bytes:
    data = json.dumps({"status": status, "code": code, "detail": detail}, separators=(",", ":"))
    return f"event: error\ndata: {data}\n\n".encode()


REVOKED_FRAME = error_frame(
    "this stream's token was rotated or deleted (or its player or campaign deleted); authenticate again",
    status=401,
    code="token_revoked",
)


class Subscription:
    """One stream's place in the hub: frames after `start`, in order, until `closed` says why not."""

    __slots__ = ("campaign_id", "viewer", "queue", "start", "closed")

    def __init__(self, campaign_id: str, viewer: Principal):
        self.campaign_id = campaign_id
        self.viewer = viewer  # whose stream: what it may see, and the credential it lives by
        self.queue: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue(QUEUE_SIZE)
        self.start = 0  # the campaign's last event number when it subscribed: every later one is queued
        self.closed: str | None = None  # "lagging" (catch up from the database), "error" or "revoked"

    def _close(self, reason: str) -> None:
        if self.closed is None:
            self.closed = reason
            with suppress(asyncio.QueueFull):
                self.queue.put_nowait(None)  # wakes a waiting reader (a full queue has no waiter)


class Lease:
    """A stream counted against the caps, from admission to its end (release is idempotent)."""

    __slots__ = ("hub", "token_hash", "subscription", "released")

    def __init__(self, hub: EventHub, token_hash: str):
        self.hub, self.token_hash = hub, token_hash
        self.subscription: Subscription | None = None
        self.released = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            if self.subscription is not None:
                self.hub.unsubscribe(self.subscription)
            self.hub._leave(self.token_hash)


class EventHub:
    def __init__(
        self,
        sessions: Sessions,
        *,
        per_token: int,
        per_process: int,
        notify: bool = True,
        fallback_seconds: float = FALLBACK_SECONDS,
    ):
        self.loop = asyncio.get_running_loop()
        self.sessions = sessions
        self.listener: Listener | None = listener_of(sessions) if notify else None
        self.fallback_seconds = fallback_seconds
        self.ticks = 0  # poll round trips made (tests, benches)
        self.per_token, self.per_process = per_token, per_process
        self.streams = 0
        self._by_token: Counter[str] = Counter()
        self._cursors: dict[str, int] = {}  # campaign → number of the last event dispatched (tracked campaigns)
        self._subs: dict[str, set[Subscription]] = defaultdict(set)
        self._pending: dict[str, list[tuple[Subscription, asyncio.Future]]] = {}  # campaigns to start tracking
        self._watermark: int | None = None  # SQLite: the table's `seq` read up to
        self._task: asyncio.Task | None = None
        self._wake = asyncio.Event()
        self._poll_limiter = anyio.CapacityLimiter(1)
        self._read_limiter = anyio.CapacityLimiter(READERS)
        self._trim: asyncio.TimerHandle | None = None
        self._reading = False  # a tick's database read is under way

    # --- admission --------------------------------------------------------------------
    def admit(self, token_hash: str) -> Lease:
        """Count a new stream: 429 past the per-token cap, 503 past the per-process cap."""
        if self._by_token[token_hash] >= self.per_token:
            raise TooManyRequests(
                f"at most {self.per_token} event streams per token", retry_after=RETRY_AFTER, code="too_many_streams"
            )
        if self.streams >= self.per_process:
            raise Unavailable(
                "this server holds as many event streams as it may; retry shortly",
                retry_after=RETRY_AFTER,
                code="server_busy",
            )
        self._by_token[token_hash] += 1
        self.streams += 1
        return Lease(self, token_hash)

    def _leave(self, token_hash: str) -> None:
        self.streams -= 1
        self._by_token[token_hash] -= 1
        if self._by_token[token_hash] <= 0:
            del self._by_token[token_hash]
        if self.streams == 0 and self._trim is None:
            self._trim = self.loop.call_later(TRIM_AFTER_SECONDS, self._give_memory_back)

    def _give_memory_back(self) -> None:
        """Once the last stream is gone: collect the cycles its cancelled tasks left and
        hand the freed heap back to the system (glibc keeps it otherwise), so a burst
        of streams does not stay in the process's memory."""
        self._trim = None
        if self.streams:
            return
        gc.collect()
        if _malloc_trim is not None:
            _malloc_trim(0)

    # --- subscriptions ----------------------------------------------------------------
    async def subscribe(self, campaign_id: str, viewer: Principal) -> Subscription:
        """A subscription receiving every event of the campaign after `start` (its last event
        now). A campaign no one follows yet is added at the next tick (awaited here);
        raises Unavailable when the database cannot say where the campaign is."""
        sub = Subscription(campaign_id, viewer)
        # while a tick reads, a new stream waits for the next one: this tick's events are dispatched
        # after a read of the credentials it did not ask for this one's
        if campaign_id in self._cursors and not self._reading:
            sub.start = self._cursors[campaign_id]
            self._subs[campaign_id].add(sub)
            return sub
        waiter = self.loop.create_future()
        self._pending.setdefault(campaign_id, []).append((sub, waiter))
        self._ensure_running()
        self._wake.set()
        try:
            await waiter
        except BaseException:
            self.unsubscribe(sub)
            raise
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        waiting = self._pending.get(sub.campaign_id)
        if waiting:
            waiting[:] = [(s, w) for s, w in waiting if s is not sub]
            if not waiting:
                del self._pending[sub.campaign_id]
        subs = self._subs.get(sub.campaign_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                self._untrack(sub.campaign_id)

    def _untrack(self, campaign_id: str) -> None:
        self._subs.pop(campaign_id, None)
        self._cursors.pop(campaign_id, None)
        if not self._cursors:
            self._watermark = None

    # --- database reads ---------------------------------------------------------------
    async def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(session, *args)` in a worker thread with its own session (catch-up reads, bounded)."""

        def work() -> T:
            with self.sessions(read_only=True) as session:
                return fn(session, *args, **kwargs)

        return await anyio.to_thread.run_sync(work, limiter=self._read_limiter)

    # --- the poller -------------------------------------------------------------------
    def _ensure_running(self) -> None:
        if self._task is None or self._task.done():
            self._task = self.loop.create_task(self._run(), name="event-hub")

    def _notified(self, channel: str, payload: str | None) -> None:
        """A notification (app.core.notify): tick now if it may concern this hub's streams."""
        if payload is None or channel == CREDENTIALS or payload in self._cursors or payload in self._pending:
            self._wake.set()

    def poll_seconds(self) -> float:
        """How long the poller waits for a wake-up before it polls anyway."""
        listener = self.listener
        heard = listener is not None and listener.hears(EVENTS) and listener.hears(CREDENTIALS)
        return self.fallback_seconds if heard else POLL_SECONDS

    async def _run(self) -> None:
        failures = 0
        listener = self.listener
        if listener is not None:
            listener.add(self._notified, (EVENTS, CREDENTIALS))
        stop_hearing = hear_own_commits(self.sessions, self._notified)  # this process's commits wake it at once
        try:
            while self._cursors or self._pending:
                more = False
                started = self.loop.time()
                try:
                    more = await self._tick()
                    failures = 0
                except Exception as exc:  # the database failed: retry, then end the streams
                    failures += 1
                    log.warning("event poll failed (%d in a row): %s", failures, exc)
                    self._fail_pending()
                    if failures >= OUTAGE_TICKS:
                        self._close_all("error")
                if more:
                    continue
                await wake_or_timeout(self._wake, self.poll_seconds())
                gap = started + NOTIFIED_GAP - self.loop.time()
                if gap > 0:  # woken again at once: let a burst of commits gather
                    await asyncio.sleep(gap)
                self._wake.clear()
        finally:
            if listener is not None:
                listener.remove(self._notified)
            stop_hearing()

    async def _tick(self) -> bool:
        """One round trip: start tracking the pending campaigns, read every tracked campaign's
        new events, queue them. True when the read was cut at POLL_LIMIT (more to read)."""
        # the streams waiting to join, as this tick begins: their credentials are read below; one that
        # comes during the read waits for the next tick (what this tick reads is not checked against it)
        pending = {campaign_id: {sub for sub, _ in waiting} for campaign_id, waiting in self._pending.items()}
        cursors = dict(self._cursors)
        # where a campaign no one follows yet stands (a tracked one's waiters join at its cursor: its
        # events past it are read below and dispatched to them too)
        untracked = [campaign_id for campaign_id in pending if campaign_id not in cursors]
        watermark = self._watermark
        tokens = self._tokens()

        def work() -> tuple[dict[str, int], list[StoredEvent], int | None, set[str]]:
            with self.sessions(read_only=True) as session:
                latest = events.latest_numbers(session, untracked)
                rows, mark = events.poll(session, {**cursors, **latest}, watermark if cursors else None, POLL_LIMIT)
                # the credentials after the events (each statement sees its own snapshot on PostgreSQL):
                # a death committed with an event read here is seen here, and its streams end first
                live = events.live_tokens(session, tokens)
                return latest, rows, mark, live

        self.ticks += 1
        self._reading = True
        try:
            latest, rows, mark, live = await anyio.to_thread.run_sync(work, limiter=self._poll_limiter)
        finally:
            self._reading = False
        self._watermark = mark
        self._close_revoked(tokens - live)
        for campaign_id, known in pending.items():
            still = self._pending.get(campaign_id, [])
            waiting = [(sub, waiter) for sub, waiter in still if sub in known]
            later = [(sub, waiter) for sub, waiter in still if sub not in known]
            if later:
                self._wake.set()  # they join at the next tick, at once
            if not waiting:
                continue  # every waiter left meanwhile
            if campaign_id not in self._cursors:
                if campaign_id not in latest:  # tracked when this tick began and left since
                    self._wake.set()  # its waiters join at the next tick, at once
                    continue
                self._cursors[campaign_id] = latest[campaign_id]
            if later:
                self._pending[campaign_id] = later
            else:
                del self._pending[campaign_id]
            for sub, waiter in waiting:
                if sub.closed is not None:
                    continue  # its credential died while it waited
                sub.start = self._cursors[campaign_id]
                self._subs[campaign_id].add(sub)
                if not waiter.done():
                    waiter.set_result(None)
        for event in rows:
            self._dispatch(event)
        if not self._cursors:
            self._watermark = None
        return len(rows) >= POLL_LIMIT

    def _tokens(self) -> set[str]:
        """The credentials the subscribers (and those waiting to be) live by."""
        subs = [sub for group in self._subs.values() for sub in group]
        subs += [sub for waiting in self._pending.values() for sub, _ in waiting]
        return {sub.viewer.token_hash for sub in subs}

    def _close_revoked(self, dead: set[str]) -> None:
        """End every stream of a credential that no longer exists (before any newer event reaches it)."""
        if not dead:
            return
        for campaign_id in list(self._subs):
            for sub in list(self._subs.get(campaign_id, ())):
                if sub.viewer.token_hash in dead:
                    self.unsubscribe(sub)
                    sub._close("revoked")
        for waiting in list(self._pending.values()):
            for sub, waiter in waiting:
                if sub.viewer.token_hash in dead and not waiter.done():
                    sub._close("revoked")
                    waiter.set_result(None)

    def _dispatch(self, event: StoredEvent) -> None:
        last = self._cursors.get(event.campaign_id)
        if last is None or event.number <= last:
            return  # no one follows it any more, or already sent
        self._cursors[event.campaign_id] = event.number
        encoded: dict[int, bytes] = {}  # each payload encoded once, however many streams receive it
        for sub in list(self._subs.get(event.campaign_id, ())):
            payload = event.payload_for(sub.viewer)
            if payload is None:
                continue
            if id(payload) not in encoded:
                encoded[id(payload)] = _encoded(event, payload)
            try:
                sub.queue.put_nowait((event.number, encoded[id(payload)]))
            except asyncio.QueueFull:  # too far behind: it catches up from the database
                log.info(
                    "event stream of %s fell %d events behind: it catches up from the database",
                    event.campaign_id,
                    QUEUE_SIZE,
                )
                self.unsubscribe(sub)
                sub._close("lagging")

    def _fail_pending(self) -> None:
        pending, self._pending = self._pending, {}
        for waiting in pending.values():
            for _sub, waiter in waiting:
                if not waiter.done():
                    waiter.set_exception(
                        Unavailable("the database is unavailable; retry shortly", retry_after=RETRY_AFTER)
                    )

    def _close_all(self, reason: str) -> None:
        for campaign_id in list(self._subs):
            for sub in list(self._subs.get(campaign_id, ())):
                sub._close(reason)
            self._untrack(campaign_id)
