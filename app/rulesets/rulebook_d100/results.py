"""Rulebook D100 results: tests, odds, confrontations, rankings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from app.models.results.combat import CombatFields, CombatStep, rule_ids
from app.models.results.common import (
    Dice,
    Die,
    Head,
    OddsFields,
    OddsValue,
    Result,
    Tail,
    TestFields,
)
from app.models.results.luck import SuccessOdds

RULESET = "rulebook-d100"
Ruleset = Literal["rulebook-d100"]
Tiebreak = Literal["level", "units", "success", "reroll"]


class RulebookD100TestEffects(Result):
    """A Rulebook test changes no sheet: always empty."""


class RulebookD100CritChance(Result):
    success: int
    failure: int


class RulebookD100TestFields(TestFields):
    """RB-T1..T8: natural = score = the d100; target = the percentage."""

    ruleset: Ruleset
    success_level: int
    effects: RulebookD100TestEffects
    stat: str
    skill: str | None
    skill_bonus: int
    skill_missing: bool = Field(description="RB-T1: the skill is not on the sheet (weakened roll).")
    weakened: bool
    difficulty: str | None
    modifier: int
    overflow_crit: bool
    crit_chance: RulebookD100CritChance


class RulebookD100TestResult(Tail, Dice, SuccessOdds, RulebookD100TestFields, Head):
    """One d100 test with success levels (RB-T1..T8)."""


class RulebookD100Odds(OddsFields):
    ruleset: Ruleset
    success_level: dict[str, OddsValue] = Field(description="The distribution of the success level, by value.")


class RulebookD100Rerolls(Result):
    a: list[int]
    b: list[int]


class RulebookD100Opposed(Head):
    kind: Literal["opposed"]
    ruleset: Ruleset
    a: RulebookD100TestFields
    b: RulebookD100TestFields
    winner: Literal["a", "b"] | None = Field(description="null: a draw (RB-C2 with `tiebreak: false`).")
    winner_id: str | None
    tiebreak: Literal["level", "units", "success", "reroll", "draw"]
    rerolls: RulebookD100Rerolls


class RulebookD100OpposedResult(Tail, Dice, RulebookD100Opposed):
    """RB-C1/C2: both test; a success beats a failure, then the higher level, ties by units then d100 rerolls."""


class RulebookD100Placing(Result):
    place: int
    character_id: str
    tiebreak: Tiebreak
    rerolls: list[int]
    result: RulebookD100TestFields


class RulebookD100Group(Head):
    kind: Literal["group"]
    mode: Literal["ranking"]
    ruleset: Ruleset
    stat: str
    ranking: list[RulebookD100Placing]
    rolls: list[Die]


class RulebookD100GroupResult(Tail, RulebookD100Group):
    """RB-C3: a ranking of everyone's test of the same stat."""


# --- combat (encounter actions, roll-log entries of kind `combat`) --------------------------


class RulebookD100CombatStep(CombatStep):
    rule: str = Field(pattern=rule_ids("RB"), examples=["RB-F2", "turn"])


class RulebookD100CombatEntry(CombatFields):
    """A Rulebook D100 encounter action, also its roll-log entry (`kind: "combat"`)."""

    ruleset: Ruleset
    type: Literal["attack", "start", "next_turn", "revert", "heal", "damage", "condition", "join"]
    steps: list[RulebookD100CombatStep]


RESULTS: dict[str, list[type[BaseModel]]] = {
    "test": [RulebookD100TestResult],
    "odds": [RulebookD100Odds],
    "opposed": [RulebookD100OpposedResult],
    "group": [RulebookD100GroupResult],
    "combat": [RulebookD100CombatEntry],
}
