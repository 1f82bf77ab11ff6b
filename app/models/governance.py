"""Who may change what on a sheet (rules README, "Who may change what on a sheet").

A sheet field is *rule-governed* when the rules change it by themselves (karma,
posture, light/dark points, heroism, level, stats, pools and their maxima,
mental health, pending modifiers, challenges…): only rule operations and the GM
change it. Each sheet model declares it once, on the field, with `governed()`;
the mark is part of the JSON Schema the catalogue serves
(`GET /v1/rulesets/{id}`, `sheet_schema`), and `governed_fields()` reads it back.

`at_creation=True` marks the values a player builds its character with (stats,
skill values, pools and their maxima…): its own creation may set them. The
other governed fields start where a rule puts them (karma 0, level 1, the
race's light/dark points…): a player's creation leaves them at that start.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel

RULE_GOVERNED = "x-rule-governed"
PLAYER_SETS_AT_CREATION = "x-player-sets-at-creation"


def governed(*, at_creation: bool = False) -> dict[str, Any]:
    """The `json_schema_extra` of a rule-governed sheet field."""
    return {RULE_GOVERNED: True, PLAYER_SETS_AT_CREATION: at_creation}


@cache
def governed_fields(sheet_model: type[BaseModel]) -> dict[str, bool]:
    """{sheet key: whether a player's creation may set it} of the model's governed fields."""
    out: dict[str, bool] = {}
    for name, info in sheet_model.model_fields.items():
        extra = info.json_schema_extra
        if isinstance(extra, dict) and extra.get(RULE_GOVERNED):
            out[info.alias or name] = bool(extra.get(PLAYER_SETS_AT_CREATION))
    return out
