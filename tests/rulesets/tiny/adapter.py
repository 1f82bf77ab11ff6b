"""Tiny's adapter: its sheet, its test and its odds (TINY-T1)."""

from __future__ import annotations

from fractions import Fraction

from app.rulesets.contract.adapter import OUTCOMES, CharacterState, Odds, OperationContext, Outcome, RulesetAdapter
from app.rulesets.contract.adapter import RulesetDescription, test_body
from tests.rulesets.tiny import schemas as models
from tests.rulesets.tiny.results import RULESET, TinyTestResult
from tests.rulesets.tiny.rules import core as rules

Character = CharacterState[models.Sheet]
Context = OperationContext[models.Options]


class TinyDescription(RulesetDescription):
    test: dict[str, str]


class TinyAdapter(RulesetAdapter[models.Sheet, models.Options]):
    id = RULESET
    title = "Tiny (d6, a test-only ruleset)"
    TestRequest = models.TestRequest
    OddsRequest = models.OddsRequest

    def describe(self) -> TinyDescription:
        return TinyDescription(
            id=self.id,
            title=self.title,
            stats=list(rules.STATS),
            difficulties={"default": rules.DEFAULT_TARGET},
            outcomes=list(rules.OUTCOMES),
            test={"die": "d6", "score": "d6 + grit + modifier", "success": "score >= target; 6 and 1 critical"},
        )

    def test(self, ch: Character, req: models.TestRequest, ctx: Context) -> Outcome:
        """TINY-T1."""
        r = rules.roll_test(ch.sheet.grit + req.modifier, req.target, ctx.dice)
        body = test_body(
            TinyTestResult, ch, RULESET, natural=r.natural, score=r.score, target=r.target, outcome=r.outcome,
            stat=req.stat, modifier=req.modifier,
        )  # fmt: skip
        return Outcome(body, ch.id)

    def odds(self, ch: Character, req: models.TestRequest, ctx: Context) -> Odds:
        """TINY-T1, over the six faces."""
        found = rules.odds(ch.sheet.grit + req.modifier, req.target)
        return Odds(outcomes={o: found.get(o, Fraction(0)) for o in OUTCOMES})


ADAPTER = TinyAdapter()
