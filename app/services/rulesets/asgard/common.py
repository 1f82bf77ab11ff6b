"""Helpers shared by the asgard adapter and its character actions."""
from __future__ import annotations

import copy
from typing import Any

from app.kit.errors import Forbidden
from app.rules import asgard as rules
from app.rules.asgard.core import (
    TestResult,
    TestSpec,
)
from app.rules.errors import RuleError
from app.services.rulesets.base import (
    CharacterState,
    OperationContext,
)


def _option(ctx: OperationContext, name: str, default: Any) -> Any:
    return getattr(ctx.options, name, default)


def check_take_11(ch: CharacterState, ctx: OperationContext, *, heroism_4d6: bool, field: str = "take_11") -> None:
    """AS-T8: only the GM, only for an NPC, and never with 4d6."""
    if ch.kind != "npc":
        raise RuleError("only NPCs take 11 (AS-T8)", field=field)
    if not ctx.is_gm:
        raise Forbidden("only the GM may have an NPC take 11 (AS-T8)", field=field)
    if not _option(ctx, "take_11_allowed", True):
        raise RuleError("this campaign does not allow taking 11 (option take_11_allowed)", field=field)
    if heroism_4d6:
        raise RuleError("an NPC taking 11 rolls no dice: heroism_4d6 does not apply", field="heroism_4d6")


def spec_for(ch: CharacterState, skill: str, *, target: int | None, modifier: int = 0, heroism_4d6: bool = False,
             close_skill: bool = False, take_11: bool = False, confrontation: bool = False,
             field: str = "skill") -> TestSpec:
    """A TestSpec from a character's sheet (skill value read from it, AS-S1)."""
    value = rules.skill_value(ch.sheet.get("skills", {}), skill, field=field)
    return TestSpec(rules.skill_key(skill), value, modifier, target, heroism_4d6, close_skill,
                    confrontation, take_11)


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


def heroism_effect(sheet: dict, cost: int, what: str, *, field: str = "heroism_4d6") -> tuple[dict, dict]:
    """AS-H6: (new sheet, effects) after spending `cost` heroism; 409 when unaffordable."""
    before = sheet.get("heroism", 0)
    after = rules.spend_heroism(before, cost, what, field=field)
    new = copy.deepcopy(sheet)
    new["heroism"] = after
    return new, {"heroism": {"before": before, "after": after}}
