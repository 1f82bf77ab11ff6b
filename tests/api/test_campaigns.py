"""HTTP tests of campaigns, players, authentication and the system routes (issue #2)."""

from __future__ import annotations


from typing import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from app.core.security import hash_token
from app.main import create_app

from tests.api.support import assert_problem, bearer
from tests.factories import GC, GC_MINIMAL

GC_DEFAULTS = {
    "players_may_enter_dice": False,
    "extreme_scores": False,
    "inventory_rules": True,
    "movement_rules": True,
    "turn_order_rules": True,
    "sepulchral_damage_multiplier": 3.0,
    "backlash_damage_multiplier": 0.5,
    "backlash_after_turns": 2,
}


@pytest.fixture
def player(campaign, player_factory):
    return player_factory(campaign)


# --- creation and the GM token ------------------------------------------------------------


def test_create_returns_201_with_the_gm_token_once(client, count_rows):
    r = client.post("/v1/campaigns", json={"name": "Les étoiles", "ruleset": GC})
    assert r.status_code == 201, r.text
    created = r.json()
    assert set(created) == {"id", "name", "ruleset", "options", "version", "created_at", "role", "gm_token", "metadata"}
    assert created["name"] == "Les étoiles"
    assert created["ruleset"] == GC
    assert created["role"] == "gm"
    assert created["version"] == 1
    assert r.headers["etag"] == '"1"'
    assert created["gm_token"].startswith("gm_")
    assert count_rows("campaign", id=created["id"]) == 1
    assert count_rows("credential", campaign_id=created["id"]) == 1

    r = client.get(f"/v1/campaigns/{created['id']}", headers=bearer(created["gm_token"]))
    assert r.status_code == 200, r.text
    read = r.json()
    assert "gm_token" not in read
    assert created["gm_token"] not in r.text
    assert read == {k: v for k, v in created.items() if k != "gm_token"}
    assert r.headers["etag"] == '"1"'


def test_tokens_are_stored_hashed(client, campaign, player, db_session):
    rows = (
        db_session.connection()
        .execute(text("SELECT * FROM credential WHERE campaign_id = :c"), {"c": campaign.id})
        .mappings()
        .all()
    )
    assert len(rows) == 2
    for raw in (campaign.gm_token, player.token):
        assert all(raw not in str(value) for row in rows for value in row.values())
    assert {row["token_hash"] for row in rows} == {hash_token(campaign.gm_token), hash_token(player.token)}
    assert {row["role"] for row in rows} == {"gm", "player"}
    # nowhere else either: no table holds the raw token
    for table in ("campaign", "player"):
        dump = str(db_session.connection().execute(text(f"SELECT * FROM {table}")).all())
        assert campaign.gm_token not in dump and player.token not in dump


def test_unknown_ruleset_is_a_422(client, count_rows):
    before = count_rows("campaign")
    r = client.post("/v1/campaigns", json={"name": "X", "ruleset": "dnd5e"})
    body = assert_problem(r, 422, "validation-error")
    assert body["errors"] == [{"loc": ["body", "ruleset"], "msg": body["detail"]}]
    assert "dnd5e" in body["detail"]
    assert count_rows("campaign") == before


def test_the_four_rulesets_are_accepted(client):
    for ruleset in ("great-cosmos", "asgard", "rulebook-d100", "worlds-awakening"):
        r = client.post("/v1/campaigns", json={"name": "X", "ruleset": ruleset})
        assert r.status_code == 201, (ruleset, r.text)
        assert r.json()["options"]["players_may_enter_dice"] is False


def test_missing_name_and_extra_field_are_422(client):
    r = client.post("/v1/campaigns", json={"ruleset": GC})
    body = assert_problem(r, 422, "validation-error")
    assert [e["loc"] for e in body["errors"]] == [["body", "name"]]
    r = client.post("/v1/campaigns", json={"name": "X", "ruleset": GC, "gm": "me"})
    body = assert_problem(r, 422, "validation-error")
    assert [e["loc"] for e in body["errors"]] == [["body", "gm"]]


# --- options -------------------------------------------------------------------------------


def test_options_defaults_are_filled(campaign):
    assert campaign.body["options"] == GC_DEFAULTS


