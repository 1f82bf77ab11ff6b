"""Schemathesis against the committed openapi.json, run in-process against the
ASGI app on the suite's per-test database (one rolled-back transaction per
ruleset's run).

Each ruleset gets its own copy of the document in which the ruleset-dependent
bodies (`oneOf`/`anyOf` tagged `x-ruleset`) keep only that ruleset's schema, and runs
with the GM token of a seeded campaign of that ruleset: one character, one
player, one logged test, and two encounters of the hero and an NPC (one in setup,
one started; made again when a generated call ended, started or reverted them).
Path parameters hit the real ids three times in four (an encounter's actions,
next-turn and revert the started one, its setup routes the other), and so do the
ids in the bodies (`character_id`, and the combatants of an action), so the
generated bodies reach the rules, not only the 404s.

Each call is made with the GM's token or the player's (drawn), so the refusals, what a
player may see (`player_access`: the NPC is `none` to it) and who may choose dice are
fuzzed too.

Checks on every response: no 5xx, the body conforms to the documented schema,
and every 4xx/5xx is application/problem+json with type/title/status/detail.

Plus, per ruleset, random merge patches of a player's own sheet (with the owner's
token): a rule-governed field never changes, a free one does."""

from __future__ import annotations

import copy
import json
from typing import Any, Iterator

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.conftest import empty, make_campaign, make_character, make_player
from tests.factories import OWNER_SHEETS, RULESETS, SHEETS, TEST_BODIES
from tests.hardening.conftest import ROOT

MAX_EXAMPLES = 25
RAW = json.loads((ROOT / "openapi.json").read_text())
# "ruleset METHOD path" -> {status: requests}; printed at the end of the run (see conftest.py)
CALLS: dict[str, dict[int, int]] = {}


def for_ruleset(raw: dict[str, Any], ruleset: str) -> dict[str, Any]:
    """The document with each ruleset-dependent body narrowed to `ruleset`'s schema
    (an operation the ruleset lacks keeps every schema: it must answer 422)."""
    spec = copy.deepcopy(raw)
    spec["info"]["x-fuzz-ruleset"] = ruleset
    for operations in spec["paths"].values():
        for operation in operations.values():
            content = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
            schema = content.get("schema", {})
            keyword = "oneOf" if "oneOf" in schema else "anyOf"  # anyOf: bodies two rulesets share
            choices = schema.get(keyword, [])
            if choices and all("x-ruleset" in c for c in choices):
                mine = [c for c in choices if c["x-ruleset"] == ruleset]
                if mine:
                    schema[keyword] = mine
    for component in spec["components"]["schemas"].values():  # a new character's sheet, options (issue 25)
        for prop in component.get("properties", {}).values():
            keyword = "oneOf" if "oneOf" in prop else "anyOf"
            tagged = [c for c in prop.get(keyword, []) if "x-ruleset" in c]
            if tagged:
                prop[keyword] = [c for c in prop[keyword] if ruleset in _rulesets(c)]
    return spec


def _rulesets(choice: dict[str, Any]) -> list[str | None]:
    """The rulesets a union's member is for (`x-ruleset`: one, or the list of those sharing it); an
    untagged member (`null`) stays in every ruleset's union."""
    tag = choice.get("x-ruleset", list(RULESETS))
    return tag if isinstance(tag, list) else [tag]


# generated cases only: the schema's own examples cannot be combined with `given(data=...)`
CONFIG = {"phases": {"examples": {"enabled": False}, "coverage": {"enabled": False}}, "generation": {"mode": "all"}}
# great-cosmos runs every operation; the other rulesets the ones whose body or
# behaviour depends on the ruleset (sheets, tests, odds, rerolls, actions, level-ups, group tests)
RULESET_DEPENDENT = [
    "POST /v1/campaigns/{campaign_id}/characters",
    "PATCH /v1/characters/{character_id}",
    "POST /v1/characters/{character_id}/tests",
    "POST /v1/characters/{character_id}/tests/odds",
    "POST /v1/characters/{character_id}/tests/{test_id}/reroll",
    "POST /v1/characters/{character_id}/actions",
    "POST /v1/characters/{character_id}/level-ups",
    "POST /v1/campaigns/{campaign_id}/tests/opposed",
    "POST /v1/campaigns/{campaign_id}/tests/group",
    "POST /v1/campaigns/{campaign_id}/encounters",
    "POST /v1/encounters/{encounter_id}/combatants",
    "PATCH /v1/encounters/{encounter_id}/combatants/{combatant_id}",
    "POST /v1/encounters/{encounter_id}/start",
    "POST /v1/encounters/{encounter_id}/actions",
    "POST /v1/encounters/{encounter_id}/next-turn",
    "POST /v1/encounters/{encounter_id}/actions/{action_id}/revert",
]


