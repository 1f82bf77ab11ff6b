"""The ruleset adapter contract (#11 item 2): every adapter is a complete, typed
`RulesetAdapter[Sheet, Options]`; each optional capability is declared once (its
interface, or the action registry) and `request_models` derives from it; adapters
get sheets and options parsed into their models; `describe()` is typed."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import get_args

import pytest

from app.rulesets.asgard import schemas as asgard
from app.rulesets.great_cosmos import schemas as great_cosmos
from app.rulesets.rulebook_d100 import schemas as rulebook_d100
from app.rulesets.worlds_awakening import schemas as worlds_awakening
from app.rules.dice import dice_source
from app.services import catalogue
from app.rulesets.registry import RULESET_IDS, all_adapters, get_adapter
from app.rulesets.contract.adapter import (
    INTERFACES,
    Action,
    Capability,
    CharacterState,
    Confrontations,
    GroupTests,
    LevelUps,
    OperationContext,
    Outcome,
    Rerolls,
    RulesetAdapter,
    RulesetDescription,
)
from app.kit import models as kit
from app.rules.errors import UnsupportedOperation
from app.models.validation import InvalidBody

MODELS = {
    "great-cosmos": great_cosmos,
    "asgard": asgard,
    "rulebook-d100": rulebook_d100,
    "worlds-awakening": worlds_awakening,
}
# what each ruleset offers beyond tests and odds (README's table)
OFFERS = {
    "great-cosmos": {Capability.LEVEL_UP: great_cosmos.LevelUpRequest},
    "asgard": {
        Capability.REROLL: asgard.RerollRequest,
        Capability.OPPOSED: asgard.OpposedRequest,
        Capability.GROUP: asgard.GroupRequest,
    },
    "rulebook-d100": {Capability.OPPOSED: rulebook_d100.OpposedRequest, Capability.GROUP: rulebook_d100.GroupRequest},
    "worlds-awakening": {},
}
ACTIONS = {
    "great-cosmos": {},
    "asgard": {
        "fall": False,
        "fire": False,
        "asphyxia": False,
        "damage": True,
        "mal_en_point": False,
        "first_aid": False,
        "rest": False,
        "chase": False,
        "heroic_effect": False,
        "cancel_damage": False,
        "protect_ally": False,
    },
    "rulebook-d100": {},
    "worlds-awakening": {"pending_modifier": True, "challenge": True, "challenge_remove": True},
}
# each ruleset's adapter and the modules it is split into (app/rulesets/<id>/: not rules/, combat or schemas)
ADAPTER_FILES = sorted(
    p
    for p in (Path(__file__).resolve().parents[2] / "app" / "rulesets").glob("*/*.py")
    if p.stem in ("adapter", "actions", "common")
)
assert len(ADAPTER_FILES) >= 4, ADAPTER_FILES  # one adapter per ruleset at least: the checks below read them


@pytest.mark.parametrize("ruleset", RULESET_IDS)
def test_every_adapter_is_a_complete_typed_ruleset_adapter(ruleset):
    adapter = get_adapter(ruleset)
    cls = type(adapter)
    assert isinstance(adapter, RulesetAdapter) and not inspect.isabstract(cls)
    assert adapter.id == ruleset and adapter.title
    # the models are named once, in the generic base: Sheet and Options derive from it
    assert (adapter.Sheet, adapter.Options) == (MODELS[ruleset].Sheet, MODELS[ruleset].Options)
    generic = next(b for b in cls.__orig_bases__ if getattr(b, "__origin__", None) is RulesetAdapter)
    assert get_args(generic) == (adapter.Sheet, adapter.Options)
    assert issubclass(adapter.TestRequest, kit.TestRequestBase)


def test_test_and_odds_are_abstract_and_a_ruleset_without_them_cannot_exist():
    assert {"test", "odds", "describe"} <= RulesetAdapter.__abstractmethods__

    class Half(RulesetAdapter[great_cosmos.Sheet, great_cosmos.Options]):
        id, title, TestRequest = "half", "Half", great_cosmos.TestRequest

        def describe(self):  # pragma: no cover - never called
            raise AssertionError

        def test(self, ch, req, ctx):  # pragma: no cover - never called
            raise AssertionError

    with pytest.raises(TypeError, match="odds"):
        Half()


@pytest.mark.parametrize("ruleset", RULESET_IDS)
def test_each_capability_has_one_answer_derived_from_its_one_declaration(ruleset):
    adapter = get_adapter(ruleset)
    for interface in INTERFACES:
        declared = isinstance(adapter, interface)
        assert declared == (interface.capability in OFFERS[ruleset])
        # no handler without its declaration, no 'unsupported' stub: the method exists iff declared
        assert hasattr(adapter, interface.method) == declared
        assert adapter.supports(interface.capability) == declared
        assert adapter.request_models(interface.capability) == (
            [OFFERS[ruleset][interface.capability]] if declared else []
        )
    # no second declaration as a class attribute (the old `LevelUpRequest = None`)
    for name in ("LevelUpRequest", "RerollRequest", "OpposedRequest", "GroupRequest", "gm_only_actions"):
        assert not hasattr(adapter, name), name
    assert adapter.request_models(Capability.TEST) == [adapter.TestRequest]
    assert adapter.request_models(Capability.ODDS) == [adapter.OddsRequest]  # the test's body, nothing rolled
    assert adapter.supports(Capability.ACTION) == bool(ACTIONS[ruleset])


@pytest.mark.parametrize("ruleset", RULESET_IDS)
def test_an_undeclared_capability_is_a_422_naming_it(ruleset):
    adapter = get_adapter(ruleset)
    words = {
        Capability.LEVEL_UP: "level-up",
        Capability.REROLL: "reroll",
        Capability.OPPOSED: "confrontation",
        Capability.GROUP: "group test",
    }
    for capability, word in words.items():
        if capability in OFFERS[ruleset]:
            assert adapter.request_model(capability) is OFFERS[ruleset][capability]
        else:
            with pytest.raises(UnsupportedOperation, match=f"{ruleset} has no {word} rule"):
                adapter.request_model(capability)


def test_a_capability_handler_without_its_interface_is_refused_at_class_creation():
    with pytest.raises(TypeError, match="LevelUps"):

        class Sneaky(RulesetAdapter[great_cosmos.Sheet, great_cosmos.Options]):  # noqa: F841
            id, title, TestRequest = "sneaky", "Sneaky", great_cosmos.TestRequest

            def level_up(self, ch, req, ctx):  # pragma: no cover - never called
                raise AssertionError


def test_a_declared_capability_must_be_implemented():
    class Lazy(RulesetAdapter[great_cosmos.Sheet, great_cosmos.Options], LevelUps[great_cosmos.LevelUpRequest]):
        id, title, TestRequest = "lazy", "Lazy", great_cosmos.TestRequest
        describe = test = odds = lambda *a: None

    assert Lazy.capability_requests == {Capability.LEVEL_UP: great_cosmos.LevelUpRequest}
    with pytest.raises(TypeError, match="level_up"):
        Lazy()


@pytest.mark.parametrize("ruleset", RULESET_IDS)
def test_character_actions_are_a_registry_of_model_handler_and_gm_only(ruleset):
    adapter = get_adapter(ruleset)
    assert {t: a.gm_only for t, a in adapter.actions.items()} == ACTIONS[ruleset]
    for type_, action in adapter.actions.items():
        assert isinstance(action, Action) and callable(action.handler)
        assert issubclass(action.model, kit.RollingRequest)
        assert action.model.model_fields["type"].annotation.__args__ == (type_,)  # Literal[type_]
    assert adapter.request_models(Capability.ACTION) == [a.model for a in adapter.actions.values()]
    with pytest.raises(InvalidBody, match="unknown action type 'nope'"):
        adapter.action_for({"type": "nope"})


def test_actions_dispatch_through_the_registry_only():
    """Neither getattr dispatch on the type nor an if/elif chain: no `action` method at all."""
    for adapter in all_adapters():
        assert not hasattr(adapter, "action")
    sources = "\n".join(p.read_text() for p in ADAPTER_FILES)
    assert 'getattr(self, f"_{' not in sources
    assert "req.type ==" not in sources


def test_adapters_read_parsed_sheets_and_options_not_dicts_with_restated_defaults():
    """A default is written once, in its model: no `sheet.get(…, default)` nor options read by name."""
    offenders = []
    for path in ADAPTER_FILES:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bsheet\.get\(|\bsheet\[\"|getattr\(ctx\.options|_option\(ctx", line):
                offenders.append(f"{path.name}:{n}: {line.strip()}")
    assert offenders == []


def test_an_adapter_gets_its_models_and_returns_a_changed_sheet_model():
    adapter = get_adapter("great-cosmos")
    sheet = adapter.parse_sheet(
        adapter.normalize_sheet(
            {
                "race": "humain",
                "hp_max": 10,
                "mp_max": 5,
                "karma": 4,
                "stats": {"force": 50, "esprit": 50, "charisme": 50, "agilite": 50, "precision": 50, "chance": 50},
            },
            kind="pc",
        )
    )
    hero = CharacterState("c1", "k1", "Aiko", "pc", None, sheet, 3)
    ctx = OperationContext(dice=dice_source(dice=[10]), options=adapter.parse_options({}), is_gm=True)
    outcome = adapter.test(hero, adapter.TestRequest(stat="force"), ctx)
    assert isinstance(outcome, Outcome)
    new, after = outcome.sheets["c1"], outcome.body.effects.karma.after
    assert isinstance(new, great_cosmos.Sheet) and new.karma == after != 4 and sheet.karma == 4  # input not mutated
    assert adapter.dump_sheet(new) == {**adapter.dump_sheet(sheet), "karma": after}


@pytest.mark.parametrize("ruleset", RULESET_IDS)
def test_describe_is_typed_and_the_catalogue_uses_it_unpatched(ruleset):
    adapter = get_adapter(ruleset)
    described = adapter.describe()
    assert isinstance(described, RulesetDescription) and type(described) is not RulesetDescription
    assert (described.id, described.title) == (adapter.id, adapter.title) and described.stats
    served = catalogue.describe(ruleset)
    assert {k: served[k] for k in described.model_dump(mode="json")} == described.model_dump(mode="json")
    operations = dict(served["operations"])
    # issue 27: each character action's body, `type` required as openapi.json's union member says
    actions = operations.pop("character_actions")
    assert sorted(actions) == sorted(adapter.actions)
    for kind, action in adapter.actions.items():
        model = action.model.model_json_schema()
        assert actions[kind]["gm_only"] is action.gm_only
        schema = dict(actions[kind]["schema"])
        assert set(schema.pop("required")) == {*model.pop("required", []), "type"}, kind
        assert schema == model, kind
    assert operations == {
        "level_up": adapter.supports(Capability.LEVEL_UP),
        "opposed": adapter.supports(Capability.OPPOSED),
        "group": adapter.supports(Capability.GROUP),
        "actions": sorted(adapter.actions),
        "schemas": {  # issue 27 item 5: each one-body operation's request body, for the dashboard's forms
            c.value: adapter.request_model(c).model_json_schema()
            for c in (Capability.LEVEL_UP, Capability.REROLL, Capability.OPPOSED, Capability.GROUP)
            if adapter.supports(c)
        },
    }


def test_interfaces_cover_every_one_body_capability():
    assert {i.capability for i in INTERFACES} == set(Capability) - {Capability.TEST, Capability.ODDS, Capability.ACTION}
    assert {LevelUps, Rerolls, Confrontations, GroupTests} == set(INTERFACES)
