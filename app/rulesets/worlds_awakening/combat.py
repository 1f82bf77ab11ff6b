"""Worlds Awakening in an encounter: hp and mp, turn order WA-C4, down at 0 HP (WA-C5).

Table dice of `start`: only the d20 roll-offs of tied initiatives (WA-C4), from
the highest initiative down, tied combatants in the order they were added, then
those still tied again, and so on."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import groupby
from typing import Any, ClassVar

from app.models.encounters import CombatAction, EncounterOptions
from app.rules.errors import RuleError
from app.rulesets.contract.combat import (
    CombatDice,
    EncounterRules,
    Entrant,
    Exchange,
    ExchangeOdds,
    Initiative,
    Party,
    Pool,
    one_per_slot,
    sheet_weapon,
)
from app.rulesets.worlds_awakening.rules import core as wa
from app.rulesets.worlds_awakening.rules import odds as exact
from app.rulesets.worlds_awakening.rules.steps import WorldsAwakeningStep
from app.rulesets.worlds_awakening.schemas import AttackRequest as WorldsAwakeningAttackRequest
from app.rulesets.worlds_awakening.schemas import Sheet


class WorldsAwakening(EncounterRules):
    ruleset = "worlds-awakening"
    pools = (Pool("hp", "hp", "hp_max"), Pool("mp", "mp", "mp_max"))
    reactions = ("none",)  # WA-C1: an attack is tested against the defense value; no reaction
    dice_order = "WA-C4 d20 roll-offs of tied initiatives, highest initiative first"

    naming_step_fields = ("defense_of",)  # WA-C1: whose defense
    combat_actions: ClassVar[dict[str, type[CombatAction]]] = {"attack": WorldsAwakeningAttackRequest}

    def pool_changed(self, sheet: Sheet, pool: Pool, before: int, after: int) -> list[WorldsAwakeningStep]:
        """WA-C5: at 0 HP the character is `down`; healed above 0 it is no longer."""
        if pool.name != "hp":
            return []
        if after > 0 and sheet.down:
            sheet.down = False
            return [
                {
                    "rule": "WA-C5",
                    "key": "above_0_hp_no_longer_down",
                    "what": "above 0 HP: no longer down",
                    "resource": "hp",
                    "after": after,
                }
            ]
        if after <= 0 < before and not sheet.down:
            sheet.down = True
            return [{"rule": "WA-C5", "key": "down_0_hp", "what": "down: 0 HP", "resource": "hp", "after": after}]
        return []

    def attack(self, x: Exchange) -> None:
        """WA-C1..C3, WA-C5, WA-T5 (see `resolve_attack`)."""
        req: WorldsAwakeningAttackRequest = x.req
        x.steps.extend(resolve_attack(x.dice, x.actor, x.foe, _choice(req)))

    def odds(self, x: Exchange) -> ExchangeOdds | None:
        """The exact odds of an attack (WA-C1..C3, WA-C5, `attack_odds`)."""
        return attack_odds(x.actor, x.foe, _choice(x.req)) if x.req.type == "attack" else None

    def roll_initiative(
        self, dice: CombatDice, entrants: list[Entrant], options: EncounterOptions, campaign_options: Any
    ) -> Initiative:
        """WA-C4: initiative = 10 + DEX (the GM's override replaces it), highest first;
        ties broken by d20 roll-offs, highest first."""
        dex = [e.override - 10 if e.override is not None else e.sheet.stats.get("DEX", 0) for e in entrants]
        mark = dice.mark()
        ranked = wa.turn_order(dex, dice.source)
        dice.tag(mark, (entrants[i].combatant_id for i in _rollers(ranked)))
        steps: list[WorldsAwakeningStep] = [
            {
                "rule": "WA-C4",
                "key": "initiative_10_dex",
                "what": "initiative = 10 + DEX",
                "combatant_id": e.combatant_id,
                "initiative": wa.initiative(d),
                "override": e.override is not None,
            }
            for e, d in zip(entrants, dex)
        ]
        steps += [
            {
                "rule": "WA-C4",
                "key": "tie_d20_roll_off_highest_first",
                "what": "tie: d20 roll-off, highest first",
                "combatant_id": entrants[r.index].combatant_id,
                "d20": list(r.rolloffs),
            }
            for r in ranked
            if r.rolloffs
        ]
        order = one_per_slot(
            [
                (
                    entrants[r.index].combatant_id,
                    r.initiative,
                    {"die": "d20", "value": r.rolloffs[-1], "rolls": list(r.rolloffs)} if r.rolloffs else None,
                )
                for r in ranked
            ]
        )
        return Initiative(
            order=order, initiatives={entrants[r.index].combatant_id: r.initiative for r in ranked}, steps=steps
        )


def _choice(req: WorldsAwakeningAttackRequest) -> AttackChoice:
    return AttackChoice(kind=req.kind, stat=req.stat, modifier=req.modifier, weapon=req.weapon, damage=req.damage)


def _rollers(ranked: list[wa.InitiativeEntry]) -> Iterator[int]:
    """Who rolled each roll-off die, in the order `worlds_awakening.turn_order` rolls them
    (each tie group from the highest initiative down, its members by index, then the
    groups still tied, highest roll first): the pure rule does not say whose a die is."""
    rolloffs = {r.index: r.rolloffs for r in ranked}
    by_initiative = sorted(ranked, key=lambda r: (-r.initiative, r.index))
    for _, group in groupby(by_initiative, key=lambda r: r.initiative):
        members = [r.index for r in group]
        if len(members) > 1:
            yield from _group_rollers(members, rolloffs, 0)


def _group_rollers(members: list[int], rolloffs: dict[int, tuple[int, ...]], depth: int) -> Iterator[int]:
    yield from members
    ordered = sorted(members, key=lambda i: (-rolloffs[i][depth], i))
    for _, run in groupby(ordered, key=lambda i: rolloffs[i][depth]):
        tied = list(run)
        if len(tied) > 1:
            yield from _group_rollers(tied, rolloffs, depth + 1)


# --- attacks (WA-C1..C3, WA-C5) ---------------------------------------------------------------

KINDS = ("physical", "magical")
DEFAULT_STAT = {"physical": "FOR", "magical": "INT"}  # Decision: without a weapon, FOR or INT


@dataclass(frozen=True)
class AttackChoice:
    """WA-C1: a physical or magical attack, its characteristic (the weapon's by default), the
    weapon of the sheet or a damage expression, other modifiers."""

    kind: str = "physical"
    stat: str | None = None
    modifier: int = 0
    weapon: str | None = None
    damage: str | None = None


def _engage(
    attacker: Party, target: Party, choice: AttackChoice
) -> tuple[str, str, str | None, dict[str, int], int, int, int]:
    """WA-C1, WA-S3, WA-T4: the characteristic, damage and weapon; the attacker's stats and level;
    the target's defense for this kind of attack; the attacker's CHA (the critical ranges)."""
    if choice.kind not in KINDS:
        raise RuleError(
            f"unknown attack kind {choice.kind!r}; known: {', '.join(KINDS)}", field="kind", code="unknown_name"
        )
    stat, expression, weapon = _weapon(attacker.sheet, choice)
    mine, theirs = _sheet(attacker), _sheet(target)
    stats: dict[str, int] = {str(k): v for k, v in mine.stats.items()}
    level, t_stats, t_level = mine.level, theirs.stats, theirs.level
    defense = (
        wa.physical_defense(t_stats.get("CON", 0), t_level)
        if choice.kind == "physical"
        else wa.magical_defense(t_stats.get("SAG", 0), t_level)
    )
    return stat, expression, weapon, stats, level, defense, stats.get("CHA", 0)


def attack_odds(attacker: Party, target: Party, choice: AttackChoice) -> ExchangeOdds:
    """The exact odds of `resolve_attack` (`rules.odds.attack_odds`), from the same engaged attack
    and its pending WA-T5 modifier."""
    stat, expression, _, stats, level, defense, cha = _engage(attacker, target, choice)
    pending = _consume_pending(attacker, stat, [])
    odds = exact.attack_odds(
        stats.get(stat, 0),
        level,
        cha,
        expression,
        defense,
        COMBAT.pools[0].value(target.sheet),
        modifier=choice.modifier + pending,
    )
    return ExchangeOdds(outcomes=odds.outcomes, hit=odds.hit, down=odds.down)


def resolve_attack(dice: CombatDice, attacker: Party, target: Party, choice: AttackChoice) -> list[WorldsAwakeningStep]:
    """One Worlds Awakening attack; changes the target (a copy), returns the steps.

    WA-C1 d20 + the characteristic + level against the target's defense (physical 10 + CON +
    level, magical 10 + SAG + level, WA-S3; no reaction); WA-T4 the attacker's CHA widens the
    critical ranges; WA-C2 a critical success reaching the defense rolls the damage dice twice
    (modifiers once), a critical below it hits for normal damage; WA-C3 a critical failure
    misses; WA-C5 HP never below 0, `down` at 0. Dice: the d20, then the damage dice (twice
    on WA-C2)."""
    stat, expression, weapon, stats, level, defense, cha = _engage(attacker, target, choice)
    theirs = _sheet(target)
    steps: list[WorldsAwakeningStep] = []
    pending = _consume_pending(attacker, stat, steps)
    result = wa.attack(
        stats.get(stat, 0),
        level,
        cha,
        expression,
        defense,
        dice.of(attacker.id),
        modifier=choice.modifier + pending,
    )
    steps += [
        {
            "rule": "WA-C1",
            "key": "attack_test",
            "what": "attack test",
            "combatant_id": attacker.id,
            "kind": choice.kind,
            "stat": stat,
            "stat_value": stats.get(stat, 0),
            "level": level,
            "modifier": choice.modifier,
            "natural": result.natural,
            "total": result.total,
            "defense": defense,
            "defense_of": target.id,
            "critical": result.critical,
            "hit": result.hit,
        }
    ]
    if result.critical == "failure":
        steps.append(
            {
                "rule": "WA-C3",
                "key": "critical_failure_a_miss",
                "what": "critical failure: a miss",
                "combatant_id": attacker.id,
                "natural": result.natural,
                "range": wa.crit_failure_max(cha),
            }
        )
    elif result.critical == "success":
        steps.append(
            {
                "rule": "WA-C2",
                "key": "critical_success",
                "what": "critical success"
                + (": damage dice rolled twice" if result.bonus_damage else " below the defense: normal damage"),
                "combatant_id": attacker.id,
                "natural": result.natural,
                "range": wa.crit_success_min(cha),
                "bonus_damage": result.bonus_damage,
            }
        )
    if not result.hit:
        return steps
    steps.append(
        {
            "rule": "WA-C2" if result.bonus_damage else "WA-C1",
            "key": "damage",
            "what": "damage",
            "combatant_id": attacker.id,
            "weapon": weapon,
            "expression": expression,
            "dice": list(result.damage_rolls),
            "doubled_dice": result.bonus_damage,
            "damage": result.damage,
        }
    )
    before = COMBAT.pools[0].value(target.sheet)
    after, down = wa.apply_damage(before, result.damage)
    theirs.hp = after
    steps.append(
        {
            "rule": "WA-C5",
            "key": "hp",
            "what": "hp",
            "combatant_id": target.id,
            "damage": result.damage,
            "resource": "hp",
            "before": before,
            "after": after,
        }
    )
    if down and before > 0:
        theirs.down = True
        steps.append({"rule": "WA-C5", "key": "down_0_hp", "what": "down: 0 HP", "combatant_id": target.id})
    return steps


def _consume_pending(attacker: Party, stat: str, steps: list[WorldsAwakeningStep]) -> int:
    """WA-T5: a pending ±2 on the attack's characteristic is used up by this test, as by any test."""
    sheet = _sheet(attacker)
    value = wa.use_pending(sheet.pending, stat)  # type: ignore[misc]  # a Stat (str here): checked by `_weapon`
    if value:
        steps.append(
            {
                "rule": "WA-T5",
                "key": "pending_modifier_consumed",
                "what": "pending modifier consumed",
                "combatant_id": attacker.id,
                "stat": stat,
                "value": value,
            }
        )
    return value


def _weapon(sheet: Sheet, choice: AttackChoice) -> tuple[str, str, str | None]:
    """(characteristic, damage expression, weapon name): the named weapon of the sheet, a
    damage expression, or the sheet's first weapon; `stat` overrides the weapon's."""
    if choice.weapon is not None and choice.damage is not None:
        raise RuleError("give `weapon` or `damage`, not both", field="damage")
    if choice.stat is not None and choice.stat not in wa.STATS:
        raise RuleError(
            f"unknown characteristic {choice.stat!r}; known: {', '.join(wa.STATS)}", field="stat", code="unknown_name"
        )
    if choice.damage is not None:
        return choice.stat or DEFAULT_STAT[choice.kind], choice.damage, None
    w = sheet_weapon(sheet, choice.weapon, "WA-C1")
    return choice.stat or w.stat, w.damage, w.name


def _sheet(party: Party) -> Sheet:
    """The party's sheet, this ruleset's model (the flow parsed it: `Party.sheet`)."""
    return party.sheet


COMBAT = WorldsAwakening()
