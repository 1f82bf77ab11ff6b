"""Authorization matrix: EVERY route of the app x {no token, bad token, another
campaign's GM, a player who does not own the character, the owner, the GM},
with bodies valid for the route, so authorization alone decides the status.

API.md: missing/invalid token -> 401; a valid token of another campaign -> 404
(never leak existence); a player doing a GM-only thing (or touching a character
it does not own) -> 403. Public: /healthz, /readyz, /v1/rulesets..., POST /v1/campaigns.

Plus: hidden rolls never reach players (lists, filters, single reads, events)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from app.main import app as default_app
from tests.factories import SHEETS, TEST_BODIES
from tests.hardening.conftest import bearer

CALLERS = ("none", "bad", "other_gm", "player", "owner", "gm")
PUBLIC = dict.fromkeys(CALLERS, 200)


def expect(none=401, bad=401, other_gm=404, player=200, owner=200, gm=200) -> dict[str, int]:
    return {"none": none, "bad": bad, "other_gm": other_gm, "player": player, "owner": owner, "gm": gm}


MEMBER_READ = expect()
OWNER_OR_GM = expect(player=403)
OWNER_OR_GM_CREATE = expect(player=403, owner=201, gm=201)
GM_ONLY = expect(player=403, owner=403)
GM_ONLY_CREATE = expect(player=403, owner=403, gm=201)


@dataclass
class World:
    """A campaign of one ruleset: GM, player `owner` (owns `hero`), player `player`,
    a second character `foe` (GM's), a logged test on `hero`, and another campaign
    of the same ruleset with its own GM."""

    client: Any
    ruleset: str
    cid: str
    tokens: dict[str, str | None]
    hero: str
    foe: str
    owner_id: str
    entry: str
    made: list[str] = field(default_factory=list)

    def headers(self, caller: str) -> dict[str, str]:
        token = self.tokens[caller]
        return bearer(token) if token else {}

    def fresh_hero(self) -> str:
        """Another character owned by `owner` (for the routes that use it up)."""
        r = self.client.post(
            f"/v1/campaigns/{self.cid}/characters",
            headers=self.headers("gm"),
            json={"name": "Fresh", "kind": "pc", "player_id": self.owner_id, "sheet": SHEETS[self.ruleset]},
        )
        assert r.status_code == 201, r.text
        return r.json()["id"]

    def fresh_player(self) -> str:
        r = self.client.post(f"/v1/campaigns/{self.cid}/players", headers=self.headers("gm"), json={"name": "Fresh"})
        assert r.status_code == 201, r.text
        return r.json()["id"]

    def fresh_test(self, character_id: str) -> str:
        r = self.client.post(
            f"/v1/characters/{character_id}/tests", json=TEST_BODIES[self.ruleset], headers=self.headers("gm")
        )
        assert r.status_code == 201, r.text
        return r.json()["id"]


def build_world(client, ruleset: str) -> World:
    def post(path: str, body: dict, token: str | None = None) -> dict:
        r = client.post(path, json=body, headers=bearer(token) if token else {})
        assert r.status_code == 201, r.text
        return r.json()

    camp = post("/v1/campaigns", {"name": "Matrix", "ruleset": ruleset})
    other = post("/v1/campaigns", {"name": "Elsewhere", "ruleset": ruleset})
    gm = camp["gm_token"]
    owner = post(f"/v1/campaigns/{camp['id']}/players", {"name": "Owner"}, gm)
    player = post(f"/v1/campaigns/{camp['id']}/players", {"name": "Other"}, gm)
    hero = post(
        f"/v1/campaigns/{camp['id']}/characters",
        {"name": "Hero", "kind": "pc", "player_id": owner["id"], "sheet": SHEETS[ruleset]},
        gm,
    )
    foe = post(f"/v1/campaigns/{camp['id']}/characters", {"name": "Foe", "kind": "npc", "sheet": SHEETS[ruleset]}, gm)
    entry = post(f"/v1/characters/{hero['id']}/tests", TEST_BODIES[ruleset], gm)
    tokens = {
        "none": None,
        "bad": "not-a-valid-token",
        "other_gm": other["gm_token"],
        "player": player["token"],
        "owner": owner["token"],
        "gm": gm,
    }
    return World(client, ruleset, camp["id"], tokens, hero["id"], foe["id"], owner["id"], entry["id"])


@dataclass(frozen=True)
class Cell:
    """How to call one route: the ruleset of its world, and (path, body, params) for a caller."""

    expected: dict[str, int]
    ruleset: str = "great-cosmos"
    request: Callable[[World, str], tuple[str, dict | None, dict | None]] = lambda w, c: ("", None, None)


def R(expected, ruleset="great-cosmos", path="", body=None, params=None, make=None) -> Cell:
    def request(w: World, caller: str):
        if make is not None:
            return make(w, caller)
        return path.format(cid=w.cid, hero=w.hero, entry=w.entry, ruleset=w.ruleset), body, params

    return Cell(expected, ruleset, request)


def _fresh(path: str, body: Callable[[World], dict] | dict | None = None):
    """A fresh owned character per caller (the route uses it up: delete)."""

    def make(w: World, _caller: str):
        hero = w.fresh_hero()
        return path.format(hero=hero), body(w) if callable(body) else body, None

    return make


def _salt(w: World, _caller: str):
    """A salt on an epoch with no die yet (the GM reveals the current one first: another row may
    have rolled server dice in it)."""
    r = w.client.post(f"/v1/campaigns/{w.cid}/dice-epochs/current/reveal", headers=w.headers("gm"))
    assert r.status_code == 200, r.text
    return f"/v1/campaigns/{w.cid}/dice-epochs/current/salts", {"salt": "sel"}, None


def _reroll(w: World, _caller: str):
    test_id = w.fresh_test(w.hero)
    return f"/v1/characters/{w.hero}/tests/{test_id}/reroll", {}, None


def _level_up(w: World, _caller: str):
    return (
        f"/v1/characters/{w.fresh_hero()}/level-ups",
        {"mode": "one_d20", "stats": ["force"], "chance_bonus_pool": "hp", "seed": 3},
        None,
    )


def _encounter(w: World, *, started: bool) -> dict:
    """A fresh GM encounter: the owner's hero (first, by the GM's initiative) and the GM's foe."""
    r = w.client.post(
        f"/v1/campaigns/{w.cid}/encounters",
        headers=w.headers("gm"),
        json={
            "name": "Matrix fight",
            "combatants": [{"character_id": w.hero, "initiative": 99}, {"character_id": w.foe}],
        },
    )
    assert r.status_code == 201, r.text
    if started:
        r = w.client.post(f"/v1/encounters/{r.json()['id']}/start", json={"seed": 1}, headers=w.headers("gm"))
        assert r.status_code == 201, r.text
    return r.json()


