"""The body of `POST /v1/characters/{id}/tests/odds`: a ruleset's test request without
the dice-provenance fields, since nothing is rolled or logged (a body that sends
`seed`, `dice` or `hidden` is a 422). Each ruleset declares `OddsRequest(NothingRolled,
TestRequest)`, so the documented schema is exactly what the route accepts."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from app.kit.models import Strict


class NothingRolled(Strict):
    """Put before a test request in the bases: its `seed`, `dice` and `hidden` are taken away
    (left out of the schema; present in a body, even null, they are refused)."""

    seed: SkipJsonSchema[None] = Field(None, exclude=True)
    dice: SkipJsonSchema[None] = Field(None, exclude=True)
    hidden: SkipJsonSchema[None] = Field(None, exclude=True)

    @field_validator("seed", "dice", "hidden", mode="before")
    @classmethod
    def _not_used(cls, value: Any) -> None:
        raise ValueError("not used by odds: nothing is rolled nor logged")
