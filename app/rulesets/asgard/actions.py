"""The asgard character actions (AS-C5..C10, AS-C12, AS-H3..H5), registered in
`ACTIONS` as `Action(model, handler, gm_only)`. Each rule below takes a deep
copy of the sheet and returns (body, new sheet); `_action` makes it a handler."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any, get_args

from app.rules.errors import RuleError
from app.rulesets.asgard import results, rules
from app.rulesets.asgard import schemas as m
from app.rulesets.asgard.common import Character, Context, check_take_11, heroism_effect, spec_for, summary
from app.rulesets.asgard.rules import hazards
from app.rulesets.asgard.rules.core import RULESET
from app.rulesets.contract.adapter import Action, Outcome

# type -> its result model
RESULTS: dict[str, type[results.AsgardAction]] = {
    get_args(model.model_fields["type"].annotation)[0]: model for model in results.ACTION_RESULTS
}
Rule = Callable[[Character, m.Sheet, Any, Context], tuple[dict[str, Any], m.Sheet]]


def _action(rule: Rule) -> Callable[[Character, Any, Context], Outcome]:
    """Every action body has kind "action", its type and `effects`; a changed sheet is saved."""

    @wraps(rule)
    def handler(ch: Character, req: Any, ctx: Context) -> Outcome:
        fields, sheet = rule(ch, ch.sheet.model_copy(deep=True), req, ctx)
        body = RESULTS[req.type].of(
            kind="action", type=req.type, ruleset=RULESET, character_id=ch.id, **{"effects": {}, **fields}
        )
        return Outcome(body, ch.id, {ch.id: sheet} if sheet != ch.sheet else {})

    return handler


def vitality(sheet: m.Sheet) -> int:
    """The sheet's vitality: a parsed sheet always has one (the model fills it from vitality_max)."""
    assert sheet.vitality is not None
    return sheet.vitality


def _harm(
    ch: Character, sheet: m.Sheet, damage: int, ctx: Context, blows: Sequence[int] | None = None
) -> dict[str, Any]:
    """Take `damage` off vitality (AS-C3); on reaching 0, roll the AS-C5 checks. Changes `sheet`
    (a copy) and returns the effects."""
    before = vitality(sheet)
    sheet.vitality = hazards.take_damage(before, damage)
    effects: dict[str, Any] = {"vitality": {"before": before, "after": sheet.vitality}}
    if before > 0 and sheet.vitality == 0:
        decisive = hazards.decisive_damage(before, blows or (damage,))  # AS-C5: the round that did it
        assert decisive is not None  # vitality went from above 0 to 0
        effects["mal_en_point"] = _mal_en_point_checks(sheet, decisive, ctx)
    return effects


def _mal_en_point_checks(sheet: m.Sheet, damage: int, ctx: Context) -> dict:
    """AS-C5: resistance and volonte tests vs 5 + damage; sets the sheet's condition."""
    checks = hazards.mal_en_point(_skill(sheet, "resistance"), _skill(sheet, "volonte"), damage, ctx.dice)
    condition = sheet.condition.model_dump()
    if checks.dying:
        condition.update(dying=True, dies_in_rounds=checks.dies_in_rounds)
    if checks.unconscious_rounds is not None:
        condition["unconscious_rounds"] = checks.unconscious_rounds
    sheet.condition = m.Condition.model_validate(condition)
    return {
        "damage": damage,
        "resistance": summary(checks.resistance),
        "dying": checks.dying,
        "dies_in_rounds": checks.dies_in_rounds,
        "volonte": summary(checks.volonte),
        "unconscious_rounds": checks.unconscious_rounds,
    }


def _skill(sheet: m.Sheet, name: str) -> int:
    return rules.skill_value(sheet.skills, name)


