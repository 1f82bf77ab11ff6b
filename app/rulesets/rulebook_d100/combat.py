"""Rulebook D100 in an encounter: hp and pe, initiative RB-F4.

Table dice of `start`: each combatant's HAB test, a d100, in the order
combatants were added (none for a GM override), then the d100 rerolls of ties
still equal after the units digit (RB-C2), tied combatants in that order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field, StrictBool, StrictInt

from app.models.encounters import AttackRequest, CombatAction, EncounterOptions
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
    entry,
    sheet_weapon,
)
from app.rulesets.rulebook_d100 import schemas
from app.rulesets.rulebook_d100.rules import core as rb
from app.rulesets.rulebook_d100.rules import odds as exact
from app.rulesets.rulebook_d100.rules import turns
from app.rulesets.rulebook_d100.rules.steps import RulebookD100Step, ShownTest, step
from app.rulesets.rulebook_d100.schemas import Name, Options, Sheet


# Defined here, not in schemas.py: the OpenAPI document names a model of a ruleset's schemas
# `<Ruleset><Class>` (app/api/openapi_doc.py), and `RulebookAttackRequest` is its published name.
class RulebookAttackRequest(AttackRequest):
    """RB-F2, RB-F3: table dice in rule order: the attack d100, the dodge d100 (when the
    target dodges a successful attack), RB-C2 d100 rerolls of a tie (attacker, defender), then
    the weapon's damage dice."""

    kind: Literal["melee", "ranged", "morale"] | None = Field(
        None,
        description="RB-F2: melee (FOR), ranged (PER) or morale (CHA or DIS, damage off pe); default: the "
        "weapon's kind, else melee.",
    )
    stat: Name | None = Field(None, description="RB-F2: the attack stat, one the kind allows (default: its first).")
    skill: Name | None = Field(None, description="A skill bonus (RB-T1); missing from the sheet: a weakened roll.")
    modifier: StrictInt = Field(0, ge=-1000, le=1000, description="Other modifiers of the attack's percentage.")
    reaction: Literal["dodge", "absorb", "none"] | None = Field(
        None, description="RB-F3: overrides the target's standing reaction (only a caller who controls the target)."
    )
    free_attack: StrictBool = Field(
        False,
        description="RB-F3: the free attack a critical dodge earned, taken at once by whoever controls the dodger "
        "(its player too, outside its turn), before the turn changes, once; not the turn's action.",
    )


