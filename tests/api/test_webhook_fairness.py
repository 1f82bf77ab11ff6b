"""Webhooks are fair (API.md round 4): one campaign's dead receivers never hold back another
campaign's deliveries (each webhook one attempt at a time, campaigns served in turn, each at most
its share of the slots while others wait), and a webhook failing every attempt for
WEBHOOK_DISABLE_AFTER_HOURS is disabled, the GM told (`webhook.disabled`), until the GM enables it
again (`PATCH`). Real receivers on loopback, both databases."""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any, Iterator

import pytest
from fastapi.testclient import TestClient

from app.api.ratelimit import RateLimiter
from app.models.tables import utcnow
from app.services.webhook_delivery import Turns
from app.services.webhooks import Attempt, Due, claim, due_webhooks, next_event, record_attempt, release
from tests.api.support import read_events
from tests.api.test_webhooks import (  # the fixtures too: one receiver and one fast client for both files
    FAST,
    deliveries,
    hooks,
    make_hook,
    receiver,
    wait_deliveries,
)
from tests.webhook_receiver import BlackHole, Receiver


class Camp:  # the shape the helpers of test_webhooks read
    def __init__(self, client: TestClient, name: str):
        r = client.post("/v1/campaigns", json={"name": name, "ruleset": "great-cosmos"})
        assert r.status_code == 201, r.text
        self.id, self.gm = r.json()["id"], {"Authorization": f"Bearer {r.json()['gm_token']}"}

    def event(self, client: TestClient, name: str) -> None:
        r = client.post(f"/v1/campaigns/{self.id}/players", json={"name": name}, headers=self.gm)
        assert r.status_code == 201, r.text


def _hook_of(client: TestClient, campaign: Any, hook_id: str) -> dict[str, Any]:
    r = client.get(f"/v1/campaigns/{campaign.id}/webhooks", headers=campaign.gm)
    assert r.status_code == 200, r.text
    return next(h for h in r.json()["items"] if h["id"] == hook_id)


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# --- whose turn: pure ----------------------------------------------------------------------------


def _due(*campaigns: str) -> list[Due]:
    rank: Counter[str] = Counter()
    out = []
    for n, c in enumerate(campaigns):
        rank[c] += 1
        out.append(Due(f"{c}{n}", c, rank[c]))
    return out


def _turns(turns: Turns) -> list[str]:
    order = []
    while (turn := turns.next()) is not None:
        order.append(turn[0])
        turns.held[turn[0]] += 1
    return order


def test_webhooks_fair_campaigns_served_in_turn_each_at_most_its_share():
    turns = Turns(_due("a", "a", "a", "a", "a", "b", "b", "c"), Counter(), slots=6)
    assert turns.share == 2
    assert _turns(turns) == ["a", "b", "c", "a", "b"]  # c has no second webhook; a stops at its share
    assert not turns.starved  # a waits at its share: nobody below it waits


def test_webhooks_fair_the_campaign_holding_fewest_slots_goes_first_then_the_first_in_turn_order():
    held = Counter({"a": 3, "b": 1})
    turns = Turns(_due("a", "b", "d", "c"), held, slots=8)  # the turn order: due_webhooks'
    assert turns.share == 2  # 8 slots, 4 campaigns
    assert _turns(turns) == ["d", "c", "b"]  # a holds more than its share already
    full = Turns(_due("a", "b"), Counter({"a": 8}), slots=8)  # every slot a's, b waiting
    assert full.share == 4 and full.starved


def test_webhooks_fair_one_campaign_alone_may_use_every_slot():
    assert _turns(Turns(_due(*"a" * 10), Counter(), slots=8)) == ["a"] * 8


# --- which webhooks are due: the database's ranking ----------------------------------------------


def test_webhooks_fair_due_webhooks_ranked_per_campaign_not_oldest_first(app, settings, db_session):
    app.state.settings = settings.model_copy(update={"webhook_delivery": False})
    with TestClient(app) as client:
        first, second = Camp(client, "Many hooks"), Camp(client, "One hook")
        many = [make_hook(client, first, f"https://hooks.example.com/a{n}")["id"] for n in range(3)]
        one = make_hook(client, second, "https://hooks.example.com/b")["id"]
        quiet = Camp(client, "No event")
        make_hook(client, quiet, "https://hooks.example.com/c")
        first.event(client, "A")
        second.event(client, "B")
        now = utcnow() + timedelta(seconds=1)
        # the oldest-first order gave the first two of `many`: one campaign filled the list
        assert due_webhooks(db_session, now, limit=2, per_campaign=8) == [
            Due(many[0], first.id, 1),
            Due(one, second.id, 1),
        ]
        assert due_webhooks(db_session, now, limit=10, per_campaign=2) == [
            Due(many[0], first.id, 1),
            Due(one, second.id, 1),
            Due(many[1], first.id, 2),
        ]
        r = client.patch(f"/v1/campaigns/{second.id}/webhooks/{one}", json={"enabled": False}, headers=second.gm)
        assert r.status_code == 200, r.text
        db_session.rollback()  # a new snapshot: the PATCH committed
        assert [d.id for d in due_webhooks(db_session, now, limit=10, per_campaign=8)] == many  # disabled: not due