def load(ruleset: str):
    schema = schemathesis.openapi.from_dict(for_ruleset(RAW, ruleset), config=SchemathesisConfig.from_dict(CONFIG))
    return schema if ruleset == "great-cosmos" else schema.include(name=RULESET_DEPENDENT)


SCHEMAS = {r.replace("-", "_"): load(r) for r in RULESETS}
PROBLEM_FIELDS = {"type": str, "title": str, "status": int, "detail": str}


def problem_json(ctx, response, case) -> None:
    """Every error is RFC 9457 problem+json with type, title, status and detail."""
    if response.status_code < 400:
        return
    content_type = response.headers.get("content-type", [""])[0]
    assert content_type.startswith("application/problem+json"), (
        f"{response.status_code} with Content-Type {content_type!r}: {response.text[:300]}"
    )
    body = response.json()
    for name, kind in PROBLEM_FIELDS.items():
        assert isinstance(body.get(name), kind), f"problem body lacks {name}: {body}"
    assert body["status"] == response.status_code, body


def declared_status(ctx, response, case) -> None:
    """Issue 25 item 2: every status an operation answers is one it declares (`default` aside), and
    every problem's `code` is one of that status (app.kit.errors.CODES)."""
    from app.api.problems import code_status

    declared = case.operation.definition.raw["responses"]
    assert str(response.status_code) in declared, f"{response.status_code} not declared: {sorted(declared)}"
    if response.status_code >= 400:
        assert code_status(response.json()["code"]) == response.status_code, response.text[:300]


class Encounters:
    """A campaign's two seeded encounters of the hero and an NPC: `setup()` one in setup,
    `active()` one started (each made again when a generated call moved it on).

    Looked up again only after a call that may have moved them (`moved()`: a write the
    API accepted); a refused call writes nothing (a use case commits once), so the ids
    stay good without two GETs before every example."""

    def __init__(self, client, camp, hero_id: str, foe_id: str):
        self.client, self.camp, self.members = client, camp, [hero_id, foe_id]
        self.made: dict[str, dict[str, Any]] = {}
        self.current: set[str] = set()  # the statuses whose `made` entry no accepted write followed

    def moved(self) -> None:
        self.current.clear()

    def _state(self, eid: str) -> dict[str, Any]:
        r = self.client.get(f"/v1/encounters/{eid}", headers=self.camp.gm)
        return r.json() if r.status_code == 200 else {"status": "gone", "combatants": []}

    def _get(self, status: str) -> dict[str, Any]:
        if status in self.current:
            return self.made[status]
        known = self.made.get(status)
        state = self._state(known["id"]) if known else None
        if state is None or state["status"] != status or len(state["combatants"]) < 2:
            r = self.client.post(
                f"/v1/campaigns/{self.camp.id}/encounters",
                headers=self.camp.gm,
                json={"name": "Fuzzed", "combatants": [{"character_id": cid} for cid in self.members]},
            )
            assert r.status_code == 201, r.text
            state = r.json()
            if status == "active":
                r = self.client.post(f"/v1/encounters/{state['id']}/start", json={"seed": 1}, headers=self.camp.gm)
                assert r.status_code == 201, r.text
                state = r.json()
        r = self.client.get(f"/v1/encounters/{state['id']}/actions", params={"limit": 1}, headers=self.camp.gm)
        latest = r.json()["items"][0]["id"] if r.status_code == 200 and r.json()["items"] else "none"
        self.made[status] = {
            "id": state["id"],
            "combatants": [c["id"] for c in state["combatants"]],
            "action_id": latest,
        }
        self.current.add(status)
        return self.made[status]

    def setup(self) -> dict[str, Any]:
        return self._get("setup")

    def active(self) -> dict[str, Any]:
        return self._get("active")


@pytest.fixture(scope="module")
def database(engine):
    """The fuzz world outlives a test here: the database is emptied after the module's last test."""
    yield engine
    empty(engine)


