"""The rulesets catalogue: what a client needs to build a character and a test form."""

from __future__ import annotations

from typing import Any

from app.rulesets.contract import Capability, RulesetAdapter
from app.rulesets.registry import all_adapters, get_adapter


def summary(adapter: RulesetAdapter) -> dict[str, Any]:
    return {"id": adapter.id, "title": adapter.title}


def describe(ruleset: str) -> dict[str, Any]:
    adapter = get_adapter(ruleset)
    options = adapter.Options.model_json_schema()
    defaults = adapter.Options().model_dump(mode="json")
    return {
        **summary(adapter),
        **adapter.describe().model_dump(mode="json"),
        "options": {"defaults": defaults, "schema": options},
        "sheet_schema": adapter.Sheet.model_json_schema(),
        "test_request_schema": adapter.TestRequest.model_json_schema(),
        "operations": {
            "level_up": adapter.supports(Capability.LEVEL_UP),
            "opposed": adapter.supports(Capability.OPPOSED),
            "group": adapter.supports(Capability.GROUP),
            "actions": sorted(adapter.actions),
        },
    }


def list_rulesets() -> list[dict[str, Any]]:
    return [summary(a) for a in all_adapters()]
