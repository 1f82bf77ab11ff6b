"""A Python client generated from the committed openapi.json by a real generator
(openapi-python-client, pinned in the dev extras): every operation is there, every
result is a typed model (never a bare map), and a round trip through it against a
real uvicorn gives back each ruleset's typed results.

The client is generated once per session, offline (the generator is installed
with the dev extras; its formatting hooks are off)."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
import types
import typing
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs
import pytest

from app.api.openapi_doc import prefix
from tests import artefacts
from tests.factories import SHEETS

ROOT = Path(__file__).resolve().parents[2]
SPEC = json.loads((ROOT / "openapi.json").read_text())
PACKAGE = "jdr_generated_client"
# every operation answers a typed body (the probes too: Health, Readiness)
FREE_FORM: set[str] = set()
# a test with table dice, per ruleset: (body, the dice in the result)
TESTS: dict[str, dict[str, Any]] = {
    "great-cosmos": {"stat": "force", "dice": [42]},
    "asgard": {"skill": "combat", "difficulty": "moyen", "dice": [3, 4, 5]},
    "rulebook-d100": {"stat": "FOR", "skill": "escrime", "dice": [37]},
    "worlds-awakening": {"stat": "FOR", "target": 12, "dice": [15]},
}
ODDS: dict[str, dict[str, Any]] = {
    "great-cosmos": {"stat": "chance"},
    "asgard": {"skill": "survie"},
    "rulebook-d100": {"stat": "HAB"},
    "worlds-awakening": {"stat": "DEX", "difficulty": "facile"},
}
# issue 25 item 3: each ruleset's campaign options (one set apart from its default) and encounter options
OPTIONS: dict[str, dict[str, Any]] = {
    "great-cosmos": {"extreme_scores": True},
    "asgard": {"gm_difficulty": 12},
    "rulebook-d100": {"crit_failure_ruins_over_100": False},
    "worlds-awakening": {"players_may_enter_dice": True},
}
ENCOUNTER_OPTIONS: dict[str, dict[str, Any]] = {
    "great-cosmos": {"tie_method": "parallel"},
    "asgard": {"hp_visibility": "status"},
    "rulebook-d100": {"reveal_on_turn": False},
    "worlds-awakening": {"hp_visibility": "hidden"},
}


CONFIG = {"project_name_override": PACKAGE, "package_name_override": PACKAGE, "post_hooks": []}


def _generate(into: Path) -> None:
    """The client generated from openapi.json into `into`/PACKAGE, the generator's output in `into`/log."""
    config = into / "config.json"
    config.write_text(json.dumps(CONFIG))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "openapi_python_client",
            "generate",
            "--path",
            str(ROOT / "openapi.json"),
            "--meta",
            "none",
            "--output-path",
            str(into / PACKAGE),
            "--config",
            str(config),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    (into / "log").write_text(run.stdout + run.stderr)


@pytest.fixture(scope="session")
def generated() -> types.ModuleType:
    """The client package, generated from openapi.json and imported (once per session). Kept in the
    suite's cache (tests/artefacts.py) under the hash of every input of the generator: openapi.json,
    its configuration, its version and those of the packages it renders with."""
    tools = [f"{name}=={metadata.version(name)}" for name in ("openapi-python-client", "jinja2", "pydantic", "attrs")]
    where = artefacts.entry(
        "python-client", artefacts.key(ROOT / "openapi.json", json.dumps(CONFIG), *tools), _generate
    )
    log = (where / "log").read_text()
    assert "Warning" not in log and "WARNING" not in log and "Unable to" not in log, log
    sys.path.insert(0, str(where))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(where))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def _operation_modules(generated) -> dict[str, types.ModuleType]:
    api = importlib.import_module(f"{generated.__name__}.api")
    found = {}
    for info in pkgutil.walk_packages(api.__path__, api.__name__ + "."):
        module = importlib.import_module(info.name)
        if hasattr(module, "sync_detailed"):
            found[info.name.rsplit(".", 1)[1]] = module
    return found


