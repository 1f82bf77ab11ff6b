"""Schemas of the `worlds-awakening` ruleset: sheet (WA-S1..S4, WA-T5, WA-T6), options, requests."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StringConstraints, model_validator

from app.kit.models import CampaignOptions, RollingRequest, TestRequestBase
from app.models import encounters
from app.models.fields import DiceExpression
from app.models.governance import governed
from app.models.odds import NothingRolled
from app.rulesets.worlds_awakening.rules import core as rules

Stat = rules.Stat
Difficulty = Literal["tres_facile", "facile", "moderee", "difficile", "tres_difficile"]
Name = Annotated[str, StringConstraints(min_length=1, max_length=60, pattern=r"^[\w\- ]+$")]
StatValue = Annotated[StrictInt, Field(ge=-10, le=30)]


def _zero_stats() -> dict[Stat, int]:
    return dict.fromkeys(rules.STATS, 0)


class Weapon(BaseModel):
    """WA-S2: `{name, stat, damage}` (e.g. longsword FOR 1d8)."""

    model_config = ConfigDict(extra="forbid")
    name: Name
    stat: Stat
    damage: DiceExpression


class Challenge(BaseModel):
    """WA-T6: a complex action in progress (or finished)."""

    model_config = ConfigDict(extra="forbid")
    name: Name
    successes_needed: StrictInt = Field(..., ge=1, le=1000)
    failures_allowed: StrictInt | None = Field(None, ge=0, le=1000)
    successes: StrictInt = Field(0, ge=0)
    failures: StrictInt = Field(0, ge=0)
    turns: StrictInt = Field(0, ge=0)
    status: Literal["in_progress", "succeeded", "failed"] = "in_progress"


class Sheet(BaseModel):
    """WA-S4: `{"level", "stats": {FOR, DEX, CON, INT, SAG, CHA}, "hp", "hp_max", "mp", "mp_max", "weapons"}`
    plus `pending` (WA-T5: ±2 per characteristic) and `challenges` (WA-T6, by name)."""

    model_config = ConfigDict(extra="forbid")
    level: StrictInt = Field(
        1, ge=1, le=rules.MAX_LEVEL, description="WA-S2: level 1..8 (starts at 1).", json_schema_extra=governed()
    )
    stats: dict[Stat, StatValue] = Field(
        default_factory=_zero_stats,
        description="WA-S1: the six characteristics as modifiers.",
        json_schema_extra=governed(at_creation=True),
    )
    hp: StrictInt | None = Field(
        None, ge=0, le=100000, description="Defaults to hp_max.", json_schema_extra=governed(at_creation=True)
    )
    hp_max: StrictInt = Field(0, ge=0, le=100000, json_schema_extra=governed(at_creation=True))
    mp: StrictInt | None = Field(
        None, ge=0, le=100000, description="Defaults to mp_max.", json_schema_extra=governed(at_creation=True)
    )
    mp_max: StrictInt = Field(0, ge=0, le=100000, json_schema_extra=governed(at_creation=True))
    weapons: list[Weapon] = Field(default_factory=list, max_length=50)
    down: StrictBool = Field(False, description="WA-C5: at 0 HP after damage.", json_schema_extra=governed())
    pending: dict[Stat, Literal[-2, 2]] = Field(
        default_factory=dict,
        description="WA-T5: a ±2 the GM recorded, consumed by the next test of that characteristic.",
        json_schema_extra=governed(),
    )
    challenges: dict[Name, Challenge] = Field(
        default_factory=dict, description="WA-T6: complex actions by name.", json_schema_extra=governed()
    )

    @model_validator(mode="after")
    def _fill(self) -> Self:
        for s in rules.STATS:
            self.stats.setdefault(s, 0)
        self.stats = {s: self.stats[s] for s in rules.STATS}
        if self.hp is None:
            self.hp = self.hp_max
        if self.mp is None:
            self.mp = self.mp_max
        for key, ch in self.challenges.items():
            if ch.name != key:
                raise ValueError(f"challenge {key!r} is named {ch.name!r}: the key must be its name")
        return self


class Options(CampaignOptions):
    """Worlds Awakening has no campaign option of its own yet."""


class TestRequest(TestRequestBase):
    """POST /characters/{id}/tests body (WA-T1, WA-T2, WA-T6)."""

    stat: Stat = Field(..., description="The characteristic added to the d20.")
    difficulty: Difficulty | None = Field(None, description="WA-T2 band; alone → its middle threshold.")
    target: StrictInt | None = Field(
        None, ge=-100, le=1000, description="WA-T2 threshold (inside the band if both given)."
    )
    modifier: StrictInt = Field(0, ge=-1000, le=1000, description="Other modifiers, added to the roll.")
    for_challenge: Name | None = Field(None, description="WA-T6: the challenge this test advances.")


class OddsRequest(NothingRolled, TestRequest):
    """The same test's exact odds (`POST …/tests/odds`): nothing rolled nor logged, so no `seed`, `dice` or `hidden`."""


class PendingModifierAction(RollingRequest):
    """WA-T5 (GM): record a pending ±2 on a characteristic (0 clears it)."""

    type: Literal["pending_modifier"] = "pending_modifier"
    stat: Stat
    value: Literal[-2, 0, 2]


class ChallengeAction(RollingRequest):
    """WA-T6 (GM): start a complex action on the character."""

    type: Literal["challenge"] = "challenge"
    name: Name
    successes_needed: StrictInt = Field(..., ge=1, le=1000)
    failures_allowed: StrictInt | None = Field(None, ge=0, le=1000)


class ChallengeRemoveAction(RollingRequest):
    """WA-T6 (GM): remove a challenge from the character."""

    type: Literal["challenge_remove"] = "challenge_remove"
    name: Name


# --- encounter request bodies (combat.py) ---------------------
class AttackRequest(encounters.AttackRequest):
    """WA-C1..C3: table dice in rule order: the d20, then the damage dice (rolled twice on a
    critical success reaching the defense, WA-C2). No reaction: the defense is a value."""

    kind: Literal["physical", "magical"] = Field(
        "physical", description="WA-C1: against the physical (10 + CON + level) or magical (10 + SAG + level) defense."
    )
    stat: Literal["FOR", "DEX", "CON", "INT", "SAG", "CHA"] | None = Field(
        None, description="WA-C1: the attack characteristic (default: the weapon's; without one FOR, INT magical)."
    )
    modifier: StrictInt = Field(0, ge=-100, le=100, description="Other modifiers of the attack test.")
    reaction: Literal["none"] | None = Field(None, description="WA-C1: no reaction (the defense is a value).")
