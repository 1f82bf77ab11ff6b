"""Asgard as the registry lists it (app/rulesets/registry.py)."""

from app.rulesets.asgard import combat, examples, results
from app.rulesets.asgard.adapter import ADAPTER
from app.rulesets.contract.ruleset import Ruleset

RULESET = Ruleset(
    id=results.RULESET, adapter=ADAPTER, combat=combat.COMBAT, results=results.RESULTS, examples=examples.EXAMPLES
)
