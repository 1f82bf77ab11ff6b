"""Webhooks (issue 29 item 1; API.md round 3 "Webhooks"): the GM's routes, the SSRF guard, and
delivery to a real receiver on loopback (WEBHOOK_ALLOW_PRIVATE set): the Standard Webhooks
signature checked with the reference implementation (the `standardwebhooks` package), the
events as the GM reads them, in order, retried until the receiver recovers."""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import time
from typing import Any, Iterator

import pytest
from fastapi.testclient import TestClient
from standardwebhooks import Webhook as ReferenceWebhook

from app.services.webhook_delivery import backoff, signature
from app.services.webhooks import address_rule, refusal
from tests.api.support import read_events
from tests.factories import GC_MINIMAL
from tests.webhook_receiver import Receiver

FAST = {
    "webhook_allow_private": True,
    "webhook_poll_seconds": 0.05,
    "webhook_backoff_seconds": 0.05,
    "webhook_timeout_seconds": 2.0,
}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver().start()
    try:
        yield r
    finally:
        r.stop()


@pytest.fixture
def hooks(app, settings) -> Iterator[TestClient]:
    """A client of the app whose delivery loop polls fast and may call loopback."""
    app.state.settings = settings.model_copy(update=FAST)
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def make_hook(client, campaign, url: str, **body: Any) -> dict[str, Any]:
    r = client.post(f"/v1/campaigns/{campaign.id}/webhooks", json={"url": url, **body}, headers=campaign.gm)
    assert r.status_code == 201, r.text
    return r.json()


def deliveries(client, campaign, hook_id: str) -> list[dict[str, Any]]:
    r = client.get(f"/v1/campaigns/{campaign.id}/webhooks/{hook_id}/deliveries", headers=campaign.gm)
    assert r.status_code == 200, r.text
    return r.json()["items"]


