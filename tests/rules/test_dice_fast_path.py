"""The one-die fast path of issue 16 (item 3): what it shares and caches is bounded, it rolls
what the general path rolls, and every die is still recorded with its purpose."""

from __future__ import annotations

import random
import threading

import pytest

from app.rules import dice as dice_module
from app.rules.dice import MAX_PARSED, MAX_RECORDS, RandomDice, Roll, TableDice, dice_source, parse
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


def test_the_secure_source_shares_one_system_rng_and_records_its_dice_per_request():
    a, b = dice_source(), dice_source()
    assert a._rng is b._rng and type(a._rng) is random.SystemRandom
    assert a.rolls is not b.rolls
    lo_hi = {parse("1d4").roll(a, "test") for _ in range(200)}
    assert lo_hi == {1, 2, 3, 4} and b.rolls == [] and {r.purpose for r in a.rolls} == {"test"}


def test_secure_sources_in_threads_each_record_only_their_own_dice():
    results: dict[int, list[Roll]] = {}

    def request(i: int) -> None:
        source = dice_source()
        for _ in range(200):
            parse("1d100").roll(source, f"t{i}")
        results[i] = source.rolls

    threads = [threading.Thread(target=request, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, rolls in results.items():
        assert len(rolls) == 200 and {(r.die, r.purpose) for r in rolls} == {("d100", f"t{i}")}
        assert all(1 <= r.value <= 100 for r in rolls)
