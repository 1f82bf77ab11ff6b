"""Rulebook D100, rule ids RB-… in shared/rules/rulebook-d100.md.
See app/rulesets/__init__.py for the shape of the package."""
