"""Asgard character actions outside encounters (AS-C5..C10, AS-C12), with table dice."""

import pytest

from app.rulesets.asgard.rules import hazards
from app.rulesets.asgard.rules.core import TestSpec
from app.rules.dice import TableDice
from app.rules.errors import RuleError


def table(dice):
    return TableDice(dice)


def done(source):
    source.finish()
    return [(r.value, r.purpose) for r in source.rolls]


def test_as_c3_damage_never_negative_and_vitality_stops_at_zero():
    assert hazards.take_damage(10, 4) == 6
    assert hazards.take_damage(10, -3) == 10
    assert hazards.take_damage(3, 8) == 0


def test_as_c5_failed_resistance_means_dying_within_1d6_rounds_failed_volonte_unconscious_2d6():
    source = table([2, 2, 2, 4, 3, 3, 3, 5, 6])
    # target 5 + 8 = 13; resistance 2 + 6 = 8 fails -> 1d6 = 4; volonte 2 + 9 = 11 fails -> 2d6 = 11
    result = hazards.mal_en_point(2, 2, 8, source)
    assert (result.resistance.target, result.resistance.score, result.dying, result.dies_in_rounds) == (13, 8, True, 4)
    assert (result.volonte.score, result.unconscious_rounds) == (11, 11)
    assert [p for _, p in done(source)] == ["resistance"] * 3 + ["dying_rounds"] + ["volonte"] * 3 + [
        "unconscious_rounds"
    ] * 2


def test_as_c5_passed_checks_roll_no_extra_dice():
    source = table([5, 5, 5, 4, 4, 4])  # target 5 + 6 = 11: 15+2, 12+0
    result = hazards.mal_en_point(2, 0, 6, source)
    assert (result.dying, result.dies_in_rounds, result.unconscious_rounds) == (False, None, None)
    assert len(done(source)) == 6


# rule: AS-C6
def test_as_c6_first_aid_is_a_soins_test_against_the_gm_difficulty():
    ok = hazards.first_aid(3, 10, table([2, 2, 3]))
    ko = hazards.first_aid(3, 10, table([2, 2, 2]))
    assert (ok.score, ok.success, ko.score, ko.success) == (10, True, 9, False)


# rule: AS-C7
def test_as_c7_rest_gains_resistance_and_the_healers_soins_on_success():
    assert hazards.natural_healing(3, table([])) == hazards.Healing(None, 3)
    healed = hazards.natural_healing(3, table([4, 4, 4]), healer_soins=4, target=15)
    assert (healed.test.score, healed.gain) == (16, 7)
    failed = hazards.natural_healing(3, table([1, 2, 2]), healer_soins=4, target=15)
    assert (failed.test.success, failed.gain) == (False, 3)


@pytest.mark.parametrize("metres,dice", [(2.9, 0), (3, 1), (5.9, 1), (6, 2), (9.5, 3), (30, 10)])
# rule: AS-C8
def test_as_c8_one_d6_per_full_3_metres(metres, dice):
    assert hazards.fall_dice(metres) == dice


# rule: AS-C8
def test_as_c8_acrobatie_15_cancels_the_highest_die():
    source = table([6, 2, 3, 5, 5, 5])  # fall 6+2+3; acrobatie 2 + 15 = 17 >= 15
    result = hazards.fall(9, 2, source)
    assert (result.dice, result.cancelled, result.damage) == ((6, 2, 3), (6,), 5)
    assert [p for _, p in done(source)] == ["fall"] * 3 + ["acrobatie"] * 3


# rule: AS-C8
def test_as_c8_deliberate_jump_acrobatie_10_cancels_one_more():
    source = table([6, 2, 3, 5, 5, 5, 3, 3, 2])  # second test 2 + 8 = 10 >= 10
    result = hazards.fall(9, 2, source, voluntary=True)
    assert (result.cancelled, result.damage, len(result.tests)) == ((6, 3), 2, 2)
    done(source)
    failed = hazards.fall(9, 2, table([6, 2, 3, 1, 2, 3, 2, 2, 2]), voluntary=True)  # 8, then 8 < 10
    assert (failed.cancelled, failed.damage) == ((), 11)


