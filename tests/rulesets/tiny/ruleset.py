"""Tiny as the registry lists it (its one line: tests/rulesets/test_adding_a_ruleset.py)."""

from app.rulesets.contract.ruleset import Ruleset
from tests.rulesets.tiny import combat, examples, results
from tests.rulesets.tiny.adapter import ADAPTER

RULESET = Ruleset(
    id=results.RULESET, adapter=ADAPTER, combat=combat.COMBAT, results=results.RESULTS, examples=examples.EXAMPLES
)
