"""Field types shared by the app's models: those the rules engine checks, and integers bounded by their columns."""

from __future__ import annotations

import re
from typing import Annotated, Any, TypeGuard

from pydantic import AfterValidator, Field, StrictInt

from app.rules.dice import parse
from app.rules.errors import RuleError

# C0 control characters (U+0000-U+001F): never part of an id, a path or a query parameter (a 422 naming
# its place, on every backend alike: PostgreSQL text cannot even hold NUL)
NO_CONTROL_IN_ID = r"^[^\x00-\x1f]*$"
_CONTROL = re.compile(r"[\x00-\x1f]")
ID_LENGTH = 32

Id = Annotated[str, Field(min_length=1, max_length=ID_LENGTH, pattern=NO_CONTROL_IN_ID)]
"""Every id a request body names (a character, a combatant, an action, a player…): the one rule."""


def has_control(value: str) -> bool:
    """Whether `value` holds a C0 control character (the test `Id` applies, for raw values). A
    printable string has none (`isprintable`, a C loop, is the fast path of the hot routes' ids)."""
    return not value.isprintable() and _CONTROL.search(value) is not None


def plausible_id(value: Any) -> TypeGuard[str]:
    """Whether a value read from a body not yet validated may be an `Id` (worth reading ahead)."""
    return type(value) is str and 0 < len(value) <= ID_LENGTH and not has_control(value)


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