class RulebookD100(EncounterRules):
    ruleset = "rulebook-d100"
    Counters = schemas.Counters
    pools = (Pool("hp", "hp", "hp_max"), Pool("pe", "pe", "pe_max"))  # RB-F3 Decision: both stop at 0
    reactions = ("dodge", "absorb", "none")  # RB-F3
    default_reaction = "dodge"
    late_rule = "RB-F4"
    dice_order = "RB-F4 d100 HAB test per combatant in the order added, then RB-C2 d100 rerolls of ties"

    combat_actions: ClassVar[dict[str, type[CombatAction]]] = {"attack": RulebookAttackRequest}
    more_actions = turns.MORE_ACTIONS  # README "Actions per turn"

    def out_of_turn(self, actor: Party, req: CombatAction) -> str | None:
        """RB-F3: the free attack a critical dodge earned in this turn is the dodger's to take at once."""
        if isinstance(req, RulebookAttackRequest) and req.free_attack and turns.has_free_attack(actor.turn):
            return "RB-F3"
        return None

    def attack(self, x: Exchange) -> None:
        """RB-F1..F3, RB-C4 (see `resolve_attack`); RB-F3 `free_attack`: the one a critical dodge earned."""
        req: RulebookAttackRequest = x.req
        if req.free_attack:
            dodged = turns.take_free_attack(x.actor.turn, x.actor.id)
            x.steps.append(step("RB-F3", "free attack", key="free_attack", combatant_id=x.actor.id, dodged=dodged))
        choice = _choice(req)
        x.steps.extend(
            resolve_attack(
                x.dice,
                x.actor,
                x.foe,
                x.foe_reaction,
                choice,
                round_=x.round,
                campaign_options=_options(x.campaign_options),
            )
        )

    def odds(self, x: Exchange) -> ExchangeOdds | None:
        """The exact odds of an attack (RB-F1..F3, RB-C4, `attack_odds`)."""
        if x.req.type != "attack":
            return None
        return attack_odds(
            x.actor,
            x.foe,
            x.foe_reaction,
            _choice(x.req),
            round_=x.round,
            campaign_options=_options(x.campaign_options),
        )

    def roll_initiative(
        self, dice: CombatDice, entrants: list[Entrant], options: EncounterOptions, campaign_options: Any
    ) -> Initiative:
        """RB-F4: a HAB ranking (RB-C3: level, then units digit, then d100 rerolls); a
        critical success gains an extra action before round 1 (it opens the round), a
        critical failure acts only from round 2. A GM override is a success at that level."""
        results: list[rb.TestResult] = []
        steps: list[RulebookD100Step] = []
        for e in entrants:
            result = (
                _override(e.override)
                if e.override is not None
                else rb.roll_test(_spec(e.sheet, _options(campaign_options)), dice.of(e.combatant_id), "initiative")
            )
            results.append(result)
            steps.append(
                {
                    "rule": "RB-F4",
                    "key": "hab_test",
                    "what": "HAB test",
                    "combatant_id": e.combatant_id,
                    "roll": None if e.override is not None else result.roll,
                    "percentage": result.percentage,
                    "level": result.level,
                    "outcome": result.outcome,
                    "override": e.override is not None,
                }
            )
        mark = dice.mark()
        placings = rb.initiative(results, [dice.of(e.combatant_id) for e in entrants])
        rerolls = _rerolls(dice, mark)
        extras, order = [], []
        for p in placings:
            e, r = entrants[p.index], results[p.index]
            tie = {"die": "d100", "value": r.roll, "units": r.units} if p.tiebreak == "units" else None
            if p.tiebreak == "reroll":
                mine = rerolls.get(e.combatant_id, [])
                tie = {"die": "d100", "value": mine[-1], "rolls": mine}
                steps.append(
                    {
                        "rule": "RB-C2",
                        "key": "tie_d100_rerolls_lowest_first",
                        "what": "tie: d100 rerolls, lowest first",
                        "combatant_id": e.combatant_id,
                        "d100": mine,
                    }
                )
            if p.extra_action:
                extras.append((e.combatant_id, r.level))
                steps.append(
                    {
                        "rule": "RB-F4",
                        "key": "critical_success_an_extra_action_before_round_1",
                        "what": "critical success: an extra action before round 1",
                        "combatant_id": e.combatant_id,
                    }
                )
            if p.first_round > 1:
                steps.append(
                    {
                        "rule": "RB-F4",
                        "key": "critical_failure_acts_only_from_round_2",
                        "what": "critical failure: acts only from round 2",
                        "combatant_id": e.combatant_id,
                    }
                )
            order.append((e.combatant_id, r.level, tie, p.first_round))
        entries = [entry(cid, slot, level, extra_action=True) for slot, (cid, level) in enumerate(extras)]
        entries += [
            entry(cid, len(extras) + n, level, tiebreak=tie, from_round=first)
            for n, (cid, level, tie, first) in enumerate(order)
        ]
        return Initiative(
            order=entries,
            initiatives={entrants[p.index].combatant_id: results[p.index].level for p in placings},
            steps=steps,
        )

    def joining(self, entries: list[dict[str, Any]], round_: int) -> list[dict[str, Any]]:
        """RB-F4 for a combatant joining in round `round_`: its critical success's extra action was
        before round 1 (none now); its critical failure loses the round it joins in."""
        return [
            {**e, "from_round": round_ + 1} if e.get("from_round", 1) > 1 else e
            for e in entries
            if not e["extra_action"]
        ]

    def next_round(
        self,
        dice: CombatDice,
        order: list[dict[str, Any]],
        entrants: list[Entrant] | None,
        round_: int,
        options: EncounterOptions,
        campaign_options: Any,
    ) -> Initiative | None:
        """RB-F4: the extra actions were before round 1 only; the ranking stays."""
        if not any(e["extra_action"] for e in order):
            return None
        kept = [e for e in order if not e["extra_action"]]
        return Initiative(order=[{**e, "slot": slot} for slot, e in enumerate(kept)])


