"""Worlds Awakening adapter: sheets, tests (with WA-T5 pending ±2 and WA-T6 challenges), odds."""
from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

from app.models.rulesets import worlds_awakening as models
from app.rules import worlds_awakening as rules
from app.rules.errors import RuleError
from app.services.rulesets.base import (
    OUTCOMES, CharacterState, Odds, OperationContext, Outcome, RulesetAdapter, test_body,
)

RULESET = "worlds-awakening"


def _spec(sheet: dict[str, Any], req: models.TestRequest) -> rules.TestSpec:
    """WA-T1, WA-T2, WA-T4, WA-T5: the spec of a test on this sheet (pending ±2 included)."""
    stats = sheet.get("stats") or {}
    return rules.TestSpec(
        stat_value=stats.get(req.stat, 0),
        threshold=rules.threshold(req.difficulty, req.target),
        cha=stats.get("CHA", 0),
        modifier=req.modifier,
        pending=(sheet.get("pending") or {}).get(req.stat, 0),
    )


def _challenge(sheet: dict[str, Any], name: str, field: str = "for_challenge") -> rules.Challenge:
    raw = (sheet.get("challenges") or {}).get(name)
    if raw is None:
        known = ", ".join(sheet.get("challenges") or {}) or "none"
        raise RuleError(f"no challenge {name!r} on this character (challenges: {known})", field=field)
    return rules.Challenge(**raw)


