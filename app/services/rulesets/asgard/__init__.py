"""The `asgard` ruleset seen from the services (see `adapter.py`)."""

from app.services.rulesets.asgard.adapter import ADAPTER, AsgardAdapter

__all__ = ["ADAPTER", "AsgardAdapter"]
