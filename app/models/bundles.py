"""The export bundle (API.md, "Export and import"): one versioned JSON document of a
campaign with its whole history, or of one character; read strictly on import (an unknown field,
a missing one or a wrong type is a 422 naming its place)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StrictBool, StrictFloat, StrictInt

from app.kit.models import Strict
from app.models.fields import INT32, Int32
from app.models.schemas import Metadata, Name

Id = Field(min_length=1, max_length=32, pattern=r"^[A-Za-z0-9_-]+$")
IdText = Annotated[str, Field(min_length=1, max_length=32, pattern=r"^[A-Za-z0-9_-]+$")]
# the integers are bounded by the columns the rows are written to (`Int32`: out of range, the import
# was a 500 on PostgreSQL and a row no other database could take on SQLite)
Version = Annotated[StrictInt, Field(ge=1, le=INT32)]
CAMPAIGN_FORMAT, CHARACTER_FORMAT, VERSION = "jdr-rules-api/campaign", "jdr-rules-api/character", 1


class BundleCampaign(Strict):
    id: str = Id
    name: str = Name
    ruleset: str = Field(max_length=40)
    options: dict[str, Any]
    metadata: Metadata
    version: Version
    created_at: datetime
    updated_at: datetime


class BundlePlayer(Strict):
    id: str = Id
    name: str = Name
    created_at: datetime


class BundleCharacter(Strict):
    id: str = Id
    player_id: str | None = Field(None, min_length=1, max_length=32)
    name: str = Name
    kind: Literal["pc", "npc"]
    sheet: dict[str, Any]
    version: Version
    player_access: Literal["observer", "limited", "none"]
    metadata: Metadata
    created_at: datetime
    updated_at: datetime


class BundleCombatant(Strict):
    id: str = Id
    character_id: str = Id
    ordinal: Annotated[StrictInt, Field(ge=0, le=INT32)]
    side: str = Field(max_length=40)
    hidden: StrictBool
    position: dict[str, Any] | None
    initiative: Int32 | None
    initiative_override: Int32 | None
    actions: Annotated[StrictInt, Field(ge=1, le=5)]
    reaction: str | None = Field(max_length=20)
    conditions: list[Any]
    counters: dict[str, Any]
    created_at: datetime


class BundleEncounter(Strict):
    id: str = Id
    name: str = Name
    status: Literal["setup", "active", "ended"]
    round: Annotated[StrictInt, Field(ge=0, le=INT32)]
    version: Version
    options: dict[str, Any]
    turn_order: list[Any]
    current_turn: dict[str, Any] | None
    metadata: Metadata = Field(default_factory=dict)  # a bundle of version 1 made before it had none
    created_at: datetime
    updated_at: datetime
    combatants: list[BundleCombatant]


class BundleAction(Strict):
    id: str = Id
    encounter_id: str = Id
    seq: Annotated[StrictInt, Field(ge=0, le=INT32)]
    type: str = Field(max_length=20)
    hidden: StrictBool
    changes: list[Any]
    reverts: str | None = Field(max_length=32)
    reverted_by: str | None = Field(max_length=32)
    created_at: datetime


Probability = Annotated[StrictFloat, Field(ge=0, le=1)]


class EntryFigures(Strict):
    """What the luck statistics read of a test (`GET …/stats`), as it was logged: its outcome, the
    exact probability of each outcome and of a success when it was rolled, its dice by type (the
    first two types, in the order first rolled). Null: an entry that is no test, or a test logged
    before the statistics (it counts among `tests_without_odds`)."""

    outcome: str | None = Field(max_length=30)
    p_super_critical_success: Probability | None
    p_critical_success: Probability | None
    p_success: Probability | None
    p_failure: Probability | None
    p_critical_failure: Probability | None
    p_super_critical_failure: Probability | None
    p_any_success: Probability | None
    die_a: str | None = Field(max_length=10)
    die_a_count: StrictInt | None = Field(ge=0, le=1000)
    die_a_total: StrictInt | None = Field(ge=0, le=1_000_000)
    die_b: str | None = Field(max_length=10)
    die_b_count: StrictInt | None = Field(ge=0, le=1000)
    die_b_total: StrictInt | None = Field(ge=0, le=1_000_000)


class BundleEntry(Strict):
    """A roll-log entry: the body its operation returned (dice, outcome, effects), as logged."""

    id: str = Id
    character_id: str | None = Field(max_length=32)
    kind: str = Field(max_length=20)
    hidden: StrictBool
    rerolls: str | None = Field(max_length=32)
    characters: list[str] = Field(description="The other characters the entry concerns.")
    created_at: datetime
    body: dict[str, Any]
    figures: EntryFigures | None = Field(
        None, description="A test's figures for the luck statistics (absent: none, as in a bundle made before them)."
    )


Hex64 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class BundleEpoch(Strict):
    """A dice epoch of the campaign (API.md "Verifiable server dice"), as `GET …/dice-epochs` lists
    it: its id is the one its dice name (kept on import: it is part of each die's message), its seed
    only if it was revealed. Imported, it is `imported` (`GET …/dice-epochs`): its dice are
    checkable, never rolled from."""

    id: str = Id
    campaign_id: str | None = Field(None, description="The campaign it was rolled in (not read on import).")
    commitment: Hex64
    salts: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(max_length=16)
    started_at: datetime
    revealed_at: datetime | None
    dice: StrictInt = Field(ge=0, le=2**53)
    seed: Hex64 | None = None


class CampaignBundle(Strict):
    format: Literal["jdr-rules-api/campaign"]
    version: Literal[1]
    exported_at: datetime
    campaign: BundleCampaign
    players: list[BundlePlayer] = Field(description="Without tokens: the import makes new ones.")
    characters: list[BundleCharacter]
    encounters: list[BundleEncounter]
    actions: list[BundleAction]
    log: list[BundleEntry] = Field(description="Every roll-log entry, oldest first.")
    level_ups: list[str] = Field(description="The ids of the log's level-up entries, oldest first.")
    deleted_characters: list[IdText] = Field(
        default_factory=list,
        description="The ids of characters deleted since that the bundle still names (a combatant's "
        "character, a log entry's, a change's): the bundle defines them, and each is imported as a new "
        "id that names no character. A bundle names no other id than those it defines.",
    )
    removed_combatants: list[IdText] = Field(
        default_factory=list,
        description="The ids of combatants removed since that an action's changes or a combatant's "
        "counters still name: each is imported as a new id that names no combatant.",
    )
    dice_epochs: list[BundleEpoch] = Field(
        default_factory=list,
        description="The campaign's dice epochs, oldest first (a seed only once revealed): the imported "
        "campaign keeps them to check its imported dice, and rolls from a new epoch of its own.",
    )


class CharacterBundle(Strict):
    format: Literal["jdr-rules-api/character"]
    version: Literal[1]
    exported_at: datetime
    ruleset: str = Field(max_length=40)
    character: BundleCharacter
    level_ups: list[BundleEntry] = Field(description="Its level-ups, oldest first, each with its dice and choices.")


_EXAMPLE_TIME = "2026-12-01T12:00:00Z"
CAMPAIGN_BUNDLE_EXAMPLE: dict[str, Any] = {
    "format": CAMPAIGN_FORMAT,
    "version": VERSION,
    "exported_at": _EXAMPLE_TIME,
    "campaign": {
        "id": "c1",
        "name": "La campagne",
        "ruleset": "great-cosmos",
        "options": {},
        "metadata": {},
        "version": 1,
        "created_at": _EXAMPLE_TIME,
        "updated_at": _EXAMPLE_TIME,
    },
    "players": [{"id": "p1", "name": "Alice", "created_at": _EXAMPLE_TIME}],
    "characters": [],
    "encounters": [],
    "actions": [],
    "log": [],
    "level_ups": [],
}
CampaignBundle.model_config["json_schema_extra"] = {"examples": [CAMPAIGN_BUNDLE_EXAMPLE]}
CharacterBundle.model_config["json_schema_extra"] = {
    "examples": [
        {
            "format": CHARACTER_FORMAT,
            "version": VERSION,
            "exported_at": _EXAMPLE_TIME,
            "ruleset": "asgard",
            "character": {
                "id": "h1",
                "player_id": None,
                "name": "Aiko",
                "kind": "pc",
                "sheet": {"skills": {"combat": 6}, "vitality_max": 20},
                "version": 1,
                "player_access": "observer",
                "metadata": {},
                "created_at": _EXAMPLE_TIME,
                "updated_at": _EXAMPLE_TIME,
            },
            "level_ups": [],
        }
    ]
}
CampaignBundle.model_rebuild(force=True)
CharacterBundle.model_rebuild(force=True)


class ImportedPlayer(BaseModel):
    id: str
    name: str
    token: str = Field(description="The player's new token, shown this once.")


class ImportCounts(BaseModel):
    players: int
    characters: int
    encounters: int
    actions: int
    log: int
    level_ups: int


class CampaignImported(BaseModel):
    id: str
    name: str
    ruleset: str
    gm_token: str = Field(description="The new campaign's GM token, shown this once.")
    players: list[ImportedPlayer]
    counts: ImportCounts


class CampaignImportChecked(BaseModel):
    """`dry_run`: the bundle is valid; nothing was written."""

    dry_run: bool
    valid: bool
    counts: ImportCounts
