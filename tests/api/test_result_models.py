"""Every result the API returns — every operation of the four rulesets, the roll
log, the level-up history and the event stream — validated strictly against the
model its route documents (app.rulesets.wire): JSON types exact, fields the
model does not declare refused. A body that grows, loses or retypes a field fails
here until its model (and so openapi.json) says so; and every result model must
be met at least once, so a new one cannot go unchecked."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.routing import APIRoute
from pydantic import TypeAdapter

from app.api import encounters, play, rolls
from app.rulesets.wire import StartedPublic
from app.rulesets.wire import RESULTS, CombatPage, LevelUpPage, LogPage
from app.models.results.common import RollResult, SheetEditEntry
from app.rulesets.events import EVENTS
from app.rulesets.registry import all_adapters
from app.rulesets.contract.adapter import Capability
from tests.api.support import read_events
from tests.factories import AS, GC, RB, SHEETS, WA, sheet

GC_SHEET = SHEETS[GC]
AS_SHEET = sheet(AS, drop=("weapons", "tier"), heroism=9)  # heroism for every heroic action
RB_SHEET = sheet(RB, drop=("armor",))
WA_SHEET = sheet(WA, keep=("level", "stats", "hp", "hp_max"))

TESTS = "/v1/characters/{character_id}/tests"
ODDS = "/v1/characters/{character_id}/tests/odds"
REROLL = "/v1/characters/{character_id}/tests/{test_id}/reroll"
ACTIONS = "/v1/characters/{character_id}/actions"
LEVEL_UPS = "/v1/characters/{character_id}/level-ups"
OPPOSED = "/v1/campaigns/{campaign_id}/tests/opposed"
GROUP = "/v1/campaigns/{campaign_id}/tests/group"
ROLLS = "/v1/campaigns/{campaign_id}/rolls"
ENTRY = "/v1/campaigns/{campaign_id}/rolls/{entry_id}"
ENCOUNTERS = "/v1/campaigns/{campaign_id}/encounters"
START = "/v1/encounters/{encounter_id}/start"
ACT = "/v1/encounters/{encounter_id}/actions"
NEXT_TURN = "/v1/encounters/{encounter_id}/next-turn"
REVERT = "/v1/encounters/{encounter_id}/actions/{action_id}/revert"
# the operations of each capability (tests: also the free roll and the reads)
CAPABILITY_ROUTES = {
    Capability.TEST: TESTS,
    Capability.ODDS: ODDS,
    Capability.REROLL: REROLL,
    Capability.ACTION: ACTIONS,
    Capability.LEVEL_UP: LEVEL_UPS,
    Capability.OPPOSED: OPPOSED,
    Capability.GROUP: GROUP,
}


def _documented() -> dict[tuple[str, str], Any]:
    """(method, path) -> the response model its route declares."""
    out = {}
    for router in (play.router, rolls.router, encounters.router):
        for route in router.routes:
            if isinstance(route, APIRoute):
                out.update({(method, route.path): route.response_model for method in route.methods})
    return out


DOCUMENTED = _documented()


class Wire:
    """Calls the API and validates each 2xx body against its route's documented model."""

    def __init__(self, client):
        self.client = client
        self.met: set[type] = set()
        self.operations: set[tuple[str, str, str]] = set()  # (ruleset, method, route)

    def call(self, ruleset: str, method: str, route: str, headers: dict, body: Any = None, **params: str) -> dict:
        r = self.client.request(method, route.format(**params), json=body, headers=headers)
        expected = 200 if method == "GET" or route == ODDS else 201
        assert r.status_code == expected, (method, route, body, r.text)
        value = TypeAdapter(DOCUMENTED[(method, route)]).validate_json(r.content, strict=True)
        if isinstance(value, (LogPage, LevelUpPage, CombatPage)):
            self.met.update(type(item) for item in value.items)
        else:
            self.met.add(type(value.action) if isinstance(value, StartedPublic) else type(value))
        self.operations.add((ruleset, method, route))
        return r.json()


