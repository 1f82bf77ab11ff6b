"""Great Cosmos sheet rules: races, light/dark, mental health, inventory, move
(GC-S3, GC-S6, GC-S7, GC-I1..I4, GC-D2)."""

import pytest

from app.rules.errors import RuleError
from app.rulesets.great_cosmos.rules.sheet import (
    Container,
    Item,
    capacity,
    check_inventory,
    check_mental_health,
    inventory_load,
    is_insane,
    max_move,
    mental_health_bounds,
    money_slots,
    starting_light_dark,
)


@pytest.mark.parametrize(
    "race,expected",
    [
        ("humain", (1, 1)),
        ("elementaire", (1, 1)),
        ("magical_girl", (2, 1)),
        ("gardien", (2, 1)),
        ("succube", (1, 2)),
        ("onikaosu", (1, 2)),
        ("ningemono", (1, 1)),
    ],
)
def test_gc_s6_gc_s3_starting_light_dark(race, expected):
    assert starting_light_dark(race) == expected


@pytest.mark.parametrize(
    "race,bounds",
    [
        ("humain", (0, 100)),
        ("elementaire", (0, 100)),
        ("magical_girl", (0, 50)),
        ("gardien", (0, 50)),
        ("succube", (0, 150)),
        ("onikaosu", (0, 150)),
        ("machina", (0, 100)),
    ],
)
def test_gc_s7_gc_s3_mental_health_bounds(race, bounds):
    assert mental_health_bounds(race) == bounds


def test_gc_s7_out_of_bounds_needs_gm_override():
    check_mental_health("succube", 150)
    with pytest.raises(RuleError) as e:
        check_mental_health("gardien", 51)
    assert e.value.field == "mental_health"
    with pytest.raises(RuleError):
        check_mental_health("humain", -1)
    check_mental_health("gardien", 51, gm_override=True)


def test_gc_s7_zero_is_insane():
    assert is_insane(0) and not is_insane(1)


@pytest.mark.parametrize("force,slots", [(52, 20), (59, 20), (60, 24), (9, 0), (100, 40), (10, 4)])
def test_gc_i1_capacity_from_force_rounded_down_to_the_ten(force, slots):
    assert capacity(force) == slots


@pytest.mark.parametrize("money,slots", [(0, 0), (1, 1), (5000, 1), (5001, 2), (10000, 2)])
# rule: GC-I3
def test_gc_i3_money_any_started_slot_counts(money, slots):
    assert money_slots(money) == slots


def test_gc_i2_trinkets_stack_into_one_slot_per_stack_and_place():
    items = [
        Item("a", "trinket"),
        Item("b", "trinket"),
        Item("c", "trinket", stack="gems"),
        Item("d", "trinket", container="sac"),
    ]
    load = inventory_load(50, items, containers=[Container("sac", 5)])
    assert load.items_slots == 3 and load.containers["sac"]["used"] == 1


def test_gc_i2_quantity_multiplies_slots():
    assert inventory_load(50, [Item("potion", "item", 1, quantity=3)]).used == 3


@pytest.mark.parametrize(
    "item,field",
    [
        (Item("x", "item", 4), "inventory.items.0.slots"),
        (Item("x", "weapon", 0), "inventory.items.0.slots"),
        (Item("x", "two_handed_weapon", 3), "inventory.items.0.slots"),
        (Item("x", "two_handed_weapon", 7), "inventory.items.0.slots"),
        (Item("x", "armor", 2), "inventory.items.0.piece"),
        (Item("x", "armor", 4, piece="head"), "inventory.items.0.slots"),
        (Item("x", "wand", 1), "inventory.items.0.kind"),
        (Item("x", "item", 1, container="nowhere"), "inventory.items.0.container"),
    ],
)
def test_gc_i2_item_weights(item, field):
    with pytest.raises(RuleError) as e:
        check_inventory(100, [item])
    assert e.value.field == field


def test_gc_i4_full_capacity_fits_one_more_slot_does_not():
    items = [Item("sac", "item", 2)] * 10  # force 52 -> 20 slots
    assert check_inventory(52, items).free == 0
    with pytest.raises(RuleError) as e:
        check_inventory(52, items + [Item("x", "item", 1)])
    assert e.value.field == "inventory" and "21" in e.value.detail


def test_gc_i4_money_counts_against_capacity_and_the_purse():
    with pytest.raises(RuleError) as e:
        check_inventory(52, [Item("sac", "item", 2)] * 10, money=1)
    assert e.value.field == "inventory"
    with pytest.raises(RuleError) as e:
        check_inventory(52, [], money=5001, purse_slots=1)
    assert e.value.field == "inventory.money"
    assert check_inventory(52, [], money=5000, purse_slots=1).money_slots == 1


def test_gc_i4_container_limit():
    sac = [Container("sac", 3, weight=1)]
    assert check_inventory(52, [Item("a", "item", 3, container="sac")], containers=sac).used == 4
    with pytest.raises(RuleError) as e:
        check_inventory(
            52, [Item("a", "item", 3, container="sac"), Item("b", "item", 1, container="sac")], containers=sac
        )
    assert "sac" in e.value.detail


def test_gc_i4_at_most_one_two_handed_weapon():
    check_inventory(100, [Item("a", "two_handed_weapon", 4)])
    with pytest.raises(RuleError) as e:
        check_inventory(100, [Item("a", "two_handed_weapon", 4), Item("b", "two_handed_weapon", 4)])
    assert e.value.field == "inventory.items"


def test_gc_i4_duplicate_container_names():
    with pytest.raises(RuleError):
        check_inventory(100, [], containers=[Container("sac", 2), Container("sac", 3)])


@pytest.mark.parametrize("agilite,move", [(1, 1), (20, 1), (21, 2), (55, 3), (100, 5)])
def test_gc_d2_max_move_is_ceil_agilite_over_20(agilite, move):
    assert max_move(agilite) == move


def test_gc_d2_turn_modifiers():
    assert max_move(55, 2) == 5 and max_move(55, -5) == 0
