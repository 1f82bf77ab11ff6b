"""Rulebook D100 in an encounter: hp and pe, initiative RB-F4.

Table dice of `start`: each combatant's HAB test, a d100, in the order
combatants were added (none for a GM override), then the d100 rerolls of ties
still equal after the units digit (RB-C2), tied combatants in that order."""
from __future__ import annotations

from typing import Any

from app.rules import rulebook_d100 as rb
from app.services.encounters.dice import CombatDice
from app.services.encounters.rulesets.base import (
    EncounterRules,
    Entrant,
    Initiative,
    Pool,
    entry,
)


class RulebookD100(EncounterRules):
    ruleset = "rulebook-d100"
    pools = (Pool("hp", "hp", "hp_max", floor=-10_000), Pool("pe", "pe", "pe_max", floor=-10_000))
    reactions = ("dodge", "absorb", "none")  # RB-F3
    default_reaction = "dodge"
    late_rule = "RB-F4"
    dice_order = "RB-F4 d100 HAB test per combatant in the order added, then RB-C2 d100 rerolls of ties"

    def roll_initiative(self, dice: CombatDice, entrants: list[Entrant], options, campaign_options) -> Initiative:
        """RB-F4: a HAB ranking (RB-C3: level, then units digit, then d100 rerolls); a
        critical success gains an extra action before round 1 (it opens the round), a
        critical failure acts only from round 2. A GM override is a success at that level."""
        results, steps = [], []
        for e in entrants:
            result = _override(e.override) if e.override is not None else rb.roll_test(
                _spec(e.sheet, campaign_options), dice.of(e.combatant_id), "initiative")
            results.append(result)
            steps.append({"rule": "RB-F4", "what": "HAB test", "combatant_id": e.combatant_id,
                          "roll": None if e.override is not None else result.roll, "percentage": result.percentage,
                          "level": result.level, "outcome": result.outcome, "override": e.override is not None})
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
                steps.append({"rule": "RB-C2", "what": "tie: d100 rerolls, lowest first", "combatant_id": e.combatant_id,
                              "d100": mine})
            if p.extra_action:
                extras.append((e.combatant_id, r.level))
                steps.append({"rule": "RB-F4", "what": "critical success: an extra action before round 1",
                              "combatant_id": e.combatant_id})
            if p.first_round > 1:
                steps.append({"rule": "RB-F4", "what": "critical failure: acts only from round 2",
                              "combatant_id": e.combatant_id})
            order.append((e.combatant_id, r.level, tie, p.first_round))
        entries = [entry(cid, slot, level, extra_action=True) for slot, (cid, level) in enumerate(extras)]
        entries += [entry(cid, len(extras) + n, level, tiebreak=tie, from_round=first)
                    for n, (cid, level, tie, first) in enumerate(order)]
        return Initiative(order=entries, initiatives={entrants[p.index].combatant_id: results[p.index].level
                                                      for p in placings}, steps=steps)

    def next_round(self, dice, order, entrants, round_, options, campaign_options) -> Initiative | None:
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


def _spec(sheet: dict[str, Any], campaign_options: dict[str, Any]) -> rb.TestSpec:
    return rb.TestSpec(
        stat_value=int((sheet.get("stats") or {}).get("HAB", rb.AVERAGE_STAT)),
        crit_chance=int(sheet.get("crit_chance", rb.DEFAULT_CRIT_CHANCE)),
        rescue_negative=campaign_options.get("crit_success_rescues_negative", True),
        ruin_over_100=campaign_options.get("crit_failure_ruins_over_100", True),
    )


def _override(level: int) -> rb.TestResult:
    """The GM's initiative: a plain success at that level (ties: as a roll of 10, RB-C2)."""
    return rb.TestResult(roll=10, percentage=level * 10 + 10, level=level, outcome="success",
                         crit_success_chance=0, crit_failure_chance=0)
