"""Each ruleset declares its steps as a TypedDict (`app/rulesets/<id>/rules/steps.py`), which mypy
checks where a step is built; the encounter's own steps are `FlowStep`. Here the fights are run:
every scenario of the rulesets' fight tests (and the encounter tests) that needs only the `table`
is played again with its own fixed dice, and every key of every step of every logged action must
be declared by its TypedDict (a step citing a flow rule, `FLOW_RULES`, by `FlowStep`). A key mypy
cannot see (one built from a name, or spread from an untyped dict) fails here."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any, get_type_hints

import pytest

from app.kit.steps import Step
from app.models.fight_rows import FlowStep
from app.models.results.combat import FLOW_RULES, CombatStep
from app.rulesets.asgard.results import AsgardCombatStep
from app.rulesets.asgard.rules.steps import AsgardStep
from app.rulesets.great_cosmos.results import GreatCosmosCombatStep
from app.rulesets.great_cosmos.rules.steps import GreatCosmosStep
from app.rulesets.rulebook_d100.results import RulebookD100CombatStep
from app.rulesets.rulebook_d100.rules.steps import RulebookD100Step
from app.rulesets.worlds_awakening.results import WorldsAwakeningCombatStep
from app.rulesets.worlds_awakening.rules.steps import WorldsAwakeningStep
from tests.factories import AS, GC, RB, WA
from tests.fixtures import Table

STEPS: dict[str, Any] = {AS: AsgardStep, GC: GreatCosmosStep, RB: RulebookD100Step, WA: WorldsAwakeningStep}
MODELS = {AS: AsgardCombatStep, GC: GreatCosmosCombatStep, RB: RulebookD100CombatStep, WA: WorldsAwakeningCombatStep}
SCENARIOS = (
    "tests.rulesets.asgard.test_combat",
    "tests.rulesets.great_cosmos.test_combat",
    "tests.rulesets.rulebook_d100.test_combat",
    "tests.rulesets.worlds_awakening.test_combat",
    "tests.api.test_encounters",
)


def declared(typed: Any) -> set[str]:
    """A TypedDict's keys, required or not (its own and its bases')."""
    return set(typed.__required_keys__ | typed.__optional_keys__)


def undeclared(ruleset: str, steps: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each step key its TypedDict does not declare → the steps (`rule` `key`) writing it."""
    out: dict[str, list[str]] = {}
    for s in steps:
        typed = FlowStep if s["rule"] in FLOW_RULES else STEPS[ruleset]
        for k in sorted(set(s) - declared(typed)):
            out.setdefault(k, []).append(f"{s['rule']} {s.get('key')}")
    return out


def scenarios() -> Iterator[Any]:
    """The fight tests that need nothing but the `table` (a parametrised one is left out)."""
    for name in SCENARIOS:
        module = importlib.import_module(name)
        for test_name, fn in sorted(vars(module).items()):
            if (
                test_name.startswith("test_")
                and inspect.isfunction(fn)
                and fn.__module__ == name
                and not hasattr(fn, "pytestmark")
                and list(inspect.signature(fn).parameters) == ["table"]
            ):
                yield pytest.param(fn, id=f"{name.split('.')[-2]}.{test_name}")


class Recording(Table):
    """The fight table of one ruleset, keeping the ids of the encounters it makes."""

    def __init__(self, client: Any, campaign: Any, players: Any, ruleset: str):
        super().__init__(client, campaign, players)
        self.ruleset, self.encounters = ruleset, list[str]()

    def encounter(self, combatants: list[dict], options: dict | None = None) -> dict:
        made = super().encounter(combatants, options)
        self.encounters.append(made["id"])
        return made

    def logged_steps(self, eid: str) -> list[dict[str, Any]]:
        """Every step of every action of the encounter, as its GM reads them (all of them)."""
        steps, cursor = [], None
        while True:
            params = {"limit": 100, **({"cursor": cursor} if cursor else {})}
            r = self.client.get(f"/v1/encounters/{eid}/actions", params=params, headers=self.gm)
            assert r.status_code == 200, r.text
            steps += [s for a in r.json()["items"] for s in a["steps"]]
            cursor = r.json()["next_cursor"]
            if cursor is None:
                return steps


@pytest.fixture
def recording(client, campaign_factory, player_factory):
    """The `table` fixture's factory, its tables recording; and those tables."""
    tables: list[Recording] = []

    def make(ruleset: str, options: dict | None = None) -> Table:
        c = campaign_factory(ruleset, options)
        t = Recording(client, c, (player_factory(c, "Alice"), player_factory(c, "Bob")), ruleset)
        tables.append(t)
        return t

    return make, tables


@pytest.mark.parametrize("scenario", list(scenarios()))
def test_every_step_key_a_fight_logs_is_declared_by_its_rulesets_step_typeddict(
    recording: tuple[Callable[..., Table], list[Recording]], scenario: Callable[..., None]
):
    make, tables = recording
    scenario(make)
    logged = {(t.ruleset, eid): t.logged_steps(eid) for t in tables for eid in t.encounters}
    missing = {f"{r} {eid}": found for (r, eid), steps in logged.items() if (found := undeclared(r, steps))}
    assert missing == {}


def test_the_scenarios_cover_every_ruleset_and_log_steps():
    """The runs above can fail: every ruleset has scenarios, and a known figure of each is declared."""
    ids = [p.id for p in scenarios()]
    assert {i.split(".")[0] for i in ids} == {"asgard", "great_cosmos", "rulebook_d100", "worlds_awakening", "api"}
    assert len(ids) > 60
    assert {"perception", "request", "resistance", "members"} <= declared(AsgardStep)
    assert {"from", "to", "karma", "standing_reaction", "provoked_by"} <= declared(GreatCosmosStep)
    assert {"d100", "dodge_level", "weapon_roll", "dodged"} <= declared(RulebookD100Step)
    assert {"defense_of", "stat_value", "doubled_dice"} <= declared(WorldsAwakeningStep)
    assert {"round", "slot", "name", "rounds_left", "ends", "field", "character_id"} <= declared(FlowStep)


def test_a_key_no_typeddict_declares_is_reported():
    steps = [
        {"rule": "AS-C1", "key": "attack_test", "what": "attack test", "score": 12, "zorglub": 1},
        {"rule": "turn", "key": "new_round", "what": "new round", "round": 2, "perception": 3},
        {"rule": "GC-D1", "key": "move", "what": "move", "from": {"x": 0, "y": 0}},
    ]
    assert undeclared(AS, steps) == {
        "zorglub": ["AS-C1 attack_test"],
        "perception": ["turn new_round"],
        "from": ["GC-D1 move"],
    }
    assert undeclared(GC, steps[2:]) == {}


@pytest.mark.parametrize("ruleset", [AS, GC, RB, WA])
def test_each_rulesets_step_model_and_typeddict_agree_on_the_declared_keys(ruleset):
    """The response model (`…CombatStep`) declares the common keys; its TypedDict declares them too,
    and every ruleset's TypedDict resolves (`get_type_hints`: each figure's type exists)."""
    model, typed = MODELS[ruleset], STEPS[ruleset]
    assert set(model.model_fields) == {"rule", "key", "what", "combatant_id"}
    assert set(model.model_fields) <= declared(typed)
    assert set(CombatStep.model_fields) <= declared(Step) <= declared(typed)
    assert set(get_type_hints(typed)) == declared(typed)
