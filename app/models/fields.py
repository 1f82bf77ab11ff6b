"""Field types of the app's models that need the rules engine."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from app.rules.dice import parse
from app.rules.errors import RuleError


def _dice_expression(value: str) -> str:
    try:
        parse(value)
    except RuleError as exc:
        raise ValueError(exc.detail) from None
    return value


DiceExpression = Annotated[
    str, Field(max_length=60, description="A dice expression, e.g. `1d8+2`."), AfterValidator(_dice_expression)
]
"""A sheet field holding a dice expression (damage…), checked by the dice core's parser."""
