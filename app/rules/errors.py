"""Errors raised by the pure rules engine: the app's hierarchy (`app.kit.errors`,
no HTTP in it), specialised for dice and rules. `app.api.problems` decides what
each becomes on the wire."""

from __future__ import annotations

from app.kit.errors import INT, STR, Conflict, RuleError, define, nullable

__all__ = [
    "RuleError",
    "UnsupportedOperation",
    "InsufficientResource",
    "ExpressionError",
    "DiceError",
    "DiceNeeded",
    "DieOutOfRange",
    "DiceLeftOver",
    "TooManyDice",
]


class UnsupportedOperation(RuleError):
    """The ruleset has no rule for this operation (e.g. `opposed` in Great Cosmos)."""

    title = "Operation not supported by this ruleset"
    code = "unsupported_operation"


class InsufficientResource(Conflict):
    """A spend the character cannot afford (heroism, light points…): nothing happens."""

    title = "Not enough resources"
    code = "unaffordable"


class ExpressionError(RuleError):
    """A dice expression that cannot be parsed or exceeds the limits."""

    title = "Invalid dice expression"
    code = "invalid_dice_expression"


class DiceError(RuleError):
    """Table dice that do not fit the operation (API.md, Dice provenance)."""

    title = "Invalid table dice"
    code = "invalid_dice"


class DiceNeeded(DiceError):
    """Too few table dice: says which die the rule needs next."""

    title = "More dice needed"
    code = "dice_needed"

    def __init__(self, index: int, die: str, purpose: str):
        super().__init__(
            f"die #{index + 1} is missing: the rule needs a {die} for {purpose!r} next",
            field="dice",
            extra={"needed": {"index": index, "die": die, "purpose": purpose}},
        )


class DieOutOfRange(DiceError):
    """A table die whose value is not a face of the die the rule rolls."""

    code = "die_out_of_range"

    def __init__(self, index: int, die: str, value: int, purpose: str):
        super().__init__(
            f"die #{index + 1} is {value}, not a face of the {die} rolled for {purpose!r}",
            field="dice",
            extra={"index": index, "die": die, "value": value, "purpose": purpose},
        )


class DiceLeftOver(DiceError):
    """Table dice left unused once the operation is resolved."""

    code = "dice_left_over"

    def __init__(self, used: int, given: int):
        super().__init__(
            f"{given - used} table dice left over: the operation used {used} of {given}",
            field="dice",
            extra={"used": used, "given": given},
        )


class TooManyDice(RuleError):
    """More dice than one request may roll (all its expressions and rule dice together)."""

    title = "Too many dice"
    code = "too_many_dice"

    def __init__(self, count: int, limit: int, *, field: str | None = None):
        super().__init__(
            f"{count} dice in one request: at most {limit} are allowed",
            field=field,
            extra={"dice": count, "limit": limit},
        )


define(
    "unaffordable",
    InsufficientResource,
    "A spend the character cannot afford (heroism, light points…): nothing happens.",
    needed=INT,
    available=INT,
)
define("invalid_dice_expression", ExpressionError, "A dice expression that cannot be read or exceeds the limits.")
define("too_many_dice", TooManyDice, "More dice than one request may roll.", dice=INT, limit=INT)
define("invalid_dice", DiceError, "Table dice (`dice`) that do not fit the operation.")
define(
    "dice_needed",
    DiceNeeded,
    "Too few table dice: `needed` says which die the rule needs next.",
    always=("needed",),
    needed={
        "type": "object",
        "required": ["index", "die", "purpose"],
        "properties": {
            "index": {**INT, "description": "The missing die's place in `dice` (from 0)."},
            "die": STR,
            "purpose": STR,
            "by": nullable(
                STR, "A fight's die: the combatant whose die it is (null: none named); absent outside fights."
            ),
        },
        "additionalProperties": False,
    },
)
define(
    "die_out_of_range",
    DieOutOfRange,
    "A table die whose value is not a face of the die the rule rolls.",
    index=INT,
    value=INT,
    die=STR,
    purpose=STR,
)
define("dice_left_over", DiceLeftOver, "Table dice left unused once the operation is resolved.", used=INT, given=INT)