def test_webhooks_fair_due_webhooks_rotate_through_more_campaigns_than_they_read(app, settings, db_session):
    """More campaigns due than the list holds (2 here, 32 in the loop): the campaign served longest
    ago comes first and a campaign served goes behind the others, so each comes in its turn; one
    whose webhooks caught up (nothing left to deliver) comes first when it has events again. Read
    oldest first, the third campaign would wait until the first two had nothing left."""
    app.state.settings = settings.model_copy(update={"webhook_delivery": False})
    with TestClient(app) as client:
        camps = [Camp(client, f"Campaign {n}") for n in range(3)]
        ids = [make_hook(client, c, f"https://hooks.example.com/{n}")["id"] for n, c in enumerate(camps)]
        for camp in camps:
            camp.event(client, "A")
        a, b, c = (camp.id for camp in camps)
        start = utcnow() + timedelta(seconds=1)

        def due(ms: int) -> list[str]:
            db_session.rollback()  # a new snapshot
            at = start + timedelta(milliseconds=ms)
            return [d.campaign_id for d in due_webhooks(db_session, at, limit=2, per_campaign=8)]

        def serve(n: int, ms: int) -> None:  # a loop takes it, its attempt fails (the event still to deliver)
            assert claim(db_session, ids[n], "loop", start + timedelta(milliseconds=ms), 30)
            release(db_session, ids[n], "loop")

        assert due(0) == [a, b]  # none served yet: the longest waiting first
        serve(0, 1)
        assert due(2) == [b, c]
        serve(1, 3)
        assert due(4) == [c, a]
        serve(2, 5)
        assert due(6) == [a, b]

        assert claim(db_session, ids[2], "loop", start + timedelta(milliseconds=7), 30)  # c delivers its event
        out = next_event(db_session, ids[2], "loop")
        assert out is not None
        done = dict(max_attempts=8, retry_in=1.0, lease_seconds=30, disable_after=timedelta(hours=1))
        assert record_attempt(db_session, out, Attempt(200, None, 1), "loop", **done)
        assert next_event(db_session, ids[2], "loop") is None
        release(db_session, ids[2], "loop", caught_up=True)
        assert due(8) == [a, b]
        camps[2].event(client, "B")
        assert due(9) == [c, a]  # it took less than its share: its turn first


# --- measured: a healthy receiver beside many hanging webhooks -----------------------------------

VICTIM_EVENTS = 3


def _victim_waits(
    app: Any, settings: Any, receiver: Receiver, *, campaigns: int, hooks_each: int, timeout: float, slots: int
) -> list[float]:
    """`campaigns` x `hooks_each` webhooks to a receiver that never answers (each attempt held for
    the whole `timeout`, retried at once: a 0.05 s backoff keeps them always due, the worst case),
    their campaigns' events all older than the victim's; then a last campaign's healthy receiver
    gets 3 events, one after the other: the seconds each took to arrive (an event not there within
    60 s fails the test). Checks on the way that the hanging webhooks held the slots meanwhile,
    each one attempt at a time."""
    app.state.settings = settings.model_copy(
        update={**FAST, "webhook_timeout_seconds": timeout, "webhook_concurrency": slots}
    )
    app.state.rate_limiter = RateLimiter(settings.model_copy(update={"campaigns_per_hour_per_address": 0}))
    hole = BlackHole().start()
    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            hostile = [Camp(client, f"Hostile {n}") for n in range(campaigns)]
            holes = {c.id: [make_hook(client, c, hole.url)["id"] for _ in range(hooks_each)] for c in hostile}
            for c in hostile:
                for n in range(2):
                    c.event(client, f"Noise {n}")
            victim = Camp(client, "Victim")
            make_hook(client, victim, receiver.url)
            time.sleep(1.0)  # the hanging attempts hold the slots
            took = []
            for n in range(VICTIM_EVENTS):
                started = time.monotonic()
                victim.event(client, f"Player {n}")
                receiver.wait_for(n + 1, timeout=60)
                took.append(time.monotonic() - started)
            assert [g.json["data"]["name"] for g in receiver.acknowledged()] == [f"Player {n}" for n in range(3)]
            logs = [deliveries(client, c, h) for c in hostile for h in holes[c.id]]
            assert sum(map(len, logs)) >= slots  # the hanging receivers did hold the slots meanwhile
            assert {d["error"] for log in logs for d in log} == {f"no answer within {timeout} s"}
            for log in logs:  # each webhook one attempt at a time: its attempts never overlap
                spans = sorted(
                    (_at(d["created_at"]) - timedelta(milliseconds=d["duration_ms"]), _at(d["created_at"])) for d in log
                )
                assert all(b[0] >= a[1] - timedelta(milliseconds=5) for a, b in pairwise(spans))
            return took
    finally:
        hole.stop()