def test_unknown_option_is_a_422_naming_it(client, count_rows):
    before = count_rows("campaign")
    r = client.post("/v1/campaigns", json={"name": "X", "ruleset": GC, "options": {"flying_cars": True}})
    body = assert_problem(r, 422, "validation-error")
    assert [e["loc"] for e in body["errors"]] == [["body", "options", "flying_cars"]]
    assert "flying_cars" in body["detail"]
    assert count_rows("campaign") == before


def test_option_of_another_ruleset_is_refused(client):
    # asgard's options are not great-cosmos's: validated per ruleset
    r = client.get("/v1/rulesets/asgard")
    assert r.status_code == 200
    asgard_only = sorted(set(r.json()["options"]["defaults"]) - set(GC_DEFAULTS))
    assert asgard_only, "asgard should have an option great-cosmos lacks"
    name = asgard_only[0]
    value = r.json()["options"]["defaults"][name]
    r = client.post("/v1/campaigns", json={"name": "X", "ruleset": GC, "options": {name: value}})
    body = assert_problem(r, 422, "validation-error")
    assert [e["loc"] for e in body["errors"]] == [["body", "options", name]]
    r = client.post("/v1/campaigns", json={"name": "X", "ruleset": "asgard", "options": {name: value}})
    assert r.status_code == 201, r.text


def test_option_of_wrong_type_is_a_422(client):
    r = client.post("/v1/campaigns", json={"name": "X", "ruleset": GC, "options": {"backlash_after_turns": "many"}})
    body = assert_problem(r, 422, "validation-error")
    assert [e["loc"] for e in body["errors"]] == [["body", "options", "backlash_after_turns"]]


def test_valid_option_round_trips(client, campaign_factory):
    c = campaign_factory(GC, options={"players_may_enter_dice": True, "backlash_after_turns": 5})
    assert c.body["options"] == {**GC_DEFAULTS, "players_may_enter_dice": True, "backlash_after_turns": 5}
    r = client.get(f"/v1/campaigns/{c.id}", headers=c.gm)
    assert r.status_code == 200
    assert r.json()["options"] == c.body["options"]


def test_gm_patch_changes_options_and_name(client, campaign):
    r = client.patch(f"/v1/campaigns/{campaign.id}", json={"options": {"extreme_scores": True}}, headers=campaign.gm)
    assert r.status_code == 200, r.text
    assert r.json()["options"] == {**GC_DEFAULTS, "extreme_scores": True}
    assert r.json()["version"] == 2
    assert r.headers["etag"] == '"2"'
    # merged: a second patch keeps the first
    r = client.patch(
        f"/v1/campaigns/{campaign.id}",
        json={"name": "Renamed", "options": {"players_may_enter_dice": True}},
        headers=campaign.gm,
    )
    assert r.status_code == 200, r.text
    assert r.json()["options"] == {**GC_DEFAULTS, "extreme_scores": True, "players_may_enter_dice": True}
    assert r.json()["name"] == "Renamed"
    assert r.json()["version"] == 3
    r = client.get(f"/v1/campaigns/{campaign.id}", headers=campaign.gm)
    assert r.json()["options"] == {**GC_DEFAULTS, "extreme_scores": True, "players_may_enter_dice": True}
    assert r.json()["name"] == "Renamed"


def test_patch_with_unknown_option_is_a_422_and_changes_nothing(client, campaign):
    r = client.patch(
        f"/v1/campaigns/{campaign.id}", json={"options": {"extreme_scores": True, "nope": 1}}, headers=campaign.gm
    )
    body = assert_problem(r, 422, "validation-error")
    assert [e["loc"] for e in body["errors"]] == [["body", "options", "nope"]]
    r = client.get(f"/v1/campaigns/{campaign.id}", headers=campaign.gm)
    assert r.json()["options"] == GC_DEFAULTS
    assert r.json()["version"] == 1


def test_player_patch_is_a_403(client, campaign, player):
    r = client.patch(
        f"/v1/campaigns/{campaign.id}", json={"options": {"players_may_enter_dice": True}}, headers=player.headers
    )
    assert_problem(r, 403, "forbidden")
    r = client.get(f"/v1/campaigns/{campaign.id}", headers=player.headers)
    assert r.status_code == 200
    assert r.json()["options"] == GC_DEFAULTS
    assert r.json()["role"] == "player"


