"""The steps of a Rulebook d100 fight: every figure its rules put beside the common keys
(`app.kit.steps.Step`), so that mypy checks each key where a step is built."""

from __future__ import annotations

from typing import TypedDict, Unpack

from app.kit.steps import Step, StepFigures

__all__ = ["RulebookD100Figures", "RulebookD100Step", "ShownTest", "step"]


class ShownTest(TypedDict):
    """A d100 test as a step shows it (RB-T1..T5): the die, the chance, the success level."""

    roll: int | None  # null: the GM's initiative, no die (RB-F4)
    percentage: int
    level: int
    outcome: str  # "critical_success" | "success" | "failure" | "critical_failure"


class RulebookD100Figures(StepFigures, total=False):
    """RB-F1..F4, RB-C2, RB-C4."""

    # RB-F4 the HAB test of the turn order, RB-F2 the attack test, RB-F3 the dodge test
    roll: int | None
    percentage: int
    level: int
    override: bool  # the GM's initiative replaced the test
    d100: list[int]  # RB-C2 a tie's rerolls, in order
    kind: str  # the attack's: "melee" | "ranged" | "morale"
    stat: str
    skill: str | None
    previous_dodges: int
    penalty: int
    # RB-C4 the dodge's confrontation
    attack_level: int
    dodge_level: int
    winner: str  # "attacker" | "defender"
    tiebreak: str | None  # how the confrontation was settled ("level" | "units" | "reroll")
    # RB-F3 a free attack, taken
    dodged: str  # the combatant whose critical dodge earned it
    # RB-F2 the damage, RB-F3 the armour, RB-F1 the pool
    weapon: str | None  # the weapon's name (null: the request's own expression)
    expression: str
    weapon_roll: int
    damage: int
    armor: int
    taken: int


class RulebookD100Step(Step, RulebookD100Figures, total=False):
    """One step of a Rulebook d100 action: the common keys and its figures."""


def step(rule: str, what: str, *, key: str, **figures: Unpack[RulebookD100Figures]) -> RulebookD100Step:
    """One step: its rule, its stable `key` (snake_case, one per kind of step: the words a client
    shows are looked up by it, never by `what`), its English `what`, then its figures."""
    return {"rule": rule, "key": key, "what": what, **figures}
