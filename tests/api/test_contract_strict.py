"""Issue 25 items 3 and 4: the served openapi.json holds as a strict validator reads it (JSON
Schema Draft 2020-12, `jsonschema`, formats checked): every documented example is valid, and
valid for its own ruleset's variant (exactly one where the body is a `oneOf`); a real answer of
each ruleset (a campaign, a character, a test, the log, a fight) is valid against its
operation's schema; and twelve kinds of invalid body are refused by the document."""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

import pytest
from jsonschema import Draft202012Validator

from app.api.openapi_doc import own_properties, prefix
from app.kit.errors import CODES
from app.openapi import render
from app.rulesets.events import EVENTS
from app.rulesets.registry import REGISTRY
from tests.api.encounter_support import ids, table  # noqa: F401  (the fixture)
from tests.api.support import assert_problem, read_events
from tests.factories import GC, RULESETS, SHEETS, TEST_BODIES, sheet

SPEC = json.loads(render())
COMPONENTS = SPEC["components"]["schemas"]
JSON = "application/json"


def validator(schema: dict[str, Any]) -> Draft202012Validator:
    """A strict validator of `schema`, its `#/components/...` references resolved in the document."""
    root = {"$schema": "https://json-schema.org/draft/2020-12/schema", "components": SPEC["components"], **schema}
    Draft202012Validator.check_schema(root)
    return Draft202012Validator(root, format_checker=Draft202012Validator.FORMAT_CHECKER)


def errors(schema: dict[str, Any], value: Any) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message[:300]}" for e in validator(schema).iter_errors(value)]


def operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in SPEC["paths"].items():
        for method, operation in methods.items():
            yield method, path, operation


def body_schema(method: str, path: str) -> dict[str, Any]:
    return SPEC["paths"][path][method]["requestBody"]["content"][JSON]["schema"]


