"""The webhook delivery loop: one per process, started by the app's lifespan.

Every `webhook_poll_seconds` it looks for webhooks with events to deliver that no loop holds,
takes the lease of as many as it has free slots (`webhook_concurrency`), and serves each in a
task of its own: the webhook's events one at a time, in event order, each POSTed with the
Standard Webhooks headers and signature, within `webhook_timeout_seconds`. A failure (a timeout,
no answer, a non-2xx, an address refused) is retried after an exponential backoff with jitter,
up to `webhook_max_attempts`; then the attempt is logged `failed` and the next event comes.

The slots are shared fairly (`Turns`): campaigns take them in turn (the database keeps whose
turn it is: `due_webhooks` reads first the campaigns served longest ago, so they rotate however
many have webhooks due), none more than its share while another waits, and a delivery whose
campaign holds its share gives its slot up after its event when another campaign waits below its
own; a failed attempt always gives it up (its retry waits for its backoff). So one campaign's
receivers that hang hold at most its share of the slots, one attempt each, and another
campaign's event waits at most about one timeout (and for a turn of the campaigns served before
it, when more campaigns wait than there are slots).
A webhook failing every attempt for `webhook_disable_after_hours` is disabled (Svix's and
Stripe's rule: app.services.webhooks.record_attempt).

The loop holds no database connection while it waits for a receiver (each database step is its
own short transaction, in a thread of its own limiter), so a slow or dead receiver costs one
slot of this loop and nothing of the API. The URL's host is resolved at each attempt and every
address checked (SSRF: a name that resolved to a public address when the webhook was made may
not point at a private one now); the connection goes to the checked address (no second look-up).

On PostgreSQL with EVENT_NOTIFY, the loop is woken by the database
(LISTEN/NOTIFY, app.core.notify): a commit adding events to a campaign that has a webhook, or a
new webhook, wakes the loop of every worker and instance at once (it listens to new events only
while some campaign has a webhook: otherwise every commit's notification would cost each worker
something for nothing); while notifications are heard it polls only every
`event_fallback_poll_seconds` (or sooner, when a retry of its own is due)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import os
import random
import socket
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from contextlib import suppress
from datetime import timedelta
from functools import partial
from typing import Any, TypeVar
from uuid import uuid4

import anyio
import anyio.to_thread
import httpx

from app.core.config import Settings
from app.core.db import Sessions
from app.core.notify import EVENTS, WEBHOOKS, Listener, hear_own_commits, listener_of, wake_or_timeout
from app.models.tables import utcnow
from app.services import webhooks
from app.services.webhooks import Attempt, Due, Outgoing

log = logging.getLogger("app.webhooks")
T = TypeVar("T")
MAX_BACKOFF_SECONDS = 3600.0
USER_AGENT = "jdr-rules-api-webhooks/1"


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """Standard Webhooks: `v1,` + base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}")), the key
    being the secret's base64 after its `whsec_` prefix."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def backoff(attempt: int, base: float, rand: Callable[[float, float], float] = random.uniform) -> float:
    """Seconds before the retry after failed attempt `attempt` (1, 2…): base·2^(attempt−1), capped,
    with jitter (a random point in its upper half), so failing webhooks do not retry in step."""
    delay = min(base * 2 ** (attempt - 1), MAX_BACKOFF_SECONDS)
    return rand(delay / 2, delay)


class Refused(Exception):
    """The attempt was not made: an address the SSRF guard refuses, or a host that does not resolve."""


async def resolve_checked(host: str, port: int, *, allow_private: bool, timeout: float) -> str:
    """The address to connect to: the host's first, every address checked."""
    literal = webhooks.literal_address(host)
    if literal is not None:
        addresses = [literal]
    else:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, TimeoutError, UnicodeError) as exc:
            raise Refused(f"the host {host} does not resolve: {str(exc) or 'timed out'}") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        if not addresses:
            raise Refused(f"the host {host} does not resolve")
    if not allow_private:
        reason = webhooks.refusal(host, addresses)
        if reason is not None:
            raise Refused(reason)
    return addresses[0]


async def post(client: httpx.AsyncClient, out: Outgoing, settings: Settings) -> Attempt:
    """One attempt: resolve and check, sign, POST (no redirect followed), the answer's status."""
    started = time.monotonic()

    def took() -> int:
        return round((time.monotonic() - started) * 1000)

    scheme, host, port = webhooks.split_url(out.url)
    address = host
    try:
        async with asyncio.timeout(settings.webhook_timeout_seconds):
            address = await resolve_checked(
                host, port, allow_private=settings.webhook_allow_private, timeout=settings.webhook_timeout_seconds
            )
            url = httpx.URL(out.url)
            timestamp = int(time.time())
            headers = {
                "content-type": "application/json",
                "user-agent": USER_AGENT,
                "host": url.netloc.decode("ascii"),
                "webhook-id": out.message_id,
                "webhook-timestamp": str(timestamp),
                "webhook-signature": signature(out.secret, out.message_id, timestamp, out.body),
            }
            extensions = {"sni_hostname": host} if scheme == "https" else {}
            request = client.build_request(
                "POST", url.copy_with(host=address), headers=headers, content=out.body, extensions=extensions
            )
            response = await client.send(request, stream=True)  # the status only: the body is never read
            await response.aclose()
            failed = None if response.is_success else f"HTTP {response.status_code}"
            return Attempt(response.status_code, failed, took())
    except Refused as exc:
        return Attempt(None, str(exc)[:500], took())
    except TimeoutError:
        return Attempt(None, f"no answer within {settings.webhook_timeout_seconds} s", took())
    except httpx.HTTPError as exc:  # the error as of the URL's host: never the address a name resolved to
        return Attempt(None, f"{type(exc).__name__}: {str(exc).replace(address, host)}"[:500], took())


