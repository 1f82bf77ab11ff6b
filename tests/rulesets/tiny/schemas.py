"""Schemas of the `tiny` ruleset: its sheet, options and test body (TINY-T1)."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.kit.models import CampaignOptions, TestRequestBase
from app.models.governance import governed
from app.models.odds import NothingRolled


class Sheet(BaseModel):
    """`{"grit", "hp", "hp_max"}`; `hp` defaults to `hp_max`."""

    model_config = ConfigDict(extra="forbid")
    grit: int = Field(
        0, ge=-5, le=5, description="TINY-T1: added to the d6.", json_schema_extra=governed(at_creation=True)
    )
    hp: int | None = Field(
        None, ge=0, le=1000, description="Defaults to hp_max.", json_schema_extra=governed(at_creation=True)
    )
    hp_max: int = Field(0, ge=0, le=1000, json_schema_extra=governed(at_creation=True))

    @model_validator(mode="after")
    def _fill(self) -> Self:
        if self.hp is None:
            self.hp = self.hp_max
        return self


class Options(CampaignOptions):
    """Tiny has no campaign option of its own."""


class TestRequest(TestRequestBase):
    """`POST /v1/characters/{id}/tests` body (TINY-T1): one d6 in `dice`."""

    stat: Literal["grit"] = Field("grit", description="The one stat.")
    target: int | None = Field(None, ge=1, le=20, description="TINY-T1: the score to reach (default 4).")


class OddsRequest(NothingRolled, TestRequest):
    """The same test's exact odds: nothing rolled nor logged."""
