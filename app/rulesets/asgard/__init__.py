"""Asgard (the Clé en main 3d6 system), rule ids AS-… in shared/rules/asgard.md.
See app/rulesets/__init__.py for the shape of the package."""
