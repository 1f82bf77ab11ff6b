"""Webhooks (API.md): a campaign's receivers, the SSRF guard on their
URLs, and the database steps of their delivery (app.services.webhook_delivery runs them).

Delivery state lives on the webhook's row: `last_number` (the last event done with), the
retries of the next event (`attempts`, `next_attempt_at`) and a lease (`lease_owner`,
`lease_expires`). A delivery loop serves a webhook only while it holds the lease, taken by a
conditional UPDATE (the row is free, or its lease expired) and renewed with each result it
records, so one loop at a time, across workers and instances, sends its events — one at a
time, in event order. A result is recorded after the receiver answered: a loop killed in
between leaves the event undone, and the next owner sends it again (at least once; the
`webhook-id` is the same on every attempt, for the receiver to deduplicate)."""

from __future__ import annotations

import base64
import ipaddress
import secrets
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from pydantic_core import to_json
from sqlalchemy import and_, delete, func, insert, or_, select, text, update
from sqlmodel import Session, col
from sqlmodel import select as select_rows

from app.kit.errors import Conflict, NotFound
from app.models.tables import Event, EventCounter, Webhook, WebhookDelivery, as_utc, core_table, new_id, utcnow
from app.models.validation import InvalidBody
from app.models.webhooks import DeliveryPublic, WebhookCreate, WebhookCreated, WebhookPublic, WebhookUpdate
from app.rulesets.events import EVENT_NAMES
from app.services import events as event_log
from app.services.pages import created_order_page
from app.services.records import Principal

MAX_WEBHOOKS = 10  # per campaign (409 beyond): each costs a delivery per event
EVENT_TYPES = sorted(EVENT_NAMES)

_hook = core_table(Webhook)
_delivery = core_table(WebhookDelivery)
_event = core_table(Event)
_counter = core_table(EventCounter)
_peer = _hook.alias("peer")  # a webhook's campaign's other webhooks


class UnsafeWebhookUrl(InvalidBody):
    """A webhook URL that is not http(s), or whose host is (or resolves to) an address the server
    refuses to call: private, loopback, link-local… (SSRF)."""

    title = "Unsafe webhook URL"
    slug = "unsafe-webhook-url"
    code = "unsafe_webhook_url"


# --- the SSRF guard ---------------------------------------------------------------------------

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052's well-known prefix (ipaddress has no property for it)
_KINDS = ("loopback", "link_local", "unspecified", "multicast", "private", "reserved")


def _ranges(*named: tuple[str, str]) -> tuple[tuple[str, ipaddress.IPv4Network | ipaddress.IPv6Network], ...]:
    return tuple((f"{name} ({net})", ipaddress.ip_network(net)) for name, net in named)


# IANA's special-purpose ranges that are not globally reachable, named by their rule: those
# Python 3.11's `is_global` calls global (fec0::/10, 192.0.0.8, 3fff::/20…) or files as merely
# "private" or "reserved" (a refusal names what the range is)
_SPECIAL_V4 = _ranges(
    ("shared", "100.64.0.0/10"),  # RFC 6598, carrier-grade NAT
    ("IETF protocol", "192.0.0.0/24"),  # RFC 6890, its anycast services included: no receiver of ours
    ("documentation", "192.0.2.0/24"),
    ("benchmarking", "198.18.0.0/15"),
    ("documentation", "198.51.100.0/24"),
    ("documentation", "203.0.113.0/24"),
)
_SPECIAL_V6 = _ranges(
    ("local-use NAT64", "64:ff9b:1::/48"),  # RFC 8215: a network's own translator, its own IPv4 addresses
    ("discard-only", "100::/64"),
    ("benchmarking", "2001:2::/48"),
    ("documentation", "2001:db8::/32"),
    ("documentation", "3fff::/20"),  # RFC 9637
    ("site-local", "fec0::/10"),  # RFC 3879, deprecated: still routed inside some sites
)