class Table:
    """One campaign of a ruleset, played through `Wire`."""

    def __init__(self, wire: Wire, campaign, character_factory):
        self.wire, self.camp, self.make = wire, campaign, character_factory

    def character(self, sheet: dict, **kw) -> str:
        return self.make(self.camp, sheet, **kw)["id"]

    def post(self, route: str, body: dict, character_id: str | None = None, **params: str) -> dict:
        if character_id is not None:
            params["character_id"] = character_id
        return self.wire.call(self.camp.ruleset, "POST", route, self.camp.gm, body, campaign_id=self.camp.id, **params)

    def get(self, route: str, **params: str) -> dict:
        return self.wire.call(self.camp.ruleset, "GET", route, self.camp.gm, campaign_id=self.camp.id, **params)

    def read_back(self, character_ids: list[str]) -> None:
        """The whole log (each entry also on its own), each character's level-ups, the event stream."""
        page = self.get(ROLLS + "?limit=500")
        assert page["next_cursor"] is None and page["items"]
        for entry in page["items"]:
            self.get(ENTRY, entry_id=entry["id"])
        for cid in character_ids:
            self.get(LEVEL_UPS, character_id=cid)
        for event in read_events(self.wire.client, self.camp.id, self.camp.gm):
            EVENTS[event["type"]].model_validate_json(json.dumps(event["data"]), strict=True)
            self.wire.met.add(EVENTS[event["type"]])


DOCUMENTED.update({("GET", ROLLS + "?limit=500"): DOCUMENTED[("GET", ROLLS)]})


def fight(
    t: Table, sides: dict[str, tuple[str, dict, dict]], actions: list[dict[str, Any]], resource: str = "hp"
) -> None:
    """An encounter of these characters (name -> (kind, sheet, combatant fields); `<Name>` in an
    action stands for its combatant), started with a seed, these actions, the GM's heal, damage
    and condition, a next-turn and a revert; its history read by the GM, and by a player under
    `hp_visibility: status` (the hidden combatant and its actions left out)."""
    client, camp = t.wire.client, t.camp
    r = client.post(f"/v1/campaigns/{camp.id}/players", json={"name": "Watcher"}, headers=camp.gm)
    assert r.status_code == 201, r.text
    watcher = {"Authorization": f"Bearer {r.json()['token']}"}
    combatants = [
        {"character_id": t.character(sheet, kind=kind, name=name), **extra}
        for name, (kind, sheet, extra) in sides.items()
    ]
    state = t.post(ENCOUNTERS, {"name": "Skirmish", "options": {"hp_visibility": "status"}, "combatants": combatants})
    eid, ids = state["id"], {f"<{c['name']}>": c["id"] for c in state["combatants"]}
    at = {"encounter_id": eid}
    t.post(START, {"seed": 11}, **at)
    first, second = list(ids.values())[:2]
    for action in actions:
        t.post(ACT, {k: ids.get(v, v) if isinstance(v, str) else v for k, v in action.items()}, **at)
    t.post(ACT, {"type": "damage", "target_id": second, "amount": 2, "resource": resource}, **at)
    t.post(ACT, {"type": "heal", "target_id": second, "amount": 1}, **at)
    t.post(ACT, {"type": "condition", "target_id": first, "add": {"name": "stunned", "rounds": 1}}, **at)
    t.post(NEXT_TURN, {"seed": 12}, **at)
    t.post(NEXT_TURN, {"seed": 13}, **at)
    latest = t.post(
        ACT,
        {"type": "condition", "actor_id": first, "target_id": second, "add": {"name": "marked"}, "hidden": True},
        **at,
    )
    t.post(REVERT, {}, action_id=latest["id"], **at)
    t.get(ACT + "?limit=500", **at)
    t.wire.call(camp.ruleset, "GET", ACT + "?limit=500", watcher, encounter_id=eid)


DOCUMENTED.update({("GET", ACT + "?limit=500"): DOCUMENTED[("GET", ACT)]})


