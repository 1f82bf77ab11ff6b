"""Rulebook D100 adapter: sheets, tests, odds, confrontations and rankings."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from functools import lru_cache
from typing import Any

from app.rules.dice import DiceSource, Roll, TableDice
from app.rules.errors import DiceError, RuleError
from app.rulesets.contract.adapter import (
    OUTCOMES,
    CharacterState,
    Confrontations,
    GroupTests,
    Odds,
    OperationContext,
    Outcome,
    ResultT,
    RulesetAdapter,
    RulesetDescription,
    test_body,
)
from app.rulesets.rulebook_d100 import results
from app.rulesets.rulebook_d100 import schemas as models
from app.rulesets.rulebook_d100.rules import core as rules

RULESET = "rulebook-d100"
Character = CharacterState[models.Sheet]
Context = OperationContext[models.Options]


class TaggedDice(DiceSource):
    """Rolls from `inner`, purposes prefixed with the participant; every die also
    appended to the shared `log`, so an operation lists its dice in the order rolled."""

    def __init__(self, inner: DiceSource, prefix: str, log: list[Roll], field: str | None = None):
        super().__init__()
        self.inner, self.prefix, self.log, self.field = inner, prefix, log, field

    def _next(self, faces: int, purpose: str) -> int:
        with self._own_field():
            value = self.inner.roll(faces, f"{self.prefix}: {purpose}")
        self.log.append(self.inner.rolls[-1])
        return value

    def finish(self) -> None:
        """Checks the leftovers of this participant's own table dice (not the shared source's)."""
        if self.field is not None:
            with self._own_field():
                self.inner.finish()

    @contextmanager
    def _own_field(self) -> Iterator[None]:
        """Table dice of one participant that do not fit name that participant's field."""
        try:
            yield
        except DiceError as e:
            if self.field is not None:
                e.field = self.field
            raise

    def roll(self, faces: int, purpose: str) -> int:
        value = self._next(faces, purpose)
        self.rolls.append(self.inner.rolls[-1])
        return value


def _spec(sheet: models.Sheet, req: Any, ctx: Context, where: str = "", **over: Any) -> tuple[rules.TestSpec, dict]:
    """RB-T1: the TestSpec of a request on a sheet, and what the result should say about it."""
    stats = sheet.stats
    if req.stat not in stats:
        raise RuleError(
            f"no stat {req.stat!r} on this sheet; it has: {', '.join(stats)}", field=f"{where}stat", code="unknown_name"
        )
    skill = over.get("skill", getattr(req, "skill", None))
    weakened = over.get("weakened", getattr(req, "weakened", False))
    skills = sheet.skills
    skill_missing = skill is not None and skill not in skills
    spec = rules.TestSpec(
        stat_value=stats[req.stat],
        skill_bonus=skills.get(skill, 0) if skill else 0,
        weakened=weakened or skill_missing,
        difficulty=req.difficulty,
        modifier=over.get("modifier", req.modifier),
        crit_chance=sheet.crit_chance,
        overflow_crit=req.overflow_crit,
        rescue_negative=ctx.options.crit_success_rescues_negative,
        ruin_over_100=ctx.options.crit_failure_ruins_over_100,
    )
    info = {
        "stat": req.stat,
        "skill": skill,
        "skill_bonus": spec.skill_bonus,
        "skill_missing": skill_missing,
        "weakened": spec.weakened,
        "difficulty": req.difficulty,
        "modifier": spec.modifier,
        "overflow_crit": spec.overflow_crit,
    }
    return spec, info


def result_body(ch: Character, r: rules.TestResult, info: dict, model: type[ResultT]) -> ResultT:
    """The API.md result of one Rulebook test (RB-T3..T5): natural = score = the d100; as a test
    entry (`RulebookD100TestResult`) or inside a confrontation or a ranking."""
    return test_body(
        model,
        ch,
        RULESET,
        natural=r.roll,
        score=r.roll,
        target=r.percentage,
        outcome=r.outcome,
        success_level=r.level,
        **info,
        crit_chance={"success": r.crit_success_chance, "failure": r.crit_failure_chance},
    )