def test_webhooks_fair_a_healthy_receiver_gets_each_event_within_20_s_beside_40_hanging_webhooks(
    app, settings, receiver
):
    """4 campaigns x 10 webhooks that hang (3 s an attempt), 4 slots: a fifth campaign's healthy
    receiver gets each of its events within 20 s. Its turn comes as soon as one hanging attempt
    ends (~3 s). Oldest first, its event waits behind every older one: the 40 hanging webhooks'
    next attempts, 40 / 4 x 3 s = 30 s (and for ever if age is the event's, not the retry's)."""
    took = _victim_waits(app, settings, receiver, campaigns=4, hooks_each=10, timeout=3.0, slots=4)
    assert max(took) < 20.0, took


def test_webhooks_fair_past_the_due_list_campaigns_still_take_turns(app, settings, receiver):
    """40 campaigns x 10 hanging webhooks (1 s an attempt), 8 slots: more campaigns with webhooks due
    than the delivery loop reads at a tick (32). A campaign served longest ago, or not since it had
    nothing to deliver, is read first, so the victim's event waits at most for a turn of the hostile
    campaigns (40 / 8 x 1 s) and one attempt: ~6 s, bounded by 12 s here (3.1, 0.5 and 0.05 s
    measured). Read oldest first (the 32 longest waiting campaigns' first webhooks), the victim was
    not read until most hostile webhooks had had their next attempt: 39, 27 and 20 s measured."""
    took = _victim_waits(app, settings, receiver, campaigns=40, hooks_each=10, timeout=1.0, slots=8)
    assert max(took) < 12.0, took


def test_webhooks_fair_a_campaign_holding_every_slot_gives_its_share_up_when_another_waits(app, settings, receiver):
    """8 slow receivers (0.5 s an answer) of one campaign, each with 40 events to take: they hold
    the 8 slots for 20 s. A second campaign's event waits only for their current attempts: once
    it waits below its share, a delivery of a campaign at its share gives its slot up after its
    event (before, each kept it while its webhook had events)."""
    app.state.settings = settings.model_copy(update=FAST)
    slow = Receiver(delay=0.5).start()
    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            busy, victim = Camp(client, "Busy"), Camp(client, "Victim")
            for _ in range(8):
                make_hook(client, busy, slow.url)
            for n in range(40):
                busy.event(client, f"Noise {n}")
            make_hook(client, victim, receiver.url)
            slow.wait_for(8, acknowledged=False)  # every slot taken
            started = time.monotonic()
            victim.event(client, "Player")
            receiver.wait_for(1, timeout=30)
            took = time.monotonic() - started
            assert took < 10.0, took
            assert len(slow.received) < 8 * 40  # the busy campaign had not finished
    finally:
        slow.stop()


# --- disabled after failing, enabled again by the GM ---------------------------------------------


