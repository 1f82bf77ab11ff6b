"""The `asgard` adapter: pydantic bodies in, pure rules (`app.rulesets.asgard.rules`) called, Outcome out."""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Any, TypeGuard

from app.kit.errors import Conflict
from app.rules.dice import TableDice
from app.rules.errors import RuleError
from app.rulesets.asgard import results, rules
from app.rulesets.asgard import schemas as m
from app.rulesets.asgard.actions import ACTIONS, vitality
from app.rulesets.asgard.common import (
    Character,
    Context,
    check_take_11,
    heroism_effect,
    logged_spec,
    replayed,
    result_fields,
    retry_figures,
    spec_for,
    summary,
)
from app.rulesets.asgard.rules import contests
from app.rulesets.asgard.rules import odds as odds_rules
from app.rulesets.asgard.rules.core import (
    AUTOMATIC,
    CLOSE_SKILL_PENALTY,
    DEGREES,
    DIFFICULTIES,
    RULESET,
    STANDARD_SKILLS,
    TAKE_11,
    TIERS,
    TestResult,
    TestSpec,
)
from app.rulesets.contract.adapter import (
    OUTCOMES,
    Confrontations,
    GroupTests,
    Odds,
    Outcome,
    Rerolls,
    RulesetAdapter,
    RulesetDescription,
    test_body,
)

MAX_RETRY_CHAIN = 100  # AS-T4: how far back a retry's earlier attempts are read


