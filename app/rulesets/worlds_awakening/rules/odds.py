"""Worlds Awakening: the exact odds of an attack (WA-C1..C3, WA-C5).

Each of the d20's 20 faces goes through the attack's own rule (`core.attack`: the critical
ranges, the defense, whether the damage dice roll twice); the damage is the expression's exact
distribution (once, or twice with the modifiers once), through `apply_damage`."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from app.rules.dice import DiceSource, parse
from app.rules.distribution import convolve, of_term, total
from app.rulesets.worlds_awakening.rules.core import apply_damage, attack

MISSED, HIT, CRITICAL = "missed", "hit", "critical"


class _Natural(DiceSource):
    """The attack d20 as given, then 1 for every damage die (what the damage rolls is counted apart)."""

    def __init__(self, natural: int):
        super().__init__()
        self.natural = natural

    def _next(self, faces: int, purpose: str) -> int:
        return self.natural if purpose == "attack" else 1


@dataclass(frozen=True)
class AttackOdds:
    """WA-C1..C3: `missed` (below the defense, or WA-C3's critical failure), `hit` (normal
    damage, a critical below the defense too), `critical` (WA-C2: the damage dice twice); `hit`
    (hp lowered) and `down` (WA-C5: brought to 0)."""

    outcomes: dict[str, Fraction]
    hit: Fraction
    down: Fraction


def attack_odds(
    stat_value: int, level: int, cha: int, damage: str, defense: int, hp: int, modifier: int = 0
) -> AttackOdds:
    expr = parse(damage)
    once = total(of_term(t) for t in expr.terms)
    dists = {HIT: once, CRITICAL: convolve(once, once)}
    outcomes = dict.fromkeys((MISSED, HIT, CRITICAL), Fraction(0))
    face = Fraction(1, 20)
    for natural in range(1, 21):
        r = attack(stat_value, level, cha, damage, defense, _Natural(natural), modifier=modifier)
        outcomes[MISSED if not r.hit else CRITICAL if r.bonus_damage else HIT] += face
    lowered, down = Fraction(0), Fraction(0)
    for name in (HIT, CRITICAL):
        for raw, q in dists[name].items():
            after, _ = apply_damage(hp, max(0, raw + expr.constant))
            lowered += outcomes[name] * q if after < hp else 0
            down += outcomes[name] * q if after <= 0 < hp else 0
    return AttackOdds(outcomes=outcomes, hit=lowered, down=down)