def _classes(annotation: Any) -> list[type]:
    """The classes a (union, generic) annotation is made of."""
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return [annotation]
    return [c for arg in typing.get_args(annotation) for c in _classes(arg)]


def _typed_fields(cls: type) -> list[str]:
    return [f.name for f in attrs.fields(cls) if f.name != "additional_properties"]


def test_every_operation_is_generated(generated):
    operations = {op["operationId"] for methods in SPEC["paths"].values() for op in methods.values()}
    assert operations - set(_operation_modules(generated)) == set()


def test_no_result_is_an_untyped_map(generated):
    models = importlib.import_module(f"{generated.__name__}.models")
    checked = 0
    for name, module in _operation_modules(generated).items():
        if name in FREE_FORM:
            continue
        returned = typing.get_type_hints(module.sync_detailed)["return"]
        for cls in _classes(returned):
            if not attrs.has(cls) or cls.__name__ == "Problem":
                continue
            assert _typed_fields(cls), f"{name} returns {cls.__name__}, a map with no typed field"
            checked += 1
            if cls.__name__.endswith("Page"):  # and each item of a page
                items = cls.__annotations__["items"]
                items = eval(items, vars(models)) if isinstance(items, str) else items  # noqa: S307 (its own code)
                for item in _classes(items):
                    assert attrs.has(item) and _typed_fields(item), f"{name}: {item}"
                    checked += 1
    assert checked > 50