def _own_test(entry: dict[str, Any] | None, ch: Character) -> TypeGuard[dict[str, Any]]:
    if not entry:
        return False
    return (
        entry.get("kind") == "test"
        and entry.get("ruleset") == RULESET
        and entry.get("character_id") == ch.id
        and entry.get("skill_value") is not None
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


class AsgardAdapter(
    RulesetAdapter[m.Sheet, m.Options],
    Rerolls[m.RerollRequest],
    Confrontations[m.OpposedRequest],
    GroupTests[m.GroupRequest],
):
    id = RULESET
    title = "Asgard (Clé en main 3d6)"
    TestRequest = m.TestRequest
    OddsRequest = m.OddsRequest
    actions = ACTIONS

    # --- catalogue and sheets -------------------------------------------------
    def describe(self) -> AsgardDescription:
        return AsgardDescription.model_validate(
            {
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
                    "reroll": {
                        "cost": 1,
                        "rule": "AS-H2",
                        "how": "POST /v1/characters/{id}/tests/{test_id}/reroll; in an encounter, action "
                        "heroism_reroll",
                    },
                    "heroic_effect": {"cost": 1, "rule": "AS-H3", "how": "action heroic_effect"},
                    "cancel_damage": {"cost": 2, "rule": "AS-H4", "how": "action cancel_damage (damage_id: the blow)"},
                    "protect_ally": {"cost": 1, "rule": "AS-H5", "how": "action protect_ally"},
                },
                "outcomes": ["success", "failure", "critical_success", "critical_failure"],
                "actions": sorted(self.actions),
            }
        )

    def normalize_sheet(self, raw: dict[str, Any], *, kind: str, gm_override: bool = False) -> dict[str, Any]:
        sheet = self.Sheet.model_validate(raw)
        if kind == "pc" and sheet.tier is not None:
            raise RuleError("only NPCs have a tier (AS-S3)", field="sheet.tier")
        return self.dump_sheet(sheet)

    def derived(self, sheet: m.Sheet) -> dict[str, Any]:
        return {
            "mal_en_point": vitality(sheet) <= 0,
            "wounds": max(0, sheet.vitality_max - vitality(sheet)),
            "skills": {**dict.fromkeys(STANDARD_SKILLS, 0), **sheet.skills},
            "weapons": [{"name": w.name, "damage": f"{w.damage_dice}d6", "ranged": w.ranged} for w in sheet.weapons],
        }

    # --- tests ----------------------------------------------------------------
    def _prepare(self, ch: Character, req: m.TestRequest, ctx: Context) -> tuple[TestSpec, bool]:
        """Validate a test request; returns (spec, automatic difficulty)."""
        automatic = req.difficulty == AUTOMATIC
        target = None if automatic else rules.difficulty_target(req.difficulty, req.target)
        spec = spec_for(
            ch,
            req.skill,
            target=target,
            modifier=req.modifier,
            heroism_4d6=req.heroism_4d6,
            close_skill=req.close_skill,
            take_11=req.take_11,
        )
        if req.take_11:
            check_take_11(ch, ctx, heroism_4d6=req.heroism_4d6)
        if automatic and (req.heroism_4d6 or req.take_11 or req.retry_of):
            raise RuleError("a `réussite automatique` needs no test (AS-T2): nothing to roll", field="difficulty")
        if req.heroism_4d6:
            rules.spend_heroism(ch.sheet.heroism, 1, "rolling 4d6 (AS-H1)", field="heroism_4d6")
        return spec, automatic

    def _retry_odds(self, ch: Character, req: m.TestRequest, spec: TestSpec, ctx: Context) -> odds_rules.RetryOdds:
        """AS-T4: the exact chances of the failed test named by `retry_of` (and of the attempts it
        retried in turn: the best of them is the bar) against the retry's."""
        assert req.retry_of is not None  # asked for a retry only
        previous = ctx.get_log_entry(req.retry_of)
        if not _own_test(previous, ch):
            raise RuleError(f"{req.retry_of!r} is not a test of this character", field="retry_of", code="unknown_id")
        failed = logged_spec(previous)
        rules.check_retry_of(failed, bool(previous.get("success")), spec)
        attempts, seen, entry = [failed], {previous["id"]}, previous
        while (earlier := entry.get("retry_of")) and earlier not in seen and len(attempts) < MAX_RETRY_CHAIN:
            seen.add(earlier)
            found = ctx.get_log_entry(earlier)
            if not _own_test(found, ch):
                break
            entry = found
            attempts.append(logged_spec(entry))
        return odds_rules.retry_odds(attempts, spec)

    def test(self, ch: Character, req: m.TestRequest, ctx: Context) -> Outcome:
        spec, automatic = self._prepare(ch, req, ctx)
        retry = self._retry_odds(ch, req, spec, ctx) if req.retry_of is not None else None
        extra = {
            "difficulty": req.difficulty,
            "retry_of": req.retry_of,
            "improved": bool(retry and retry.improved),
            "retry_odds": retry_figures(retry),
            "rerolls": None,
        }
        if automatic:  # AS-T2: "réussite automatique", no test at all
            result = TestResult(spec, (), None, None, None, None, True, None, "success")
            return Outcome(self._body(ch, result, {}, **extra, automatic="difficulty"), ch.id)
        if retry is not None and not retry.improved:
            result = rules.automatic_failure(spec)
            return Outcome(self._body(ch, result, {}, **extra, automatic="retry_without_improvement"), ch.id)
        return self._roll(ch, spec, ctx, cost=1 if spec.heroism_4d6 else 0, extra=extra)

    def _roll(self, ch: Character, spec: TestSpec, ctx: Context, *, cost: int, extra: dict[str, Any]) -> Outcome:
        sheet = ch.sheet
        effects: dict[str, Any] = {}
        if cost:
            sheet, effects = heroism_effect(ch.sheet, cost, "this test")
        result = rules.roll_test(spec, ctx.dice)
        body = self._body(ch, result, effects, **extra)
        return Outcome(body, ch.id, {ch.id: sheet} if cost else {})

    def _body(self, ch: Character, result: TestResult, effects: dict, **extra: Any) -> results.AsgardTestResult:
        return test_body(
            results.AsgardTestResult,
            ch,
            RULESET,
            natural=result.natural,
            score=result.score,
            target=result.target,
            outcome=result.outcome,
            degree=result.degree,
            effects=effects,
            **{**result_fields(result), **extra},  # `automatic`: the rule's, unless no test was made (AS-T2, AS-T4)
        )

    def odds(self, ch: Character, req: m.TestRequest, ctx: Context) -> Odds:
        spec, automatic = self._prepare(ch, req, ctx)
        zero = dict.fromkeys(("super_critical_success", "super_critical_failure"), 0)
        if automatic:
            out = {"success": 1, "failure": 0, "critical_success": 0, "critical_failure": 0}
            return Odds({k: Fraction(v) for k, v in {**out, **zero}.items()})
        if req.retry_of is not None and not self._retry_odds(ch, req, spec, ctx).improved:
            out = {"success": 0, "failure": 1, "critical_success": 0, "critical_failure": 0}
            return Odds({k: Fraction(v) for k, v in {**out, **zero}.items()})
        outcomes, degrees = _odds_of_test(spec)
        extra = {"degree": {d: degrees[d] for d in DEGREES if d in degrees}} if degrees else {}
        return Odds({**{k: Fraction(v) for k, v in zero.items()}, **outcomes}, extra)

    # --- AS-H2 reroll ---------------------------------------------------------
    def reroll(self, ch: Character, previous: dict[str, Any], req: m.RerollRequest, ctx: Context) -> Outcome:
        """AS-H2: 1 heroism cancels the character's latest entry (the service checked it is) and
        rolls it again: a test, this character's side of an opposition (the other side stands), or
        a whole cooperation. The same test with the same dice count: a 4d6 stays 4d6, not paid again."""
        if previous.get("ruleset") != RULESET:
            raise RuleError("only an asgard test can be rerolled", field="test_id")
        if previous.get("rerolls"):
            raise Conflict(
                f"{previous['id']} is the reroll of {previous['rerolls']}: AS-H2 rolls a test again once",
                field="test_id",
                extra={"rerolls": previous["rerolls"]},
                code="already_rerolled",
            )
        kind = previous.get("kind")
        if kind == "test":
            outcome = self._reroll_test(ch, previous, req, ctx)
        elif kind == "opposed":
            outcome = self._reroll_opposed(ch, previous, req, ctx)
        elif kind == "group":
            outcome = self._reroll_group(ch, previous, req, ctx)
        else:
            raise RuleError(
                f"AS-H2 rolls again a test, an opposition or a cooperation, not a {kind!r} entry", field="test_id"
            )
        outcome.cancels = previous["id"]
        return outcome

    @staticmethod
    def _reroll_dice(logged: dict[str, Any], req: m.RerollRequest) -> tuple[bool, int]:
        """AS-H2 with AS-H1: (4d6 again?, heroism cost): a 4d6 test keeps its 4th die for free;
        `heroism_4d6` adds one to a 3d6 test for 1 more point."""
        had = bool(logged.get("heroism_4d6"))
        if req.heroism_4d6 and logged.get("take_11"):
            raise RuleError(
                "an NPC taking 11 rolls no dice: heroism_4d6 does not apply",
                field="heroism_4d6",
                code="take_11_refused",
            )
        return had or req.heroism_4d6, 2 if req.heroism_4d6 and not had else 1

    def _reroll_test(self, ch: Character, previous: dict[str, Any], req: m.RerollRequest, ctx: Context) -> Outcome:
        if previous.get("take_11") or not previous.get("dice"):
            raise RuleError(
                "only a rolled asgard test can be rerolled (not a take 11 or an automatic result without dice)",
                field="test_id",
            )
        heroism_4d6, cost = self._reroll_dice(previous, req)
        rules.spend_heroism(ch.sheet.heroism, cost, "rerolling a test (AS-H2)", field="heroism")
        extra = {
            "difficulty": previous.get("difficulty"),
            "retry_of": previous.get("retry_of"),
            "improved": previous.get("improved", False),
            "retry_odds": previous.get("retry_odds"),
            "rerolls": previous.get("id"),
        }
        spec = logged_spec(previous, heroism_4d6=heroism_4d6)
        outcome = self._roll(ch, spec, ctx, cost=cost, extra=extra)
        # the odds route's figures for the test as it is rolled again (counted with its odds)
        outcomes = _odds_of_test(spec)[0]
        outcome.odds = {name: Fraction(outcomes.get(name, 0)) for name in OUTCOMES}
        return outcome

    def _reroll_opposed(self, ch: Character, previous: dict[str, Any], req: m.RerollRequest, ctx: Context) -> Outcome:
        side = next((n for n in ("a", "b") if previous[n]["character_id"] == ch.id), None)
        if side is None:
            raise RuleError("this character is not a side of that opposition", field="test_id")
        logged, other = previous[side], "b" if side == "a" else "a"
        if logged.get("take_11"):
            raise RuleError("this side took 11 (AS-T8): no dice to roll again", field="test_id")
        heroism_4d6, cost = self._reroll_dice(logged, req)
        sheet, effects = heroism_effect(ch.sheet, cost, "rolling a test again (AS-H2)", field="heroism")
        spec = logged_spec(logged, confrontation=True, heroism_4d6=heroism_4d6)
        results = {other: replayed(previous[other], confrontation=True)}
        results[side], rolls = self._roll_side(spec, ctx, side, ch.id)
        ids = {n: previous[n]["character_id"] for n in ("a", "b")}
        body = self._opposed_body(
            ids, results, rolls, {side: effects, other: {}}, rerolls=previous["id"], rerolled_for=ch.id
        )
        return Outcome(body, None, {ch.id: sheet})

    def _reroll_group(self, ch: Character, previous: dict[str, Any], req: m.RerollRequest, ctx: Context) -> Outcome:
        participants = previous["participants"]
        mine = next((i for i, p in enumerate(participants) if p["character_id"] == ch.id), None)
        if mine is None:
            raise RuleError("this character did not take part in that cooperation", field="test_id")
        heroism_4d6, cost = self._reroll_dice(participants[mine], req)
        sheet, spent = heroism_effect(ch.sheet, cost, "rolling the group test again (AS-H2)", field="heroism")
        results, rolls = [], []
        for i, p in enumerate(participants):
            spec = logged_spec(p, heroism_4d6=heroism_4d6 if i == mine else None)
            mark = ctx.dice.mark()
            results.append(rules.roll_test(spec, ctx.dice))
            rolls += [
                {**r.to_dict(), "participant": i, "character_id": p["character_id"]} for r in ctx.dice.since(mark)
            ]
        effects = [spent if i == mine else {} for i in range(len(participants))]
        body = self._group_body(
            [p["character_id"] for p in participants],
            previous["skill"],
            previous.get("difficulty"),
            previous.get("modifier", 0),
            results,
            rolls,
            effects,
            rerolls=previous["id"],
            rerolled_for=ch.id,
        )
        return Outcome(body, None, {ch.id: sheet})

    # --- AS-T9 opposition -----------------------------------------------------
    def _side_spec(self, ch: Character, side: m.Side, ctx: Context, name: str) -> TestSpec:
        if side.take_11:
            check_take_11(ch, ctx, heroism_4d6=side.heroism_4d6, field=f"{name}.take_11")
        if side.heroism_4d6:
            rules.spend_heroism(ch.sheet.heroism, 1, f"{name}: rolling 4d6 (AS-H1)", field=f"{name}.heroism_4d6")
        return spec_for(
            ch,
            side.skill,
            target=None,
            modifier=side.modifier,
            heroism_4d6=side.heroism_4d6,
            close_skill=side.close_skill,
            take_11=side.take_11,
            confrontation=True,
            field=f"{name}.skill",
        )

    @staticmethod
    def _roll_side(spec: TestSpec, ctx: Context, name: str, character_id: str) -> tuple[TestResult, list[dict]]:
        mark = ctx.dice.mark()
        result = rules.roll_test(spec, ctx.dice)
        return result, [{**r.to_dict(), "side": name, "character_id": character_id} for r in ctx.dice.since(mark)]

    @staticmethod
    def _opposed_body(
        ids: dict[str, str],
        tests: dict[str, TestResult],
        rolls: list[dict],
        effects: dict[str, dict],
        *,
        rerolls: str | None = None,
        rerolled_for: str | None = None,
    ) -> results.AsgardOpposedResult:
        contest = contests.oppose(tests["a"], tests["b"])
        scores = tests["a"].score, tests["b"].score
        assert scores[0] is not None and scores[1] is not None  # both sides roll their dice
        return results.AsgardOpposedResult.of(
            kind="opposed",
            ruleset=RULESET,
            character_id=None,
            rolls=rolls,
            winner=contest.winner,
            decided_by=contest.decided_by,
            winner_character_id=ids[contest.winner],
            margin=abs(scores[0] - scores[1]),
            rerolls=rerolls,
            rerolled_for=rerolled_for,
            **{n: {"character_id": ids[n], **summary(tests[n]), "effects": effects[n]} for n in ("a", "b")},
        )

    def opposed(self, a: Character, b: Character, req: m.OpposedRequest, ctx: Context) -> Outcome:
        """AS-T9: a's test against b's; table dice are consumed a's then b's."""
        if a.id == b.id:
            raise RuleError("a character does not oppose itself", field="b.character_id", code="self_target")
        specs = {"a": self._side_spec(a, req.a, ctx, "a"), "b": self._side_spec(b, req.b, ctx, "b")}
        results, rolls = {}, []
        for name, ch in (("a", a), ("b", b)):
            results[name], side_rolls = self._roll_side(specs[name], ctx, name, ch.id)
            rolls += side_rolls
        sheets: dict[str, m.Sheet] = {}
        effects: dict[str, dict[str, Any]] = {}
        for name, ch in (("a", a), ("b", b)):
            effects[name] = {}
            if specs[name].heroism_4d6:
                sheets[ch.id], effects[name] = heroism_effect(ch.sheet, 1, "rolling 4d6")
        body = self._opposed_body({"a": a.id, "b": b.id}, results, rolls, effects)
        return Outcome(body, None, sheets)

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
                rules.spend_heroism(
                    ch.sheet.heroism, 1, f"{ch.name}: rolling 4d6 (AS-H1)", field=f"{field}.heroism_4d6"
                )
            specs.append(
                spec_for(
                    ch,
                    p.skill or req.skill,
                    target=target,
                    modifier=p.modifier,
                    heroism_4d6=p.heroism_4d6,
                    close_skill=p.close_skill,
                    take_11=p.take_11,
                    field=f"{field}.skill",
                )
            )
        results, rolls = [], []
        for i, (ch, p, spec) in enumerate(zip(chars, req.participants, specs)):
            source = TableDice(p.dice) if p.dice is not None else ctx.dice
            mark = source.mark()
            results.append(rules.roll_test(spec, source))
            if p.dice is not None:
                source.finish()
            rolls += [{**r.to_dict(), "participant": i, "character_id": ch.id} for r in source.since(mark)]
        sheets, effects = {}, []
        for ch, result in zip(chars, results):
            spent: dict[str, Any] = {}
            if result.spec.heroism_4d6:
                sheets[ch.id], spent = heroism_effect(ch.sheet, 1, "rolling 4d6")
            effects.append(spent)
        body = self._group_body(
            [c.id for c in chars], rules.skill_key(req.skill), req.difficulty, req.modifier, results, rolls, effects
        )
        return Outcome(body, None, sheets)

    @staticmethod
    def _group_body(
        ids: list[str],
        skill: str,
        difficulty: str | None,
        modifier: int,
        tests: list[TestResult],
        rolls: list[dict],
        effects: list[dict],
        *,
        rerolls: str | None = None,
        rerolled_for: str | None = None,
    ) -> results.AsgardGroupResult:
        coop = contests.cooperate(tuple(tests), modifier=modifier)
        participants = [
            {
                "character_id": cid,
                **summary(result),
                "leader": i == coop.leader,
                "adjustment": coop.adjustments[i],
                "effects": effects[i],
            }
            for i, (cid, result) in enumerate(zip(ids, tests))
        ]
        return results.AsgardGroupResult.of(
            kind="group",
            mode="cooperation",
            ruleset=RULESET,
            character_id=None,
            rolls=rolls,
            skill=skill,
            difficulty=difficulty,
            modifier=modifier,
            leader=coop.leader,
            leader_character_id=ids[coop.leader],
            participants=participants,
            adjustment=sum(coop.adjustments),
            score=coop.score,
            target=coop.target,
            outcome=coop.outcome,
            success=coop.success,
            degree=coop.degree,
            rerolls=rerolls,
            rerolled_for=rerolled_for,
        )


# Every test computes its exact odds (p_success); the pure computation is cached
# by its hashable inputs (frozen specs, ints, strings). Its results are shared: never changed.
_odds_of_test = lru_cache(maxsize=4096)(odds_rules.odds_of_test)


ADAPTER = AsgardAdapter()
