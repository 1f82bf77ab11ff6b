"""The plain request's direct call (app.api.direct, issue 28 item 1): which routes take it,
that a plain request skips FastAPI's dependency solve, and that every other request is served
by FastAPI's own handler with its answers unchanged — the caller's dependency (and its rate
limit) run once either way."""

from __future__ import annotations

from typing import Annotated, Any

import fastapi.routing
import pytest
from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import JSONResponse, Response

from app.api import bundles, campaigns, characters, encounters, events, play, rolls, rulesets, stats, system, webhooks
from app.api.deps import CheckedRoute, IdempotencyKey, JsonObject, PrincipalDep, access, caller
from app.api.direct import direct, direct_call
from tests.api.support import assert_problem

DIRECT = {
    "POST /v1/characters/{character_id}/tests",
    "POST /v1/characters/{character_id}/tests/odds",
    "POST /v1/characters/{character_id}/tests/{test_id}/reroll",
    "POST /v1/characters/{character_id}/actions",
    "POST /v1/characters/{character_id}/level-ups",
    "POST /v1/campaigns/{campaign_id}/tests/opposed",
    "POST /v1/campaigns/{campaign_id}/tests/group",
}


def test_the_rolling_routes_and_only_they_take_the_direct_call():
    routers = (play, rolls, characters, bundles, campaigns, events, encounters, webhooks, stats, rulesets, system)
    taken = {
        f"{' '.join(sorted(route.methods))} {route.path}"
        for module in routers
        for route in module.router.routes
        if isinstance(route, CheckedRoute) and direct_call(route, (caller,)) is not None
    }
    assert taken == DIRECT


def _route(endpoint) -> CheckedRoute:
    router = APIRouter(route_class=CheckedRoute)
    router.post("/x/{thing_id}")(endpoint)
    [route] = router.routes
    assert isinstance(route, CheckedRoute)
    return route


@access("member")
@direct
async def _plain(thing_id: str, body: JsonObject, request: Request, principal: PrincipalDep) -> Response:
    return JSONResponse({})


@access("member")
async def _plain_unmarked(thing_id: str, body: JsonObject, request: Request, principal: PrincipalDep) -> Response:
    return JSONResponse({})


@access("member")
@direct
async def _with_query(thing_id: str, body: JsonObject, principal: PrincipalDep, q: str = Query("")) -> Response:
    return JSONResponse({})


@access("member")
@direct
async def _returns_a_dict(thing_id: str, body: JsonObject, principal: PrincipalDep) -> dict[str, Any]:
    return {}


@access("member")
@direct
async def _constrained_header(
    thing_id: str, body: JsonObject, principal: PrincipalDep, x: Annotated[str | None, Header(pattern="^a$")] = None
) -> Response:
    return JSONResponse({})


@access("member")
@direct
async def _a_list_body(thing_id: str, body: list[int], principal: PrincipalDep) -> Response:
    return JSONResponse({})


@access("member")
@direct
def _sync(thing_id: str, body: JsonObject, principal: PrincipalDep) -> Response:
    return JSONResponse({})


def test_only_a_marked_route_takes_the_direct_call():
    assert direct_call(_route(_plain), (caller,)) is not None
    assert direct_call(_route(_plain_unmarked), (caller,)) is None  # the same shape, no mark: FastAPI's
    with pytest.raises(TypeError, match="marked direct twice"):
        direct(_plain)


@pytest.mark.parametrize(
    "endpoint, declares",
    [
        (_with_query, "query"),  # a query parameter: FastAPI converts and checks it
        (_returns_a_dict, "result FastAPI serialises"),  # its result is serialised by FastAPI's response model
        (_constrained_header, "another constraint"),  # a header pattern the direct call does not check
        (_a_list_body, "a body other than a JSON object"),  # a body other than a JSON object
        (_sync, "a sync endpoint"),  # FastAPI runs it in a thread
    ],
)
def test_a_mark_on_a_route_whose_declarations_are_not_all_plain_is_refused_at_startup(endpoint, declares):
    with pytest.raises(TypeError, match=declares):
        _route(endpoint)
    with pytest.raises(TypeError, match="another dependency"):  # its caller's dependency not one it may call
        direct_call(_route(_plain), ())


@pytest.fixture
def solves(monkeypatch) -> list[str]:
    """The requests FastAPI's own handler served (each solves the route's dependencies)."""
    served: list[str] = []
    solve = fastapi.routing.solve_dependencies

    async def counted(*, request, **kwargs):
        served.append(request.url.path)
        return await solve(request=request, **kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counted)
    return served


@pytest.fixture
def hits(app, monkeypatch) -> list[str]:
    """Each authenticated caller's rate-limit hit (one a request, whoever serves it)."""
    counted: list[str] = []
    limiter = app.state.rate_limiter
    hit = limiter.hit_token

    async def hit_token(token_hash):
        counted.append(token_hash)
        return await hit(token_hash)

    monkeypatch.setattr(limiter, "hit_token", hit_token)
    return counted


