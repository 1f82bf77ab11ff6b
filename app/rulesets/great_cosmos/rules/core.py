"""Great Cosmos: stats, the d100 test, its classification and karma (GC-S, GC-T, GC-K).

Pure rules (stdlib only). Every die comes from a `DiceSource`: the test d100 is
rolled first (purpose "test"), then the karma d10 when one is needed ("karma").
"""

from __future__ import annotations

from dataclasses import dataclass

from app.rules.dice import DiceSource
from app.rules.errors import RuleError

STATS = ("force", "esprit", "charisme", "agilite", "precision", "chance")
STAT_ALIASES = {"furtivite": "agilite"}
INTUITION = "intuition"
STAT_MIN, STAT_MAX = 1, 100
INTUITION_MIN, INTUITION_MAX = 1, 6
KARMA_MIN, KARMA_MAX = -10, 10

SUPER_CRITICAL_SUCCESS = "super_critical_success"
CRITICAL_SUCCESS = "critical_success"
SUCCESS = "success"
FAILURE = "failure"
CRITICAL_FAILURE = "critical_failure"
SUPER_CRITICAL_FAILURE = "super_critical_failure"
OUTCOMES = (
    SUPER_CRITICAL_SUCCESS,
    CRITICAL_SUCCESS,
    SUCCESS,
    FAILURE,
    CRITICAL_FAILURE,
    SUPER_CRITICAL_FAILURE,
)
SUCCESSES = frozenset({SUCCESS, CRITICAL_SUCCESS, SUPER_CRITICAL_SUCCESS})

# GC-K1: karma change per outcome.
KARMA_DELTA = {
    CRITICAL_FAILURE: 1,
    SUPER_CRITICAL_FAILURE: 2,
    CRITICAL_SUCCESS: -1,
    SUPER_CRITICAL_SUCCESS: -2,
}
# GC-K5: karma locked by the special postures.
LOCKED_KARMA = {"illumination": 10, "sepulcrale": -10}


def canonical_stat(name: str, *, field: str = "stat") -> str:
    """GC-S1: the stat a request names (`furtivite` is the former name of `agilite`)."""
    stat = STAT_ALIASES.get(name, name)
    if stat not in STATS:
        raise RuleError(
            f"unknown stat {name!r}; one of {', '.join(STATS)} (or furtivite for agilite)",
            field=field,
            code="unknown_name",
        )
    return stat


def clamp_karma(value: int) -> int:
    """GC-S4 / GC-K1: karma stays within -10..+10."""
    return max(KARMA_MIN, min(KARMA_MAX, value))


def karma_after(karma: int, outcome: str) -> int:
    """GC-K1: karma after a test: crit. failure +1, super-crit. failure +2,
    crit. success -1, super-crit. success -2, clamped to -10..+10."""
    return clamp_karma(karma + KARMA_DELTA.get(outcome, 0))


def locked_karma(posture: str | None) -> int | None:
    """GC-K5: the karma a special posture locks (Illumination +10, Sépulcrale -10), else None."""
    return LOCKED_KARMA.get(posture or "")


def karma_die_sign(karma: int) -> int:
    """GC-K2: +1 when karma <= -5 (add 1d10), -1 when karma >= +5 (subtract 1d10), else 0."""
    if karma <= -5:
        return 1
    if karma >= 5:
        return -1
    return 0


def needs_karma_die(natural: int, karma: int) -> bool:
    """GC-T1/GC-K2: a karma d10 is rolled unless karma is within -4..+4 or the
    natural is 42 or 66 (which stand as rolled: Decision)."""
    return karma_die_sign(karma) != 0 and natural not in (42, 66)


def classify(score: int, target: int, karma: int, extreme_scores: bool = False) -> str:
    """GC-T2 (with GC-K3/GC-K4): the outcome of a test score, first match wins.

    A score <= 0 or > 100 becomes a super-critical only when the GM opts in
    (`extreme_scores`, « le MJ peut décider de convertir… »; Decision: off by default);
    otherwise it counts as a critical (<= 10 / >= 91). Karma -10/+10 limit both ways."""
    if score == 42:
        return CRITICAL_SUCCESS if karma <= KARMA_MIN else SUPER_CRITICAL_SUCCESS
    if score == 66:
        return CRITICAL_FAILURE if karma >= KARMA_MAX else SUPER_CRITICAL_FAILURE
    if extreme_scores and score <= 0 and karma > KARMA_MIN:
        return SUPER_CRITICAL_SUCCESS
    if extreme_scores and score > 100 and karma < KARMA_MAX:
        return SUPER_CRITICAL_FAILURE
    if score <= 10:
        if karma <= KARMA_MIN:
            return SUCCESS if score <= target else FAILURE
        return CRITICAL_SUCCESS
    if score >= 91:
        if karma >= KARMA_MAX:
            return FAILURE if score > target else SUCCESS
        return CRITICAL_FAILURE
    return SUCCESS if score <= target else FAILURE


@dataclass(frozen=True)
class TestResult:
    """One resolved d100 test (GC-T1..T2, GC-K1..K5)."""

    natural: int
    karma_die: int | None
    score: int
    target: int
    outcome: str
    karma_used: int  # the karma the test ran with (locked in a special posture)
    karma_before: int  # the stored karma
    karma_after: int  # the stored karma after the test
    locked: bool

    @property
    def success(self) -> bool:
        return self.outcome in SUCCESSES


def score_of(natural: int, karma_die: int | None, karma: int) -> int:
    """GC-T1/GC-K2: the score from the natural d100 and the karma d10 (if any)."""
    if karma_die is None:
        return natural
    return natural + karma_die_sign(karma) * karma_die


def resolve_test(
    dice: DiceSource,
    target: int,
    karma: int,
    *,
    posture: str | None = None,
    extreme_scores: bool = False,
) -> TestResult:
    """GC-T1: roll d100 (then the karma d10 if GC-K2 asks), classify (GC-T2),
    update karma (GC-K1) unless a special posture locks it (GC-K5)."""
    lock = locked_karma(posture)
    used = karma if lock is None else lock
    natural = dice.roll(100, "test")
    karma_die = dice.roll(10, "karma") if needs_karma_die(natural, used) else None
    return result_from_dice(natural, karma_die, target, karma, posture=posture, extreme_scores=extreme_scores)


def result_from_dice(
    natural: int,
    karma_die: int | None,
    target: int,
    karma: int,
    *,
    posture: str | None = None,
    extreme_scores: bool = False,
) -> TestResult:
    """GC-T1..T2, GC-K1..K5 from dice already rolled (a replay of logged dice)."""
    lock = locked_karma(posture)
    used = karma if lock is None else lock
    score = score_of(natural, karma_die, used)
    outcome = classify(score, target, used, extreme_scores)
    after = karma if lock is not None else karma_after(karma, outcome)
    return TestResult(
        natural=natural,
        karma_die=karma_die,
        score=score,
        target=target,
        outcome=outcome,
        karma_used=used,
        karma_before=karma,
        karma_after=after,
        locked=lock is not None,
    )


@dataclass(frozen=True)
class IntuitionResult:
    """GC-T3: a d6 intuition test."""

    natural: int
    target: int
    good: bool


def resolve_intuition(dice: DiceSource, intuition: int, modifier: int = 0) -> IntuitionResult:
    """GC-T3: roll d6; <= intuition (+ modifier) gives a good intuition. No karma."""
    natural = dice.roll(6, "intuition")
    target = intuition + modifier
    return IntuitionResult(natural=natural, target=target, good=natural <= target)
