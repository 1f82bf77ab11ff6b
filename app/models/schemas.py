"""Request and response schemas of the generic resources (campaigns, players,
characters, free rolls, pages). Ruleset-specific bodies live in app/rulesets/."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt

from app.kit.models import RollingRequest, Strict
from app.models.fields import Id
from app.models.validation import InvalidBody

NO_NUL = r"^[^\x00]*$"  # PostgreSQL text cannot hold NUL: refused on every backend alike
NO_CONTROL = r"^[^\x00-\x1f\x7f-\x9f]*$"  # no NUL nor any other control character (Unicode Cc)
Name = Field(min_length=1, max_length=200, pattern=NO_NUL)


def _utc(value: datetime) -> datetime:
    """SQLite gives back naive timestamps: they were stored in UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


Timestamp = Annotated[datetime, AfterValidator(_utc)]

# API.md: `metadata`, a client's own ids on a campaign, a character or an encounter
METADATA_KEYS, METADATA_KEY_LENGTH, METADATA_VALUE_LENGTH = 50, 40, 500
MetadataKey = Annotated[str, Field(min_length=1, max_length=METADATA_KEY_LENGTH, pattern=NO_CONTROL)]
MetadataValue = Annotated[str, Field(max_length=METADATA_VALUE_LENGTH, pattern=NO_NUL)]
METADATA_DOC = (
    f"A client's own ids and notes, returned as stored: at most {METADATA_KEYS} keys of at most "
    f"{METADATA_KEY_LENGTH} characters, each value at most {METADATA_VALUE_LENGTH}."
)
Metadata = Annotated[dict[MetadataKey, MetadataValue], Field(max_length=METADATA_KEYS, description=METADATA_DOC)]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch (a character's `sheet`, `metadata`)."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def merge_metadata(current: dict[str, str], patch: dict[str, str | None] | None) -> dict[str, str]:
    """`metadata` after its merge patch (a null removes the key); beyond the key count, the 422
    `validation_failed` a body of that many keys answers: the count is one of `Metadata`'s bounds,
    with the keys' and values' lengths (API.md), whichever request exceeds it."""
    if patch is None:
        return current
    merged: dict[str, str] = merge_patch(current, patch)
    if len(merged) > METADATA_KEYS:
        raise InvalidBody(f"metadata: at most {METADATA_KEYS} keys ({len(merged)} after this patch)", field="metadata")
    return merged


MetadataPatch = Annotated[
    dict[MetadataKey, MetadataValue | None],
    Field(
        max_length=METADATA_KEYS,
        description="A JSON merge patch (RFC 7396) of `metadata`: a key set to null is removed. " + METADATA_DOC,
    ),
]
T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    items: list[T]
    next_cursor: str | None


# --- campaigns ----------------------------------------------------------------
class CampaignCreate(Strict):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"name": "Les Ombres", "ruleset": "great-cosmos"},
                {"name": "Ragnarök", "ruleset": "asgard", "options": {"players_may_enter_dice": True}},
            ]
        }
    )
    name: str = Name
    ruleset: str = Field(max_length=40, description="great-cosmos, asgard, rulebook-d100 or worlds-awakening")
    options: dict[str, Any] | None = Field(
        None, description="Validated against the ruleset's options; defaults filled."
    )
    metadata: Metadata | None = None


class CampaignUpdate(Strict):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"name": "Les Ombres, saison 2"},
                {"options": {"players_may_enter_dice": True}},
            ]
        }
    )
    name: str | None = Field(None, min_length=1, max_length=200, pattern=NO_NUL)
    options: dict[str, Any] | None = Field(None, description="Merged into the current options, then validated.")
    metadata: MetadataPatch | None = None


class CampaignPublic(BaseModel):
    id: str
    name: str
    ruleset: str
    options: dict[str, Any]
    version: int
    created_at: Timestamp
    role: Literal["gm", "player"] | None = Field(None, description="The caller's role in this campaign.")
    metadata: dict[str, str] = Field(default_factory=dict, description=METADATA_DOC)


class CampaignCreated(CampaignPublic):
    gm_token: str = Field(description="Shown once: keep it. Only its hash is stored.")


# --- players --------------------------------------------------------------------
class PlayerCreate(Strict):
    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "Alice"}]})
    name: str = Name


class PlayerPublic(BaseModel):
    id: str
    campaign_id: str
    name: str
    created_at: Timestamp


class PlayerCreated(PlayerPublic):
    token: str = Field(description="Shown once: keep it. Only its hash is stored.")


class PlayerPage(Page[PlayerPublic]):
    """A page of players."""


# --- tokens ---------------------------------------------------------------------
class Me(BaseModel):
    """Who a token is (GET /v1/me)."""

    campaign_id: str
    role: Literal["gm", "player"]
    player_id: str | None = Field(description="The player this token is; null for the GM.")


class GmTokenRotated(BaseModel):
    gm_token: str = Field(description="Shown once: keep it. The previous GM token is dead.")


class PlayerTokenRotated(BaseModel):
    token: str = Field(description="Shown once: keep it. The player's previous token is dead.")


# --- invitations (API.md "Joining a table with a link") ------------------------------
INVITE_SECONDS, INVITE_MAX_SECONDS = 3600, 7 * 24 * 3600


