"""Asgard tests: 3d6 + skill against a difficulty (AS-T1..T8), heroism spends (AS-H6).

Pure: stdlib only. A test is described by a frozen `TestSpec` and resolved by
`roll_test` with a `DiceSource`; the result is a frozen `TestResult`.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from app.rules.dice import DiceSource
from app.rules.errors import InsufficientResource, RuleError

__all__ = [
    "RULESET",
    "DIFFICULTIES",
    "AUTOMATIC",
    "DEGREES",
    "DEGREE_THRESHOLDS",
    "STANDARD_SKILLS",
    "TIERS",
    "CLOSE_SKILL_PENALTY",
    "TAKE_11",
    "BASE_DICE",
    "skill_key",
    "skill_value",
    "difficulty_target",
    "degree_of",
    "automatic_result",
    "spend_heroism",
    "TestSpec",
    "TestResult",
    "effective_target",
    "score_bonus",
    "roll_test",
    "resolve",
    "open_degree",
    "automatic_failure",
    "check_retry_of",
]

RULESET = "asgard"

DIFFICULTIES = {"facile": 10, "moyen": 15, "difficile": 20, "heroique": 25}
AUTOMATIC = "automatique"  # AS-T2 "réussite automatique": no test at all
# AS-T5: the degree of an open test is the highest threshold reached.
DEGREES = ("none", "facile", "moyen", "difficile", "heroique")
DEGREE_THRESHOLDS = (("heroique", 25), ("difficile", 20), ("moyen", 15), ("facile", 10))
STANDARD_SKILLS = (
    "combat",
    "defense",
    "survie",
    "perception",
    "resistance",
    "volonte",
    "soins",
    "acrobatie",
    "athletisme",
    "pilotage",
    "equitation",
)
TIERS = ("boss", "second_couteau", "figurant")
CLOSE_SKILL_PENALTY = 5  # AS-T7
TAKE_11 = 11  # AS-T8
BASE_DICE = 3


def skill_key(name: str) -> str:
    """A skill's stored name: lower case, accents removed ("Défense" -> "defense")."""
    text = unicodedata.normalize("NFKD", name.strip().lower())
    return "".join(c for c in text if not unicodedata.combining(c)).replace(" ", "_").replace("-", "_")


def skill_value(skills: dict[str, int], name: str, *, field: str = "skill") -> int:
    """AS-S1: a skill's value; a standard skill missing from the sheet counts 0."""
    key = skill_key(name)
    if key in skills:
        return skills[key]
    if key in STANDARD_SKILLS:
        return 0
    raise RuleError(
        f"the character has no skill {name!r}; its skills: {', '.join(sorted(skills)) or 'none'}",
        field=field,
        code="unknown_name",
    )


def difficulty_target(difficulty: str | None, target: int | None) -> int | None:
    """AS-T2: the number to reach for a named difficulty or an explicit target (None = open test)."""
    if difficulty is not None and target is not None:
        raise RuleError("give `difficulty` or `target`, not both", field="target")
    if difficulty is None:
        return target
    if difficulty not in DIFFICULTIES:
        raise RuleError(
            f"unknown difficulty {difficulty!r}; known: {', '.join(DIFFICULTIES)} or {AUTOMATIC}",
            field="difficulty",
            code="unknown_name",
        )
    return DIFFICULTIES[difficulty]


def degree_of(score: int) -> str:
    """AS-T5: the highest threshold reached by an open test's result ("none" below 10)."""
    for name, threshold in DEGREE_THRESHOLDS:
        if score >= threshold:
            return name
    return "none"


def automatic_result(dice: tuple[int, ...]) -> str | None:
    """AS-T3: all dice 1 -> "failure"; three dice showing 6 (any three of 4d6) -> "success"."""
    if not dice:
        return None
    if all(d == 1 for d in dice):
        return "failure"
    if sum(1 for d in dice if d == 6) >= 3:
        return "success"
    return None


def spend_heroism(available: int, cost: int, what: str, *, field: str = "heroism") -> int:
    """AS-H6: heroism never goes below zero; an unaffordable spend is refused (409)."""
    if cost > available:
        raise InsufficientResource(
            f"{what} costs {cost} heroism point{'s' if cost > 1 else ''}; the character has {available}",
            field=field,
            extra={"needed": cost, "available": available},
        )
    return available - cost


