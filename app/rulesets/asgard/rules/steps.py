"""The steps of an Asgard fight: every figure its rules put beside the common keys
(`app.kit.steps.Step`), so that mypy checks each key where a step is built."""

from __future__ import annotations

from typing import Any, TypedDict, Unpack

from app.kit.steps import Step, StepFigures

__all__ = ["AsgardFigures", "AsgardStep", "ShownTest", "step"]


class ShownTest(TypedDict):
    """A 3d6 test as a step shows it (AS-T1..T9): its spec, its dice and its result."""

    skill: str
    skill_value: int
    modifier: int
    dice: list[int]
    take_11: bool
    close_skill: bool
    score: int | None  # null: an automatic result (AS-T3)
    target: int | None  # the difficulty to reach (null: an opposed test)
    automatic: str | None  # "success" | "failure" (AS-T3), or null
    outcome: str


class AsgardFigures(StepFigures, total=False):
    """AS-C1..C6, AS-C11, AS-C13, AS-H1, AS-H2, AS-T6, AS-T9."""

    # AS-C13 the turn order: an open perception test, 1d6 roll-offs
    perception: int
    result: int | None
    override: bool  # the GM's result replaced the test
    d6: list[int]
    # a 3d6 test (attack, defense, a cooperating one: `ShownTest`)
    skill: str
    skill_value: int
    modifier: int
    dice: list[int]
    take_11: bool
    close_skill: bool
    score: int | None
    target: int | None
    automatic: str | None
    # the attack's own request (AS-H2: a heroism reroll resolves it again): the action's body as
    # JSON, whose fields are those of the request model, each of its own type
    request: dict[str, Any]
    # AS-C4 primes and penalties, prudence and danger
    primes: list[str]
    penalties: list[str]
    action_bonus: int
    halvings: int
    prudence_tests: int
    danger_tests: int
    prudence_left: int
    danger_left: int
    # AS-C11 a group of extras, AS-T6 cooperation
    members: list[str]  # combatants' ids
    bonus: int
    leader: str  # a combatant's id
    adjustments: list[int]
    # AS-C1 an unperceived attack, AS-T9 the opposition
    difficulty: int
    hit: bool
    attack: int | None  # the attack's score
    defense: int | None  # the defense's score
    winner: str  # "attacker" | "defender"
    decided_by: str | None  # "automatic" | "score" | "skill" | "defender"
    # AS-C2 the damage, AS-C3 protection, AS-C4 halvings
    weapon: str | None  # the weapon's name (null: the request's own expression)
    damage_dice: int
    read_dice: list[int]
    extra_dice: list[int]
    asset_dice: int
    heroism_die: int | None
    group_bonus: int
    constant: int
    damage: int
    protection: int
    taken: int
    # AS-C5 mal en point, its conditions counted each round
    resistance: ShownTest
    volonte: ShownTest
    dying: bool
    dies_in_rounds: int | None
    unconscious_rounds: int | None
    rounds_left: int
    round: int
    # AS-H2 a heroism reroll
    rerolls: str  # the action resolved again


class AsgardStep(Step, AsgardFigures, total=False):
    """One step of an Asgard action: the common keys and its figures."""


def step(rule: str, what: str, *, key: str, **figures: Unpack[AsgardFigures]) -> AsgardStep:
    """One step: its rule, its stable `key` (snake_case, one per kind of step: the words a client
    shows are looked up by it, never by `what`), its English `what`, then its figures."""
    return {"rule": rule, "key": key, "what": what, **figures}