def variants(schema: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
    for keyword in ("oneOf", "anyOf"):
        if keyword in schema and all("x-ruleset" in c for c in schema[keyword]):
            return keyword, schema[keyword]
    return None, []


def test_every_documented_example_is_valid_for_its_own_ruleset_and_exactly_one_variant_of_a_one_of():
    checked = 0
    for method, path, operation in operations():
        content = operation.get("requestBody", {}).get("content", {}).get(JSON)
        if content is None:
            continue
        schema = content["schema"]
        keyword, choices = variants(schema)
        for name, example in content.get("examples", {}).items():
            assert errors(schema, example["value"]) == [], (method, path, name)
            matched = [c["x-ruleset"] for c in choices if not errors(c, example["value"])]
            assert name.split(" ")[0] in matched, (method, path, name, matched)
            if keyword == "oneOf":
                assert matched == [name.split(" ")[0]], (method, path, name)
            checked += 1
    for name, component in COMPONENTS.items():
        for example in component.get("examples", []):
            assert errors({"$ref": f"#/components/schemas/{name}"}, example) == [], (name, example)
            checked += 1
    assert checked > 60


def test_ruleset_bodies_are_one_of_only_where_no_body_fits_two_rulesets():
    """A Rulebook D100 stat is any name its GM chose (RB-S1): a test body cannot tell that ruleset
    from Great Cosmos or Worlds Awakening, so it is an `anyOf`; Asgard's (a `skill`, no `stat`)
    and the unions by `type` are told apart, so the level-up, reroll and group bodies stay `oneOf`."""
    shapes = {
        (path, method): variants(body_schema(method, path))[0]
        for method, path, operation in operations()
        if variants(operation.get("requestBody", {}).get("content", {}).get(JSON, {}).get("schema", {}))[0]
    }
    assert shapes[("/v1/characters/{character_id}/tests", "post")] == "anyOf"
    assert shapes[("/v1/characters/{character_id}/tests/odds", "post")] == "anyOf"
    assert shapes[("/v1/encounters/{encounter_id}/actions", "post")] == "anyOf"  # `attack` in each ruleset
    assert shapes[("/v1/characters/{character_id}/level-ups", "post")] == "oneOf"
    assert shapes[("/v1/characters/{character_id}/tests/{test_id}/reroll", "post")] == "oneOf"
    tests = body_schema("post", "/v1/characters/{character_id}/tests")
    matched = [c["x-ruleset"] for c in tests["anyOf"] if not errors(c, {"stat": "force", "dice": [42]})]
    assert matched == ["great-cosmos", "rulebook-d100"]  # what made every strict validator refuse it
    assert errors(tests, {"stat": "force", "dice": [42]}) == []


TEST = ("post", "/v1/characters/{character_id}/tests")
ODDS = ("post", "/v1/characters/{character_id}/tests/odds")
ACT = ("post", "/v1/encounters/{encounter_id}/actions")
CAMPAIGN = ("post", "/v1/campaigns")
CHARACTER = ("post", "/v1/campaigns/{campaign_id}/characters")
LEVEL_UP = ("post", "/v1/characters/{character_id}/level-ups")
# the twelve kinds of invalid body a strict validator must refuse
INVALID: list[tuple[str, tuple[str, str], Any]] = [
    ("no stat nor skill", TEST, {"modifier": 1}),
    ("an unknown field", TEST, {"stat": "force", "bogus": 1}),
    ("a bound passed", TEST, {"stat": "force", "modifier": 5000}),
    ("a number as a string", TEST, {"stat": "force", "modifier": "5"}),
    ("a stat no ruleset names (RB-S1's names are words)", TEST, {"stat": "for ce!"}),
    ("dice on odds (nothing is rolled)", ODDS, {"stat": "force", "dice": [4]}),
    ("an unknown action type", ACT, {"type": "teleport", "actor_id": "a"}),
    ("an attack without a target", ACT, {"type": "attack", "actor_id": "a"}),
    ("an unknown ruleset", CAMPAIGN, {"name": "Les Ombres", "ruleset": "d-and-d"}),
    ("an empty name", CAMPAIGN, {"name": "", "ruleset": "asgard"}),
    ("a character kind that is not pc or npc", CHARACTER, {"name": "Boss", "kind": "boss", "sheet": {}}),
    ("not an object", LEVEL_UP, ["stat", "force"]),
]


def _schema_of(method: str, path: str) -> dict[str, Any]:
    return body_schema(method, path)


@pytest.mark.parametrize(("what", "where", "body"), INVALID, ids=[what for what, _, _ in INVALID])
def test_the_twelve_kinds_of_invalid_body_are_refused_by_the_document(what, where, body):
    assert errors(_schema_of(*where), body) != [], what


def test_the_log_kind_is_an_enum_and_an_unknown_kind_is_a_422(client, campaign_factory):
    parameter = next(
        p for p in SPEC["paths"]["/v1/campaigns/{campaign_id}/rolls"]["get"]["parameters"] if p["name"] == "kind"
    )
    from tests.api.test_openapi import kinds

    assert set(kinds(COMPONENTS["LogEntry"])) == {v for s in parameter["schema"]["anyOf"] for v in s.get("enum", [])}
    assert errors(parameter["schema"], "attack") != []
    camp = campaign_factory("great-cosmos")
    r = client.get(f"/v1/campaigns/{camp.id}/rolls?kind=attack", headers=camp.gm)
    assert r.status_code == 422, r.text
    assert client.get(f"/v1/campaigns/{camp.id}/rolls?kind=roll", headers=camp.gm).status_code == 200


def test_campaign_create_ruleset_is_the_registered_rulesets():
    """`CampaignCreate` is a union by `ruleset`: its discriminator's values are the registered rulesets."""
    union = COMPONENTS["CampaignCreate"]
    assert sorted(union["discriminator"]["mapping"]) == sorted(RULESETS)
    assert [
        COMPONENTS[r.rsplit("/", 1)[1]]["properties"]["ruleset"]["const"]
        for r in union["discriminator"]["mapping"].values()
    ] == list(union["discriminator"]["mapping"])


# --- sheets and options, typed (issue 25 item 3) --------------------------------------------------
OPTIONS = {
    "great-cosmos": {"extreme_scores": True},
    "asgard": {"gm_difficulty": 12},
    "rulebook-d100": {"crit_failure_ruins_over_100": False},
    "worlds-awakening": {"players_may_enter_dice": True},
}
ENCOUNTER_OPTIONS = {
    "great-cosmos": {"tie_method": "parallel"},
    "asgard": {"hp_visibility": "status"},
    "rulebook-d100": {"reveal_on_turn": False},
    "worlds-awakening": {"hp_visibility": "hidden"},
}
CAMPAIGN_UNIONS = ("CampaignCreate", "CampaignPublic", "CampaignCreated", "CampaignUpdatedEvent")


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def test_a_campaign_is_a_union_by_ruleset_its_options_that_rulesets_component():
    """A campaign (created, read, its event, a new one) carries its `ruleset`: a union discriminated
    by it, each variant's `options` the ruleset's named options, which refuse another ruleset's."""
    for name in CAMPAIGN_UNIONS:
        union = COMPONENTS[name]
        assert union["discriminator"]["propertyName"] == "ruleset" and sorted(
            union["discriminator"]["mapping"]
        ) == sorted(RULESETS)
        for ruleset, ref in union["discriminator"]["mapping"].items():
            variant = COMPONENTS[ref.rsplit("/", 1)[1]]
            assert variant["properties"]["ruleset"]["const"] == ruleset
            options = variant["properties"]["options"]
            assert _ref(f"{prefix(ruleset)}Options") in (options.get("anyOf") or [options])
    for ruleset in RULESETS:
        body = {"name": "Les Ombres", "ruleset": ruleset, "options": OPTIONS[ruleset]}
        assert errors(_ref("CampaignCreate"), body) == []
        own = COMPONENTS[f"{prefix(ruleset)}Options"]["properties"]
        others = [r for r in RULESETS if OPTIONS[r].keys() - own.keys()]
        assert len(others) >= 2, ruleset
        for other in others:  # another ruleset's option: refused, as the server refuses it
            assert errors(_ref("CampaignCreate"), {**body, "options": OPTIONS[other]}) != [], (ruleset, other)


def test_the_bundles_are_unions_by_ruleset_their_sheets_and_options_that_rulesets():
    """An export bundle (an export's answer, an import's body) per ruleset: a character bundle
    discriminated by its `ruleset`, a campaign bundle by its campaign's (a `const` in each variant)."""
    characters = COMPONENTS["CharacterBundle"]
    assert characters["discriminator"]["propertyName"] == "ruleset"
    assert [m["$ref"].rsplit("/", 1)[1] for m in COMPONENTS["CampaignBundle"]["anyOf"]] == [
        f"{prefix(r)}CampaignBundle" for r in RULESETS
    ]
    for ruleset in RULESETS:
        name = prefix(ruleset)
        bundle = COMPONENTS[f"{name}CampaignBundle"]["properties"]
        assert bundle["campaign"] == _ref(f"{name}BundleCampaign")
        campaign = COMPONENTS[f"{name}BundleCampaign"]["properties"]
        assert campaign["ruleset"]["const"] == ruleset and campaign["options"] == _ref(f"{name}Options")
        assert bundle["characters"]["items"] == _ref(f"{name}BundleCharacter")
        assert COMPONENTS[f"{name}BundleCharacter"]["properties"]["sheet"] == _ref(f"{name}Sheet")
        encounter = COMPONENTS[bundle["encounters"]["items"]["$ref"].rsplit("/", 1)[1]]
        assert encounter["properties"]["options"]["$ref"].endswith("EncounterOptions")
        assert characters["discriminator"]["mapping"][ruleset] == f"#/components/schemas/{name}CharacterBundle"
        assert COMPONENTS[f"{name}CharacterBundle"]["properties"]["character"] == _ref(f"{name}BundleCharacter")


def test_sheets_and_options_without_a_ruleset_beside_are_the_rulesets_schemas():
    """Where the body does not say its ruleset (a new character's sheet, a campaign's or an
    encounter's options, an encounter's state), the property is the rulesets' schemas, each tagged
    with its rulesets: any of them (the server validates with the campaign's ruleset)."""
    sheet = COMPONENTS["CharacterCreate"]["properties"]["sheet"]
    assert sorted((m["$ref"], m["x-ruleset"]) for m in sheet["anyOf"]) == sorted(
        (f"#/components/schemas/{prefix(r)}Sheet", r) for r in RULESETS
    )
    for name in ("CampaignUpdate", "EncounterCreate", "EncounterUpdate"):
        options = COMPONENTS[name]["properties"]["options"]
        assert {"type": "null"} in options["anyOf"] and len(options["anyOf"]) > 2, name
    state = COMPONENTS["EncounterPublic"]["properties"]["options"]
    assert state == COMPONENTS["StartedPublic"]["properties"]["options"]
    assert [(m["$ref"].rsplit("/", 1)[1], m["x-ruleset"]) for m in state["oneOf"]] == [
        ("GreatCosmosEncounterOptionsPublic", "great-cosmos"),
        ("EncounterOptionsPublic", ["asgard", "rulebook-d100", "worlds-awakening"]),
    ]
    # served, every option is filled: what tells Great Cosmos' (`tie_method`) from the others'
    served = {"hp_visibility": "exact", "reveal_on_turn": True, "odds_for_players": "visible"}
    assert errors(state, {**served, "tie_method": "d20"}) == [] and errors(state, served) == []
    assert errors(_ref("GreatCosmosEncounterOptionsPublic"), served) != []
    assert errors(_ref("EncounterOptionsPublic"), {**served, "tie_method": "d20"}) != []


CAMPAIGN_UPDATE = ("patch", "/v1/campaigns/{campaign_id}")
ENCOUNTER = ("post", "/v1/campaigns/{campaign_id}/encounters")
# the sheets and options no ruleset accepts: refused by the document as by the server
INVALID_TYPED: list[tuple[str, tuple[str, str], Any]] = [
    ("a sheet of no ruleset", CHARACTER, {"name": "Aiko", "sheet": {"bogus": 1}}),
    ("a sheet that is not an object", CHARACTER, {"name": "Aiko", "sheet": [1]}),
    (
        "a campaign option of another ruleset",
        CAMPAIGN,
        {"name": "A", "ruleset": "asgard", "options": {"extreme_scores": True}},
    ),
    ("a campaign option of no ruleset", CAMPAIGN_UPDATE, {"options": {"bogus": True}}),
    ("an option of the wrong type", CAMPAIGN_UPDATE, {"options": {"players_may_enter_dice": [True]}}),
    ("an encounter option of no ruleset", ENCOUNTER, {"name": "A", "options": {"bogus": 1}}),
    ("an encounter option's unknown value", ENCOUNTER, {"name": "A", "options": {"hp_visibility": "all"}}),
]


@pytest.mark.parametrize(("what", "where", "body"), INVALID_TYPED, ids=[what for what, _, _ in INVALID_TYPED])
def test_invalid_sheets_and_options_are_refused_by_the_document_and_the_server(
    client, campaign_factory, what, where, body
):
    assert errors(_schema_of(*where), body) != [], what
    camp = campaign_factory("great-cosmos")
    url = where[1].replace("{campaign_id}", camp.id)
    r = client.request(where[0].upper(), url, json=body, headers=camp.gm)
    assert r.status_code == 422, r.text


# --- real answers, each ruleset ----------------------------------------------------------------


def _route(method: str, url: str) -> tuple[str, dict[str, Any]]:
    """The documented operation of a concrete URL."""
    path = url.split("?")[0]
    for template, methods in SPEC["paths"].items():
        if method in methods and re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", template), path):
            return template, methods[method]
    raise AssertionError(f"undocumented {method} {url}")


class Checked:
    def __init__(self, client, headers):
        self.client, self.headers, self.seen = client, headers, set()

    def __call__(self, method: str, url: str, body: Any = None, status: int = 200) -> Any:
        r = self.client.request(method.upper(), url, json=body, headers=self.headers)
        assert r.status_code == status, r.text
        template, operation = _route(method, url)
        schema = operation["responses"][str(status)]["content"][JSON]["schema"]
        assert errors(schema, r.json()) == [], (method, template)
        if body is not None and "requestBody" in operation:
            assert errors(operation["requestBody"]["content"][JSON]["schema"], body) == [], (method, template)
        self.seen.add((method, template))
        return r.json()


# an attack's damage, per ruleset: a weapon of the sheet or an expression
DAMAGE = {"great-cosmos": {"damage": "1d6"}, "asgard": {}, "rulebook-d100": {"damage": "1d6"}, "worlds-awakening": {}}


@pytest.mark.parametrize("ruleset", RULESETS)
def test_real_answers_of_each_ruleset_are_valid_against_the_served_document(client, ruleset):
    served = client.get("/openapi.json").json()
    assert served == SPEC
    created = {"name": "Strict", "ruleset": ruleset, "options": OPTIONS[ruleset]}
    assert errors(body_schema("post", "/v1/campaigns"), created) == []
    r = client.post("/v1/campaigns", json=created)
    assert r.status_code == 201, r.text
    assert errors(SPEC["paths"]["/v1/campaigns"]["post"]["responses"]["201"]["content"][JSON]["schema"], r.json()) == []
    camp = r.json()
    call = Checked(client, {"Authorization": f"Bearer {camp['gm_token']}"})
    cid = camp["id"]
    call("get", f"/v1/campaigns/{cid}")
    call("patch", f"/v1/campaigns/{cid}", {"options": OPTIONS[ruleset]})
    hero = call("post", f"/v1/campaigns/{cid}/characters", {"name": "Aiko", "sheet": SHEETS[ruleset]}, 201)
    foe = call(
        "post", f"/v1/campaigns/{cid}/characters", {"name": "Goblin", "kind": "npc", "sheet": SHEETS[ruleset]}, 201
    )
    call("get", f"/v1/characters/{hero['id']}")
    call("get", f"/v1/campaigns/{cid}/characters")
    call("post", f"/v1/characters/{hero['id']}/tests", TEST_BODIES[ruleset], 201)
    odds = {k: v for k, v in TEST_BODIES[ruleset].items() if k != "seed"}
    call("post", f"/v1/characters/{hero['id']}/tests/odds", odds)
    call("post", f"/v1/campaigns/{cid}/rolls", {"expression": "3d6+2", "seed": 3}, 201)
    enc = call(
        "post",
        f"/v1/campaigns/{cid}/encounters",
        {
            "name": "Ambush",
            "options": ENCOUNTER_OPTIONS[ruleset],
            "combatants": [{"character_id": hero["id"]}, {"character_id": foe["id"]}],
        },
        201,
    )
    eid = enc["id"]
    call("patch", f"/v1/encounters/{eid}", {"options": ENCOUNTER_OPTIONS[ruleset]})
    started = call("post", f"/v1/encounters/{eid}/start", {"seed": 5}, 201)
    actor = started["current"]["combatant_id"]
    target = next(c["id"] for c in started["combatants"] if c["id"] != actor)
    call(
        "post",
        f"/v1/encounters/{eid}/actions",
        {"type": "attack", "actor_id": actor, "target_id": target, "seed": 7, **DAMAGE[ruleset]},
        201,
    )
    call("post", f"/v1/encounters/{eid}/actions", {"type": "damage", "target_id": target, "amount": 1}, 201)
    call("post", f"/v1/encounters/{eid}/next-turn", {"seed": 9}, 201)
    call("get", f"/v1/encounters/{eid}")
    call("get", f"/v1/encounters/{eid}/actions")
    call("get", f"/v1/campaigns/{cid}/rolls?limit=500")
    # the bundles: each sheet and options its ruleset's, after a fight changed the sheets
    bundle = call("get", f"/v1/campaigns/{cid}/export")
    fits = [m["$ref"] for m in COMPONENTS["CampaignBundle"]["anyOf"] if not errors(m, bundle)]
    assert fits == [f"#/components/schemas/{prefix(ruleset)}CampaignBundle"]  # exactly one: its ruleset's
    call("post", "/v1/campaigns/import?dry_run=true", bundle)
    one = call("get", f"/v1/characters/{foe['id']}/export")
    call("post", f"/v1/campaigns/{cid}/characters/import", one, 201)
    other = next(r for r in RULESETS if r != ruleset)  # another ruleset's sheet: refused by both
    alien = {**one, "character": {**one["character"], "sheet": SHEETS[other]}}
    assert errors(body_schema("post", "/v1/campaigns/{campaign_id}/characters/import"), alien) != []
    r = client.post(f"/v1/campaigns/{cid}/characters/import", json=alien, headers=call.headers)
    assert r.status_code == 422, r.text
    assert len(call.seen) == 20
    # every event of the run (the GM's stream), its data valid against the schema `x-events` names
    documented = {e["event"]: e["data"] for e in SPEC["paths"]["/v1/campaigns/{campaign_id}/events"]["get"]["x-events"]}
    events = read_events(client, cid, call.headers)
    assert {"campaign.updated", "character.created", "character.updated", "log.created"} <= {e["type"] for e in events}
    assert [
        (e["type"], errors(documented[e["type"]], e["data"]))
        for e in events
        if errors(documented[e["type"]], e["data"])
    ] == []
    # and each message, as a client reads it (`event:`, `data:`, `id:`), is exactly one member of `Event`
    assert [e["type"] for e in events if errors(EVENT, message(e))] == []


def test_resources_are_value_and_max_never_null_or_a_status_and_a_pool_full_at_0_is_not_down(client):
    """Issue 25 item 3: `{value, max}` (a pool without a maximum, AS heroism: `{value}`), or
    `{status}` for a player under `hp_visibility: status`; a worlds-awakening fighter without
    magic (mp 0 of 0) is full, so `unhurt`, not `down`."""
    resource = COMPONENTS["CombatantPublic"]["properties"]["resources"]["additionalProperties"]
    assert errors(resource, {"value": 3, "max": None}) != [] and errors(resource, {"value": 3}) == []
    assert errors(resource, {"status": "down"}) == [] and errors(resource, {"status": "dead"}) != []
    r = client.post("/v1/campaigns", json={"name": "Status", "ruleset": "worlds-awakening"})
    gm = {"Authorization": f"Bearer {r.json()['gm_token']}"}
    cid = r.json()["id"]
    bob = client.post(f"/v1/campaigns/{cid}/players", json={"name": "Bob"}, headers=gm).json()
    npc = client.post(
        f"/v1/campaigns/{cid}/characters",
        json={"name": "Orc", "kind": "npc", "sheet": SHEETS["worlds-awakening"], "player_access": "observer"},
        headers=gm,
    ).json()
    assert (npc["sheet"]["mp"], npc["sheet"]["mp_max"]) == (0, 0)
    enc = client.post(
        f"/v1/campaigns/{cid}/encounters",
        json={"name": "A", "options": {"hp_visibility": "status"}, "combatants": [{"character_id": npc["id"]}]},
        headers=gm,
    ).json()
    seen = client.get(f"/v1/encounters/{enc['id']}", headers={"Authorization": f"Bearer {bob['token']}"})
    assert seen.status_code == 200, seen.text
    assert seen.json()["combatants"][0]["resources"] == {"hp": {"status": "unhurt"}, "mp": {"status": "unhurt"}}
    schema = SPEC["paths"]["/v1/encounters/{encounter_id}"]["get"]["responses"]["200"]["content"][JSON]["schema"]
    assert errors(schema, seen.json()) == []
    assert client.get(f"/v1/encounters/{enc['id']}", headers=gm).json()["combatants"][0]["resources"] == {
        "hp": {"value": 12, "max": 12},
        "mp": {"value": 0, "max": 0},
    }


def test_the_encounter_state_is_typed_current_order_conditions_kind():
    combatant = COMPONENTS["CombatantPublic"]["properties"]
    assert {"kind", "conditions", "resources", "position"} <= set(combatant)
    assert COMPONENTS["EncounterPublic"]["properties"]["current"]["anyOf"][0] == {
        "$ref": "#/components/schemas/CurrentTurn"
    }
    assert {"action", "from_round"} <= set(COMPONENTS["OrderEntry"]["properties"])
    assert combatant["conditions"]["items"] == {"$ref": "#/components/schemas/ConditionPublic"}


def test_a_character_is_a_union_by_ruleset_its_sheet_that_rulesets_component():
    """Issue 25 item 3: `CharacterPublic` and the events' `CharacterEvent` are discriminated by
    `ruleset`, each variant's `sheet` the ruleset's named sheet schema; a sheet of another
    ruleset is refused by the document."""
    for name in ("CharacterPublic", "CharacterEvent"):
        union = COMPONENTS[name]
        assert union["discriminator"]["propertyName"] == "ruleset"
        for ruleset, ref in union["discriminator"]["mapping"].items():
            variant = COMPONENTS[ref.rsplit("/", 1)[1]]
            assert variant["properties"]["ruleset"]["const"] == ruleset
            assert variant["properties"]["sheet"]["$ref"].endswith("Sheet")
    assert sorted(COMPONENTS["CharacterPublic"]["discriminator"]["mapping"]) == sorted(RULESETS)
    read = COMPONENTS["GreatCosmosCharacterPublic"]
    assert read["properties"]["sheet"] == {"$ref": "#/components/schemas/GreatCosmosSheet"}
    assert errors({"$ref": "#/components/schemas/GreatCosmosSheet"}, SHEETS["asgard"]) != []
    assert errors({"$ref": "#/components/schemas/GreatCosmosSheet"}, SHEETS["great-cosmos"]) == []
    assert {"$ref": "#/components/schemas/AsgardSheet", "x-ruleset": "asgard"} in COMPONENTS["CharacterCreate"][
        "properties"
    ]["sheet"]["anyOf"]


# --- typed for generated clients: problems' members, the stream's messages, no `null`-only field ---

EVENT = {"$ref": "#/components/schemas/Event"}
PROBLEM_JSON = "application/problem+json"
ACTIONS = "/v1/encounters/{encounter_id}/actions"


def message(event: dict[str, Any]) -> dict[str, Any]:
    """An event of `read_events` as a client reads the stream's message: `{event, data, id}`."""
    return {"event": event["type"], "data": event["data"], "id": str(event["id"])}


def problem_errors(method: str, template: str, r: Any) -> list[str]:
    """What is wrong with a real problem for the schema its operation declares for its status."""
    declared = SPEC["paths"][template][method]["responses"][str(r.status_code)]["content"][PROBLEM_JSON]
    return errors(declared["schema"], r.json())


def test_every_problem_member_is_typed_and_those_always_sent_are_required():
    """A generated client reads `needed`, `current` and `latest` with no cast: none is an untyped `{}`,
    each is required where its code always sends it, and `needed` declares `by` (and nothing else)."""
    problems = {n: s for n, s in COMPONENTS.items() if n.endswith("Problem") and n != "Problem"}
    assert [(n, m) for n, s in problems.items() for m, member in own_properties(s).items() if not member] == []
    required = {n: s["allOf"][1].get("required", []) for n, s in problems.items()}
    assert (required["DiceNeededProblem"], required["NotYourTurnProblem"], required["NotLatestActionProblem"]) == (
        ["needed"],
        ["current"],
        ["latest"],
    )
    assert {n for n, r in required.items() if r} == {
        n for n, s in problems.items() if any(CODES[c].always for c in own_properties(s)["code"]["enum"])
    }
    needed = own_properties(problems["DiceNeededProblem"])["needed"]
    assert set(needed["properties"]) == {"index", "die", "purpose", "by"} and needed["additionalProperties"] is False
    assert own_properties(problems["NotYourTurnProblem"])["current"]["anyOf"][0] == {
        "$ref": "#/components/schemas/CurrentTurn"
    }
    base = {"type": "x", "title": "t", "status": 422, "detail": "d", "code": "dice_needed"}
    schema = {"$ref": "#/components/schemas/DiceNeededProblem"}
    assert errors(schema, {**base, "needed": {"index": 0, "die": "d6", "purpose": "damage", "by": None}}) == []
    assert errors(schema, base) != []  # `needed` is always there
    assert errors(schema, {**base, "needed": {"index": 0, "die": "d6", "purpose": "damage", "who": "c1"}}) != []


def test_no_property_is_typed_exactly_null():
    """openapi-typescript turns `{"type": "null"}` alone into a `null` field openapi-fetch mistypes:
    an always-null field is typed `string | null` (said in its description) instead."""
    found: list[str] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for name, prop in (node.get("properties") or {}).items():
                if isinstance(prop, dict) and prop.get("type") == "null":
                    found.append(f"{where}.{name}")
            for key, value in node.items():
                walk(value, f"{where}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}[{i}]")

    walk(SPEC, "")
    assert found == []
    assert COMPONENTS["StatusChange"]["properties"]["combatant_id"]["anyOf"] == [{"type": "string"}, {"type": "null"}]


def test_the_stream_messages_are_one_union_discriminated_by_the_event_name():
    """`components.schemas.Event`: one member per event of the registry, `{event, data, id}` with
    `event` a `const` and `data` the schema `x-events` names, discriminated by `event`."""
    union = COMPONENTS["Event"]
    assert union["discriminator"]["propertyName"] == "event"
    mapping = union["discriminator"]["mapping"]
    assert list(mapping) == list(EVENTS) and union["oneOf"] == [{"$ref": ref} for ref in mapping.values()]
    x_events = SPEC["paths"]["/v1/campaigns/{campaign_id}/events"]["get"]["x-events"]
    assert [e["event"] for e in x_events] == list(EVENTS)  # the same registry
    for entry in x_events:
        member = COMPONENTS[mapping[entry["event"]].rsplit("/", 1)[1]]
        assert member["properties"]["event"]["const"] == entry["event"]
        assert member["properties"]["data"] == entry["data"]
        assert member["required"] == ["event", "data"] and member["additionalProperties"] is False
    data = {"status": 503, "code": "unavailable", "detail": "the database is unavailable"}
    assert errors(EVENT, {"event": "error", "data": data}) == []
    assert errors(EVENT, {"event": "log.created", "data": data}) != []  # the name says which data
    assert errors(EVENT, {"event": "nothing.happened", "data": {}}) != []


def test_a_limited_views_ruleset_is_the_rulesets_enum(client, campaign_factory, player_factory, character_factory):
    """A character a player sees `limited` (a read, its events) names its ruleset from the enum of
    the registered rulesets, so a client narrows on it."""
    assert COMPONENTS["RulesetId"]["enum"] == list(REGISTRY)
    for name in ("CharacterLimited", "LimitedCharacterEvent", "CampaignImported"):
        assert COMPONENTS[name]["properties"]["ruleset"] == {"$ref": "#/components/schemas/RulesetId"}, name
    camp = campaign_factory(GC)
    alice = player_factory(camp)
    scout = character_factory(camp, sheet(GC), kind="npc", name="Scout")
    r = client.patch(f"/v1/characters/{scout['id']}", json={"player_access": "limited"}, headers=camp.gm)
    assert r.status_code == 200, r.text
    r = client.get(f"/v1/characters/{scout['id']}", headers=alice.headers)
    assert r.status_code == 200 and "sheet" not in r.json() and r.json()["ruleset"] == GC
    assert (
        errors(
            SPEC["paths"]["/v1/characters/{character_id}"]["get"]["responses"]["200"]["content"][JSON]["schema"],
            r.json(),
        )
        == []
    )
    assert errors({"$ref": "#/components/schemas/CharacterLimited"}, {**r.json(), "ruleset": "chess"}) != []
    seen = [e for e in read_events(client, camp.id, alice.headers) if e["data"].get("id") == scout["id"]]
    assert [e["data"]["player_access"] for e in seen] == ["limited"]  # its update, as alice reads it
    assert [errors(EVENT, message(e)) for e in seen] == [[]]


def test_a_fights_problems_carry_their_typed_members(client, table):  # noqa: F811  (the fixture)
    """Real `not_your_turn`, `dice_needed` (in a fight: `by`; outside one: none) and
    `not_latest_action` problems, each valid against the schema its operation declares."""
    t = table(GC)
    hero = t.character("Aiko", sheet(GC), kind="pc", player=t.alice)
    made = t.encounter([{"character_id": hero}, {"character_id": t.character("Brute", sheet(GC))}])
    eid, n = made["id"], ids(made)
    current = t.start(eid, seed=1)["current"]
    for _ in range(3):  # until another combatant's turn
        if n["Aiko"] not in current["combatant_ids"]:
            break
        t.next_turn(eid, seed=2)
        current = t.state(eid)["current"]
    blow = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "damage": "1d6"}
    url = f"/v1/encounters/{eid}/actions"

    r = client.post(url, json=blow, headers=t.alice.headers)
    assert assert_problem(r, 409, "not-your-turn")["current"]["combatant_ids"] == current["combatant_ids"]
    assert problem_errors("post", ACTIONS, r) == []

    r = client.post(url, json={**blow, "dice": []}, headers=t.gm)
    needed = assert_problem(r, 422, "dice-needed")["needed"]
    assert (needed["index"], needed["die"], needed["by"]) == (0, "d100", n["Aiko"])
    assert problem_errors("post", ACTIONS, r) == []
    r = client.post(f"/v1/characters/{hero}/tests", json={"stat": "force", "dice": []}, headers=t.gm)
    assert "by" not in assert_problem(r, 422, "dice-needed")["needed"]
    assert problem_errors("post", "/v1/characters/{character_id}/tests", r) == []

    first = t.act(eid, {**blow, "seed": 3})
    latest = t.act(eid, {"type": "damage", "target_id": n["Brute"], "amount": 1})
    r = client.post(f"/v1/encounters/{eid}/actions/{first['id']}/revert", json={}, headers=t.gm)
    assert assert_problem(r, 409, "not-latest-action")["latest"] == latest["id"]
    assert problem_errors("post", "/v1/encounters/{encounter_id}/actions/{action_id}/revert", r) == []
