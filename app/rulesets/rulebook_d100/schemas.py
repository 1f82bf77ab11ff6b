"""Schemas of the `rulebook-d100` ruleset: sheet (RB-S1..S3), options (RB-T6), requests."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StringConstraints, model_validator

from app.kit.models import CampaignOptions, RollingRequest, Strict, TestRequestBase
from app.models import fight_state
from app.models.fields import DiceExpression, Id
from app.models.governance import governed
from app.models.odds import NothingRolled
from app.rulesets.rulebook_d100.rules import core as rules

Name = Annotated[str, StringConstraints(min_length=1, max_length=40, pattern=r"^[\w\- ]+$")]
Difficulty = Literal[
    "simple",
    "facile",
    "tres_facile",
    "simplissime",
    "complexe",
    "difficile",
    "tres_difficile",
    "hardcore",
    "impossible",
    "quasi_impossible",
    "quasi_inratable",
    "inratable",
]


def _default_stats() -> dict[str, int]:
    return dict.fromkeys(rules.DEFAULT_STATS, rules.AVERAGE_STAT)


class Weapon(BaseModel):
    """RB-F2: a weapon: its damage expression (RB-S2) and how it attacks."""

    model_config = ConfigDict(extra="forbid")
    name: Name
    damage: DiceExpression
    kind: Literal["melee", "ranged", "morale"] = "melee"


class Sheet(BaseModel):
    """RB-S3: `{"stats": {...}, "skills": {...}, "crit_chance": 5, "hp", "hp_max", "pe", "pe_max", "armor"}`."""

    model_config = ConfigDict(extra="forbid")
    stats: dict[Name, Annotated[StrictInt, Field(ge=-1000, le=1000)]] = Field(
        default_factory=_default_stats,
        description="RB-S1/RB-F1: stats under GM-chosen names (default: the ten combat stats at 50).",
        json_schema_extra=governed(at_creation=True),
    )
    skills: dict[Name, Annotated[StrictInt, Field(ge=-1000, le=1000)]] = Field(
        default_factory=dict,
        description="RB-S1: named skill bonuses.",
        json_schema_extra=governed(at_creation=True),
    )
    crit_chance: StrictInt = Field(
        rules.DEFAULT_CRIT_CHANCE,
        ge=0,
        le=50,
        description="RB-S1: critical chance (%).",
        json_schema_extra=governed(at_creation=True),
    )
    hp: StrictInt | None = Field(
        None, ge=-10000, le=100000, description="PV (defaults to hp_max).", json_schema_extra=governed(at_creation=True)
    )
    hp_max: StrictInt = Field(0, ge=0, le=100000, json_schema_extra=governed(at_creation=True))
    pe: StrictInt | None = Field(
        None, ge=-10000, le=100000, description="PE (defaults to pe_max).", json_schema_extra=governed(at_creation=True)
    )
    pe_max: StrictInt = Field(0, ge=0, le=100000, json_schema_extra=governed(at_creation=True))
    armor: StrictInt = Field(0, ge=0, le=1000, description="RB-F3: absorbed damage.")
    weapons: list[Weapon] = Field(default_factory=list, max_length=50)

    @model_validator(mode="after")
    def _fill(self) -> Self:
        if self.hp is None:
            self.hp = self.hp_max
        if self.pe is None:
            self.pe = self.pe_max
        if not self.stats:
            raise ValueError("a sheet needs at least one stat")
        return self


class Options(CampaignOptions):
    """RB-T6: the GM's choices about criticals beyond the percentage."""

    crit_success_rescues_negative: StrictBool = Field(
        True, description="RB-T6: a critical success may rescue a negative percentage."
    )
    crit_failure_ruins_over_100: StrictBool = Field(
        True, description="RB-T6: a critical failure may ruin a percentage above 100."
    )


class TestFields(Strict):
    """The fields of a Rulebook test (RB-T1, RB-T2, RB-T7, RB-T8)."""

    stat: Name = Field(..., description="The stat tested (a key of the sheet's stats).")
    skill: Name | None = Field(None, description="A skill; missing from the sheet → a weakened roll (RB-T1).")
    weakened: StrictBool = Field(False, description="RB-T1: the stat is halved (rounded down).")
    difficulty: Difficulty | None = Field(None, description="RB-T2 modifier or RB-T8 special difficulty.")
    modifier: StrictInt = Field(0, ge=-1000, le=1000, description="Other modifiers, added to the percentage.")
    overflow_crit: StrictBool = Field(False, description="RB-T7: +1 crit chance per full 5 points above 100.")


class TestRequest(TestFields, TestRequestBase):
    """POST /characters/{id}/tests body."""


class OddsRequest(NothingRolled, TestRequest):
    """The same test's exact odds (`POST …/tests/odds`): nothing rolled nor logged, so no `seed`, `dice` or `hidden`."""


class Side(TestFields):
    """One side of a confrontation: a character and its test."""

    character_id: Id


class OpposedRequest(RollingRequest):
    """RB-C1/C2: table dice are consumed for a's test, b's test, then rerolls a, b, …"""

    a: Side
    b: Side
    tiebreak: StrictBool = Field(
        True, description="RB-C2: break a tie (units digit, then rerolls); false: equal is a draw."
    )


class Participant(Strict):
    character_id: Id
    skill: Name | None = None
    weakened: StrictBool = False
    modifier: StrictInt = Field(0, ge=-1000, le=1000)
    dice: list[StrictInt] | None = Field(None, max_length=100, description="This participant's table dice.")


class GroupRequest(RollingRequest):
    """RB-C3: a ranking: everyone tests the same stat."""

    mode: Literal["ranking"] = "ranking"
    stat: Name
    difficulty: Difficulty | None = None
    modifier: StrictInt = Field(0, ge=-1000, le=1000)
    overflow_crit: StrictBool = False
    participants: list[Participant] = Field(..., min_length=2, max_length=100)


# --- what a Rulebook D100 fight keeps on a combatant (combat.py, rules/turns.py; imports read it) -----


class RulebookD100Turn(fight_state.Turn):
    """A turn's notes: RB-F3's free attack, the attacker it dodged (`turns.FREE_ATTACK`)."""

    free_attack: fight_state.Ref | None = None


class Counters(fight_state.Counters):
    """RB-F3: the dodges made in the round `dodge_round` (each one harder)."""

    turn: RulebookD100Turn | None = None  # the shared turn, with RB-F3's note
    dodges: Annotated[StrictInt, Field(ge=0, le=1000)] | None = None
    dodge_round: Annotated[StrictInt, Field(ge=0)] | None = None