def test_a_plain_test_is_served_without_fastapis_solve(client, campaign, hero, solves, hits):
    for media in ("application/json", "application/json ; charset=utf-8", None):  # none: JSON (CheckedRoute)
        typed = {"Content-Type": media} if media else {}
        r = client.post(
            f"/v1/characters/{hero['id']}/tests",
            content=b'{"stat":"force","dice":[42]}',
            headers={**campaign.gm, **typed, "Idempotency-Key": f"k-{media}".ljust(200, "k")},
        )
        assert r.status_code == 201, r.text
        assert r.json()["outcome"] == "super_critical_success"
        assert r.headers["location"] == f"/v1/campaigns/{campaign.id}/rolls/{r.json()['id']}"
    r = client.post(f"/v1/characters/{hero['id']}/tests/odds", json={"stat": "force"}, headers=campaign.gm)
    assert r.status_code == 200 and "outcomes" in r.json(), r.text
    assert solves == []
    assert len(hits) == 4


@pytest.mark.parametrize(
    "content, headers, status, slug",
    [
        (b'{"stat":"force"}', {"Idempotency-Key": "k" * 201}, 422, "validation-failed"),  # over the header's 200
        (b"[]", {}, 422, "validation-failed"),  # not an object
        (b"", {}, 422, "validation-failed"),  # no body
        (b'{"stat":"force"}', {"Content-Type": "application/vnd.jdr+json"}, 201, None),  # JSON of another name
        (b'{"stat":"force"}', {"Content-Type": "Application/JSON"}, 201, None),  # the type's case
    ],
)
def test_every_other_request_is_fastapis_own(client, campaign, hero, solves, hits, content, headers, status, slug):
    headers = {"Content-Type": "application/json", **headers}
    r = client.post(f"/v1/characters/{hero['id']}/tests", content=content, headers={**campaign.gm, **headers})
    assert r.status_code == status, r.text
    if slug is not None:
        assert_problem(r, status, slug)
    assert solves == [f"/v1/characters/{hero['id']}/tests"], "served by FastAPI's handler, once"
    assert len(hits) == 1, "the caller's rate limit counted once"


def test_a_body_not_json_is_refused_by_fastapi_after_the_caller_is_checked(client, campaign, hero, solves, hits):
    """FastAPI refuses it before its solve; the route then checks the caller (API.md's order)."""
    path = f"/v1/characters/{hero['id']}/tests"
    r = client.post(path, content=b'{"stat":', headers={**campaign.gm, "Content-Type": "application/json"})
    assert_problem(r, 400, "malformed-json")
    assert len(hits) == 1
    r = client.post(path, content=b'{"stat":', headers={"Authorization": "Bearer wrong"})
    assert_problem(r, 401, "token-invalid")
    assert solves == []


@access("owner_or_gm")
async def _test_unmarked(
    character_id: str,
    body: JsonObject,
    request: Request,
    principal: PrincipalDep,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    """`POST …/tests`'s endpoint, its shape and its work, without the `@direct` mark."""
    return await play.run_test(character_id, body, request, principal, idempotency_key)


def test_an_unmarked_route_of_the_same_shape_is_always_fastapis(client, app, campaign, hero, solves, hits):
    router = APIRouter(route_class=CheckedRoute)
    router.post("/v1/characters/{character_id}/tests", status_code=201)(_test_unmarked)
    [unmarked] = router.routes
    app.router.routes.insert(0, unmarked)  # matched before the marked route of the same path
    try:
        path = f"/v1/characters/{hero['id']}/tests"
        r = client.post(path, content=b'{"stat":"force","dice":[42]}', headers=campaign.gm)
    finally:
        app.router.routes.remove(unmarked)
    assert r.status_code == 201, r.text
    assert r.json()["outcome"] == "super_critical_success"
    assert solves == [path], "served by FastAPI's handler"
    assert len(hits) == 1


def test_an_overridden_caller_is_fastapis_to_call(client, app, campaign, hero, solves):
    called = []
    original = caller

    async def overriding(request: Request):
        called.append(request.url.path)
        return await original(request)

    app.dependency_overrides[caller] = overriding
    r = client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "force"}, headers=campaign.gm)
    assert r.status_code == 201, r.text
    assert called == solves == [f"/v1/characters/{hero['id']}/tests"]


def test_the_refusal_order_is_the_same_on_the_direct_call(client, campaign, hero, alice, solves):
    """401 before 404 before 403 before the body's own 422, whoever serves the request."""
    path = f"/v1/characters/{hero['id']}/tests"
    assert_problem(
        client.post(path, json={"stat": "nope"}, headers={"Authorization": "Bearer wrong"}), 401, "token-invalid"
    )
    assert_problem(
        client.post("/v1/characters/nobody/tests", json={"stat": "nope"}, headers=campaign.gm), 404, "not-found"
    )
    assert_problem(client.post(path, json={"stat": "force"}, headers=alice.headers), 403, "owner-or-gm-only")
    assert_problem(client.post(path, json={"stat": "nope"}, headers=campaign.gm), 422, "validation-failed")
    assert solves == []
