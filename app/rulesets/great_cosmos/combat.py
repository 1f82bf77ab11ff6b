"""Great Cosmos in an encounter: hp/mp, turn order GC-O1..O3 (recomputed each
round), Illumination first (GC-P5).

Table dice of `start` and of each new round: first one d6 per combatant with
several actions (GC-O3; combatants in the order they were added), then the tie
d20s (GC-O2), from the highest tied agilite down, each tied combatant in the
order it was added."""

from __future__ import annotations

from typing import Any

from app.models.encounters import AttackRequest, CombatAction, EncounterOptions
from app.rules.dice import DiceSource
from app.rulesets.contract.combat import (
    CombatDice,
    EncounterRules,
    Entrant,
    Exchange,
    ExchangeOdds,
    Grid,
    Initiative,
    Party,
    Pool,
    TurnPassed,
    entry,
)
from app.rulesets.great_cosmos import exchange as combat
from app.rulesets.great_cosmos import schemas
from app.rulesets.great_cosmos.rules.fight import lapse_at_turn_change, strike_back
from app.rulesets.great_cosmos.rules.postures import DEFENSE_STATS, ILLUMINATION, SEPULCRALE
from app.rulesets.great_cosmos.rules.steps import GreatCosmosStep
from app.rulesets.great_cosmos.rules.turns import Entrant as Contender
from app.rulesets.great_cosmos.rules.turns import TurnOrder, distance, turn_order
from app.rulesets.great_cosmos.schemas import ENCOUNTER_ACTIONS, GreatCosmosEncounterOptions, Sheet


class _Parallel(DiceSource):
    """GC-O2 `tie_method: parallel`: tied entities share their slot at once (no d20:
    every tie die answers 1 and is not recorded); other dice come from the action's."""

    def __init__(self, inner: DiceSource):
        self.rolls = inner.rolls
        self.max_dice = inner.max_dice
        self._inner = inner

    def roll(self, faces: int, purpose: str) -> int:
        return 1 if purpose.startswith("tie:") else self._inner.roll(faces, purpose)


