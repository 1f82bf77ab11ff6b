"""Worlds Awakening in an encounter: hp and mp, turn order WA-C4, down at 0 HP (WA-C5).

Table dice of `start`: only the d20 roll-offs of tied initiatives (WA-C4), from
the highest initiative down, tied combatants in the order they were added, then
those still tied again, and so on."""
from __future__ import annotations

from collections.abc import Iterator
from itertools import groupby

from app.rules import worlds_awakening as wa
from app.services.encounters.dice import CombatDice
from app.services.encounters.rulesets.base import (
    EncounterRules,
    Entrant,
    Initiative,
    Pool,
    one_per_slot,
)


class WorldsAwakening(EncounterRules):
    ruleset = "worlds-awakening"
    pools = (Pool("hp", "hp", "hp_max"), Pool("mp", "mp", "mp_max"))
    reactions = ("none",)  # WA-C1: an attack is tested against the defense value; no reaction
    dice_order = "WA-C4 d20 roll-offs of tied initiatives, highest initiative first"

    def roll_initiative(self, dice: CombatDice, entrants: list[Entrant], options, campaign_options) -> Initiative:
        """WA-C4: initiative = 10 + DEX (the GM's override replaces it), highest first;
        ties broken by d20 roll-offs, highest first."""
        dex = [e.override - 10 if e.override is not None else int((e.sheet.get("stats") or {}).get("DEX", 0))
               for e in entrants]
        mark = dice.mark()
        ranked = wa.turn_order(dex, dice.source)
        dice.tag(mark, (entrants[i].combatant_id for i in _rollers(ranked)))
        steps = [{"rule": "WA-C4", "what": "initiative = 10 + DEX", "combatant_id": e.combatant_id,
                  "initiative": wa.initiative(d), "override": e.override is not None} for e, d in zip(entrants, dex)]
        steps += [{"rule": "WA-C4", "what": "tie: d20 roll-off, highest first", "combatant_id": entrants[r.index].combatant_id,
                   "d20": list(r.rolloffs)} for r in ranked if r.rolloffs]
        order = one_per_slot([(entrants[r.index].combatant_id, r.initiative,
                               {"die": "d20", "value": r.rolloffs[-1], "rolls": list(r.rolloffs)} if r.rolloffs else None)
                              for r in ranked])
        return Initiative(order=order, initiatives={entrants[r.index].combatant_id: r.initiative for r in ranked},
                          steps=steps)


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
    for _, sub in groupby(ordered, key=lambda i: rolloffs[i][depth]):
        sub = list(sub)
        if len(sub) > 1:
            yield from _group_rollers(sub, rolloffs, depth + 1)
