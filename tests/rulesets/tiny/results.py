"""Tiny's results: its test, its odds and its encounter entries."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from app.models.results.combat import CombatFields, CombatStep, rule_ids
from app.models.results.common import Dice, Head, OddsFields, Result, Tail, TestFields

RULESET = "tiny"
Ruleset = Literal["tiny"]


class TinyTestEffects(Result):
    """A Tiny test changes no sheet: always empty."""


class TinyTestFields(TestFields):
    ruleset: Ruleset
    effects: TinyTestEffects
    stat: Literal["grit"]
    modifier: int


class TinyTestResult(Tail, Dice, TinyTestFields, Head):
    """TINY-T1: natural = the d6, score = d6 + grit + modifier, target = the score to reach."""


class TinyOdds(OddsFields):
    ruleset: Ruleset


class TinyCombatStep(CombatStep):
    rule: str = Field(pattern=rule_ids("TINY"), examples=["TINY-C1", "turn"])


class TinyCombatEntry(CombatFields):
    """A Tiny encounter action (no combat action of its own: the GM's heal, damage, condition)."""

    ruleset: Ruleset
    type: Literal["start", "next_turn", "revert", "heal", "damage", "condition"]
    steps: list[TinyCombatStep]


RESULTS: dict[str, list[type[BaseModel]]] = {"test": [TinyTestResult], "odds": [TinyOdds], "combat": [TinyCombatEntry]}
