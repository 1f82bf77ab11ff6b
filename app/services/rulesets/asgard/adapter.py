"""The `asgard` adapter: pydantic bodies in, pure rules (`app.rules.asgard`) called, Outcome out."""
from __future__ import annotations

from fractions import Fraction
from typing import Any

from app.models.rulesets import asgard as m
from app.rules import asgard as rules
from app.rules.asgard import contests
from app.rules.asgard import odds as odds_rules
from app.rules.asgard.core import (
    AUTOMATIC,
    CLOSE_SKILL_PENALTY,
    DEGREES,
    DIFFICULTIES,
    RULESET,
    STANDARD_SKILLS,
    TAKE_11,
    TIERS,
    PreviousTest,
    TestResult,
    TestSpec,
)
from app.rules.dice import TableDice
from app.rules.errors import RuleError
from app.services.rulesets.asgard.actions import ACTIONS
from app.services.rulesets.asgard.common import (
    Character,
    Context,
    check_take_11,
    heroism_effect,
    result_fields,
    spec_for,
    summary,
)
from app.services.rulesets.base import (
    Confrontations,
    GroupTests,
    Odds,
    Outcome,
    Rerolls,
    RulesetAdapter,
    RulesetDescription,
    test_body,
)


class AsgardDescription(RulesetDescription):
    dice: str
    skills: list[str]
    degrees: dict[str, int | None]
    tiers: list[str]
    close_skill_penalty: int
    take_11: int
    automatic_results: dict[str, str]
    heroism_spends: dict[str, dict[str, Any]]
    actions: list[str]


