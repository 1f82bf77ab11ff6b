"""Great Cosmos movement and turn order (GC-D1..D4, GC-O1..O3). Pure rules."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import ceil

from app.rules.dice import DiceSource
from app.rules.errors import RuleError
from app.rulesets.great_cosmos.rules.core import (
    CRITICAL_SUCCESS,
    SUCCESS,
    SUPER_CRITICAL_SUCCESS,
    TestResult,
    resolve_test,
)
from app.rulesets.great_cosmos.rules.sheet import max_move

# --- GC-D1 / GC-D3 ----------------------------------------------------------------


def distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    """GC-D1: grid distance |dx| + |dy| (no diagonals)."""
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


MELEE_REACH = 1  # GC-D1: the distance of a melee attack


def is_melee(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """GC-D1: two entities are in melee when their distance is 1."""
    return distance(a, b) == MELEE_REACH


_LEGAL_TURNS = {(), ("move",), ("act",), ("move", "act"), ("act", "move")}


def check_turn(steps: Sequence[str], moved: int = 0, allowed_move: int | None = None) -> None:
    """GC-D3: a turn is move-then-act or act-then-move (or only one of them), never
    move-act-move; the cells moved may not exceed the turn's max move (GC-D2)."""
    if tuple(steps) not in _LEGAL_TURNS:
        raise RuleError(
            f"a turn is move then act or act then move, not {' then '.join(steps)} (GC-D3)",
            field="steps",
            code="turn_phases",
        )
    if allowed_move is not None and moved > allowed_move:
        raise RuleError(
            f"{moved} cells moved; at most {allowed_move} this turn (GC-D2)", field="moved", code="move_too_far"
        )


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
    """GC-D4: success x2, critical x2.5, super-critical x3, rounded up (the seed's only
    rounding of distances is « arrondie par excès »: 7.5 -> 8); a failure leaves it."""
    mult = DASH_MULTIPLIERS.get(outcome, Fraction(1))
    return mult, ceil(base * mult)


def dash(
    dice: DiceSource,
    agilite: int,
    karma: int,
    *,
    modifier: int = 0,
    move_modifier: int = 0,
    posture: str | None = None,
    extreme_scores: bool = False,
) -> Dash:
    """GC-D4: giving up the action, an agilite test (GC-T1, karma included) multiplies
    the max move (GC-D2) of the turn."""
    base = max_move(agilite, move_modifier)
    test = resolve_test(dice, agilite + modifier, karma, posture=posture, extreme_scores=extreme_scores)
    mult, new = dash_move(base, test.outcome)
    return Dash(test=test, base_move=base, multiplier=mult, max_move=new)


# --- GC-O1..O3 --------------------------------------------------------------------------

TIE_METHODS = ("d20", "parallel")  # GC-O2: the GM's choice per encounter


@dataclass(frozen=True)
class Entrant:
    """One entity in a round: its effective agilite (bonuses and maluses applied),
    its number of actions, its side, and the postures that override the order (GC-P5, GC-P7)."""

    id: str
    agilite: int
    actions: int = 1
    acts_first: bool = False  # Illumination (GC-P5 "Frappe éclair"): its first action only
    acts_last: bool = False  # Sépulcrale backlash (GC-P7)
    side: str | None = None  # GC-O2: who may choose the order of a one-sided tie


@dataclass(frozen=True)
class Slot:
    """One place in the turn order; several entries in one slot act in parallel (GC-O2)."""

    entries: tuple[tuple[str, int], ...]  # (entity id, action number starting at 1)
    position: int  # the agilite value the slot sits at
    tie_dice: tuple[tuple[str, int], ...] = ()  # the d20 each tied entity rolled
    tie_break: str | None = None  # GC-O2: "d20", "parallel" or "chosen" when the slot came from a tie

    @property
    def parallel(self) -> bool:
        return len(self.entries) > 1

    def holds(self, entity: str) -> bool:
        return any(e == entity for e, _ in self.entries)


Tie = list[tuple[Entrant, int]]  # the (entity, its n-th action) sharing one position


@dataclass(frozen=True)
class TurnOrder:
    slots: tuple[Slot, ...]
    action_dice: tuple[tuple[str, int], ...]  # GC-O3: the d6 of each multi-action entity

    def same_slot(self, a: str, b: str, slot_index: int) -> bool:
        """GC-O2: whether `a` and `b` both act in slot `slot_index` (a parallel resolution:
        no dodge nor parry between them, see postures.resolve_attack)."""
        slot = self.slots[slot_index]
        return a != b and slot.holds(a) and slot.holds(b)


def action_positions(agilite: int, actions: int, d6: int | None) -> list[int]:
    """GC-O3: the first action at agilite, the n-th extra at agilite - (4 + 1d6) x n."""
    if actions <= 1:
        return [agilite]
    assert d6 is not None  # rolled for every multi-action entity
    return [agilite - (4 + d6) * n for n in range(actions)]