def wait_deliveries(client, campaign, hook_id: str, count: int, timeout: float = 20.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        items = deliveries(client, campaign, hook_id)
        if len(items) >= count:
            return items
        time.sleep(0.05)
    raise AssertionError(f"{len(items)} deliveries logged, waited for {count}: {items}")


# --- the routes ------------------------------------------------------------------------------


def test_issue29_item1_create_list_delete_the_secret_shown_once(client, campaign, alice):
    r = client.post(
        f"/v1/campaigns/{campaign.id}/webhooks",
        json={"url": "https://hooks.example.com/jdr", "events": ["log.created"]},
        headers=campaign.gm,
    )
    assert r.status_code == 201, r.text
    hook = r.json()
    assert r.headers["location"] == f"/v1/campaigns/{campaign.id}/webhooks/{hook['id']}"
    assert hook["url"] == "https://hooks.example.com/jdr" and hook["events"] == ["log.created"]
    assert hook["secret"].startswith("whsec_") and len(base64.b64decode(hook["secret"][6:])) == 32
    listed = client.get(f"/v1/campaigns/{campaign.id}/webhooks", headers=campaign.gm).json()
    assert [h["id"] for h in listed["items"]] == [hook["id"]]
    assert "secret" not in listed["items"][0]
    assert client.get(f"/v1/campaigns/{campaign.id}/webhooks", headers=alice.headers).status_code == 403
    assert deliveries(client, campaign, hook["id"]) == []
    r = client.delete(f"/v1/campaigns/{campaign.id}/webhooks/{hook['id']}", headers=campaign.gm)
    assert r.status_code == 204
    r = client.get(f"/v1/campaigns/{campaign.id}/webhooks/{hook['id']}/deliveries", headers=campaign.gm)
    assert r.status_code == 404
    assert client.get(f"/v1/campaigns/{campaign.id}/webhooks", headers=campaign.gm).json()["items"] == []


def test_issue29_item1_unknown_event_type_is_a_422_naming_it(client, campaign):
    r = client.post(
        f"/v1/campaigns/{campaign.id}/webhooks",
        json={"url": "https://hooks.example.com/jdr", "events": ["log.created", "dice.exploded"]},
        headers=campaign.gm,
    )
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"] == ["body", "events", "1"] or r.json()["errors"][0]["loc"] == [
        "body",
        "events",
        1,
    ]
    assert "dice.exploded" in r.json()["detail"]


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:8080/hook", "loopback"),
        ("http://localhost/hook", "loopback"),
        ("http://[::1]/hook", "loopback"),
        ("http://10.1.2.3/hook", "private"),
        ("http://192.168.0.10/hook", "private"),
        ("http://169.254.169.254/latest/meta-data", "link-local"),
        ("http://[::ffff:127.0.0.1]/hook", "loopback"),
        ("http://0.0.0.0/hook", "unspecified"),
        ("http://localhost/hook", "localhost resolves to a loopback address"),
        ("http://[2002:7f00:1::]/hook", "is a 6to4 (2002::/16) address of a loopback IPv4 address"),
        ("http://[2002:a00:1::5]/hook", "is a 6to4 (2002::/16) address of a private IPv4 address"),
        ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook", "is a Teredo (2001::/32) address"),
        ("http://[64:ff9b::7f00:1]/hook", "is a NAT64 (64:ff9b::/96) address of a loopback IPv4 address"),
        ("http://[64:ff9b::a9fe:a9fe]/hook", "is a NAT64 (64:ff9b::/96) address of a link-local IPv4 address"),
        ("http://[::ffff:10.0.0.1]/hook", "is an IPv4-mapped (::ffff:0:0/96) address of a private IPv4 address"),
        ("http://[fc00::1]/hook", "is a private address"),
        ("http://[fe80::1]/hook", "is a link-local address"),
        ("http://100.64.0.1/hook", "is a shared (100.64.0.0/10) address"),
        # what Python 3.11's `is_global` calls global, or files as merely private or reserved
        ("http://[fec0::1]/hook", "is a site-local (fec0::/10) address"),
        ("http://[feff::1]/hook", "is a site-local (fec0::/10) address"),
        ("http://192.0.0.8/hook", "is an IETF protocol (192.0.0.0/24) address"),
        ("http://192.0.0.9/hook", "is an IETF protocol (192.0.0.0/24) address"),
        ("http://198.18.0.1/hook", "is a benchmarking (198.18.0.0/15) address"),
        ("http://203.0.113.9/hook", "is a documentation (203.0.113.0/24) address"),
        ("http://[2001:db8::1]/hook", "is a documentation (2001:db8::/32) address"),
        ("http://[3fff::1]/hook", "is a documentation (3fff::/20) address"),
        ("http://[2001:2::1]/hook", "is a benchmarking (2001:2::/48) address"),
        ("http://[100::1]/hook", "is a discard-only (100::/64) address"),
        ("http://[64:ff9b:1::a00:1]/hook", "is a local-use NAT64 (64:ff9b:1::/48) address"),
        ("http://[::ffff:100.64.0.1]/hook", "IPv4-mapped (::ffff:0:0/96) address of a shared (100.64.0.0/10)"),
        ("http://[64:ff9b::c000:8]/hook", "NAT64 (64:ff9b::/96) address of an IETF protocol (192.0.0.0/24)"),
        ("http://224.0.0.1/hook", "is a multicast address"),
        ("http://240.0.0.1/hook", "is a private address"),
        ("ftp://hooks.example.com/hook", "must be http or https"),
        ("file:///etc/passwd", "must be http or https"),
        ("https:///no-host", "no host"),
        ("http://hooks.example.com:99999/", "not a valid URL"),
    ],
)
def test_issue29_item1_ssrf_refused_at_creation_with_a_clear_422(client, campaign, url, why):
    r = client.post(f"/v1/campaigns/{campaign.id}/webhooks", json={"url": url}, headers=campaign.gm)
    assert r.status_code == 422, r.text
    problem = r.json()
    assert problem["type"].endswith("/unsafe-webhook-url")
    assert why in problem["detail"]
    assert problem["errors"][0]["loc"] == ["body", "url"]
    assert client.get(f"/v1/campaigns/{campaign.id}/webhooks", headers=campaign.gm).json()["items"] == []


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "2606:4700::1111", "2002:808:808::1", "64:ff9b::808:808", "::ffff:8.8.8.8"]
)
def test_ssrf_a_global_address_is_let_through_its_embedded_ipv4_global_too(address):
    assert address_rule(ipaddress.ip_address(address)) is None
    assert refusal("hooks.example.com", [address]) is None


def test_ssrf_a_refusal_of_a_name_names_the_rule_never_the_address_it_resolved_to():
    reason = refusal("db.internal", ["8.8.8.8", "10.0.3.4", "203.0.113.9"])
    assert reason is not None and reason.startswith("the webhook URL's host db.internal resolves to a private address")
    assert "10.0.3.4" not in reason and "203.0.113.9" not in reason
    reason = refusal("relay.internal", ["2002:a00:304::1"])
    assert reason is not None and "6to4 (2002::/16) address of a private IPv4 address" in reason
    assert "2002" not in reason.split("6to4")[0] and "10.0.3.4" not in reason and "2002:a00:304::1" not in reason