# rule: AS-C8
def test_as_c8_no_test_when_nothing_is_left_to_cancel():
    source = table([4, 5, 5, 5])
    result = hazards.fall(3, 2, source, voluntary=True)
    assert (result.cancelled, result.damage, len(result.tests)) == ((4,), 0, 1)
    done(source)
    assert hazards.fall(2, 2, table([])).damage == 0


@pytest.mark.parametrize("size,count", [("torch", 1), ("campfire", 2), ("blaze", 3)])
# rule: AS-C9
def test_as_c9_fire_dice_per_round(size, count):
    source = table([3] * count * 2)
    rounds = hazards.fire(size, 2, source)
    assert rounds == ((3,) * count,) * 2
    assert {p for _, p in done(source)} == {"fire"}
    with pytest.raises(RuleError):
        hazards.fire("volcano", 1, table([]))


# rule: AS-C10
def test_as_c10_breath_held_10_rounds_then_resistance_15_plus_5_every_10_rounds():
    assert [hazards.asphyxia_difficulty(r) for r in (11, 20, 21, 30, 31)] == [15, 15, 20, 20, 25]
    source = table([5, 5, 5, 2, 2, 2, 4, 6])
    # rounds 9..14 (resistance 3): 9, 10 free; 11: 18 ok; 12: 9 fails; 13, 14: 1d6 each
    result = hazards.asphyxia(3, 6, source, from_round=9)
    assert [(r.round, r.test.score if r.test else None, r.damage) for r in result.rounds] == [
        (9, None, None),
        (10, None, None),
        (11, 18, None),
        (12, 9, None),
        (13, None, 4),
        (14, None, 6),
    ]
    assert (result.out_of_breath, result.damage) == (True, 10)
    assert [p for _, p in done(source)][-2:] == ["asphyxia", "asphyxia"]


# rule: AS-C10
def test_as_c10_difficulty_20_from_round_21_and_continuing_out_of_breath():
    result = hazards.asphyxia(3, 1, table([5, 5, 5]), from_round=21)  # 18 < 20
    assert (result.rounds[0].test.target, result.out_of_breath) == (20, True)
    result = hazards.asphyxia(3, 2, table([1, 2]), from_round=3, out_of_breath=True)
    assert result.damage == 3


def test_as_c12_chase_steps_per_degree():
    scores = {}
    for dice, score in (([2, 2, 2], 8), ([3, 3, 2], 10), ([5, 5, 3], 15), ([6, 6, 6], 20)):
        turn = hazards.chase_turn(TestSpec("athletisme", 2), 0, table(dice))
        scores[score] = (turn.test.degree, turn.step)
    assert scores == {8: ("none", 0), 10: ("facile", 1), 15: ("moyen", 2), 20: ("difficile", 3)}
    heroic = hazards.chase_turn(TestSpec("pilotage", 10), 1, table([5, 5, 5]))
    assert (heroic.test.degree, heroic.step, heroic.after) == ("heroique", 4, 5)
    with pytest.raises(RuleError):
        hazards.chase_turn(TestSpec("athletisme", 2, target=15), 0, table([]))


def test_as_h4_cancelled_damage_gives_back_what_it_took_never_more():
    assert hazards.given_back(7, 0, 20, lost=5, before_blow=5) == 5  # 7 damage on 5 vitality took 5
    assert hazards.given_back(3, 2, 20, lost=5, before_blow=7) == 5  # only the damage named
    assert hazards.given_back(7, 18, 30, lost=7, before_blow=25) == 25  # the vitality before the blow
    assert hazards.given_back(7, 18, 20, lost=7, before_blow=25) == 20  # never above the maximum
    assert hazards.given_back(20, 0, 20, lost=5, before_blow=5) == 5  # a 5-point blow is no full heal
    assert hazards.given_back(6, 9, 20, lost=6, before_blow=8) == 9  # healed past it since: nothing taken
