"""Great Cosmos level-ups (GC-L1..L7) with table dice."""

from types import MappingProxyType

import pytest

from app.rules.dice import TableDice
from app.rules.errors import DiceNeeded, RuleError
from app.rulesets.great_cosmos.rules.levels import Choices, Progress, level_up, lowest_stats
from tests.factories import GC, SHEETS

STATS = SHEETS[GC]["stats"]


def progress(level=1, karma=0, posture=None, **stats):
    return Progress(
        level=level,
        stats=MappingProxyType({**STATS, **stats}),
        hp=90,
        hp_max=100,
        mp=50,
        mp_max=50,
        light_points=1,
        dark_points=1,
        intuition=3,
        karma=karma,
        posture=posture,
    )


def run(p, dice, **choices):
    choices.setdefault("chance_bonus_pool", "hp")
    src = TableDice(dice)
    result = level_up(p, Choices(**choices), src)
    src.finish()
    return result, [(r.die, r.value, r.purpose) for r in src.rolls]


def changes(result):
    return {c.field: (c.before, c.after, c.dice) for c in result.changes}


# --- GC-L1 ----------------------------------------------------------------------


def test_gc_l1_two_d10_raises_two_stats_capped_at_80():
    r, rolls = run(progress(force=75), [9, 4, 70], mode="two_d10", stats=("force", "furtivite"))
    assert r.rule == "GC-L1" and r.after.level == 2
    assert r.after.stats["force"] == 80 and r.after.stats["agilite"] == 59
    assert rolls == [("d10", 9, "level_up:force"), ("d10", 4, "level_up:agilite"), ("d100", 70, "test")]
    assert changes(r)["stats.force"] == (75, 80, (9,))


def test_gc_l1_one_d20_and_a_stat_above_80_does_not_go_down():
    r, rolls = run(progress(force=83), [15, 70], mode="one_d20", stats=("force",))
    assert r.after.stats["force"] == 83
    assert rolls[0] == ("d20", 15, "level_up:force")


@pytest.mark.parametrize(
    "choices,field",
    [
        ({}, "mode"),
        ({"mode": "two_d10"}, "stats"),
        ({"mode": "two_d10", "stats": ("force",)}, "stats"),
        ({"mode": "two_d10", "stats": ("force", "force")}, "stats"),
        ({"mode": "two_d10", "stats": ("agilite", "furtivite")}, "stats"),
        ({"mode": "one_d20", "stats": ("force", "esprit")}, "stats"),
        ({"mode": "one_d20", "stats": ("luck",)}, "stats"),
        ({"mode": "one_d20", "stats": ("force",), "pool": "hp"}, "pool"),
        ({"mode": "one_d20", "stats": ("force",), "chance_bonus_pool": "xp"}, "chance_bonus_pool"),
    ],
)
# rule: GC-L7
def test_gc_l1_gc_l7_illegal_level2_choices_are_refused_before_any_die(choices, field):
    choices.setdefault("chance_bonus_pool", "hp")
    src = TableDice([])
    with pytest.raises(RuleError) as e:
        level_up(progress(), Choices(**choices), src)
    assert e.value.field == field and isinstance(e.value, RuleError)
    assert src.rolls == []


# --- GC-L2 -----------------------------------------------------------------------


def test_gc_l2_lowest_stat_plus_d10_capped_at_85():
    r, rolls = run(progress(level=2), [7, 70])
    assert r.rule == "GC-L2" and r.after.stats["charisme"] == 47
    assert rolls[0] == ("d10", 7, "level_up:charisme")
    r, _ = run(progress(level=2, force=82, esprit=82, charisme=82, agilite=82, precision=82, chance=82), [9, 90])
    assert r.after.stats["force"] == 85


def test_gc_l2_tie_defaults_to_the_first_in_sheet_order_or_the_named_one():
    p = progress(level=2, esprit=40, charisme=40)
    assert lowest_stats(p.stats) == ("esprit", "charisme")
    r, _ = run(p, [5, 70])
    assert r.after.stats["esprit"] == 45 and r.after.stats["charisme"] == 40
    r, _ = run(p, [5, 70], stat="charisme")
    assert r.after.stats["charisme"] == 45 and r.after.stats["esprit"] == 40


