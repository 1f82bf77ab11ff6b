"""HTTP tests of bad input: every refusal is problem+json (RFC 9457), never a 500 (issue #2)."""

from __future__ import annotations


import base64
import json
from typing import Iterator

import pytest
from fastapi.testclient import TestClient

from app.main import create_app

from tests.api.support import PROBLEM, assert_problem, assert_validation
from tests.factories import GC, GC_MINIMAL

JSON = {"Content-Type": "application/json"}


@pytest.fixture
def routes(campaign, hero):
    """(method, path) of every route taking a JSON body, with the GM's headers."""
    return [
        ("POST", "/v1/campaigns"),
        ("PATCH", f"/v1/campaigns/{campaign.id}"),
        ("POST", f"/v1/campaigns/{campaign.id}/players"),
        ("POST", f"/v1/campaigns/{campaign.id}/characters"),
        ("PATCH", f"/v1/characters/{hero['id']}"),
        ("POST", f"/v1/campaigns/{campaign.id}/rolls"),
        ("POST", f"/v1/characters/{hero['id']}/tests"),
        ("POST", f"/v1/characters/{hero['id']}/tests/odds"),
        ("POST", f"/v1/characters/{hero['id']}/level-ups"),
    ]


# --- malformed bodies -------------------------------------------------------------------------------


def test_malformed_json_is_a_400_everywhere(client, campaign, routes, count_rows):
    """Issue 14 item 8: the parser's message and position (it was a 422 `JSON decode error`)."""
    for method, path in routes:
        r = client.request(method, path, content=b'{"name": "x", ', headers={**campaign.gm, **JSON})
        body = assert_problem(r, 400, "malformed-json")
        assert body["detail"].endswith("line 1 column 15") and (body["line"], body["column"]) == (1, 15)
    assert count_rows("roll_log", campaign_id=campaign.id) == 0


@pytest.mark.parametrize("payload", [b"[1, 2]", b'"a string"', b"42", b"null", b"true"])
def test_a_json_that_is_not_an_object_is_a_422_everywhere(client, campaign, routes, payload):
    for method, path in routes:
        r = client.request(method, path, content=payload, headers={**campaign.gm, **JSON})
        assert_validation(r, [["body"]])


def test_empty_body_is_a_422(client, campaign):
    r = client.post(f"/v1/campaigns/{campaign.id}/rolls", content=b"", headers={**campaign.gm, **JSON})
    assert_validation(r, [["body"]])


