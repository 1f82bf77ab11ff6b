"""Great Cosmos: races, light/dark points, mental health, the Final Skill, inventory,
movement (GC-S3, GC-S6, GC-S7, GC-S9, GC-I1..I4, GC-D2). Pure rules on plain values."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from app.rules.errors import RuleError

RACES = ("humain", "elementaire", "magical_girl", "gardien", "succube", "onikaosu")
OTHER_RACES_EXAMPLES = ("ningemono", "machina", "polymorphe")

# GC-S6: light/dark points at level 1 (1 + 1, plus the race bonus).
_LIGHT_BONUS = frozenset({"magical_girl", "gardien"})
_DARK_BONUS = frozenset({"succube", "onikaosu"})
# GC-S7: mental health bounds per race (other races: the human bounds).
_MENTAL_HEALTH = {
    "humain": (0, 100),
    "elementaire": (0, 100),
    "magical_girl": (0, 50),
    "gardien": (0, 50),
    "succube": (0, 150),
    "onikaosu": (0, 150),
}

MONEY_PER_SLOT = 5000
ITEM_KINDS = ("item", "weapon", "two_handed_weapon", "armor", "trinket")
ARMOR_PIECES = ("head", "chest_arms", "legs_boots")
_SLOT_RANGE = {"item": (1, 3), "weapon": (1, 3), "armor": (1, 3), "two_handed_weapon": (4, 6)}


def starting_light_dark(race: str) -> tuple[int, int]:
    """GC-S6: 1 light + 1 dark at level 1; +1 light for magical_girl and gardien,
    +1 dark for succube and onikaosu."""
    return 1 + (race in _LIGHT_BONUS), 1 + (race in _DARK_BONUS)


def mental_health_bounds(race: str) -> tuple[int, int]:
    """GC-S7: (min, max) mental health of a race; unknown races use the human bounds."""
    return _MENTAL_HEALTH.get(race, (0, 100))


def check_mental_health(race: str, value: int, *, gm_override: bool = False) -> None:
    """GC-S7: mental health must stay within the race bounds unless the GM overrides."""
    low, high = mental_health_bounds(race)
    if not gm_override and not low <= value <= high:
        raise RuleError(
            f"mental_health {value} is outside the {race} bounds {low}..{high} (GC-S7); only a GM override allows it",
            field="mental_health",
        )


def is_insane(value: int) -> bool:
    """GC-S7: at 0 (or below, under a GM override) the character sinks into madness."""
    return value <= 0


FINAL_SKILL_COST_KINDS = ("light", "dark")


def check_final_skill(cost_kind: str, cost_points: int, punchline: str) -> None:
    """GC-S9: a Final Skill costs at least 1 point of its kind, light or dark (« ne possède
    qu'un coût en light ou dark point »), and has its activation phrase, the punchline
    (« une phrase d'activation »): required, not blank."""
    if cost_kind not in FINAL_SKILL_COST_KINDS:
        raise RuleError("a Final Skill costs light or dark points (GC-S9)", field="final_skill.cost_kind")
    if cost_points < 1:
        raise RuleError(
            f"a Final Skill costs at least 1 {cost_kind} point, not {cost_points} (GC-S9)",
            field="final_skill.cost_points",
        )
    if not punchline.strip():
        raise RuleError(
            "a Final Skill needs its activation phrase, the punchline (GC-S9)", field="final_skill.punchline"
        )


def max_move(agilite: int, modifier: int = 0) -> int:
    """GC-D2: max move per turn = ceil(agilite / 20), plus/minus the turn's modifiers."""
    return max(0, math.ceil(agilite / 20) + modifier)


# --- inventory (GC-I1..I4) --------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One carried item. `slots` is ignored for trinkets (they stack, GC-I2)."""

    name: str
    kind: str = "item"
    slots: int | None = None
    container: str | None = None
    stack: str | None = None
    piece: str | None = None
    quantity: int = 1


@dataclass(frozen=True)
class Container:
    name: str
    slots: int
    weight: int = 0


@dataclass(frozen=True)
class InventoryLoad:
    """GC-I1..I3: what the inventory uses against the capacity, as the API shows it."""

    capacity: int
    used: int
    free: int
    items_slots: int
    money_slots: int
    containers: dict[str, dict[str, int]]
    purse: dict[str, int | None]


def capacity(force: int) -> int:
    """GC-I1: slots = 40 x (force rounded down to the ten) / 100 (force 52 -> 20)."""
    return 40 * (force // 10 * 10) // 100


def money_slots(money: int) -> int:
    """GC-I3: 5000 PO per slot, any started slot counts (5001 PO -> 2 slots)."""
    return -(-max(0, money) // MONEY_PER_SLOT)


def check_item(item: Item, index: int) -> None:
    """GC-I2: an item weighs 1..3 slots, a two-handed weapon 4..6, an armor piece 1..3
    and names its piece (head, chest_arms, legs_boots); trinkets stack."""
    where = f"inventory.items.{index}"
    if item.kind not in ITEM_KINDS:
        raise RuleError(
            f"{where}: unknown kind {item.kind!r}; one of {', '.join(ITEM_KINDS)}",
            field=f"{where}.kind",
            code="unknown_name",
        )
    if item.kind == "trinket":
        return
    low, high = _SLOT_RANGE[item.kind]
    if item.slots is None or not low <= item.slots <= high:
        raise RuleError(
            f"{where}: a {item.kind} weighs {low}..{high} slots, not {item.slots} (GC-I2)", field=f"{where}.slots"
        )
    if item.kind == "armor" and item.piece not in ARMOR_PIECES:
        raise RuleError(f"{where}: an armor piece is one of {', '.join(ARMOR_PIECES)} (GC-I2)", field=f"{where}.piece")


def _slots_by_place(items: Iterable[Item]) -> dict[str | None, int]:
    """GC-I2: slots used per place (None = carried directly): slots x quantity per
    item; each trinket stack of a place takes one slot."""
    used: dict[str | None, int] = {}
    stacks: set[tuple[str | None, str]] = set()
    for item in items:
        if item.kind == "trinket":
            key = (item.container, item.stack or "trinkets")
            if key in stacks:
                continue
            stacks.add(key)
            used[item.container] = used.get(item.container, 0) + 1
        else:
            used[item.container] = used.get(item.container, 0) + (item.slots or 0) * item.quantity
    return used


def inventory_load(
    force: int,
    items: list[Item],
    money: int = 0,
    purse_slots: int | None = None,
    containers: list[Container] | None = None,
) -> InventoryLoad:
    """GC-I1..I3: capacity from force; used = every item (wherever it is carried),
    every container's own weight and the money's slots."""
    containers = containers or []
    by_place = _slots_by_place(items)
    items_total = sum(by_place.values())
    coins = money_slots(money)
    weight = sum(c.weight for c in containers)
    cap = capacity(force)
    used = items_total + coins + weight
    return InventoryLoad(
        capacity=cap,
        used=used,
        free=cap - used,
        items_slots=items_total,
        money_slots=coins,
        containers={
            c.name: {"slots": c.slots, "used": by_place.get(c.name, 0), "free": c.slots - by_place.get(c.name, 0)}
            for c in containers
        },
        purse={"slots": purse_slots, "used": coins, "free": None if purse_slots is None else purse_slots - coins},
    )


def check_inventory(
    force: int,
    items: list[Item],
    money: int = 0,
    purse_slots: int | None = None,
    containers: list[Container] | None = None,
) -> InventoryLoad:
    """GC-I4: overloading is impossible: every item must be valid (GC-I2), fit its
    container, the money its purse and the whole the capacity (GC-I1); at most one
    two-handed weapon, counting each entry's `quantity` (an entry of quantity 2 is two
    weapons). Raises RuleError (422) with the reason."""
    containers = containers or []
    names = [c.name for c in containers]
    if len(set(names)) != len(names):
        raise RuleError(
            "inventory.containers: container names must be unique", field="inventory.containers", code="named_twice"
        )
    for i, item in enumerate(items):
        check_item(item, i)
        if item.container is not None and item.container not in names:
            raise RuleError(
                f"inventory.items.{i}: no container named {item.container!r}",
                field=f"inventory.items.{i}.container",
                code="unknown_name",
            )
    two_handed = sum(item.quantity for item in items if item.kind == "two_handed_weapon")
    if two_handed > 1:
        raise RuleError(
            f"overloaded: at most one two-handed weapon can be carried, not {two_handed} (GC-I4)",
            field="inventory.items",
            code="overloaded",
        )
    load = inventory_load(force, items, money, purse_slots, containers)
    for name, c in load.containers.items():
        if c["free"] < 0:
            raise RuleError(
                f"overloaded: container {name!r} holds {c['slots']} slots, its items need {c['used']} (GC-I4)",
                field="inventory.items",
                code="overloaded",
            )
    if purse_slots is not None and load.money_slots > purse_slots:
        raise RuleError(
            f"overloaded: {money} PO take {load.money_slots} slots, the purse holds {purse_slots} (GC-I3, GC-I4)",
            field="inventory.money",
            code="overloaded",
        )
    if load.used > load.capacity:
        raise RuleError(
            f"overloaded: the inventory needs {load.used} slots, force {force} carries {load.capacity} (GC-I1, GC-I4)",
            field="inventory",
            code="overloaded",
        )
    return load