def _enc(path: str, body: Callable[[World, dict], dict] | dict | None = None, *, started: bool = False):
    """A fresh encounter per caller; the path names it ({eid}), the hero's combatant ({hero_c}), its start ({action})."""

    def make(w: World, _caller: str):
        e = _encounter(w, started=started)
        named = path.format(
            cid=w.cid, eid=e["id"], hero_c=e["combatants"][0]["id"], action=e.get("action", {}).get("id")
        )
        return named, body(w, e) if callable(body) else body, None

    return make


def _choices(w: World, _caller: str):
    """`GET …/choices` of the hero's combatant (the owner's) in a fresh started encounter."""
    e = _encounter(w, started=True)
    return f"/v1/encounters/{e['id']}/choices", None, {"combatant_id": e["combatants"][0]["id"]}


def _export(w: World, path: str) -> dict:
    """The GM's export of a campaign or a character (a valid bundle to import)."""
    r = w.client.get(f"{path}/export", headers=w.headers("gm"))
    assert r.status_code == 200, r.text
    return r.json()


def _hook(w: World) -> str:
    """A fresh webhook of the world's campaign (its host does not resolve here: let through at creation)."""
    r = w.client.post(
        f"/v1/campaigns/{w.cid}/webhooks", headers=w.headers("gm"), json={"url": "https://hooks.example.com/jdr"}
    )
    assert r.status_code == 201, r.text
    return r.json()["id"]


def _invite(w: World) -> str:
    """A fresh invitation of the world's owner player: its code."""
    r = w.client.post(f"/v1/campaigns/{w.cid}/players/{w.owner_id}/invites", headers=w.headers("gm"), json={})
    assert r.status_code == 201, r.text
    return r.json()["code"]


