"""The asgard character actions (AS-C5..C10, AS-C12, AS-H3..H5): each `_<type>`
takes a copy of the sheet and returns (body, new sheet)."""
from __future__ import annotations

import copy
from typing import Any

from app.models.rulesets import asgard as m
from app.rules import asgard as rules
from app.rules.asgard import hazards
from app.rules.asgard.core import RULESET
from app.rules.errors import RuleError
from app.services.rulesets.asgard.common import (
    _option,
    check_take_11,
    heroism_effect,
    spec_for,
)
from app.services.rulesets.base import CharacterState, OperationContext, Outcome


class AsgardActions:
    """Mixed into AsgardAdapter: `action` dispatches on the body's `type`."""

    def action(self, ch: CharacterState, req, ctx: OperationContext) -> Outcome:
        """Dispatch to `_<type>`; every action body has kind "action" and its type."""
        sheet = copy.deepcopy(ch.sheet)
        body, sheet = getattr(self, f"_{req.type}")(ch, sheet, req, ctx)
        body = {"kind": "action", "type": req.type, "ruleset": RULESET, "character_id": ch.id, **body}
        body.setdefault("effects", {})
        changed = sheet != ch.sheet
        return Outcome("action", body, ch.id, {ch.id: sheet} if changed else {})

    def _harm(self, ch: CharacterState, sheet: dict, damage: int, ctx: OperationContext, blows=None) -> dict[str, Any]:
        """Take `damage` off vitality (AS-C3); on reaching 0, roll the AS-C5 checks. Mutates `sheet`
        (a copy) and returns the effects."""
        before = sheet["vitality"]
        sheet["vitality"] = hazards.take_damage(before, damage)
        effects: dict[str, Any] = {"vitality": {"before": before, "after": sheet["vitality"]}}
        if before > 0 and sheet["vitality"] == 0:
            decisive = hazards.decisive_damage(before, blows or (damage,))  # AS-C5: the round that did it
            effects["mal_en_point"] = self._mal_en_point_checks(ch, sheet, decisive, ctx)
        return effects

    def _mal_en_point_checks(self, ch: CharacterState, sheet: dict, damage: int, ctx: OperationContext) -> dict:
        """AS-C5: resistance and volonte tests vs 5 + damage; sets the sheet's condition."""
        skills = sheet.get("skills", {})
        checks = hazards.mal_en_point(rules.skill_value(skills, "resistance"), rules.skill_value(skills, "volonte"),
                                      damage, ctx.dice)
        condition = {**sheet.get("condition", {})}
        if checks.dying:
            condition.update(dying=True, dies_in_rounds=checks.dies_in_rounds)
        if checks.unconscious_rounds is not None:
            condition["unconscious_rounds"] = checks.unconscious_rounds
        sheet["condition"] = m.Condition.model_validate(condition).model_dump(mode="json")
        return {"damage": damage, "resistance": self._summary(checks.resistance), "dying": checks.dying,
                "dies_in_rounds": checks.dies_in_rounds, "volonte": self._summary(checks.volonte),
                "unconscious_rounds": checks.unconscious_rounds}

    def _skill(self, sheet: dict, name: str) -> int:
        return rules.skill_value(sheet.get("skills", {}), name)

    def _fall(self, ch, sheet, req: m.FallAction, ctx):
        """AS-C8."""
        result = hazards.fall(req.metres, self._skill(sheet, "acrobatie"), ctx.dice, voluntary=req.voluntary)
        body = {"metres": req.metres, "voluntary": req.voluntary, "damage_dice": list(result.dice),
                "tests": [self._summary(t) for t in result.tests], "cancelled": list(result.cancelled),
                "damage": result.damage, "effects": self._harm(ch, sheet, result.damage, ctx)}
        return body, sheet

    def _fire(self, ch, sheet, req: m.FireAction, ctx):
        """AS-C9: the AS-C5 checks (if any) use the damage of the round that brought vitality to 0."""
        rounds = hazards.fire(req.size, req.rounds, ctx.dice)
        damage = sum(sum(r) for r in rounds)
        body = {"size": req.size, "rounds": req.rounds, "damage_per_round": [sum(r) for r in rounds],
                "damage": damage, "effects": self._harm(ch, sheet, damage, ctx, [sum(r) for r in rounds])}
        return body, sheet

    def _asphyxia(self, ch, sheet, req: m.AsphyxiaAction, ctx):
        """AS-C10."""
        result = hazards.asphyxia(self._skill(sheet, "resistance"), req.rounds, ctx.dice,
                                  from_round=req.from_round, out_of_breath=req.out_of_breath)
        rounds = [{"round": r.round, "test": self._summary(r.test) if r.test else None, "damage": r.damage}
                  for r in result.rounds]
        body = {"from_round": req.from_round, "rounds": rounds, "out_of_breath": result.out_of_breath,
                "next_round": req.from_round + req.rounds, "damage": result.damage,
                "effects": self._harm(ch, sheet, result.damage, ctx, result.damage_per_round)}
        return body, sheet

    def _damage(self, ch, sheet, req: m.DamageAction, ctx):
        """AS-C3 (protection) then AS-C5 on reaching 0."""
        protection = sheet.get("protection", 0) if req.protection else 0
        damage = max(0, req.amount - protection)
        return {"amount": req.amount, "protection": protection, "damage": damage,
                "effects": self._harm(ch, sheet, damage, ctx)}, sheet

    def _mal_en_point(self, ch, sheet, req: m.MalEnPointAction, ctx):
        """AS-C5 checks, for a character already at 0 vitality."""
        if sheet["vitality"] > 0:
            raise RuleError("the character is not mal en point (vitality above 0)", field="type")
        return {"effects": {"mal_en_point": self._mal_en_point_checks(ch, sheet, req.damage, ctx)}}, sheet

    def _first_aid(self, ch, sheet, req: m.FirstAidAction, ctx):
        """AS-C6: on a character mal en point; success → +1 vitality, no longer dying."""
        if sheet["vitality"] > 0:
            raise RuleError("first aid is for a character mal en point (vitality 0)", field="type")
        if sheet.get("condition", {}).get("dead"):
            raise RuleError("the character is dead", field="type")
        soins = req.healer_soins if req.healer_soins is not None else self._skill(sheet, "soins")
        target = req.target if req.target is not None else _option(ctx, "gm_difficulty", 10)
        test = hazards.first_aid(soins, target, ctx.dice, modifier=req.modifier)
        effects: dict[str, Any] = {}
        if test.success:
            effects["vitality"] = {"before": sheet["vitality"], "after": sheet["vitality"] + 1}
            sheet["vitality"] += 1
            sheet["condition"] = {**sheet.get("condition", {}), "dying": False, "dies_in_rounds": None}
        return {"healer_id": req.healer_id, "test": self._summary(test), "effects": effects}, sheet

    def _rest(self, ch, sheet, req: m.RestAction, ctx):
        """AS-C7: + resistance, + the healer's soins on a successful soins test (up to vitality_max)."""
        if sheet.get("condition", {}).get("dead"):
            raise RuleError("the character is dead", field="type")
        target = req.target if req.target is not None else _option(ctx, "gm_difficulty", 10)
        healing = hazards.natural_healing(self._skill(sheet, "resistance"), ctx.dice,
                                          healer_soins=req.healer_soins, target=target)
        before = sheet["vitality"]
        sheet["vitality"] = min(sheet["vitality_max"], before + healing.gain)
        if sheet["vitality"] > 0:
            sheet["condition"] = m.Condition().model_dump(mode="json")
        return {"healer_id": req.healer_id, "test": self._summary(healing.test) if healing.test else None,
                "gain": healing.gain, "effects": {"vitality": {"before": before, "after": sheet["vitality"]}}}, sheet

    def _chase(self, ch, sheet, req: m.ChaseAction, ctx):
        """AS-C12: one turn of a chase."""
        if req.take_11:
            check_take_11(ch, ctx, heroism_4d6=req.heroism_4d6)
        effects = {}
        if req.heroism_4d6:
            sheet, effects = heroism_effect(sheet, 1, "rolling 4d6 (AS-H1)")
        spec = spec_for(ch, hazards.CHASE_SKILLS[req.mode], target=None, modifier=req.modifier,
                        heroism_4d6=req.heroism_4d6, close_skill=req.close_skill, take_11=req.take_11)
        turn = hazards.chase_turn(spec, req.progression, ctx.dice)
        effects["progression"] = {"before": turn.before, "after": turn.after}
        return {"mode": req.mode, "test": self._summary(turn.test), "step": turn.step,
                "progression": turn.after, "effects": effects}, sheet

    def _heroic_effect(self, ch, sheet, req: m.HeroicEffectAction, ctx):
        """AS-H3: 1 heroism for an asset's heroic effect."""
        asset = next((a for a in sheet.get("assets", []) if a["name"].lower() == req.asset.strip().lower()), None)
        if asset is None:
            raise RuleError(f"the character has no asset {req.asset!r}", field="asset")
        sheet, effects = heroism_effect(sheet, 1, "a heroic effect (AS-H3)", field="heroism")
        return {"asset": asset["name"], "heroic_effect": asset.get("heroic_effect"), "effects": effects}, sheet

    def _cancel_damage(self, ch, sheet, req: m.CancelDamageAction, ctx):
        """AS-H4: 2 heroism cancel announced damage (given back if already applied)."""
        sheet, effects = heroism_effect(sheet, 2, "cancelling damage (AS-H4)", field="heroism")
        if req.already_applied:
            before = sheet["vitality"]
            sheet["vitality"] = min(sheet["vitality_max"], before + req.damage)
            effects["vitality"] = {"before": before, "after": sheet["vitality"]}
            if sheet["vitality"] > 0:
                sheet["condition"] = m.Condition().model_dump(mode="json")
        return {"damage": req.damage, "already_applied": req.already_applied, "effects": effects}, sheet

    def _protect_ally(self, ch, sheet, req: m.ProtectAllyAction, ctx):
        """AS-H5 (cost 1, Decision): this character takes the damage meant for an ally."""
        if req.ally_id == ch.id:
            raise RuleError("the ally is another character", field="ally_id")
        sheet, effects = heroism_effect(sheet, 1, "taking an ally's damage (AS-H5)", field="heroism")
        protection = sheet.get("protection", 0) if req.protection else 0
        damage = max(0, req.damage - protection)
        effects.update(self._harm(ch, sheet, damage, ctx))
        return {"ally_id": req.ally_id, "amount": req.damage, "protection": protection, "damage": damage,
                "effects": effects}, sheet