class Worlds:
    """Per ruleset (built on first use, on the module's client): a campaign, a player, a
    character and one logged test; the ids the fuzzer may aim at."""

    def __init__(self, client):
        self.client = client
        self.built: dict[str, dict[str, Any]] = {}

    def get(self, ruleset: str) -> dict[str, Any]:
        if ruleset not in self.built:
            self.built[ruleset] = self._seed(ruleset)
        return self.built[ruleset]

    def renew_if_dead(self, ruleset: str) -> None:
        """Seeded again if an earlier test deleted its campaign or player, or rotated a token."""
        world = self.built.get(ruleset)
        if world and any(
            self.client.get("/v1/me", headers=world[h]).status_code != 200 for h in ("headers", "player_headers")
        ):
            del self.built[ruleset]

    def _seed(self, ruleset: str) -> dict[str, Any]:
        client = self.client
        camp = make_campaign(client, ruleset)
        player = make_player(client, camp)
        hero = make_character(client, camp, SHEETS[ruleset])
        r = client.post(f"/v1/characters/{hero['id']}/tests", json=TEST_BODIES[ruleset], headers=camp.gm)
        assert r.status_code == 201, r.text
        foe = make_character(client, camp, SHEETS[ruleset], kind="npc", name="Foe")
        return {
            "encounters": Encounters(client, camp, hero["id"], foe["id"]),
            "headers": camp.gm,
            "player_headers": player.headers,
            "client": client,
            "campaign": camp,
            "player_id": player.id,
            "ids": {
                "campaign_id": camp.id,
                "character_id": hero["id"],
                "test_id": r.json()["id"],
                "entry_id": r.json()["id"],
                "ruleset": ruleset,
            },
        }


@pytest.fixture(scope="module")
def worlds(session_app, database) -> Iterator[Worlds]:
    """The worlds of the module (seeded once per ruleset, not per test)."""
    with TestClient(session_app, raise_server_exceptions=False) as client:
        yield Worlds(client)


@pytest.fixture
def world(worlds: Worlds):
    """The worlds, each checked at its first use in a test (a test may have killed its tokens)."""
    checked: set[str] = set()

    def get(ruleset: str, *, again: bool = False) -> dict[str, Any]:
        """`again`: checked once more (a call of this test may just have killed a token)."""
        if again or ruleset not in checked:
            checked.add(ruleset)
            worlds.renew_if_dead(ruleset)
        return worlds.get(ruleset)

    return get


# calls that, accepted, end the seeded campaign's or player's credentials: the world is seeded again
# before the next example (else every later example of the test would be a 401)
ENDS_CREDENTIALS = {
    "DELETE /v1/campaigns/{campaign_id}",
    "DELETE /v1/campaigns/{campaign_id}/players/{player_id}",
    "POST /v1/campaigns/{campaign_id}/players/{player_id}/token/rotate",
    "POST /v1/campaigns/{campaign_id}/gm-token/rotate",
}


REAL = st.integers(0, 3).map(bool)  # three times in four


COMBATANT_FIELDS = ("actor_id", "target_id", "also_target_id", "group", "take_11")
ON_A_STARTED_ENCOUNTER = ("/actions", "/next-turn", "/revert")


