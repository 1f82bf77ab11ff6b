"""Great Cosmos adapter: sheets, tests, odds and level-ups through the generic services."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from app.rules.errors import RuleError
from app.rulesets.contract.adapter import (
    CharacterState,
    LevelUps,
    Odds,
    OperationContext,
    Outcome,
    RulesetAdapter,
    RulesetDescription,
    test_body,
)
from app.rulesets.great_cosmos import results
from app.rulesets.great_cosmos import schemas as models
from app.rulesets.great_cosmos.rules import core
from app.rulesets.great_cosmos.rules import fight as gc_fight
from app.rulesets.great_cosmos.rules import levels as gc_levels
from app.rulesets.great_cosmos.rules import odds as gc_odds
from app.rulesets.great_cosmos.rules import postures as gc_postures
from app.rulesets.great_cosmos.rules import sheet as gc_sheet

RULESET = "great-cosmos"
Character = CharacterState[models.Sheet]
Context = OperationContext[models.Options]


def _items(inv: models.Inventory) -> list[gc_sheet.Item]:
    return [
        gc_sheet.Item(
            name=i.name,
            kind=i.kind,
            slots=i.slots,
            container=i.container,
            stack=i.stack,
            piece=i.piece,
            quantity=i.quantity,
        )
        for i in inv.items
    ]


def _containers(inv: models.Inventory) -> list[gc_sheet.Container]:
    return [gc_sheet.Container(name=c.name, slots=c.slots, weight=c.weight) for c in inv.containers]


def _inventory_args(sheet: models.Sheet) -> tuple:
    inv = sheet.inventory or models.Inventory()
    return (sheet.stats.force, _items(inv), inv.money, inv.purse_slots, _containers(inv))


class GreatCosmosDescription(RulesetDescription):
    stat_aliases: dict[str, str]
    stat_range: dict[str, int]
    mini_stats: dict[str, dict[str, Any]]
    test: dict[str, Any]
    special_scores: dict[str, str]
    karma: dict[str, Any]
    races: dict[str, dict[str, Any]]
    other_races: dict[str, Any]
    postures: list[str]
    level_ups: dict[str, str]
    inventory: dict[str, Any]


class GreatCosmosAdapter(RulesetAdapter[models.Sheet, models.Options], LevelUps[models.LevelUpRequest]):
    id = RULESET
    title = "The Tale of Great Cosmos (rules v6)"
    TestRequest = models.TestRequest
    OddsRequest = models.OddsRequest

    # --- catalogue and sheets -------------------------------------------------
    def describe(self) -> GreatCosmosDescription:
        races = {}
        for race in gc_sheet.RACES:
            light, dark = gc_sheet.starting_light_dark(race)
            low, high = gc_sheet.mental_health_bounds(race)
            races[race] = {"light_points": light, "dark_points": dark, "mental_health": {"min": low, "max": high}}
        return GreatCosmosDescription.model_validate(
            {
                "id": self.id,
                "title": self.title,
                "stats": list(core.STATS),
                "stat_aliases": dict(core.STAT_ALIASES),
                "stat_range": {"min": core.STAT_MIN, "max": core.STAT_MAX},
                "mini_stats": {"intuition": {"min": 1, "max": 6, "default": 3, "die": "d6"}},
                "test": {
                    "die": "d100",
                    "roll_under": True,
                    "target": "stat + modifier",
                    "dice_order": [
                        "d100 (test)",
                        "d10 (karma, when karma <= -5 or >= +5 and the natural is not 42/66)",
                    ],
                },
                "outcomes": list(core.OUTCOMES),
                "special_scores": {
                    "42": "super_critical_success",
                    "66": "super_critical_failure",
                    "critical_success": "score <= 10",
                    "critical_failure": "score >= 91",
                },
                "karma": {
                    "min": core.KARMA_MIN,
                    "max": core.KARMA_MAX,
                    "start": 0,
                    "delta": dict(core.KARMA_DELTA),
                    "locked_by_posture": dict(core.LOCKED_KARMA),
                },
                "races": races,
                "other_races": {
                    "examples": list(gc_sheet.OTHER_RACES_EXAMPLES),
                    "light_points": 1,
                    "dark_points": 1,
                    "mental_health": {"min": 0, "max": 100},
                },
                "postures": ["offensive", "defensive", "illumination", "sepulcrale"],
                "level_ups": {
                    "2": "mode two_d10 (stats: two different) or one_d20 (stats: one); cap 80",
                    "3": "lowest stat +1d10, cap 85 (stat: which of a tie)",
                    "4": "pool hp|mp +1d100",
                    "5": "final skill; transfers up to 10 points (1..85); light + dark >= 3 (the +3 and any grant)",
                    "6+": "changes: explicit deltas",
                    "every": "light/dark grants by the GM (GC-S6); chance test; on success +2d20 to chance_bonus_pool",
                },
                "inventory": {
                    "money_per_slot": gc_sheet.MONEY_PER_SLOT,
                    "item_kinds": list(gc_sheet.ITEM_KINDS),
                    "armor_pieces": list(gc_sheet.ARMOR_PIECES),
                    "capacity": "40 x (force rounded down to the ten) / 100",
                },
            }
        )

    def normalize_sheet(
        self, raw: dict[str, Any], *, kind: str, gm_override: bool = False, inventory_rules: bool = True
    ) -> dict[str, Any]:
        """GC-S1..S10: validate, fill derived defaults (GC-S5/S6/S7), enforce GC-S7 and GC-I4."""
        sheet = self.Sheet.model_validate(raw)
        light, dark = gc_sheet.starting_light_dark(sheet.race)
        _, mh_max = gc_sheet.mental_health_bounds(sheet.race)
        filled = sheet.model_copy(
            update={
                "hp": sheet.hp_max if sheet.hp is None else sheet.hp,
                "mp": sheet.mp_max if sheet.mp is None else sheet.mp,
                "light_points": light if sheet.light_points is None else sheet.light_points,
                "dark_points": dark if sheet.dark_points is None else sheet.dark_points,
                "mental_health": mh_max if sheet.mental_health is None else sheet.mental_health,
            }
        )
        assert filled.mental_health is not None  # filled just above
        gc_sheet.check_mental_health(filled.race, filled.mental_health, gm_override=gm_override)
        if filled.posture_advantage is not None and filled.posture != gc_postures.ILLUMINATION:
            raise RuleError(
                "posture_advantage is the advantage d6 of an Illumination (GC-P5): it goes with posture "
                "illumination only",
                field="posture_advantage",
            )
        if inventory_rules and filled.inventory is not None:
            gc_sheet.check_inventory(*_inventory_args(filled))
        return self.dump_sheet(filled)

    def normalize_sheet_in_context(
        self,
        raw: dict[str, Any],
        *,
        kind: str,
        gm_override: bool,
        options: models.Options,
        previous: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """GC-S7: a mental health the GM set out of bounds stays acceptable while it is
        left unchanged; GC-I4 applies only while the campaign's `inventory_rules` is on."""
        keeps_override = (
            previous is not None
            and raw.get("mental_health") == previous.get("mental_health")
            and raw.get("race") == previous.get("race")
        )
        if (
            previous is not None
            and previous.get("posture") == gc_postures.ILLUMINATION
            and raw.get("posture") != gc_postures.ILLUMINATION
            and raw.get("posture_advantage") == previous.get("posture_advantage")
        ):
            raw = {**raw, "posture_advantage": None}  # GC-P5: the advantage lasts as long as the posture
        return self.normalize_sheet(
            raw, kind=kind, gm_override=gm_override or keeps_override, inventory_rules=options.inventory_rules
        )

    def derived(self, sheet: models.Sheet) -> dict[str, Any]:
        """GC-I1..I3 inventory load, GC-D2 max move, GC-S7 bounds and insanity."""
        low, high = gc_sheet.mental_health_bounds(sheet.race)
        mh = high if sheet.mental_health is None else sheet.mental_health
        load = gc_sheet.inventory_load(*_inventory_args(sheet))
        lock = core.locked_karma(sheet.posture)
        return {
            "inventory": {
                "capacity": load.capacity,
                "used": load.used,
                "free": load.free,
                "items_slots": load.items_slots,
                "money_slots": load.money_slots,
                "containers": load.containers,
                "purse": load.purse,
            },
            "max_move": gc_sheet.max_move(sheet.stats.agilite),
            "mental_health": {"value": mh, "min": low, "max": high, "insane": gc_sheet.is_insane(mh)},
            "insane": gc_sheet.is_insane(mh),
            "final_skill_unlocked": sheet.level >= 5,
            "karma": {
                "stored": sheet.karma,
                "effective": sheet.karma if lock is None else lock,
                "locked": lock is not None,
            },
        }

    # --- tests ----------------------------------------------------------------
    def test(self, ch: Character, req: models.TestRequest, ctx: Context) -> Outcome:
        """GC-T1..T3, GC-K1..K5: one test; the karma change is returned as the new sheet."""
        if req.stat == core.INTUITION:
            return self._intuition(ch, req, ctx)
        stat = core.canonical_stat(req.stat)
        sheet = ch.sheet
        advantage, disadvantage = advantage_of(sheet), disadvantage_of(sheet)
        r = core.resolve_test(
            ctx.dice,
            getattr(sheet.stats, stat) + req.modifier + bonus_of(advantage) + malus_of(disadvantage),
            sheet.karma,
            posture=sheet.posture,
            extreme_scores=ctx.options.extreme_scores,
        )
        body = test_body(
            results.GreatCosmosTestResult,
            ch,
            RULESET,
            natural=r.natural,
            score=r.score,
            target=r.target,
            outcome=r.outcome,
            effects={"karma": karma_effect(r)},
            stat=stat,
            modifier=req.modifier,
            karma_die=r.karma_die,
            advantage=advantage_body(advantage),
            disadvantage=disadvantage_body(disadvantage),
        )
        sheets = {}
        if r.karma_after != r.karma_before:
            sheets[ch.id] = sheet.model_copy(update={"karma": r.karma_after})
        return Outcome(body, ch.id, sheets)

    def _intuition(self, ch: Character, req: models.TestRequest, ctx: Context) -> Outcome:
        """GC-T3: d6 against intuition; no karma."""
        karma = ch.sheet.karma
        r = core.resolve_intuition(ctx.dice, ch.sheet.intuition, req.modifier)
        body = test_body(
            results.GreatCosmosTestResult,
            ch,
            RULESET,
            natural=r.natural,
            score=r.natural,
            target=r.target,
            outcome=core.SUCCESS if r.good else core.FAILURE,
            effects={"karma": {"before": karma, "after": karma}},
            stat=core.INTUITION,
            modifier=req.modifier,
            karma_die=None,
            advantage=None,
            intuition="good" if r.good else "bad",
        )
        return Outcome(body, ch.id)

    def odds(self, ch: Character, req: models.TestRequest, ctx: Context) -> Odds:
        """Exact odds of the six outcomes (GC-T1..T3, GC-K2..K5) and of the karma afterwards."""
        sheet = ch.sheet
        if req.stat == core.INTUITION:
            o = _intuition_odds(sheet.intuition + req.modifier)
            return Odds(outcomes=o.outcomes)
        stat = core.canonical_stat(req.stat)
        o = _odds_of_test(
            getattr(sheet.stats, stat)
            + req.modifier
            + bonus_of(advantage_of(sheet))
            + malus_of(disadvantage_of(sheet)),
            sheet.karma,
            posture=sheet.posture,
            extreme_scores=ctx.options.extreme_scores,
        )
        return Odds(outcomes=o.outcomes, extra={"karma_after": {str(k): p for k, p in o.karma_after.items()}})

    # --- level-ups --------------------------------------------------------------
    def level_up(self, ch: Character, req: models.LevelUpRequest, ctx: Context) -> Outcome:
        """GC-L1..L7: one level more; every die, choice and before/after value recorded."""
        sheet = ch.sheet
        advantage = advantage_of(sheet)
        mark = ctx.dice.mark()
        result = gc_levels.level_up(
            progress_of(sheet),
            choices_of(req),
            ctx.dice,
            extreme_scores=ctx.options.extreme_scores,
            test_bonus=bonus_of(advantage) + malus_of(disadvantage_of(sheet)),
        )
        chance_rolls = _chance_rolls(ctx.dice.since(mark), result)
        body = results.GreatCosmosLevelUpResult.of(
            kind="level_up",
            character_id=ch.id,
            ruleset=RULESET,
            rule=result.rule,
            level={"before": result.before.level, "after": result.after.level},
            choices=req.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"seed", "dice", "hidden"}),
            changes=[
                {"field": c.field, "before": c.before, "after": c.after, "dice": list(c.dice)} for c in result.changes
            ],
            chance_test=chance_test_body(ch, result.chance, chance_rolls, advantage),
            chance_bonus=(
                {"pool": result.bonus_pool, "dice": list(result.bonus_dice), "total": sum(result.bonus_dice)}
                if result.bonus_dice
                else None
            ),
        )
        new_sheet = apply_progress(sheet, result.after)
        _check_inventory_after_level_up(new_sheet, result.after.level)
        return Outcome(body, ch.id, {ch.id: new_sheet})


