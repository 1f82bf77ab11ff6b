"""The steps of a Great Cosmos fight: every figure its rules put beside the common keys
(`app.kit.steps.Step`), so that mypy checks each key where a step is built."""

from __future__ import annotations

from typing import TypedDict, Unpack

from app.kit.steps import Step, StepFigures

__all__ = ["Cell", "GreatCosmosFigures", "GreatCosmosStep", "KarmaFigures", "step"]


class Cell(TypedDict):
    """A cell of the grid (GC-D1)."""

    x: int
    y: int


class KarmaFigures(TypedDict):
    """The stored karma around a d100 test (GC-K1..K5)."""

    before: int
    after: int


# GC-D1 a move's starting cell: `from`, a Python keyword, so declared in the functional form
_From = TypedDict("_From", {"from": Cell}, total=False)


class GreatCosmosFigures(_From, StepFigures, total=False):
    """GC-O1..O3, GC-P1..P7, GC-D1..D4, GC-S9."""

    # GC-O1..O3 the turn order
    agilite: int  # effective agilite
    override: bool  # the GM's initiative replaced it
    d6: int  # GC-O3 the extra actions' die
    position: int  # the agilite value a slot sits at
    slot: int
    d20: int | None  # GC-O2 a tie's die (null: a parallel slot with no roll)
    parallel: bool
    # a d100 test (GC-T1..T2, GC-K1..K5): attack, defence, dash, final skill
    target: int  # the score to reach (not a combatant: `target_id` names one)
    natural: int
    karma_die: int | None
    score: int
    karma_used: int
    karma: KarmaFigures
    locked: bool  # the karma locked by a special posture
    kind: str  # the attack's: "melee" | "ranged" | …
    stat: str
    modifier: int
    posture_modifier: int
    holds: bool  # a defence (or GC-P5's automatic one) holds
    riposte_available: bool
    attack_score: int
    counted_as: str  # GC-S9 the outcome a Final Skill's test counts as
    # GC-P1..P7 the postures
    posture: str
    # the damage step's is the attacker's backlash posture (str, null: none); leaving a special
    # posture says whether a backlash follows (bool): one key, two rules' meanings
    backlash: bool | str | None
    damage_multiplier: int | float | None  # GC-P1 x2, GC-P6 x3, GC-P7 x0.5 (null: none)
    may_defend: bool
    cost: dict[str, int]  # {"light" | "dark": points}
    karma_locked: int
    advantage_die: int | None
    advantage: str | None
    actions: int
    turns_held: int
    backlash_turns: int
    cannot_act: bool
    acts_last: bool
    disadvantage_die: int | None
    disadvantage: str | None
    turns_left: int | None
    # reactions: GC-O2, GC-P1, GC-P5..P7 a standing one refused, GC-P5 the automatic defence
    standing_reaction: str | None
    reaction: str
    d10: int
    # GC-P2 a riposte, GC-P6 a counter-attack or a provocation
    against: str  # the combatant struck back at
    provoked_by: str | None  # the provoker (null: none known)
    # GC-P4 the damage
    expression: str
    source: str  # where the expression comes from (a weapon, a skill, the request)
    raw: int
    multiplier: int | float
    total: int
    # GC-D1..D4 moves and dashes
    to: Cell
    distance: int
    max_move: int
    moved: int
    base_move: int
    # GC-S9 the Final Skill
    name: str
    punchline: str
    target_id: str | None


class GreatCosmosStep(Step, GreatCosmosFigures, total=False):
    """One step of a Great Cosmos action: the common keys and its figures."""


def step(rule: str, what: str, *, key: str, **figures: Unpack[GreatCosmosFigures]) -> GreatCosmosStep:
    """One step: its rule, its stable `key` (snake_case, one per kind of step: the words a client
    shows are looked up by it, never by `what`), its English `what`, then its figures."""
    return {"rule": rule, "key": key, "what": what, **figures}
