"""API.md round 4, "Input and views": a control character (U+0000–U+001F) in an id, a path
parameter or a query parameter is a 422 naming its place, on both databases — one rule at the
boundary (`app.api.boundary` for path and query, `app.models.fields.Id` for body ids), never a
statement's parameter (PostgreSQL answered a NUL in an action's ids with a 500)."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from fastapi.routing import APIRoute

from app.api.boundary import BoundaryRoute
from app.api.deps import CheckedRoute
from tests.api.support import assert_problem, assert_validation
from tests.conftest import make_character
from tests.factories import SHEETS, TEST_BODIES, gc_fighter
from tests.fixtures import Table, ids, table  # noqa: F401

CONTROLS = ["a\x00b", "a\x01", "\x1f", "line\nbreak", "tab\there"]


def started(t: Table) -> tuple[str, dict[str, str]]:
    hero = t.character("Hero", gc_fighter(), kind="pc", player=t.alice)
    foe = t.character("Foe", gc_fighter(40))
    s = t.encounter([{"character_id": hero}, {"character_id": foe}])
    t.start(s["id"], dice=[])
    return s["id"], ids(s)


@pytest.mark.parametrize("value", CONTROLS)
@pytest.mark.parametrize("route", ["actions", "actions/plan"])
@pytest.mark.parametrize("field", ["actor_id", "target_id"])
def test_a_control_character_in_an_actions_ids_is_a_422_naming_it(table, value, route, field):
    """The action's body is read ahead (its combatants with the encounter) before it is validated:
    such an id is not read ahead, and the body's validation names it."""
    t = table("great-cosmos")
    eid, n = started(t)
    body = {"type": "attack", "actor_id": n["Hero"], "target_id": n["Foe"], field: value}
    assert_validation(t.client.post(f"/v1/encounters/{eid}/{route}", json=body, headers=t.gm), [["body", field]])
    r = t.client.get(f"/v1/encounters/{eid}/choices", params={"combatant_id": value}, headers=t.gm)
    assert_validation(r, [["query", "combatant_id"]])
    assert t.state(eid)["version"] == 2  # nothing written


def test_a_control_character_in_a_setup_id_is_a_422_naming_it(table):
    t = table("great-cosmos")
    hero = t.character("Hero", gc_fighter(), kind="pc")
    r = t.client.post(
        f"/v1/campaigns/{t.c.id}/encounters",
        json={"name": "x", "combatants": [{"character_id": hero}, {"character_id": "a\x01b"}]},
        headers=t.gm,
    )
    assert_validation(r, [["body", "combatants", 1, "character_id"]])
    s = t.encounter([{"character_id": hero}])
    r = t.client.post(f"/v1/encounters/{s['id']}/combatants", json={"character_id": "\x00"}, headers=t.gm)
    assert_validation(r, [["body", "character_id"]])


@pytest.mark.parametrize("value", CONTROLS)
def test_a_control_character_in_a_body_id_outside_fights_is_a_422(client, campaign, value):
    r = client.post(
        f"/v1/campaigns/{campaign.id}/rolls", json={"expression": "d6", "character_id": value}, headers=campaign.gm
    )
    assert_validation(r, [["body", "character_id"]])
    r = client.post(
        f"/v1/campaigns/{campaign.id}/characters",
        json={"name": "n", "player_id": value, "sheet": gc_fighter()},
        headers=campaign.gm,
    )
    assert_validation(r, [["body", "player_id"]])


@pytest.mark.parametrize("value", CONTROLS)
def test_a_control_character_in_any_path_parameter_is_a_422_naming_it(table, value):
    t = table("great-cosmos")
    eid, n = started(t)
    hero = t.state(eid)["combatants"][0]["character_id"]
    bad = quote(value, safe="")
    cases = [
        ("GET", f"/v1/characters/{bad}", "character_id", None),
        ("POST", f"/v1/characters/{bad}/tests", "character_id", {"skill": "force"}),  # the direct call
        ("GET", f"/v1/encounters/{bad}", "encounter_id", None),
        ("POST", f"/v1/encounters/{bad}/actions", "encounter_id", {"type": "attack"}),  # the direct call
        ("PATCH", f"/v1/encounters/{eid}/combatants/{bad}", "combatant_id", {"side": "x"}),
        ("POST", f"/v1/encounters/{eid}/actions/{bad}/revert", "action_id", {}),
        ("GET", f"/v1/campaigns/{t.c.id}/rolls/{bad}", "entry_id", None),
        ("GET", f"/v1/campaigns/{bad}", "campaign_id", None),
        ("GET", f"/v1/campaigns/{bad}/events", "campaign_id", None),  # the stream's own route class
        ("GET", f"/v1/rulesets/{bad}", "ruleset", None),
    ]
    for method, path, name, body in cases:
        r = t.client.request(method, path, json=body, headers=t.gm)
        assert_validation(r, [["path", name]])
    assert t.sheet(hero)["version"] == 1 and t.state(eid)["version"] == 2


