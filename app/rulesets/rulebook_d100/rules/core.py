"""Rulebook D100 (pelican-jdr): percentage tests, success levels, confrontations,
rankings and the combat rules (rulebook-d100.md, RB-…). Pure: stdlib only.

A test is described by a `TestSpec` (what the percentage is made of and the
critical ranges), resolved against one d100 by `resolve` (or `roll_test`, which
takes the die from a `DiceSource`). `odds` enumerates the hundred faces with
integer arithmetic. `rank` orders several results (RB-C1..C3), `confront` is its
two-sided case.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import groupby

from app.rules.dice import DiceSource, parse
from app.rules.errors import RuleError

DIFFICULTIES: dict[str, int] = {
    "simple": 15,
    "facile": 30,
    "tres_facile": 50,
    "simplissime": 100,
    "complexe": -15,
    "difficile": -30,
    "tres_difficile": -50,
    "hardcore": -100,
}
SPECIAL_DIFFICULTIES: tuple[str, ...] = ("impossible", "quasi_impossible", "quasi_inratable", "inratable")
DEFAULT_STATS: tuple[str, ...] = ("FOR", "CON", "HAB", "INT", "SAG", "VOL", "CHA", "DIS", "REL", "PER")
AVERAGE_STAT = 50
DEFAULT_CRIT_CHANCE = 5
OUTCOMES = ("critical_success", "success", "failure", "critical_failure")
MAX_TIEBREAK_ROUNDS = 200


@dataclass(frozen=True)
class TestSpec:
    """What a Rulebook test is made of (RB-T1, RB-T2, RB-T5..T8)."""

    stat_value: int
    skill_bonus: int = 0
    weakened: bool = False
    difficulty: str | None = None
    modifier: int = 0
    crit_chance: int = DEFAULT_CRIT_CHANCE
    overflow_crit: bool = False
    rescue_negative: bool = True  # RB-T6 campaign option (percentages made negative by difficulty)
    ruin_over_100: bool = True  # RB-T6 campaign option


@dataclass(frozen=True)
class TestResult:
    """One resolved d100 test."""

    roll: int
    percentage: int
    level: int
    outcome: str
    crit_success_chance: int
    crit_failure_chance: int
    special: str | None = None

    @property
    def success(self) -> bool:
        return self.outcome in ("success", "critical_success")

    @property
    def critical(self) -> bool:
        return self.outcome.startswith("critical")

    @property
    def units(self) -> int:
        return self.roll % 10

    @property
    def tiebreak_units(self) -> int:
        """RB-C2: the units digit that breaks a tie; a 100 (« le pire échec possible »)
        never wins on its 0: it counts as the worst."""
        return 10 if self.roll == 100 else self.units

    @property
    def standing(self) -> tuple[bool, int]:
        """RB-C1/RB-C2: what a confrontation compares first: a success beats a failure
        whatever the levels, then the higher level."""
        return (self.success, self.level)


def trunc10(n: int) -> int:
    """The tens of `n`, truncated toward zero (RB-T4: trunc(−25 / 10) = −2)."""
    q = abs(n) // 10
    return q if n >= 0 else -q


def difficulty_modifier(difficulty: str | None) -> int:
    """RB-T2: the difficulty's modifier (0 for none or a special difficulty, RB-T8)."""
    if difficulty is None or difficulty in SPECIAL_DIFFICULTIES:
        return 0
    try:
        return DIFFICULTIES[difficulty]
    except KeyError:
        known = ", ".join((*DIFFICULTIES, *SPECIAL_DIFFICULTIES))
        raise RuleError(
            f"unknown difficulty {difficulty!r}; known: {known}", field="difficulty", code="unknown_name"
        ) from None


def percentage(spec: TestSpec) -> int:
    """RB-T1: stat (halved, rounded down, on a weakened roll) + skill + difficulty + modifiers."""
    stat = spec.stat_value // 2 if spec.weakened else spec.stat_value
    return stat + spec.skill_bonus + difficulty_modifier(spec.difficulty) + spec.modifier


def success_level(pct: int, roll: int) -> int:
    """RB-T4: trunc(percentage / 10) − trunc(roll / 10)."""
    return trunc10(pct) - trunc10(roll)


