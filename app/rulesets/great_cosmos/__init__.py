"""The Tale of Great Cosmos (rules v6), rule ids GC-… in shared/rules/great-cosmos.md.
See app/rulesets/__init__.py for the shape of the package."""
