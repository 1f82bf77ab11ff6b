"""The steps of a Worlds Awakening fight: every figure its rules put beside the common keys
(`app.kit.steps.Step`), so that mypy checks each key where a step is built."""

from __future__ import annotations

from app.kit.steps import Step, StepFigures

__all__ = ["WorldsAwakeningFigures", "WorldsAwakeningStep"]


class WorldsAwakeningFigures(StepFigures, total=False):
    """WA-C1..C5, WA-T5."""

    # WA-C4 the turn order
    initiative: int  # 10 + DEX (or the GM's)
    override: bool  # the GM's initiative replaced the rule's
    d20: list[int]  # a tie's roll-offs, in order
    # WA-C1 the attack test
    kind: str  # "physical" | "magical"
    stat: str  # the characteristic tested
    stat_value: int
    level: int
    modifier: int
    natural: int  # the d20
    total: int
    defense: int
    defense_of: str  # whose defense (a combatant's id)
    critical: str | None  # "success" | "failure" | None
    hit: bool
    # WA-C2, WA-C3 the critical ranges (WA-T4: widened by CHA)
    range: int  # the highest natural of a critical failure, the lowest of a critical success
    bonus_damage: bool
    # WA-C1, WA-C2 the damage, WA-C5 the hp
    weapon: str | None  # the weapon's name (null: the request's own expression)
    expression: str  # the damage dice
    dice: list[int]
    doubled_dice: bool
    damage: int
    # WA-T5 a pending modifier used up
    value: int


class WorldsAwakeningStep(Step, WorldsAwakeningFigures, total=False):
    """One step of a Worlds Awakening action: the common keys and its figures."""
