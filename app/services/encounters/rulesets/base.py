"""What an encounter needs from a ruleset, in one small typed interface.

Each ruleset says it once, in its own module: its resource pools (names, sheet
keys, maxima), what `down` means, its reactions, its initiative rule and what a
new round does to the order. The encounter service knows no ruleset by name.
(Attacks, moves and postures join this interface in the next part of #13.)"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from app.models.encounters import EncounterOptions
from app.services.encounters.dice import CombatDice
from app.services.validation import InvalidBody


@dataclass(frozen=True)
class Pool:
    """A resource pool of the sheet: `{value, max}` in the state, and what heal/damage change."""

    name: str
    key: str  # the sheet key of the value
    max_key: str | None  # the sheet key of the maximum (None: no maximum)
    floor: int = 0  # the lowest value the sheet allows

    def value(self, sheet: dict[str, Any]) -> int:
        """The current value; a sheet leaving it out is at its maximum (the rulesets' default)."""
        value = sheet.get(self.key)
        if value is None:
            return int(sheet.get(self.max_key) or 0) if self.max_key else 0
        return int(value)

    def maximum(self, sheet: dict[str, Any]) -> int | None:
        return int(sheet[self.max_key]) if self.max_key and sheet.get(self.max_key) is not None else None


@dataclass(frozen=True)
class Entrant:
    """One combatant as the initiative rule reads it."""

    combatant_id: str
    kind: str  # "pc" | "npc"
    sheet: dict[str, Any]
    override: int | None = None  # the GM's initiative
    actions: int = 1
    take_11: bool = False


@dataclass
class Initiative:
    """A round's turn order: entries `{combatant_id, slot, initiative, extra_action,
    tiebreak, parallel_with, …}` (slots count from 0; entries sharing a slot act in
    parallel), each combatant's initiative, and the steps (rule ids and figures)."""

    order: list[dict[str, Any]]
    initiatives: dict[str, int | None] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)


def entry(combatant_id: str, slot: int, initiative: int | None, *, extra_action: bool = False,
          tiebreak: dict[str, Any] | None = None, parallel_with: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"combatant_id": combatant_id, "slot": slot, "initiative": initiative, "extra_action": extra_action,
            "tiebreak": tiebreak, "parallel_with": parallel_with or [], **extra}


def one_per_slot(ranked: list[tuple[str, int | None, dict[str, Any] | None]]) -> list[dict[str, Any]]:
    """An order where every combatant has its own slot: [(id, initiative, tiebreak)] best first."""
    return [entry(cid, slot, value, tiebreak=tie) for slot, (cid, value, tie) in enumerate(ranked)]


class EncounterRules(ABC):
    """One ruleset's encounter pieces. Subclasses set the class attributes and
    implement `roll_initiative`; the rest has defaults."""

    ruleset: ClassVar[str]
    Options: ClassVar[type[EncounterOptions]] = EncounterOptions
    pools: ClassVar[tuple[Pool, ...]]
    reactions: ClassVar[tuple[str, ...]] = ("none",)
    default_reaction: ClassVar[str] = "none"
    multiple_actions: ClassVar[bool] = False  # combatants may have several actions a round (GC-O3)
    reorders_each_round: ClassVar[bool] = False  # a new round re-reads every sheet (GC-O1)
    dice_order: ClassVar[str] = ""  # the order table dice of `start` are consumed in
    late_rule: ClassVar[str] = "turn"  # the rule that keeps an entry of the order from acting yet

    # --- resources and state -------------------------------------------------------
    def resources(self, sheet: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {p.name: {"value": p.value(sheet), "max": p.maximum(sheet)} for p in self.pools}

    def pool(self, name: str | None) -> Pool:
        """A pool by name (the first one by default); 422 naming the known ones."""
        if name is None:
            return self.pools[0]
        for p in self.pools:
            if p.name == name:
                return p
        raise InvalidBody(f"unknown resource {name!r}; {self.ruleset} has {', '.join(p.name for p in self.pools)}",
                        field="resource")

    def is_down(self, sheet: dict[str, Any]) -> bool:
        """Out of the fight: skipped by next-turn. Default: the first pool at 0 or below."""
        return self.pools[0].value(sheet) <= 0

    def posture(self, sheet: dict[str, Any]) -> str | None:
        return None

    def check_reaction(self, reaction: str) -> None:
        if reaction not in self.reactions:
            raise InvalidBody(f"unknown reaction {reaction!r}; {self.ruleset} knows {', '.join(self.reactions)}",
                            field="reaction")

    # --- turn order ----------------------------------------------------------------------
    @abstractmethod
    def roll_initiative(self, dice: CombatDice, entrants: list[Entrant], options: EncounterOptions,
                        campaign_options: dict[str, Any]) -> Initiative:
        """The first round's order (entrants in the order they were added)."""

    def next_round(self, dice: CombatDice, order: list[dict[str, Any]], entrants: list[Entrant] | None,
                   round_: int, options: EncounterOptions, campaign_options: dict[str, Any]) -> Initiative | None:
        """The order of round `round_` (2, 3, …), or None when it stays as it is.
        `entrants` is given (every sheet read) only when `reorders_each_round`."""
        return None

    def can_act_in(self, order_entry: dict[str, Any], round_: int) -> bool:
        """Whether this entry of the order acts in this round (RB-F4: a critical failure from round 2)."""
        return order_entry.get("from_round", 1) <= round_
