"""Adding a fifth ruleset is one new folder and one registry line (issue 23, docs/adding-a-ruleset.md).

The folder is tests/rulesets/tiny/ (a d6 test, one pool: the smallest complete package). The line
is added to `RULESET_PACKAGES` in a server of its own: its interpreter runs
app/rulesets/registry.py with one entry more in that dict (its source, parsed and compiled, the
file unchanged), then serves `app.main:app` with uvicorn. The unions of the wire and the
OpenAPI document are built at import, so a fresh interpreter is the honest way to register it.
Everything else is checked through HTTP, as a client sees it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.api.test_encounters import Table, ids
from tests.conftest import make_campaign, make_player
from tests.hardening.conftest import SERVER_DEFAULTS, Pool, free_port
from app.rulesets import registry
from app.rulesets.contract.ruleset import Ruleset
from tests.rulesets.tiny import ruleset as tiny
from tests.rulesets.tiny.results import TinyCombatEntry, TinyTestResult

ROOT = Path(__file__).resolve().parents[2]
FOUR = ["great-cosmos", "asgard", "rulebook-d100", "worlds-awakening"]

# The registry line of docs/adding-a-ruleset.md, added in the server's interpreter only.
REGISTRY_LINE = ("tiny", "tests.rulesets.tiny")

SERVE = """
import ast, importlib.util, sys
import uvicorn
import app.rulesets

