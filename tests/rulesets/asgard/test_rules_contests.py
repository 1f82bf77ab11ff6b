"""Asgard opposition (AS-T9, AS-T7 in a confrontation) and cooperation (AS-T6), with table dice."""

from app.rulesets.asgard.rules.contests import cooperate, oppose
from app.rulesets.asgard.rules.core import TestSpec, roll_test
from app.rules.dice import TableDice


def rolled(skill_value, dice, **kw):
    source = TableDice(dice)
    result = roll_test(TestSpec("combat", skill_value, **kw), source)
    source.finish()
    return result


def test_as_t9_best_result_wins():
    contest = oppose(rolled(6, [4, 4, 4]), rolled(4, [3, 3, 3]))  # 18 vs 13
    assert (contest.winner, contest.decided_by) == ("a", "score")
    contest = oppose(rolled(2, [4, 4, 4]), rolled(4, [5, 5, 4]))  # 14 vs 18
    assert (contest.winner, contest.decided_by) == ("b", "score")


def test_as_t9_tie_goes_to_the_higher_skill_value():
    contest = oppose(rolled(6, [3, 3, 3]), rolled(4, [4, 4, 3]))  # 15 vs 15
    assert (contest.winner, contest.decided_by) == ("a", "skill")
    contest = oppose(rolled(4, [4, 4, 3]), rolled(6, [3, 3, 3]))
    assert (contest.winner, contest.decided_by) == ("b", "skill")


def test_as_t9_still_tied_the_defender_wins():
    contest = oppose(rolled(5, [3, 3, 3]), rolled(5, [2, 3, 4]))
    assert (contest.a.score, contest.b.score, contest.winner, contest.decided_by) == (14, 14, "b", "defender")


def test_as_t9_with_as_t3_automatic_results_come_first():
    contest = oppose(rolled(0, [6, 6, 6]), rolled(20, [5, 5, 5]))  # 18 vs 35 but automatic success
    assert (contest.winner, contest.decided_by) == ("a", "automatic")
    contest = oppose(rolled(20, [2, 2, 2]), rolled(30, [1, 1, 1]))  # 26 vs 33 but automatic failure
    assert (contest.winner, contest.decided_by) == ("a", "automatic")


def test_as_t7_close_skill_in_an_opposition_costs_5():
    a = rolled(6, [4, 4, 4], close_skill=True, confrontation=True)  # 18 - 5 = 13
    contest = oppose(a, rolled(0, [5, 5, 4]))  # 14
    assert (a.score, contest.winner) == (13, "b")


def test_as_t6_best_result_leads_plus_one_per_other_result_15_or_more():
    results = (rolled(3, [3, 3, 3], target=20), rolled(5, [4, 4, 4], target=20), rolled(2, [5, 4, 4], target=20))
    # scores 12, 17, 15: leader 17; others 12 (0), 15 (+1) -> 18 < 20
    coop = cooperate(results)
    assert (coop.leader, coop.adjustments, coop.score, coop.target, coop.outcome) == (1, (0, 0, 1), 18, 20, "failure")


def test_as_t6_minus_one_per_other_result_below_10_and_success_through_cooperation():
    results = (
        rolled(8, [5, 5, 2], target=20),
        rolled(0, [2, 3, 4], target=20),
        rolled(6, [3, 3, 4], target=20),
        rolled(6, [3, 3, 3], target=20),
    )
    # scores 20, 9, 16, 15: leader 20; -1 +1 +1 -> 21 >= 20
    coop = cooperate(results)
    assert (coop.leader, coop.adjustments, coop.score, coop.success, coop.outcome) == (
        0,
        (0, -1, 1, 1),
        21,
        True,
        "success",
    )
    alone = cooperate(results[:2])  # 20 - 1 = 19
    assert (alone.score, alone.outcome) == (19, "failure")


def test_as_t6_open_cooperation_reaches_a_degree():
    coop = cooperate((rolled(5, [4, 4, 4]), rolled(5, [5, 5, 5])))  # 17, 20 -> 20 + 1
    assert (coop.leader, coop.score, coop.target, coop.degree) == (1, 21, None, "difficile")


def test_as_t6_automatic_results_lead_and_adjust():
    coop = cooperate((rolled(30, [1, 1, 1], target=15), rolled(0, [6, 6, 6], target=40)))
    assert (coop.leader, coop.adjustments, coop.outcome) == (1, (-1, 0), "critical_success")
    coop = cooperate((rolled(0, [1, 1, 1], target=15), rolled(0, [1, 1, 1], target=15)))
    assert (coop.leader, coop.outcome) == (0, "critical_failure")


def test_as_t6_modifier_and_leader_tie_broken_by_skill():
    coop = cooperate((rolled(3, [4, 4, 4], target=15), rolled(5, [4, 4, 2], target=15)), modifier=-2)
    assert (coop.leader, coop.adjustments, coop.score, coop.outcome) == (1, (1, 0), 14, "failure")