class RulebookD100Description(RulesetDescription):
    stats_free: bool
    average_stat: int
    crit_chance_default: int
    dice: list[str]
    test: dict[str, Any]
    special_difficulties: dict[str, str]
    criticals: dict[str, str]
    opposed: dict[str, Any]
    group_modes: list[str]


class RulebookD100Adapter(
    RulesetAdapter[models.Sheet, models.Options], Confrontations[models.OpposedRequest], GroupTests[models.GroupRequest]
):
    id = RULESET
    title = "Rulebook (generic D100 system, pelican-jdr)"
    TestRequest = models.TestRequest
    OddsRequest = models.OddsRequest

    def describe(self) -> RulebookD100Description:
        return RulebookD100Description.model_validate(
            {
                "id": self.id,
                "title": self.title,
                "stats": list(rules.DEFAULT_STATS),
                "stats_free": True,
                "average_stat": rules.AVERAGE_STAT,
                "crit_chance_default": rules.DEFAULT_CRIT_CHANCE,
                "dice": ["d4", "d6", "d8", "d10", "d12", "d20", "d100"],
                "test": {
                    "die": "d100",
                    "roll_under": True,
                    "target": "stat (halved if weakened) + skill + difficulty + modifier",
                    "success_level": "trunc(target / 10) - trunc(roll / 10)",
                    "dice_order": ["d100 (test)"],
                },
                "difficulties": dict(rules.DIFFICULTIES),
                "special_difficulties": {
                    "impossible": "automatic failure, critical failure possible",
                    "quasi_impossible": "automatic failure unless critical success, critical failure possible",
                    "quasi_inratable": "automatic success unless critical failure, critical success possible",
                    "inratable": "automatic success, critical success possible",
                },
                "outcomes": list(rules.OUTCOMES),
                "criticals": {
                    "success": "roll <= crit_chance",
                    "failure": "roll > 100 - crit_chance",
                    "level": "2 x |level|, signed by the outcome",
                    "overflow_crit": "+1 crit success chance per full 5 points above 100",
                },
                "opposed": {
                    "winner": "a success beats a failure, then higher level, then lower units digit (100 never "
                    "wins on it), then d100 rerolls (lowest); tiebreak false: equal is a draw",
                    "dice_order": ["d100 (a: test)", "d100 (b: test)", "d100 rerolls a, b, ... while tied"],
                },
                "group_modes": ["ranking"],
            }
        )

    def normalize_sheet(self, raw: dict[str, Any], *, kind: str, gm_override: bool = False) -> dict[str, Any]:
        """RB-S1..S3: validate and fill hp/pe from their maxima; hp/pe above max need the GM's override."""
        sheet = self.Sheet.model_validate(raw)
        if not gm_override:
            for pool, value, top in (("hp", sheet.hp, sheet.hp_max), ("pe", sheet.pe, sheet.pe_max)):
                assert value is not None  # filled from its maximum by the model
                if value > top:
                    raise RuleError(f"{pool} {value} is above {pool}_max {top}", field=pool)
        return self.dump_sheet(sheet)

    def derived(self, sheet: models.Sheet) -> dict[str, Any]:
        """RB-S1/RB-T5 critical ranges and RB-T1 weakened stats."""
        cc = sheet.crit_chance
        return {
            "critical_success": {"max_roll": cc},
            "critical_failure": {"min_roll": 101 - cc},
            "weakened_stats": {k: v // 2 for k, v in sheet.stats.items()},
        }

    # --- tests ----------------------------------------------------------------
    def test(self, ch: Character, req: models.TestRequest, ctx: Context) -> Outcome:
        """RB-T1..T8: one d100 test; no sheet change."""
        spec, info = _spec(ch.sheet, req, ctx)
        r = rules.roll_test(spec, ctx.dice)
        return Outcome(result_body(ch, r, info, results.RulebookD100TestResult), ch.id)

    def odds(self, ch: Character, req: models.TestRequest, ctx: Context) -> Odds:
        """Exact odds over the 100 faces (RB-T3..T8, with the RB-T6 options and RB-T7)."""
        spec, _ = _spec(ch.sheet, req, ctx)
        outcomes, levels = _odds(spec)
        full = {o: outcomes.get(o, Fraction(0)) for o in OUTCOMES}
        return Odds(outcomes=full, extra={"success_level": {str(k): p for k, p in levels.items()}})

    # --- confrontations and rankings -------------------------------------------
    def opposed(self, a: Character, b: Character, req: models.OpposedRequest, ctx: Context) -> Outcome:
        """RB-C1, RB-C2: both test (a's die, then b's), higher level wins, ties by units then rerolls."""
        log: list[Roll] = []
        da, db = TaggedDice(ctx.dice, "a", log), TaggedDice(ctx.dice, "b", log)
        (spec_a, info_a), (spec_b, info_b) = _spec(a.sheet, req.a, ctx, "a."), _spec(b.sheet, req.b, ctx, "b.")
        ra, rb = rules.roll_test(spec_a, da), rules.roll_test(spec_b, db)
        c = rules.confront(ra, rb, da, db, tiebreak=req.tiebreak)
        body = results.RulebookD100OpposedResult.of(
            kind="opposed",
            ruleset=RULESET,
            a=result_body(a, ra, info_a, results.RulebookD100TestFields),
            b=result_body(b, rb, info_b, results.RulebookD100TestFields),
            winner=None if c.winner is None else "ab"[c.winner],
            winner_id=None if c.winner is None else (a, b)[c.winner].id,
            tiebreak=c.tiebreak,
            rerolls={"a": list(c.rerolls[0]), "b": list(c.rerolls[1])},
        )
        return Outcome(body)

    def group(self, chars: list[Character], req: models.GroupRequest, ctx: Context) -> Outcome:
        """RB-C3: everyone tests the same stat; ranked by level, ties as RB-C2."""
        log: list[Roll] = []
        sources: list[TaggedDice] = []
        for n, p in enumerate(req.participants, start=1):
            inner: DiceSource = ctx.dice
            if p.dice is not None:
                inner = TableDice(p.dice)
            field = f"participants.{n - 1}.dice" if p.dice is not None else None
            sources.append(TaggedDice(inner, f"participant {n} ({p.character_id})", log, field))
        tests, infos = [], []
        for ch, p, src in zip(chars, req.participants, sources):
            spec, info = _spec(
                ch.sheet, req, ctx, skill=p.skill, weakened=p.weakened, modifier=req.modifier + p.modifier
            )
            tests.append(rules.roll_test(spec, src))
            infos.append(info)
        placings = rules.rank(tests, sources)
        for src in sources:
            src.finish()
        ranking = [
            {
                "place": pl.place,
                "character_id": chars[i].id,
                "tiebreak": pl.tiebreak,
                "rerolls": list(pl.rerolls),
                "result": result_body(
                    chars[pl.index], tests[pl.index], infos[pl.index], results.RulebookD100TestFields
                ),
            }
            for pl in placings
            for i in (pl.index,)
        ]
        body = results.RulebookD100GroupResult.of(
            kind="group",
            mode="ranking",
            ruleset=RULESET,
            stat=req.stat,
            ranking=ranking,
            rolls=[r.to_dict() for r in log],
        )
        return Outcome(body)


# Every test computes its exact odds (p_success); the pure computation is cached
# by its hashable inputs (frozen specs, ints, strings). Its results are shared: never changed.
_odds = lru_cache(maxsize=4096)(rules.odds)


ADAPTER = RulebookD100Adapter()
