"""Great Cosmos: exact odds of a d100 test (GC-T1..T3, GC-K1..K5).

Direct enumeration of the 100 naturals (x 10 karma d10 faces when GC-K2 rolls
one): integer counts over 1000, cached per (target, karma, extreme_scores).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from math import floor
from typing import Any

from app.rules.dice import parse
from app.rules.distribution import of_expression
from app.rulesets.great_cosmos.rules.core import (
    OUTCOMES,
    SUCCESSES,
    TestResult,
    classify,
    karma_after,
    karma_die_sign,
    locked_karma,
    needs_karma_die,
    result_from_dice,
    score_of,
)
from app.rulesets.great_cosmos.rules.postures import (
    AUTO_DEFENSE_THRESHOLD,
    DEFENSE_STATS,
    Fighter,
    auto_defense_applies,
    damage_multiplier,
    defense_holds,
    posture_modifier,
    take_damage,
)

DENOMINATOR = 1000  # 100 naturals x 10 karma-die faces (weight 10 when no d10 is rolled)
# Below -10 every score <= target holds, above 111 too: the classification no longer changes.
_TARGET_LOW, _TARGET_HIGH = -11, 111


@dataclass(frozen=True)
class TestOdds:
    """Exact probabilities of the six outcomes and of the stored karma afterwards."""

    outcomes: dict[str, Fraction]
    karma_after: dict[int, Fraction]

    @property
    def success(self) -> Fraction:
        return sum((p for o, p in self.outcomes.items() if o in SUCCESSES), Fraction(0))


@lru_cache(maxsize=4096)
def outcome_counts(target: int, karma: int, extreme_scores: bool = False) -> tuple[int, ...]:
    """GC-T1/GC-T2/GC-K2: how many of the 1000 equally likely (d100, d10) pairs give
    each outcome (in `OUTCOMES` order), for the karma the test runs with."""
    target = max(_TARGET_LOW, min(_TARGET_HIGH, target))
    index = {o: i for i, o in enumerate(OUTCOMES)}
    counts = [0] * len(OUTCOMES)
    sign = karma_die_sign(karma)
    for natural in range(1, 101):
        if sign == 0 or natural in (42, 66):
            counts[index[classify(natural, target, karma, extreme_scores)]] += 10
            continue
        for die in range(1, 11):
            counts[index[classify(natural + sign * die, target, karma, extreme_scores)]] += 1
    return tuple(counts)


def odds_of_test(target: int, karma: int, *, posture: str | None = None, extreme_scores: bool = False) -> TestOdds:
    """GC-T1..T2, GC-K1..K5: the exact distribution of a d100 test's outcome given the
    stored karma (or the karma a special posture locks) and of the stored karma after."""
    lock = locked_karma(posture)
    used = karma if lock is None else lock
    counts = outcome_counts(target, used, extreme_scores)
    outcomes = {o: Fraction(c, DENOMINATOR) for o, c in zip(OUTCOMES, counts)}
    after: dict[int, Fraction] = {}
    for outcome, p in outcomes.items():
        if p:
            k = karma if lock is not None else karma_after(karma, outcome)
            after[k] = after.get(k, Fraction(0)) + p
    return TestOdds(outcomes=outcomes, karma_after=dict(sorted(after.items())))


def intuition_odds(target: int) -> TestOdds:
    """GC-T3: a d6 <= intuition (+ modifier): success or failure, karma unchanged."""
    good = Fraction(max(0, min(6, target)), 6)
    outcomes = {o: Fraction(0) for o in OUTCOMES}
    outcomes["success"] = good
    outcomes["failure"] = 1 - good
    return TestOdds(outcomes=outcomes, karma_after={})


# --- the exact odds of an attack: the same pure rules as `resolve_attack` -------------

MISSED, AUTO_DEFENDED, DEFENDED, DAMAGE = "missed", "auto_defended", "defended", "damage"


@lru_cache(maxsize=1024)
def test_classes(
    target: int, karma: int, posture: str | None, extreme_scores: bool
) -> tuple[tuple[TestResult, int], ...]:
    """GC-T1..T2, GC-K1..K5: the distinct results of a d100 test (each natural, and each karma d10
    face when GC-K2 rolls one, through `result_from_dice`, the test's own rule), one per
    (outcome, score), with how many of the 1000 equally likely (d100, d10) pairs give it: what an
    exchange reads of a test."""
    target = max(_TARGET_LOW, min(_TARGET_HIGH, target))
    lock = locked_karma(posture)
    used = karma if lock is None else lock
    scores: dict[int, list[Any]] = {}  # score -> [a natural, its karma die, pairs]: GC-T2 reads the score
    for natural in range(1, 101):
        faces: tuple[int | None, ...] = tuple(range(1, 11)) if needs_karma_die(natural, used) else (None,)
        weight = 10 // len(faces)
        for die in faces:
            slot = scores.setdefault(score_of(natural, die, used), [natural, die, 0])
            slot[2] += weight
    counts: dict[tuple[str, int], list[Any]] = {}
    for natural, die, n in scores.values():
        r = result_from_dice(natural, die, target, karma, posture=posture, extreme_scores=extreme_scores)
        counts.setdefault((r.outcome, r.score), [r, 0])[1] += n
    return tuple((r, n) for r, n in counts.values())


TestKey = tuple[int, int, "str | None", bool]  # test_classes' arguments


@lru_cache(maxsize=1024)
def held_counts(attack: TestKey, defense: TestKey) -> tuple[int, ...]:
    """GC-P2: for each of the attack test's distinct results (`test_classes(*attack)`, in order),
    how many of the defense test's 1000 (d100, d10) pairs hold against it (`defense_holds`). Only
    a hit is defended and only a defense that succeeds holds (GC-P2): the others are not tried."""
    defenses = [(d, n) for d, n in test_classes(*defense) if d.success]
    return tuple(
        sum(n for d, n in defenses if defense_holds(a, d).holds) if a.success else 0 for a, _ in test_classes(*attack)
    )


@dataclass(frozen=True)
class AttackOdds:
    """GC-P1..P6: the exchange's outcomes (`missed`: the attack test failed or the target moved
    away; `auto_defended`: GC-P5's d10; `defended`: the dodge/parry held; `damage`: damage rolled),
    `hit` (hp lowered) and `down` (hp brought to 0)."""

    outcomes: dict[str, Fraction]
    hit: Fraction
    down: Fraction


def attack_odds(
    attacker: Fighter,
    defender: Fighter,
    *,
    stat: str,
    damage: str,
    reaction: str | None = None,
    modifier: int = 0,
    unparryable: bool = False,
    undodgeable: bool = False,
    same_slot: bool = False,
    target_moved_away: bool = False,
    sepulchral: float = 3,
    backlash: float = 0.5,
    extreme_scores: bool = False,
) -> AttackOdds:
    """The exact distribution of `resolve_attack` with these arguments (every die uniform): the
    attack test's distinct results, GC-P5's automatic defence (d10 <= 7), the dodge/parry test's
    distinct results against each (`held_counts`), then the damage expression's exact
    distribution through the posture multiplier and `take_damage` (GC-P4, GC-P6 Revive). Counted
    in integers over 1000 (attack) x 10 (automatic defence d10) x 1000 (defense)."""
    whole = DENOMINATOR * 10 * DENOMINATOR
    counts = dict.fromkeys((MISSED, AUTO_DEFENDED, DEFENDED, DAMAGE), 0)
    attack: TestKey = (
        attacker.stats[stat] + modifier + posture_modifier(attacker),
        attacker.karma,
        attacker.posture,
        extreme_scores,
    )
    held = None
    if reaction is not None:
        defense: TestKey = (
            defender.stats[DEFENSE_STATS[reaction]] + posture_modifier(defender),
            defender.karma,
            defender.posture,
            extreme_scores,
        )
        held = held_counts(attack, defense)
    for i, (a, n) in enumerate(test_classes(*attack)):
        share = n * 10 * DENOMINATOR
        if not a.success or target_moved_away:
            counts[MISSED] += share
            continue
        if not same_slot and auto_defense_applies(defender, a, unparryable=unparryable, undodgeable=undodgeable):
            counts[AUTO_DEFENDED] += share * AUTO_DEFENSE_THRESHOLD // 10
            share = share * (10 - AUTO_DEFENSE_THRESHOLD) // 10
        if held is not None:
            counts[DEFENDED] += share * held[i] // DENOMINATOR
            share = share * (DENOMINATOR - held[i]) // DENOMINATOR
        counts[DAMAGE] += share
    outcomes = {name: Fraction(c, whole) for name, c in counts.items()}
    multiplier = damage_multiplier(attacker, sepulchral=sepulchral, backlash=backlash)
    lowered, down = Fraction(0), Fraction(0)
    for raw, q in of_expression(parse(damage)).items():
        _, wound = take_damage(defender, max(0, floor(raw * multiplier)))  # GC-P4 as roll_damage rounds
        after = max(0, wound.hp_after)  # GC-S5: hp stays >= 0 (0 is down)
        lowered += q if after < defender.hp else 0
        down += q if after <= 0 < defender.hp else 0
    return AttackOdds(outcomes=outcomes, hit=outcomes[DAMAGE] * lowered, down=outcomes[DAMAGE] * down)
