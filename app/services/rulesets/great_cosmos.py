"""Great Cosmos adapter: sheets, tests, odds and level-ups through the generic services."""
from __future__ import annotations

from typing import Any

from app.models.rulesets import great_cosmos as models
from app.rules.great_cosmos import core, odds as gc_odds, sheet as gc_sheet
from app.services.rulesets.base import (
    CharacterState, Odds, OperationContext, Outcome, RulesetAdapter, test_body,
)

RULESET = "great-cosmos"


def _option(ctx: OperationContext, name: str, default: Any) -> Any:
    return getattr(ctx.options, name, default)


def _items(inv: dict[str, Any]) -> list[gc_sheet.Item]:
    return [
        gc_sheet.Item(name=i["name"], kind=i.get("kind", "item"), slots=i.get("slots"),
                      container=i.get("container"), stack=i.get("stack"), piece=i.get("piece"),
                      quantity=i.get("quantity", 1))
        for i in inv.get("items") or []
    ]


def _containers(inv: dict[str, Any]) -> list[gc_sheet.Container]:
    return [gc_sheet.Container(name=c["name"], slots=c["slots"], weight=c.get("weight", 0))
            for c in inv.get("containers") or []]


def _inventory_args(sheet: dict[str, Any]) -> tuple:
    inv = sheet.get("inventory") or {}
    return (sheet["stats"]["force"], _items(inv), inv.get("money", 0), inv.get("purse_slots"), _containers(inv))


