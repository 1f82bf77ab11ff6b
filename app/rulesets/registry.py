"""The one registry of rulesets: id -> its package under `app.rulesets`.

Each package gives, by convention, `adapter.ADAPTER` (the `RulesetAdapter`), `combat.COMBAT`
(the `EncounterRules`), `results.RESULTS` (capability -> result models) and `examples.EXAMPLES`
(the OpenAPI examples of its bodies). Adding a ruleset is one line here (docs/adding-a-ruleset.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from types import ModuleType
from typing import Any

from pydantic import BaseModel

from app.kit.errors import NotFound
from app.rulesets.combat_contract import EncounterRules
from app.rulesets.contract import RulesetAdapter

# ruleset id -> package under app.rulesets
RULESET_PACKAGES = {
    "great-cosmos": "great_cosmos",
    "asgard": "asgard",
    "rulebook-d100": "rulebook_d100",
    "worlds-awakening": "worlds_awakening",
}


class UnknownRuleset(NotFound):
    title = "Unknown ruleset"
    slug = "unknown-ruleset"


@dataclass(frozen=True)
class Ruleset:
    """A registered ruleset's four parts."""

    id: str
    adapter: RulesetAdapter
    combat: EncounterRules
    results: dict[str, list[type[BaseModel]]]
    examples: dict[str, Any] = field(default_factory=dict)


def _load(package: str) -> Ruleset:
    def part(name: str) -> ModuleType:
        return import_module(f"app.rulesets.{package}.{name}")

    adapter: RulesetAdapter = part("adapter").ADAPTER
    combat: EncounterRules = part("combat").COMBAT
    results = part("results")
    examples = part("examples").EXAMPLES
    if not adapter.id == combat.ruleset == results.RULESET:
        raise RuntimeError(f"app.rulesets.{package}: its adapter, combat and results name different rulesets")
    return Ruleset(adapter.id, adapter, combat, results.RESULTS, examples)


REGISTRY: dict[str, Ruleset] = {ruleset: _load(package) for ruleset, package in RULESET_PACKAGES.items()}
RULESET_IDS = tuple(REGISTRY)


def get(ruleset: str) -> Ruleset:
    """The registered ruleset, or UnknownRuleset (404)."""
    found = REGISTRY.get(ruleset)
    if found is None:
        raise UnknownRuleset(f"no ruleset {ruleset!r}; known: {', '.join(RULESET_IDS)}", field="ruleset")
    return found


def get_adapter(ruleset: str) -> RulesetAdapter:
    """The adapter of `ruleset`, or UnknownRuleset (404)."""
    return get(ruleset).adapter


def all_adapters() -> list[RulesetAdapter]:
    return [r.adapter for r in REGISTRY.values()]


def rules_for(ruleset: str) -> EncounterRules:
    """The encounter rules of a known ruleset (a stored campaign's)."""
    return REGISTRY[ruleset].combat


RULES: dict[str, EncounterRules] = {r.id: r.combat for r in REGISTRY.values()}
# ruleset id -> {capability: result models}; capabilities as `Capability` values
RESULTS: dict[str, dict[str, list[type[BaseModel]]]] = {r.id: r.results for r in REGISTRY.values()}
