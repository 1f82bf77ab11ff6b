"""The `asgard` adapter: pydantic bodies in, pure rules (`app.rules.asgard`) called, Outcome out."""
from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

from app.models.rulesets import asgard as m
from app.rules import asgard as rules
from app.rules.asgard import odds as odds_rules
from app.rules.asgard.core import (
    AUTOMATIC, CLOSE_SKILL_PENALTY, DEGREES, DIFFICULTIES, RULESET, STANDARD_SKILLS, TAKE_11, TIERS,
    PreviousTest, TestResult, TestSpec,
)
from app.rules.errors import RuleError
from app.services.rulesets.base import (
    CharacterState, Odds, OperationContext, Outcome, RulesetAdapter, test_body,
)


class Forbidden(RuleError):
    """A GM-only choice made by a player (403)."""

    status_code = 403
    title = "Forbidden"
    slug = "forbidden"


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


class AsgardAdapter(RulesetAdapter):
    id = RULESET
    title = "Asgard (Clé en main 3d6)"
    Sheet = m.Sheet
    Options = m.Options
    TestRequest = m.TestRequest
    RerollRequest = m.RerollRequest
    OpposedRequest = m.OpposedRequest
    GroupRequest = m.GroupRequest

    # --- catalogue and sheets -------------------------------------------------
    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "dice": "3d6 + skill (4d6 with a heroism point)",
            "skills": list(STANDARD_SKILLS),
            "difficulties": {**DIFFICULTIES, AUTOMATIC: None},
            "degrees": {"none": None, **DIFFICULTIES},
            "tiers": list(TIERS),
            "close_skill_penalty": CLOSE_SKILL_PENALTY,
            "take_11": TAKE_11,
            "automatic_results": {"critical_failure": "all dice show 1", "critical_success": "three dice show 6"},
            "heroism_spends": {
                "heroism_4d6": {"cost": 1, "rule": "AS-H1", "how": "test request field heroism_4d6"},
                "reroll": {"cost": 1, "rule": "AS-H2", "how": "POST /v1/characters/{id}/tests/{test_id}/reroll"},
                "heroic_effect": {"cost": 1, "rule": "AS-H3", "how": "action heroic_effect"},
                "cancel_damage": {"cost": 2, "rule": "AS-H4", "how": "action cancel_damage"},
                "protect_ally": {"cost": 1, "rule": "AS-H5", "how": "action protect_ally"},
            },
            "outcomes": ["success", "failure", "critical_success", "critical_failure"],
            "actions": sorted(self.actions),
        }

    def normalize_sheet(self, raw: dict[str, Any], *, kind: str, gm_override: bool = False) -> dict[str, Any]:
        sheet = self.Sheet.model_validate(raw)
        if kind == "pc" and sheet.tier is not None:
            raise RuleError("only NPCs have a tier (AS-S3)", field="sheet.tier")
        return sheet.model_dump(mode="json")

    def derived(self, sheet: dict[str, Any]) -> dict[str, Any]:
        vitality = sheet.get("vitality", 0)
        return {
            "mal_en_point": vitality <= 0,
            "wounds": max(0, sheet.get("vitality_max", 0) - vitality),
            "skills": {**dict.fromkeys(STANDARD_SKILLS, 0), **sheet.get("skills", {})},
            "weapons": [
                {"name": w["name"], "damage": f"{w['damage_dice']}d6", "ranged": w.get("ranged", False)}
                for w in sheet.get("weapons", [])
            ],
        }

    # --- tests ----------------------------------------------------------------
    def _prepare(self, ch: CharacterState, req: m.TestRequest, ctx: OperationContext) -> tuple[TestSpec, bool]:
        """Validate a test request; returns (spec, automatic difficulty)."""
        automatic = req.difficulty == AUTOMATIC
        target = None if automatic else rules.difficulty_target(req.difficulty, req.target)
        spec = spec_for(ch, req.skill, target=target, modifier=req.modifier, heroism_4d6=req.heroism_4d6,
                        close_skill=req.close_skill, take_11=req.take_11)
        if req.take_11:
            check_take_11(ch, ctx, heroism_4d6=req.heroism_4d6)
        if automatic and (req.heroism_4d6 or req.take_11 or req.retry_of):
            raise RuleError("a `réussite automatique` needs no test (AS-T2): nothing to roll", field="difficulty")
        if req.heroism_4d6:
            rules.spend_heroism(ch.sheet.get("heroism", 0), 1, "rolling 4d6 (AS-H1)", field="heroism_4d6")
        return spec, automatic

    def _retry_improved(self, ch: CharacterState, req: m.TestRequest, spec: TestSpec, ctx: OperationContext) -> bool:
        """AS-T4: read the failed test named by `retry_of`."""
        previous = ctx.get_log_entry(req.retry_of)
        if (not previous or previous.get("kind") != "test" or previous.get("ruleset") != RULESET
                or previous.get("character_id") != ch.id):
            raise RuleError(f"{req.retry_of!r} is not a test of this character", field="retry_of")
        if previous.get("skill_value") is None:
            raise RuleError(f"{req.retry_of!r} is not a rolled skill test", field="retry_of")
        prev = PreviousTest(previous["skill"], previous["skill_value"], previous.get("modifier", 0),
                            bool(previous.get("success")))
        return rules.retry_improved(prev, spec, improved=req.improved)

    def test(self, ch: CharacterState, req: m.TestRequest, ctx: OperationContext) -> Outcome:
        spec, automatic = self._prepare(ch, req, ctx)
        extra = {"difficulty": req.difficulty, "retry_of": req.retry_of, "improved": req.improved, "rerolls": None}
        if automatic:  # AS-T2: "réussite automatique", no test at all
            result = TestResult(spec, (), None, None, None, None, True, None, "success")
            body = self._body(ch, result, {}, **extra)
            body["automatic"] = "difficulty"
            return Outcome("test", body, ch.id)
        if req.retry_of is not None and not self._retry_improved(ch, req, spec, ctx):
            result = rules.automatic_failure(spec)
            body = self._body(ch, result, {}, **extra)
            body["automatic"] = "retry_without_improvement"
            return Outcome("test", body, ch.id)
        return self._roll(ch, spec, ctx, cost=1 if spec.heroism_4d6 else 0, extra=extra)

    def _roll(self, ch: CharacterState, spec: TestSpec, ctx: OperationContext, *, cost: int,
              extra: dict[str, Any]) -> Outcome:
        sheet, effects = ch.sheet, {}
        if cost:
            sheet, effects = heroism_effect(ch.sheet, cost, "this test")
        result = rules.roll_test(spec, ctx.dice)
        body = self._body(ch, result, effects, **extra)
        return Outcome("test", body, ch.id, {ch.id: sheet} if cost else {})

    def _body(self, ch: CharacterState, result: TestResult, effects: dict, **extra: Any) -> dict[str, Any]:
        return test_body(ch, RULESET, natural=result.natural, score=result.score, target=result.target,
                         outcome=result.outcome, degree=result.degree, effects=effects,
                         **result_fields(result), **extra)

    def odds(self, ch: CharacterState, req: m.TestRequest, ctx: OperationContext) -> Odds:
        spec, automatic = self._prepare(ch, req, ctx)
        zero = dict.fromkeys(("super_critical_success", "super_critical_failure"), 0)
        if automatic:
            out = {"success": 1, "failure": 0, "critical_success": 0, "critical_failure": 0}
            return Odds({k: Fraction(v) for k, v in {**out, **zero}.items()})
        if req.retry_of is not None and not self._retry_improved(ch, req, spec, ctx):
            out = {"success": 0, "failure": 1, "critical_success": 0, "critical_failure": 0}
            return Odds({k: Fraction(v) for k, v in {**out, **zero}.items()})
        outcomes, degrees = odds_rules.odds_of_test(spec)
        extra = {"degree": {d: degrees[d] for d in DEGREES if d in degrees}} if degrees else {}
        return Odds({**{k: Fraction(v) for k, v in zero.items()}, **outcomes}, extra)


ADAPTER = AsgardAdapter()