def _wait_disabled(client: TestClient, campaign: Any, hook_id: str, timeout: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        hook = _hook_of(client, campaign, hook_id)
        if hook["disabled_at"] is not None:
            return hook
        time.sleep(0.05)
    raise AssertionError(f"not disabled within {timeout} s: {hook}")


def test_webhooks_failing_every_attempt_for_the_setting_is_disabled_the_gm_told_then_enabled_again(
    hooks, app, campaign, alice, receiver
):
    app.state.settings = app.state.settings.model_copy(
        update={"webhook_disable_after_hours": 1.0 / 3600, "webhook_max_attempts": 50}  # one second
    )
    receiver.default = 503
    hook = make_hook(hooks, campaign, receiver.url)
    assert (hook["failing_since"], hook["disabled_at"], hook["disabled_reason"]) == (None, None, None)
    hooks.post(f"/v1/campaigns/{campaign.id}/players", json={"name": "Bob"}, headers=campaign.gm)
    disabled = _wait_disabled(hooks, campaign, hook["id"])
    assert disabled["disabled_reason"] == "failing"
    assert _at(disabled["disabled_at"]) - _at(disabled["failing_since"]) >= timedelta(seconds=1)
    log = deliveries(hooks, campaign, hook["id"])
    assert len(log) >= 2 and {d["status"] for d in log} == {"retrying"} and {d["response_code"] for d in log} == {503}
    assert _at(log[0]["created_at"]) == _at(disabled["failing_since"])  # the first failure started the clock
    time.sleep(0.5)
    assert len(deliveries(hooks, campaign, hook["id"])) == len(log)  # nothing more is attempted
    assert len(receiver.received) == len(log)

    told = [e for e in read_events(hooks, campaign.id, campaign.gm) if e["type"] == "webhook.disabled"]
    assert [e["data"] for e in told] == [disabled]
    assert "webhook.disabled" not in {e["type"] for e in read_events(hooks, campaign.id, alice.headers)}

    receiver.default = 200
    r = hooks.patch(f"/v1/campaigns/{campaign.id}/webhooks/{hook['id']}", json={"enabled": True}, headers=campaign.gm)
    assert r.status_code == 200, r.text
    assert (r.json()["disabled_at"], r.json()["disabled_reason"], r.json()["failing_since"]) == (None, None, None)
    got = receiver.wait_for(2)  # resumed where it stopped: the event it failed, then the one about it
    assert [(g.json["type"], g.json["data"].get("name")) for g in got] == [
        ("player.created", "Bob"),
        ("webhook.disabled", None),
    ]
    assert got[1].json["data"]["id"] == hook["id"]
    log = wait_deliveries(hooks, campaign, hook["id"], len(log) + 2)
    assert [(d["attempt"], d["status"]) for d in log[-2:]] == [(1, "delivered"), (1, "delivered")]  # failures forgotten


def test_webhooks_a_delivered_attempt_clears_failing_since(hooks, campaign, receiver):
    receiver.statuses = [500, 500]
    hook = make_hook(hooks, campaign, receiver.url)
    hooks.post(f"/v1/campaigns/{campaign.id}/players", json={"name": "Bob"}, headers=campaign.gm)
    receiver.wait_for(1)
    deadline = time.monotonic() + 10
    while _hook_of(hooks, campaign, hook["id"])["failing_since"] is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [d["status"] for d in deliveries(hooks, campaign, hook["id"])] == ["retrying", "retrying", "delivered"]
    assert _hook_of(hooks, campaign, hook["id"])["failing_since"] is None


def test_webhooks_the_gm_disables_nothing_is_delivered_then_enables_the_backlog_comes_in_order(
    hooks, campaign, receiver
):
    hook = make_hook(hooks, campaign, receiver.url)
    url = f"/v1/campaigns/{campaign.id}/webhooks/{hook['id']}"
    r = hooks.patch(url, json={"enabled": False}, headers=campaign.gm)
    assert r.status_code == 200, r.text
    assert r.json()["disabled_reason"] == "gm" and r.json()["disabled_at"] is not None
    assert hooks.patch(url, json={"enabled": False}, headers=campaign.gm).json() == r.json()  # already: unchanged
    for name in ("One", "Two"):
        hooks.post(f"/v1/campaigns/{campaign.id}/players", json={"name": name}, headers=campaign.gm)
    time.sleep(0.5)
    assert receiver.received == [] and deliveries(hooks, campaign, hook["id"]) == []
    told = [e for e in read_events(hooks, campaign.id, campaign.gm) if e["type"] == "webhook.disabled"]
    assert [e["data"] for e in told] == [r.json()]
    assert hooks.patch(url, json={}, headers=campaign.gm).json() == r.json()  # nothing asked: unchanged
    r = hooks.patch(url, json={"enabled": True}, headers=campaign.gm)
    assert r.status_code == 200 and r.json()["disabled_at"] is None
    got = receiver.wait_for(3)
    assert [(g.json["type"], g.json["data"].get("name")) for g in got] == [
        ("webhook.disabled", None),
        ("player.created", "One"),
        ("player.created", "Two"),
    ]


@pytest.mark.parametrize(
    ("body", "where"),
    [({"enabled": "maybe"}, ["body", "enabled"]), ({"url": "https://x.example.com"}, ["body", "url"])],
)
def test_webhooks_patch_refuses_a_bad_body_with_a_422_naming_it(client, campaign, body, where):
    hook = make_hook(client, campaign, "https://hooks.example.com/jdr")
    r = client.patch(f"/v1/campaigns/{campaign.id}/webhooks/{hook['id']}", json=body, headers=campaign.gm)
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"] == where


def test_webhooks_patch_of_another_campaigns_webhook_is_a_404(client, campaign, campaign_factory):
    hook = make_hook(client, campaign, "https://hooks.example.com/jdr")
    other = campaign_factory("great-cosmos")
    r = client.patch(f"/v1/campaigns/{other.id}/webhooks/{hook['id']}", json={"enabled": False}, headers=other.gm)
    assert r.status_code == 404
    assert _hook_of(client, campaign, hook["id"])["disabled_at"] is None