class AsgardAdapter(RulesetAdapter[m.Sheet, m.Options], Rerolls[m.RerollRequest],
                    Confrontations[m.OpposedRequest], GroupTests[m.GroupRequest]):
    id = RULESET
    title = "Asgard (Clé en main 3d6)"
    TestRequest = m.TestRequest
    actions = ACTIONS

    # --- catalogue and sheets -------------------------------------------------
    def describe(self) -> AsgardDescription:
        return AsgardDescription.model_validate({
            "id": self.id,
            "title": self.title,
            "dice": "3d6 + skill (4d6 with a heroism point)",
            "stats": list(STANDARD_SKILLS),  # an Asgard test names a skill
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
        })

    def normalize_sheet(self, raw: dict[str, Any], *, kind: str, gm_override: bool = False) -> dict[str, Any]:
        sheet = self.Sheet.model_validate(raw)
        if kind == "pc" and sheet.tier is not None:
            raise RuleError("only NPCs have a tier (AS-S3)", field="sheet.tier")
        return self.dump_sheet(sheet)

    def derived(self, sheet: m.Sheet) -> dict[str, Any]:
        return {
            "mal_en_point": sheet.vitality <= 0,
            "wounds": max(0, sheet.vitality_max - sheet.vitality),
            "skills": {**dict.fromkeys(STANDARD_SKILLS, 0), **sheet.skills},
            "weapons": [
                {"name": w.name, "damage": f"{w.damage_dice}d6", "ranged": w.ranged}
                for w in sheet.weapons
            ],
        }

    # --- tests ----------------------------------------------------------------
    def _prepare(self, ch: Character, req: m.TestRequest, ctx: Context) -> tuple[TestSpec, bool]:
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
            rules.spend_heroism(ch.sheet.heroism, 1, "rolling 4d6 (AS-H1)", field="heroism_4d6")
        return spec, automatic

    def _retry_improved(self, ch: Character, req: m.TestRequest, spec: TestSpec, ctx: Context) -> bool:
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

    def test(self, ch: Character, req: m.TestRequest, ctx: Context) -> Outcome:
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

    def _roll(self, ch: Character, spec: TestSpec, ctx: Context, *, cost: int,
              extra: dict[str, Any]) -> Outcome:
        sheet, effects = ch.sheet, {}
        if cost:
            sheet, effects = heroism_effect(ch.sheet, cost, "this test")
        result = rules.roll_test(spec, ctx.dice)
        body = self._body(ch, result, effects, **extra)
        return Outcome("test", body, ch.id, {ch.id: sheet} if cost else {})

    def _body(self, ch: Character, result: TestResult, effects: dict, **extra: Any) -> dict[str, Any]:
        return test_body(ch, RULESET, natural=result.natural, score=result.score, target=result.target,
                         outcome=result.outcome, degree=result.degree, effects=effects,
                         **result_fields(result), **extra)

    def odds(self, ch: Character, req: m.TestRequest, ctx: Context) -> Odds:
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

    # --- AS-H2 reroll ---------------------------------------------------------
    def reroll(self, ch: Character, previous: dict[str, Any], req: m.RerollRequest, ctx: Context) -> Outcome:
        """AS-H2: spend 1 heroism to cancel a test just made and roll it again (same test)."""
        if previous.get("ruleset") != RULESET or not previous.get("dice"):
            raise RuleError("only a rolled asgard test can be rerolled (not a take 11 or an automatic result "
                            "without dice)", field="test_id")
        heroism_4d6 = req.heroism_4d6
        spec = TestSpec(previous["skill"], previous["skill_value"], previous.get("modifier", 0),
                        previous.get("base_target"), heroism_4d6, bool(previous.get("close_skill")))
        cost = 2 if heroism_4d6 else 1
        rules.spend_heroism(ch.sheet.heroism, cost, "rerolling a test (AS-H2)", field="heroism")
        extra = {"difficulty": previous.get("difficulty"), "retry_of": previous.get("retry_of"),
                 "improved": previous.get("improved", False), "rerolls": previous.get("id")}
        outcome = self._roll(ch, spec, ctx, cost=cost, extra=extra)
        outcome.cancels = previous["id"]
        return outcome

    # --- AS-T9 opposition -----------------------------------------------------
    def _side_spec(self, ch: Character, side: m.Side, ctx: Context, name: str) -> TestSpec:
        if side.take_11:
            check_take_11(ch, ctx, heroism_4d6=side.heroism_4d6, field=f"{name}.take_11")
        if side.heroism_4d6:
            rules.spend_heroism(ch.sheet.heroism, 1, f"{name}: rolling 4d6 (AS-H1)",
                                field=f"{name}.heroism_4d6")
        return spec_for(ch, side.skill, target=None, modifier=side.modifier, heroism_4d6=side.heroism_4d6,
                        close_skill=side.close_skill, take_11=side.take_11, confrontation=True,
                        field=f"{name}.skill")

    def opposed(self, a: Character, b: Character, req: m.OpposedRequest, ctx: Context) -> Outcome:
        """AS-T9: a's test against b's; table dice are consumed a's then b's."""
        if a.id == b.id:
            raise RuleError("a character does not oppose itself", field="b.character_id")
        specs = {"a": self._side_spec(a, req.a, ctx, "a"), "b": self._side_spec(b, req.b, ctx, "b")}
        results, rolls = {}, []
        for name, ch in (("a", a), ("b", b)):
            mark = ctx.dice.mark()
            results[name] = rules.roll_test(specs[name], ctx.dice)
            rolls += [{**r.to_dict(), "side": name, "character_id": ch.id} for r in ctx.dice.since(mark)]
        contest = contests.oppose(results["a"], results["b"])
        body = {"kind": "opposed", "ruleset": RULESET, "character_id": None, "rolls": rolls,
                "winner": contest.winner, "decided_by": contest.decided_by,
                "winner_character_id": (a if contest.winner == "a" else b).id,
                "margin": abs(results["a"].score - results["b"].score)}
        sheets = {}
        for name, ch in (("a", a), ("b", b)):
            effects = {}
            if specs[name].heroism_4d6:
                sheets[ch.id], effects = heroism_effect(ch.sheet, 1, "rolling 4d6")
            body[name] = {"character_id": ch.id, **summary(results[name]), "effects": effects}
        return Outcome("opposed", body, None, sheets)

    # --- AS-T6 cooperation ----------------------------------------------------
    def group(self, chars: list[Character], req: m.GroupRequest, ctx: Context) -> Outcome:
        """AS-T6: every participant tests the skill; the best leads, +1/−1 for each other."""
        target = None
        if req.difficulty == AUTOMATIC:
            raise RuleError("a `réussite automatique` needs no test (AS-T2)", field="difficulty")
        target = rules.difficulty_target(req.difficulty, req.target)
        specs = []
        for i, (ch, p) in enumerate(zip(chars, req.participants)):
            field = f"participants.{i}"
            if p.take_11:
                check_take_11(ch, ctx, heroism_4d6=p.heroism_4d6, field=f"{field}.take_11")
            if p.heroism_4d6:
                rules.spend_heroism(ch.sheet.heroism, 1, f"{ch.name}: rolling 4d6 (AS-H1)",
                                    field=f"{field}.heroism_4d6")
            specs.append(spec_for(ch, p.skill or req.skill, target=target, modifier=p.modifier,
                                  heroism_4d6=p.heroism_4d6, close_skill=p.close_skill, take_11=p.take_11,
                                  field=f"{field}.skill"))
        results, rolls = [], []
        for i, (ch, p, spec) in enumerate(zip(chars, req.participants, specs)):
            source = TableDice(p.dice) if p.dice is not None else ctx.dice
            mark = source.mark()
            results.append(rules.roll_test(spec, source))
            if p.dice is not None:
                source.finish()
            rolls += [{**r.to_dict(), "participant": i, "character_id": ch.id} for r in source.since(mark)]
        coop = contests.cooperate(tuple(results), modifier=req.modifier)
        sheets, participants = {}, []
        for i, (ch, result) in enumerate(zip(chars, results)):
            effects = {}
            if result.spec.heroism_4d6:
                sheets[ch.id], effects = heroism_effect(ch.sheet, 1, "rolling 4d6")
            participants.append({"character_id": ch.id, **summary(result), "leader": i == coop.leader,
                                 "adjustment": coop.adjustments[i], "effects": effects})
        body = {"kind": "group", "mode": "cooperation", "ruleset": RULESET, "character_id": None, "rolls": rolls,
                "skill": rules.skill_key(req.skill), "difficulty": req.difficulty, "modifier": req.modifier,
                "leader": coop.leader, "leader_character_id": chars[coop.leader].id,
                "participants": participants, "adjustment": sum(coop.adjustments),
                "score": coop.score, "target": coop.target, "outcome": coop.outcome, "success": coop.success,
                "degree": coop.degree}
        return Outcome("group", body, None, sheets)


ADAPTER = AsgardAdapter()