def play_great_cosmos(t: Table) -> list[str]:
    hero = t.character(GC_SHEET)
    lucky = t.character({**GC_SHEET, "karma": 6})
    t.post(TESTS, {"stat": "force", "dice": [42]}, hero)
    t.post(TESTS, {"stat": "furtivite", "modifier": -10, "seed": 3}, lucky)  # karma d10
    t.post(TESTS, {"stat": "intuition", "dice": [2]}, hero)
    for body in ({"stat": "chance"}, {"stat": "intuition"}):
        t.post(ODDS, body, hero)
    for level, body in (
        (1, {"mode": "two_d10", "stats": ["force", "esprit"]}),
        (2, {}),
        (3, {"pool": "hp"}),
        (4, {"transfers": [{"from": "charisme", "to": "force", "points": 5}], "light": 1, "dark": 2}),
        (5, {"changes": {"esprit": 5, "mp_max": 10}}),
    ):
        c = t.character({**GC_SHEET, "level": level})
        t.post(LEVEL_UPS, {**body, "chance_bonus_pool": "hp", "seed": level}, c)
    r = t.wire.client.patch(f"/v1/characters/{hero}", json={"sheet": {"karma": 3}}, headers=t.camp.gm)
    assert r.status_code == 200, r.text  # a GM edit of a governed field: a sheet_edit entry
    t.post(ROLLS, {"expression": "4d6kh3", "purpose": "stats", "character_id": hero, "seed": 5})
    t.post(ROLLS, {"expression": "d100", "dice": [7], "hidden": True})
    gm, camp = t.camp.gm, t.camp.id  # the other events: campaign.updated, player.created, character.deleted,
    # player.deleted
    fight(
        t,
        {
            "Aiko": ("pc", GC_SHEET, {"position": {"x": 0, "y": 0}}),
            "Brute": ("npc", GC_SHEET, {"position": {"x": 1, "y": 0}, "reaction": "parry"}),
            "Shade": ("npc", GC_SHEET, {"position": {"x": 5, "y": 5}, "hidden": True}),
        },
        [
            {"type": "posture", "actor_id": "<Aiko>", "posture": "illumination", "seed": 1},
            {"type": "attack", "actor_id": "<Aiko>", "target_id": "<Brute>", "damage": "1d6", "seed": 2},
            {"type": "move", "actor_id": "<Aiko>", "to": {"x": 0, "y": 1}},
            {"type": "dash", "actor_id": "<Shade>", "seed": 3},
            {
                "type": "attack",
                "actor_id": "<Brute>",
                "target_id": "<Aiko>",
                "kind": "ranged",
                "damage": "1d6",
                "seed": 4,
            },
            {"type": "posture", "actor_id": "<Brute>", "posture": "offensive"},
        ],
    )
    for method, path, body, status in (
        ("PATCH", f"/v1/campaigns/{camp}", {"name": "Renamed"}, 200),
        ("POST", f"/v1/campaigns/{camp}/players", {"name": "Alice"}, 201),
        ("DELETE", f"/v1/characters/{t.character(GC_SHEET)}", None, 204),
    ):
        assert t.wire.client.request(method, path, json=body, headers=gm).status_code == status
    bob = t.wire.client.post(f"/v1/campaigns/{camp}/players", json={"name": "Bob"}, headers=gm).json()
    assert t.wire.client.delete(f"/v1/campaigns/{camp}/players/{bob['id']}", headers=gm).status_code == 204
    return [hero, lucky]


