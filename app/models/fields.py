"""Field types shared by the app's models: those the rules engine checks, and integers bounded by their columns."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, StrictInt

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

# an integer a row keeps in an INTEGER column (32 bits on PostgreSQL: beyond, the row is refused there)
INT32 = 2**31 - 1
Int32 = Annotated[StrictInt, Field(ge=-INT32 - 1, le=INT32)]
