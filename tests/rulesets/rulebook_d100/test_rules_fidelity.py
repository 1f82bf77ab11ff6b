"""Issue 12, rules fidelity (Rulebook D100): where a line-by-line reading of the rulebook found
the pure engine wrong (rule pages in shared/rules/rulebook-d100.md), driven by table dice.

Modules are imported whole and their functions read as attributes, so a function the
old code lacked fails its own test only."""

from __future__ import annotations

from fractions import Fraction

from app.rulesets.rulebook_d100.rules import core as rb
from app.rules.dice import TableDice


def rb_roll(stat, die, **kw):
    src = TableDice([die])
    r = rb.roll_test(rb.TestSpec(stat_value=stat, **kw), src)
    src.finish()
    return r


# --- item 7: RB-C2 -----------------------------------------------------------------------------------------


def test_rb_c2_a_success_beats_a_failure_at_equal_level():
    attack = rb_roll(45, 45)  # success, level 0, units 5
    dodge = rb_roll(42, 43)  # failure, level 0, units 3
    c = rb.confront(attack, dodge, TableDice([]))
    assert (c.winner, c.tiebreak) == (0, "success")
    hit = rb.resolve_attack(attack, "melee", "1d6", TableDice([4]), defense="dodge", dodge=dodge)
    assert (hit.hit, hit.dodged, hit.damage) == (True, False, 4)


def test_rb_c2_a_100_never_wins_on_its_units_digit():
    hundred = rb_roll(105, 100, crit_chance=0)  # success, level 10 - 10 = 0, units 0
    other = rb_roll(45, 41, crit_chance=0)  # success, level 4 - 4 = 0, units 1
    assert (hundred.level, other.level) == (0, 0)
    c = rb.confront(hundred, other, TableDice([]))
    assert (c.winner, c.tiebreak) == (1, "units")
    places = rb.rank([hundred, other], [TableDice([]), TableDice([])])
    assert [p.index for p in places] == [1, 0]


def test_rb_c2_tiebreak_false_gives_a_draw():
    a, b = rb_roll(60, 38), rb_roll(60, 32)  # both success, level 3
    src = TableDice([])
    c = rb.confront(a, b, src, tiebreak=False)
    assert (c.winner, c.tiebreak, c.rerolls) == (None, "draw", ((), ()))
    assert src.rolls == []
    # different standings still have a winner
    assert rb.confront(rb_roll(45, 45), rb_roll(42, 43), TableDice([]), tiebreak=False).winner == 0


# --- item 8: RB-T6 -------------------------------------------------------------------------------------------


def test_rb_t6_a_negative_stat_keeps_its_critical_success_with_the_option_off():
    r = rb_roll(-10, 3, rescue_negative=False)
    assert (r.percentage, r.outcome, r.level) == (-10, "critical_success", 2)
    # other modifiers too (50 - 60 = -10, no difficulty)
    assert rb_roll(50, 3, modifier=-60, rescue_negative=False).outcome == "critical_success"
    # only a percentage made 0 or below by the difficulty loses it: 20 - 30 = -10
    assert rb_roll(20, 3, difficulty="difficile", rescue_negative=False).outcome == "failure"
    assert rb_roll(30, 3, difficulty="difficile", rescue_negative=False).outcome == "failure"  # exactly 0
    outcomes, _ = rb.odds(rb.TestSpec(stat_value=-10, rescue_negative=False))
    assert outcomes["critical_success"] == Fraction(5, 100)