def play_asgard(t: Table) -> list[str]:
    hero = t.character(AS_SHEET)
    ally = t.character(AS_SHEET, name="Ally")
    npc = t.character({**AS_SHEET, "tier": "boss"}, kind="npc", name="Jarl")
    failed = t.post(TESTS, {"skill": "combat", "difficulty": "heroique", "dice": [1, 2, 3]}, hero)
    t.post(TESTS, {"skill": "survie", "seed": 2}, hero)  # an open test: a degree
    t.post(TESTS, {"skill": "combat", "difficulty": "automatique"}, hero)
    t.post(TESTS, {"skill": "combat", "difficulty": "heroique", "retry_of": failed["id"]}, hero)
    t.post(TESTS, {"skill": "combat", "difficulty": "moyen", "take_11": True}, npc)
    rolled = t.post(TESTS, {"skill": "defense", "difficulty": "moyen", "heroism_4d6": True, "seed": 4}, hero)
    t.post(REROLL, {"seed": 5}, hero, test_id=rolled["id"])
    for body in ({"skill": "combat", "difficulty": "moyen"}, {"skill": "survie"}):
        t.post(ODDS, body, hero)
    t.post(
        OPPOSED,
        {
            "a": {"character_id": hero, "skill": "combat", "heroism_4d6": True},
            "b": {"character_id": npc, "skill": "defense"},
            "seed": 6,
        },
    )
    t.post(
        GROUP,
        {
            "skill": "survie",
            "difficulty": "moyen",
            "seed": 7,
            "participants": [{"character_id": hero}, {"character_id": ally, "heroism_4d6": True}],
        },
    )
    for body in (
        {"type": "fall", "metres": 7, "voluntary": True},
        {"type": "fire", "size": "campfire", "rounds": 2},
        {"type": "asphyxia", "rounds": 4},
        {"type": "chase", "mode": "foot", "progression": 1},
        {"type": "heroic_effect", "asset": "Fils de Thor"},
        {"type": "cancel_damage", "damage": 3, "already_applied": True},
        {"type": "protect_ally", "ally_id": ally, "damage": 4, "protection": True},
        {"type": "rest", "healer_soins": 4},
        {"type": "damage", "amount": 100},
        {"type": "mal_en_point", "damage": 3},
        {"type": "first_aid", "healer_soins": 6},
    ):
        t.post(ACTIONS, {**body, "seed": 8}, hero)
    fight(
        t,
        {
            "Sigrid": ("pc", AS_SHEET, {}),
            "Jarl": ("npc", {**AS_SHEET, "tier": "boss"}, {}),
            "Ulf": ("npc", AS_SHEET, {"hidden": True}),
        },
        [
            {"type": "attack", "actor_id": "<Sigrid>", "target_id": "<Jarl>", "damage": "2d6", "seed": 4},
            {
                "type": "attack",
                "actor_id": "<Jarl>",
                "target_id": "<Sigrid>",
                "damage": "1d6",
                "take_11": True,
                "primes": ["efficacite"],
                "penalties": ["danger"],
                "seed": 5,
            },
            {"type": "damage", "target_id": "<Sigrid>", "amount": 15},  # then AS-C5: dying, unconscious
            {
                "type": "attack",
                "actor_id": "<Ulf>",
                "target_id": "<Sigrid>",
                "damage": "3d6",
                "unperceived": True,
                "dice": [6, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1],
            },
        ],
        resource="vitality",
    )
    return [hero, ally, npc]


def play_rulebook_d100(t: Table) -> list[str]:
    hero = t.character(RB_SHEET)
    foe = t.character({**RB_SHEET, "stats": {"FOR": 40, "HAB": 70}}, name="Foe")
    third = t.character(RB_SHEET, name="Third")
    t.post(TESTS, {"stat": "FOR", "skill": "escrime", "difficulty": "difficile", "dice": [37]}, hero)
    t.post(TESTS, {"stat": "HAB", "skill": "nage", "overflow_crit": True, "seed": 1}, hero)
    t.post(ODDS, {"stat": "FOR", "skill": "escrime"}, hero)
    t.post(OPPOSED, {"a": {"character_id": hero, "stat": "FOR"}, "b": {"character_id": foe, "stat": "HAB"}, "seed": 2})
    t.post(
        OPPOSED,
        {
            "a": {"character_id": hero, "stat": "FOR"},
            "b": {"character_id": third, "stat": "FOR"},
            "tiebreak": False,
            "dice": [23, 23],
        },
    )  # a draw
    fight(
        t,
        {
            "Hero": ("pc", RB_SHEET, {}),
            "Foe": ("npc", RB_SHEET, {"reaction": "absorb"}),
            "Lurker": ("npc", RB_SHEET, {"hidden": True}),
        },
        [
            {"type": "attack", "actor_id": "<Hero>", "target_id": "<Foe>", "damage": "1d6", "seed": 6},
            {
                "type": "attack",
                "actor_id": "<Foe>",
                "target_id": "<Hero>",
                "damage": "1d6",
                "kind": "morale",
                "seed": 7,
            },
        ],
    )
    t.post(
        GROUP,
        {
            "stat": "HAB",
            "seed": 3,
            "participants": [
                {"character_id": hero},
                {"character_id": foe, "skill": "escrime"},
                {"character_id": third, "dice": [50]},
            ],
        },
    )
    return [hero, foe, third]


