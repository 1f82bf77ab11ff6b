"""Great Cosmos movement and turn order (GC-D1..D4, GC-O1..O3). Pure rules."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import floor
from typing import Sequence

from app.rules.dice import DiceSource
from app.rules.errors import RuleError
from app.rules.great_cosmos.core import (
    CRITICAL_SUCCESS, SUCCESS, SUPER_CRITICAL_SUCCESS, TestResult, resolve_test,
)
from app.rules.great_cosmos.sheet import max_move

# --- GC-D1 / GC-D3 ----------------------------------------------------------------


def distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    """GC-D1: grid distance |dx| + |dy| (no diagonals)."""
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def is_melee(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """GC-D1: two entities are in melee when their distance is 1."""
    return distance(a, b) == 1


_LEGAL_TURNS = {(), ("move",), ("act",), ("move", "act"), ("act", "move")}


def check_turn(steps: Sequence[str], moved: int = 0, allowed_move: int | None = None) -> None:
    """GC-D3: a turn is move-then-act or act-then-move (or only one of them), never
    move-act-move; the cells moved may not exceed the turn's max move (GC-D2)."""
    if tuple(steps) not in _LEGAL_TURNS:
        raise RuleError(
            f"a turn is move then act or act then move, not {' then '.join(steps)} (GC-D3)", field="steps"
        )
    if allowed_move is not None and moved > allowed_move:
        raise RuleError(f"{moved} cells moved; at most {allowed_move} this turn (GC-D2)", field="moved")


# --- GC-D4 ---------------------------------------------------------------------------

DASH_MULTIPLIERS = {
    SUPER_CRITICAL_SUCCESS: Fraction(3),
    CRITICAL_SUCCESS: Fraction(5, 2),
    SUCCESS: Fraction(2),
}


@dataclass(frozen=True)
class Dash:
    """GC-D4: the agilite test of a dash and the turn's new max move."""

    test: TestResult
    base_move: int
    multiplier: Fraction
    max_move: int


def dash_move(base: int, outcome: str) -> tuple[Fraction, int]:
    """GC-D4: success x2, critical x2.5, super-critical x3 (rounded down); a failure leaves it."""
    mult = DASH_MULTIPLIERS.get(outcome, Fraction(1))
    return mult, floor(base * mult)


def dash(
    dice: DiceSource, agilite: int, karma: int, *, modifier: int = 0, move_modifier: int = 0,
    posture: str | None = None, extreme_scores: bool = True,
) -> Dash:
    """GC-D4: giving up the action, an agilite test (GC-T1, karma included) multiplies
    the max move (GC-D2) of the turn."""
    base = max_move(agilite, move_modifier)
    test = resolve_test(dice, agilite + modifier, karma, posture=posture, extreme_scores=extreme_scores)
    mult, new = dash_move(base, test.outcome)
    return Dash(test=test, base_move=base, multiplier=mult, max_move=new)


# --- GC-O1..O3 --------------------------------------------------------------------------


@dataclass(frozen=True)
class Entrant:
    """One entity in a round: its effective agilite (bonuses and maluses applied),
    its number of actions, and the postures that override the order (GC-P5, GC-P7)."""

    id: str
    agilite: int
    actions: int = 1
    acts_first: bool = False  # Illumination (GC-P5 "Frappe éclair")
    acts_last: bool = False  # Sépulcrale backlash (GC-P7)


@dataclass(frozen=True)
class Slot:
    """One place in the turn order; several entries in one slot act in parallel (GC-O2)."""

    entries: tuple[tuple[str, int], ...]  # (entity id, action number starting at 1)
    position: int  # the agilite value the slot sits at
    tie_dice: tuple[tuple[str, int], ...] = ()  # the d20 each tied entity rolled

    @property
    def parallel(self) -> bool:
        return len(self.entries) > 1


@dataclass(frozen=True)
class TurnOrder:
    slots: tuple[Slot, ...]
    action_dice: tuple[tuple[str, int], ...]  # GC-O3: the d6 of each multi-action entity


def action_positions(agilite: int, actions: int, d6: int | None) -> list[int]:
    """GC-O3: the first action at agilite, the n-th extra at agilite - (4 + 1d6) x n."""
    if actions <= 1:
        return [agilite]
    return [agilite - (4 + d6) * n for n in range(actions)]


def _band(e: Entrant) -> int:
    return 0 if e.acts_first else (2 if e.acts_last else 1)


def turn_order(dice: DiceSource, entrants: Sequence[Entrant]) -> TurnOrder:
    """GC-O1..O3: highest effective agilite first (Illumination first, Sépulcrale
    backlash last); ties roll a d20 each, lowest first, tied again → parallel.
    Dice: first one d6 per multi-action entity (input order), then the tie d20s,
    from the highest tied position down."""
    ids = [e.id for e in entrants]
    if len(set(ids)) != len(ids):
        raise RuleError("each entity appears once in a turn order", field="combatants")
    action_dice = []
    entries = []  # (band, position, entity, action number)
    for e in entrants:
        d6 = None
        if e.actions > 1:
            d6 = dice.roll(6, f"extra_actions:{e.id}")
            action_dice.append((e.id, d6))
        for n, pos in enumerate(action_positions(e.agilite, e.actions, d6), start=1):
            entries.append((_band(e), pos, e, n))
    groups: dict[tuple[int, int], list] = {}
    for band, pos, e, n in entries:
        groups.setdefault((band, pos), []).append((e, n))
    slots: list[Slot] = []
    for (band, pos) in sorted(groups, key=lambda k: (k[0], -k[1])):
        slots.extend(_break_tie(dice, groups[(band, pos)], pos))
    return TurnOrder(slots=tuple(slots), action_dice=tuple(action_dice))


def _break_tie(dice: DiceSource, group: list, position: int) -> list[Slot]:
    """GC-O2: each tied entity rolls a d20, lowest acts first; equal rolls share a slot."""
    if len(group) == 1:
        e, n = group[0]
        return [Slot(entries=((e.id, n),), position=position)]
    rolled = [(dice.roll(20, f"tie:{e.id}"), e, n) for e, n in group]
    tie_dice = tuple((e.id, v) for v, e, n in rolled)
    by_value: dict[int, list] = {}
    for v, e, n in rolled:
        by_value.setdefault(v, []).append((e.id, n))
    return [Slot(entries=tuple(by_value[v]), position=position, tie_dice=tie_dice) for v in sorted(by_value)]