def _rerolls(dice: CombatDice, mark: int) -> dict[str, list[int]]:
    """Each combatant's RB-C2 rerolls (the dice rolled since `mark`), in order."""
    out: dict[str, list[int]] = {}
    for index in range(mark, len(dice.source.rolls)):
        out.setdefault(dice.by[index], []).append(dice.source.rolls[index].value)
    return out


def _options(parsed: Any) -> Options:
    """The campaign's options the flow parsed once (RB-T6's criticals)."""
    assert isinstance(parsed, Options)
    return parsed


def _spec(sheet: Sheet, campaign_options: Options) -> rb.TestSpec:
    return rb.TestSpec(
        stat_value=_stat(sheet, "HAB"),
        crit_chance=sheet.crit_chance,
        rescue_negative=campaign_options.crit_success_rescues_negative,
        ruin_over_100=campaign_options.crit_failure_ruins_over_100,
    )


def _override(level: int) -> rb.TestResult:
    """The GM's initiative: a plain success at that level (ties: as a roll of 10, RB-C2)."""
    return rb.TestResult(
        roll=10,
        percentage=level * 10 + 10,
        level=level,
        outcome="success",
        crit_success_chance=0,
        crit_failure_chance=0,
    )


# --- attacks (RB-F1..F3, RB-C4) ---------------------------------------------------------------


@dataclass(frozen=True)
class AttackChoice:
    """RB-F2: the attack kind (melee FOR, ranged PER, morale CHA or DIS), its stat, a skill,
    the weapon (its damage expression and kind) or a damage expression."""

    kind: str | None = None
    stat: str | None = None
    skill: str | None = None
    modifier: int = 0
    weapon: str | None = None
    damage: str | None = None


