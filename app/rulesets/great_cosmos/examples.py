"""The OpenAPI examples of great-cosmos's bodies: capability -> examples (character actions: by `type`).
tests/api/test_openapi.py checks each against its model."""

from __future__ import annotations

from typing import Any

EXAMPLES: dict[str, Any] = {
    "test": [{"stat": "force", "modifier": 10}, {"stat": "intuition", "dice": [4]}],
    "level_up": [
        {"mode": "two_d10", "stats": ["force", "agilite"], "chance_bonus_pool": "hp", "seed": 7},
        {"pool": "mp", "chance_bonus_pool": "mp", "dice": [63, 12, 8, 15]},
    ],
}
