"""A ruleset as the registry lists it: one typed declaration per package (its `ruleset.py`,
`RULESET = Ruleset(...)`), holding the parts the rest of the app reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from app.rulesets.contract.adapter import RulesetAdapter
from app.rulesets.contract.combat import EncounterRules


@dataclass(frozen=True)
class Ruleset:
    """A ruleset's parts: its id, its adapter, its encounter rules, its result models by capability
    (`results.RESULTS`: the wire unions are built from them) and the OpenAPI examples of its
    bodies. The id is said three times (the adapter's, the combat's, here): they must agree."""

    id: str
    adapter: RulesetAdapter[Any, Any]
    combat: EncounterRules
    results: Mapping[str, Sequence[type[BaseModel]]]
    examples: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.id == self.adapter.id == self.combat.ruleset:
            raise ValueError(
                f"ruleset {self.id!r}: its adapter and combat name {self.adapter.id!r}, {self.combat.ruleset!r}"
            )