def _comparable(value: Any) -> Any:
    """JSON with every timestamp parsed (the client writes `+00:00` where the server wrote `Z`)."""
    if isinstance(value, dict):
        return {
            k: datetime.fromisoformat(v) if k.endswith("_at") and isinstance(v, str) else _comparable(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


def _parsed(response, status: int) -> Any:
    """The typed result of a response of this status, which must hold the whole body."""
    assert response.status_code == status, response.content
    assert _comparable(response.parsed.to_dict()) == _comparable(json.loads(response.content))
    return response.parsed


def test_round_trip_through_the_generated_client(generated, live):
    """Every answer parsed into its ruleset's classes (issue 25 item 3): the campaign, its options,
    the character, its sheet, the test, the odds, the log, the encounter's options (which carry no
    ruleset: Great Cosmos' told from the others' by `tie_method`), the export bundles (sent back
    as imports), each giving back the whole body."""
    api = lambda module: importlib.import_module(f"{generated.__name__}.api.{module}")  # noqa: E731
    _operation_modules(generated)  # imports each operation's module: alone in its worker, the test needs it
    models = importlib.import_module(f"{generated.__name__}.models")
    campaigns, characters, play, rolls = api("campaigns"), api("characters"), api("play"), api("rolls")
    encounters = api("encounters")
    server = live.start()
    anonymous = generated.Client(base_url=server.url, timeout=30.0)
    for ruleset in TESTS:
        name = prefix(ruleset)
        options = getattr(models, f"{name}Options")
        body = getattr(models, f"{name}CampaignCreate")(name="Round trip", ruleset=ruleset)
        campaign = _parsed(campaigns.create_campaign.sync_detailed(client=anonymous, body=body), 201)
        live.campaigns.append(campaign.id)
        assert type(campaign).__name__ == f"{name}CampaignCreated" and type(campaign.options) is options
        assert isinstance(campaign.created_at, datetime)
        gm = generated.AuthenticatedClient(base_url=server.url, token=campaign.gm_token, timeout=30.0)
        body = models.CampaignUpdate(options=options.from_dict(OPTIONS[ruleset]))
        updated = _parsed(campaigns.update_campaign.sync_detailed(campaign.id, client=gm, body=body), 200)
        assert type(updated).__name__ == f"{name}CampaignPublic" and type(updated.options) is options
        assert updated.options.to_dict().items() >= OPTIONS[ruleset].items()
        sheet = getattr(models, f"{name}Sheet").from_dict(SHEETS[ruleset])
        body = models.CharacterCreate(name="Aiko", kind=models.CharacterCreateKind.PC, sheet=sheet)
        character = _parsed(
            characters.create_character.sync_detailed(client=gm, campaign_id=campaign.id, body=body), 201
        )
        assert type(character).__name__ == f"{name}CharacterPublic"
        assert type(character.sheet).__name__ == f"{name}Sheet"
        read = _parsed(characters.read_character.sync_detailed(character.id, client=gm), 200)
        assert type(read) is type(character) and read.sheet.to_dict() == character.sheet.to_dict()
        body = getattr(models, f"{name}TestRequest").from_dict(TESTS[ruleset])
        test = _parsed(play.run_test.sync_detailed(client=gm, character_id=character.id, body=body), 201)
        assert type(test).__name__ == f"{name}TestResult"
        assert [die.value for die in test.rolls] == TESTS[ruleset]["dice"] and test.character_id == character.id
        body = getattr(models, f"{name}OddsRequest").from_dict(ODDS[ruleset])
        odds = _parsed(play.get_odds.sync_detailed(client=gm, character_id=character.id, body=body), 200)
        assert type(odds).__name__ == f"{name}Odds" and "/" in odds.success.probability
        logged = [test]
        if ruleset == "great-cosmos":
            body = models.GreatCosmosLevelUpRequest.from_dict(
                {"mode": "two_d10", "stats": ["force", "esprit"], "chance_bonus_pool": "hp", "seed": 7}
            )
            level_up = _parsed(play.level_up.sync_detailed(client=gm, character_id=character.id, body=body), 201)
            assert type(level_up).__name__ == "GreatCosmosLevelUpResult" and level_up.level.after == 2
            logged.insert(0, level_up)
        page = _parsed(rolls.list_rolls.sync_detailed(client=gm, campaign_id=campaign.id, limit=10), 200)
        assert [(type(e), e.id) for e in page.items] == [(type(e), e.id) for e in logged]
        assert page.next_cursor is None
        fight_options = "GreatCosmosEncounterOptions" if ruleset == "great-cosmos" else "EncounterOptions"
        body = models.EncounterCreate(
            name="Embuscade",
            options=getattr(models, fight_options).from_dict(ENCOUNTER_OPTIONS[ruleset]),
            combatants=[models.CombatantCreate(character_id=character.id)],
        )
        encounter = _parsed(encounters.create_encounter.sync_detailed(campaign.id, client=gm, body=body), 201)
        assert type(encounter.options).__name__ == f"{fight_options}Public"
        assert encounter.options.to_dict().items() >= ENCOUNTER_OPTIONS[ruleset].items()
        started = _parsed(
            encounters.start_encounter.sync_detailed(encounter.id, client=gm, body=models.StartRequest(seed=3)), 201
        )
        assert type(started.options) is type(encounter.options)
        # the bundles: an export parsed into the ruleset's bundle, sent back as an import's body
        bundle = _parsed(campaigns.export_campaign.sync_detailed(campaign.id, client=gm), 200)
        assert type(bundle).__name__ == f"{name}CampaignBundle" and type(bundle.campaign.options) is options
        assert [type(c.sheet).__name__ for c in bundle.characters] == [f"{name}Sheet"] * len(bundle.characters) != []
        assert type(bundle.encounters[0].options).__name__ == fight_options
        checked = campaigns.import_campaign.sync_detailed(client=anonymous, body=bundle, dry_run=True)
        assert type(_parsed(checked, 200)).__name__ == "CampaignImportChecked"
        one = _parsed(campaigns.export_character.sync_detailed(character.id, client=gm), 200)
        assert type(one).__name__ == f"{name}CharacterBundle" and type(one.character.sheet).__name__ == f"{name}Sheet"
        copied = _parsed(campaigns.import_character.sync_detailed(campaign.id, client=gm, body=one), 201)
        assert type(copied) is type(character) and copied.sheet.to_dict() == one.character.sheet.to_dict()
