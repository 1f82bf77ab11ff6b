"""Tiny's rules, each with its id.

TINY-T1: a test rolls a d6 and adds `grit` and the modifier (the score); it succeeds when the
score reaches the target (default 4). A natural 6 is a critical success, a natural 1 a
critical failure, whatever the score.
TINY-C1: initiative is a d6 each (the GM's override replaces it), highest first; a tie keeps
the order the combatants were added in."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from app.rules.dice import DiceSource

STATS = ("grit",)
DEFAULT_TARGET = 4
OUTCOMES = ("critical_success", "success", "failure", "critical_failure")


@dataclass(frozen=True)
class TestResult:
    natural: int
    score: int
    target: int
    outcome: str


def outcome(natural: int, score: int, target: int) -> str:
    """TINY-T1: 6 and 1 are critical; otherwise the score against the target."""
    if natural == 6:
        return "critical_success"
    if natural == 1:
        return "critical_failure"
    return "success" if score >= target else "failure"


def roll_test(bonus: int, target: int | None, dice: DiceSource) -> TestResult:
    """TINY-T1: one d6 (purpose `test`) + bonus (grit + modifier) against the target."""
    goal = DEFAULT_TARGET if target is None else target
    natural = dice.roll(6, "test")
    return TestResult(natural, natural + bonus, goal, outcome(natural, natural + bonus, goal))


def odds(bonus: int, target: int | None) -> dict[str, Fraction]:
    """TINY-T1's exact odds over the six faces."""
    goal = DEFAULT_TARGET if target is None else target
    found = dict.fromkeys(OUTCOMES, Fraction(0))
    for natural in range(1, 7):
        found[outcome(natural, natural + bonus, goal)] += Fraction(1, 6)
    return found


def turn_order(rolls: list[int]) -> list[int]:
    """TINY-C1: the indexes of the combatants, highest initiative first (ties: as added)."""
    return sorted(range(len(rolls)), key=lambda i: -rolls[i])