@pytest.mark.parametrize("value", CONTROLS)
def test_a_control_character_in_any_query_parameter_is_a_422_naming_it(client, campaign, value):
    rolls = f"/v1/campaigns/{campaign.id}/rolls"
    assert_validation(
        client.get(rolls, params={"character_id": value}, headers=campaign.gm), [["query", "character_id"]]
    )
    assert_validation(client.get(rolls, params={"cursor": value}, headers=campaign.gm), [["query", "cursor"]])
    r = client.get(f"/v1/campaigns/{campaign.id}/encounters", params={"cursor": value}, headers=campaign.gm)
    assert_validation(r, [["query", "cursor"]])
    r = client.get(
        f"/v1/campaigns/{campaign.id}/events", params={"follow": "false", "after": value}, headers=campaign.gm
    )
    assert_validation(r, [["query", "after"]])
    r = client.get(f"/v1/campaigns/{campaign.id}/events", params={"follow": "false", "ticket": value})
    assert_validation(r, [["query", "ticket"]])  # a ticket so named is no ticket: nothing is spent
    assert_validation(client.get(rolls, params={value: "x"}, headers=campaign.gm), [["query", value]])


def test_the_callers_refusals_come_first(table, campaign_factory):
    """401 → 403 → the 422 of the parameter; a path parameter so refused names nothing to look up (no 404)."""
    t = table("great-cosmos")
    eid, _ = started(t)
    assert_problem(t.client.get("/v1/characters/a%00b"), 401, "unauthorized")
    r = t.client.delete(f"/v1/campaigns/{t.c.id}/players/a%00b", headers=t.alice.headers)
    assert_problem(r, 403, "forbidden")  # the GM's route
    other = campaign_factory("great-cosmos")
    r = t.client.get(f"/v1/campaigns/{t.c.id}/rolls", params={"character_id": "\x00"}, headers=other.gm)
    assert_problem(r, 404, "not-found")  # another campaign's: a query parameter is judged after the path's 404
    assert_validation(t.client.get(f"/v1/encounters/{eid}", params={"x": "\x07"}, headers=t.gm), [["query", "x"]])


def _routes(routes):
    from fastapi.routing import _IncludedRouter  # FastAPI keeps included routers nested

    for route in routes:
        if isinstance(route, _IncludedRouter):
            yield from _routes(route.original_router.routes)
        elif isinstance(route, APIRoute):
            yield route


def test_every_route_applies_the_rule(app):
    """No route of the app reads a path or query parameter the boundary did not check (those left
    are the documentation's pages, which read none)."""
    routes = list(_routes(app.routes))
    unchecked = [
        r.path
        for r in routes
        if not isinstance(r, (CheckedRoute, BoundaryRoute))
        if r.dependant.path_params or r.dependant.query_params or "{" in r.path
    ]
    assert unchecked == []
    bounded = {r.path for r in routes if isinstance(r, BoundaryRoute)}
    assert {"/v1/campaigns/{campaign_id}/events", "/v1/rulesets/{ruleset}"} <= bounded
    assert sum(isinstance(r, CheckedRoute) for r in routes) > 50


def test_a_control_character_in_a_test_it_retries_is_a_422(client, campaign_factory):
    """AS-T4's `retry_of` names a logged test: an id like any other."""
    c = campaign_factory("asgard")
    hero = make_character(client, c, SHEETS["asgard"])
    r = client.post(
        f"/v1/characters/{hero['id']}/tests", json={**TEST_BODIES["asgard"], "retry_of": "a\x00b"}, headers=c.gm
    )
    assert_validation(r, [["body", "retry_of"]])