def _check_inventory_after_level_up(sheet: models.Sheet, level: int) -> None:
    """GC-I4: a level-up lowering force may not leave the inventory overloaded."""
    if sheet.inventory is None:
        return
    try:
        gc_sheet.check_inventory(*_inventory_args(sheet))
    except RuleError as e:
        field = "transfers" if level == 5 else "changes"
        raise RuleError(f"after this level-up: {e.detail}", field=field) from e


def progress_of(sheet: models.Sheet) -> gc_levels.Progress:
    """What GC-L1..L6 read from a stored sheet (a pool or light/dark left null: its GC-S5/S6 default)."""
    light, dark = gc_sheet.starting_light_dark(sheet.race)
    return gc_levels.Progress(
        level=sheet.level,
        stats=sheet.stats.model_dump(),
        hp=sheet.hp_max if sheet.hp is None else sheet.hp,
        hp_max=sheet.hp_max,
        mp=sheet.mp_max if sheet.mp is None else sheet.mp,
        mp_max=sheet.mp_max,
        light_points=light if sheet.light_points is None else sheet.light_points,
        dark_points=dark if sheet.dark_points is None else sheet.dark_points,
        intuition=sheet.intuition,
        karma=sheet.karma,
        posture=sheet.posture,
    )


def apply_progress(sheet: models.Sheet, p: gc_levels.Progress) -> models.Sheet:
    """A new sheet carrying the level-up's values (the input is not mutated; the
    values are the rules', so they are not validated again)."""
    stats: dict[str, Any] = {s: p.stats[s] for s in core.STATS}
    return sheet.model_copy(
        update={
            "level": p.level,
            "stats": models.Stats.model_construct(**stats),
            "hp": p.hp,
            "hp_max": p.hp_max,
            "mp": p.mp,
            "mp_max": p.mp_max,
            "light_points": p.light_points,
            "dark_points": p.dark_points,
            "intuition": p.intuition,
            "karma": p.karma,
        }
    )


