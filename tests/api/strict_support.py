"""What the strict-scalar tests share (test_strict_booleans.py, test_strict_numbers.py): the models a
request body is read with, the walk of their core schemas for a scalar that is not strict, and the
tables a refused body must leave as they were (the `written` fixture, tests/api/conftest.py)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Iterator

from pydantic import BaseModel

from app.kit.models import Strict
from app.rulesets.registry import RULESET_PACKAGES, get

TABLES = ("campaign", "player", "character", "roll_log", "encounter", "combatant", "encounter_action", "event")


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def lax_spots(schema: Any, where: str, types: Collection[str]) -> Iterator[str]:
    """The places of a pydantic core schema holding a scalar of one of `types` (core schema type
    names: "bool", "int", "float") that is not strict."""
    if isinstance(schema, dict):
        kind = schema.get("type")  # a dict where a model has a field named "type"
        if isinstance(kind, str) and kind in types and not schema.get("strict"):
            yield where
        for key, value in schema.items():
            yield from lax_spots(value, f"{where}.{key}", types)
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            yield from lax_spots(value, f"{where}[{i}]", types)


def request_models() -> list[type[BaseModel]]:
    """Every model a request body is read with: the strict bodies (`Strict`, the base of every
    body), and what a body holds as a free object, read by its ruleset: sheets, options of the
    campaign and of an encounter."""
    for ruleset in RULESET_PACKAGES:  # every ruleset's modules imported, so its bodies are Strict's subclasses
        get(ruleset)
    models: list[type[BaseModel]] = [m for m in _subclasses(Strict) if m.__module__.startswith("app.")]
    for ruleset in RULESET_PACKAGES:
        r = get(ruleset)
        models += [r.adapter.Sheet, r.adapter.Options, r.combat.Options]
    return models


def put(value: Any, loose: Any) -> Any:
    """`value` with its "?" replaced by `loose`."""
    if isinstance(value, dict):
        return {k: put(v, loose) for k, v in value.items()}
    if isinstance(value, list):
        return [put(v, loose) for v in value]
    return loose if value == "?" else value
