"""HTTP conventions for client developers (issue 14, items 7 to 10): the order of
refusals, bodies that are not JSON, where a problem is located, 404/405, 304 on
If-None-Match, X-Request-Id."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.api.support import assert_problem, assert_validation, bearer
from tests.factories import GC, GC_MINIMAL
from tests.hardening.conftest import free_port, purge_campaigns

JSON = {"Content-Type": "application/json"}
MALFORMED = b'{"stat": "force" "dice": [42]}'  # json: "Expecting ',' delimiter: line 1 column 18 (char 17)"
DEEP = b'{"name": ' + b"[" * 40 + b"]" * 40 + b"}"


@pytest.fixture
def table(client, campaign_factory, player_factory, character_factory):
    """A campaign with its GM, a player owning `hero`, another player, an encounter;
    and another campaign's GM."""
    camp = campaign_factory(GC)
    owner, other = player_factory(camp, "Owner"), player_factory(camp, "Other")
    hero = character_factory(camp, GC_MINIMAL, player=owner)
    r = client.post(
        f"/v1/campaigns/{camp.id}/encounters",
        headers=camp.gm,
        json={"name": "Ambush", "combatants": [{"character_id": hero["id"]}]},
    )
    assert r.status_code == 201, r.text
    elsewhere = campaign_factory(GC, name="Elsewhere")
    return {
        "camp": camp,
        "gm": camp.gm,
        "owner": owner.headers,
        "player": other.headers,
        "other_gm": elsewhere.gm,
        "hero": hero,
        "encounter": r.json(),
    }


# --- item 7: 401 → 404 → 403 → the 4xx of the body ------------------------------------------------


def _gm_routes(t):
    cid, hero, eid = t["camp"].id, t["hero"]["id"], t["encounter"]["id"]
    return [
        ("PATCH", f"/v1/campaigns/{cid}"),
        ("POST", f"/v1/campaigns/{cid}/players"),
        ("POST", f"/v1/characters/{hero}/level-ups"),
        ("POST", f"/v1/campaigns/{cid}/tests/opposed"),
        ("POST", f"/v1/campaigns/{cid}/encounters"),
        ("PATCH", f"/v1/encounters/{eid}"),
    ]


BAD_BODIES = [
    pytest.param({"json": {"name": 5, "stat": 5, "combatants": 5}}, 422, id="invalid"),
    pytest.param({"json": [1, 2]}, 422, id="not-an-object"),
    pytest.param({"content": MALFORMED, "headers": JSON}, 400, id="malformed"),
    pytest.param({"content": DEEP, "headers": JSON}, 422, id="too-deep"),
    pytest.param(
        {"content": b"name=x", "headers": {"Content-Type": "application/x-www-form-urlencoded"}}, 415, id="form"
    ),
]


@pytest.mark.parametrize("request_kw, gm_status", BAD_BODIES)
def test_a_player_is_refused_403_before_its_body_is_judged(client, table, request_kw, gm_status):
    for method, path in _gm_routes(table):
        headers = request_kw.get("headers", {})
        kw = {k: v for k, v in request_kw.items() if k != "headers"}
        r = client.request(method, path, headers={**headers, **table["player"]}, **kw)
        assert_problem(r, 403, "forbidden")
        r = client.request(method, path, headers={**headers, **table["gm"]}, **kw)
        assert r.status_code == gm_status, (method, path, r.text)


@pytest.mark.parametrize("request_kw, gm_status", BAD_BODIES)
def test_another_campaign_is_refused_404_and_no_token_401_before_the_body(client, table, request_kw, gm_status):
    hero = table["hero"]["id"]
    for method, path in [
        *_gm_routes(table),
        ("POST", f"/v1/characters/{hero}/tests"),
        ("PATCH", f"/v1/characters/{hero}"),
        ("POST", f"/v1/characters/{'0' * 32}/tests"),
    ]:
        headers = request_kw.get("headers", {})
        kw = {k: v for k, v in request_kw.items() if k != "headers"}
        assert_problem(client.request(method, path, headers={**headers, **table["other_gm"]}, **kw), 404, "not-found")
        assert_problem(client.request(method, path, headers=headers, **kw), 401, "unauthorized")
        assert_problem(client.request(method, path, headers={**headers, **bearer("nope")}, **kw), 401, "unauthorized")


def test_a_player_not_owning_the_character_is_refused_403_before_its_body(client, table):
    url = f"/v1/characters/{table['hero']['id']}/tests"
    for kw, status in (({"json": [1]}, 422), ({"content": MALFORMED}, 400), ({"json": {"stat": 5}}, 422)):
        assert_problem(client.post(url, headers={**JSON, **table["player"]}, **kw), 403, "forbidden")
        assert client.post(url, headers={**JSON, **table["owner"]}, **kw).status_code == status  # the owner's own 4xx