SHEET_GC = SHEETS["great-cosmos"]
TABLE: dict[tuple[str, str], Cell] = {
    ("GET", "/"): R(PUBLIC, path="/"),  # the dashboard page: public, every call it makes carries the token
    ("GET", "/join"): R(PUBLIC, path="/join"),  # the same page, opened by an invitation link (/join#<code>)
    ("GET", "/openapi.json"): R(PUBLIC, path="/openapi.json"),
    ("GET", "/asyncapi.json"): R(PUBLIC, path="/asyncapi.json"),  # the event stream's document (#25 item 8)
    ("GET", "/docs"): R(PUBLIC, path="/docs"),
    ("GET", "/docs/oauth2-redirect"): R(PUBLIC, path="/docs/oauth2-redirect"),
    ("GET", "/redoc"): R(PUBLIC, path="/redoc"),
    ("GET", "/healthz"): R(PUBLIC, path="/healthz"),
    ("GET", "/readyz"): R(PUBLIC, path="/readyz"),
    ("GET", "/v1/rulesets"): R(PUBLIC, path="/v1/rulesets"),
    ("GET", "/v1/rulesets/{ruleset}"): R(PUBLIC, path="/v1/rulesets/{ruleset}"),
    ("POST", "/v1/campaigns"): R(
        dict.fromkeys(CALLERS, 201), path="/v1/campaigns", body={"name": "Public", "ruleset": "great-cosmos"}
    ),
    ("GET", "/v1/campaigns/{campaign_id}"): R(MEMBER_READ, path="/v1/campaigns/{cid}"),
    ("PATCH", "/v1/campaigns/{campaign_id}"): R(GM_ONLY, path="/v1/campaigns/{cid}", body={"name": "Renamed"}),
    ("POST", "/v1/campaigns/{campaign_id}/players"): R(
        GM_ONLY_CREATE, path="/v1/campaigns/{cid}/players", body={"name": "Newcomer"}
    ),
    ("GET", "/v1/campaigns/{campaign_id}/players"): R(MEMBER_READ, path="/v1/campaigns/{cid}/players"),
    # the tokens' lifecycle (issue 14 item 11): the GM's, but /v1/me, which any token may ask about itself
    ("GET", "/v1/me"): R(expect(other_gm=200), path="/v1/me"),
    ("POST", "/v1/campaigns/{campaign_id}/gm-token/rotate"): R(GM_ONLY, path="/v1/campaigns/{cid}/gm-token/rotate"),
    ("POST", "/v1/campaigns/{campaign_id}/players/{player_id}/token/rotate"): R(
        GM_ONLY, make=lambda w, c: (f"/v1/campaigns/{w.cid}/players/{w.owner_id}/token/rotate", None, None)
    ),
    # joining by a link: the GM invites; the code alone lets in (any token sent along is ignored)
    ("POST", "/v1/campaigns/{campaign_id}/players/{player_id}/invites"): R(
        GM_ONLY_CREATE, make=lambda w, c: (f"/v1/campaigns/{w.cid}/players/{w.owner_id}/invites", {}, None)
    ),
    ("POST", "/v1/invites/{code}/accept"): R(
        dict.fromkeys(CALLERS, 201), make=lambda w, c: (f"/v1/invites/{_invite(w)}/accept", None, None)
    ),
    ("DELETE", "/v1/campaigns/{campaign_id}/players/{player_id}"): R(
        expect(player=403, owner=403, gm=204),
        make=lambda w, c: (f"/v1/campaigns/{w.cid}/players/{w.fresh_player()}", None, None),
    ),
    ("DELETE", "/v1/campaigns/{campaign_id}"): R(expect(player=403, owner=403, gm=204), path="/v1/campaigns/{cid}"),
    ("POST", "/v1/campaigns/{campaign_id}/events/tickets"): R(
        expect(player=201, owner=201, gm=201), path="/v1/campaigns/{cid}/events/tickets"
    ),
    # a PC for the owner: the GM or the owner may create it, not another player
    ("POST", "/v1/campaigns/{campaign_id}/characters"): R(
        OWNER_OR_GM_CREATE,
        make=lambda w, c: (
            f"/v1/campaigns/{w.cid}/characters",
            {"name": "New", "kind": "pc", "player_id": w.owner_id, "sheet": SHEET_GC},
            None,
        ),
    ),
    ("GET", "/v1/campaigns/{campaign_id}/characters"): R(MEMBER_READ, path="/v1/campaigns/{cid}/characters"),
    ("GET", "/v1/characters/{character_id}"): R(MEMBER_READ, path="/v1/characters/{hero}"),
    ("PATCH", "/v1/characters/{character_id}"): R(
        OWNER_OR_GM, path="/v1/characters/{hero}", body={"name": "Renamed", "sheet": {"notes": "patched"}}
    ),
    ("DELETE", "/v1/characters/{character_id}"): R(
        expect(player=403, owner=204, gm=204), make=_fresh("/v1/characters/{hero}")
    ),
    ("POST", "/v1/characters/{character_id}/tests"): R(
        OWNER_OR_GM_CREATE, path="/v1/characters/{hero}/tests", body={"stat": "force"}
    ),  # no seed: a player's is a 403
    ("POST", "/v1/characters/{character_id}/tests/odds"): R(
        OWNER_OR_GM, path="/v1/characters/{hero}/tests/odds", body={"stat": "force"}
    ),
    ("POST", "/v1/characters/{character_id}/tests/{test_id}/reroll"): R(OWNER_OR_GM_CREATE, "asgard", make=_reroll),
    ("POST", "/v1/characters/{character_id}/actions"): R(
        OWNER_OR_GM_CREATE, "asgard", path="/v1/characters/{hero}/actions", body={"type": "fall", "metres": 3}
    ),
    ("POST", "/v1/characters/{character_id}/level-ups"): R(GM_ONLY_CREATE, make=_level_up),
    ("GET", "/v1/characters/{character_id}/level-ups"): R(MEMBER_READ, path="/v1/characters/{hero}/level-ups"),
    ("POST", "/v1/campaigns/{campaign_id}/tests/opposed"): R(
        GM_ONLY_CREATE,
        "asgard",
        make=lambda w, c: (
            f"/v1/campaigns/{w.cid}/tests/opposed",
            {
                "a": {"character_id": w.hero, "skill": "combat"},
                "b": {"character_id": w.foe, "skill": "defense"},
                "seed": 11,
            },
            None,
        ),
    ),
    ("POST", "/v1/campaigns/{campaign_id}/tests/group"): R(
        GM_ONLY_CREATE,
        "asgard",
        make=lambda w, c: (
            f"/v1/campaigns/{w.cid}/tests/group",
            {"skill": "survie", "participants": [{"character_id": w.hero}, {"character_id": w.foe}], "seed": 13},
            None,
        ),
    ),
    ("POST", "/v1/campaigns/{campaign_id}/rolls"): R(
        expect(player=201, owner=201, gm=201), path="/v1/campaigns/{cid}/rolls", body={"expression": "3d6+2"}
    ),
    ("GET", "/v1/campaigns/{campaign_id}/rolls"): R(MEMBER_READ, path="/v1/campaigns/{cid}/rolls"),
    ("GET", "/v1/campaigns/{campaign_id}/rolls/{entry_id}"): R(MEMBER_READ, path="/v1/campaigns/{cid}/rolls/{entry}"),
    ("GET", "/v1/campaigns/{campaign_id}/stats"): R(MEMBER_READ, path="/v1/campaigns/{cid}/stats"),
    # verifiable dice: members read and salt the epochs; the GM reveals, and publishes a hidden roll
    # (the world's logged test is not hidden: the GM's 409 `not_hidden`)
    ("GET", "/v1/campaigns/{campaign_id}/dice-epochs"): R(MEMBER_READ, path="/v1/campaigns/{cid}/dice-epochs"),
    ("GET", "/v1/campaigns/{campaign_id}/dice-epochs/current"): R(
        MEMBER_READ, path="/v1/campaigns/{cid}/dice-epochs/current"
    ),
    ("POST", "/v1/campaigns/{campaign_id}/dice-epochs/current/salts"): R(
        expect(player=201, owner=201, gm=201), make=_salt
    ),
    ("POST", "/v1/campaigns/{campaign_id}/dice-epochs/current/reveal"): R(
        GM_ONLY, path="/v1/campaigns/{cid}/dice-epochs/current/reveal"
    ),
    ("POST", "/v1/campaigns/{campaign_id}/rolls/{entry_id}/publish"): R(
        expect(player=403, owner=403, gm=409), path="/v1/campaigns/{cid}/rolls/{entry}/publish"
    ),
    ("GET", "/v1/campaigns/{campaign_id}/events"): R(
        MEMBER_READ, path="/v1/campaigns/{cid}/events", params={"follow": "false"}
    ),
    # encounters: setup is the GM's; the owner sets its combatant's reaction and ends its own turn
    ("POST", "/v1/campaigns/{campaign_id}/encounters"): R(
        GM_ONLY_CREATE,
        make=lambda w, c: (
            f"/v1/campaigns/{w.cid}/encounters",
            {"name": "Fight", "combatants": [{"character_id": w.hero}]},
            None,
        ),
    ),
    ("GET", "/v1/campaigns/{campaign_id}/encounters"): R(MEMBER_READ, make=_enc("/v1/campaigns/{cid}/encounters")),
    ("GET", "/v1/encounters/{encounter_id}"): R(MEMBER_READ, make=_enc("/v1/encounters/{eid}")),
    ("PATCH", "/v1/encounters/{encounter_id}"): R(GM_ONLY, make=_enc("/v1/encounters/{eid}", {"name": "Renamed"})),
    ("POST", "/v1/encounters/{encounter_id}/combatants"): R(
        GM_ONLY_CREATE, make=_enc("/v1/encounters/{eid}/combatants", lambda w, e: {"character_id": w.foe, "count": 2})
    ),
    ("PATCH", "/v1/encounters/{encounter_id}/combatants/{combatant_id}"): R(
        OWNER_OR_GM, make=_enc("/v1/encounters/{eid}/combatants/{hero_c}", {"reaction": "none"})
    ),
    ("DELETE", "/v1/encounters/{encounter_id}/combatants/{combatant_id}"): R(
        expect(player=403, owner=403, gm=204), make=_enc("/v1/encounters/{eid}/combatants/{hero_c}")
    ),
    ("POST", "/v1/encounters/{encounter_id}/start"): R(
        GM_ONLY_CREATE, make=_enc("/v1/encounters/{eid}/start", {"seed": 2})
    ),
    ("POST", "/v1/encounters/{encounter_id}/next-turn"): R(
        OWNER_OR_GM_CREATE, make=_enc("/v1/encounters/{eid}/next-turn", {}, started=True)
    ),
    ("POST", "/v1/encounters/{encounter_id}/actions"): R(
        GM_ONLY_CREATE,
        make=_enc(
            "/v1/encounters/{eid}/actions",
            lambda w, e: {"type": "damage", "target_id": e["combatants"][1]["id"], "amount": 1},
            started=True,
        ),
    ),
    ("GET", "/v1/encounters/{encounter_id}/actions"): R(
        MEMBER_READ, make=_enc("/v1/encounters/{eid}/actions", started=True)
    ),
    ("GET", "/v1/encounters/{encounter_id}/actions/{action_id}"): R(
        MEMBER_READ, make=_enc("/v1/encounters/{eid}/actions/{action}", started=True)
    ),
    ("POST", "/v1/encounters/{encounter_id}/actions/{action_id}/revert"): R(
        GM_ONLY_CREATE, make=_enc("/v1/encounters/{eid}/actions/{action}/revert", {}, started=True)
    ),
    # issue 26 items 1-2: what a combatant may do (the GM, or its owner), an action's dice (who may send it)
    ("GET", "/v1/encounters/{encounter_id}/choices"): R(OWNER_OR_GM, make=_choices),
    ("POST", "/v1/encounters/{encounter_id}/actions/plan"): R(
        GM_ONLY,
        make=_enc(
            "/v1/encounters/{eid}/actions/plan",
            lambda w, e: {"type": "damage", "target_id": e["combatants"][1]["id"], "amount": 1},
            started=True,
        ),
    ),
    ("POST", "/v1/encounters/{encounter_id}/end"): R(GM_ONLY, make=_enc("/v1/encounters/{eid}/end", started=True)),
    # export and import (issue 29 item 2): the GM's; importing a campaign is creating one
    ("GET", "/v1/campaigns/{campaign_id}/export"): R(GM_ONLY, path="/v1/campaigns/{cid}/export"),
    ("POST", "/v1/campaigns/import"): R(
        dict.fromkeys(CALLERS, 201),
        make=lambda w, c: ("/v1/campaigns/import", _export(w, f"/v1/campaigns/{w.cid}"), None),
    ),
    ("GET", "/v1/characters/{character_id}/export"): R(GM_ONLY, path="/v1/characters/{hero}/export"),
    ("POST", "/v1/campaigns/{campaign_id}/characters/import"): R(
        GM_ONLY_CREATE,
        make=lambda w, c: (f"/v1/campaigns/{w.cid}/characters/import", _export(w, f"/v1/characters/{w.hero}"), None),
    ),
    # webhooks (issue 29 item 1): the GM's alone
    ("POST", "/v1/campaigns/{campaign_id}/webhooks"): R(
        GM_ONLY_CREATE, path="/v1/campaigns/{cid}/webhooks", body={"url": "https://hooks.example.com/jdr"}
    ),
    ("GET", "/v1/campaigns/{campaign_id}/webhooks"): R(GM_ONLY, path="/v1/campaigns/{cid}/webhooks"),
    ("DELETE", "/v1/campaigns/{campaign_id}/webhooks/{webhook_id}"): R(
        expect(player=403, owner=403, gm=204),
        make=lambda w, c: (f"/v1/campaigns/{w.cid}/webhooks/{_hook(w)}", None, None),
    ),
    ("PATCH", "/v1/campaigns/{campaign_id}/webhooks/{webhook_id}"): R(
        GM_ONLY, make=lambda w, c: (f"/v1/campaigns/{w.cid}/webhooks/{_hook(w)}", {"enabled": True}, None)
    ),
    ("GET", "/v1/campaigns/{campaign_id}/webhooks/{webhook_id}/deliveries"): R(
        GM_ONLY, make=lambda w, c: (f"/v1/campaigns/{w.cid}/webhooks/{_hook(w)}/deliveries", None, None)
    ),
}