def choices_of(req: models.LevelUpRequest) -> gc_levels.Choices:
    return gc_levels.Choices(
        chance_bonus_pool=req.chance_bonus_pool,
        mode=req.mode,
        stats=None if req.stats is None else tuple(req.stats),
        stat=req.stat,
        pool=req.pool,
        transfers=None if req.transfers is None else tuple((t.from_, t.to, t.points) for t in req.transfers),
        light=req.light,
        dark=req.dark,
        changes=None if req.changes is None else tuple(req.changes.items()),
    )


def _chance_rolls(rolls: list, result: gc_levels.LevelUp) -> list[dict[str, Any]]:
    """The dice of the GC-L6 chance test (its d100, then its karma d10 if any)."""
    tagged = [r for r in rolls if r.purpose in ("test", "karma")]
    return [r.to_dict() for r in tagged]


def chance_test_body(
    ch: Character, r: core.TestResult, rolls: list[dict[str, Any]], advantage: gc_postures.Advantage | None = None
) -> results.GreatCosmosChanceTest:
    """GC-L6: the chance test's full result, shaped like a test result."""
    return test_body(
        results.GreatCosmosChanceTest,
        ch,
        RULESET,
        natural=r.natural,
        score=r.score,
        target=r.target,
        outcome=r.outcome,
        effects={"karma": karma_effect(r)},
        stat="chance",
        modifier=0,
        karma_die=r.karma_die,
        advantage=advantage_body(advantage),
        rolls=rolls,
    )