# rule: GC-L7
def test_gc_l2_gc_l7_stat_not_among_the_lowest_is_refused():
    with pytest.raises(RuleError) as e:
        run(progress(level=2), [5, 70], stat="force")
    assert e.value.field == "stat"


# --- GC-L3 -----------------------------------------------------------------------


@pytest.mark.parametrize("pool", ["hp", "mp"])
def test_gc_l3_pool_max_and_current_plus_d100(pool):
    r, rolls = run(progress(level=3), [64, 70], pool=pool)
    assert r.rule == "GC-L3"
    c = changes(r)
    if pool == "hp":
        assert c["hp_max"] == (100, 164, (64,)) and c["hp"] == (90, 154, (64,))
    else:
        assert c["mp_max"] == (50, 114, (64,)) and c["mp"] == (50, 114, (64,))
    assert rolls[0] == ("d100", 64, f"level_up:{pool}_max")


# rule: GC-L7
def test_gc_l3_gc_l7_missing_pool_is_refused():
    with pytest.raises(RuleError) as e:
        run(progress(level=3), [64, 70])
    assert e.value.field == "pool"


# --- GC-L4 -----------------------------------------------------------------------


def test_gc_l4_transfers_light_dark_and_final_skill():
    r, rolls = run(
        progress(level=4), [70], transfers=(("charisme", "force", 6), ("esprit", "furtivite", 4)), light=2, dark=1
    )
    assert r.rule == "GC-L4"
    assert (r.after.stats["force"], r.after.stats["charisme"], r.after.stats["agilite"], r.after.stats["esprit"]) == (
        74,
        34,
        59,
        46,
    )
    assert (r.after.light_points, r.after.dark_points) == (3, 2)
    assert changes(r)["final_skill_unlocked"] == (False, True, ())
    assert rolls == [("d100", 70, "test")]


def test_gc_l4_a_stat_above_85_that_gives_points_is_fine():
    r, _ = run(progress(level=4, force=90), [70], transfers=(("force", "charisme", 5),), light=0, dark=3)
    assert r.after.stats["force"] == 85 and r.after.stats["charisme"] == 45


@pytest.mark.parametrize(
    "choices,field",
    [
        ({"transfers": ()}, "light"),
        ({"light": 3}, "dark"),
        ({"light": 1, "dark": 1}, "light"),  # fewer than the +3 (GC-L4); more is a GM grant on top (GC-S6)
        ({"light": 3, "dark": 0, "transfers": (("force", "esprit", 6), ("charisme", "esprit", 5))}, "transfers"),
        ({"light": 3, "dark": 0, "transfers": (("force", "force", 2),)}, "transfers.0.to"),
        ({"light": 3, "dark": 0, "transfers": (("charisme", "force", 10),)}, "transfers"),
        ({"light": 3, "dark": 0, "transfers": (("esprit", "force", 0),)}, "transfers.0.points"),
    ],
)
# rule: GC-L7
def test_gc_l4_gc_l7_illegal_level5_choices(choices, field):
    p = progress(level=4, force=80, charisme=5)
    with pytest.raises(RuleError) as e:
        run(p, [70], **choices)
    assert e.value.field == field


def test_gc_l4_no_stat_above_85_by_transfer():
    with pytest.raises(RuleError) as e:
        run(progress(level=4, force=80), [70], transfers=(("esprit", "force", 6),), light=1, dark=2)
    assert e.value.field == "transfers" and "85" in e.value.detail


def test_gc_l4_no_stat_below_1_by_transfer():
    with pytest.raises(RuleError) as e:
        run(progress(level=4, esprit=3), [70], transfers=(("esprit", "force", 3),), light=1, dark=2)
    assert e.value.field == "transfers" and "below 1" in e.value.detail


# --- GC-L5 ----------------------------------------------------------------------


