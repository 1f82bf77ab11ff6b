"""Asgard opposition (AS-T9) and cooperation (AS-T6)."""

from __future__ import annotations

from dataclasses import dataclass

from app.rulesets.asgard.rules.core import DIFFICULTIES, TestResult, open_degree

COOPERATION_BONUS_FROM = 15  # AS-T6: +1 for each other result >= 15
COOPERATION_MALUS_BELOW = 10  # AS-T6: −1 for each other result < 10


def automatic_rank(result: TestResult) -> int:
    """AS-T3 in a contest: an automatic success beats any result, an automatic failure loses to any."""
    return {"success": 1, "failure": -1}.get(result.automatic or "", 0)


@dataclass(frozen=True)
class Opposition:
    a: TestResult
    b: TestResult
    winner: str  # "a" | "b"
    decided_by: str  # "automatic" | "score" | "skill" | "defender"


def oppose(a: TestResult, b: TestResult) -> Opposition:
    """AS-T9: the best result wins; tie → higher skill value; still tied → `b`, the defender
    or status quo (Decision). Automatic results (AS-T3) come before the scores."""
    for decided_by, key in (
        ("automatic", automatic_rank),
        ("score", lambda r: r.score),
        ("skill", lambda r: r.spec.skill_value),
    ):
        ka, kb = key(a), key(b)
        if ka != kb:
            return Opposition(a, b, "a" if ka > kb else "b", decided_by)
    return Opposition(a, b, "b", "defender")


@dataclass(frozen=True)
class Cooperation:
    results: tuple[TestResult, ...]
    leader: int  # index in results
    adjustments: tuple[int, ...]  # per participant; 0 for the leader
    score: int
    target: int | None
    success: bool
    outcome: str
    degree: str | None


def cooperation_adjustment(result: TestResult) -> int:
    """AS-T6: +1 for a result ≥ 15, −1 for a result < 10 (automatic results count as such)."""
    if result.automatic == "success":
        return 1
    if result.automatic == "failure":
        return -1
    assert result.score is not None  # dice were rolled (no automatic result)
    if result.score >= COOPERATION_BONUS_FROM:
        return 1
    if result.score < COOPERATION_MALUS_BELOW:
        return -1
    return 0


def leader_margin(result: TestResult) -> int:
    """AS-T6: how far a result is above what its own test needs: score − its own target
    (a close skill's +5 included, AS-T7); an open test's score itself."""
    assert result.score is not None  # its caller skips a test with no dice (AS-T4)
    return result.score - (result.target or 0)


def leader_index(results: tuple[TestResult, ...]) -> int:
    """AS-T6: the best result leads: automatic results first (AS-T3), then the highest
    margin against its own target (so the group never fails where one member alone
    succeeds), then the skill value; on a complete tie the first participant listed."""

    def key(r: TestResult) -> tuple[int, float, int]:
        margin = leader_margin(r) if r.score is not None else float("-inf")  # AS-T4: no dice rolled
        return (automatic_rank(r), margin, r.spec.skill_value)

    best = 0
    for i, r in enumerate(results[1:], start=1):
        if key(r) > key(results[best]):
            best = i
    return best


def cooperate(results: tuple[TestResult, ...], *, modifier: int = 0) -> Cooperation:
    """AS-T6 cooperation: the leader's result, +1/−1 per other participant, decides.
    The target is the leader's (AS-T7's +5 if the leader used a close skill); None = open test."""
    if not results:
        raise ValueError("cooperation needs at least one participant")
    lead = leader_index(results)
    adjustments = tuple(0 if i == lead else cooperation_adjustment(r) for i, r in enumerate(results))
    leader = results[lead]
    assert leader.score is not None  # a cooperation's tests roll their dice
    score = leader.score + modifier + sum(adjustments)
    target = leader.target
    if leader.automatic is not None:
        success = leader.automatic == "success"
    else:
        success = score >= (DIFFICULTIES["facile"] if target is None else target)
    outcome = (
        ("critical_success" if success else "critical_failure")
        if leader.automatic
        else ("success" if success else "failure")
    )
    degree = open_degree(score, leader.automatic) if target is None else None
    return Cooperation(results, lead, adjustments, score, target, success, outcome, degree)