@dataclass(frozen=True)
class TestSpec:
    """What to roll. `target` None = open test (AS-T5); `confrontation` for AS-T7's −5."""

    __test__ = False  # not a pytest class

    skill: str
    skill_value: int
    modifier: int = 0
    target: int | None = None
    heroism_4d6: bool = False
    close_skill: bool = False
    confrontation: bool = False
    take_11: bool = False


@dataclass(frozen=True)
class TestResult:
    """A resolved test. `target` is the effective one (AS-T7 +5 included)."""

    __test__ = False

    spec: TestSpec
    dice: tuple[int, ...]
    natural: int | None
    score: int | None
    target: int | None
    automatic: str | None  # "success" | "failure" (AS-T3) | None
    success: bool
    degree: str | None
    outcome: str

    @property
    def heroism_die(self) -> int | None:
        """The 4th die of an AS-H1 test (it adds to damage or protection, AS-C2/C3)."""
        return self.dice[BASE_DICE] if len(self.dice) > BASE_DICE else None


def effective_target(spec: TestSpec) -> int | None:
    """AS-T7: a close skill in a simple test raises the difficulty by 5."""
    if spec.target is None or spec.confrontation or not spec.close_skill:
        return spec.target
    return spec.target + CLOSE_SKILL_PENALTY


def score_bonus(spec: TestSpec) -> int:
    """AS-T1: skill + modifiers; AS-T7: −5 for a close skill in a confrontation or an open test."""
    penalty = CLOSE_SKILL_PENALTY if spec.close_skill and (spec.confrontation or spec.target is None) else 0
    return spec.skill_value + spec.modifier - penalty


def roll_test(spec: TestSpec, source: DiceSource, purpose: str = "test") -> TestResult:
    """AS-T1: roll 3d6 (4d6 with AS-H1, none with AS-T8's 11) + skill + modifiers."""
    if spec.take_11:
        return resolve(spec, (), natural=TAKE_11)
    dice = tuple(source.roll(6, purpose) for _ in range(BASE_DICE))
    if spec.heroism_4d6:
        dice += (source.roll(6, "heroism"),)
    return resolve(spec, dice, natural=sum(dice))


def resolve(spec: TestSpec, dice: tuple[int, ...], *, natural: int) -> TestResult:
    """AS-T1/T3/T5: score, automatic results, success and degree from the dice."""
    score = natural + score_bonus(spec)
    target = effective_target(spec)
    automatic = automatic_result(dice)
    if automatic is not None:
        success = automatic == "success"
    elif target is None:
        success = score >= DIFFICULTIES["facile"]
    else:
        success = score >= target
    degree = None
    if target is None:
        degree = open_degree(score, automatic)
    outcome = (
        ("critical_success" if success else "critical_failure") if automatic else ("success" if success else "failure")
    )
    return TestResult(spec, dice, natural, score, target, automatic, success, degree, outcome)


def open_degree(score: int, automatic: str | None) -> str:
    """AS-T5 with AS-T3: an automatic failure reaches no degree, an automatic success at least facile."""
    if automatic == "failure":
        return "none"
    degree = degree_of(score)
    if automatic == "success" and degree == "none":
        return "facile"
    return degree


def automatic_failure(spec: TestSpec) -> TestResult:
    """AS-T4: a retry without improvement fails automatically, no dice rolled."""
    target = effective_target(spec)
    return TestResult(spec, (), None, None, target, "failure", False, "none" if target is None else None, "failure")


def check_retry_of(failed: TestSpec, failed_success: bool, retry: TestSpec) -> None:
    """AS-T4: a retry follows a failed test, of the same skill, or of another one when either
    test uses a close skill (AS-T7: the proper skill after a close one, or another close one).
    Whether it rolls is the odds' to say (`odds.retry_odds`)."""
    if failed_success:
        raise RuleError("only a failed test can be retried", field="retry_of")
    if skill_key(failed.skill) != skill_key(retry.skill) and not (failed.close_skill or retry.close_skill):
        raise RuleError(
            f"the retried test was a {failed.skill!r} test, not {retry.skill!r} (another skill retries it only "
            "when one of the two is a close skill, AS-T7)",
            field="retry_of",
        )