class Turns:
    """Whose turn it is to take a free delivery slot: round robin across campaigns, the campaign
    holding the fewest slots first (then the first in `due`'s turn order: served longest ago),
    none beyond its fair share (the slots divided by the campaigns that hold or want one) while
    another waits. Within a campaign, its webhooks in the order `due_webhooks` ranked them. So a
    campaign whose receivers hang holds at most its share, each for one attempt, and another
    campaign's next event waits for at most one attempt's timeout."""

    def __init__(self, due: Iterable[Due], held: Counter[str], slots: int):
        self.queues: dict[str, deque[str]] = {}  # in turn order: `due`'s
        for webhook in due:
            self.queues.setdefault(webhook.campaign_id, deque()).append(webhook.id)
        self.held = held
        campaigns = len(set(self.queues) | {c for c, n in held.items() if n})
        self.share = -(-slots // campaigns) if campaigns else slots  # ceil: every slot may be used

    def next(self) -> tuple[str, str] | None:
        """(campaign, webhook) to serve next, or None: every waiting campaign holds its share."""
        waiting = [c for c in self.queues if self.held[c] < self.share]
        if not waiting:
            return None
        campaign = min(waiting, key=lambda c: self.held[c])  # of equals, the first in turn order
        queue = self.queues[campaign]
        webhook_id = queue.popleft()
        if not queue:
            del self.queues[campaign]
        return campaign, webhook_id

    @property
    def starved(self) -> bool:
        """Some campaign waits below its share (the slots are all taken)."""
        return any(self.held[c] < self.share for c in self.queues)


class Dispatcher:
    """The process's delivery loop. `state` is the app's state: its settings and session factory
    are read at each tick (a test may swap them)."""

    def __init__(self, state: Any):
        self.state = state
        self.owner = f"{socket.gethostname()[:30]}:{os.getpid()}:{uuid4().hex[:8]}"
        self.active: dict[str, asyncio.Task[None]] = {}
        self.campaign_of: dict[str, str] = {}  # the campaign of each webhook in `active`
        self.share = 0  # a campaign's fair share of the slots, and whether a campaign waits below it,
        self.starved = False  # as of the last tick: a delivery of a campaign at its share then gives its slot up
        self.limiter = anyio.CapacityLimiter(2)  # the loop's database work: never the API's threads
        self.client: httpx.AsyncClient | None = None
        self.hooked: set[str] = set()  # campaigns with a webhook, as of the last tick (and notifications since)
        self.retry_at = float("inf")  # the loop's time of the earliest retry this loop scheduled
        self.ticks = 0  # ticks made (tests, benches)
        self._wake = asyncio.Event()

    @property
    def settings(self) -> Settings:
        return self.state.settings

    def lease_seconds(self) -> float:
        """Longer than any one attempt, so a live owner always records before its lease ends."""
        return self.settings.webhook_timeout_seconds * 2 + 5

    async def db(self, fn: Callable[..., T], *args: Any, read_only: bool = False) -> T:
        sessions: Sessions = self.state.sessions

        def work() -> T:
            with sessions(read_only=read_only) as session:
                return fn(session, *args)

        return await anyio.to_thread.run_sync(work, limiter=self.limiter)

    def _notified(self, channel: str, payload: str | None) -> None:
        if channel == WEBHOOKS and payload is not None:
            self.hooked.add(payload)
        if payload is None or (channel in (EVENTS, WEBHOOKS) and payload in self.hooked):
            self._wake.set()

    def pause(self, listener: Listener | None) -> float:
        """Seconds until the next tick, unless a notification comes first."""
        settings = self.settings
        if listener is None or not listener.hears(WEBHOOKS) or (self.hooked and not listener.hears(EVENTS)):
            return settings.webhook_poll_seconds
        loop = asyncio.get_running_loop()
        until_retry = max(self.retry_at - loop.time(), settings.webhook_poll_seconds)
        return min(settings.event_fallback_poll_seconds, until_retry)

    async def run(self) -> None:
        listener = listener_of(self.state.sessions) if self.settings.event_notify else None
        if listener is not None:
            listener.add(self._notified, (WEBHOOKS,))
        stop_hearing = hear_own_commits(self.state.sessions, self._notified)  # this process's commits wake it at once
        try:
            while True:
                try:
                    await self.tick()
                except Exception:  # the database down, a bug: logged, tried again at the next tick
                    log.exception("webhook delivery tick failed")
                if listener is not None:  # new events matter only while some campaign has a webhook
                    listener.want(self._notified, (WEBHOOKS, EVENTS) if self.hooked else (WEBHOOKS,))
                await wake_or_timeout(self._wake, self.pause(listener))
                self._wake.clear()
        finally:
            if listener is not None:
                listener.remove(self._notified)
            stop_hearing()
            await self.stop()
            if self.client is not None:
                await self.client.aclose()

    def http(self) -> httpx.AsyncClient:
        """The loop's HTTP client, made at its first delivery: its TLS context costs ~20 ms of CPU, which
        a process (or an app started and stopped, as each in-process test does) with no webhook to
        deliver never pays."""
        if self.client is None:
            self.client = httpx.AsyncClient(follow_redirects=False, trust_env=False)
        return self.client

    async def tick(self) -> None:
        self.ticks += 1
        loop = asyncio.get_running_loop()
        if self.retry_at <= loop.time():
            self.retry_at = float("inf")
        slots = self.settings.webhook_concurrency
        due, self.hooked = await self.db(self._due, slots, read_only=True)
        turns = Turns((d for d in due if d.id not in self.active), Counter(self.campaign_of.values()), slots)
        while len(self.active) < slots and (turn := turns.next()) is not None:
            campaign, webhook_id = turn
            if await self.db(webhooks.claim, webhook_id, self.owner, utcnow(), self.lease_seconds()):
                task = asyncio.create_task(self.serve(webhook_id), name=f"webhook {webhook_id}")
                self.active[webhook_id] = task
                self.campaign_of[webhook_id] = campaign
                turns.held[campaign] += 1
                task.add_done_callback(partial(self._done, webhook_id))
        self.share, self.starved = turns.share, turns.starved

    @staticmethod
    def _due(session: Any, slots: int) -> tuple[list[Due], set[str]]:
        # a campaign never takes more than every slot: its first `slots` webhooks are enough; the
        # campaigns beyond the limit come in their turn (those read now are served, then go behind)
        due = webhooks.due_webhooks(session, utcnow(), limit=max(4 * slots, 32), per_campaign=slots)
        return due, webhooks.hooked_campaigns(session)

    def _done(self, webhook_id: str, _task: asyncio.Task[None]) -> None:
        self.active.pop(webhook_id, None)
        self.campaign_of.pop(webhook_id, None)

    def give_way(self, webhook_id: str) -> bool:
        """Whether this delivery should give its slot up now: a campaign waits below its share while
        this one's campaign holds its own."""
        campaign = self.campaign_of.get(webhook_id)
        held = sum(c == campaign for c in self.campaign_of.values())
        return self.starved and held >= self.share

    async def serve(self, webhook_id: str) -> None:
        """The webhook's events, in order, while this loop holds its lease."""
        client = self.http()
        caught_up = giving_way = False
        try:
            while True:
                out = await self.db(webhooks.next_event, webhook_id, self.owner)
                if out is None:
                    caught_up = True  # nothing left (or the lease lost: then releasing changes nothing)
                    break
                if giving_way:  # it gives way with its next event to deliver: its campaign's turn stays taken
                    break
                settings = self.settings  # as of this event: the settings may be swapped between two
                attempt = await post(client, out, settings)
                backoff_s = backoff(out.attempt, settings.webhook_backoff_seconds)
                go_on = await self.db(
                    partial(
                        webhooks.record_attempt,
                        max_attempts=settings.webhook_max_attempts,
                        retry_in=backoff_s,
                        lease_seconds=self.lease_seconds(),
                        disable_after=timedelta(hours=settings.webhook_disable_after_hours),
                    ),
                    out,
                    attempt,
                    self.owner,
                )
                giving_way = go_on and self.give_way(webhook_id)
                if not attempt.delivered:
                    if not go_on or giving_way:  # a retry later (or the next event, after the last attempt): look then
                        retry = asyncio.get_running_loop().time() + backoff_s
                        self.retry_at = min(self.retry_at, retry)
                    log.info("webhook %s: event %s attempt %s: %s", webhook_id, out.number, out.attempt, attempt.error)
                if not go_on:
                    break
        except Exception:
            log.exception("webhook %s: delivery failed", webhook_id)
        finally:
            with suppress(Exception):
                await asyncio.shield(self.db(partial(webhooks.release, caught_up=caught_up), webhook_id, self.owner))
            # an event committed after its last read found it held: no other loop took it, look again
            self._wake.set()

    async def stop(self) -> None:
        """Cancel the deliveries under way and give their leases back (another process takes them
        at once instead of after their expiry)."""
        tasks = list(self.active.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with suppress(BaseException):
                await task


async def run_dispatcher(state: Any) -> None:
    await Dispatcher(state).run()