def test_gc_l5_level6_applies_the_gms_deltas():
    r, rolls = run(
        progress(level=5), [70], changes=(("force", 3), ("furtivite", -2), ("hp_max", 20), ("light_points", 1))
    )
    assert r.rule == "GC-L5" and r.after.level == 6
    assert (r.after.stats["force"], r.after.stats["agilite"]) == (71, 53)
    assert (r.after.hp_max, r.after.hp, r.after.light_points) == (120, 110, 2)
    assert rolls == [("d100", 70, "test")]


def test_gc_l5_level7_without_changes_is_only_the_chance_test():
    r, _ = run(progress(level=6), [70])
    assert r.after.level == 7 and r.after.stats == progress().stats


@pytest.mark.parametrize(
    "changes_,field",
    [
        ((("force", 40),), "changes.force"),
        ((("luck", 1),), "changes.luck"),
        ((("intuition", 4),), "changes.intuition"),
        ((("hp_max", -100),), "changes.hp_max"),
    ],
)
# rule: GC-L7
def test_gc_l5_gc_l7_illegal_deltas(changes_, field):
    with pytest.raises(RuleError) as e:
        run(progress(level=5), [70], changes=changes_)
    assert e.value.field == field


# rule: GC-L7
def test_gc_l5_gc_l7_level_choices_of_another_level_are_refused():
    with pytest.raises(RuleError) as e:
        run(progress(level=5), [70], mode="two_d10")
    assert e.value.field == "mode"


# --- GC-L6 -----------------------------------------------------------------------


def test_gc_l6_successful_chance_test_gives_2d20_to_the_chosen_pool():
    r, rolls = run(progress(level=3), [64, 30, 12, 5], pool="hp", chance_bonus_pool="mp")
    assert r.chance.outcome == "success" and r.bonus_dice == (12, 5)
    assert (r.after.mp_max, r.after.mp) == (67, 67)
    assert rolls[-2:] == [("d20", 12, "chance_bonus:mp_max"), ("d20", 5, "chance_bonus:mp_max")]


def test_gc_l6_failed_chance_test_gives_nothing():
    r, rolls = run(progress(level=3), [64, 61], pool="hp")
    assert r.chance.outcome == "failure" and r.bonus_dice == ()
    assert r.after.hp_max == 164 and len(rolls) == 2


def test_gc_l6_chance_test_follows_karma_rules_and_updates_karma():
    # karma -6: the d100, then the karma d10 added to it (GC-K2); a critical success lowers karma (GC-K1).
    r, rolls = run(progress(level=6, karma=-6), [55, 6])
    assert (r.chance.score, r.chance.outcome) == (61, "failure")
    with pytest.raises(DiceNeeded):
        run(progress(level=6, karma=-6), [55])
    r, rolls = run(progress(level=6, karma=-6), [5, 5, 3, 4])
    assert (r.chance.score, r.chance.outcome, r.after.karma) == (10, "critical_success", -7)
    assert rolls == [
        ("d100", 5, "test"),
        ("d10", 5, "karma"),
        ("d20", 3, "chance_bonus:hp_max"),
        ("d20", 4, "chance_bonus:hp_max"),
    ]
    assert (r.after.hp_max, r.after.hp) == (107, 97)


def test_gc_l6_chance_test_uses_the_new_chance_value():
    r, _ = run(progress(level=1, chance=58), [2, 60, 12, 1], mode="one_d20", stats=("chance",))
    assert r.after.stats["chance"] == 60 and r.chance.target == 60 and r.chance.outcome == "success"


# rule: GC-L7
def test_gc_l7_every_change_is_recorded_with_its_dice():
    r, _ = run(progress(level=3), [64, 30, 12, 5], pool="hp")
    assert [(c.field, c.before, c.after, c.dice) for c in r.changes] == [
        ("level", 3, 4, ()),
        ("hp_max", 100, 164, (64,)),
        ("hp", 90, 154, (64,)),
        ("hp_max", 164, 181, (12, 5)),
        ("hp", 154, 171, (12, 5)),
    ]
