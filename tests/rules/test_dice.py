"""The dice core: sources, expressions, limits (API.md "Dice provenance")."""

from __future__ import annotations

import random
import subprocess
import sys

import icepool
import pytest

from app.rules.dice import (
    MAX_DICE_PER_REQUEST,
    Epoch,
    EpochClaim,
    EpochDice,
    RandomDice,
    TableDice,
    dice_source,
    parse,
)
from app.rules.errors import DiceLeftOver, DiceNeeded, DieOutOfRange, ExpressionError, TooManyDice
from app.kit.errors import RuleError


def table_total(expr: str, dice: list[int]) -> tuple[int, list[dict]]:
    source = TableDice(dice)
    total = parse(expr).roll(source, "roll")
    source.finish()
    return total, [r.to_dict() for r in source.rolls]


@pytest.mark.parametrize(
    "expr, dice, total",
    [
        ("1d100", [37], 37),
        ("d100", [100], 100),
        ("d%", [1], 1),
        ("3d6+2", [1, 2, 3], 8),
        ("1d20+5", [20], 25),
        ("1d20-1", [1], 0),
        ("2d6+1d4+3", [6, 6, 4], 19),
        ("4d6kh3", [1, 5, 3, 6], 14),
        ("4d6kl3", [1, 5, 3, 6], 9),
        ("4d6dh1", [1, 5, 3, 6], 9),
        ("4d6dl1", [1, 5, 3, 6], 14),
        ("2d20kh1", [4, 17], 17),
        ("2d20kl1", [4, 17], 4),
        ("10 - 1d4", [3], 7),
        ("7", [], 7),
        ("-1d6+10", [6], 4),
        ("3D6", [2, 2, 2], 6),
    ],
)
def test_expression_totals_with_table_dice(expr, dice, total):
    assert table_total(expr, dice)[0] == total


def test_rolls_carry_die_purpose_and_dropped_flag():
    _, rolls = table_total("4d6kh3", [1, 5, 3, 6])
    assert rolls == [
        {"die": "d6", "value": 1, "purpose": "roll", "dropped": True},
        {"die": "d6", "value": 5, "purpose": "roll"},
        {"die": "d6", "value": 3, "purpose": "roll"},
        {"die": "d6", "value": 6, "purpose": "roll"},
    ]


def test_keep_highest_drops_only_one_of_equal_dice():
    total, rolls = table_total("3d6kh2", [4, 4, 4])
    assert total == 8
    assert sum(1 for r in rolls if r.get("dropped")) == 1


@pytest.mark.parametrize(
    "expr",
    [
        "",
        "   ",
        "abc",
        "3d",
        "d",
        "2d6++1",
        "3d6 4",
        "1d0",
        "0d6",
        "101d6",
        "1d1001",
        "4d6kh5",
        "4d6dl5",
        "1" * 7,
        "1d6x",
        "d6d6",
        "+",
        "3d6k3",
        "x" * 201,
        "1d" + "9" * 7,
        # at least one die kept
        "1d6kh0",
        "4d6kl0",
        "4d6dh4",
        "4d6dl4",
        "1d6dh1",
        "2d6kh" + "0" * 7,
        # ASCII digits and spaces only (int() reads other scripts' digits)
        "１d６",
        "٣d٦",
        "3d٦",
        "1d6+٣",
        "३d6",
        "d%+１",
        "1d6\u00a0+2",
        "1d6\u2003+2",
        "3ｄ6",
    ],
)
def test_bad_expressions_are_refused(expr):
    with pytest.raises(ExpressionError) as err:
        parse(expr)
    assert isinstance(err.value, RuleError) and err.value.field == "expression"


def test_limits_are_inclusive():
    assert parse("100d1000").dice_count == 100
    assert parse("1d6+" * 49 + "1").dice_count == 49  # 197 characters


def test_expression_over_200_characters_is_refused_with_its_length():
    with pytest.raises(ExpressionError, match="201 characters"):
        parse("1+" * 100 + "1")


def test_bounds():
    assert parse("4d6kh3+2").bounds() == (5, 20)
    assert parse("10-2d4").bounds() == (2, 8)


def test_table_dice_too_few_says_which_die_is_needed_next():
    source = TableDice([3])
    with pytest.raises(DiceNeeded) as err:
        parse("2d6").roll(source, "damage")
    assert err.value.extra["needed"] == {"index": 1, "die": "d6", "purpose": "damage"}


@pytest.mark.parametrize("value", [0, 7, -1])
def test_table_die_outside_faces_is_refused(value):
    with pytest.raises(DieOutOfRange) as err:
        TableDice([value]).roll(6, "test")
    assert err.value.extra == {"index": 0, "die": "d6", "value": value, "purpose": "test"}