def test_issue29_item1_signature_is_the_standard_webhooks_one():
    secret = "whsec_" + base64.b64encode(b"k" * 32).decode()
    body = b'{"id":"1","type":"player.created"}'
    sig = signature(secret, "msg_1", 1700000000, body)
    expected = base64.b64encode(hmac.new(b"k" * 32, b"msg_1.1700000000." + body, hashlib.sha256).digest()).decode()
    assert sig == "v1," + expected
    headers = {"webhook-id": "msg_1", "webhook-timestamp": str(int(time.time())), "webhook-signature": ""}
    headers["webhook-signature"] = signature(secret, "msg_1", int(headers["webhook-timestamp"]), body)
    assert ReferenceWebhook(secret).verify(body, headers) is not None


def test_issue29_item1_backoff_doubles_with_jitter_in_its_upper_half():
    assert [backoff(n, 2.0, rand=lambda lo, hi: hi) for n in (1, 2, 3, 4)] == [2.0, 4.0, 8.0, 16.0]
    assert [backoff(n, 2.0, rand=lambda lo, hi: lo) for n in (1, 2, 3)] == [1.0, 2.0, 4.0]
    assert backoff(40, 2.0, rand=lambda lo, hi: hi) == 3600.0


# --- delivery to a real receiver ---------------------------------------------------------------


def test_issue29_item1_events_delivered_signed_in_order_as_the_gm_reads_them(hooks, receiver):
    client = hooks
    r = client.post("/v1/campaigns", json={"name": "Hooked", "ruleset": "great-cosmos"})
    cid, gm = r.json()["id"], {"Authorization": f"Bearer {r.json()['gm_token']}"}
    client.post(f"/v1/campaigns/{cid}/players", json={"name": "Before"}, headers=gm)  # before the webhook: not sent
    r = client.post(f"/v1/campaigns/{cid}/webhooks", json={"url": receiver.url}, headers=gm)
    secret = r.json()["secret"]
    player = client.post(f"/v1/campaigns/{cid}/players", json={"name": "Alice"}, headers=gm).json()
    hero = client.post(
        f"/v1/campaigns/{cid}/characters", json={"name": "Aiko", "kind": "pc", "sheet": GC_MINIMAL}, headers=gm
    ).json()
    client.post(f"/v1/campaigns/{cid}/rolls", json={"expression": "1d6", "hidden": True, "seed": 4}, headers=gm)
    client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "force", "dice": [42]}, headers=gm)

    expected = [e for e in read_events(client, cid, gm) if e["id"] > 1]
    got = receiver.wait_for(len(expected))
    assert [g.json["id"] for g in got] == [str(e["id"]) for e in expected]
    assert [g.json["type"] for g in got] == [e["type"] for e in expected]
    assert [g.json["data"] for g in got] == [e["data"] for e in expected]  # the hidden roll too: the GM's view
    assert any(g.json["type"] == "log.created" and g.json["data"]["entry"]["hidden"] for g in got)
    assert got[0].json["data"]["id"] == player["id"]
    reference = ReferenceWebhook(secret)
    for g in got:
        assert reference.verify(g.body, g.headers) == g.json
        assert g.json["campaign_id"] == cid and g.json["created_at"].endswith("Z")
        assert g.headers["content-type"] == "application/json"
    assert len({g.message_id for g in got}) == len(got)
    hook_id = r.json()["id"]
    log = wait_deliveries(client, _campaign(cid, gm), hook_id, len(expected))
    assert [(d["event_id"], d["status"], d["attempt"], d["response_code"]) for d in log] == [
        (str(e["id"]), "delivered", 1, 200) for e in expected
    ]


class _campaign:  # noqa: N801 (the shape deliveries() reads)
    def __init__(self, cid: str, gm: dict[str, str]):
        self.id, self.gm = cid, gm


def test_issue29_item1_a_failing_receiver_is_retried_until_it_recovers_and_order_holds(hooks, campaign, receiver):
    receiver.statuses = [500, 503, 200]
    hook = make_hook(hooks, campaign, receiver.url)
    hooks.post(f"/v1/campaigns/{campaign.id}/players", json={"name": "One"}, headers=campaign.gm)
    hooks.post(f"/v1/campaigns/{campaign.id}/players", json={"name": "Two"}, headers=campaign.gm)
    got = receiver.wait_for(4, acknowledged=False)
    first = got[0].message_id
    assert [g.message_id for g in got[:3]] == [first] * 3  # the same webhook-id on every attempt
    assert [g.status for g in got[:4]] == [500, 503, 200, 200]
    assert got[3].json["data"]["name"] == "Two" and got[2].json["data"]["name"] == "One"
    assert int(got[1].headers["webhook-timestamp"]) >= int(got[0].headers["webhook-timestamp"])
    log = wait_deliveries(hooks, campaign, hook["id"], 4)
    assert [(d["attempt"], d["status"], d["response_code"]) for d in log] == [
        (1, "retrying", 500),
        (2, "retrying", 503),
        (3, "delivered", 200),
        (1, "delivered", 200),
    ]
    assert log[0]["error"] == "HTTP 500" and log[2]["error"] is None
    assert {d["message_id"] for d in log[:3]} == {first}