def _kind(ip: Address) -> str | None:
    """The class of a non-global address, as a refusal names it (None: a global one)."""
    for name, network in _SPECIAL_V4 if ip.version == 4 else _SPECIAL_V6:
        if ip in network:
            return name
    for kind in _KINDS:
        if getattr(ip, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if ip.is_global else "non-global"


def _embedded(ip: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv4 address an IPv6 address carries to its destination, and the rule that says so."""
    if ip.ipv4_mapped is not None:
        return "IPv4-mapped (::ffff:0:0/96)", ip.ipv4_mapped
    if ip in NAT64:
        return "NAT64 (64:ff9b::/96)", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return "6to4 (2002::/16)", ip.sixtofour
    return None


def address_rule(ip: Address) -> str | None:
    """Which rule refuses to call this address (None: a global one, which may be called). An IPv6
    address that carries an IPv4 one (mapped, NAT64, 6to4) is judged by the IPv4 address it
    reaches; Teredo (whose client address is obfuscated and reached through a relay) is refused."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded(ip)
        if embedded is not None:
            rule, inner = embedded
            kind = _kind(inner)
            return None if kind is None else _a(f"{rule} address of {_a(kind)} IPv4 address")
        if ip.teredo is not None:
            return "a Teredo (2001::/32) address"
    kind = _kind(ip)
    return None if kind is None else _a(f"{kind} address")


def _a(noun: str) -> str:
    return f"{'an' if noun[0] in 'aeiouIU' else 'a'} {noun}"


def split_url(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL; 422 for anything else."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeWebhookUrl(f"the webhook URL is not a valid URL: {exc}", field="url") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UnsafeWebhookUrl(f"the webhook URL must be http or https, not {scheme or 'schemeless'}", field="url")
    if not parts.hostname:
        raise UnsafeWebhookUrl("the webhook URL has no host", field="url")
    return scheme, parts.hostname, port or (443 if scheme == "https" else 80)


def refusal(host: str, addresses: list[str]) -> str | None:
    """Why these addresses of `host` may not be called (the first refused one), or None. It names
    the rule, never the address a name resolved to (a GM would map the server's internal DNS)."""
    literal = literal_address(host) is not None
    for address in addresses:
        rule = address_rule(ipaddress.ip_address(address.split("%", 1)[0]))
        if rule is not None:
            return (
                f"the webhook URL's host {host} {'is' if literal else 'resolves to'} {rule}: refused (SSRF "
                "guard; a server for tests or a private network may set WEBHOOK_ALLOW_PRIVATE)"
            )
    return None


def literal_address(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def check_url(url: str, *, allow_private: bool) -> None:
    """At creation: http(s) only, and no private, loopback or link-local host (a literal address,
    or a name's every address as it resolves now; a name that does not resolve yet is let
    through: each delivery checks again after resolving it)."""
    _scheme, host, port = split_url(url)
    if allow_private:
        return
    literal = literal_address(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            addresses = sorted({str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)})
        except (OSError, UnicodeError):
            addresses = []
    reason = refusal(host, addresses)
    if reason is not None:
        raise UnsafeWebhookUrl(reason, field="url")


# --- the routes' use cases ----------------------------------------------------------------------


def new_secret() -> str:
    """A Standard Webhooks secret: `whsec_` + base64 of 32 random bytes (the HMAC key)."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def _public(row: Any) -> dict[str, Any]:
    return WebhookPublic.model_validate(row, from_attributes=True).model_dump()


def create_webhook(
    session: Session, principal: Principal, campaign_id: str, data: WebhookCreate, *, allow_private: bool
) -> dict[str, Any]:
    """GM: a receiver of the campaign's events from now on; its secret is returned this once."""
    unknown = [(i, name) for i, name in enumerate(data.events or []) if name not in EVENT_TYPES]
    if unknown:
        i, name = unknown[0]
        raise InvalidBody(
            f"unknown event type {name!r}; known: {', '.join(EVENT_TYPES)}", field=f"events.{i}", code="unknown_name"
        )
    check_url(data.url, allow_private=allow_private)
    count = session.connection().execute(
        select(func.count()).select_from(_hook).where(_hook.c.campaign_id == campaign_id)
    )
    if count.scalar_one() >= MAX_WEBHOOKS:
        raise Conflict(
            f"a campaign has at most {MAX_WEBHOOKS} webhooks",
            extra={"max_webhooks": MAX_WEBHOOKS},
            code="too_many_webhooks",
        )
    webhook = Webhook(
        campaign_id=campaign_id,
        url=data.url,
        events=sorted(set(data.events)) if data.events else None,
        secret=new_secret(),
        last_number=event_log.latest_number(session, campaign_id),
    )
    session.add(webhook)
    session.flush()
    created = WebhookCreated.model_validate({**_public(webhook), "secret": webhook.secret}).model_dump()
    session.commit()
    return created


def list_webhooks(
    session: Session, principal: Principal, campaign_id: str, *, limit: int = 50, cursor: str | None = None
) -> dict[str, Any]:
    query = select_rows(Webhook).where(col(Webhook.campaign_id) == campaign_id)
    return created_order_page(session, query, Webhook, limit=limit, cursor=cursor, shape=_public)


def _load(session: Session, principal: Principal, campaign_id: str, webhook_id: str) -> Webhook:
    webhook = session.get(Webhook, webhook_id)
    if webhook is None or webhook.campaign_id != campaign_id:
        raise NotFound("no webhook with this id")
    return webhook


def delete_webhook(session: Session, principal: Principal, campaign_id: str, webhook_id: str) -> None:
    """GM: no more deliveries; its deliveries log goes with it."""
    webhook = _load(session, principal, campaign_id, webhook_id)
    session.connection().execute(delete(_delivery).where(_delivery.c.webhook_id == webhook.id))
    session.connection().execute(delete(_hook).where(_hook.c.id == webhook.id))
    session.commit()


def update_webhook(
    session: Session, principal: Principal, campaign_id: str, webhook_id: str, data: WebhookUpdate
) -> dict[str, Any]:
    """GM: enable a disabled webhook again (its deliveries resume at the event they stopped at, its
    failures forgotten), or disable it (`webhook.disabled` tells the GM's other clients)."""
    webhook = _load(session, principal, campaign_id, webhook_id)
    if data.enabled is True:
        session.connection().execute(
            update(_hook)
            .where(_hook.c.id == webhook.id, _hook.c.disabled_at.is_not(None))
            .values(disabled_at=None, disabled_reason=None, failing_since=None, attempts=0, next_attempt_at=None)
        )
    elif data.enabled is False:
        _disable(session, webhook.id, campaign_id, "gm", utcnow())
    session.commit()
    session.refresh(webhook)
    return _public(webhook)


def _disable(session: Session, webhook_id: str, campaign_id: str, reason: str, now: datetime) -> bool:
    """Disable the webhook unless it is already, and tell the GM (`webhook.disabled`, in the caller's
    transaction). True when this call disabled it."""
    done = session.connection().execute(
        update(_hook)
        .where(_hook.c.id == webhook_id, _hook.c.disabled_at.is_(None))
        .values(disabled_at=now, disabled_reason=reason, served_at=None)
    )
    if done.rowcount != 1:
        return False
    row = session.connection().execute(select(_hook).where(_hook.c.id == webhook_id)).one()
    data = WebhookPublic.model_validate(row, from_attributes=True).model_dump(mode="json")
    event_log.record(session, campaign_id, "webhook.disabled", data, hidden=True)  # the GM's alone
    return True


def _delivery_public(row: WebhookDelivery) -> dict[str, Any]:
    return DeliveryPublic.model_validate({**row.model_dump(), "event_id": str(row.event_number)}).model_dump()


def list_deliveries(
    session: Session,
    principal: Principal,
    campaign_id: str,
    webhook_id: str,
    *,
    limit: int = 50,
    cursor: str | None = None,
) -> dict[str, Any]:
    webhook = _load(session, principal, campaign_id, webhook_id)
    query = select_rows(WebhookDelivery).where(col(WebhookDelivery.webhook_id) == webhook.id)
    return created_order_page(session, query, WebhookDelivery, limit=limit, cursor=cursor, shape=_delivery_public)


# --- the delivery loop's database steps (each its own short transaction) ------------------------


@dataclass(frozen=True)
class Outgoing:
    """One event to POST to one webhook: the body, as the GM reads the event, and where."""

    webhook_id: str
    campaign_id: str
    url: str
    secret: str
    number: int
    type: str
    message_id: str
    attempt: int  # 1, 2… (this event's)
    body: bytes
    failing_since: datetime | None = None  # the webhook's, as this attempt was taken


def _free(now: datetime) -> Any:
    return or_(_hook.c.lease_expires.is_(None), _hook.c.lease_expires < now)


class Due(NamedTuple):
    """A webhook with an event to deliver now, and its place among its campaign's (1: the first).
    A list of them names the campaigns in turn order (`due_webhooks`)."""

    id: str
    campaign_id: str
    rank: int


def due_webhooks(session: Session, now: datetime, limit: int, per_campaign: int) -> list[Due]:
    """Enabled webhooks no loop holds, not waiting for a retry, with an event past their
    `last_number`: each campaign's first `per_campaign` of them, by how long each has waited (its
    retry's time, else its next event's), the campaigns' first ones before any second one (one
    campaign's many webhooks never fill the list), the campaigns in turn: first those with no
    webhook served since it had nothing to deliver (the longest waiting first), then the one served
    longest ago (its webhooks' latest `served_at`). A campaign served goes to the back, so each due
    campaign comes within the first `limit` after the ones before it are served, whatever their
    number: round robin, not oldest first.

    Its cost, each tick: one pass over the webhook table (at most MAX_WEBHOOKS rows a campaign that
    has any, in the order of ix_webhook_campaign_created), each enabled, free and ready one checked
    against its campaign's event counter (a primary-key probe); only a webhook behind it costs more:
    a probe of the event table's (campaign_id, number) index for its next event, and its campaign's
    turn (the other webhooks' rows, by the same index). It does not grow with the events, the
    deliveries or the campaigns without a webhook (bench/README.md: ~40 ms at 50,000 webhooks); the
    answer is at most `limit` rows."""
    turn = select(func.max(_peer.c.served_at)).where(_peer.c.campaign_id == _hook.c.campaign_id).scalar_subquery()
    first_pending = (
        select(_event.c.created_at)
        .where(_event.c.campaign_id == _hook.c.campaign_id, _event.c.number > _hook.c.last_number)
        .order_by(_event.c.number)
        .limit(1)
        .scalar_subquery()
    )
    ready = or_(_hook.c.next_attempt_at.is_(None), _hook.c.next_attempt_at <= now)
    behind = _hook.c.last_number < _counter.c.last_number  # the campaign's counter: its last event's number
    due = (
        select(
            _hook.c.id,
            _hook.c.campaign_id,
            _hook.c.created_at,
            turn.label("turn"),
            func.coalesce(_hook.c.next_attempt_at, first_pending).label("since"),
        )
        .join_from(_hook, _counter, _counter.c.campaign_id == _hook.c.campaign_id)
        .where(_free(now), ready, _hook.c.disabled_at.is_(None), behind)
        .subquery()
    )
    rank = func.row_number().over(partition_by=due.c.campaign_id, order_by=(due.c.since, due.c.created_at, due.c.id))
    ranked = select(due, rank.label("rank")).subquery()
    query = (
        select(ranked.c.id, ranked.c.campaign_id, ranked.c.rank)
        .where(ranked.c.rank <= per_campaign)
        .order_by(ranked.c.rank, ranked.c.turn.asc().nulls_first(), ranked.c.since, ranked.c.created_at, ranked.c.id)
        .limit(limit)
    )
    conn = session.connection()
    if conn.dialect.name == "postgresql":  # the planner's guess of its cost (a sub-select per webhook) asks
        conn.execute(_NO_JIT)  # for JIT compilation: 0.3 s, ten times the query's own run at 50,000 webhooks
    return [Due(*row) for row in conn.execute(query)]


_NO_JIT = text("SET LOCAL jit = off")


def hooked_campaigns(session: Session) -> set[str]:
    """The campaigns that have a webhook (what the delivery loop's notifications are filtered by)."""
    return set(session.connection().execute(select(_hook.c.campaign_id).distinct()).scalars())


def claim(session: Session, webhook_id: str, owner: str, now: datetime, lease_seconds: float) -> bool:
    """Take the webhook's lease if it is free (one conditional UPDATE: of two loops, one wins); its
    campaign's turn is now (`due_webhooks` serves the others first)."""
    taken = session.connection().execute(
        update(_hook)
        .where(_hook.c.id == webhook_id, _free(now))
        .values(lease_owner=owner, lease_expires=now + timedelta(seconds=lease_seconds), served_at=now)
    )
    session.commit()
    return taken.rowcount == 1


def release(session: Session, webhook_id: str, owner: str, *, caught_up: bool = False) -> None:
    """Give the lease back. `caught_up`: the webhook had nothing left to deliver, so it no longer
    counts in its campaign's turn (a campaign whose webhooks all caught up is served first when
    it has events again: it took less than its share)."""
    idle = {"served_at": None} if caught_up else {}
    session.connection().execute(
        update(_hook)
        .where(_hook.c.id == webhook_id, _hook.c.lease_owner == owner)
        .values(lease_owner=None, lease_expires=None, **idle)
    )
    session.commit()


GM_VIEW_PAGE = 50


def next_event(session: Session, webhook_id: str, owner: str) -> Outgoing | None:
    """The next event this webhook takes, as the GM reads it (its `events` filter applied: events
    it does not take are passed over), or None when none is left (or the lease was lost)."""
    row = session.connection().execute(select(_hook).where(_hook.c.id == webhook_id)).first()
    if row is None or row.lease_owner != owner or row.disabled_at is not None:
        return None
    gm = Principal(row.campaign_id, "gm", None, "")
    after = row.last_number
    while True:
        page = event_log.events_page(session, row.campaign_id, after, viewer=gm, limit=GM_VIEW_PAGE)
        wanted = next((e for e in page if row.events is None or e.type in row.events), None)
        if wanted is not None:
            return _outgoing(session, row, wanted)
        if len(page) < GM_VIEW_PAGE:
            if page:  # none of these is for this webhook: done with them
                _advance(session, webhook_id, owner, page[-1].number)
            return None
        after = page[-1].number


def _outgoing(session: Session, row: Any, event: event_log.StoredEvent) -> Outgoing:
    created_at = (
        session.connection()
        .execute(
            select(_event.c.created_at).where(_event.c.campaign_id == row.campaign_id, _event.c.number == event.number)
        )
        .scalar_one()
    )
    body = {
        "id": str(event.number),
        "type": event.type,
        "campaign_id": row.campaign_id,
        "created_at": event_log_time(created_at),
        "data": event.data,
    }
    return Outgoing(
        row.id,
        row.campaign_id,
        row.url,
        row.secret,
        event.number,
        event.type,
        f"msg_{row.id}_{event.number}",
        row.attempts + 1,
        to_json(body),
        None if row.failing_since is None else as_utc(row.failing_since),
    )


def event_log_time(at: datetime) -> str:
    """An event's time as the API writes times (UTC, ISO 8601, `Z`)."""
    return as_utc(at).astimezone(utcnow().tzinfo).isoformat().replace("+00:00", "Z")


def _advance(session: Session, webhook_id: str, owner: str, number: int) -> None:
    session.connection().execute(
        update(_hook)
        .where(_hook.c.id == webhook_id, _hook.c.lease_owner == owner)
        .values(last_number=number, attempts=0, next_attempt_at=None)
    )
    session.commit()


@dataclass(frozen=True)
class Attempt:
    """What came of one POST."""

    response_code: int | None
    error: str | None
    duration_ms: int

    @property
    def delivered(self) -> bool:
        return self.error is None and self.response_code is not None and 200 <= self.response_code < 300


def record_attempt(
    session: Session,
    out: Outgoing,
    attempt: Attempt,
    owner: str,
    *,
    max_attempts: int,
    retry_in: float,
    lease_seconds: float,
    disable_after: timedelta,
) -> bool:
    """Log the attempt and move the webhook on, if this loop still holds it: delivered, or failed
    for good after `max_attempts` (then the next event comes), or a retry in `retry_in` seconds
    (the lease released: whichever loop is free then sends it). A webhook whose every attempt
    failed for `disable_after` is disabled (as Svix and Stripe do: a receiver gone for days costs
    nothing more, and the GM is told). True when this loop may go on with the next event (the lease
    renewed)."""
    now = utcnow()
    done = attempt.delivered or out.attempt >= max_attempts
    status = "delivered" if attempt.delivered else ("failed" if done else "retrying")
    values: dict[str, Any] = {"failing_since": None if attempt.delivered else (out.failing_since or now)}
    if done:
        values |= {
            "last_number": out.number,
            "attempts": 0,
            "next_attempt_at": None,
            "lease_expires": now + timedelta(seconds=lease_seconds),
        }
    else:
        values |= {
            "attempts": out.attempt,
            "next_attempt_at": now + timedelta(seconds=retry_in),
            "lease_owner": None,
            "lease_expires": None,
        }
    moved = session.connection().execute(
        update(_hook)
        .where(and_(_hook.c.id == out.webhook_id, _hook.c.lease_owner == owner, _hook.c.last_number < out.number))
        .values(**values)
    )
    if moved.rowcount != 1:  # the lease was lost (this loop stalled beyond it): the new owner logs its own
        session.rollback()
        return False
    session.connection().execute(
        insert(_delivery),
        {
            "id": new_id(),
            "webhook_id": out.webhook_id,
            "event_number": out.number,
            "event_type": out.type,
            "message_id": out.message_id,
            "attempt": out.attempt,
            "status": status,
            "response_code": attempt.response_code,
            "error": attempt.error,
            "duration_ms": attempt.duration_ms,
            "created_at": now,
        },
    )
    disabled = (
        not attempt.delivered
        and out.failing_since is not None
        and now - out.failing_since >= disable_after
        and _disable(session, out.webhook_id, out.campaign_id, "failing", now)
    )
    session.commit()
    return done and not disabled