def app_routes(application) -> set[tuple[str, str]]:
    """(method, path) of every route the app serves (HEAD, added for GET, left out)."""
    try:
        from fastapi.routing import _IncludedRouter  # FastAPI >= 0.16x keeps included routers nested
    except ImportError:  # pragma: no cover - older FastAPI flattens them
        _IncludedRouter = ()

    def walk(routes, prefix: str = ""):
        for route in routes:
            if _IncludedRouter and isinstance(route, _IncludedRouter):
                yield from walk(route.original_router.routes, prefix + route.include_context.prefix)
            else:
                for method in getattr(route, "methods", None) or ():
                    if method != "HEAD":
                        yield method, prefix + route.path

    return set(walk(application.routes))


def test_every_route_is_in_the_matrix():
    served = app_routes(default_app)
    assert len(served) >= 30
    assert served - set(TABLE) == set(), "routes missing from the authorization matrix"
    assert set(TABLE) - served == set(), "routes in the matrix the app does not serve"


@pytest.mark.parametrize("route", sorted(TABLE), ids=lambda r: f"{r[0]} {r[1]}")
def test_authorization_matrix(client, route):
    cell = TABLE[route]
    world = build_world(client, cell.ruleset)
    got: dict[str, int] = {}
    details: dict[str, str] = {}
    for caller in CALLERS:
        path, body, params = cell.request(world, caller)
        r = client.request(route[0], path, json=body, params=params, headers=world.headers(caller))
        got[caller] = r.status_code
        if r.status_code >= 400:
            details[caller] = r.text[:200]
            assert r.headers["content-type"].startswith("application/problem+json"), (caller, r.headers)
            assert r.json()["status"] == r.status_code
    assert got == cell.expected, details