ruleset, package, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
spec = importlib.util.find_spec("app.rulesets.registry")
tree = ast.parse(spec.loader.get_source(spec.name), spec.origin)
[packages] = [
    node.value for node in tree.body
    if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["RULESET_PACKAGES"]
]
packages.keys.append(ast.Constant(ruleset))
packages.values.append(ast.Constant(package))
registry = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = app.rulesets.registry = registry
exec(compile(ast.fix_missing_locations(tree), spec.origin, "exec"), registry.__dict__)
uvicorn.run("app.main:app", host="127.0.0.1", port=port, log_level="warning")
"""


@pytest.fixture(scope="module")
def tiny_server(database_url: str, engine, tmp_path_factory) -> Iterator[str]:
    """A real server on the worker's (migrated) database with the tiny ruleset registered, for
    this module's tests (`http` empties the database after each): its base URL."""
    port = free_port()
    path = tmp_path_factory.mktemp("tiny") / "uvicorn.log"
    log = open(path, "ab")
    env = {**os.environ, "DATABASE_URL": database_url, **SERVER_DEFAULTS, **Pool.SHARED}
    process = subprocess.Popen(
        [sys.executable, "-c", SERVE, *REGISTRY_LINE, str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited: {path.read_text()[-4000:]}")
            try:
                if httpx.get(f"{url}/readyz", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server was not ready: {path.read_text()[-4000:]}")
            time.sleep(0.1)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        log.close()


@pytest.fixture
def http(tiny_server: str, database) -> Iterator[httpx.Client]:
    """A client of the tiny server; what it committed is gone after the test (`database`)."""
    with httpx.Client(base_url=tiny_server, timeout=30) as client:
        yield client


def test_a_registered_fifth_ruleset_is_playable_through_http(http):
    """TINY-T1 through the app: the catalogue lists it, a campaign and a character of it are made, a
    test with table dice is applied and logged, and a fight of it starts (TINY-C1)."""
    listed = http.get("/v1/rulesets")
    assert listed.status_code == 200
    assert [r["id"] for r in listed.json()["items"]] == [*FOUR, "tiny"]
    described = http.get("/v1/rulesets/tiny")
    assert described.status_code == 200
    assert described.json()["stats"] == ["grit"]
    assert described.json()["sheet_schema"]["properties"].keys() == {"grit", "hp", "hp_max"}
    combat = described.json()["combat"]  # read from its EncounterRules
    assert combat["pools"] == [{"name": "hp", "key": "hp", "max_key": "hp_max", "floor": 0}]
    assert combat["initiative"]["dice_order"] == "TINY-C1 d6 per combatant in the order added"
    assert {kind: a["gm_only"] for kind, a in combat["actions"].items()} == {
        "heal": True,
        "damage": True,
        "condition": True,
    }

    campaign = make_campaign(http, "tiny")
    assert campaign.body["options"] == {"players_may_enter_dice": False}
    alice = make_player(http, campaign, "Alice")
    t = Table(http, campaign, (alice, make_player(http, campaign, "Bob")))
    hero = t.character("Hero", {"grit": 1, "hp_max": 5}, kind="pc", player=alice)
    assert t.sheet(hero)["sheet"] == {"grit": 1, "hp": 5, "hp_max": 5}  # hp defaults to hp_max

    r = http.post(f"/v1/characters/{hero}/tests", json={"target": 5, "dice": [4]}, headers=t.gm)
    assert r.status_code == 201, r.text
    test = TinyTestResult.model_validate(r.json()).model_dump(mode="json", exclude={"created_at"})
    assert {k: test[k] for k in ("ruleset", "natural", "score", "target", "outcome", "success", "provenance")} == {
        "ruleset": "tiny",
        "natural": 4,
        "score": 5,  # d6 4 + grit 1
        "target": 5,
        "outcome": "success",
        "success": True,
        "provenance": "table",
    }
    assert [(d["die"], d["value"], d["purpose"]) for d in test["rolls"]] == [("d6", 4, "test")]
    log = http.get(f"/v1/campaigns/{campaign.id}/rolls", headers=t.gm)
    assert log.status_code == 200
    [entry] = log.json()["items"]
    assert entry == r.json()

    odds = http.post(f"/v1/characters/{hero}/tests/odds", json={"target": 5}, headers=t.gm)
    assert odds.status_code == 200, odds.text
    assert odds.json()["success"]["probability"] == "1/2"  # 4, 5 or 6 (6: critical)

    goblin = t.character("Goblin", {"hp_max": 3})
    fight = t.encounter([{"character_id": hero}, {"character_id": goblin}])
    names = {v: k for k, v in ids(fight).items()}
    started = t.start(fight["id"], dice=[2, 5])  # TINY-C1: Hero 2, Goblin 5
    TinyCombatEntry.model_validate(started["action"])
    assert [names[e["combatant_id"]] for e in started["order"]] == ["Goblin", "Hero"]
    hit = t.act(fight["id"], {"type": "damage", "target_id": ids(fight)["Goblin"], "amount": 3})
    assert TinyCombatEntry.model_validate(hit).type == "damage"
    assert {c["name"]: c["resources"]["hp"]["value"] for c in t.state(fight["id"])["combatants"]} == {
        "Hero": 5,
        "Goblin": 0,
    }


def test_the_fifth_rulesets_schemas_are_in_its_openapi_document(http):
    """Its models in openapi.json under its own names, and in the ruleset-dependent bodies."""
    doc = http.get("/openapi.json")
    assert doc.status_code == 200
    schemas = doc.json()["components"]["schemas"]
    assert {
        "TinyTestRequest",
        "TinyOddsRequest",
        "TinyTestResult",
        "TinyOdds",
        "TinyCombatEntry",
        "TinyRuleset",
    } <= set(schemas)
    tests = doc.json()["paths"]["/v1/characters/{character_id}/tests"]["post"]["requestBody"]["content"]
    body = tests["application/json"]["schema"]
    assert {"$ref": "#/components/schemas/TinyTestRequest", "x-ruleset": "tiny"} in body.get("oneOf", body.get("anyOf"))
    assert tests["application/json"]["examples"]["tiny 2"]["value"] == {"stat": "grit", "target": 5, "dice": [4]}
    answers = schemas["TestResult"]["discriminator"]["mapping"]
    assert answers["tiny"] == "#/components/schemas/TinyTestResult"
    catalogue = schemas["RulesetDetail"]["discriminator"]["mapping"]
    assert catalogue["tiny"] == "#/components/schemas/TinyRuleset"
    assert {"test", "combat", "sheet_schema"} <= set(schemas["TinyRuleset"]["properties"])


def test_the_registry_lists_each_packages_one_typed_declaration(monkeypatch):
    """The line names a package; the registry takes its `ruleset.RULESET`, a `Ruleset` registered
    under its own id, and refuses anything else at start."""
    assert registry._load(*REGISTRY_LINE) is tiny.RULESET
    with pytest.raises(RuntimeError, match="registered as 'dragon-dice', it declares 'tiny'"):
        registry._load("dragon-dice", REGISTRY_LINE[1])
    untyped = types.ModuleType("untyped.ruleset")
    untyped.RULESET = {"id": "untyped"}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "untyped.ruleset", untyped)
    with pytest.raises(TypeError, match="RULESET is no Ruleset"):
        registry._load("untyped", "untyped")
    with pytest.raises(ValueError, match="its adapter and combat name 'tiny', 'tiny'"):
        Ruleset(id="dragon-dice", adapter=tiny.ADAPTER, combat=tiny.combat.COMBAT, results={})