def advantage_of(sheet: models.Sheet) -> gc_postures.Advantage | None:
    """GC-P5: the advantage d6 of the sheet's Illumination (None outside it; 422 when unknown)."""
    return gc_postures.posture_advantage(sheet.posture, sheet.posture_advantage)


def bonus_of(advantage: gc_postures.Advantage | None) -> int:
    return 0 if advantage is None else advantage.bonus


def advantage_body(advantage: gc_postures.Advantage | None) -> dict[str, Any] | None:
    """GC-P5: the advantage a d100 test applied (its die, effect and bonus on the target)."""
    return None if advantage is None else {"die": advantage.die, "effect": advantage.effect, "bonus": advantage.bonus}


def karma_effect(r: core.TestResult) -> dict[str, Any]:
    """GC-K1/GC-K5: the karma part of a test's effects."""
    return {"before": r.karma_before, "after": r.karma_after, "used": r.karma_used, "locked": r.locked}


# Every test computes its exact odds (p_success); the pure computation is cached
# by its hashable inputs (frozen specs, ints, strings). Its results are shared: never changed.
_odds_of_test = lru_cache(maxsize=4096)(gc_odds.odds_of_test)
_intuition_odds = lru_cache(maxsize=256)(gc_odds.intuition_odds)


ADAPTER = GreatCosmosAdapter()


def disadvantage_of(sheet: models.Sheet) -> tuple[int, str] | None:
    """GC-P7: the disadvantage d6 of the Sépulcrale backlash the sheet carries (None without one)."""
    die = sheet.backlash.disadvantage_die if sheet.backlash is not None else None
    return None if die is None else (die, gc_postures.DISADVANTAGES[die])


def malus_of(disadvantage: tuple[int, str] | None) -> int:
    """GC-P7 (Decision): -10 / -20 on the target of every test during the backlash (4, 5)."""
    return 0 if disadvantage is None else gc_fight.backlash_malus(disadvantage[1])


def disadvantage_body(disadvantage: tuple[int, str] | None) -> dict[str, Any] | None:
    """GC-P7: the disadvantage a d100 test applied (its die, effect and malus on the target)."""
    if disadvantage is None:
        return None
    return {"die": disadvantage[0], "effect": disadvantage[1], "malus": malus_of(disadvantage)}