# --- who may choose the dice (issue 21 item 2) ---------------------------------------------------

ROLLING_FOR_PLAYERS = [
    ("POST", "/v1/characters/{character_id}/tests"),
    ("POST", "/v1/characters/{character_id}/tests/{test_id}/reroll"),
    ("POST", "/v1/characters/{character_id}/actions"),
    ("POST", "/v1/campaigns/{campaign_id}/rolls"),
    ("POST", "/v1/encounters/{encounter_id}/next-turn"),
]


@pytest.mark.parametrize("route", ROLLING_FOR_PLAYERS, ids=lambda r: f"{r[0]} {r[1]}")
def test_issue21_item2_a_players_seed_is_a_403_on_every_route_it_rolls_on(client, route):
    """Each rolling route a player may send, with a `seed` added to the matrix's body: the GM's is
    rolled, a player's refused (the campaign's `players_may_enter_dice` is false by default)."""
    cell = TABLE[route]
    world = build_world(client, cell.ruleset)
    got = {}
    for caller in ("player", "owner", "gm"):
        path, body, params = cell.request(world, caller)
        r = client.request(
            route[0], path, json={**(body or {}), "seed": 1}, params=params, headers=world.headers(caller)
        )
        got[caller] = r.status_code
    assert got == {"player": 403, "owner": 403, "gm": 201}