def play_worlds_awakening(t: Table) -> list[str]:
    hero = t.character(WA_SHEET)
    t.post(ACTIONS, {"type": "pending_modifier", "stat": "FOR", "value": 2}, hero)
    t.post(ACTIONS, {"type": "challenge", "name": "crochetage", "successes_needed": 2, "failures_allowed": 1}, hero)
    t.post(TESTS, {"stat": "FOR", "difficulty": "moderee", "for_challenge": "crochetage", "dice": [15]}, hero)
    t.post(TESTS, {"stat": "DEX", "target": 12, "seed": 4}, hero)
    t.post(ODDS, {"stat": "CHA", "difficulty": "difficile"}, hero)
    t.post(ACTIONS, {"type": "challenge_remove", "name": "crochetage"}, hero)
    t.post(ACTIONS, {"type": "pending_modifier", "stat": "FOR", "value": -2}, hero)
    fight(
        t,
        {"Hero": ("pc", WA_SHEET, {}), "Foe": ("npc", WA_SHEET, {}), "Lurker": ("npc", WA_SHEET, {"hidden": True})},
        [
            {"type": "attack", "actor_id": "<Hero>", "target_id": "<Foe>", "damage": "1d6", "seed": 8},
            {
                "type": "attack",
                "actor_id": "<Foe>",
                "target_id": "<Hero>",
                "kind": "magical",
                "damage": "2d4",
                "seed": 9,
            },
        ],
    )
    return [hero]


def play_an_encounter(wire: Wire, campaign, character_factory) -> None:
    """An encounter's events (encounter.*, and the character.created of NPC copies), validated;
    its own campaign, as the roll log's combat entries are documented with the encounters."""
    t = Table(wire, campaign, character_factory)
    client, gm = wire.client, campaign.gm
    hero = t.character(WA_SHEET)
    goblin = t.character({**WA_SHEET, "stats": {**WA_SHEET["stats"], "DEX": 0}}, kind="npc", name="Goblin")
    r = client.post(
        f"/v1/campaigns/{campaign.id}/encounters",
        headers=gm,
        json={"name": "Ambush", "combatants": [{"character_id": hero}, {"character_id": goblin, "count": 2}]},
    )
    assert r.status_code == 201, r.text
    eid, target = r.json()["id"], r.json()["combatants"][1]["id"]
    assert client.post(f"/v1/encounters/{eid}/start", json={"seed": 1}, headers=gm).status_code == 201
    r = client.post(
        f"/v1/encounters/{eid}/actions",
        headers=gm,
        json={"type": "condition", "target_id": target, "add": {"name": "cursed"}},
    )
    assert r.status_code == 201, r.text
    assert client.post(f"/v1/encounters/{eid}/actions/{r.json()['id']}/revert", json={}, headers=gm).status_code == 201
    assert client.post(f"/v1/encounters/{eid}/end", headers=gm).status_code == 200  # a state, not a new resource
    for access in ("limited", "none"):  # shown to players, then hidden from them: `character.hidden`
        r = client.patch(f"/v1/characters/{goblin}", json={"player_access": access}, headers=gm)
        assert r.status_code == 200, r.text
    r = client.post(f"/v1/campaigns/{campaign.id}/webhooks", json={"url": "https://hooks.example.com/a"}, headers=gm)
    assert r.status_code == 201, r.text  # disabled by the GM: `webhook.disabled`
    r = client.patch(f"/v1/campaigns/{campaign.id}/webhooks/{r.json()['id']}", json={"enabled": False}, headers=gm)
    assert r.status_code == 200, r.text
    # verifiable dice: a new epoch salted, a hidden roll, the reveal, the roll published
    r = client.post(f"/v1/campaigns/{campaign.id}/dice-epochs/current/reveal", headers=gm)
    assert r.status_code == 200, r.text
    r = client.post(f"/v1/campaigns/{campaign.id}/dice-epochs/current/salts", json={"salt": "sel"}, headers=gm)
    assert r.status_code == 201, r.text
    hidden = client.post(f"/v1/campaigns/{campaign.id}/rolls", json={"expression": "2d6", "hidden": True}, headers=gm)
    assert hidden.status_code == 201, hidden.text
    r = client.post(f"/v1/campaigns/{campaign.id}/dice-epochs/current/reveal", headers=gm)
    assert r.status_code == 200, r.text
    r = client.post(f"/v1/campaigns/{campaign.id}/rolls/{hidden.json()['id']}/publish", headers=gm)
    assert r.status_code == 200, r.text
    for event in read_events(client, campaign.id, gm):
        EVENTS[event["type"]].model_validate_json(json.dumps(event["data"]), strict=True)
        wire.met.add(EVENTS[event["type"]])