@_action
def fall(ch: Character, sheet: m.Sheet, req: m.FallAction, ctx: Context) -> tuple[dict[str, Any], m.Sheet]:
    """AS-C8."""
    result = hazards.fall(req.metres, _skill(sheet, "acrobatie"), ctx.dice, voluntary=req.voluntary)
    body = {
        "metres": req.metres,
        "voluntary": req.voluntary,
        "damage_dice": list(result.dice),
        "tests": [summary(t) for t in result.tests],
        "cancelled": list(result.cancelled),
        "damage": result.damage,
        "effects": _harm(ch, sheet, result.damage, ctx),
    }
    return body, sheet


@_action
def fire(ch: Character, sheet: m.Sheet, req: m.FireAction, ctx: Context) -> tuple[dict[str, Any], m.Sheet]:
    """AS-C9: the AS-C5 checks (if any) use the damage of the round that brought vitality to 0."""
    rounds = hazards.fire(req.size, req.rounds, ctx.dice)
    damage = sum(sum(r) for r in rounds)
    body = {
        "size": req.size,
        "rounds": req.rounds,
        "damage_per_round": [sum(r) for r in rounds],
        "damage": damage,
        "effects": _harm(ch, sheet, damage, ctx, [sum(r) for r in rounds]),
    }
    return body, sheet


@_action
def asphyxia(ch: Character, sheet: m.Sheet, req: m.AsphyxiaAction, ctx: Context) -> tuple[dict[str, Any], m.Sheet]:
    """AS-C10."""
    result = hazards.asphyxia(
        _skill(sheet, "resistance"), req.rounds, ctx.dice, from_round=req.from_round, out_of_breath=req.out_of_breath
    )
    rounds = [
        {"round": r.round, "test": summary(r.test) if r.test else None, "damage": r.damage} for r in result.rounds
    ]
    body = {
        "from_round": req.from_round,
        "rounds": rounds,
        "out_of_breath": result.out_of_breath,
        "next_round": req.from_round + req.rounds,
        "damage": result.damage,
        "effects": _harm(ch, sheet, result.damage, ctx, result.damage_per_round),
    }
    return body, sheet


@_action
def damage(ch: Character, sheet: m.Sheet, req: m.DamageAction, ctx: Context) -> tuple[dict[str, Any], m.Sheet]:
    """AS-C3 (protection) then AS-C5 on reaching 0."""
    protection = sheet.protection if req.protection else 0
    taken = max(0, req.amount - protection)
    return {
        "amount": req.amount,
        "protection": protection,
        "damage": taken,
        "effects": _harm(ch, sheet, taken, ctx),
    }, sheet


@_action
def mal_en_point(
    ch: Character, sheet: m.Sheet, req: m.MalEnPointAction, ctx: Context
) -> tuple[dict[str, Any], m.Sheet]:
    """AS-C5 checks, for a character already at 0 vitality."""
    if vitality(sheet) > 0:
        raise RuleError("the character is not mal en point (vitality above 0)", field="type")
    return {"effects": {"mal_en_point": _mal_en_point_checks(sheet, req.damage, ctx)}}, sheet


@_action
def first_aid(ch: Character, sheet: m.Sheet, req: m.FirstAidAction, ctx: Context) -> tuple[dict[str, Any], m.Sheet]:
    """AS-C6: on a character mal en point; success → +1 vitality, no longer dying."""
    if vitality(sheet) > 0:
        raise RuleError("first aid is for a character mal en point (vitality 0)", field="type")
    if sheet.condition.dead:
        raise RuleError("the character is dead", field="type")
    soins = req.healer_soins if req.healer_soins is not None else _skill(sheet, "soins")
    target = req.target if req.target is not None else ctx.options.gm_difficulty
    test = hazards.first_aid(soins, target, ctx.dice, modifier=req.modifier)
    effects: dict[str, Any] = {}
    if test.success:
        effects["vitality"] = {"before": vitality(sheet), "after": vitality(sheet) + 1}
        sheet.vitality = vitality(sheet) + 1
        sheet.condition = sheet.condition.model_copy(update={"dying": False, "dies_in_rounds": None})
    return {"healer_id": req.healer_id, "test": summary(test), "effects": effects}, sheet