def _band(e: Entrant, action: int) -> int:
    """GC-P5 (Decision): only the Illumination's first action takes the first slots; its
    extra actions keep their GC-O3 places. GC-P7: a Sépulcrale backlash acts last."""
    if e.acts_first and action == 1:
        return 0
    return 2 if e.acts_last else 1


def turn_order(
    dice: DiceSource,
    entrants: Sequence[Entrant],
    *,
    tie_method: str = "d20",
    chosen_orders: Sequence[Sequence[str]] = (),
) -> TurnOrder:
    """GC-O1..O3: highest effective agilite first (an Illumination's first action first,
    a Sépulcrale backlash last). GC-O2 ties, by the GM's method: `d20` (each rolls a d20,
    lowest first, tied again → parallel) or `parallel` (one shared slot, no dice); a tie
    whose entities are all on one side may instead follow an order their players chose
    (`chosen_orders`: each lists exactly the ids of one tie).
    Dice: first one d6 per multi-action entity (input order), then the tie d20s,
    from the highest tied position down."""
    if tie_method not in TIE_METHODS:
        raise RuleError(
            f"tie_method is one of {', '.join(TIE_METHODS)} (GC-O2)", field="tie_method", code="unknown_name"
        )
    ids = [e.id for e in entrants]
    if len(set(ids)) != len(ids):
        raise RuleError("each entity appears once in a turn order", field="combatants", code="named_twice")
    action_dice = []
    entries = []  # (band, position, entity, action number)
    for e in entrants:
        d6 = None
        if e.actions > 1:
            d6 = dice.roll(6, f"extra_actions:{e.id}")
            action_dice.append((e.id, d6))
        for n, pos in enumerate(action_positions(e.agilite, e.actions, d6), start=1):
            entries.append((_band(e, n), pos, e, n))
    groups: dict[tuple[int, int], Tie] = {}
    for band, pos, e, n in entries:
        groups.setdefault((band, pos), []).append((e, n))
    chosen = _chosen_by_group(chosen_orders, [g for g in groups.values() if len(g) > 1])
    slots: list[Slot] = []
    for key in sorted(groups, key=lambda k: (k[0], -k[1])):
        group, pos = groups[key], key[1]
        if len(group) == 1:
            e, n = group[0]
            slots.append(Slot(entries=((e.id, n),), position=pos))
        elif id(group) in chosen:
            slots.extend(_chosen_order(group, chosen[id(group)], pos))
        elif tie_method == "parallel":
            slots.append(Slot(entries=tuple((e.id, n) for e, n in group), position=pos, tie_break="parallel"))
        else:
            slots.extend(_break_tie(dice, group, pos))
    return TurnOrder(slots=tuple(slots), action_dice=tuple(action_dice))


def _chosen_by_group(chosen_orders: Sequence[Sequence[str]], ties: list[Tie]) -> dict[int, tuple[str, ...]]:
    """GC-O2: match each chosen order to the tie it orders; it must name exactly that tie's
    entities, all on one side."""
    out: dict[int, tuple[str, ...]] = {}
    for i, order in enumerate(chosen_orders):
        where = f"chosen_orders.{i}"
        match = next((g for g in ties if id(g) not in out and sorted(e.id for e, _ in g) == sorted(order)), None)
        if match is None or len(set(order)) != len(order):
            raise RuleError("a chosen order lists exactly the entities of one tie (GC-O2)", field=where)
        sides = {e.side for e, _ in match}
        if len(sides) != 1 or None in sides:
            raise RuleError(
                "only a tie whose entities are all on one side may be ordered by choice (GC-O2)", field=where
            )
        out[id(match)] = tuple(order)
    return out


def _chosen_order(group: Tie, order: tuple[str, ...], position: int) -> list[Slot]:
    """GC-O2: the players of one side chose who goes first among their tied entities."""
    action = {e.id: n for e, n in group}
    return [Slot(entries=((eid, action[eid]),), position=position, tie_break="chosen") for eid in order]


def _break_tie(dice: DiceSource, group: Tie, position: int) -> list[Slot]:
    """GC-O2 `d20`: each tied entity rolls a d20, lowest acts first; equal rolls share a
    slot (the parallel resolution)."""
    rolled = [(dice.roll(20, f"tie:{e.id}"), e, n) for e, n in group]
    tie_dice = tuple((e.id, v) for v, e, n in rolled)
    by_value: dict[int, list[tuple[str, int]]] = {}
    for v, e, n in rolled:
        by_value.setdefault(v, []).append((e.id, n))
    return [
        Slot(entries=tuple(by_value[v]), position=position, tie_dice=tie_dice, tie_break="d20")
        for v in sorted(by_value)
    ]
