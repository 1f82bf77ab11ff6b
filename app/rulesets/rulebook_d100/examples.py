"""The OpenAPI examples of rulebook-d100's bodies: capability -> examples (character actions: by `type`).
tests/api/test_openapi.py checks each against its model."""

from __future__ import annotations

from typing import Any

_A, _B = "ch_7f3a", "ch_91c2"  # two character ids
EXAMPLES: dict[str, Any] = {
    "test": [{"stat": "FOR", "skill": "escrime", "difficulty": "difficile"}, {"stat": "HAB", "dice": [37]}],
    "opposed": [{"a": {"character_id": _A, "stat": "FOR"}, "b": {"character_id": _B, "stat": "HAB"}}],
    "group": [{"stat": "HAB", "participants": [{"character_id": _A}, {"character_id": _B, "skill": "escrime"}]}],
}
