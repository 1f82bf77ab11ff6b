"""Worlds Awakening, rule ids WA-… in shared/rules/worlds-awakening.md.
See app/rulesets/__init__.py for the shape of the package."""