# --- who may change what on a sheet (rules README; the sheet models mark the governed fields) ---

GOVERNED_PATCHES = {  # a change of a rule-governed field: the GM only (logged as a sheet_edit)
    "great-cosmos": [
        {"karma": 10},
        {"level": 1000},
        {"posture": "illumination"},
        {"light_points": 5},
        {"stats": {"force": 99}},
    ],
    "asgard": [{"heroism": 1000}, {"vitality_max": 99}, {"skills": {"combat": 50}}],
    "rulebook-d100": [{"hp_max": 99}, {"pe": 1}, {"stats": {"FOR": 99}}],
    "worlds-awakening": [
        {"pending": {"FOR": 2}},
        {"challenges": {"vol": {"name": "vol", "successes_needed": 1, "successes": 1, "status": "succeeded"}}},
        {"level": 8},
    ],
}
FREE_PATCHES = {  # free fields (and governed ones sent again unchanged): the owner or the GM
    "great-cosmos": {"notes": "patched", "inventory": {"money": 30}, "karma": 0},
    "asgard": {"assets": ["Rusé"], "weapons": [{"name": "hache", "damage_dice": 3}], "heroism": 3},
    "rulebook-d100": {"weapons": [{"name": "dague", "damage": "1d4"}], "armor": 1, "hp": 14},
    "worlds-awakening": {"weapons": [{"name": "arc", "stat": "DEX", "damage": "1d8"}], "level": 1},
}
SHEET_CELLS = [(ruleset, patch, GM_ONLY) for ruleset, patches in GOVERNED_PATCHES.items() for patch in patches] + [
    (ruleset, patch, OWNER_OR_GM) for ruleset, patch in FREE_PATCHES.items()
]


