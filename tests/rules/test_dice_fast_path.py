"""The one-die fast path of issue 16 (item 3): what it shares and caches is bounded, it rolls
what the general path rolls, and every die is still recorded with its purpose."""

from __future__ import annotations

import random
import threading

import pytest

from app.rules import dice as dice_module
from app.rules.dice import (
    MAX_PARSED,
    MAX_RECORDS,
    Epoch,
    EpochClaim,
    RandomDice,
    Roll,
    TableDice,
    dice_source,
    epoch_die,
    parse,
)
from app.rules.errors import ExpressionError


def test_equal_dice_share_one_record_and_each_die_keeps_its_entry():
    source = RandomDice(random.Random(1))
    for _ in range(300):
        parse("1d6").roll(source, "attaque")
    assert len(source.rolls) == 300 and len({id(r) for r in source.rolls}) == 6
    assert {r for r in source.rolls} == {Roll("d6", v, "attaque") for v in range(1, 7)}


def test_the_shared_records_are_bounded_and_stay_right_when_emptied():
    rng, rolled = random.Random(2), []
    for i in range(MAX_RECORDS + 500):  # a request each, with a purpose of its own
        source = RandomDice(rng)
        value = parse("1d20+1").roll(source, f"p{i}") - 1
        rolled.append(source.rolls == [Roll("d20", value, f"p{i}")])
    assert len(dice_module._RECORDS) <= MAX_RECORDS and all(rolled)


def test_the_parsed_expressions_are_bounded_and_a_bad_one_is_not_kept():
    for n in range(MAX_PARSED + 10):
        assert parse(f"1d6+{n}").constant == n
    assert len(parse.__self__) <= MAX_PARSED
    with pytest.raises(ExpressionError):
        parse("3d")
    assert "3d" not in parse.__self__
    assert parse("1d20+5") is parse("1d20+5")


class _Counted(RandomDice):
    """A RandomDice subclass: the expression goes through its `roll`, not the inlined one."""

    __slots__ = ("calls",)

    def __init__(self, rng):
        super().__init__(rng)
        self.calls = 0

    def roll(self, faces, purpose):
        self.calls += 1
        return super().roll(faces, purpose)


@pytest.mark.parametrize("expression", ["1d100", "1d20+5", "-d6+10", "d%"])
def test_the_inlined_one_die_rolls_what_the_sources_own_roll_rolls(expression):
    inlined, general = RandomDice(random.Random(9)), _Counted(random.Random(9))
    a = [parse(expression).roll(inlined, "test") for _ in range(500)]
    b = [parse(expression).roll(general, "test") for _ in range(500)]
    assert a == b and inlined.rolls == general.rolls and general.calls == 500


def test_a_plain_subclass_of_random_draws_what_randint_draws():
    class Plain(random.Random):
        pass

    ours, floor = RandomDice(Plain(4)), random.Random(4)
    assert [parse("1d20+5").roll(ours, "t") for _ in range(200)] == [floor.randint(1, 20) + 5 for _ in range(200)]
    assert parse("3d6").roll(ours, "t") == sum(floor.randint(1, 6) for _ in range(3))


def test_table_dice_go_through_the_sources_own_checks():
    source = TableDice([4])
    assert parse("1d6+2").roll(source, "damage") == 6
    assert source.rolls == [Roll("d6", 4, "damage")]


def _claim(first: int = 0) -> EpochClaim:
    return EpochClaim(lambda: Epoch("epoch", bytes(range(32)), ("sel",), first))


def test_server_sources_of_one_transaction_share_its_numbers_and_record_their_own_dice():
    claim = _claim(5)
    a, b = dice_source(server=claim), dice_source(server=claim)
    parse("1d4").roll(a, "test")
    parse("2d6").roll(b, "damage")
    parse("1d4").roll(a, "test")
    assert [r.k for r in a.rolls] == [5, 8] and [r.k for r in b.rolls] == [6, 7] and claim.count == 9
    assert {r.epoch for r in [*a.rolls, *b.rolls]} == {"epoch"}
    assert [r.value for r in a.rolls] == [epoch_die(bytes(range(32)), b"epoch:%d\nsel" % k, 4) for k in (5, 8)]


def test_server_dice_of_a_number_are_always_the_same_and_every_face_comes_up():
    first = [parse("1d6").roll(dice_source(server=_claim()), "t") for _ in range(3)]
    assert len(set(first)) == 1  # the same k (0) of the same epoch: the same die
    source = dice_source(server=_claim())
    assert {parse("1d6").roll(source, "t") for _ in range(300)} == {1, 2, 3, 4, 5, 6}


def test_the_claim_is_made_at_the_first_die_only():
    calls: list[int] = []
    claim = EpochClaim(lambda: calls.append(1) or Epoch("e", b"k" * 32, (), 0))  # type: ignore[func-returns-value]
    source = dice_source(server=claim)
    assert calls == [] and not claim.drawn
    parse("3d6").roll(source, "t")
    assert calls == [1] and claim.drawn and claim.count == 3
