"""Asgard character actions outside encounters: mal en point (AS-C5), first aid (AS-C6),
natural healing (AS-C7), falls (AS-C8), fire (AS-C9), asphyxia (AS-C10), chases (AS-C12)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.rules.dice import DiceSource
from app.rules.errors import RuleError
from app.rulesets.asgard.rules.core import TestResult, TestSpec, roll_test

MAL_EN_POINT_BASE = 5  # AS-C5: difficulty 5 + the damage of the blow (or round) that brought vitality to 0
FALL_METRES_PER_DIE = 3  # AS-C8
FALL_DIFFICULTY = 15
JUMP_DIFFICULTY = 10
FIRE_DICE = {"torch": 1, "campfire": 2, "blaze": 3}  # AS-C9
BREATH_ROUNDS = 10  # AS-C10
ASPHYXIA_DIFFICULTY = 15
ASPHYXIA_STEP = 5
CHASE_STEPS = {"none": 0, "facile": 1, "moyen": 2, "difficile": 3, "heroique": 4}  # AS-C12 Decision
CHASE_SKILLS = {"foot": "athletisme", "vehicle": "pilotage", "mount": "equitation"}


def take_damage(vitality: int, damage: int) -> int:
    """AS-C3/C5: damage (never negative) comes off vitality, which stops at 0 (Decision:
    below 0 nothing more happens: the character is mal en point)."""
    return max(0, vitality - max(0, damage))


def decisive_damage(vitality: int, blows: Sequence[int]) -> int | None:
    """AS-C5: the damage of the blow, or of the round for fire (AS-C9) and asphyxia
    (AS-C10), that brought vitality from above 0 to 0 or below — not a sum over several
    rounds; None when vitality does not reach 0 (or was already there)."""
    for damage in blows:
        after = take_damage(vitality, damage)
        if vitality > 0 and after == 0:
            return max(0, damage)
        vitality = after
    return None


def given_back(damage: int, vitality_now: int, vitality_max: int, *, lost: int, before_blow: int) -> int:
    """AS-H4: cancelling damage already taken gives back exactly what that damage took — the
    vitality lost to the blow (`lost`, its before − after: a 7-damage blow on 5 vitality took 5),
    never more than the damage named, never above the vitality before the blow (`before_blow`) nor
    the maximum, never less than now. Returns the new vitality."""
    back = min(max(0, damage), max(0, lost))
    return max(vitality_now, min(vitality_max, before_blow, vitality_now + back))


def roll_dice(count: int, source: DiceSource, purpose: str) -> tuple[int, ...]:
    return tuple(source.roll(6, purpose) for _ in range(count))


@dataclass(frozen=True)
class MalEnPoint:
    resistance: TestResult
    dying: bool
    dies_in_rounds: int | None
    volonte: TestResult
    unconscious_rounds: int | None


def mal_en_point(resistance: int, volonte: int, damage: int, source: DiceSource) -> MalEnPoint:
    """AS-C5: `damage` is that of the blow or round that brought vitality to 0
    (`decisive_damage`); resistance/(5+damage) failed → dying, dies at the end of the 1d6-th next round;
    volonte/(5+damage) failed → unconscious for 2d6 rounds. Dice: resistance 3d6, [1d6],
    volonte 3d6, [2d6]."""
    target = MAL_EN_POINT_BASE + max(0, damage)
    res = roll_test(TestSpec("resistance", resistance, target=target), source, "resistance")
    dies_in = None if res.success else source.roll(6, "dying_rounds")
    vol = roll_test(TestSpec("volonte", volonte, target=target), source, "volonte")
    unconscious = None if vol.success else sum(roll_dice(2, source, "unconscious_rounds"))
    return MalEnPoint(res, not res.success, dies_in, vol, unconscious)


def first_aid(soins: int, target: int, source: DiceSource, *, modifier: int = 0) -> TestResult:
    """AS-C6: a soins test (GM difficulty); success → +1 vitality and no longer dying."""
    return roll_test(TestSpec("soins", soins, modifier=modifier, target=target), source, "soins")


@dataclass(frozen=True)
class Healing:
    test: TestResult | None
    gain: int


def natural_healing(
    resistance: int, source: DiceSource, *, healer_soins: int | None = None, target: int = 10
) -> Healing:
    """AS-C7: a day or night of rest → + resistance; with a healer's successful soins test,
    + the healer's soins value too (never a negative gain)."""
    gain = max(0, resistance)
    test = None
    if healer_soins is not None:
        test = roll_test(TestSpec("soins", healer_soins, target=target), source, "soins")
        if test.success:
            gain += max(0, healer_soins)
    return Healing(test, gain)