@pytest.mark.parametrize(
    "ruleset, patch, expected",
    SHEET_CELLS,
    ids=[f"{r}-{'+'.join(p)}-{'gm' if e is GM_ONLY else 'owner'}" for r, p, e in SHEET_CELLS],
)
def test_sheet_patch_matrix(client, ruleset, patch, expected):
    """PATCH /v1/characters/{id} of each ruleset: a rule-governed field is the GM's
    (the owner's 403 names it), a free field the owner's or the GM's."""
    world = build_world(client, ruleset)
    got, details = {}, {}
    for caller in CALLERS:
        r = client.patch(f"/v1/characters/{world.hero}", json={"sheet": patch}, headers=world.headers(caller))
        got[caller] = r.status_code
        if r.status_code >= 400:
            details[caller] = r.text[:200]
            assert r.headers["content-type"].startswith("application/problem+json"), (caller, r.headers)
        if caller == "owner" and expected is GM_ONLY:
            assert {f.split(".")[0] for f in r.json()["fields"]} == set(patch), r.text
    assert got == expected, details


# --- hidden rolls --------------------------------------------------------------------


def test_hidden_rolls_never_reach_players(client):
    w = build_world(client, "great-cosmos")
    gm = w.headers("gm")
    hidden = []
    for path, body in [
        (f"/v1/campaigns/{w.cid}/rolls", {"expression": "d20", "hidden": True, "character_id": w.hero}),
        (f"/v1/characters/{w.hero}/tests", {"stat": "force", "dice": [42], "hidden": True}),
        (
            f"/v1/characters/{w.fresh_hero()}/level-ups",
            {"mode": "one_d20", "stats": ["force"], "chance_bonus_pool": "hp", "seed": 3, "hidden": True},
        ),
    ]:
        r = client.post(path, json=body, headers=gm)
        assert r.status_code == 201, r.text
        assert r.json()["hidden"] is True
        hidden.append(r.json())
    hidden_ids = {h["id"] for h in hidden}
    level_up_character = hidden[2]["character_id"]
    visible = client.post(f"/v1/campaigns/{w.cid}/rolls", json={"expression": "d6"}, headers=gm).json()["id"]

    # the GM sees them everywhere
    gm_log = {e["id"] for e in client.get(f"/v1/campaigns/{w.cid}/rolls", headers=gm).json()["items"]}
    assert hidden_ids | {visible} <= gm_log
    for h in hidden:
        assert client.get(f"/v1/campaigns/{w.cid}/rolls/{h['id']}", headers=gm).status_code == 200
    gm_stream = client.get(f"/v1/campaigns/{w.cid}/events", params={"follow": "false", "after": "0"}, headers=gm).text
    assert all(i in gm_stream for i in hidden_ids)

    for caller in ("player", "owner"):
        headers = w.headers(caller)
        lists = [
            client.get(f"/v1/campaigns/{w.cid}/rolls", headers=headers),
            client.get(f"/v1/campaigns/{w.cid}/rolls", params={"character_id": w.hero}, headers=headers),
            client.get(f"/v1/campaigns/{w.cid}/rolls", params={"kind": "test"}, headers=headers),
            client.get(f"/v1/campaigns/{w.cid}/rolls", params={"kind": "roll"}, headers=headers),
            client.get(f"/v1/campaigns/{w.cid}/rolls", params={"kind": "level_up"}, headers=headers),
            client.get(f"/v1/characters/{level_up_character}/level-ups", headers=headers),
        ]
        for r in lists:
            assert r.status_code == 200, r.text
            assert not hidden_ids & {e["id"] for e in r.json()["items"]}, (caller, r.request.url)
        assert visible in {e["id"] for e in lists[0].json()["items"]}
        # paging with a small limit never surfaces them either
        seen, cursor = set(), None
        while True:
            r = client.get(
                f"/v1/campaigns/{w.cid}/rolls",
                params={"limit": 1, **({"cursor": cursor} if cursor else {})},
                headers=headers,
            )
            seen |= {e["id"] for e in r.json()["items"]}
            cursor = r.json()["next_cursor"]
            if not cursor:
                break
        assert not hidden_ids & seen and visible in seen
        for h in hidden:
            r = client.get(f"/v1/campaigns/{w.cid}/rolls/{h['id']}", headers=headers)
            assert r.status_code == 404, (caller, r.text)
        stream = client.get(f"/v1/campaigns/{w.cid}/events", params={"follow": "false", "after": "0"}, headers=headers)
        assert stream.status_code == 200
        assert not [i for i in hidden_ids if i in stream.text], caller
        assert visible in stream.text
        # a player may not make a hidden roll at all
        r = client.post(f"/v1/campaigns/{w.cid}/rolls", json={"expression": "d20", "hidden": True}, headers=headers)
        assert r.status_code == 403, r.text