class InviteCreate(Strict):
    model_config = ConfigDict(json_schema_extra={"examples": [{}, {"expires_in": 86400}]})
    expires_in: Annotated[StrictInt, Field(ge=1, le=INVITE_MAX_SECONDS)] = Field(
        INVITE_SECONDS, description="Seconds the link stays valid: 1 hour by default, at most 7 days."
    )


class InviteCreated(BaseModel):
    """A single-use invitation of one player: whoever opens `url` first joins as that player."""

    code: str = Field(description="Shown once (only its hash is stored); single use.")
    url: str = Field(description="The dashboard's `/join#<code>`: the code travels in the fragment.")
    expires_at: Timestamp
    qr_svg: str = Field(
        description="`url` as a QR code, an SVG document (made here: the code is never sent back to be drawn)."
    )


class InviteAccepted(BaseModel):
    """A new credential of the invited player (one per device): its token, shown once."""

    token: str = Field(description="Shown once: keep it. Only its hash is stored.")
    player_id: str
    campaign_id: str


# --- characters -----------------------------------------------------------------
PlayerAccess = Literal["observer", "limited", "none"]
PLAYER_ACCESS_DOC = (
    "What players other than its owner see of it (GM only): `observer` the whole sheet, `limited` "
    "its name, kind and each pool as a status word, `none` nothing (not listed, 404 as an unknown "
    "id). Default: a PC `observer`, an NPC `none`."
)


class CharacterCreate(Strict):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "Aiko",
                    "kind": "pc",
                    "sheet": {
                        "race": "humain",
                        "hp_max": 100,
                        "mp_max": 50,
                        "stats": {
                            "force": 68,
                            "esprit": 50,
                            "charisme": 40,
                            "agilite": 55,
                            "precision": 45,
                            "chance": 60,
                        },
                    },
                },
                {"name": "Goblin", "kind": "npc", "sheet": {"skills": {"combat": 4}, "vitality_max": 8}},
            ]
        }
    )
    name: str = Name
    kind: Literal["pc", "npc"] = "pc"
    player_id: Id | None = None
    sheet: dict[str, Any] = Field(description="Validated against the campaign's ruleset (see its sheet schema).")
    gm_override: StrictBool = Field(
        False, description="GM only: accept values outside the rules' bounds where a rule allows it."
    )
    player_access: PlayerAccess | None = Field(None, description=PLAYER_ACCESS_DOC)
    metadata: Metadata | None = None


class CharacterUpdate(Strict):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"sheet": {"notes": "Carries the amulet."}},
                {"name": "Aiko the Brave"},
            ]
        }
    )
    name: str | None = Field(None, min_length=1, max_length=200, pattern=NO_NUL)
    kind: Literal["pc", "npc"] | None = None
    player_id: Id | None = None
    sheet: dict[str, Any] | None = Field(None, description="A JSON merge patch (RFC 7396) applied to the stored sheet.")
    gm_override: StrictBool = False
    player_access: PlayerAccess | None = Field(None, description=PLAYER_ACCESS_DOC)
    metadata: MetadataPatch | None = None


class CharacterPublic(BaseModel):
    id: str
    campaign_id: str
    name: str
    kind: str
    player_id: str | None
    ruleset: str
    sheet: dict[str, Any]
    derived: dict[str, Any]
    player_access: PlayerAccess = Field(description=PLAYER_ACCESS_DOC)
    version: int
    created_at: Timestamp
    updated_at: Timestamp
    metadata: dict[str, str] = Field(default_factory=dict, description=METADATA_DOC)


class PoolStatus(BaseModel):
    status: Literal["unhurt", "wounded", "bloodied", "down"]


class CharacterLimited(BaseModel):
    """A character as a player with `limited` access reads it (not its owner, not the GM): no
    sheet, each of its ruleset's pools as a status word (none when a fight it is in hides them)."""

    id: str
    campaign_id: str
    name: str
    kind: str
    ruleset: str
    player_access: Literal["limited"] = "limited"
    pools: dict[str, PoolStatus] = Field(
        description="Each pool (`hp`, `vitality`…) as full → unhurt, above half → "
        "wounded, above 0 → bloodied, 0 → down."
    )
    version: int
    created_at: Timestamp
    updated_at: Timestamp


CharacterRead = Annotated[CharacterPublic | CharacterLimited, Field(union_mode="left_to_right")]


class CharacterPage(Page[CharacterRead]):
    """A page of characters, each as the caller may read it."""


# --- free rolls and the log -----------------------------------------------------
class RollCreate(RollingRequest):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"expression": "3d6+2", "purpose": "damage"},
                {"expression": "d100", "dice": [42], "hidden": True},
            ]
        }
    )
    expression: str = Field(min_length=1, max_length=200, examples=["3d6+2", "4d6kh3", "d100"])
    purpose: str = Field(
        "roll",
        min_length=1,
        max_length=100,
        pattern=NO_CONTROL,
        description="Why the dice are rolled: one line of text, no control characters.",
    )
    character_id: Id | None = Field(None, description="Attribute the roll to a character.")


class Health(BaseModel):
    """`GET /healthz`: the process is up."""

    status: Literal["ok"]


class Readiness(BaseModel):
    """`GET /readyz`: the database answers."""

    status: Literal["ready"]