class WorldsAwakeningAdapter(RulesetAdapter):
    id = RULESET
    title = "Worlds Awakening (d20, Règles de Base)"
    Sheet = models.Sheet
    Options = models.Options
    TestRequest = models.TestRequest
    actions = {
        "pending_modifier": models.PendingModifierAction,
        "challenge": models.ChallengeAction,
        "challenge_remove": models.ChallengeRemoveAction,
    }
    gm_only_actions = frozenset(actions)

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "stats": list(rules.STATS),
            "level_range": {"min": 1, "max": rules.MAX_LEVEL},
            "dice": ["d4", "d6", "d8", "d10", "d12", "d20"],
            "test": {"die": "d20", "roll_under": False, "score": "d20 + characteristic + modifier + pending",
                     "success": "score >= threshold", "dice_order": ["d20 (test)"]},
            "difficulties": {
                name: {"min": low, "max": high, "default": rules.DEFAULT_THRESHOLDS[name]}
                for name, (low, high) in rules.DIFFICULTIES.items()
            },
            "outcomes": list(rules.OUTCOMES),
            "criticals": {
                "failure": {"CHA <= -4": "natural <= 3", "CHA -3/-2": "natural <= 2", "otherwise": "natural 1"},
                "success": {"CHA >= 6": "natural >= 17", "CHA 4/5": "natural >= 18", "CHA 2/3": "natural >= 19",
                            "otherwise": "natural 20"},
            },
            "derived": {"physical_defense": "10 + CON + level", "magical_defense": "10 + SAG + level",
                        "initiative": "10 + DEX"},
            "actions": {
                "pending_modifier": "GM: {stat, value: 2 | -2 | 0 (clears)}; consumed by the next test of that stat",
                "challenge": "GM: {name, successes_needed, failures_allowed?}; tests with for_challenge advance it",
                "challenge_remove": "GM: {name}",
            },
        }

    def normalize_sheet(self, raw: dict[str, Any], *, kind: str, gm_override: bool = False) -> dict[str, Any]:
        """WA-S1..S4: validate, fill hp/mp from their maxima; above max needs the GM's override."""
        out = self.Sheet.model_validate(raw).model_dump(mode="json")
        if not gm_override:
            for pool in ("hp", "mp"):
                if out[pool] > out[f"{pool}_max"]:
                    raise RuleError(f"{pool} {out[pool]} is above {pool}_max {out[f'{pool}_max']}", field=pool)
        return out

    def derived(self, sheet: dict[str, Any]) -> dict[str, Any]:
        """WA-S3 defenses and initiative, WA-T4 critical ranges, WA-T5/T6 pending and challenges."""
        stats = sheet.get("stats") or {}
        level = sheet.get("level", 1)
        cha = stats.get("CHA", 0)
        return {
            "physical_defense": rules.physical_defense(stats.get("CON", 0), level),
            "magical_defense": rules.magical_defense(stats.get("SAG", 0), level),
            "initiative": rules.initiative(stats.get("DEX", 0)),
            "critical_success": {"min_natural": rules.crit_success_min(cha)},
            "critical_failure": {"max_natural": rules.crit_failure_max(cha)},
            "pending": dict(sheet.get("pending") or {}),
            "challenges": {
                name: {**c, "remaining_successes": max(0, c["successes_needed"] - c["successes"]),
                       "remaining_failures": (None if c.get("failures_allowed") is None
                                              else max(0, c["failures_allowed"] - c["failures"]))}
                for name, c in (sheet.get("challenges") or {}).items()
            },
        }

    # --- tests ----------------------------------------------------------------
    def test(self, ch: CharacterState, req: models.TestRequest, ctx: OperationContext) -> Outcome:
        """WA-T1..T6: d20 + characteristic vs threshold; consumes a pending ±2, advances a challenge."""
        spec = _spec(ch.sheet, req)
        challenge = _challenge(ch.sheet, req.for_challenge) if req.for_challenge else None
        if challenge is not None and challenge.status != "in_progress":
            raise RuleError(f"challenge {challenge.name!r} is already {challenge.status}", field="for_challenge")
        r = rules.roll_test(spec, ctx.dice)
        sheet = copy.deepcopy(ch.sheet)
        effects: dict[str, Any] = {}
        if spec.pending:
            effects["pending_modifier"] = {"stat": req.stat, "value": spec.pending, "consumed": True}
            del sheet["pending"][req.stat]
        challenge_after = None
        if challenge is not None:
            challenge_after = rules.advance(challenge, r.success).to_dict()
            effects["challenge"] = {"before": challenge.to_dict(), "after": challenge_after}
            sheet["challenges"][challenge.name] = challenge_after
        body = test_body(
            ch, RULESET, natural=r.natural, score=r.total, target=r.threshold, outcome=r.outcome,
            effects=effects, stat=req.stat, difficulty=req.difficulty, modifier=req.modifier,
            pending_modifier=spec.pending, challenge=challenge_after,
            critical_range={"success_min": rules.crit_success_min(spec.cha),
                            "failure_max": rules.crit_failure_max(spec.cha)},
        )
        sheets = {ch.id: sheet} if effects else {}
        return Outcome(kind="test", body=body, character_id=ch.id, sheets=sheets)

    def odds(self, ch: CharacterState, req: models.TestRequest, ctx: OperationContext) -> Odds:
        """Exact odds over the 20 faces (WA-T1..T5: the pending ±2 counts, without being consumed)."""
        if req.for_challenge:
            _challenge(ch.sheet, req.for_challenge)
        outcomes, totals = rules.odds(_spec(ch.sheet, req))
        full = {o: outcomes.get(o, Fraction(0)) for o in OUTCOMES}
        return Odds(outcomes=full, extra={"score": {str(k): p for k, p in totals.items()}})

    # --- GM actions -------------------------------------------------------------
    def action(self, ch: CharacterState, req: Any, ctx: OperationContext) -> Outcome:
        """WA-T5 pending ±2, WA-T6 challenges: GM actions stored in the sheet."""
        sheet = copy.deepcopy(ch.sheet)
        if req.type == "pending_modifier":
            pending = sheet.setdefault("pending", {})
            before = pending.get(req.stat, 0)
            if req.value:
                pending[req.stat] = req.value
            else:
                pending.pop(req.stat, None)
            detail = {"stat": req.stat, "before": before, "after": req.value}
        elif req.type == "challenge":
            challenges = sheet.setdefault("challenges", {})
            if req.name in challenges:
                raise RuleError(f"challenge {req.name!r} already exists (remove it first)", field="name")
            c = rules.new_challenge(req.name, req.successes_needed, req.failures_allowed).to_dict()
            challenges[req.name] = c
            detail = {"challenge": c}
        elif req.type == "challenge_remove":
            removed = _challenge(sheet, req.name, "name").to_dict()
            del sheet["challenges"][req.name]
            detail = {"challenge": removed, "removed": True}
        else:  # pragma: no cover - the service only sends declared types
            return super().action(ch, req, ctx)
        body = {"kind": "action", "type": req.type, "ruleset": RULESET, "character_id": ch.id, **detail}
        return Outcome(kind="action", body=body, character_id=ch.id, sheets={ch.id: sheet})


ADAPTER = WorldsAwakeningAdapter()