@_action
def rest(ch: Character, sheet: m.Sheet, req: m.RestAction, ctx: Context) -> tuple[dict[str, Any], m.Sheet]:
    """AS-C7: + resistance, + the healer's soins on a successful soins test (up to vitality_max)."""
    if sheet.condition.dead:
        raise RuleError("the character is dead", field="type")
    target = req.target if req.target is not None else ctx.options.gm_difficulty
    healing = hazards.natural_healing(
        _skill(sheet, "resistance"), ctx.dice, healer_soins=req.healer_soins, target=target
    )
    before = vitality(sheet)
    sheet.vitality = min(sheet.vitality_max, before + healing.gain)
    if sheet.vitality > 0:
        sheet.condition = m.Condition()
    return {
        "healer_id": req.healer_id,
        "test": summary(healing.test) if healing.test else None,
        "gain": healing.gain,
        "effects": {"vitality": {"before": before, "after": sheet.vitality}},
    }, sheet


@_action
def chase(ch: Character, sheet: m.Sheet, req: m.ChaseAction, ctx: Context) -> tuple[dict[str, Any], m.Sheet]:
    """AS-C12: one turn of a chase."""
    if req.take_11:
        check_take_11(ch, ctx, heroism_4d6=req.heroism_4d6)
    effects: dict[str, Any] = {}
    if req.heroism_4d6:
        sheet, effects = heroism_effect(sheet, 1, "rolling 4d6 (AS-H1)")
    spec = spec_for(
        ch,
        hazards.CHASE_SKILLS[req.mode],
        target=None,
        modifier=req.modifier,
        heroism_4d6=req.heroism_4d6,
        close_skill=req.close_skill,
        take_11=req.take_11,
    )
    turn = hazards.chase_turn(spec, req.progression, ctx.dice)
    effects["progression"] = {"before": turn.before, "after": turn.after}
    return {
        "mode": req.mode,
        "test": summary(turn.test),
        "step": turn.step,
        "progression": turn.after,
        "effects": effects,
    }, sheet


@_action
def heroic_effect(
    ch: Character, sheet: m.Sheet, req: m.HeroicEffectAction, ctx: Context
) -> tuple[dict[str, Any], m.Sheet]:
    """AS-H3: 1 heroism for an asset's heroic effect."""
    asset = next((a for a in sheet.assets if a.name.lower() == req.asset.strip().lower()), None)
    if asset is None:
        raise RuleError(f"the character has no asset {req.asset!r}", field="asset", code="unknown_name")
    sheet, effects = heroism_effect(sheet, 1, "a heroic effect (AS-H3)", field="heroism")
    return {"asset": asset.name, "heroic_effect": asset.heroic_effect, "effects": effects}, sheet


def _vitality_change(entry: dict[str, Any], ch: Character) -> tuple[int, int] | None:
    """The character's vitality (before, after) a logged entry changed it, or None (an entry that
    left it as it was too: asphyxia within the rounds held): a character action's
    `effects.vitality`, or a fight's action's vitality changes (first before, last after)."""
    change: tuple[int, int] | None = None
    if entry.get("kind") == "combat":
        mine = [c for c in entry.get("changes") or [] if c.get("character_id") == ch.id and c["field"] == "vitality"]
        if mine:
            change = int(mine[0]["before"]), int(mine[-1]["after"])
    elif entry.get("kind") == "action" and entry.get("character_id") == ch.id:
        effect = (entry.get("effects") or {}).get("vitality")
        if effect:
            change = int(effect["before"]), int(effect["after"])
    return change if change is not None and change[0] != change[1] else None