def test_table_dice_left_over_are_refused():
    source = TableDice([3, 4])
    source.roll(6, "test")
    with pytest.raises(DiceLeftOver) as err:
        source.finish()
    assert err.value.extra == {"used": 1, "given": 2}


def test_dice_source_picks_provenance():
    claim = EpochClaim(lambda: Epoch("e", b"s" * 32, (), 0))
    assert isinstance(dice_source(dice=[1], server=claim), TableDice)
    assert isinstance(dice_source(seed=1, server=claim), RandomDice)
    assert isinstance(dice_source(server=claim), EpochDice)
    with pytest.raises(RuntimeError, match="no server die"):  # nowhere to number it: refused, never rolled
        dice_source().roll(6, "test")


def test_seeded_dice_are_reproducible_within_and_across_processes():
    def roll(seed):
        s = dice_source(seed=seed)
        return [s.roll(f, "t") for f in (100, 10, 6, 20, 1000)]

    here = roll(1234)
    assert here == roll(1234)
    assert here != roll(1235)
    code = "from app.rules.dice import dice_source; s=dice_source(seed=1234); print([s.roll(f,'t') for f in (100,10,6,20,1000)])"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "99", "PATH": ""},
        cwd=".",
    ).stdout
    assert out.strip() == str(here)


def test_random_dice_stay_within_faces_and_reach_both_ends():
    source = RandomDice(random.Random(5))
    values = {source.roll(6, "t") for _ in range(600)}
    assert values == {1, 2, 3, 4, 5, 6}


@pytest.mark.parametrize(
    "expr, pool",
    [
        ("3d6+2", icepool.d6.pool(3).sum() + 2),
        ("4d6kh3", icepool.d6.pool(4).highest(3).sum()),
        ("2d20kl1", icepool.d20.pool(2).lowest(1).sum()),
        ("2d6+1d4+3", 2 @ icepool.d6 + icepool.d4 + 3),
    ],
)
def test_expressions_enumerated_match_icepool(expr, pool):
    """Enumerating every table-dice combination through our roller gives icepool's exact distribution."""
    import itertools
    from collections import Counter
    from fractions import Fraction

    e = parse(expr)
    faces = [t.faces for t in e.terms for _ in range(t.count)]
    counts = Counter(
        table_total(expr, list(combo))[0] for combo in itertools.product(*[range(1, f + 1) for f in faces])
    )
    n = sum(counts.values())
    ours = {k: Fraction(v, n) for k, v in counts.items()}
    theirs = {k: Fraction(q, pool.denominator()) for k, q in pool.items()}
    assert ours == theirs


def test_a_die_kept_or_dropped_at_the_edge_still_rolls():
    assert table_total("4d6kh4", [1, 2, 3, 4])[0] == 10
    assert table_total("4d6dl3", [1, 2, 6, 4])[0] == 6
    assert table_total("4d6dh0", [1, 2, 3, 4])[0] == 10


def test_an_expression_of_more_than_1000_dice_is_refused_when_parsed():
    assert parse("+".join(["100d6"] * 10)).dice_count == MAX_DICE_PER_REQUEST == 1000
    with pytest.raises(TooManyDice) as err:
        parse("+".join(["100d1000kh1"] * 16))
    assert isinstance(err.value, RuleError) and err.value.field == "expression"
    assert err.value.extra == {"dice": 1600, "limit": 1000}
    assert "1000" in err.value.detail


@pytest.mark.parametrize(
    "source", [lambda: RandomDice(random.Random(3)), lambda: TableDice([1] * 1001)], ids=["random", "table"]
)
def test_a_source_gives_1000_dice_at_most_whatever_asks(source):
    """The second guard: rule dice and several expressions of one request count together."""
    s = source()
    parse("100d6").roll(s, "a")
    for _ in range(400):
        s.roll(6, "b")
    parse("50d6kh1+50d6").roll(s, "c")
    s.roll_many(100, 6, "d")
    s.roll_sum(300, 6, "e")
    assert len(s.rolls) == 1000
    for ask in (
        lambda: s.roll(6, "f"),
        lambda: s.roll_sum(1, 6, "f"),
        lambda: s.roll_many(1, 6, "f"),
        lambda: parse("1d6").roll(s, "f"),
    ):
        with pytest.raises(TooManyDice) as err:
            ask()
        assert err.value.extra == {"dice": 1001, "limit": 1000}
    assert len(s.rolls) == 1000


def test_a_source_refuses_a_term_that_would_pass_the_bound_before_rolling_it():
    s = RandomDice(random.Random(3))
    parse("+".join(["100d6"] * 9) + "+50d6").roll(s, "a")
    for term in ("100d6kh1", "100d6"):
        with pytest.raises(TooManyDice):
            parse(term).roll(s, "b")
        assert len(s.rolls) == 950