def resolve_attack(
    dice: CombatDice,
    attacker: Party,
    target: Party,
    reaction: str,
    choice: AttackChoice,
    *,
    round_: int,
    campaign_options: Options,
) -> list[RulebookD100Step]:
    """One Rulebook attack in rule order; changes the fighters (copies), returns the steps.

    RB-F2 the attack test (a failed test misses: no defense rolled); RB-F3 the defender's
    standing reaction: `dodge` = RB-C4 confrontation with a HAB test (DIS against morale),
    −10 more for each further dodge in the same round, a won dodge takes no damage and a
    critical dodge grants a free attack; `absorb` = armour off the damage; `none`. RB-F2
    damage = success level (doubled on a critical, RB-T5) + the weapon's roll; a critical
    failure of the dodge doubles the damage taken; morale damage comes off `pe` (RB-F1).
    Dice: attack d100, dodge d100, RB-C2 d100 rerolls of a tie (attacker, defender), damage."""
    steps: list[RulebookD100Step] = []
    kind, expression, weapon = _weapon(attacker.sheet, choice)
    stat = rb.attack_stat(kind, choice.stat)
    spec = _attack_spec(attacker.sheet, stat, choice, campaign_options)
    attack = rb.roll_test(spec, dice.of(attacker.id), "attack")
    steps.append(
        {
            "rule": "RB-F2",
            "key": "attack_test",
            "what": "attack test",
            "combatant_id": attacker.id,
            "kind": kind,
            "stat": stat,
            "skill": choice.skill,
            **_test(attack),
        }
    )
    if not attack.success:
        steps.append(
            {"rule": "RB-F2", "key": "the_attack_misses", "what": "the attack misses", "combatant_id": target.id}
        )
        return steps
    dodge = None
    if reaction == "dodge":
        dodge = _dodge(dice, target, kind, round_, campaign_options, steps)
    hit = rb.resolve_attack(
        attack,
        kind,
        expression,
        dice.of(attacker.id),
        defense=reaction,
        dodge=dodge,
        armor=_sheet(target).armor,
        defender_source=dice.of(target.id),
    )
    if dodge is not None:
        steps.append(
            {
                "rule": "RB-C4",
                "key": "dodge_confrontation",
                "what": "dodge: confrontation",
                "combatant_id": target.id,
                "attack_level": attack.level,
                "dodge_level": dodge.level,
                "winner": "defender" if hit.dodged else "attacker",
                "tiebreak": hit.tiebreak,
            }
        )
    if hit.dodged:
        if hit.free_attack:
            turns.grant_free_attack(target.turn, attacker.id)
            steps.append(
                {
                    "rule": "RB-F3",
                    "key": "critical_dodge_a_free_attack",
                    "what": "critical dodge: a free attack",
                    "combatant_id": target.id,
                }
            )
        return steps
    assert hit.weapon_roll is not None  # rolled for an attack that was not dodged
    damage = rb.attack_damage(attack.level, hit.weapon_roll)
    steps.append(
        {
            "rule": "RB-F2",
            "key": "damage",
            "what": "damage",
            "combatant_id": attacker.id,
            "weapon": weapon,
            "expression": expression,
            "level": attack.level,
            "weapon_roll": hit.weapon_roll,
            "damage": damage,
        }
    )
    if reaction == "absorb":
        steps.append(
            {
                "rule": "RB-F3",
                "key": "absorb_armour",
                "what": "absorb: armour",
                "combatant_id": target.id,
                "armor": _sheet(target).armor,
                "damage": damage,
                "taken": hit.damage,
            }
        )
    if hit.doubled:
        steps.append(
            {
                "rule": "RB-F3",
                "key": "critical_failure_of_the_dodge_damage_doubled",
                "what": "critical failure of the dodge: damage doubled",
                "combatant_id": target.id,
                "taken": hit.damage,
            }
        )
    pool = next(p for p in RulebookD100.pools if p.name == hit.pool)
    before = pool.value(target.sheet)
    # RB-F3 Decision: the pool stops at 0 (a value already below it, by GM fiat, is not raised);
    # what went beyond is `excess`, for a table that plays with negative hp
    after = min(before, max(pool.floor, before - hit.damage))
    pool.set(target.sheet, after)
    steps.append(
        {
            "rule": "RB-F1",
            "key": "damage",
            "what": pool.name,
            "combatant_id": target.id,
            "damage": hit.damage,
            "resource": pool.name,
            "before": before,
            "after": after,
            "excess": hit.damage - (before - after),
        }
    )
    return steps


def _choice(req: RulebookAttackRequest) -> AttackChoice:
    return AttackChoice(
        kind=req.kind, stat=req.stat, skill=req.skill, modifier=req.modifier, weapon=req.weapon, damage=req.damage
    )


def _weapon(sheet: Sheet, choice: AttackChoice) -> tuple[str, str, str | None]:
    """(kind, damage expression, weapon name): the named weapon (its kind unless the request
    names one), a damage expression, or the sheet's first weapon; RB-F2 melee by default."""
    if choice.weapon is not None and choice.damage is not None:
        raise RuleError("give `weapon` or `damage`, not both", field="damage")
    if choice.damage is not None:
        return choice.kind or "melee", choice.damage, None
    w = sheet_weapon(sheet, choice.weapon, "RB-F2")
    return choice.kind or w.kind, w.damage, w.name


