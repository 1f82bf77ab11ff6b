"""Worlds Awakening results: tests (pending ±2, challenges), odds, GM actions."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from app.models.results.combat import CombatFields, CombatStep, rule_ids
from app.models.results.common import Dice, Head, OddsFields, OddsValue, Result, Tail, TestFields
from app.models.results.luck import SuccessOdds

RULESET = "worlds-awakening"
Ruleset = Literal["worlds-awakening"]
Stat = Literal["FOR", "DEX", "CON", "INT", "SAG", "CHA"]


class WorldsAwakeningChallenge(Result):
    """WA-T6: a complex action."""

    name: str
    successes_needed: int
    failures_allowed: int | None
    successes: int
    failures: int
    turns: int
    status: Literal["in_progress", "succeeded", "failed"]


class WorldsAwakeningPendingEffect(Result):
    stat: Stat
    value: int
    consumed: bool


class WorldsAwakeningChallengeEffect(Result):
    before: WorldsAwakeningChallenge
    after: WorldsAwakeningChallenge


class WorldsAwakeningTestEffects(Result):
    pending_modifier: WorldsAwakeningPendingEffect | None = Field(None, description="WA-T5: the ±2 consumed.")
    challenge: WorldsAwakeningChallengeEffect | None = Field(None, description="WA-T6: the challenge advanced.")


class WorldsAwakeningCriticalRange(Result):
    success_min: int
    failure_max: int


class WorldsAwakeningTestFields(TestFields):
    ruleset: Ruleset
    effects: WorldsAwakeningTestEffects
    stat: Stat
    difficulty: str | None
    modifier: int
    pending_modifier: int
    challenge: WorldsAwakeningChallenge | None
    critical_range: WorldsAwakeningCriticalRange


class WorldsAwakeningTestResult(Tail, Dice, SuccessOdds, WorldsAwakeningTestFields, Head):
    """WA-T1..T6: d20 + characteristic (score) against a threshold (target)."""


class WorldsAwakeningOdds(OddsFields):
    ruleset: Ruleset
    score: dict[str, OddsValue] = Field(description="The distribution of the score, by value.")


class WorldsAwakeningAction(Head):
    kind: Literal["action"]
    type: str
    ruleset: Ruleset
    character_id: str


class WorldsAwakeningPendingModifier(WorldsAwakeningAction):
    type: Literal["pending_modifier"]
    stat: Stat
    before: int
    after: int


class WorldsAwakeningPendingModifierResult(Tail, Dice, WorldsAwakeningPendingModifier):
    """WA-T5: the GM records (or clears, 0) a ±2 for the next test of a characteristic."""


class WorldsAwakeningNewChallenge(WorldsAwakeningAction):
    type: Literal["challenge"]
    challenge: WorldsAwakeningChallenge


class WorldsAwakeningChallengeResult(Tail, Dice, WorldsAwakeningNewChallenge):
    """WA-T6: a new challenge."""


class WorldsAwakeningChallengeRemove(WorldsAwakeningAction):
    type: Literal["challenge_remove"]
    challenge: WorldsAwakeningChallenge
    removed: Literal[True]


class WorldsAwakeningChallengeRemoveResult(Tail, Dice, WorldsAwakeningChallengeRemove):
    pass


# --- combat (encounter actions, roll-log entries of kind `combat`) --------------------------


class WorldsAwakeningCombatStep(CombatStep):
    rule: str = Field(pattern=rule_ids("WA"), examples=["WA-C1", "turn"])


class WorldsAwakeningCombatEntry(CombatFields):
    """A Worlds Awakening encounter action, also its roll-log entry (`kind: "combat"`)."""

    ruleset: Ruleset
    type: Literal["attack", "start", "next_turn", "revert", "heal", "damage", "condition", "join"]
    steps: list[WorldsAwakeningCombatStep]


RESULTS: dict[str, list[type[BaseModel]]] = {
    "test": [WorldsAwakeningTestResult],
    "odds": [WorldsAwakeningOdds],
    "action": [
        WorldsAwakeningPendingModifierResult,
        WorldsAwakeningChallengeResult,
        WorldsAwakeningChallengeRemoveResult,
    ],
    "combat": [WorldsAwakeningCombatEntry],
}