def crit_ranges(spec: TestSpec, pct: int) -> tuple[int, int]:
    """RB-T5, RB-T7: (critical success chance, critical failure chance).

    RB-T7 adds +1 critical success chance per full 5 points above 100 when the
    test asks for it. **Decision**: the critical failure range keeps its faces,
    so the success range stops below it.
    """
    fail = max(0, min(100, spec.crit_chance))
    succ = max(0, spec.crit_chance)
    if spec.overflow_crit and pct > 100:
        succ += (pct - 100) // 5
    return min(succ, 100 - fail), fail


def resolve(spec: TestSpec, roll: int) -> TestResult:
    """RB-T3..T8: the outcome and success level of `roll` (1..100) for `spec`."""
    if not 1 <= roll <= 100:
        raise RuleError(f"a d100 shows 1..100, not {roll}", field="dice")
    pct = percentage(spec)
    cs, cf = crit_ranges(spec, pct)
    special = spec.difficulty if spec.difficulty in SPECIAL_DIFFICULTIES else None
    outcome, level = _outcome_and_level(spec, pct, cs, cf, special, roll)
    return TestResult(roll, pct, level, outcome, cs, cf, special)


def _outcome_and_level(spec: TestSpec, pct: int, cs: int, cf: int, special: str | None, roll: int) -> tuple[str, int]:
    is_cs, is_cf = roll <= cs, roll > 100 - cf
    if special is None:
        outcome = _normal_outcome(spec, pct, roll, is_cs, is_cf)
    else:
        outcome = _special_outcome(special, is_cs, is_cf)
    return outcome, _signed_level(outcome, success_level(pct, roll), special)


def made_negative_by_difficulty(spec: TestSpec, pct: int) -> bool:
    """RB-T6: the percentage is 0 or below with the difficulty modifier and above 0
    without it (« négatif à cause de modificateurs de difficulté »)."""
    return pct <= 0 < pct - difficulty_modifier(spec.difficulty)


def _normal_outcome(spec: TestSpec, pct: int, roll: int, is_cs: bool, is_cf: bool) -> str:
    """RB-T3, RB-T5, RB-T6: criticals override the percentage unless the GM's options forbid
    it; the rescue option covers only percentages made negative by difficulty modifiers, any
    other percentage at 0 or below is still rescued by a critical success (RB-T5)."""
    if is_cs and (spec.rescue_negative or not made_negative_by_difficulty(spec, pct)):
        return "critical_success"
    if is_cf and (pct <= 100 or spec.ruin_over_100):
        return "critical_failure"
    return "success" if roll <= pct else "failure"


def _special_outcome(special: str, is_cs: bool, is_cf: bool) -> str:
    """RB-T8: the four special difficulties replace the roll's outcome."""
    if special == "impossible":
        return "critical_failure" if is_cf else "failure"
    if special == "quasi_impossible":
        return "critical_success" if is_cs else "critical_failure" if is_cf else "failure"
    if special == "quasi_inratable":
        return "critical_failure" if is_cf else "critical_success" if is_cs else "success"
    return "critical_success" if is_cs else "success"  # inratable


def _signed_level(outcome: str, level: int, special: str | None) -> int:
    """RB-T5: a critical's level is 2 × |level|, positive on success, negative on failure.

    **Decision** (RB-T8): an automatic outcome keeps |level| with the outcome's sign.
    """
    if outcome == "critical_success":
        return 2 * abs(level)
    if outcome == "critical_failure":
        return -2 * abs(level)
    if special is not None:
        return abs(level) if outcome == "success" else -abs(level)
    return level


def roll_test(spec: TestSpec, source: DiceSource, purpose: str = "test") -> TestResult:
    """RB-T3: roll the d100 and resolve it."""
    return resolve(spec, source.roll(100, purpose))


def odds(spec: TestSpec) -> tuple[dict[str, Fraction], dict[int, Fraction]]:
    """Exact odds of every outcome and of every success level, over the 100 faces
    (integer counts, one Fraction per value at the end)."""
    pct = percentage(spec)
    cs, cf = crit_ranges(spec, pct)
    special = spec.difficulty if spec.difficulty in SPECIAL_DIFFICULTIES else None
    counts = dict.fromkeys(OUTCOMES, 0)
    levels: dict[int, int] = {}
    for roll in range(1, 101):
        outcome, level = _outcome_and_level(spec, pct, cs, cf, special, roll)
        counts[outcome] += 1
        levels[level] = levels.get(level, 0) + 1
    return (
        {o: Fraction(n, 100) for o, n in counts.items()},
        {lv: Fraction(n, 100) for lv, n in sorted(levels.items())},
    )