class GreatCosmos(EncounterRules):
    ruleset = "great-cosmos"
    Counters = schemas.Counters
    Options = GreatCosmosEncounterOptions
    CombatantCreate = schemas.GreatCosmosCombatantCreate
    CombatantUpdate = schemas.GreatCosmosCombatantUpdate
    StartRequest = schemas.GreatCosmosStartRequest
    NextTurnRequest = schemas.GreatCosmosNextTurnRequest
    pools = (combat.HP, combat.MP)
    reactions = ("none", *DEFENSE_STATS)  # GC-P2: dodge (agilite) or parry (force)
    default_reaction = "dodge"
    multiple_actions = True
    reorders_each_round = True
    chosen_order_rule = "GC-O2"
    changes_at_fight_end = True
    lapses_at_turn_change = True
    dice_order = (
        "GC-O3 d6 per combatant with several actions, in the order added, then GC-O2 tie d20s from the "
        "highest agilite down (again at each new round, GC-O1); an attack: the attack test (d100, karma "
        "d10), the target's automatic defence d10 (GC-P5), its dodge/parry test (d100, karma d10), then "
        "damage (GC-P4); posture: the advantage d6 (GC-P5), the backlash's disadvantage d6 (GC-P7); "
        "dash: the agilite test (GC-D4)"
    )
    naming_step_fields = ("provoked_by",)  # GC-P6: the provoker
    combat_actions = ENCOUNTER_ACTIONS
    grid = Grid(
        metric="manhattan",
        rule="GC-D1",
        description="GC-D1: the distance between two cells is |dx| + |dy| (no diagonals); adjacent cells "
        "(distance 1) are melee range.",
    )
    naming_counters = ("riposte", "counter_attack", "provoked_by")  # GC-P2 riposte, GC-P6 counter-attack, provocation
    more_actions = (  # README "Actions per turn": GC-O3's and GC-P5's extra actions are slots of their own
        "GC-O3 extra actions",
        "GC-P5 advantage 6 (an extra action)",
        "GC-P2 a riposte",
        "GC-P6 a counter-attack",
    )

    def posture(self, sheet: Sheet) -> str | None:
        return combat.posture_of(sheet)

    def distance(self, a: tuple[int, int], b: tuple[int, int]) -> int:
        return distance(a, b)  # GC-D1

    # --- actions (great_cosmos_combat) ---------------------------------------------------------
    def attack(self, x: Exchange) -> None:
        combat.attack(x)

    def action_costs(self, type_: str, sheet: Sheet) -> dict[str, Any] | None:
        """GC-P5/P6: entering Illumination costs 1 light point, Sépulcrale 1 dark point; GC-S9 the
        Final Skill its own cost (from its special posture)."""
        available = {"light_points": sheet.light_points or 0, "dark_points": sheet.dark_points or 0}
        if type_ == "posture":
            return {ILLUMINATION: {"light_points": 1}, SEPULCRALE: {"dark_points": 1}, "available": available}
        if type_ == "final_skill" and sheet.final_skill is not None:
            skill = sheet.final_skill
            return {skill.name: {f"{skill.cost_kind}_points": skill.cost_points}, "available": available}
        return None

    def weapons(self, sheet: Sheet) -> list[Any]:
        """GC-P4: the inventory's weapons with a damage."""
        return combat.inventory_weapons(sheet)

    def odds(self, x: Exchange) -> ExchangeOdds | None:
        """The exact odds of an attack (GC-P1..P7, `exchange.attack_odds`)."""
        return combat.attack_odds(x) if x.req.type == "attack" else None

    def move(self, x: Exchange) -> None:
        combat.move(x)

    def dash(self, x: Exchange) -> None:
        combat.dash(x)

    def posture_action(self, x: Exchange) -> None:
        combat.posture(x)

    def final_skill(self, x: Exchange) -> None:
        combat.final_skill(x)

    def out_of_turn(self, actor: Party, req: CombatAction) -> str | None:
        """GC-P2: a riposte the defence earned; GC-P6: a Sépulcrale's counter-attack on whoever damaged it;
        each in the turn it was earned in (before the turn changes), once."""
        if not isinstance(req, AttackRequest):  # GC's only: GreatCosmosAttackRequest, `type` "attack"
            return None
        return strike_back(actor.counters, req.target_id)

    def stopped(self, counters: dict[str, Any], sheet: Sheet, round_: int) -> GreatCosmosStep | None:
        """GC-P7: an Illumination backlash: no action (nor move, dodge, parry, speech) for its 2 turns."""
        running = combat.backlash(sheet)
        if running and running["posture"] == ILLUMINATION:
            left = (counters.get("backlash") or {}).get("turns_left")
            return {
                "rule": "GC-P7",
                "key": "illumination_backlash_cannot_act",
                "what": "Illumination backlash: cannot act",
                "turns_left": left,
            }
        return None

    def turn_passes(self, combatant_id: str, counters: dict[str, Any], phase: str, round_: int) -> TurnPassed | None:
        """GC-P6/P7: a posture's turns and a backlash's are counted, a provocation binds the turn of its
        target's next action and lapses at its end."""
        return combat.turn_passes(counters, phase, round_)

    def turn_changes(self, counters: dict[str, Any]) -> dict[str, Any] | None:
        """GC-P2/GC-P6 (Decisions): a riposte or counter-attack is taken before the turn changes."""
        return lapse_at_turn_change(counters)

    def gm_damage(self, target: Party, pool: Pool, before: int, amount: int, round_: int) -> list[GreatCosmosStep]:
        """GC-P6: Revive fires against the GM's `damage` too."""
        return combat.gm_damage(target, pool, before, amount)

    def fight_ends(self, combatant_id: str, sheet: Sheet, counters: dict[str, Any]) -> list[GreatCosmosStep]:
        """GC-P6 (Decision): ending the encounter ends every special posture still held."""
        return combat.fight_ends(sheet, counters)

    def roll_initiative(
        self, dice: CombatDice, entrants: list[Entrant], options: EncounterOptions, campaign_options: Any
    ) -> Initiative:
        """GC-O1..O3, GC-P5: highest effective agilite first (the GM's override replaces it),
        ties by d20 lowest first (tied again, or `tie_method: parallel`: one slot),
        the n-th extra action at agilite − (4 + 1d6) × n, Illumination first."""
        return self._order(dice, entrants, options, campaign_options, 1)

    def _order(
        self,
        dice: CombatDice,
        entrants: list[Entrant],
        options: EncounterOptions,
        campaign_options: Any,
        round_: int,
    ) -> Initiative:
        if not combat.campaign(campaign_options).turn_order_rules:
            return _gm_order(entrants)
        contenders = [
            Contender(
                id=e.combatant_id,
                agilite=_agilite(e),
                actions=e.actions,
                acts_first=e.sheet.posture == ILLUMINATION,
                acts_last=_acts_last(e, round_),
                side=e.side,
            )
            for e in entrants
        ]
        source = dice.source if getattr(options, "tie_method", "d20") == "d20" else _Parallel(dice.source)
        order = turn_order(source, contenders, chosen_orders=_chosen_orders(entrants))
        return Initiative(
            order=_entries(order),
            initiatives={e.combatant_id: _agilite(e) for e in entrants},
            steps=_steps(entrants, contenders, order, round_),
        )

    def next_round(
        self,
        dice: CombatDice,
        order: list[dict[str, Any]],
        entrants: list[Entrant] | None,
        round_: int,
        options: EncounterOptions,
        campaign_options: Any,
    ) -> Initiative | None:
        """GC-O1: the order is recomputed each round (new d6s and tie d20s); GC-P7: a Sépulcrale
        backlash acts last for its 2 turns."""
        return self._order(dice, entrants or [], options, campaign_options, round_)


