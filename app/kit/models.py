"""The pydantic models every layer shares: the strict base of request bodies,
the dice-provenance fields of every request that rolls (API.md), and the options
every ruleset has. Each ruleset's models extend these (app/rulesets/)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Self, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator
from typing_extensions import TypeAliasType


def union(name: str, models: Sequence[Any], tag: str) -> Any:
    """A named union discriminated by `tag` (a single model stands for itself): one schema,
    `name`, in openapi.json. Built from a list at run time, so no static type can name it."""
    if len(models) == 1:
        return models[0]
    members = Union[tuple(models)]  # type: ignore[valid-type]  # noqa: UP007  # a run-time tuple of models
    return TypeAliasType(name, Annotated[members, Field(discriminator=tag)])


class Strict(BaseModel):
    """Base of every request body: unknown fields are refused with 422, not ignored."""

    model_config = ConfigDict(extra="forbid")


class CampaignOptions(Strict):
    """Options every ruleset has; each ruleset's `Options` extends this."""

    players_may_enter_dice: StrictBool = Field(
        False,
        description="Players may choose their dice, with table `dice` or a `seed` (else 403), for what "
        "they control only: the other dice of the action are the server's. The GM always may.",
    )


class RollingRequest(Strict):
    """Dice provenance fields of every request that rolls (API.md)."""

    # strict: `"1"`, `1.0` and `true` are not integers here (no coercion)
    seed: StrictInt | None = Field(
        None,
        ge=-(2**63),
        le=2**63 - 1,
        description="Reproducible RNG seed: it chooses the dice as surely as `dice` does (a player's only with "
        "`players_may_enter_dice`).",
    )
    dice: list[StrictInt] | None = Field(
        None, max_length=500, description="Dice rolled at the table, in the order the rule needs them."
    )
    hidden: StrictBool = Field(False, description="A GM roll hidden from the players in the log.")

    @model_validator(mode="after")
    def _one_provenance(self) -> Self:
        if self.seed is not None and self.dice is not None:
            raise ValueError("give either `seed` or `dice`, not both")
        return self


class TestRequestBase(RollingRequest):
    """Common fields of a test request; each ruleset adds its own."""

    modifier: StrictInt = Field(
        0, ge=-1000, le=1000, description="Added to the target (positive = easier) or to the roll, per ruleset."
    )
