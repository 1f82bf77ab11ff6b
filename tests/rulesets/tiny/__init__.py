"""Tiny: a test-only ruleset, the smallest package a ruleset can be (docs/adding-a-ruleset.md).

One stat (`grit`), a d6 test (TINY-T1), one pool (`hp`), a d6 initiative (TINY-C1). It is
not registered in the app: tests/rulesets/test_adding_a_ruleset.py registers it (one line
in `RULESET_PACKAGES`) in a server of its own and plays it through HTTP."""
