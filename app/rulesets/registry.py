"""The one registry of rulesets: id -> its package (a full module path: the four are under
`app.rulesets`, but any importable package of the same shape will do).

Each package declares itself once, typed: `ruleset.RULESET`, a `Ruleset` (its adapter, its
encounter rules, its result models and its examples). Adding a ruleset is one line here
(docs/adding-a-ruleset.md)."""

from __future__ import annotations

from importlib import import_module

from pydantic import BaseModel

from app.kit.errors import NotFound
from app.rulesets.contract.adapter import RulesetAdapter
from app.rulesets.contract.combat import EncounterRules
from app.rulesets.contract.ruleset import Ruleset

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


def _load(ruleset: str, package: str) -> Ruleset:
    """The package's declaration, checked: a `Ruleset` registered under its own id."""
    declared = getattr(import_module(f"{package}.ruleset"), "RULESET", None)
    if not isinstance(declared, Ruleset):
        raise TypeError(f"{package}.ruleset: RULESET is no Ruleset ({type(declared).__name__})")
    if declared.id != ruleset:
        raise RuntimeError(f"{package}: registered as {ruleset!r}, it declares {declared.id!r}")
    return declared


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
RESULTS: dict[str, dict[str, list[type[BaseModel]]]] = {
    r.id: {capability: list(models) for capability, models in r.results.items()} for r in REGISTRY.values()
}
