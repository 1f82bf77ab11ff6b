"""Worlds Awakening (d20): tests, critical ranges, pending modifiers, complex
actions (challenges) and the combat rules (worlds-awakening.md, WA-…). Pure: stdlib only.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from itertools import groupby
from typing import Any, Literal, TypeVar

from app.rules.dice import DiceSource, parse
from app.rules.errors import RuleError

K = TypeVar("K", bound=str)  # a sheet's characteristic (a Literal of names)
V = TypeVar("V", bound=int)  # its pending ±2

Stat = Literal["FOR", "DEX", "CON", "INT", "SAG", "CHA"]
STATS: tuple[Stat, ...] = ("FOR", "DEX", "CON", "INT", "SAG", "CHA")
# WA-T2: name -> (lowest, highest or None for "and more"), default threshold
DIFFICULTIES: dict[str, tuple[int, int | None]] = {
    "tres_facile": (1, 4),
    "facile": (5, 9),
    "moderee": (10, 14),
    "difficile": (15, 19),
    "tres_difficile": (20, None),
}
DEFAULT_THRESHOLDS: dict[str, int] = {
    "tres_facile": 2,
    "facile": 7,
    "moderee": 12,
    "difficile": 17,
    "tres_difficile": 20,
}
OUTCOMES = ("critical_success", "success", "failure", "critical_failure")
MAX_LEVEL = 8
MAX_ROLLOFF_ROUNDS = 200


def threshold(difficulty: str | None, target: int | None) -> int:
    """WA-T2: the threshold from a difficulty name, a threshold, or both (inside the band).

    Name only → the band's middle rounded down (2, 7, 12, 17, 20) (**Decision**).
    """
    if difficulty is None:
        if target is None:
            raise RuleError("give a `difficulty` or a `target` threshold", field="difficulty")
        return target
    if difficulty not in DIFFICULTIES:
        raise RuleError(
            f"unknown difficulty {difficulty!r}; known: {', '.join(DIFFICULTIES)}",
            field="difficulty",
            code="unknown_name",
        )
    if target is None:
        return DEFAULT_THRESHOLDS[difficulty]
    low, high = DIFFICULTIES[difficulty]
    if target < low or (high is not None and target > high):
        band = f"{low}..{high}" if high is not None else f"{low} or more"
        raise RuleError(f"threshold {target} is outside the {difficulty} band ({band})", field="target")
    return target


def crit_failure_max(cha: int) -> int:
    """WA-T4: highest natural that is a critical failure (3 if CHA ≤ −4, 2 if −3/−2, else 1)."""
    if cha <= -4:
        return 3
    if cha <= -2:
        return 2
    return 1


def crit_success_min(cha: int) -> int:
    """WA-T4: lowest natural that is a critical success (17 if CHA ≥ 6, 18 if 4/5, 19 if 2/3, else 20)."""
    if cha >= 6:
        return 17
    if cha >= 4:
        return 18
    if cha >= 2:
        return 19
    return 20


@dataclass(frozen=True)
class TestSpec:
    """A Worlds Awakening test: d20 + characteristic + modifiers vs a threshold (WA-T1)."""

    stat_value: int
    threshold: int
    cha: int = 0
    modifier: int = 0
    pending: int = 0  # WA-T5 pending ±2 consumed by this test


@dataclass(frozen=True)
class TestResult:
    natural: int
    total: int
    threshold: int
    outcome: str

    @property
    def success(self) -> bool:
        return self.outcome in ("success", "critical_success")


def resolve(spec: TestSpec, natural: int) -> TestResult:
    """WA-T1, WA-T3, WA-T4: total ≥ threshold succeeds; criticals (CHA-widened) override the total."""
    if not 1 <= natural <= 20:
        raise RuleError(f"a d20 shows 1..20, not {natural}", field="dice")
    total = natural + spec.stat_value + spec.modifier + spec.pending
    if natural >= crit_success_min(spec.cha):
        outcome = "critical_success"
    elif natural <= crit_failure_max(spec.cha):
        outcome = "critical_failure"
    else:
        outcome = "success" if total >= spec.threshold else "failure"
    return TestResult(natural, total, spec.threshold, outcome)


def roll_test(spec: TestSpec, source: DiceSource, purpose: str = "test") -> TestResult:
    """WA-T1: roll the d20 and resolve it."""
    return resolve(spec, source.roll(20, purpose))


def odds(spec: TestSpec) -> tuple[dict[str, Fraction], dict[int, Fraction]]:
    """WA-T1, WA-T3, WA-T4: exact odds of every outcome and of every total, over the 20 faces.

    Counted per range, not per face: naturals ≥ `crit_success_min` are critical
    successes, naturals ≤ `crit_failure_max` critical failures (the two ranges never
    meet: 3 < 17), and the faces between succeed from natural ≥ threshold − bonus.
    Each face gives its own total (natural + bonus), so every total has odds 1/20.
    """
    bonus = spec.stat_value + spec.modifier + spec.pending
    crit_success, crit_failure = crit_success_min(spec.cha), crit_failure_max(spec.cha)
    plain = crit_success - crit_failure - 1  # faces crit_failure+1 .. crit_success-1
    success = max(0, crit_success - max(spec.threshold - bonus, crit_failure + 1))
    counts = {
        "critical_success": 21 - crit_success,
        "success": success,
        "failure": plain - success,
        "critical_failure": crit_failure,
    }
    one_face = Fraction(1, 20)
    return ({o: Fraction(n, 20) for o, n in counts.items()}, {natural + bonus: one_face for natural in range(1, 21)})


# --- WA-T6 complex actions ------------------------------------------------------


@dataclass(frozen=True)
class Challenge:
    """WA-T6: a complex action tracked over several turns."""

    name: str
    successes_needed: int
    failures_allowed: int | None = None
    successes: int = 0
    failures: int = 0
    turns: int = 0
    status: str = "in_progress"  # "in_progress" | "succeeded" | "failed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "successes_needed": self.successes_needed,
            "failures_allowed": self.failures_allowed,
            "successes": self.successes,
            "failures": self.failures,
            "turns": self.turns,
            "status": self.status,
        }


def new_challenge(name: str, successes_needed: int, failures_allowed: int | None = None) -> Challenge:
    """WA-T6: a fresh challenge (at least one success needed, failures allowed ≥ 0)."""
    if successes_needed < 1:
        raise RuleError("a challenge needs at least one success", field="successes_needed")
    if failures_allowed is not None and failures_allowed < 0:
        raise RuleError("failures_allowed cannot be negative", field="failures_allowed")
    return Challenge(name, successes_needed, failures_allowed)


def advance(challenge: Challenge, success: bool) -> Challenge:
    """WA-T6: one test adds a success or a failure and a turn; done at the successes
    needed, failed once failures exceed those allowed."""
    if challenge.status != "in_progress":
        raise RuleError(f"challenge {challenge.name!r} is already {challenge.status}", field="for_challenge")
    successes = challenge.successes + (1 if success else 0)
    failures = challenge.failures + (0 if success else 1)
    status = "in_progress"
    if successes >= challenge.successes_needed:
        status = "succeeded"
    elif challenge.failures_allowed is not None and failures > challenge.failures_allowed:
        status = "failed"
    return replace(challenge, successes=successes, failures=failures, turns=challenge.turns + 1, status=status)


def use_pending(pending: MutableMapping[K, V], stat: K) -> int:
    """WA-T5: a pending ±2 on a characteristic is used up by the next test of it, whatever the
    test (a character's test, an attack in a fight): taken out of the sheet's `pending` map and
    returned (0 when there was none)."""
    return pending.pop(stat, 0)


# --- combat (WA-S3, WA-C1..C5) -----------------------------------------------------


def physical_defense(con: int, level: int) -> int:
    """WA-S3: physical defense = 10 + CON + level."""
    return 10 + con + level


def magical_defense(sag: int, level: int) -> int:
    """WA-S3: magical defense = 10 + SAG + level."""
    return 10 + sag + level


def initiative(dex: int) -> int:
    """WA-S3, WA-C4: initiative = 10 + DEX."""
    return 10 + dex


@dataclass(frozen=True)
class Attack:
    natural: int
    total: int
    defense: int
    hit: bool
    critical: str | None  # "success" | "failure" | None
    bonus_damage: bool
    damage: int
    damage_rolls: tuple[int, ...] = ()


def attack(
    stat_value: int, level: int, cha: int, damage: str, defense: int, source: DiceSource, modifier: int = 0
) -> Attack:
    """WA-C1..C3: d20 + characteristic + level vs defense; a critical success with total ≥
    defense rolls the damage dice twice (modifiers once); a critical below the defense
    still hits for normal damage; a critical failure always misses."""
    expr = parse(damage)
    natural = source.roll(20, "attack")
    total = natural + stat_value + level + modifier
    critical = (
        "success" if natural >= crit_success_min(cha) else "failure" if natural <= crit_failure_max(cha) else None
    )
    hit = critical == "success" or (critical is None and total >= defense)
    bonus = critical == "success" and total >= defense
    if not hit:
        return Attack(natural, total, defense, False, critical, False, 0)
    mark = source.mark()
    dmg = sum(t.roll(source, "damage") for t in expr.terms)
    if bonus:
        dmg += sum(t.roll(source, "bonus damage") for t in expr.terms)
    dmg += expr.constant
    rolls = tuple(r.value for r in source.since(mark))
    return Attack(natural, total, defense, True, critical, bonus, max(0, dmg), rolls)


@dataclass(frozen=True)
class InitiativeEntry:
    index: int
    initiative: int
    rolloffs: tuple[int, ...] = ()


def turn_order(dex_values: Sequence[int], source: DiceSource) -> list[InitiativeEntry]:
    """WA-C4: initiative 10 + DEX, highest first; ties broken by d20 roll-offs, highest first."""
    inits = [initiative(d) for d in dex_values]
    rolloffs: dict[int, list[int]] = {i: [] for i in range(len(inits))}
    order = sorted(range(len(inits)), key=lambda i: (-inits[i], i))
    out: list[int] = []
    for group in _groups(order, lambda i: inits[i]):
        out.extend(_rolloff(group, source, rolloffs) if len(group) > 1 else group)
    return [InitiativeEntry(i, inits[i], tuple(rolloffs[i])) for i in out]


def _groups(order: list[int], key: Callable[[int], object]) -> list[list[int]]:
    """Runs of consecutive entries of `order` with equal keys."""
    return [list(run) for _, run in groupby(order, key)]


def _rolloff(group: list[int], source: DiceSource, rolloffs: dict[int, list[int]], depth: int = 0) -> list[int]:
    """WA-C4 (**Decision**): tied participants roll a d20 each, highest first; repeat while equal."""
    if depth >= MAX_ROLLOFF_ROUNDS:  # pragma: no cover - astronomically unlikely with real dice
        raise RuleError("the tie could not be broken", field="dice")
    for i in group:
        rolloffs[i].append(source.roll(20, "initiative roll-off"))
    out: list[int] = []
    for sub in _groups(sorted(group, key=lambda i: (-rolloffs[i][-1], i)), lambda i: rolloffs[i][-1]):
        out.extend(_rolloff(sub, source, rolloffs, depth + 1) if len(sub) > 1 else sub)
    return out


def apply_damage(hp: int, damage: int) -> tuple[int, bool]:
    """WA-C5: damage taking HP to 0 or below leaves the character at 0 HP and `down`."""
    left = hp - max(0, damage)
    return (left, False) if left > 0 else (0, True)
