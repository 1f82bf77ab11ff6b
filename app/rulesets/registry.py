"""The one registry of rulesets: id -> its package (a full module path: the four are under
`app.rulesets`, but any importable package of the same shape will do).

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
from app.rulesets.contract.adapter import RulesetAdapter
from app.rulesets.contract.combat import EncounterRules

# ruleset id -> its package (the order: the catalogue's, the unions', openapi.json's)
RULESET_PACKAGES = {
    "great-cosmos": "app.rulesets.great_cosmos",
    "asgard": "app.rulesets.asgard",
    "rulebook-d100": "app.rulesets.rulebook_d100",
    "worlds-awakening": "app.rulesets.worlds_awakening",
}


class UnknownRuleset(NotFound):
    title = "Unknown ruleset"
    code = "unknown_ruleset"


@dataclass(frozen=True)
class Ruleset:
    """A registered ruleset's four parts, and the package they come from."""

    id: str
    adapter: RulesetAdapter
    combat: EncounterRules
    results: dict[str, list[type[BaseModel]]]
    examples: dict[str, Any] = field(default_factory=dict)
    package: str = ""  # its module path (`app.rulesets.asgard`): openapi.json names its schemas after it


def _load(ruleset: str, package: str) -> Ruleset:
    def part(name: str) -> ModuleType:
        return import_module(f"{package}.{name}")

    adapter: RulesetAdapter = part("adapter").ADAPTER
    combat: EncounterRules = part("combat").COMBAT
    results = part("results")
    examples = part("examples").EXAMPLES
    if not ruleset == adapter.id == combat.ruleset == results.RULESET:
        raise RuntimeError(
            f"{package}: registered as {ruleset!r}, its adapter, combat and results name "
            f"{adapter.id!r}, {combat.ruleset!r}, {results.RULESET!r}"
        )
    return Ruleset(ruleset, adapter, combat, results.RESULTS, examples, package)


REGISTRY: dict[str, Ruleset] = {ruleset: _load(ruleset, package) for ruleset, package in RULESET_PACKAGES.items()}
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