class GreatCosmosAdapter(RulesetAdapter):
    id = RULESET
    title = "The Tale of Great Cosmos (rules v6)"
    Sheet = models.Sheet
    Options = models.Options
    TestRequest = models.TestRequest
    LevelUpRequest = models.LevelUpRequest

    # --- catalogue and sheets -------------------------------------------------
    def describe(self) -> dict[str, Any]:
        races = {}
        for race in gc_sheet.RACES:
            light, dark = gc_sheet.starting_light_dark(race)
            low, high = gc_sheet.mental_health_bounds(race)
            races[race] = {"light_points": light, "dark_points": dark, "mental_health": {"min": low, "max": high}}
        return {
            "id": self.id,
            "title": self.title,
            "stats": list(core.STATS),
            "stat_aliases": dict(core.STAT_ALIASES),
            "stat_range": {"min": core.STAT_MIN, "max": core.STAT_MAX},
            "mini_stats": {"intuition": {"min": 1, "max": 6, "default": 3, "die": "d6"}},
            "test": {"die": "d100", "roll_under": True, "target": "stat + modifier",
                     "dice_order": ["d100 (test)", "d10 (karma, when karma <= -5 or >= +5 and the natural is not 42/66)"]},
            "outcomes": list(core.OUTCOMES),
            "special_scores": {"42": "super_critical_success", "66": "super_critical_failure",
                               "critical_success": "score <= 10", "critical_failure": "score >= 91"},
            "karma": {"min": core.KARMA_MIN, "max": core.KARMA_MAX, "start": 0,
                      "delta": dict(core.KARMA_DELTA), "locked_by_posture": dict(core.LOCKED_KARMA)},
            "races": races,
            "other_races": {"examples": list(gc_sheet.OTHER_RACES_EXAMPLES), "light_points": 1, "dark_points": 1,
                            "mental_health": {"min": 0, "max": 100}},
            "postures": ["offensive", "defensive", "illumination", "sepulcrale"],
            "level_ups": {
                "2": "mode two_d10 (stats: two different) or one_d20 (stats: one); cap 80",
                "3": "lowest stat +1d10, cap 85 (stat: which of a tie)",
                "4": "pool hp|mp +1d100",
                "5": "final skill; transfers up to 10 points (1..85); light + dark = 3",
                "6+": "changes: explicit deltas",
                "every": "chance test; on success +2d20 to chance_bonus_pool",
            },
            "inventory": {"money_per_slot": gc_sheet.MONEY_PER_SLOT, "item_kinds": list(gc_sheet.ITEM_KINDS),
                          "armor_pieces": list(gc_sheet.ARMOR_PIECES),
                          "capacity": "40 x (force rounded down to the ten) / 100"},
        }

    def normalize_sheet(self, raw: dict[str, Any], *, kind: str, gm_override: bool = False) -> dict[str, Any]:
        """GC-S1..S10: validate, fill derived defaults (GC-S5/S6/S7), enforce GC-S7 and GC-I4."""
        sheet = self.Sheet.model_validate(raw)
        light, dark = gc_sheet.starting_light_dark(sheet.race)
        _, mh_max = gc_sheet.mental_health_bounds(sheet.race)
        filled = sheet.model_copy(update={
            "hp": sheet.hp_max if sheet.hp is None else sheet.hp,
            "mp": sheet.mp_max if sheet.mp is None else sheet.mp,
            "light_points": light if sheet.light_points is None else sheet.light_points,
            "dark_points": dark if sheet.dark_points is None else sheet.dark_points,
            "mental_health": mh_max if sheet.mental_health is None else sheet.mental_health,
        })
        out = filled.model_dump(mode="json")
        gc_sheet.check_mental_health(out["race"], out["mental_health"], gm_override=gm_override)
        if out.get("inventory") is not None:
            gc_sheet.check_inventory(*_inventory_args(out))
        return out

    def derived(self, sheet: dict[str, Any]) -> dict[str, Any]:
        """GC-I1..I3 inventory load, GC-D2 max move, GC-S7 bounds and insanity."""
        race = sheet.get("race", "humain")
        low, high = gc_sheet.mental_health_bounds(race)
        mh = sheet.get("mental_health", high)
        load = gc_sheet.inventory_load(*_inventory_args(sheet))
        lock = core.locked_karma(sheet.get("posture"))
        return {
            "inventory": {
                "capacity": load.capacity, "used": load.used, "free": load.free,
                "items_slots": load.items_slots, "money_slots": load.money_slots,
                "containers": load.containers, "purse": load.purse,
            },
            "max_move": gc_sheet.max_move(sheet["stats"]["agilite"]),
            "mental_health": {"value": mh, "min": low, "max": high, "insane": gc_sheet.is_insane(mh)},
            "insane": gc_sheet.is_insane(mh),
            "final_skill_unlocked": sheet.get("level", 1) >= 5,
            "karma": {"stored": sheet.get("karma", 0), "effective": sheet.get("karma", 0) if lock is None else lock,
                      "locked": lock is not None},
        }

    # --- tests ----------------------------------------------------------------
    def test(self, ch: CharacterState, req: models.TestRequest, ctx: OperationContext) -> Outcome:
        """GC-T1..T3, GC-K1..K5: one test; the karma change is returned as the new sheet."""
        if req.stat == core.INTUITION:
            return self._intuition(ch, req, ctx)
        stat = core.canonical_stat(req.stat)
        sheet = ch.sheet
        r = core.resolve_test(
            ctx.dice, sheet["stats"][stat] + req.modifier, sheet.get("karma", 0),
            posture=sheet.get("posture"), extreme_scores=_option(ctx, "extreme_scores", True),
        )
        body = test_body(
            ch, RULESET, natural=r.natural, score=r.score, target=r.target, outcome=r.outcome,
            effects={"karma": karma_effect(r)}, stat=stat, modifier=req.modifier, karma_die=r.karma_die,
        )
        sheets = {}
        if r.karma_after != r.karma_before:
            sheets[ch.id] = {**sheet, "karma": r.karma_after}
        return Outcome(kind="test", body=body, character_id=ch.id, sheets=sheets)

    def _intuition(self, ch: CharacterState, req: models.TestRequest, ctx: OperationContext) -> Outcome:
        """GC-T3: d6 against intuition; no karma."""
        karma = ch.sheet.get("karma", 0)
        r = core.resolve_intuition(ctx.dice, ch.sheet.get("intuition", 3), req.modifier)
        body = test_body(
            ch, RULESET, natural=r.natural, score=r.natural, target=r.target,
            outcome=core.SUCCESS if r.good else core.FAILURE,
            effects={"karma": {"before": karma, "after": karma}}, stat=core.INTUITION, modifier=req.modifier,
            karma_die=None, intuition="good" if r.good else "bad",
        )
        return Outcome(kind="test", body=body, character_id=ch.id)

    def odds(self, ch: CharacterState, req: models.TestRequest, ctx: OperationContext) -> Odds:
        """Exact odds of the six outcomes (GC-T1..T3, GC-K2..K5) and of the karma afterwards."""
        sheet = ch.sheet
        if req.stat == core.INTUITION:
            o = gc_odds.intuition_odds(sheet.get("intuition", 3) + req.modifier)
            return Odds(outcomes=o.outcomes)
        stat = core.canonical_stat(req.stat)
        o = gc_odds.odds_of_test(
            sheet["stats"][stat] + req.modifier, sheet.get("karma", 0),
            posture=sheet.get("posture"), extreme_scores=_option(ctx, "extreme_scores", True),
        )
        return Odds(outcomes=o.outcomes, extra={"karma_after": {str(k): p for k, p in o.karma_after.items()}})


def karma_effect(r: core.TestResult) -> dict[str, Any]:
    """GC-K1/GC-K5: the karma part of a test's effects."""
    return {"before": r.karma_before, "after": r.karma_after, "used": r.karma_used, "locked": r.locked}


ADAPTER = GreatCosmosAdapter()
