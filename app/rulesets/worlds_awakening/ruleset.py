"""Worlds Awakening as the registry lists it (app/rulesets/registry.py)."""

from app.rulesets.contract.ruleset import Ruleset
from app.rulesets.worlds_awakening import combat, examples, results
from app.rulesets.worlds_awakening.adapter import ADAPTER

RULESET = Ruleset(
    id=results.RULESET, adapter=ADAPTER, combat=combat.COMBAT, results=results.RESULTS, examples=examples.EXAMPLES
)