# --- admin token -----------------------------------------------------------------------------


@pytest.fixture
def admin_client(settings, db_session) -> Iterator[TestClient]:
    application = create_app(settings.model_copy(update={"admin_token": "s3cret"}))
    with TestClient(application, raise_server_exceptions=False) as c:
        yield c


def test_admin_token_configured_refuses_campaign_creation_without_it(admin_client, count_rows):
    before = count_rows("campaign")
    for headers in ({}, bearer("wrong"), {"Authorization": "Basic czNjcmV0"}):
        r = admin_client.post("/v1/campaigns", json={"name": "X", "ruleset": GC}, headers=headers)
        assert_problem(r, 401, "unauthorized")
    assert count_rows("campaign") == before


def test_admin_token_configured_accepts_it(admin_client):
    r = admin_client.post("/v1/campaigns", json={"name": "X", "ruleset": GC}, headers=bearer("s3cret"))
    assert r.status_code == 201, r.text


def test_without_admin_token_anyone_creates(client):
    r = client.post("/v1/campaigns", json={"name": "X", "ruleset": GC})
    assert r.status_code == 201


# --- players ---------------------------------------------------------------------------------


def test_gm_adds_players_and_lists_them(client, campaign, count_rows):
    r = client.post(f"/v1/campaigns/{campaign.id}/players", json={"name": "Alice"}, headers=campaign.gm)
    assert r.status_code == 201, r.text
    alice = r.json()
    assert set(alice) == {"id", "campaign_id", "name", "created_at", "token"}
    assert alice["token"].startswith("pl_")
    r = client.post(f"/v1/campaigns/{campaign.id}/players", json={"name": "Bob"}, headers=campaign.gm)
    bob = r.json()
    assert count_rows("player", campaign_id=campaign.id) == 2
    for headers in (campaign.gm, bearer(alice["token"])):
        r = client.get(f"/v1/campaigns/{campaign.id}/players", headers=headers)
        assert r.status_code == 200, r.text
        assert r.json() == {
            "items": [{k: v for k, v in p.items() if k != "token"} for p in (alice, bob)],
            "next_cursor": None,
        }
        assert alice["token"] not in r.text


def test_player_token_reads_the_campaign(client, campaign, player):
    r = client.get(f"/v1/campaigns/{campaign.id}", headers=player.headers)
    assert r.status_code == 200
    assert r.json()["id"] == campaign.id


# --- authentication ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer "},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Token abc"},
        {"Authorization": "gm_abc"},
        {"Authorization": "Bearer not-a-token"},
        {"Authorization": "Bearer gm_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
    ],
)
def test_missing_malformed_or_unknown_token_is_a_401(client, campaign, headers):
    for method, path in (
        ("GET", f"/v1/campaigns/{campaign.id}"),
        ("GET", f"/v1/campaigns/{campaign.id}/characters"),
        ("GET", f"/v1/campaigns/{campaign.id}/rolls"),
        ("GET", f"/v1/campaigns/{campaign.id}/players"),
        ("POST", f"/v1/campaigns/{campaign.id}/players"),
    ):
        r = client.request(method, path, headers=headers, json={"name": "Eve"} if method == "POST" else None)
        assert_problem(r, 401, "unauthorized")
        assert r.headers["www-authenticate"] == "Bearer"