def _agilite(e: Entrant) -> int:
    return e.override if e.override is not None else e.sheet.stats.agilite


def _entries(order: TurnOrder) -> list[dict[str, Any]]:
    out = []
    for slot, s in enumerate(order.slots):
        ties = dict(s.tie_dice)
        ids = [cid for cid, _n in s.entries]
        for cid, n in s.entries:
            tie = {"die": "d20", "value": ties[cid]} if cid in ties else None
            out.append(
                entry(
                    cid,
                    slot,
                    s.position,
                    extra_action=n > 1,
                    tiebreak=tie,
                    parallel_with=[other for other in ids if other != cid],
                    action=n,
                )
            )
    return out


def _chosen_orders(entrants: list[Entrant]) -> list[list[str]]:
    """GC-O2: the request's `chosen_orders` back from the entrants' (order, place)."""
    groups: dict[int, list[tuple[int, str]]] = {}
    for e in entrants:
        if e.chosen is not None:
            groups.setdefault(e.chosen[0], []).append((e.chosen[1], e.combatant_id))
    return [[cid for _, cid in sorted(groups[i])] for i in sorted(groups)]


def _acts_last(e: Entrant, round_: int) -> bool:
    """GC-P7: a Sépulcrale backlash acts last for its 2 turns (the holder's next two, owed or running)."""
    owed = combat.pending_backlash(e.counters)
    return owed is not None and owed["posture"] == SEPULCRALE


def _steps(
    entrants: list[Entrant], contenders: list[Contender], order: TurnOrder, round_: int = 1
) -> list[GreatCosmosStep]:
    steps: list[GreatCosmosStep] = []
    for e, c in zip(entrants, contenders):
        steps.append(
            {
                "rule": "GC-O1",
                "key": "effective_agilite",
                "what": "effective agilite",
                "combatant_id": c.id,
                "agilite": c.agilite,
                "override": e.override is not None,
            }
        )
        if c.acts_first:
            steps.append(
                {
                    "rule": "GC-P5",
                    "key": "illumination_acts_first",
                    "what": "Illumination acts first",
                    "combatant_id": c.id,
                }
            )
        if c.acts_last:
            steps.append(
                {
                    "rule": "GC-P7",
                    "key": "sepulcrale_backlash_acts_last",
                    "what": "Sépulcrale backlash: acts last",
                    "combatant_id": c.id,
                }
            )
    d6 = dict(order.action_dice)
    for slot, s in enumerate(order.slots):
        for cid, n in s.entries:
            if n > 1:
                steps.append(
                    {
                        "rule": "GC-O3",
                        "key": "extra_action",
                        "what": f"extra action {n - 1}",
                        "combatant_id": cid,
                        "d6": d6[cid],
                        "position": s.position,
                        "slot": slot,
                    }
                )
        ties = dict(s.tie_dice)
        for cid, _n in s.entries:
            if cid in ties or len(s.entries) > 1:
                steps.append(
                    {
                        "rule": "GC-O2",
                        "key": "tie",
                        "what": "tie",
                        "combatant_id": cid,
                        "position": s.position,
                        "d20": ties.get(cid),
                        "slot": slot,
                        "parallel": len(s.entries) > 1,
                    }
                )
    return steps


def _gm_order(entrants: list[Entrant]) -> Initiative:
    """Campaign option `turn_order_rules` off: the GM's initiatives, highest first, then
    the order combatants were added; no dice."""
    ranked = sorted(range(len(entrants)), key=lambda i: (entrants[i].override is None, -(entrants[i].override or 0), i))
    order = [entry(entrants[i].combatant_id, slot, entrants[i].override) for slot, i in enumerate(ranked)]
    return Initiative(
        order=order,
        initiatives={e.combatant_id: e.override for e in entrants},
        steps=[
            {
                "rule": "GC-O1",
                "key": "turn_order_rules_off_campaign_option_the_gm_s_order",
                "what": "turn order rules off (campaign option): the GM's order",
            }
        ],
    )


COMBAT = GreatCosmos()
