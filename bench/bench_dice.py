"""Dice core vs the raw floor vs Avrae's d20 (issue #7).

    .venv/bin/python bench/bench_dice.py [--rounds 15] [--budget 0.02]

Contenders, interleaved and repeated, per expression:
- ours:  `parse(expr).roll(RandomDice(rng), "roll")` — a fresh dice source per
         roll (as per request), the cached parse, every die recorded with its purpose;
- floor: the same sum written by hand with `rng.randint` (keep-highest with `sorted`);
- d20:   `d20.roll(expr)` (Avrae's library, bench-only dependency).
`rng` is one `random.Random(seed)` made before timing, for ours and the floor alike;
info columns: ours with a new `random.Random(seed)` per roll (seeding cost) ÷ the floor, and
ours with `dice_source()` (a request without seed nor dice: the secure RNG) ÷ the same floor
written with one `random.SystemRandom()` (issue 16, item 3).
Targets: ours ≤ 2× the floor, and ≥ 10× faster than d20. Under 30 s.
"""

from __future__ import annotations

import argparse
import random
import statistics
from itertools import repeat

import _common  # noqa: F401  (puts the repo root on sys.path)
from _common import fmt_ns, interleave, machine, ratios, summary, table, verdict

import d20

from app.rules.dice import RandomDice, dice_source, parse

SEED = 20261129


def _floor(rng: random.Random):
    r = rng.randint
    return {
        "1d100": lambda: r(1, 100),
        "3d6+2": lambda: sum([r(1, 6) for _ in range(3)]) + 2,
        "4d6kh3": lambda: sum(sorted([r(1, 6) for _ in range(4)])[1:]),
        "1d20+5": lambda: r(1, 20) + 5,
        "2d6+1d4+3": lambda: sum([r(1, 6) for _ in range(2)]) + r(1, 4) + 3,
    }


EXPRESSIONS = list(_floor(random.Random(0)))


def check_parity(expr: str) -> None:
    """Same seed → same totals for ours and the floor (both draw `_randbelow(f) + 1`);
    d20 stays within the expression's bounds."""
    ours_rng, floor_rng = random.Random(SEED), random.Random(SEED)
    floor = _floor(floor_rng)[expr]
    for _ in range(2000):
        a = parse(expr).roll(RandomDice(ours_rng), "roll")
        assert a == floor(), expr
    lo, hi = parse(expr).bounds()
    assert all(lo <= d20.roll(expr).total <= hi for _ in range(500)), expr


def contenders(expr: str) -> dict:
    ours_rng, floor_rng = random.Random(SEED), random.Random(SEED)
    floor = _floor(floor_rng)[expr]
    secure_floor = _floor(random.SystemRandom())[expr]

    def ours(n: int) -> None:
        for _ in repeat(None, n):
            parse(expr).roll(RandomDice(ours_rng), "roll")

    def ours_seeded(n: int) -> None:
        for i in range(n):
            parse(expr).roll(RandomDice(random.Random(SEED + i)), "roll")

    def ours_secure(n: int) -> None:
        for _ in repeat(None, n):
            parse(expr).roll(dice_source(), "roll")

    def floor_(n: int) -> None:
        for _ in repeat(None, n):
            floor()

    def floor_secure(n: int) -> None:
        for _ in repeat(None, n):
            secure_floor()

    def d20_(n: int) -> None:
        for _ in repeat(None, n):
            d20.roll(expr)

    return {
        "ours": ours,
        "floor": floor_,
        "d20": d20_,
        "ours_seeded": ours_seeded,
        "ours_secure": ours_secure,
        "floor_secure": floor_secure,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--budget", type=float, default=0.02, help="seconds per timed batch")
    args = ap.parse_args()
    print(f"bench_dice — {machine()} — {args.rounds} interleaved rounds, median (min–max)\n")
    rows, all_ok = [], True
    for expr in EXPRESSIONS:
        check_parity(expr)
        t = interleave(contenders(expr), args.rounds, args.budget)
        vs_floor = ratios(t["ours"], t["floor"])
        d20_speedup = ratios(t["d20"], t["ours"])
        seeded = ratios(t["ours_seeded"], t["floor"])
        secure = ratios(t["ours_secure"], t["floor_secure"])
        ok = statistics.median(vs_floor) <= 2.0 and statistics.median(d20_speedup) >= 10.0
        all_ok &= ok
        rows.append(
            [
                f"`{expr}`",
                fmt_ns(statistics.median(t["ours"])),
                fmt_ns(statistics.median(t["floor"])),
                fmt_ns(statistics.median(t["d20"])),
                summary(vs_floor) + "×",
                summary(d20_speedup, "{:.1f}") + "×",
                summary(seeded) + "×",
                summary(secure) + "×",
                verdict(ok),
            ]
        )
    print(
        table(
            [
                "expression",
                "ours/roll",
                "floor/roll",
                "d20/roll",
                "ours ÷ floor (≤ 2×)",
                "d20 ÷ ours (≥ 10×)",
                "info: ours + new Random(seed) ÷ floor",
                "info: ours, dice_source() ÷ SystemRandom floor",
                "targets",
            ],
            rows,
        )
    )
    print(f"\nAll targets {verdict(all_ok)}. Absolute times are indicative only; the ratios are the result.")


if __name__ == "__main__":
    main()
