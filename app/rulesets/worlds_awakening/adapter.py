"""Worlds Awakening adapter: sheets, tests (with WA-T5 pending ±2 and WA-T6 challenges), odds."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any, ClassVar

from app.rules.errors import RuleError
from app.rulesets.contract.adapter import (
    OUTCOMES,
    Action,
    CharacterState,
    Odds,
    OperationContext,
    Outcome,
    RulesetAdapter,
    RulesetDescription,
    test_body,
)
from app.rulesets.worlds_awakening import results
from app.rulesets.worlds_awakening import schemas as models
from app.rulesets.worlds_awakening.rules import core as rules

RULESET = "worlds-awakening"
Character = CharacterState[models.Sheet]
Context = OperationContext[models.Options]


def _spec(sheet: models.Sheet, req: models.TestRequest) -> rules.TestSpec:
    """WA-T1, WA-T2, WA-T4, WA-T5: the spec of a test on this sheet (pending ±2 included)."""
    return rules.TestSpec(
        stat_value=sheet.stats[req.stat],
        threshold=rules.threshold(req.difficulty, req.target),
        cha=sheet.stats["CHA"],
        modifier=req.modifier,
        pending=sheet.pending.get(req.stat, 0),  # 0: no pending ±2 on this characteristic
    )


def _challenge(sheet: models.Sheet, name: str, field: str = "for_challenge") -> rules.Challenge:
    stored = sheet.challenges.get(name)
    if stored is None:
        known = ", ".join(sheet.challenges) or "none"
        raise RuleError(
            f"no challenge {name!r} on this character (challenges: {known})", field=field, code="unknown_name"
        )
    return rules.Challenge(**stored.model_dump())


# --- GM actions (WA-T5 pending ±2, WA-T6 challenges): stored in the sheet ------------------


def _action(
    ch: Character, sheet: models.Sheet, model: type[results.WorldsAwakeningAction], type_: str, **detail: Any
) -> Outcome:
    body = model.of(kind="action", type=type_, ruleset=RULESET, character_id=ch.id, **detail)
    return Outcome(body, ch.id, {ch.id: sheet})


def pending_modifier(ch: Character, req: models.PendingModifierAction, ctx: Context) -> Outcome:
    """WA-T5: record a pending ±2 on a characteristic (0 clears it)."""
    sheet = ch.sheet.model_copy(deep=True)
    before = sheet.pending.get(req.stat, 0)
    if req.value:
        sheet.pending[req.stat] = req.value
    else:
        sheet.pending.pop(req.stat, None)
    return _action(
        ch, sheet, results.WorldsAwakeningPendingModifierResult, req.type, stat=req.stat, before=before, after=req.value
    )


def start_challenge(ch: Character, req: models.ChallengeAction, ctx: Context) -> Outcome:
    """WA-T6: start a complex action on the character."""
    sheet = ch.sheet.model_copy(deep=True)
    if req.name in sheet.challenges:
        raise RuleError(f"challenge {req.name!r} already exists (remove it first)", field="name", code="named_twice")
    c = rules.new_challenge(req.name, req.successes_needed, req.failures_allowed).to_dict()
    sheet.challenges[req.name] = models.Challenge.model_validate(c)
    return _action(ch, sheet, results.WorldsAwakeningChallengeResult, req.type, challenge=c)


def remove_challenge(ch: Character, req: models.ChallengeRemoveAction, ctx: Context) -> Outcome:
    """WA-T6: remove a challenge from the character."""
    sheet = ch.sheet.model_copy(deep=True)
    removed = _challenge(sheet, req.name, "name").to_dict()
    del sheet.challenges[req.name]
    return _action(ch, sheet, results.WorldsAwakeningChallengeRemoveResult, req.type, challenge=removed, removed=True)


class WorldsAwakeningDescription(RulesetDescription):
    level_range: dict[str, int]
    dice: list[str]
    test: dict[str, Any]
    criticals: dict[str, dict[str, str]]
    derived: dict[str, str]
    actions: dict[str, str]


class WorldsAwakeningAdapter(RulesetAdapter[models.Sheet, models.Options]):
    id = RULESET
    title = "Worlds Awakening (d20, Règles de Base)"
    TestRequest = models.TestRequest
    OddsRequest = models.OddsRequest
    actions: ClassVar[Mapping[str, Action]] = {
        "pending_modifier": Action(models.PendingModifierAction, pending_modifier, gm_only=True),
        "challenge": Action(models.ChallengeAction, start_challenge, gm_only=True),
        "challenge_remove": Action(models.ChallengeRemoveAction, remove_challenge, gm_only=True),
    }

    def describe(self) -> WorldsAwakeningDescription:
        return WorldsAwakeningDescription.model_validate(
            {
                "id": self.id,
                "title": self.title,
                "stats": list(rules.STATS),
                "level_range": {"min": 1, "max": rules.MAX_LEVEL},
                "dice": ["d4", "d6", "d8", "d10", "d12", "d20"],
                "test": {
                    "die": "d20",
                    "roll_under": False,
                    "score": "d20 + characteristic + modifier + pending",
                    "success": "score >= threshold",
                    "dice_order": ["d20 (test)"],
                },
                "difficulties": {
                    name: {"min": low, "max": high, "default": rules.DEFAULT_THRESHOLDS[name]}
                    for name, (low, high) in rules.DIFFICULTIES.items()
                },
                "outcomes": list(rules.OUTCOMES),
                "criticals": {
                    "failure": {"CHA <= -4": "natural <= 3", "CHA -3/-2": "natural <= 2", "otherwise": "natural 1"},
                    "success": {
                        "CHA >= 6": "natural >= 17",
                        "CHA 4/5": "natural >= 18",
                        "CHA 2/3": "natural >= 19",
                        "otherwise": "natural 20",
                    },
                },
                "derived": {
                    "physical_defense": "10 + CON + level",
                    "magical_defense": "10 + SAG + level",
                    "initiative": "10 + DEX",
                },
                "actions": {
                    "pending_modifier": "GM: {stat, value: 2 | -2 | 0 (clears)}; "
                    "consumed by the next test of that stat",
                    "challenge": "GM: {name, successes_needed, failures_allowed?}; tests with for_challenge advance it",
                    "challenge_remove": "GM: {name}",
                },
            }
        )

    def normalize_sheet(self, raw: dict[str, Any], *, kind: str, gm_override: bool = False) -> dict[str, Any]:
        """WA-S1..S4: validate, fill hp/mp from their maxima; above max needs the GM's override."""
        sheet = self.Sheet.model_validate(raw)
        if not gm_override:
            for pool, value, top in (("hp", sheet.hp, sheet.hp_max), ("mp", sheet.mp, sheet.mp_max)):
                assert value is not None  # filled from its maximum by the model
                if value > top:
                    raise RuleError(f"{pool} {value} is above {pool}_max {top}", field=pool)
        return self.dump_sheet(sheet)

    def derived(self, sheet: models.Sheet) -> dict[str, Any]:
        """WA-S3 defenses and initiative, WA-T4 critical ranges, WA-T5/T6 pending and challenges."""
        stats, level = sheet.stats, sheet.level
        cha = stats["CHA"]
        return {
            "physical_defense": rules.physical_defense(stats["CON"], level),
            "magical_defense": rules.magical_defense(stats["SAG"], level),
            "initiative": rules.initiative(stats["DEX"]),
            "critical_success": {"min_natural": rules.crit_success_min(cha)},
            "critical_failure": {"max_natural": rules.crit_failure_max(cha)},
            "pending": dict(sheet.pending),
            "challenges": {
                name: {
                    **c.model_dump(mode="json"),
                    "remaining_successes": max(0, c.successes_needed - c.successes),
                    "remaining_failures": (
                        None if c.failures_allowed is None else max(0, c.failures_allowed - c.failures)
                    ),
                }
                for name, c in sheet.challenges.items()
            },
        }

    # --- tests ----------------------------------------------------------------
    def test(self, ch: Character, req: models.TestRequest, ctx: Context) -> Outcome:
        """WA-T1..T6: d20 + characteristic vs threshold; consumes a pending ±2, advances a challenge."""
        spec = _spec(ch.sheet, req)
        challenge = _challenge(ch.sheet, req.for_challenge) if req.for_challenge else None
        if challenge is not None and challenge.status != "in_progress":
            raise RuleError(f"challenge {challenge.name!r} is already {challenge.status}", field="for_challenge")
        r = rules.roll_test(spec, ctx.dice)
        sheet = ch.sheet.model_copy(deep=True)
        effects: dict[str, Any] = {}
        consumed = rules.use_pending(sheet.pending, req.stat)  # the same as spec.pending
        if consumed:
            effects["pending_modifier"] = {"stat": req.stat, "value": consumed, "consumed": True}
        challenge_after = None
        if challenge is not None:
            challenge_after = rules.advance(challenge, r.success).to_dict()
            effects["challenge"] = {"before": challenge.to_dict(), "after": challenge_after}
            sheet.challenges[challenge.name] = models.Challenge.model_validate(challenge_after)
        body = test_body(
            results.WorldsAwakeningTestResult,
            ch,
            RULESET,
            natural=r.natural,
            score=r.total,
            target=r.threshold,
            outcome=r.outcome,
            effects=effects,
            stat=req.stat,
            difficulty=req.difficulty,
            modifier=req.modifier,
            pending_modifier=spec.pending,
            challenge=challenge_after,
            critical_range={
                "success_min": rules.crit_success_min(spec.cha),
                "failure_max": rules.crit_failure_max(spec.cha),
            },
        )
        sheets = {ch.id: sheet} if effects else {}
        return Outcome(body, ch.id, sheets)

    def odds(self, ch: Character, req: models.TestRequest, ctx: Context) -> Odds:
        """Exact odds over the 20 faces (WA-T1..T5: the pending ±2 counts, without being consumed)."""
        if req.for_challenge:
            _challenge(ch.sheet, req.for_challenge)
        outcomes, totals = _odds(_spec(ch.sheet, req))
        full = {o: outcomes.get(o, Fraction(0)) for o in OUTCOMES}
        return Odds(outcomes=full, extra={"score": {str(k): p for k, p in totals.items()}})


# Every test computes its exact odds (p_success); the pure computation is cached
# by its hashable inputs (frozen specs, ints, strings). Its results are shared: never changed.
_odds = lru_cache(maxsize=4096)(rules.odds)


ADAPTER = WorldsAwakeningAdapter()
