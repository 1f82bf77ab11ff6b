"""Exact odds of an Asgard test (AS-T1, T3, T5, H1), from precomputed 3d6/4d6 tables.

For each dice count the table holds, per natural sum, how many ordered rolls
give an automatic success, an automatic failure or neither (AS-T3), and
suffix sums of the "neither" counts, so a test's odds cost a few look-ups.
The table is built from the sorted multisets of n d6 (56 for 3d6, 126 for 4d6),
each weighted by the number of ordered rolls that sort to it: sums and AS-T3's
automatic results do not depend on the dice's order.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache, lru_cache
from itertools import combinations_with_replacement
from math import factorial
from typing import Any

from app.rules.distribution import die, total
from app.rulesets.asgard.rules import combat
from app.rulesets.asgard.rules.combat import PrimeEffects, weapon_dice
from app.rulesets.asgard.rules.core import (
    BASE_DICE,
    DEGREE_THRESHOLDS,
    DIFFICULTIES,
    TAKE_11,
    TestResult,
    TestSpec,
    automatic_result,
    effective_target,
    open_degree,
    resolve,
    score_bonus,
)
from app.rulesets.asgard.rules.hazards import MAL_EN_POINT_BASE, take_damage


def _orderings(dice: tuple[int, ...]) -> int:
    """Ordered rolls that sort to the multiset `dice`: n! / (product of each face's count!)."""
    weight = factorial(len(dice))
    for face in set(dice):
        weight //= factorial(dice.count(face))
    return weight


class _Table:
    """Counts of ordered rolls of n d6 by (natural sum, automatic result) (AS-T1, AS-T3, AS-H1)."""

    def __init__(self, n: int):
        self.n = n
        self.total = 6**n
        self.max_sum = 6 * n
        plain = [0] * (self.max_sum + 2)
        self.auto_success = 0
        self.auto_failure = 0
        self.auto_success_by_sum = [0] * (self.max_sum + 2)
        for dice in combinations_with_replacement(range(1, 7), n):
            weight = _orderings(dice)
            auto = automatic_result(dice)
            if auto == "success":
                self.auto_success += weight
                self.auto_success_by_sum[sum(dice)] += weight
            elif auto == "failure":
                self.auto_failure += weight
            else:
                plain[sum(dice)] += weight
        # at_least[s] = plain rolls with natural sum >= s (s clamped to 0..max_sum+1)
        self.at_least = [0] * (self.max_sum + 2)
        running = 0
        for s in range(self.max_sum + 1, -1, -1):
            running += plain[s]
            self.at_least[s] = running
        self.plain = tuple(plain)

    def plain_at_least(self, natural: int) -> int:
        if natural <= 0:
            return self.at_least[0]
        if natural > self.max_sum:
            return 0
        return self.at_least[natural]


@cache
def table(n: int) -> _Table:
    return _Table(n)


def _fractions(counts: dict[str, int], total: int) -> dict[str, Fraction]:
    return {k: Fraction(v, total) for k, v in counts.items()}


def odds_of_test(spec: TestSpec) -> tuple[dict[str, Fraction], dict[str, Fraction] | None]:
    """AS-T1/T3/T5/H1: P(outcome) for success, failure, critical_success
    (automatic success), critical_failure (automatic failure); plus, for an
    open test, the distribution of the degree reached."""
    if spec.take_11:
        result = resolve(spec, (), natural=TAKE_11)
        outcomes = {"success": 0, "failure": 0, "critical_success": 0, "critical_failure": 0}
        outcomes[result.outcome] = 1
        degrees = {result.degree: Fraction(1)} if result.degree else None
        return _fractions(outcomes, 1), degrees
    t = table(BASE_DICE + (1 if spec.heroism_4d6 else 0))
    bonus = score_bonus(spec)
    target = effective_target(spec)
    needed = (DIFFICULTIES["facile"] if target is None else target) - bonus
    success = t.plain_at_least(needed)
    outcomes = {
        "success": success,
        "failure": t.total - t.auto_success - t.auto_failure - success,
        "critical_success": t.auto_success,
        "critical_failure": t.auto_failure,
    }
    degrees = _degree_odds(t, bonus) if target is None else None
    return _fractions(outcomes, t.total), degrees


def _degree_odds(t: _Table, bonus: int) -> dict[str, Fraction]:
    """AS-T5 distribution of an open test's degree (automatic results per `open_degree`)."""
    counts = dict.fromkeys(("none", "facile", "moyen", "difficile", "heroique"), 0)
    upper = t.total - t.auto_success - t.auto_failure  # plain rolls with sum >= -inf
    reached = 0
    for name, threshold in DEGREE_THRESHOLDS:  # highest first
        at_least = t.plain_at_least(threshold - bonus)
        counts[name] += at_least - reached
        reached = at_least
    counts["none"] += upper - reached + t.auto_failure
    for natural, count in enumerate(t.auto_success_by_sum):
        if count:
            counts[open_degree(natural + bonus, "success")] += count
    return _fractions(counts, t.total)


def success_chance(spec: TestSpec) -> Fraction:
    """The exact probability that the test succeeds (its automatic success included)."""
    outcomes, _ = odds_of_test(spec)
    return outcomes["success"] + outcomes["critical_success"]


@dataclass(frozen=True)
class RetryOdds:
    """AS-T4: the best chance of the failed attempts, and the retry's."""

    failed: Fraction
    retry: Fraction

    @property
    def improved(self) -> bool:
        """AS-T4 (Decision): the retry rolls only when its exact chance is strictly higher."""
        return self.retry > self.failed


def retry_odds(attempts: Sequence[TestSpec], retry: TestSpec) -> RetryOdds:
    """AS-T4 (Decision): "the chances improved" = the retry's exact probability of success is
    strictly higher than that of the failed test — a lower target, the heroism die, the proper
    skill after a close one, a better modifier or skill all count. `attempts`: the failed test
    and the attempts it retried in turn (a worse attempt in between never lowers the bar)."""
    if not attempts:
        raise ValueError("a retry follows at least one failed attempt")
    return RetryOdds(max(success_chance(a) for a in attempts), success_chance(retry))


# --- the exact odds of an attack: the same pure rules as the encounter's attack --------

MISSED, DAMAGE = "missed", "damage"


@cache
def _ordered(n: int) -> tuple[tuple[int, ...], ...]:
    return tuple(itertools.product(range(1, 7), repeat=n))


@lru_cache(maxsize=1024)
def test_classes(spec: TestSpec, weapon_count: int = 0) -> tuple[int, dict[tuple[Any, ...], tuple[TestResult, int]]]:
    """AS-T1/T3/H1: the distinct results of a test (every ordered roll through `resolve`, the test's
    own rule), keyed by what an exchange reads of it: the automatic result, the score, the heroism
    die and the sum of the weapon dice it reads (`combat.weapon_dice`, AS-C2), each with how many
    of the rolls give it; and how many rolls there are. Taking 11 (AS-T8): its one result.
    (Cached: never change the dict returned.)"""
    if spec.take_11:
        r = resolve(spec, (), natural=TAKE_11)
        return 1, {(r.automatic, r.score, None, 0): (r, 1)}
    n = BASE_DICE + (1 if spec.heroism_4d6 else 0)
    out: dict[tuple[Any, ...], tuple[TestResult, int]] = {}
    for dice in _ordered(n):
        r = resolve(spec, dice, natural=sum(dice))
        read = sum(weapon_dice(dice, weapon_count)) if weapon_count else 0
        key = (r.automatic, r.score, r.heroism_die, read)
        found = out.get(key)
        out[key] = (r, 1) if found is None else (found[0], found[1] + 1)
    return 6**n, out


@cache
def _d6s(count: int) -> dict[int, Fraction]:
    return total(die(6) for _ in range(count))


@dataclass(frozen=True)
class AttackOdds:
    """AS-C1..C5: the exchange's outcomes (`missed`: the defense won, or an unperceived attack fell
    short of the difficulty; `damage`: the attack hit), `hit` (vitality lowered), `down` (vitality
    brought to 0) and `out` (brought to 0 and the AS-C5 volonte test failed: unconscious)."""

    outcomes: dict[str, Fraction]
    hit: Fraction
    down: Fraction
    out: Fraction


Weapon = tuple[int, int]  # AS-C2: a participant's weapon: its d6 count, its constant
MAX_COOPERATIONS = 20_000  # AS-T6: combinations of the participants' distinct results counted


def _attacks(
    attack: TestSpec, weapon: Weapon, cooperating: Sequence[tuple[TestSpec, Weapon]]
) -> tuple[int, list[tuple[TestResult, int, int, int]]]:
    """The attack test the defense opposes, each distinct one with: the damage it deals before the
    rolled dice (its weapon dice read, the heroism die, the weapon's constant), how many d6 its
    weapon rolls beyond three, and how many of the rolls give it; and how many rolls there are.
    AS-T6: every participant's distinct results combined, `cooperative_attack` choosing the leader
    (its dice and weapon deal the damage)."""
    people = [(attack, weapon), *cooperating]
    tables = [test_classes(spec, min(count, BASE_DICE)) for spec, (count, _) in people]
    whole, size = 1, 1
    for rolls, classes in tables:
        whole, size = whole * rolls, size * len(classes)
    if size > MAX_COOPERATIONS:
        raise TooMany(f"{size} combinations of the cooperating tests")
    out: list[tuple[TestResult, int, int, int]] = []
    for combo in itertools.product(*(classes.items() for _, classes in tables)):
        results = tuple(r for _, (r, _) in combo)
        n = 1
        for _, (_, m) in combo:
            n *= m
        if len(people) == 1:
            lead, led = 0, results[0]
        else:
            group, led = combat.cooperative_attack(results)
            lead = group.leader
        (_, _, heroism, read), _ = combo[lead]
        count, constant = people[lead][1]
        extra = max(0, count - BASE_DICE) + (min(count, BASE_DICE) if people[lead][0].take_11 else 0)
        out.append((led, read + (heroism or 0) + constant, extra, n))
    return whole, out


class TooMany(ValueError):
    """More combinations than the exact odds count."""


def attack_odds(
    attack: TestSpec,
    *,
    weapon: Weapon,
    bonus: int,
    asset_dice: int,
    defense: TestSpec | None,
    difficulty: int,
    protection: int,
    effects: PrimeEffects,
    vitality: int,
    volonte: int,
    cooperating: Sequence[tuple[TestSpec, Weapon]] = (),
) -> AttackOdds:
    """The exact distribution of one Asgard attack on one target (every die uniform): the attack
    test's distinct results (AS-T6: the cooperation's, `_attacks`), the defense test's against
    each (`combat.resolve_attack`, AS-T9), then AS-C2 damage (the weapon dice read from the attack,
    the extra d6 beyond three and the asset's, the heroism die, the weapon's constant and `bonus`:
    AS-C11's group), AS-C3 protection and the defender's heroism die (`damage_taken`), AS-C4
    halvings (`final_damage`), vitality (`take_damage`) and, at 0, AS-C5's volonte test
    (`success_chance`). Raises `TooMany` beyond `MAX_COOPERATIONS` combinations."""
    rolls, attacks = _attacks(attack, weapon, cooperating)
    against = test_classes(defense) if defense is not None else None
    # how many defense rolls the attack beats, by the defender's heroism die, for each attack as the
    # opposition reads it (AS-T9, AS-T3); counted in integers over (attack rolls x defense rolls)
    by_attack: dict[tuple[Any, ...], dict[int | None, int]] = {}
    counts: dict[tuple[int, int | None, int], int] = {}  # (damage before the rolled dice, defender's die, d6)
    for a, dealt, extra, n in attacks:
        key = (a.automatic, a.score, a.spec.skill_value)
        if key not in by_attack:
            hits: dict[int | None, int] = {}
            if against is None:
                if combat.resolve_attack(a, None, difficulty=difficulty).hit:
                    hits[None] = 1
            else:
                for d, m in against[1].values():
                    if combat.resolve_attack(a, d).hit:
                        hits[d.heroism_die] = hits.get(d.heroism_die, 0) + m
            by_attack[key] = hits
        for h, m in by_attack[key].items():
            k = (dealt + bonus, h, extra + asset_dice)
            counts[k] = counts.get(k, 0) + n * m
    whole = rolls * (against[0] if against is not None else 1)
    base = {k: Fraction(c, whole) for k, c in counts.items()}
    hit_share = sum(base.values(), Fraction(0))
    lowered, down, out = Fraction(0), Fraction(0), Fraction(0)
    for (before_dice, h, dice), p in base.items():
        for extra, q in _d6s(dice).items():
            taken = combat.damage_taken(before_dice + extra, protection)
            final = combat.final_damage(max(0, taken - (h or 0)), effects)
            after = take_damage(vitality, final)
            if after < vitality:
                lowered += p * q
            if vitality > 0 and after == 0:  # AS-C5: the volonte test of the mal en point
                down += p * q
                fails = 1 - success_chance(TestSpec("volonte", volonte, target=MAL_EN_POINT_BASE + max(0, final)))
                out += p * q * fails
    return AttackOdds(outcomes={MISSED: 1 - hit_share, DAMAGE: hit_share}, hit=lowered, down=down, out=out)
