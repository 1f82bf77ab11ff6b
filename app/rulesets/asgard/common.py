"""Helpers shared by the asgard adapter and its character actions."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from app.kit.errors import Forbidden
from app.rules.errors import RuleError
from app.rulesets.asgard import rules
from app.rulesets.asgard import schemas as m
from app.rulesets.asgard.rules.core import (
    TAKE_11,
    TestResult,
    TestSpec,
)
from app.rulesets.asgard.rules.odds import RetryOdds
from app.rulesets.contract.adapter import CharacterState, OperationContext

Character = CharacterState[m.Sheet]
Context = OperationContext[m.Options]


def check_take_11(ch: Character, ctx: Context, *, heroism_4d6: bool, field: str = "take_11") -> None:
    """AS-T8: only the GM, only for an NPC, and never with 4d6."""
    if ch.kind != "npc":
        raise RuleError("only NPCs take 11 (AS-T8)", field=field, code="take_11_refused")
    if not ctx.is_gm:
        raise Forbidden("only the GM may have an NPC take 11 (AS-T8)", field=field, code="gm_only")
    if not ctx.options.take_11_allowed:
        raise RuleError(
            "this campaign does not allow taking 11 (option take_11_allowed)", field=field, code="take_11_refused"
        )
    if heroism_4d6:
        raise RuleError(
            "an NPC taking 11 rolls no dice: heroism_4d6 does not apply", field="heroism_4d6", code="take_11_refused"
        )


def spec_for(
    ch: Character,
    skill: str,
    *,
    target: int | None,
    modifier: int = 0,
    heroism_4d6: bool = False,
    close_skill: bool = False,
    take_11: bool = False,
    confrontation: bool = False,
    field: str = "skill",
) -> TestSpec:
    """A TestSpec from a character's sheet (skill value read from it, AS-S1)."""
    value = rules.skill_value(ch.sheet.skills, skill, field=field)
    return TestSpec(rules.skill_key(skill), value, modifier, target, heroism_4d6, close_skill, confrontation, take_11)


def logged_spec(entry: dict[str, Any], *, confrontation: bool = False, heroism_4d6: bool | None = None) -> TestSpec:
    """The spec of a logged test (a test result, a side, a participant): the same test again
    (AS-H2), or a failed attempt a retry is measured against (AS-T4)."""
    return TestSpec(
        entry["skill"],
        entry["skill_value"],
        entry.get("modifier", 0),
        entry.get("base_target"),
        bool(entry.get("heroism_4d6")) if heroism_4d6 is None else heroism_4d6,
        bool(entry.get("close_skill")),
        confrontation,
        bool(entry.get("take_11")),
    )


def replayed(entry: dict[str, Any], *, confrontation: bool = False) -> TestResult:
    """A logged test resolved again from its own dice (the side of an opposition that stands, AS-H2)."""
    natural = TAKE_11 if entry.get("take_11") else entry["natural"]
    return rules.resolve(
        logged_spec(entry, confrontation=confrontation), tuple(entry.get("dice") or ()), natural=natural
    )


def odds_value(p: Fraction) -> dict[str, Any]:
    return {"probability": f"{p.numerator}/{p.denominator}", "p": float(p)}


def retry_figures(retry: RetryOdds | None) -> dict[str, Any] | None:
    """AS-T4: the exact chances compared (the failed attempts' best, the retry's)."""
    return None if retry is None else {"failed": odds_value(retry.failed), "retry": odds_value(retry.retry)}


def result_fields(result: TestResult) -> dict[str, Any]:
    """The ruleset-specific fields of a test result (beside API.md's)."""
    spec = result.spec
    return {
        "skill": spec.skill,
        "skill_value": spec.skill_value,
        "modifier": spec.modifier,
        "base_target": spec.target,
        "close_skill": spec.close_skill,
        "heroism_4d6": spec.heroism_4d6,
        "take_11": spec.take_11,
        "dice": list(result.dice),
        "automatic": result.automatic,
    }


def summary(result: TestResult) -> dict[str, Any]:
    """A test inside another result (a side, a participant, an action's check)."""
    return {
        "natural": result.natural,
        "score": result.score,
        "target": result.target,
        "outcome": result.outcome,
        "success": result.success,
        "degree": result.degree,
        **result_fields(result),
    }


def heroism_effect(sheet: m.Sheet, cost: int, what: str, *, field: str = "heroism_4d6") -> tuple[m.Sheet, dict]:
    """AS-H6: (new sheet, effects) after spending `cost` heroism; 409 when unaffordable."""
    before = sheet.heroism
    after = rules.spend_heroism(before, cost, what, field=field)
    return sheet.model_copy(update={"heroism": after}), {"heroism": {"before": before, "after": after}}