@dataclass(frozen=True)
class Fall:
    dice: tuple[int, ...]
    tests: tuple[TestResult, ...]
    cancelled: tuple[int, ...]
    damage: int


def fall_dice(metres: float) -> int:
    """AS-C8: 1d6 per full 3 metres."""
    if metres < 0:
        raise RuleError("a fall has a non-negative height", field="metres")
    return int((metres + 1e-9) // FALL_METRES_PER_DIE)


def fall(metres: float, acrobatie: int, source: DiceSource, *, voluntary: bool = False) -> Fall:
    """AS-C8: roll the fall's d6, then acrobatie/15 cancels one (the highest) and, for a
    deliberate jump, acrobatie/10 one more. A test with nothing left to cancel is not rolled."""
    dice = roll_dice(fall_dice(metres), source, "fall")
    remaining = sorted(dice, reverse=True)
    tests, cancelled = [], []
    for difficulty in (FALL_DIFFICULTY, JUMP_DIFFICULTY) if voluntary else (FALL_DIFFICULTY,):
        if not remaining:
            break
        test = roll_test(TestSpec("acrobatie", acrobatie, target=difficulty), source, "acrobatie")
        tests.append(test)
        if test.success:
            cancelled.append(remaining.pop(0))
    return Fall(dice, tuple(tests), tuple(cancelled), sum(remaining))


def fire(size: str, rounds: int, source: DiceSource) -> tuple[tuple[int, ...], ...]:
    """AS-C9: per round in the fire, torch 1d6, campfire 2d6, blaze 3d6."""
    if size not in FIRE_DICE:
        raise RuleError(f"unknown fire size {size!r}; known: {', '.join(FIRE_DICE)}", field="size", code="unknown_name")
    return tuple(roll_dice(FIRE_DICE[size], source, "fire") for _ in range(rounds))


@dataclass(frozen=True)
class AsphyxiaRound:
    round: int
    test: TestResult | None
    damage: int | None


@dataclass(frozen=True)
class Asphyxia:
    rounds: tuple[AsphyxiaRound, ...]
    out_of_breath: bool
    damage: int

    @property
    def damage_per_round(self) -> tuple[int, ...]:
        """Each round's damage (0 while the breath holds), for AS-C5's `decisive_damage`."""
        return tuple(r.damage or 0 for r in self.rounds)


def asphyxia_difficulty(round_number: int) -> int:
    """AS-C10: resistance/15 from round 11, +5 every 10 rounds (21st: 20, 31st: 25…)."""
    return ASPHYXIA_DIFFICULTY + ASPHYXIA_STEP * ((round_number - BREATH_ROUNDS - 1) // BREATH_ROUNDS)


def asphyxia(
    resistance: int, rounds: int, source: DiceSource, *, from_round: int = 1, out_of_breath: bool = False
) -> Asphyxia:
    """AS-C10: breath held 10 rounds; then a resistance test each round until one fails;
    from the round after the failure (Decision), 1d6 damage per round without air."""
    out, total = [], 0
    for r in range(from_round, from_round + rounds):
        if out_of_breath:
            damage = source.roll(6, "asphyxia")
            total += damage
            out.append(AsphyxiaRound(r, None, damage))
        elif r <= BREATH_ROUNDS:
            out.append(AsphyxiaRound(r, None, None))
        else:
            test = roll_test(TestSpec("resistance", resistance, target=asphyxia_difficulty(r)), source, "resistance")
            out_of_breath = not test.success
            out.append(AsphyxiaRound(r, test, None))
    return Asphyxia(tuple(out), out_of_breath, total)


@dataclass(frozen=True)
class ChaseTurn:
    test: TestResult
    step: int
    before: int
    after: int


def chase_turn(spec: TestSpec, progression: int, source: DiceSource) -> ChaseTurn:
    """AS-C12: an open test moves the progression by the degree reached
    (Decision: +0 below 10, +1 facile, +2 moyen, +3 difficile, +4 heroique)."""
    if spec.target is not None:
        raise RuleError("a chase test is an open test: no difficulty", field="target")
    test = roll_test(spec, source, "chase")
    assert test.degree is not None  # an open test reaches a degree (AS-T5)
    step = CHASE_STEPS[test.degree]
    return ChaseTurn(test, step, progression, progression + step)