def aim_at_real_ids(case, world: dict[str, Any], data) -> None:
    """Three times in four each path parameter (and each `character_id` of the body, each
    combatant an action names) is a real id."""
    ids = world["ids"]
    fighters: list[str] = []
    if "/encounters/" in case.operation.path:
        started = case.operation.path.endswith(ON_A_STARTED_ENCOUNTER)
        encounter = world["encounters"].active() if started else world["encounters"].setup()
        fighters = encounter["combatants"]
        ids = {
            **ids,
            "encounter_id": encounter["id"],
            "action_id": encounter["action_id"],
            "combatant_id": data.draw(st.sampled_from(fighters), label="combatant"),
        }
    for name in list(case.path_parameters or {}):
        if name in ids and data.draw(REAL, label=f"real {name}"):
            case.path_parameters[name] = ids[name]
    if case.operation.method.upper() == "DELETE" and case.path_parameters.get("character_id") == ids["character_id"]:
        # deleting the seeded character would leave the later examples nothing to aim at: delete a fresh one
        camp = world["campaign"]
        r = world["client"].post(
            f"/v1/campaigns/{camp.id}/characters",
            headers=camp.gm,
            json={"name": "Doomed", "kind": "npc", "sheet": SHEETS[camp.ruleset]},
        )
        assert r.status_code == 201, r.text
        case.path_parameters["character_id"] = r.json()["id"]

    def fighter() -> str:
        return data.draw(st.sampled_from(fighters or [ids["character_id"]]), label="real combatant")

    def swap(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "character_id" and isinstance(value, str) and data.draw(REAL, label="real body id"):
                    node[key] = ids["character_id"]
                elif key in COMBATANT_FIELDS and isinstance(value, str) and data.draw(REAL, label="real combatant"):
                    node[key] = fighter()
                elif key in COMBATANT_FIELDS and isinstance(value, list):
                    node[key] = [
                        fighter() if isinstance(v, str) and data.draw(REAL, label="real") else v for v in value
                    ]
                else:
                    swap(value)
        elif isinstance(node, list):
            for item in node:
                swap(item)

    if isinstance(case.body, (dict, list)):
        swap(case.body)


@schemathesis.pytest.parametrize(**SCHEMAS)
@SCHEMAS["great_cosmos"].given(data=st.data())
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_fuzz(case, data, app, world):
    ruleset = case.operation.schema.raw_schema["info"]["x-fuzz-ruleset"]
    seeded = world(ruleset)
    aim_at_real_ids(case, seeded, data)
    if case.operation.path.endswith("/events"):
        case.query = {**(case.query or {}), "follow": "false"}  # the live tail never ends on its own
    # as the GM or as a player (issue 21: player_access, provenance and refusal order reached with both)
    caller = data.draw(st.sampled_from(["headers", "player_headers"]), label="caller")
    headers = {**(case.headers or {}), **seeded[caller]}
    checks = [not_a_server_error, problem_json, declared_status]
    if not case.operation.path.endswith("/events"):
        # the stream is documented as {"type": "string"}, which Schemathesis 4 applies to each parsed event
        checks.append(response_schema_conformance)
    response = case.call(app=app, headers=headers)
    if case.method.upper() not in ("GET", "HEAD") and response.status_code < 400:
        seeded["encounters"].moved()  # an accepted write may have ended, started or reverted them
    ended = f"{case.operation.method.upper()} {case.operation.path}" in ENDS_CREDENTIALS
    counts = CALLS.setdefault(f"{ruleset} {case.operation.method.upper()} {case.operation.path}", {})
    counts[response.status_code] = counts.get(response.status_code, 0) + 1
    case.validate_response(response, checks=checks, headers=headers, transport_kwargs={"app": app, "headers": headers})
    if ended and response.status_code < 400:
        world(ruleset, again=True)


def test_openapi_documents_errors_as_problem_json():
    wrong = []
    for path, operations in RAW["paths"].items():
        for method, operation in operations.items():
            for status, response in operation.get("responses", {}).items():
                if (
                    status.isdigit()
                    and int(status) >= 400
                    and "application/problem+json" not in response.get("content", {})
                ):
                    wrong.append(f"{method.upper()} {path} {status}: {sorted(response.get('content', {}))}")
    assert not wrong, "\n".join(wrong)


# --- a player's sheet patches (who may change what on a sheet) ---------------------------

OWNER_EXAMPLES = 40
# per ruleset, the sheet the owner's character starts with, and a second valid value of
# each top-level field (valid in any mix with the first); fields not listed here are
# drawn only as "same value" or "null"

OTHER_VALUES: dict[str, dict[str, Any]] = {
    "great-cosmos": {
        "race": "elementaire",
        "level": 3,
        "stats": {"force": 69},
        "intuition": 5,
        "karma": 4,
        "hp": 90,
        "hp_max": 120,
        "mp": 40,
        "mp_max": 60,
        "light_points": 3,
        "dark_points": 0,
        "mental_health": 80,
        "default_posture": "offensive",
        "posture": "illumination",
        "skills": ["escrime"],
        "spells": ["soin"],
        "affiliation": "Ordre",
        "talents": ["lecture"],
        "notes": "brave",
        "final_skill": {"name": "Nova", "punchline": "Brille !", "cost_kind": "light", "cost_points": 1},
        "inventory": {"items": [{"name": "corde", "slots": 1}], "money": 10},
    },
    "asgard": {
        "skills": {"combat": 7},
        "vitality": 15,
        "vitality_max": 25,
        "heroism": 4,
        "protection": 3,
        "weapons": [{"name": "hache", "damage_dice": 3}],
        "assets": ["Rusé"],
        "tier": "figurant",
        "condition": {"dying": True},
    },
    "rulebook-d100": {
        "stats": {"FOR": 55},
        "skills": {"escrime": 25},
        "crit_chance": 6,
        "hp": 10,
        "hp_max": 20,
        "pe": 10,
        "pe_max": 20,
        "armor": 2,
        "weapons": [{"name": "dague", "damage": "1d4"}],
    },
    "worlds-awakening": {
        "level": 2,
        "stats": {"CHA": 4},
        "hp": 10,
        "hp_max": 14,
        "mp": 3,
        "mp_max": 5,
        "down": True,
        "pending": {"FOR": 2},
        "challenges": {"crochetage": {"successes": 1}},
        "weapons": [{"name": "arc", "stat": "DEX", "damage": "1d8"}],
    },
}
CHOICES = st.sampled_from(["omit", "omit", "same", "other", "other", "null"])
KEEP = st.sampled_from(["omit", "same"])  # a governed field in a free-only patch


def merged(target: Any, patch: Any) -> Any:
    """RFC 7396, the oracle's own copy."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merged(out.get(key), value)
    return out


@pytest.fixture
def owned_character(client, campaign_factory, player_factory, character_factory):
    """ruleset -> (owner's headers, its character's id, the served sheet schema)."""

    def make(ruleset: str):
        camp = campaign_factory(ruleset)
        owner = player_factory(camp, "Owner")
        hero = character_factory(camp, OWNER_SHEETS[ruleset], player=owner)
        schema = client.get(f"/v1/rulesets/{ruleset}").json()["sheet_schema"]
        return owner.headers, hero["id"], schema

    return make


@pytest.mark.parametrize("ruleset", RULESETS)
def test_fuzz_owner_sheet_patches(client, owned_character, ruleset):
    """Random merge patches of the owner's own sheet over every field of the served
    schema: a field marked `x-rule-governed` never changes (a change of one is a 403
    naming it, with nothing written); a patch of free fields and of unchanged
    governed values is applied (200)."""
    headers, hero, schema = owned_character(ruleset)
    governed = {name for name, prop in schema["properties"].items() if prop.get("x-rule-governed") is True}
    assert governed, "the served sheet schema marks no rule-governed field"
    counts = CALLS.setdefault(f"{ruleset} PATCH /v1/characters/{{character_id}} (owner's sheet patches)", {})

    @given(data=st.data())
    @settings(
        max_examples=OWNER_EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(data):
        before = client.get(f"/v1/characters/{hero}", headers=headers).json()
        patch, changed, unknown = {}, set(), set()
        free_only = data.draw(st.booleans(), label="free fields only")
        for name in schema["properties"]:
            choice = data.draw(KEEP if free_only and name in governed else CHOICES, label=name)
            if choice == "same" and name in before["sheet"]:
                patch[name] = before["sheet"][name]
            elif choice == "other" and name in OTHER_VALUES[ruleset]:
                patch[name] = OTHER_VALUES[ruleset][name]
                if name in governed and merged(before["sheet"].get(name), patch[name]) != before["sheet"].get(name):
                    changed.add(name)
            elif choice == "null":
                patch[name] = None
                if name in governed:
                    unknown.add(name)  # back to its default: a change or not, per the stored value
        r = client.patch(f"/v1/characters/{hero}", json={"sheet": patch}, headers=headers)
        counts[r.status_code] = counts.get(r.status_code, 0) + 1
        after = client.get(f"/v1/characters/{hero}", headers=headers).json()
        assert r.status_code == 200 or not free_only, (patch, r.text)  # free fields stay the owner's
        if r.status_code == 403:
            named = {f.split(".")[0] for f in r.json()["fields"]}
            assert changed <= named <= changed | unknown, (patch, r.json())
            assert after == before
        else:
            assert r.status_code == 200 and not changed, (patch, r.text)
            assert after["version"] == before["version"] + 1
            assert {k: after["sheet"].get(k) for k in governed} == {k: before["sheet"].get(k) for k in governed}

    check()