# --- confrontations and rankings ---------------------------------------------


@dataclass(frozen=True)
class Placing:
    """One participant's place in a ranking: `index` into the results given."""

    index: int
    place: int
    tiebreak: str  # "level" | "units" | "reroll"
    rerolls: tuple[int, ...] = ()


def _order_key(r: TestResult, i: int) -> tuple[bool, int, int, int]:
    return (not r.success, -r.level, r.tiebreak_units, i)


def rank(results: Sequence[TestResult], sources: Sequence[DiceSource], purpose: str = "tiebreak") -> list[Placing]:
    """RB-C3 (with RB-C1, RB-C2): a success before a failure, then the best level; equal →
    the lower units digit (a 100 never wins on it); still equal → each rerolls d100,
    lowest first, repeated while equal.

    `sources[i]` gives participant i's reroll dice; rerolls go in participant order.
    """
    rerolls: dict[int, list[int]] = {i: [] for i in range(len(results))}
    order = sorted(range(len(results)), key=lambda i: _order_key(results[i], i))
    placed: list[int] = []
    for group in _groups(order, lambda i: _order_key(results[i], 0)):
        placed.extend(_reroll_ties(group, sources, rerolls, purpose) if len(group) > 1 else group)
    return [
        Placing(i, place, _tiebreak_used(i, results, rerolls), tuple(rerolls[i]))
        for place, i in enumerate(placed, start=1)
    ]


def _groups(order: list[int], key: Callable[[int], object]) -> list[list[int]]:
    """Runs of consecutive entries of `order` with equal keys."""
    return [list(run) for _, run in groupby(order, key)]


def _reroll_ties(
    group: list[int], sources: Sequence[DiceSource], rerolls: dict[int, list[int]], purpose: str, depth: int = 0
) -> list[int]:
    """RB-C2: each tied participant rerolls d100, lowest wins; repeat while equal."""
    if depth >= MAX_TIEBREAK_ROUNDS:  # pragma: no cover - astronomically unlikely with real dice
        raise RuleError("the tie could not be broken", field="dice")
    for i in group:
        rerolls[i].append(sources[i].roll(100, purpose))
    out: list[int] = []
    for sub in _groups(sorted(group, key=lambda i: (rerolls[i][-1], i)), lambda i: rerolls[i][-1]):
        out.extend(_reroll_ties(sub, sources, rerolls, purpose, depth + 1) if len(sub) > 1 else sub)
    return out


def _tiebreak_used(i: int, results: Sequence[TestResult], rerolls: dict[int, list[int]]) -> str:
    """What set a participant apart from those nearest it: "reroll", "units" (same success
    and level), "success" (same level, one succeeded and the other failed) or "level"."""
    mine = results[i]
    others = [r for j, r in enumerate(results) if j != i]
    if rerolls[i]:
        return "reroll"
    if any(r.standing == mine.standing for r in others):
        return "units"
    if any(r.level == mine.level for r in others):
        return "success"
    return "level"


@dataclass(frozen=True)
class Confrontation:
    """RB-C1/C2: who won (0 = a, 1 = b, None = a draw), how it was decided, and the reroll dice."""

    winner: int | None
    tiebreak: str
    rerolls: tuple[tuple[int, ...], tuple[int, ...]]


def confront(
    a: TestResult,
    b: TestResult,
    source_a: DiceSource,
    source_b: DiceSource | None = None,
    purpose: str = "tiebreak",
    *,
    tiebreak: bool = True,
) -> Confrontation:
    """RB-C1, RB-C2: a success beats a failure, then the higher success level wins; ties by
    the units digit (a 100 never wins on it), then rerolls (a's then b's). The tie-break
    is applied only « s'il y a vraiment un besoin »: with `tiebreak=False` equal
    standings are a draw (winner None, tiebreak "draw", no die rolled)."""
    if not tiebreak and a.standing == b.standing:
        return Confrontation(None, "draw", ((), ()))
    placings = rank([a, b], [source_a, source_b or source_a], purpose)
    by_index = {p.index: p for p in placings}
    return Confrontation(placings[0].index, placings[0].tiebreak, (by_index[0].rerolls, by_index[1].rerolls))


# --- combat (RB-F1..F4) ---------------------------------------------------------

