"""Combat on typed models (#23): the encounter rules read the campaign's options parsed once into
the ruleset's `Options` (each default lives in that model once), and a ruleset's encounter
request bodies live in its `schemas.py`, not in the services nor the shared models."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.models import encounters
from app.rulesets.registry import RULESET_IDS, get_adapter, rules_for
from app.services.encounters.store import Fight

APP = Path(__file__).resolve().parents[2] / "app"
COMBAT_FILES = [
    *sorted((APP / "rulesets").glob("*/combat.py")),  # the four rulesets' and the contract's
    APP / "rulesets" / "great_cosmos" / "exchange.py",
    *sorted((APP / "services" / "encounters").glob("*.py")),
]
# reading the campaign's options as a dict, with the model's default restated (`.get("x", True)`)
OPTIONS_AS_DICT = re.compile(r"options\.get\(|options\[[\"']|options\)\.get\(")


def test_combat_reads_options_parsed_once_not_dicts_with_restated_defaults():
    """AS-C1 gm_difficulty, AS-T8 take_11_allowed, GC-O1 turn_order_rules, RB-T6's criticals: read
    as the ruleset's `Options` attributes, never `campaign_options.get("take_11_allowed", True)`."""
    offenders = [
        f"{path.relative_to(APP)}:{n}: {line.strip()}"
        for path in COMBAT_FILES
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if OPTIONS_AS_DICT.search(line)
    ]
    assert offenders == []


@pytest.mark.parametrize("ruleset", RULESET_IDS)
def test_the_flow_parses_the_campaign_options_once_into_the_rulesets_model(ruleset):
    """What `Exchange.campaign_options` and `roll_initiative` get: the ruleset's `Options`, its
    defaults filled (an empty stored dict is every default), parsed once per use case."""
    fight = Fight(encounter={}, ruleset=ruleset, campaign_options={}, repository=None)  # type: ignore[arg-type]
    parsed = fight.ruleset_options
    adapter = get_adapter(ruleset)
    assert type(parsed) is adapter.Options
    assert parsed == adapter.Options()
    assert fight.ruleset_options is parsed


def test_encounter_request_bodies_live_in_each_rulesets_schemas():
    """No ruleset's request model is left in the shared encounter models; each combat action model
    of a ruleset is its package's (schemas.py), the OpenAPI names unchanged (test_openapi)."""
    shared = {name for name, value in vars(encounters).items() if isinstance(value, type)}
    assert not {name for name in shared if name.startswith(("GreatCosmos", "Asgard", "Rulebook", "Worlds"))}
    for ruleset in RULESET_IDS:
        rules = rules_for(ruleset)
        package = type(rules).__module__.rsplit(".", 1)[0]
        assert rules.Options.__module__ in (encounters.__name__, f"{package}.schemas")
        for type_, model in rules.combat_actions.items():
            if (ruleset, type_) in STAYING:
                assert model.__module__ == f"{package}.combat"
            else:
                assert model.__module__ == f"{package}.schemas", (ruleset, type_)


# published under names the `<Ruleset><Class>` naming of a ruleset's schemas cannot give
# (app/api/openapi_doc.py): moving them renames their OpenAPI schemas
STAYING = {("asgard", "heroism_reroll"), ("rulebook-d100", "attack")}