def test_an_oversized_body_is_refused_413_before_anything(client, table):
    """Documented exception: the size bound protects the server, so it answers first."""
    r = client.post(f"/v1/campaigns/{table['camp'].id}/rolls", content=b"x" * 1_100_000, headers=JSON)
    assert_problem(r, 413, "payload-too-large")


# --- item 8: not JSON, malformed JSON, located problems, unknown paths and methods --------------------


@pytest.mark.parametrize(
    "content, media_type",
    [
        (b"expression=d6", "application/x-www-form-urlencoded"),
        (b"d6", "text/plain"),
        (b"expression: d6", None),
        (b'{"expression": "d6"}', "text/plain"),
    ],
)
def test_a_body_that_is_not_json_is_a_415_naming_json(client, table, content, media_type):
    headers = {**table["gm"], **({"Content-Type": media_type} if media_type else {})}
    r = client.post(f"/v1/campaigns/{table['camp'].id}/rolls", content=content, headers=headers)
    body = assert_problem(r, 415, "unsupported-media-type")
    assert "application/json" in body["detail"] and body["accepted"] == ["application/json"]


def test_json_without_content_type_is_read_as_json(client, table):
    r = client.post(f"/v1/campaigns/{table['camp'].id}/rolls", content=b'{"expression": "d6"}', headers=table["gm"])
    assert r.status_code == 201, r.text


def test_malformed_json_is_a_400_with_the_parsers_message_and_position(client, table):
    r = client.post(f"/v1/characters/{table['hero']['id']}/tests", content=MALFORMED, headers={**JSON, **table["gm"]})
    body = assert_problem(r, 400, "malformed-json")
    assert body["detail"] == "the body is not valid JSON: Expecting ',' delimiter: line 1 column 18"
    assert (body["line"], body["column"]) == (1, 18)


def test_header_and_query_problems_are_located_there(client, table):
    cid, gm = table["camp"].id, table["gm"]
    key = {**gm, "Idempotency-Key": "k-1"}
    assert client.post(f"/v1/campaigns/{cid}/rolls", json={"expression": "d6"}, headers=key).status_code == 201
    r = client.post(f"/v1/campaigns/{cid}/rolls", json={"expression": "d8"}, headers=key)
    assert_validation(r, [["header", "Idempotency-Key"]])
    assert_validation(
        client.get(f"/v1/campaigns/{cid}/rolls", params={"cursor": "garbage"}, headers=gm), [["query", "cursor"]]
    )
    assert_validation(
        client.get(f"/v1/campaigns/{cid}/players", params={"cursor": "garbage"}, headers=gm), [["query", "cursor"]]
    )
    r = client.patch(f"/v1/campaigns/{cid}", json={"name": "x"}, headers={**gm, "If-Match": '"1"' * 100})
    assert_validation(r, [["header", "If-Match"]])


def test_unknown_paths_and_methods_are_problems_that_help(client, table):
    body = assert_problem(client.get("/v1/campagnes"), 404, "no-route")
    assert "/openapi.json" in body["detail"] and "/v1/campagnes" in body["detail"]
    r = client.put(f"/v1/campaigns/{table['camp'].id}", json={}, headers=table["gm"])
    body = assert_problem(r, 405, "method-not-allowed")
    assert r.headers["Allow"] == "DELETE, GET, PATCH"
    assert body["detail"].startswith("PUT is not allowed") and "DELETE, GET, PATCH" in body["detail"]
    r = client.delete("/v1/rulesets")
    assert assert_problem(r, 405, "method-not-allowed") and r.headers["Allow"] == "GET"


# --- item 9: If-None-Match → 304 ---------------------------------------------------------------------


def test_if_none_match_on_every_get_with_an_etag(client, table):
    gm = table["gm"]
    for path in (
        f"/v1/campaigns/{table['camp'].id}",
        f"/v1/characters/{table['hero']['id']}",
        f"/v1/encounters/{table['encounter']['id']}",
    ):
        first = client.get(path, headers=gm)
        tag = first.headers["ETag"]
        assert first.status_code == 200 and re.fullmatch(r'"\d+"', tag)
        for sent in (tag, f"W/{tag}", f'"999", {tag}', "*"):
            r = client.get(path, headers={**gm, "If-None-Match": sent})
            assert r.status_code == 304, (path, sent, r.text)
            assert r.content == b"" and r.headers["ETag"] == tag
        stale = client.get(path, headers={**gm, "If-None-Match": '"999"'})
        assert stale.status_code == 200 and stale.json() == first.json()
        # another campaign's token is still a 404, not a 304
        assert client.get(path, headers={**table["other_gm"], "If-None-Match": tag}).status_code == 404


# --- item 10: X-Request-Id ---------------------------------------------------------------------------


