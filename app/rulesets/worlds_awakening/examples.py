"""The OpenAPI examples of worlds-awakening's bodies: capability -> examples (character actions: by `type`).
tests/api/test_openapi.py checks each against its model."""

from __future__ import annotations

from typing import Any

EXAMPLES: dict[str, Any] = {
    "test": [
        {"stat": "FOR", "difficulty": "moderee"},
        {"stat": "DEX", "target": 12, "for_challenge": "crochetage"},
    ],
    "action": {
        "pending_modifier": {"type": "pending_modifier", "stat": "CHA", "value": 2},
        "challenge": {"type": "challenge", "name": "crochetage", "successes_needed": 3, "failures_allowed": 2},
        "challenge_remove": {"type": "challenge_remove", "name": "crochetage"},
    },
}
