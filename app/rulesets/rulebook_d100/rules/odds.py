"""Rulebook D100: the exact odds of an attack (RB-F1..F3, RB-C1, RB-C2, RB-C4).

Each of the attack's 100 faces, and of the dodge's, goes through the test's own rule
(`core.resolve`); the dodge confronts the attack through `core.confront` (RB-C1: success, then
the level); equal standings go to RB-C2's rerolls, where both roll the same d100, lowest first,
again while equal: each side wins them with probability 1/2. The damage is the weapon
expression's exact distribution through `attack_damage`, the armour of an absorb, a critical
failure of the dodge doubling it."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from app.rules.dice import TableDice, parse
from app.rules.distribution import of_expression
from app.rules.errors import DiceNeeded
from app.rulesets.rulebook_d100.rules.core import TestResult, TestSpec, attack_damage, confront, resolve

MISSED, DODGED, DAMAGE = "missed", "dodged", "damage"
FACES = 100


@lru_cache(maxsize=1024)
def test_classes(spec: TestSpec) -> tuple[tuple[TestResult, int], ...]:
    """The distinct results of a d100 test as a fight reads them (its standing, level, outcome),
    each with how many of the 100 faces give it."""
    out: dict[tuple[bool, int, int, str], list[Any]] = {}
    for roll in range(1, FACES + 1):
        r = resolve(spec, roll)
        slot = out.setdefault((r.success, r.level, r.tiebreak_units, r.outcome), [r, 0])
        slot[1] += 1
    return tuple((r, n) for r, n in out.values())


def _attacker_wins(a: TestResult, d: TestResult) -> Fraction:
    """RB-C1/C2 (`confront`): 1 or 0 when the standings and the units digits decide; 1/2 when
    it comes to the rerolls (the same d100 each, lowest first, repeated while equal)."""
    try:
        return Fraction(1 if confront(a, d, TableDice([]), TableDice([])).winner == 0 else 0)
    except DiceNeeded:
        return Fraction(1, 2)


@lru_cache(maxsize=1024)
def _hits_past(attack: TestSpec, dodge: TestSpec) -> tuple[tuple[Fraction, Fraction], ...]:
    """For each of the attack's distinct results: P(the dodge loses and is not a critical failure),
    P(the dodge loses with a critical failure: RB-F3 damage doubled)."""
    out = []
    for a, _ in test_classes(attack):
        plain = doubled = Fraction(0)
        for d, n in test_classes(dodge):
            lost = _attacker_wins(a, d) * Fraction(n, FACES)
            if d.outcome == "critical_failure":
                doubled += lost
            else:
                plain += lost
        out.append((plain, doubled))
    return tuple(out)


@dataclass(frozen=True)
class AttackOdds:
    """RB-F2/F3: `missed` (the attack test failed), `dodged` (the dodge won, RB-C4), `damage`;
    `hit` (the first pool, hp, lowered) and `down` (hp brought to 0 or below)."""

    outcomes: dict[str, Fraction]
    hit: Fraction
    down: Fraction


def attack_odds(
    attack: TestSpec,
    weapon: str,
    *,
    dodge: TestSpec | None,
    armor: int | None,
    hp: int | None,
    floor: int,
) -> AttackOdds:
    """`armor`: the absorb's (None: no absorb); `hp`: the target's, when the damage comes off hp
    (None: a morale attack, off `pe`); `floor`: the lowest value the pool takes."""
    outcomes = dict.fromkeys((MISSED, DODGED, DAMAGE), Fraction(0))
    weapon_dist = of_expression(parse(weapon))
    past = _hits_past(attack, dodge) if dodge is not None else None
    lowered, down = Fraction(0), Fraction(0)
    for i, (a, n) in enumerate(test_classes(attack)):
        p = Fraction(n, FACES)
        if not a.success:
            outcomes[MISSED] += p
            continue
        plain, doubled = past[i] if past is not None else (Fraction(1), Fraction(0))
        outcomes[DODGED] += p * (1 - plain - doubled)
        outcomes[DAMAGE] += p * (plain + doubled)
        if hp is None:
            continue
        for roll, q in weapon_dist.items():
            taken = attack_damage(a.level, roll)
            if armor is not None:
                taken = max(0, taken - armor)
            for times, share in ((1, plain), (2, doubled)):
                after = min(hp, max(floor, hp - taken * times))
                lowered += p * q * share if after < hp else 0
                down += p * q * share if after <= 0 < hp else 0
    return AttackOdds(outcomes=outcomes, hit=lowered, down=down)