def test_issue29_item1_after_max_attempts_the_event_is_failed_and_the_next_one_comes(hooks, app, campaign, receiver):
    app.state.settings = app.state.settings.model_copy(update={"webhook_max_attempts": 2})
    receiver.statuses = [500, 500]
    hook = make_hook(hooks, campaign, receiver.url)
    hooks.post(f"/v1/campaigns/{campaign.id}/players", json={"name": "Lost"}, headers=campaign.gm)
    hooks.post(f"/v1/campaigns/{campaign.id}/players", json={"name": "Kept"}, headers=campaign.gm)
    log = wait_deliveries(hooks, campaign, hook["id"], 3)
    assert [(d["attempt"], d["status"]) for d in log] == [(1, "retrying"), (2, "failed"), (1, "delivered")]
    assert [g.json["data"]["name"] for g in receiver.acknowledged()] == ["Kept"]


def test_issue29_item1_events_filter(hooks, campaign, receiver, hero):
    make_hook(hooks, campaign, receiver.url, events=["log.created"])
    hooks.post(f"/v1/campaigns/{campaign.id}/players", json={"name": "Skipped"}, headers=campaign.gm)
    hooks.post(f"/v1/campaigns/{campaign.id}/rolls", json={"expression": "2d6", "seed": 1}, headers=campaign.gm)
    got = receiver.wait_for(1)
    time.sleep(0.3)
    assert [g.json["type"] for g in receiver.received] == ["log.created"]
    assert got[0].json["data"]["entry"]["expression"] == "2d6"


def test_issue29_item1_ssrf_checked_again_at_delivery_time(hooks, app, campaign, receiver):
    hook = make_hook(hooks, campaign, receiver.url)  # allowed when it was made
    app.state.settings = app.state.settings.model_copy(
        update={"webhook_allow_private": False, "webhook_max_attempts": 1}
    )
    hooks.post(f"/v1/campaigns/{campaign.id}/players", json={"name": "Nobody"}, headers=campaign.gm)
    log = wait_deliveries(hooks, campaign, hook["id"], 1)
    assert log[0]["status"] == "failed" and log[0]["response_code"] is None
    assert "127.0.0.1" in log[0]["error"] and "loopback" in log[0]["error"]  # the host the GM wrote
    assert receiver.received == []


def test_ssrf_a_delivery_refused_names_the_rule_not_the_address_the_name_resolved_to(hooks, app, campaign, receiver):
    port = receiver.url.split(":")[2].split("/")[0]
    hook = make_hook(hooks, campaign, f"http://localhost:{port}/hook")  # allowed when it was made
    app.state.settings = app.state.settings.model_copy(
        update={"webhook_allow_private": False, "webhook_max_attempts": 1}
    )
    hooks.post(f"/v1/campaigns/{campaign.id}/players", json={"name": "Nobody"}, headers=campaign.gm)
    log = wait_deliveries(hooks, campaign, hook["id"], 1)
    assert log[0]["status"] == "failed" and log[0]["response_code"] is None
    assert log[0]["error"].startswith("the webhook URL's host localhost resolves to a loopback address: refused")
    assert "127.0.0.1" not in log[0]["error"] and "::1" not in log[0]["error"]
    assert receiver.received == []


def test_issue29_item1_a_slow_receiver_never_slows_the_api(hooks, app, campaign, receiver):
    app.state.settings = app.state.settings.model_copy(update={"webhook_timeout_seconds": 0.5})
    receiver.delay = 3.0
    hook = make_hook(hooks, campaign, receiver.url)
    started = time.monotonic()
    for n in range(10):
        r = hooks.post(f"/v1/campaigns/{campaign.id}/rolls", json={"expression": "1d6", "seed": n}, headers=campaign.gm)
        assert r.status_code == 201
    assert time.monotonic() - started < 2.0
    log = wait_deliveries(hooks, campaign, hook["id"], 1)
    assert log[0]["status"] == "retrying" and log[0]["error"] == "no answer within 0.5 s"
    assert 450 <= log[0]["duration_ms"] < 1500


def test_issue29_item1_deleting_the_campaign_takes_its_webhooks(client, campaign, count_rows):
    make_hook(client, campaign, "https://hooks.example.com/jdr")
    assert count_rows("webhook") == 1
    assert client.delete(f"/v1/campaigns/{campaign.id}", headers=campaign.gm).status_code == 204
    assert count_rows("webhook") == 0