@pytest.fixture
def asgard_hidden(client):
    """An asgard world with a hidden GM test (a failure) on the owner's character."""
    w = build_world(client, "asgard")
    r = client.post(
        f"/v1/characters/{w.hero}/tests",
        headers=w.headers("gm"),
        json={"skill": "survie", "difficulty": "moyen", "hidden": True, "dice": [1, 1, 2]},
    )
    assert r.status_code == 201 and r.json()["outcome"] == "failure", r.text
    return w, r.json()["id"]


def test_players_cannot_reroll_a_hidden_test(client, asgard_hidden):
    w, hidden_id = asgard_hidden
    unknown = client.post(f"/v1/characters/{w.hero}/tests/{'0' * 32}/reroll", json={}, headers=w.headers("owner"))
    assert unknown.status_code == 404, unknown.text
    r = client.post(f"/v1/characters/{w.hero}/tests/{hidden_id}/reroll", json={}, headers=w.headers("owner"))
    assert r.status_code == 404, r.text
    assert r.json()["detail"] == unknown.json()["detail"]


def test_players_cannot_retry_a_hidden_test(client, asgard_hidden):
    w, hidden_id = asgard_hidden
    body = {"skill": "survie", "difficulty": "moyen"}
    unknown = client.post(
        f"/v1/characters/{w.hero}/tests", json={**body, "retry_of": "0" * 32}, headers=w.headers("owner")
    )
    assert unknown.status_code == 422, unknown.text
    r = client.post(f"/v1/characters/{w.hero}/tests", json={**body, "retry_of": hidden_id}, headers=w.headers("owner"))
    assert r.status_code == 422, r.text
    assert r.json()["detail"] == unknown.json()["detail"].replace("0" * 32, hidden_id)


# --- player_access (issue 21 item 5, API.md round 3) ------------------------------------------

ACCESS_ROUTES = [  # a route on a character the caller does not own -> status by player_access
    ("GET", "/v1/characters/{id}", None, {"none": 404, "limited": 200, "observer": 200}),
    ("GET", "/v1/characters/{id}/level-ups", None, {"none": 404, "limited": 200, "observer": 200}),
    ("PATCH", "/v1/characters/{id}", {"name": "Renamed"}, {"none": 404, "limited": 403, "observer": 403}),
    ("PATCH", "/v1/characters/{id}", {"name": ""}, {"none": 404, "limited": 403, "observer": 403}),
    ("DELETE", "/v1/characters/{id}", None, {"none": 404, "limited": 403, "observer": 403}),
    ("POST", "/v1/characters/{id}/tests", "test", {"none": 404, "limited": 403, "observer": 403}),
    ("POST", "/v1/characters/{id}/tests/odds", "odds", {"none": 404, "limited": 403, "observer": 403}),
    ("POST", "/v1/characters/{id}/level-ups", "level_up", {"none": 404, "limited": 403, "observer": 403}),
]


@pytest.mark.parametrize("ruleset", sorted(SHEETS))
def test_player_access_matrix(client, ruleset):
    """Every character route x player_access, for a player who does not own the character (the
    owner and the GM always get what the route gives them): `none` answers as an unknown id,
    `limited` and `observer` as a character the player knows of; the list and the single read
    show `limited` as the limited view."""
    w = build_world(client, ruleset)
    level_up = {"mode": "one_d20", "stats": ["force"], "chance_bonus_pool": "hp"}  # GM only: refused before its body
    for access in ("none", "limited", "observer"):
        r = client.patch(f"/v1/characters/{w.foe}", json={"player_access": access}, headers=w.headers("gm"))
        assert r.status_code == 200, r.text
        for method, path, body, expected in ACCESS_ROUTES:
            body = (
                {
                    "test": TEST_BODIES[ruleset],
                    "odds": {k: v for k, v in TEST_BODIES[ruleset].items() if k not in ("seed", "dice", "hidden")},
                    "level_up": level_up,
                }.get(body, body)
                if isinstance(body, str)
                else body
            )
            r = client.request(method, path.format(id=w.foe), json=body, headers=w.headers("player"))
            assert r.status_code == expected[access], (access, method, path, r.text)
            if method == "GET" and path == "/v1/characters/{id}" and r.status_code == 200:
                assert ("sheet" in r.json()) is (access == "observer"), r.json()
        listed = {
            c["id"]: c
            for c in client.get(f"/v1/campaigns/{w.cid}/characters", headers=w.headers("player")).json()["items"]
        }
        assert (w.foe in listed) is (access != "none")
        gm = client.get(f"/v1/characters/{w.foe}", headers=w.headers("gm"))
        assert gm.status_code == 200 and "sheet" in gm.json() and gm.json()["player_access"] == access