def test_request_id_echoed_when_sane_generated_otherwise(client, table):
    r = client.get("/healthz", headers={"X-Request-Id": "vtt-7f3a.42"})
    assert r.headers["X-Request-Id"] == "vtt-7f3a.42"
    assert re.fullmatch(r"[0-9a-f]{32}", client.get("/healthz").headers["X-Request-Id"])
    for insane in ("x" * 65, "a b", "<script>", "é"):
        got = client.get("/healthz", headers={"X-Request-Id": insane.encode()}).headers["X-Request-Id"]
        assert re.fullmatch(r"[0-9a-f]{32}", got), insane


def test_every_problem_body_names_the_request_id(client, table):
    cid = table["camp"].id
    for r, status in [
        (client.get("/nowhere", headers={"X-Request-Id": "req-1"}), 404),
        (client.get(f"/v1/campaigns/{cid}", headers={"X-Request-Id": "req-2"}), 401),
        (client.post(f"/v1/campaigns/{cid}/rolls", content=b"x" * 1_100_000, headers={"X-Request-Id": "req-3"}), 413),
        (
            client.post(
                f"/v1/campaigns/{cid}/rolls",
                json={"expression": "zz"},
                headers={**table["gm"], "X-Request-Id": "req-4"},
            ),
            422,
        ),
        (client.get(f"/v1/campaigns/{cid}"), 401),
    ]:
        assert r.status_code == status, r.text
        assert r.json()["request_id"] == r.headers["X-Request-Id"]
        assert int(r.headers["content-length"]) == len(r.content)
    assert [client.get("/nowhere", headers={"X-Request-Id": f"req-{i}"}).json()["request_id"] for i in (5, 6)] == [
        "req-5",
        "req-6",
    ]


@pytest.fixture
def served(database_url, engine, tmp_path):
    """`python -m app serve` (the service's own logging) on the test database; its log file."""
    url = database_url if database_url.startswith("postgres") else f"sqlite:///{tmp_path / 'served.db'}"
    port, log = free_port(), tmp_path / "serve.log"
    env = {**os.environ, "DATABASE_URL": url, "ADMIN_TOKEN": "", "RATE_LIMIT_PER_MINUTE": "0"}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "app", "serve", "--port", str(port)],
            cwd=Path(__file__).parents[2],
            env=env,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    created: list[str] = []
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            try:
                if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield base, log, created
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
        if url.startswith("postgres") and created:
            purge_campaigns(engine, created)


def test_the_log_line_of_a_request_names_its_id_and_never_its_token(served):
    base, log, created = served
    with httpx.Client(base_url=base, timeout=10) as http:
        r = http.post("/v1/campaigns", json={"name": "Logged", "ruleset": GC}, headers={"X-Request-Id": "create-1"})
        created.append(r.json()["id"])
        token = r.json()["gm_token"]
        r = http.get(f"/v1/campaigns/{created[0]}", headers={**bearer(token), "X-Request-Id": "read-2"})
        assert r.status_code == 200
        r = http.get("/v1/campaigns/nope", headers={**bearer(token), "X-Request-Id": "miss-3"})
        assert r.status_code == 404 and r.json()["request_id"] == "miss-3"
    deadline = time.monotonic() + 5
    while "miss-3" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    lines = log.read_text().splitlines()
    for request_id, line_part in (
        ("create-1", '"POST /v1/campaigns HTTP/1.1" 201'),
        ("read-2", f'"GET /v1/campaigns/{created[0]} HTTP/1.1" 200'),
        ("miss-3", '"GET /v1/campaigns/nope HTTP/1.1" 404'),
    ):
        assert [line for line in lines if f"[{request_id}]" in line and line_part in line], (request_id, lines)
    assert token not in log.read_text() and token.split("_", 1)[1] not in log.read_text()


def test_issue21_item12_the_access_log_never_carries_a_stream_ticket(served):
    base, log, created = served
    with httpx.Client(base_url=base, timeout=10) as http:
        r = http.post("/v1/campaigns", json={"name": "Tickets", "ruleset": GC})
        created.append(r.json()["id"])
        token = r.json()["gm_token"]
        r = http.post(f"/v1/campaigns/{created[0]}/events/tickets", headers=bearer(token))
        ticket = r.json()["ticket"]
        r = http.get(
            f"/v1/campaigns/{created[0]}/events",
            params={"ticket": ticket, "follow": "false"},
            headers={"X-Request-Id": "stream-1"},
        )
        assert r.status_code == 200, r.text
        r = http.get(
            f"/v1/campaigns/{created[0]}/events",
            params={"follow": "false", "ticket": "st_guess"},
            headers={"X-Request-Id": "stream-2"},
        )
        assert r.status_code == 401, r.text
    deadline = time.monotonic() + 5
    while "stream-2" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    text = log.read_text()
    line = [line for line in text.splitlines() if "[stream-1]" in line and "/events?" in line]
    assert line and "ticket=[redacted]" in line[0] and "follow=false" in line[0], text
    assert ticket not in text and ticket.split("_", 1)[1] not in text and "st_guess" not in text