def test_non_json_content_type_is_a_415(client, campaign):
    r = client.post(
        f"/v1/campaigns/{campaign.id}/rolls",
        content=b"expression=d6",
        headers={**campaign.gm, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert "application/json" in assert_problem(r, 415, "unsupported-media-type")["detail"]


@pytest.mark.parametrize("payload", [b'{"expression": "\xff\xfe"}', b"\xff\xfe\xfd", b'{"expression": "d6\xc3"}'])
def test_non_utf8_bytes_are_a_400(client, campaign, payload, count_rows):
    r = client.post(f"/v1/campaigns/{campaign.id}/rolls", content=payload, headers={**campaign.gm, **JSON})
    assert_problem(r, 400, "bad-request")
    assert count_rows("roll_log", campaign_id=campaign.id) == 0


def test_too_deep_json_is_refused_not_a_500(client, campaign):
    deep = b'{"name": "x", "sheet": {"skills": [' + b"[" * 5000 + b"]" * 5000 + b"]}}"
    r = client.post(f"/v1/campaigns/{campaign.id}/characters", content=deep, headers={**campaign.gm, **JSON})
    assert "32" in assert_validation(r, [["body"]])["errors"][0]["msg"]  # the depth bound (issue 10, item 4)


# --- wrong types, bounds and unknown fields ----------------------------------------------------------


@pytest.mark.parametrize(
    "body, locs",
    [
        ({"name": 5, "ruleset": GC}, [["body", "name"]]),
        ({"name": "x", "ruleset": ["great-cosmos"]}, [["body", "ruleset"]]),
        ({"name": "x", "ruleset": GC, "options": [1]}, [["body", "options"]]),
        ({"name": "", "ruleset": GC}, [["body", "name"]]),
        ({"name": "x" * 201, "ruleset": GC}, [["body", "name"]]),
        (
            {"name": "x", "ruleset": GC, "options": {"players_may_enter_dice": "perhaps"}},
            [["body", "options", "players_may_enter_dice"]],
        ),
    ],
)
def test_campaign_wrong_types(client, body, locs):
    assert_validation(client.post("/v1/campaigns", json=body), locs)


@pytest.mark.parametrize(
    "body, locs",
    [
        ({"stat": 5, "dice": [50]}, [["body", "stat"]]),
        ({"stat": "force", "dice": "50"}, [["body", "dice"]]),
        ({"stat": "force", "dice": [50.5]}, [["body", "dice", 0]]),
        ({"stat": "force", "dice": [50], "modifier": "easy"}, [["body", "modifier"]]),
        ({"stat": "force", "dice": [50], "hidden": "maybe"}, [["body", "hidden"]]),
        ({"stat": "strength", "dice": [50]}, [["body", "stat"]]),
        ({"dice": [50]}, [["body", "stat"]]),
    ],
)
def test_test_wrong_types(client, campaign, hero, body, locs, count_rows):
    r = client.post(f"/v1/characters/{hero['id']}/tests", json=body, headers=campaign.gm)
    assert_validation(r, locs)
    assert count_rows("roll_log", campaign_id=campaign.id) == 0


@pytest.mark.parametrize(
    "field, value", [("modifier", 10**30), ("modifier", 1001), ("modifier", -1001), ("seed", 2**64), ("seed", -(2**64))]
)
def test_huge_ints_are_a_422(client, campaign, hero, field, value, count_rows):
    body = {"stat": "force", field: value}
    r = client.post(f"/v1/characters/{hero['id']}/tests", json=body, headers=campaign.gm)
    assert_validation(r, [["body", field]])
    assert count_rows("roll_log", campaign_id=campaign.id) == 0


def test_huge_ints_in_a_sheet_are_a_422(client, campaign, count_rows):
    for sheet, loc in (
        ({**GC_MINIMAL, "hp_max": 10**400}, ["body", "sheet", "hp_max"]),
        ({**GC_MINIMAL, "level": 2**63}, ["body", "sheet", "level"]),
        ({**GC_MINIMAL, "stats": {**GC_MINIMAL["stats"], "chance": -(10**30)}}, ["body", "sheet", "stats", "chance"]),
    ):
        r = client.post(
            f"/v1/campaigns/{campaign.id}/characters", json={"name": "x", "sheet": sheet}, headers=campaign.gm
        )
        assert_validation(r, [loc])
    assert count_rows("character", campaign_id=campaign.id) == 0


def test_an_int_of_thousands_of_digits_is_refused_not_a_500(client, campaign, hero):
    payload = b'{"stat": "force", "modifier": ' + b"9" * 5000 + b"}"
    r = client.post(f"/v1/characters/{hero['id']}/tests", content=payload, headers={**campaign.gm, **JSON})
    assert_problem(r, 400, "bad-request")


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"1e400"])
def test_non_finite_numbers_are_a_422(client, campaign, hero, literal):
    payload = b'{"stat": "force", "modifier": ' + literal + b"}"
    r = client.post(f"/v1/characters/{hero['id']}/tests", content=payload, headers={**campaign.gm, **JSON})
    assert_validation(r, [["body", "modifier"]])


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"1e400"])
def test_non_finite_option_is_a_422(client, campaign, literal):
    payload = b'{"options": {"sepulchral_damage_multiplier": ' + literal + b"}}"
    r = client.patch(f"/v1/campaigns/{campaign.id}", content=payload, headers={**campaign.gm, **JSON})
    assert_validation(r, [["body", "options", "sepulchral_damage_multiplier"]])


def test_non_finite_number_in_a_free_sheet_field_never_reaches_the_response(client, campaign):
    payload = (
        ('{"name": "x", "sheet": ' + json.dumps({**GC_MINIMAL, "skills": [{"name": "tir"}]})[:-1] + ', "notes": "n"}}')
        .replace('{"name": "tir"}', '{"name": "tir", "bonus": NaN}')
        .encode()
    )
    r = client.post(f"/v1/campaigns/{campaign.id}/characters", content=payload, headers={**campaign.gm, **JSON})
    assert r.status_code == 201, r.text  # a free field is not typed (the typed ones: a 422 above)
    json.loads(r.text)  # a strict JSON document (no NaN literal)
    assert "NaN" not in r.text


