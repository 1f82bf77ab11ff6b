"""The registry of rulesets: id -> adapter (see `base.py` for the contract)."""

from __future__ import annotations

from functools import cache
from importlib import import_module

from app.kit.errors import NotFound
from app.services.rulesets.base import RulesetAdapter

# ruleset id -> module under app.services.rulesets defining `ADAPTER`
RULESET_MODULES = {
    "great-cosmos": "great_cosmos",
    "asgard": "asgard",
    "rulebook-d100": "rulebook_d100",
    "worlds-awakening": "worlds_awakening",
}
RULESET_IDS = tuple(RULESET_MODULES)


class UnknownRuleset(NotFound):
    title = "Unknown ruleset"
    slug = "unknown-ruleset"


@cache
def get_adapter(ruleset: str) -> RulesetAdapter:
    """The adapter of `ruleset`, or UnknownRuleset (404)."""
    module = RULESET_MODULES.get(ruleset)
    if module is None:
        raise UnknownRuleset(f"no ruleset {ruleset!r}; known: {', '.join(RULESET_IDS)}", field="ruleset")
    return import_module(f"app.services.rulesets.{module}").ADAPTER


def all_adapters() -> list[RulesetAdapter]:
    return [get_adapter(r) for r in RULESET_IDS]