def test_a_token_of_another_campaign_sees_404(client, campaign_factory, character_factory, count_rows):
    mine = campaign_factory(GC, name="Mine")
    other = campaign_factory(GC, name="Other")
    hero = character_factory(other, GC_MINIMAL)
    r = client.post(f"/v1/campaigns/{other.id}/rolls", json={"expression": "d6", "dice": [3]}, headers=other.gm)
    assert r.status_code == 201
    entry = r.json()
    for method, path, body in (
        ("GET", f"/v1/campaigns/{other.id}", None),
        ("PATCH", f"/v1/campaigns/{other.id}", {"name": "hijacked"}),
        ("GET", f"/v1/campaigns/{other.id}/players", None),
        ("POST", f"/v1/campaigns/{other.id}/players", {"name": "Eve"}),
        ("GET", f"/v1/campaigns/{other.id}/characters", None),
        ("POST", f"/v1/campaigns/{other.id}/characters", {"name": "X", "kind": "pc", "sheet": GC_MINIMAL}),
        ("GET", f"/v1/characters/{hero['id']}", None),
        ("PATCH", f"/v1/characters/{hero['id']}", {"name": "hijacked"}),
        ("DELETE", f"/v1/characters/{hero['id']}", None),
        ("POST", f"/v1/characters/{hero['id']}/tests", {"stat": "force", "dice": [50]}),
        ("GET", f"/v1/campaigns/{other.id}/rolls", None),
        ("GET", f"/v1/campaigns/{other.id}/rolls/{entry['id']}", None),
        ("POST", f"/v1/campaigns/{other.id}/rolls", {"expression": "d6", "dice": [3]}),
    ):
        r = client.request(method, path, headers=mine.gm, json=body)
        assert_problem(r, 404, "not-found")
    assert count_rows("roll_log", campaign_id=other.id) == 1
    assert count_rows("player", campaign_id=other.id) == 0
    assert count_rows("character", campaign_id=other.id) == 1
    r = client.get(f"/v1/characters/{hero['id']}", headers=other.gm)
    assert r.json()["name"] == "Hero" and r.json()["version"] == 1


def test_unknown_campaign_is_a_404(client, campaign):
    r = client.get("/v1/campaigns/0123456789abcdef0123456789abcdef", headers=campaign.gm)
    assert_problem(r, 404, "not-found")


# --- system -----------------------------------------------------------------------------------------


def test_healthz(client):
    r = client.get("/healthz")
    assert r.status_code == 200
    assert r.json() == {"status": "ok"}


def test_readyz(client):
    r = client.get("/readyz")
    assert r.status_code == 200
    assert r.json() == {"status": "ready"}


@pytest.mark.parametrize("path, schema, status", [("/healthz", "Health", "ok"), ("/readyz", "Readiness", "ready")])
def test_the_probes_declare_their_typed_bodies(client, path, schema, status):
    spec = client.get("/openapi.json").json()
    declared = spec["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert declared == {"$ref": f"#/components/schemas/{schema}"}
    body = spec["components"]["schemas"][schema]
    assert body["required"] == ["status"] and body["properties"]["status"]["const"] == status


def test_rulesets_catalogue_lists_the_four(client):
    r = client.get("/v1/rulesets")
    assert r.status_code == 200
    assert [x["id"] for x in r.json()["items"]] == ["great-cosmos", "asgard", "rulebook-d100", "worlds-awakening"]
    assert r.json()["next_cursor"] is None
    r = client.get("/v1/rulesets/great-cosmos")
    assert r.status_code == 200
    assert r.json()["options"]["defaults"] == GC_DEFAULTS


# --- If-Match on campaigns, paginated players (were missing) ------------------------------------------


def test_campaign_patch_with_stale_if_match_is_a_412(client, campaign):
    r = client.patch(f"/v1/campaigns/{campaign.id}", json={"name": "v2"}, headers=campaign.gm)
    assert r.status_code == 200 and r.headers["etag"] == '"2"'
    r = client.patch(f"/v1/campaigns/{campaign.id}", json={"name": "stale"}, headers={**campaign.gm, "If-Match": '"1"'})
    assert_problem(r, 412, "precondition-failed")
    r = client.get(f"/v1/campaigns/{campaign.id}", headers=campaign.gm)
    assert (r.json()["name"], r.json()["version"]) == ("v2", 2)


def test_campaign_patch_with_current_if_match(client, campaign):
    r = client.patch(f"/v1/campaigns/{campaign.id}", json={"name": "v2"}, headers={**campaign.gm, "If-Match": '"1"'})
    assert r.status_code == 200, r.text
    assert r.json()["version"] == 2


def test_players_list_is_paginated(client, campaign, player_factory):
    for name in ("A", "B", "C"):
        player_factory(campaign, name)
    r = client.get(f"/v1/campaigns/{campaign.id}/players", params={"limit": 2}, headers=campaign.gm)
    assert r.status_code == 200
    assert [p["name"] for p in r.json()["items"]] == ["A", "B"]
    assert r.json()["next_cursor"] is not None