def _sheet(party: Party) -> Sheet:
    """The party's sheet, this ruleset's model (the flow parsed it: `Party.sheet`)."""
    return party.sheet


def _stat(sheet: Sheet, stat: str) -> int:
    """RB-F1: a stat the sheet leaves out is an average person's, 50."""
    return sheet.stats.get(stat, rb.AVERAGE_STAT)


def _attack_spec(sheet: Sheet, stat: str, choice: AttackChoice, campaign_options: Options) -> rb.TestSpec:
    """RB-T1: stat + skill (a skill missing from the sheet: a weakened roll) + modifier."""
    skills = sheet.skills
    weakened = choice.skill is not None and choice.skill not in skills
    return rb.TestSpec(
        stat_value=_stat(sheet, stat),
        skill_bonus=int(skills.get(choice.skill, 0)) if choice.skill else 0,
        weakened=weakened,
        modifier=choice.modifier,
        crit_chance=sheet.crit_chance,
        rescue_negative=campaign_options.crit_success_rescues_negative,
        ruin_over_100=campaign_options.crit_failure_ruins_over_100,
    )


def _dodge_spec(target: Party, kind: str, round_: int, campaign_options: Options) -> tuple[int, str, int, rb.TestSpec]:
    """RB-F3: the dodges already made this round, the dodge's stat, its penalty and its test."""
    previous = int(target.counters.get("dodges") or 0) if target.counters.get("dodge_round") == round_ else 0
    stat = rb.dodge_stat(kind)
    modifier = rb.dodge_modifier(previous)
    spec = rb.TestSpec(
        stat_value=_stat(target.sheet, stat),
        modifier=modifier,
        crit_chance=_sheet(target).crit_chance,
        rescue_negative=campaign_options.crit_success_rescues_negative,
        ruin_over_100=campaign_options.crit_failure_ruins_over_100,
    )
    return previous, stat, modifier, spec


def attack_odds(
    attacker: Party, target: Party, reaction: str, choice: AttackChoice, *, round_: int, campaign_options: Options
) -> ExchangeOdds:
    """The exact odds of `resolve_attack` (`rules.odds.attack_odds`): the same weapon, attack spec,
    dodge spec (RB-F3's penalty), the armour of an absorb, the pool the damage comes off."""
    kind, expression, _ = _weapon(attacker.sheet, choice)
    spec = _attack_spec(attacker.sheet, rb.attack_stat(kind, choice.stat), choice, campaign_options)
    dodge = _dodge_spec(target, kind, round_, campaign_options)[3] if reaction == "dodge" else None
    hp = RulebookD100.pools[0]
    odds = exact.attack_odds(
        spec,
        expression,
        dodge=dodge,
        armor=_sheet(target).armor if reaction == "absorb" else None,
        hp=hp.value(target.sheet) if rb.damage_pool(kind) == hp.name else None,
        floor=hp.floor,
    )
    return ExchangeOdds(outcomes=odds.outcomes, hit=odds.hit, down=odds.down)


def _dodge(
    dice: CombatDice, target: Party, kind: str, round_: int, campaign_options: Options, steps: list[RulebookD100Step]
) -> rb.TestResult:
    """RB-F3: a HAB test (DIS against morale), −10 for each dodge already made this round."""
    previous, stat, modifier, spec = _dodge_spec(target, kind, round_, campaign_options)
    dodge = rb.roll_test(spec, dice.of(target.id), "dodge")
    target.counters.update(dodges=previous + 1, dodge_round=round_)
    steps.append(
        {
            "rule": "RB-F3",
            "key": "dodge_test",
            "what": "dodge test",
            "combatant_id": target.id,
            "stat": stat,
            "previous_dodges": previous,
            "penalty": modifier,
            **_test(dodge),
        }
    )
    return dodge


def _test(t: rb.TestResult) -> ShownTest:
    return {"roll": t.roll, "percentage": t.percentage, "level": t.level, "outcome": t.outcome}


COMBAT = RulebookD100()
