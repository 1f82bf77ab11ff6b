"""Asgard encounter-time combat rules (AS-C1..C4, AS-C11, AS-C13), pure functions.

The encounter reads them (app/rulesets/asgard.py). They take resolved
tests (`TestResult`, see core) and a DiceSource for any extra die they need.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from app.rules.dice import DiceSource, parse
from app.rules.errors import RuleError
from app.rulesets.asgard.rules.contests import Opposition, oppose
from app.rulesets.asgard.rules.core import BASE_DICE, TestResult

UNPERCEIVED_DIFFICULTY = 10  # AS-C1 "généralement 10"
EFFICACITE_BONUS = 2  # AS-C4
DEFENSE_STEP = 2  # AS-C4 prudence +2 / danger −2
MAX_FIGURANTS = 5  # AS-C11
PRIMES = ("attaques_multiples", "efficacite", "prudence")
PENALTIES = ("blessure_legere", "danger")


# --- AS-C1 -----------------------------------------------------------------


@dataclass(frozen=True)
class AttackResolution:
    hit: bool
    opposition: Opposition | None  # None for an unperceived attack
    difficulty: int | None


def resolve_attack(
    attack: TestResult, defense: TestResult | None, *, difficulty: int = UNPERCEIVED_DIFFICULTY
) -> AttackResolution:
    """AS-C1: combat against defense (AS-T9, ties to the defender); an unperceived attack
    (no defense) only needs combat ≥ the GM's difficulty (AS-T3's automatic results apply)."""
    if defense is None:
        if attack.automatic is not None:
            return AttackResolution(attack.automatic == "success", None, difficulty)
        assert attack.score is not None  # an attack test rolls its dice
        return AttackResolution(attack.score >= difficulty, None, difficulty)
    contest = oppose(attack, defense)
    return AttackResolution(contest.winner == "a", contest, None)


# --- AS-C2 / C3 ------------------------------------------------------------


@dataclass(frozen=True)
class Damage:
    weapon_dice: tuple[int, ...]  # read from the attack's dice, or rolled (take 11)
    extra_dice: tuple[int, ...]  # beyond 3d6, rolled
    heroism_die: int | None
    bonus: int  # figurants (AS-C11), assets' flat bonuses
    total: int


def weapon_dice(attack_dice: tuple[int, ...], damage_dice: int) -> tuple[int, ...]:
    """AS-C2: the attack's three dice are told apart, the distinguished one listed first
    (« distinguer l'un des d6 utilisés des deux autres »): a 1d6 weapon reads that first
    die, a 2d6 weapon the two others (second and third), a 3d6 weapon all three."""
    base = attack_dice[:BASE_DICE]
    if damage_dice == 1:
        return base[:1]
    if damage_dice == 2:
        return base[1:3]
    return base


def attack_damage(
    attack: TestResult, damage_dice: int, source: DiceSource, *, asset_dice: int = 0, bonus: int = 0
) -> Damage:
    """AS-C2: a weapon of Nd6 deals its dice read from the attack (`weapon_dice`);
    beyond 3d6 the extra dice are rolled and added; the heroism 4th die and asset dice add.
    An attack with no dice (an NPC taking 11, AS-T8) rolls its weapon dice (Decision)."""
    if damage_dice < 1:
        raise RuleError("a weapon deals at least 1d6", field="damage_dice")
    count = min(damage_dice, BASE_DICE)
    read = weapon_dice(attack.dice, count) if attack.dice else tuple(source.roll(6, "damage") for _ in range(count))
    extra = tuple(source.roll(6, "damage") for _ in range(max(0, damage_dice - BASE_DICE) + asset_dice))
    heroism = attack.heroism_die
    total = sum(read) + sum(extra) + (heroism or 0) + bonus
    return Damage(read, extra, heroism, bonus, total)


def damage_taken(damage: int, protection: int, *, defense: TestResult | None = None) -> int:
    """AS-C3: protection comes off, and so does the defender's heroism die even though the
    defense failed; never negative."""
    heroism = defense.heroism_die if defense is not None else None
    return max(0, damage - protection - (heroism or 0))


def halve_up(value: int) -> int:
    """AS-C4: divided by 2, rounded up."""
    return (value + 1) // 2


MAX_DAMAGE_DICE = 10


def damage_expression(text: str) -> tuple[int, int]:
    """AS-C2 with a dice expression instead of a weapon (`2d6+1`): (its d6 count, its constant).
    The d6 are the weapon's dice, read from the attack up to three, rolled beyond; the
    constant adds (never below 0 in all). (**Decision**: only d6 terms, added, 1 to 10 dice.)"""
    expr = parse(text)
    if any(t.faces != 6 or t.sign < 0 or t.keep is not None for t in expr.terms):
        raise RuleError(f"asgard damage is read in d6 (AS-C2): {text!r} is not like '2d6+1'", field="damage")
    count = sum(t.count for t in expr.terms)
    if not 1 <= count <= MAX_DAMAGE_DICE:
        raise RuleError(f"asgard damage has 1 to {MAX_DAMAGE_DICE} d6 (AS-C2), not {count}", field="damage")
    return count, expr.constant


# --- AS-C4 -----------------------------------------------------------------


@dataclass(frozen=True)
class Primes:
    """The primes and penalties of one action; `free_*` / `mandatory_*` come from circumstances."""

    primes: tuple[str, ...] = ()
    penalties: tuple[str, ...] = ()
    free_primes: tuple[str, ...] = ()
    mandatory_penalties: tuple[str, ...] = ()


@dataclass(frozen=True)
class PrimeEffects:
    action_bonus: int  # added to this action's test
    multiple_targets: bool
    halvings: int  # damage halved (rounded up) this many times, after everything else
    prudence_tests: int  # next defense tests at +2
    danger_tests: int  # next defense tests at −2


def prime_effects(choice: Primes) -> PrimeEffects:
    """AS-C4: one bought prime per action, paid with one penalty; free primes and mandatory
    penalties come on top; efficacite/prudence/danger stack, attaques_multiples never."""
    for name in choice.primes + choice.free_primes:
        if name not in PRIMES:
            raise RuleError(f"unknown prime {name!r}; known: {', '.join(PRIMES)}", field="primes")
    for name in choice.penalties + choice.mandatory_penalties:
        if name not in PENALTIES:
            raise RuleError(f"unknown penalty {name!r}; known: {', '.join(PENALTIES)}", field="penalties")
    if len(choice.primes) > 1:
        raise RuleError("one prime per action (AS-C4), besides free ones", field="primes")
    if len(choice.penalties) != len(choice.primes):
        raise RuleError("a prime is bought with exactly one penalty (AS-C4)", field="penalties")
    primes = Counter(choice.primes + choice.free_primes)
    penalties = Counter(choice.penalties + choice.mandatory_penalties)
    if primes["attaques_multiples"] > 1:
        raise RuleError("attaques multiples never stack (AS-C4)", field="primes")
    return PrimeEffects(
        action_bonus=EFFICACITE_BONUS * primes["efficacite"],
        multiple_targets=primes["attaques_multiples"] == 1,
        halvings=primes["attaques_multiples"] + penalties["blessure_legere"],
        prudence_tests=primes["prudence"],
        danger_tests=penalties["danger"],
    )


def final_damage(damage: int, effects: PrimeEffects) -> int:
    """AS-C4: attaques multiples / blessure légère halve the damage (rounded up) after
    everything else (protection included)."""
    for _ in range(effects.halvings):
        damage = halve_up(damage)
    return damage


def next_defense(prudence_tests: int, danger_tests: int) -> tuple[int, int, int]:
    """AS-C4: the modifier of the next defense test (+2 prudence, −2 danger) and the
    counters left afterwards."""
    modifier = (DEFENSE_STEP if prudence_tests > 0 else 0) - (DEFENSE_STEP if danger_tests > 0 else 0)
    return modifier, max(0, prudence_tests - 1), max(0, danger_tests - 1)


# --- AS-C11 ----------------------------------------------------------------


def figurant_group_bonus(size: int) -> int:
    """AS-C11: extras act in groups of up to 5: one test, +1 per other member (damage too)."""
    if not 1 <= size <= MAX_FIGURANTS:
        raise RuleError(f"a group of extras has 1 to {MAX_FIGURANTS} members", field="group_size")
    return size - 1


# --- AS-C13 ----------------------------------------------------------------


@dataclass(frozen=True)
class Initiative:
    combatant: str
    perception: int
    test: TestResult
    roll_offs: tuple[int, ...]  # 1d6 per tie-break round


def initiative_order(entries: list[tuple[str, TestResult]], source: DiceSource) -> list[Initiative]:
    """AS-C13 (Decision): open perception tests, highest result first; ties by higher
    perception value, then 1d6 roll-offs (rolled in listed order, again while tied)."""
    roll_offs: dict[str, list[int]] = {cid: [] for cid, _ in entries}
    by_key: dict[tuple[int, int], list[str]] = {}
    for cid, test in entries:
        assert test.score is not None  # a perception test rolls its dice
        by_key.setdefault((test.score, test.spec.skill_value), []).append(cid)
    for tied in by_key.values():
        _roll_off(tied, roll_offs, source)
    tests = dict(entries)
    ordered = sorted(
        (cid for cid, _ in entries),
        key=lambda c: (tests[c].score, tests[c].spec.skill_value, roll_offs[c]),
        reverse=True,
    )
    return [Initiative(c, tests[c].spec.skill_value, tests[c], tuple(roll_offs[c])) for c in ordered]


def _roll_off(tied: list[str], roll_offs: dict[str, list[int]], source: DiceSource) -> None:
    """Each tied combatant rolls 1d6; those still tied roll again."""
    if len(tied) < 2:
        return
    groups: dict[int, list[str]] = {}
    for cid in tied:
        value = source.roll(6, f"initiative_roll_off:{cid}")
        roll_offs[cid].append(value)
        groups.setdefault(value, []).append(cid)
    for group in groups.values():
        _roll_off(group, roll_offs, source)