@pytest.mark.parametrize(
    "method, path_of, body, extra",
    [
        ("POST", lambda c, h: "/v1/campaigns", {"name": "x", "ruleset": GC, "owner": "me"}, "owner"),
        ("PATCH", lambda c, h: f"/v1/campaigns/{c.id}", {"ruleset": "asgard"}, "ruleset"),
        ("POST", lambda c, h: f"/v1/campaigns/{c.id}/players", {"name": "x", "token": "mine"}, "token"),
        (
            "POST",
            lambda c, h: f"/v1/campaigns/{c.id}/characters",
            {"name": "x", "sheet": GC_MINIMAL, "version": 9},
            "version",
        ),
        ("PATCH", lambda c, h: f"/v1/characters/{h['id']}", {"version": 9}, "version"),
        ("POST", lambda c, h: f"/v1/campaigns/{c.id}/rolls", {"expression": "d6", "total": 6}, "total"),
        ("POST", lambda c, h: f"/v1/characters/{h['id']}/tests", {"stat": "force", "target": 99}, "target"),
        (
            "POST",
            lambda c, h: f"/v1/characters/{h['id']}/tests/odds",
            {"stat": "force", "difficulty": "easy"},
            "difficulty",
        ),
        ("POST", lambda c, h: f"/v1/characters/{h['id']}/level-ups", {"chance_bonus_pool": "hp", "bonus": 1}, "bonus"),
    ],
)
def test_unknown_fields_are_a_422(client, campaign, hero, count_rows, method, path_of, body, extra):
    r = client.request(method, path_of(campaign, hero), json=body, headers=campaign.gm)
    b = assert_validation(r, [["body", extra]])
    assert "Extra inputs are not permitted" in b["errors"][0]["msg"]
    assert count_rows("roll_log", campaign_id=campaign.id) == 0
    r = client.get(f"/v1/campaigns/{campaign.id}", headers=campaign.gm)
    assert r.json()["ruleset"] == GC and r.json()["version"] == 1
    r = client.get(f"/v1/characters/{hero['id']}", headers=campaign.gm)
    assert r.json()["version"] == 1


def test_a_lone_surrogate_is_a_422(client, campaign):
    payload = b'{"name": "\\ud800", "ruleset": "great-cosmos"}'
    r = client.post("/v1/campaigns", content=payload, headers=JSON)
    assert_validation(r, [["body", "name"]])


def test_oversized_headers_are_a_422(client, campaign, hero):
    r = client.patch(f"/v1/characters/{hero['id']}", json={"name": "x"}, headers={**campaign.gm, "If-Match": "1" * 201})
    assert_validation(r, [["header", "If-Match"]])
    r = client.post(
        f"/v1/campaigns/{campaign.id}/rolls",
        json={"expression": "d6"},
        headers={**campaign.gm, "Idempotency-Key": "k" * 201},
    )
    assert_validation(r, [["header", "Idempotency-Key"]])


# --- cursors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cursor", ["!!!", "eDE", base64.urlsafe_b64encode(b"\xff\xfe").decode(), "x" * 501])
def test_bad_log_cursors_are_a_422(client, campaign, cursor):
    r = client.get(f"/v1/campaigns/{campaign.id}/rolls", params={"cursor": cursor}, headers=campaign.gm)
    assert_problem(r, 422, "validation-error")


def test_log_cursor_with_a_huge_sequence_is_a_422(client, campaign):
    for seq in (b"9" * 30, str(2**63).encode()):
        cursor = base64.urlsafe_b64encode(b"s" + seq).decode().rstrip("=")
        r = client.get(f"/v1/campaigns/{campaign.id}/rolls", params={"cursor": cursor}, headers=campaign.gm)
        assert_problem(r, 422, "validation-error")


@pytest.mark.parametrize(
    "cursor",
    [
        "!!!",
        base64.urlsafe_b64encode(b'["not a date", "x"]').decode(),
        base64.urlsafe_b64encode(b'{"a": 1}').decode(),
        base64.urlsafe_b64encode(b"[1, 2]").decode(),
    ],
)
def test_bad_character_cursors_are_a_422(client, campaign, cursor):
    r = client.get(f"/v1/campaigns/{campaign.id}/characters", params={"cursor": cursor}, headers=campaign.gm)
    assert_problem(r, 422, "validation-error")


# --- unknown paths and methods -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/web/missing.js", "/v1", "/v2/campaigns", "/v1/campaign", "/v1/rulesets/x/y", "/v1/characters/abc/unknown"],
)
def test_unknown_path_is_a_404(client, path):
    r = client.get(path)
    body = assert_problem(r, 404, "no-route")
    assert body["title"] == "Not found"


def test_unknown_ruleset_in_the_catalogue_is_a_404_problem(client):
    r = client.get("/v1/rulesets/dnd5e")
    assert r.status_code == 404, r.text
    assert r.headers["content-type"] == PROBLEM
    assert r.json()["status"] == r.status_code


@pytest.mark.parametrize(
    "method, path",
    [
        ("DELETE", "/v1/campaigns"),
        ("PUT", "/v1/campaigns"),
        ("GET", "/v1/campaigns"),
        ("POST", "/healthz"),
        ("DELETE", "/v1/rulesets"),
        ("PUT", "/v1/characters/x"),
    ],
)
def test_wrong_method_is_a_405(client, method, path):
    r = client.request(method, path)
    body = assert_problem(r, 405, "method-not-allowed")
    assert body["title"] == "Method not allowed"
    assert r.headers["allow"]


# --- body size limit -----------------------------------------------------------------------------------


