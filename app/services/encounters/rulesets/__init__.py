"""Each ruleset's encounter pieces, by ruleset id (one module per ruleset)."""

from __future__ import annotations

from app.services.encounters.rulesets.asgard import Asgard
from app.services.encounters.rulesets.base import (
    COMBAT_ACTIONS,
    EncounterRules,
    Entrant,
    Exchange,
    Initiative,
    Party,
    Pool,
)
from app.services.encounters.rulesets.great_cosmos import GreatCosmos
from app.services.encounters.rulesets.rulebook_d100 import RulebookD100
from app.services.encounters.rulesets.worlds_awakening import WorldsAwakening

RULES: dict[str, EncounterRules] = {r.ruleset: r for r in (GreatCosmos(), Asgard(), RulebookD100(), WorldsAwakening())}


def rules_for(ruleset: str) -> EncounterRules:
    return RULES[ruleset]


__all__ = [
    "COMBAT_ACTIONS",
    "RULES",
    "EncounterRules",
    "Entrant",
    "Exchange",
    "Initiative",
    "Party",
    "Pool",
    "rules_for",
]
