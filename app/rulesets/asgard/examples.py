"""The OpenAPI examples of asgard's bodies: capability -> examples (character actions: by `type`).
tests/api/test_openapi.py checks each against its model."""

from __future__ import annotations

from typing import Any

_A, _B = "ch_7f3a", "ch_91c2"  # two character ids
EXAMPLES: dict[str, Any] = {
    "test": [
        {"skill": "combat", "difficulty": "moyen"},
        {"skill": "survie", "heroism_4d6": True, "dice": [6, 5, 3, 1]},
    ],
    "reroll": [{"heroism_4d6": True}],
    "opposed": [{"a": {"character_id": _A, "skill": "combat"}, "b": {"character_id": _B, "skill": "defense"}}],
    "group": [
        {
            "skill": "survie",
            "difficulty": "moyen",
            "participants": [{"character_id": _A}, {"character_id": _B, "modifier": 1}],
        }
    ],
    "action": {
        "fall": {"type": "fall", "metres": 6},
        "fire": {"type": "fire", "size": "campfire", "rounds": 2},
        "asphyxia": {"type": "asphyxia", "rounds": 3},
        "damage": {"type": "damage", "amount": 5, "protection": True},
        "mal_en_point": {"type": "mal_en_point", "damage": 4},
        "first_aid": {"type": "first_aid", "healer_soins": 5, "healer_id": _B},
        "rest": {"type": "rest"},
        "chase": {"type": "chase", "mode": "foot", "progression": 2},
        "heroic_effect": {"type": "heroic_effect", "asset": "Fils de Thor"},
        "cancel_damage": {"type": "cancel_damage", "damage": 6, "already_applied": True},
        "protect_ally": {"type": "protect_ally", "ally_id": _B, "damage": 4, "protection": True},
    },
}
