"""Seeded dice are pinned: the same seed gives the same dice, totals and recorded rolls
(API.md "Dice provenance": a seed is reproducible), whatever the dice core's internals.

Every expected value below was computed on commit 00a411f, before the one-die fast path
of issue 16 (item 3); a change of draw order, of the RNG primitive or of the record breaks them.
"""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from app.rules.dice import RandomDice, Roll, dice_source, parse

SCRIPT = [
    ("1d100", "test"),
    ("1d20+5", "attack"),
    ("3d6+2", "damage"),
    ("4d6kh3", "stat"),
    ("2d6+1d4+3", "roll"),
    ("d%", "karma"),
    ("-1d6+10", "x"),
    ("2d20kl1", "adv"),
    ("1d1000", "big"),
    ("1d1", "one"),
    ("1d7-2", "odd"),
]


def _script(seed: int) -> tuple[list[int], list[dict]]:
    """Expressions, then rule dice one by one, a sum and a list, from one seeded source."""
    s = dice_source(seed=seed)
    totals = [parse(e).roll(s, p) for e, p in SCRIPT]
    totals += [s.roll(f, "rule") for f in (100, 10, 6, 20, 3)]
    totals += [s.roll_sum(5, 12, "sum")] + s.roll_many(4, 8, "many")
    return totals, [r.to_dict() for r in s.rolls]


@pytest.mark.parametrize(
    "seed, totals",
    [
        (0, [50, 19, 11, 12, 13, 65, 8, 5, 774, 1, 3, 33, 9, 6, 20, 1, 32, 6, 8, 2, 6]),
        (7, [42, 10, 13, 9, 11, 5, 9, 14, 72, 1, -1, 71, 7, 1, 19, 1, 37, 7, 1, 4, 1]),
        (20261129, [3, 19, 13, 13, 8, 11, 6, 2, 245, 1, 3, 66, 2, 6, 14, 3, 32, 4, 8, 1, 4]),
    ],
)
def test_a_seed_gives_the_same_totals_as_before(seed, totals):
    assert _script(seed)[0] == totals


SEED_20261129_ROLLS = (
    '[{"die":"d100","value":3,"purpose":"test"},{"die":"d20","value":14,"purpose":"attack"},'
    '{"die":"d6","value":6,"purpose":"damage"},{"die":"d6","value":3,"purpose":"damage"},'
    '{"die":"d6","value":2,"purpose":"damage"},{"die":"d6","value":1,"purpose":"stat","dropped":true},'
    '{"die":"d6","value":4,"purpose":"stat"},{"die":"d6","value":3,"purpose":"stat"},'
    '{"die":"d6","value":6,"purpose":"stat"},{"die":"d6","value":2,"purpose":"roll"},'
    '{"die":"d6","value":2,"purpose":"roll"},{"die":"d4","value":1,"purpose":"roll"},'
    '{"die":"d100","value":11,"purpose":"karma"},{"die":"d6","value":4,"purpose":"x"},'
    '{"die":"d20","value":5,"purpose":"adv","dropped":true},{"die":"d20","value":2,"purpose":"adv"},'
    '{"die":"d1000","value":245,"purpose":"big"},{"die":"d1","value":1,"purpose":"one"},'
    '{"die":"d7","value":5,"purpose":"odd"},{"die":"d100","value":66,"purpose":"rule"},'
    '{"die":"d10","value":2,"purpose":"rule"},{"die":"d6","value":6,"purpose":"rule"},'
    '{"die":"d20","value":14,"purpose":"rule"},{"die":"d3","value":3,"purpose":"rule"},'
    '{"die":"d12","value":1,"purpose":"sum"},{"die":"d12","value":10,"purpose":"sum"},'
    '{"die":"d12","value":10,"purpose":"sum"},{"die":"d12","value":10,"purpose":"sum"},'
    '{"die":"d12","value":1,"purpose":"sum"},{"die":"d8","value":4,"purpose":"many"},'
    '{"die":"d8","value":8,"purpose":"many"},{"die":"d8","value":1,"purpose":"many"},'
    '{"die":"d8","value":4,"purpose":"many"}]'
)


def test_a_seed_records_the_same_dice_with_their_purposes_as_before():
    assert json.dumps(_script(20261129)[1], separators=(",", ":")) == SEED_20261129_ROLLS


def test_one_die_expressions_from_a_shared_rng_give_the_same_sequence_as_before():
    rng = random.Random(16)
    assert [parse("1d100").roll(RandomDice(rng), "t") for _ in range(12)] == [
        47,
        61,
        62,
        37,
        54,
        30,
        58,
        1,
        53,
        85,
        92,
        34,
    ]
    assert [parse("1d20+5").roll(RandomDice(rng), "t") for _ in range(12)] == [
        13,
        13,
        6,
        15,
        15,
        16,
        10,
        25,
        15,
        6,
        13,
        25,
    ]


def test_three_thousand_seeded_rolls_digest_as_before():
    """Totals and recorded dice of 3,000 expressions (a fresh source each, one RNG), as JSON."""
    exprs = [
        "1d100",
        "1d20+5",
        "3d6+2",
        "4d6kh3",
        "2d6+1d4+3",
        "d%",
        "-1d6+10",
        "2d20kl1",
        "1d1000",
        "1d1",
        "1d7-2",
        "3d10dl1",
    ]
    rng, out = random.Random(16), []
    for i in range(3000):
        s = RandomDice(rng)
        out.append([parse(exprs[i % len(exprs)]).roll(s, f"p{i % 3}"), [r.to_dict() for r in s.rolls]])
    digest = hashlib.sha256(json.dumps(out, separators=(",", ":")).encode()).hexdigest()
    assert digest == "eb2b6a59193c1c5aa8098f573fdd687bb249456aadc08ba644e2edc85e4b60d8"


def test_an_rng_with_its_own_randbelow_rolls_as_before():
    class Loaded(random.Random):
        def _randbelow(self, n: int) -> int:
            return n - 1

    s = RandomDice(Loaded(1))
    assert (parse("1d20+5").roll(s, "p"), parse("4d6kh3").roll(s, "p")) == (25, 18)
    assert [tuple(r)[:4] for r in s.rolls] == [("d20", 20, "p", False)] + [("d6", 6, "p", False)] * 3 + [
        ("d6", 6, "p", True)
    ]
    assert {(r.epoch, r.k) for r in s.rolls} == {(None, None)}  # a seed's dice: outside epochs


def test_a_roll_is_a_tuple_with_named_fields_and_its_json():
    r = Roll("d6", 3, "damage")
    assert r == ("d6", 3, "damage", False, None, None) and isinstance(r, tuple)
    assert (r.die, r.value, r.purpose, r.dropped) == ("d6", 3, "damage", False)
    assert r.to_dict() == {"die": "d6", "value": 3, "purpose": "damage"}
    assert Roll("d6", 3, "damage", True).to_dict() == {"die": "d6", "value": 3, "purpose": "damage", "dropped": True}
    assert Roll("d6", 3, "damage", epoch="e1", k=7).to_dict() == {
        "die": "d6",
        "value": 3,
        "purpose": "damage",
        "epoch": "e1",
        "k": 7,
    }
    assert json.dumps(r) == '["d6", 3, "damage", false, null, null]'