PLAYS = {
    "great-cosmos": play_great_cosmos,
    "asgard": play_asgard,
    "rulebook-d100": play_rulebook_d100,
    "worlds-awakening": play_worlds_awakening,
}


def test_every_result_of_every_ruleset_matches_its_model(client, campaign_factory, character_factory):
    wire = Wire(client)
    for ruleset, play_it in PLAYS.items():
        table = Table(wire, campaign_factory(ruleset), character_factory)
        table.read_back(play_it(table))
    play_an_encounter(wire, campaign_factory("worlds-awakening"), character_factory)
    every_model = {m for caps in RESULTS.values() for models in caps.values() for m in models}
    every_model |= {RollResult, SheetEditEntry, *EVENTS.values()} - {EVENTS["error"]}
    assert sorted(m.__name__ for m in every_model - wire.met) == []
    for adapter in all_adapters():  # each operation the ruleset offers was called
        for capability, route in CAPABILITY_ROUTES.items():
            if adapter.supports(capability):
                assert (adapter.id, "POST", route) in wire.operations, (adapter.id, capability)


def test_results_are_declared_for_exactly_what_each_ruleset_supports():
    """The adapters say what a ruleset offers; its results module must model each of those results."""
    for adapter in all_adapters():
        declared = RESULTS[adapter.id]
        for capability in Capability:
            assert adapter.supports(capability) == bool(declared.get(capability.value)), (adapter.id, capability)
        if adapter.supports(Capability.ACTION):
            types = {m.model_fields["type"].annotation.__args__[0] for m in declared["action"]}
            assert types == {
                m.model_fields["type"].annotation.__args__[0] for m in adapter.request_models(Capability.ACTION)
            }


def test_a_result_with_an_undeclared_field_is_refused():
    body = {
        "id": "e1",
        "kind": "roll",
        "expression": "d6",
        "total": 3,
        "purpose": "roll",
        "character_id": None,
        "rolls": [{"die": "d6", "value": 3, "purpose": "roll"}],
        "hidden": False,
        "created_at": "2026-11-29T12:00:00.000000Z",
        "provenance": "server",
    }
    TypeAdapter(DOCUMENTED[("GET", ENTRY)]).validate_json(json.dumps(body), strict=True)
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        TypeAdapter(DOCUMENTED[("GET", ENTRY)]).validate_json(json.dumps({**body, "surprise": 1}), strict=True)