@pytest.fixture
def small_client(settings, db_session) -> Iterator[TestClient]:
    application = create_app(settings.model_copy(update={"max_body_bytes": 1024}))
    with TestClient(application, raise_server_exceptions=False) as c:
        yield c


def test_a_body_over_the_size_limit_is_a_413(small_client, count_rows):
    big = {"name": "x" * 2000, "ruleset": GC}
    before = count_rows("campaign")
    r = small_client.post("/v1/campaigns", json=big)
    body = assert_problem(r, 413, "payload-too-large")
    assert body["title"] == "Payload too large"
    assert "1024" in body["detail"]
    assert count_rows("campaign") == before
    r = small_client.post("/v1/campaigns", json={"name": "x", "ruleset": GC})
    assert r.status_code == 201


def test_a_chunked_body_over_the_size_limit_is_a_413(small_client, count_rows):
    def chunks():
        yield b'{"name": "'
        for _ in range(10):
            yield b"x" * 500
        yield b'", "ruleset": "great-cosmos"}'

    before = count_rows("campaign")
    r = small_client.post("/v1/campaigns", content=chunks(), headers=JSON)
    assert_problem(r, 413, "payload-too-large")
    assert count_rows("campaign") == before


def test_a_lying_content_length_is_not_a_500(small_client):
    r = small_client.post(
        "/v1/campaigns",
        content=b'{"name": "x", "ruleset": "great-cosmos"}',
        headers={**JSON, "Content-Length": "not-a-number"},
    )
    assert r.status_code != 500


def test_the_default_limit_accepts_ordinary_bodies(client, campaign):
    sheet = {**GC_MINIMAL, "notes": "n" * 19000}
    r = client.post(f"/v1/campaigns/{campaign.id}/characters", json={"name": "x", "sheet": sheet}, headers=campaign.gm)
    assert r.status_code == 201, r.text


# --- NUL characters (PostgreSQL text cannot hold them: was a 500) ---------------------------------------


@pytest.mark.parametrize("what", ["campaign", "player", "character"])
def test_nul_in_a_name_is_a_422(client, campaign, what, count_rows):
    path = {
        "campaign": "/v1/campaigns",
        "player": f"/v1/campaigns/{campaign.id}/players",
        "character": f"/v1/campaigns/{campaign.id}/characters",
    }[what]
    body = {
        "name": "a\x00b",
        **({"ruleset": GC} if what == "campaign" else {}),
        **({"sheet": GC_MINIMAL} if what == "character" else {}),
    }
    r = client.post(path, json=body, headers=campaign.gm)
    assert_validation(r, [["body", "name"]])


@pytest.mark.parametrize(
    "case",
    ["character_path", "entry_path", "log_character_filter", "log_kind_filter", "roll_character_id", "player_id"],
)
def test_nul_in_ids_and_filters(client, campaign, case):
    """A NUL is a control character: a 422 naming its place (tests/api/test_control_characters.py)."""
    if case == "character_path":
        assert_validation(client.get("/v1/characters/a%00b", headers=campaign.gm), [["path", "character_id"]])
    elif case == "entry_path":
        r = client.get(f"/v1/campaigns/{campaign.id}/rolls/a%00b", headers=campaign.gm)
        assert_validation(r, [["path", "entry_id"]])
    elif case == "log_character_filter":
        r = client.get(f"/v1/campaigns/{campaign.id}/rolls", params={"character_id": "a\x00"}, headers=campaign.gm)
        assert_validation(r, [["query", "character_id"]])
    elif case == "log_kind_filter":
        r = client.get(f"/v1/campaigns/{campaign.id}/rolls", params={"kind": "a\x00"}, headers=campaign.gm)
        assert assert_problem(r, 422, "validation-error")["errors"][0]["loc"] == ["query", "kind"]
    elif case == "roll_character_id":
        r = client.post(
            f"/v1/campaigns/{campaign.id}/rolls",
            json={"expression": "d6", "character_id": "a\x00"},
            headers=campaign.gm,
        )
        assert_validation(r, [["body", "character_id"]])
    else:
        r = client.post(
            f"/v1/campaigns/{campaign.id}/characters",
            json={"name": "n", "player_id": "a\x00", "sheet": GC_MINIMAL},
            headers=campaign.gm,
        )
        assert_validation(r, [["body", "player_id"]])


def test_nul_inside_the_sheet_is_a_422_naming_its_place(client, campaign, count_rows):
    """No stored text holds NUL (PostgreSQL's cannot; SQLite's rows stay the same as PostgreSQL's)."""
    r = client.post(
        f"/v1/campaigns/{campaign.id}/characters",
        json={"name": "n", "sheet": {**GC_MINIMAL, "notes": "a\x00b"}},
        headers=campaign.gm,
    )
    assert_validation(r, [["body", "sheet", "notes"]])
    assert count_rows("character", campaign_id=campaign.id) == 0
