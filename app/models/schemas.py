"""Request and response schemas of the generic resources (campaigns, players,
characters, free rolls, pages). Ruleset-specific bodies live in app/models/rulesets/."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Generic, Literal, TypeVar

from datetime import timezone

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from app.kit.models import RollingRequest, Strict

NO_NUL = r"^[^\x00]*$"  # PostgreSQL text cannot hold NUL: refused on every backend alike
NO_CONTROL = r"^[^\x00-\x1f\x7f-\x9f]*$"  # no NUL nor any other control character (Unicode Cc)
Name = Field(min_length=1, max_length=200, pattern=NO_NUL)


def _utc(value: datetime) -> datetime:
    """SQLite gives back naive timestamps: they were stored in UTC."""
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


Timestamp = Annotated[datetime, AfterValidator(_utc)]
T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    items: list[T]
    next_cursor: str | None


# --- campaigns ----------------------------------------------------------------
class CampaignCreate(Strict):
    name: str = Name
    ruleset: str = Field(max_length=40, description="great-cosmos, asgard, rulebook-d100 or worlds-awakening")
    options: dict[str, Any] | None = Field(None, description="Validated against the ruleset's options; defaults filled.")


class CampaignUpdate(Strict):
    name: str | None = Field(None, min_length=1, max_length=200, pattern=NO_NUL)
    options: dict[str, Any] | None = Field(None, description="Merged into the current options, then validated.")


class CampaignPublic(BaseModel):
    id: str
    name: str
    ruleset: str
    options: dict[str, Any]
    version: int
    created_at: Timestamp
    role: Literal["gm", "player"] | None = Field(None, description="The caller's role in this campaign.")


class CampaignCreated(CampaignPublic):
    gm_token: str = Field(description="Shown once: keep it. Only its hash is stored.")


# --- players --------------------------------------------------------------------
class PlayerCreate(Strict):
    name: str = Name


class PlayerPublic(BaseModel):
    id: str
    campaign_id: str
    name: str
    created_at: Timestamp


class PlayerCreated(PlayerPublic):
    token: str = Field(description="Shown once: keep it. Only its hash is stored.")


# --- characters -----------------------------------------------------------------
class CharacterCreate(Strict):
    name: str = Name
    kind: Literal["pc", "npc"] = "pc"
    player_id: str | None = Field(None, max_length=32)
    sheet: dict[str, Any] = Field(description="Validated against the campaign's ruleset (see its sheet schema).")
    gm_override: bool = Field(False, description="GM only: accept values outside the rules' bounds where a rule allows it.")


class CharacterUpdate(Strict):
    name: str | None = Field(None, min_length=1, max_length=200, pattern=NO_NUL)
    kind: Literal["pc", "npc"] | None = None
    player_id: str | None = Field(None, max_length=32)
    sheet: dict[str, Any] | None = Field(None, description="A JSON merge patch (RFC 7396) applied to the stored sheet.")
    gm_override: bool = False


class CharacterPublic(BaseModel):
    id: str
    campaign_id: str
    name: str
    kind: str
    player_id: str | None
    ruleset: str
    sheet: dict[str, Any]
    derived: dict[str, Any]
    version: int
    created_at: Timestamp
    updated_at: Timestamp


# --- free rolls and the log -----------------------------------------------------
class RollCreate(RollingRequest):
    expression: str = Field(min_length=1, max_length=200, examples=["3d6+2", "4d6kh3", "d100"])
    purpose: str = Field("roll", min_length=1, max_length=100, pattern=NO_CONTROL,
                         description="Why the dice are rolled: one line of text, no control characters.")
    character_id: str | None = Field(None, max_length=32, description="Attribute the roll to a character.")


class DieOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    die: str
    value: int
    purpose: str


class LogEntryOut(BaseModel):
    """A roll-log entry: the very body its operation returned."""

    model_config = ConfigDict(extra="allow")
    id: str
    kind: str
    rolls: list[DieOut] = []
    hidden: bool = False
    created_at: str


class RollOut(LogEntryOut):
    expression: str
    total: int
    purpose: str
    character_id: str | None = None


class OddsValue(BaseModel):
    probability: str = Field(examples=["169/1000"])
    p: float


class OddsOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    outcomes: dict[str, OddsValue]
    success: OddsValue