ATTACK_STATS: dict[str, tuple[str, ...]] = {"melee": ("FOR",), "ranged": ("PER",), "morale": ("CHA", "DIS")}
DODGE_STATS: dict[str, str] = {"melee": "HAB", "ranged": "HAB", "morale": "DIS"}
FURTHER_DODGE_PENALTY = -10


def attack_stat(kind: str, stat: str | None = None) -> str:
    """RB-F2: melee tests FOR, ranged PER, morale CHA or DIS (`stat` picks one of the allowed)."""
    if kind not in ATTACK_STATS:
        raise RuleError(
            f"unknown attack kind {kind!r}; known: {', '.join(ATTACK_STATS)}", field="kind", code="unknown_name"
        )
    allowed = ATTACK_STATS[kind]
    if stat is None:
        return allowed[0]
    if stat not in allowed:
        raise RuleError(f"a {kind} attack tests {' or '.join(allowed)}, not {stat}", field="stat")
    return stat


def damage_pool(kind: str) -> str:
    """RB-F1/RB-F2: morale damage comes off `pe`, the rest off `hp`."""
    return "pe" if kind == "morale" else "hp"


def dodge_stat(kind: str) -> str:
    """RB-F3: a dodge tests HAB (DIS against a morale attack)."""
    return DODGE_STATS[kind]


def dodge_modifier(previous_dodges: int) -> int:
    """RB-F3: each further dodge in the same round is −10."""
    return FURTHER_DODGE_PENALTY * max(0, previous_dodges)


def attack_damage(level: int, weapon: int, bonus: int = 0) -> int:
    """RB-F2: damage = success level (already doubled on a critical, RB-T5) + weapon + bonuses."""
    return max(0, level + weapon + bonus)


@dataclass(frozen=True)
class Hit:
    """What an attack did (RB-F2, RB-F3)."""

    hit: bool
    damage: int  # taken by the defender, after armour and doubling
    pool: str  # "hp" | "pe"
    defense: str  # "dodge" | "absorb" | "none"
    dodged: bool = False
    free_attack: bool = False
    doubled: bool = False
    tiebreak: str | None = None
    weapon_roll: int | None = None


def resolve_attack(
    attack: TestResult,
    kind: str,
    weapon_damage: str,
    source: DiceSource,
    *,
    defense: str = "none",
    dodge: TestResult | None = None,
    armor: int = 0,
    bonus: int = 0,
    defender_source: DiceSource | None = None,
) -> Hit:
    """RB-F2, RB-F3 (RB-C4): a successful attack test hits unless the defender's dodge wins
    the confrontation (a critical dodge also earns a free attack); absorbing takes
    the armour off the damage; a defense's critical failure doubles the damage taken.
    Dice order: confrontation rerolls (attacker, defender), then the weapon's damage."""
    expr = parse(weapon_damage)
    pool = damage_pool(kind)
    if not attack.success:
        return Hit(False, 0, pool, defense)
    tiebreak = None
    if defense == "dodge":
        if dodge is None:
            raise RuleError("a dodge needs the defender's test", field="dodge")
        c = confront(attack, dodge, source, defender_source or source)
        tiebreak = c.tiebreak
        if c.winner == 1:
            return Hit(
                False, 0, pool, defense, dodged=True, free_attack=dodge.outcome == "critical_success", tiebreak=tiebreak
            )
    weapon = expr.roll(source, "damage")
    taken = attack_damage(attack.level, weapon, bonus)
    if defense == "absorb":
        taken = max(0, taken - armor)
    doubled = dodge is not None and dodge.outcome == "critical_failure"
    return Hit(
        True, taken * 2 if doubled else taken, pool, defense, doubled=doubled, tiebreak=tiebreak, weapon_roll=weapon
    )


@dataclass(frozen=True)
class InitiativeEntry:
    """RB-F4: a place in the turn order, with a critical's consequence."""

    index: int
    place: int
    tiebreak: str
    extra_action: bool  # critical success: an extra action before round 1
    first_round: int  # critical failure: acts only from round 2


def initiative(results: Sequence[TestResult], sources: Sequence[DiceSource]) -> list[InitiativeEntry]:
    """RB-F4: initiative is a HAB ranking (RB-C3); a critical success gains an extra action
    before round 1, a critical failure acts only from round 2."""
    return [
        InitiativeEntry(
            p.index,
            p.place,
            p.tiebreak,
            results[p.index].outcome == "critical_success",
            2 if results[p.index].outcome == "critical_failure" else 1,
        )
        for p in rank(results, sources, "initiative tiebreak")
    ]
