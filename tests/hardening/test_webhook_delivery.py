"""Webhook delivery on real servers (issue 29 item 1): a SIGKILL between the commit of an event and
its delivery loses nothing (delivered after the restart, one acknowledged delivery per
`webhook-id`), and several delivery loops — two workers of one server and another instance on
the same database — never deliver one event twice, each webhook's events in order."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import httpx
import pytest

from tests.hardening.conftest import bearer
from tests.webhook_receiver import Receiver

pytestmark = pytest.mark.slow

FAST = {
    "WEBHOOK_ALLOW_PRIVATE": "true",
    "WEBHOOK_POLL_SECONDS": "0.05",
    "WEBHOOK_BACKOFF_SECONDS": "0.1",
    "WEBHOOK_TIMEOUT_SECONDS": "1",  # a lease of 7 s (2 x timeout + 5): a dead owner's webhook is taken after it
}


def _campaign(http: httpx.Client) -> tuple[str, dict[str, str]]:
    r = http.post("/v1/campaigns", json={"name": "Hooks", "ruleset": "great-cosmos"})
    assert r.status_code == 201, r.text
    return r.json()["id"], bearer(r.json()["gm_token"])


def _hook(http: httpx.Client, cid: str, gm: dict[str, str], url: str) -> dict[str, Any]:
    r = http.post(f"/v1/campaigns/{cid}/webhooks", json={"url": url}, headers=gm)
    assert r.status_code == 201, r.text
    return r.json()


def _deliveries(http: httpx.Client, cid: str, gm: dict[str, str], hook_id: str) -> list[dict[str, Any]]:
    r = http.get(f"/v1/campaigns/{cid}/webhooks/{hook_id}/deliveries", params={"limit": 500}, headers=gm)
    assert r.status_code == 200, r.text
    return r.json()["items"]


def _wait_delivered(http, cid, gm, hook_id: str, count: int, timeout: float = 45.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log = _deliveries(http, cid, gm, hook_id)
        if sum(d["status"] == "delivered" for d in log) >= count:
            return log
        time.sleep(0.1)
    raise AssertionError(f"not {count} deliveries within {timeout} s: {log}")


def test_issue29_item1_sigkill_between_commit_and_delivery_is_delivered_after_restart(live):
    receiver = Receiver(hang_first=True, hold=threading.Event()).start()
    try:
        server = live.start(own=True, **FAST)
        with httpx.Client(base_url=server.url, timeout=10.0) as http:
            cid, gm = _campaign(http)
            hook = _hook(http, cid, gm, receiver.url)
            for name in ("One", "Two", "Three"):  # committed: events 1, 2, 3
                assert http.post(f"/v1/campaigns/{cid}/players", json={"name": name}, headers=gm).status_code == 201
        deadline = time.monotonic() + 20
        while receiver.arrived < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert receiver.arrived == 1  # the first event is on the wire, unanswered
        server.kill()  # SIGKILL: nothing of the delivery was recorded
        receiver.hold.set()
        server.start()
        with httpx.Client(base_url=server.url, timeout=10.0) as http:
            log = _wait_delivered(http, cid, gm, hook["id"], 3)
        ids = [f"msg_{hook['id']}_{n}" for n in (1, 2, 3)]
        assert [(d["message_id"], d["status"]) for d in log] == [(i, "delivered") for i in ids]
        acknowledged = [r.message_id for r in receiver.acknowledged()]
        assert acknowledged == ids  # once each, in order
        assert [r.message_id for r in receiver.received] == [ids[0], *ids]  # the first sent again after the restart
        assert [r.json["data"]["name"] for r in receiver.acknowledged()] == ["One", "Two", "Three"]
    finally:
        receiver.stop()


def test_issue29_item1_two_workers_and_two_instances_never_deliver_one_event_twice(live):
    receivers = [Receiver(delay=0.005).start(), Receiver(delay=0.005).start()]
    try:
        first = live.start(workers=2, own=True, **FAST)
        second = live.start(own=True, **FAST)
        events = 30
        with httpx.Client(base_url=first.url, timeout=10.0) as a, httpx.Client(base_url=second.url, timeout=10.0) as b:
            cid, gm = _campaign(a)
            hooks = [_hook(a, cid, gm, r.url) for r in receivers]
            for n in range(events):
                http = a if n % 2 else b
                assert http.post(f"/v1/campaigns/{cid}/players", json={"name": f"P{n}"}, headers=gm).status_code == 201
            logs = [_wait_delivered(a, cid, gm, h["id"], events) for h in hooks]
        time.sleep(1.0)  # any late duplicate would have come by now
        for hook, receiver, log in zip(hooks, receivers, logs, strict=True):
            ids = [f"msg_{hook['id']}_{n}" for n in range(1, events + 1)]
            got = [r.message_id for r in receiver.received]
            assert Counter(got).most_common(1)[0][1] == 1, "an event was delivered twice"
            assert got == ids  # every event once, in event order
            assert [(d["message_id"], d["attempt"], d["status"]) for d in log] == [(i, 1, "delivered") for i in ids]
    finally:
        for receiver in receivers:
            receiver.stop()