def _blow(entry: dict[str, Any] | None, ch: Character) -> tuple[int, int]:
    """AS-H4: the logged blow named by `damage_id`: (the vitality it took, the vitality before it)."""
    if entry is None:
        raise RuleError("no log entry with this id in this campaign", field="damage_id", code="unknown_id")
    change = _vitality_change(entry, ch)
    if change is None or change[1] >= change[0]:
        raise RuleError(f"log entry {entry.get('id')} took no vitality from this character (AS-H4)", field="damage_id")
    return change[0] - change[1], change[0]


def _blow_just_taken(ctx: Context, ch: Character) -> tuple[int, int]:
    """AS-H4 without `damage_id`: the damage "just announced" is the character's latest vitality
    change, which must be a blow (not a heal, a revert or a cancel: a blow is given back once):
    (the vitality it took, the vitality before it)."""
    for entry in ctx.latest_entries(ch.id):
        change = _vitality_change(entry, ch)
        if change is None:
            continue
        if change[1] < change[0]:
            return change[0] - change[1], change[0]
        break
    raise RuleError(
        "the character's latest vitality change is no blow to cancel (AS-H4: damage just taken; "
        "name an earlier one with damage_id)",
        field="already_applied",
    )


@_action
def cancel_damage(
    ch: Character, sheet: m.Sheet, req: m.CancelDamageAction, ctx: Context
) -> tuple[dict[str, Any], m.Sheet]:
    """AS-H4: 2 heroism cancel announced damage; already applied, exactly what that blow took is
    given back, never above the vitality before it: the blow named by `damage_id` (a 7-damage blow
    on 5 vitality gives back 5), else the character's latest vitality change, which must be a blow."""
    blow = None
    if req.damage_id is not None:
        blow = _blow(ctx.get_log_entry(req.damage_id), ch)
    elif req.already_applied:
        blow = _blow_just_taken(ctx, ch)
    sheet, effects = heroism_effect(sheet, 2, "cancelling damage (AS-H4)", field="heroism")
    if blow is not None:
        before = vitality(sheet)
        lost, before_blow = blow
        sheet.vitality = hazards.given_back(req.damage, before, sheet.vitality_max, lost=lost, before_blow=before_blow)
        effects["vitality"] = {"before": before, "after": sheet.vitality}
        if sheet.vitality > 0:
            sheet.condition = m.Condition()
    return {
        "damage": req.damage,
        "already_applied": blow is not None,
        "damage_id": req.damage_id,
        "lost": blow[0] if blow is not None else None,
        "effects": effects,
    }, sheet


@_action
def protect_ally(
    ch: Character, sheet: m.Sheet, req: m.ProtectAllyAction, ctx: Context
) -> tuple[dict[str, Any], m.Sheet]:
    """AS-H5 (cost 1, Decision): this character takes the damage meant for an ally."""
    if req.ally_id == ch.id:
        raise RuleError("the ally is another character", field="ally_id", code="self_target")
    sheet, effects = heroism_effect(sheet, 1, "taking an ally's damage (AS-H5)", field="heroism")
    protection = sheet.protection if req.protection else 0
    taken = max(0, req.damage - protection)
    effects.update(_harm(ch, sheet, taken, ctx))
    return {
        "ally_id": req.ally_id,
        "amount": req.damage,
        "protection": protection,
        "damage": taken,
        "effects": effects,
    }, sheet


ACTIONS: dict[str, Action] = {
    "fall": Action(m.FallAction, fall),
    "fire": Action(m.FireAction, fire),
    "asphyxia": Action(m.AsphyxiaAction, asphyxia),
    "damage": Action(m.DamageAction, damage, gm_only=True),
    "mal_en_point": Action(m.MalEnPointAction, mal_en_point),
    "first_aid": Action(m.FirstAidAction, first_aid),
    "rest": Action(m.RestAction, rest),
    "chase": Action(m.ChaseAction, chase),
    "heroic_effect": Action(m.HeroicEffectAction, heroic_effect),
    "cancel_damage": Action(m.CancelDamageAction, cancel_damage),
    "protect_ally": Action(m.ProtectAllyAction, protect_ally),
}
