"""Exact odds: our rules vs icepool computing the same distribution cold (issue #7).

    .venv/bin/python bench/bench_odds.py [--rounds 11] [--budget 0.05] [--no-fresh-process]

For each ruleset's test, ours = the pure odds function of `app/rules` with its
caches cleared before every call (`outcome_counts.cache_clear()` for Great
Cosmos, `table.cache_clear()` for Asgard; Rulebook D100 and Worlds Awakening
have no cache); icepool = the rule restated independently (as the rules tests
do) and evaluated by icepool on fresh dice (`icepool.d(n)` is not cached) with
its global caches cleared before every call (`icepool.Pool.clear_cache()`,
`icepool.math.comb_row_cache`). A spot check also times the *first* call in a
fresh process for both, to show the in-process "cold" is really cold.
Results must be identical Fractions. Target: ours ≥ 3× faster than icepool cold.
Under 60 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from fractions import Fraction
from itertools import repeat

import _common
from _common import fmt_ns, interleave, machine, ratios, summary, table, verdict

import icepool
import icepool.math

from app.rulesets.rulebook_d100.rules import core as rb
from app.rulesets.worlds_awakening.rules import core as wa
from app.rulesets.asgard.rules import odds as as_odds
from app.rulesets.asgard.rules.core import TestSpec as AsgardSpec
from app.rulesets.great_cosmos.rules import odds as gc_odds

# the rules restated independently from the pages: the same oracles the tests check icepool with
from tests.rulesets.great_cosmos.test_rules_odds import oracle_outcome as gc_reference
from tests.rulesets.rulebook_d100.test_rules_odds import reference_outcome as rb_reference
from tests.rulesets.worlds_awakening.test_rules_odds import reference_outcome as wa_reference


def icepool_cold() -> None:
    icepool.Pool.clear_cache()
    icepool.math.comb_row_cache.clear()


def nonzero(d: dict) -> dict:
    return {k: Fraction(v) for k, v in d.items() if v}


# --- Great Cosmos (GC-T1, GC-T2, GC-K2..K4) ------------------------------------


def gc_case(target: int, karma: int):
    def ours():
        gc_odds.outcome_counts.cache_clear()
        return nonzero(gc_odds.odds_of_test(target, karma).outcomes)

    def ice():
        icepool_cold()
        if -5 < karma < 5:  # no karma d10: the d100 alone (fair to icepool)
            die = icepool.d(100).map(lambda n: gc_reference(n, 0, target, karma))
        else:
            die = icepool.map(lambda n, d: gc_reference(n, d, target, karma), icepool.d(100), icepool.d(10))
        return {o: die.probability(o) for o in die.outcomes()}

    def warm():
        return nonzero(gc_odds.odds_of_test(target, karma).outcomes)

    return ours, ice, warm


# --- Rulebook D100 (RB-T3..T8) -------------------------------------------------


def rb_case(spec: rb.TestSpec):
    def ours():
        return nonzero(rb.odds(spec)[0])

    def ice():
        icepool_cold()
        die = icepool.d(100).map(lambda x: rb_reference(spec, x))
        return {o: die.probability(o) for o in die.outcomes()}

    return ours, ice, ours  # no cache: warm is cold


# --- Worlds Awakening (WA-T1, T3, T4) -----------------------------------------


def wa_case(spec: wa.TestSpec):
    def ours():
        return nonzero(wa.odds(spec)[0])

    def ice():
        icepool_cold()
        die = icepool.d(20).map(lambda x: wa_reference(spec, x))
        return {o: die.probability(o) for o in die.outcomes()}

    return ours, ice, ours  # no cache: warm is cold


# --- Asgard (AS-T1, T3, H1) ----------------------------------------------------


def as_case(spec: AsgardSpec):
    n = 4 if spec.heroism_4d6 else 3
    bonus, target = as_odds.score_bonus(spec), as_odds.effective_target(spec)

    def classify(t):
        if all(x == 1 for x in t):
            return "critical_failure"
        if t.count(6) >= 3:
            return "critical_success"
        return "success" if sum(t) + bonus >= (10 if target is None else target) else "failure"

    def ours():
        as_odds.table.cache_clear()
        return nonzero(as_odds.odds_of_test(spec)[0])

    def ice():
        icepool_cold()
        die = icepool.d(6).pool(n).expand().map(classify, star=False)
        return {o: die.probability(o) for o in die.outcomes()}

    def warm():
        return nonzero(as_odds.odds_of_test(spec)[0])

    return ours, ice, warm


CASES = {
    "GC karma −10 (target 55)": lambda: gc_case(55, -10),
    "GC karma −7 (band −5..−9)": lambda: gc_case(55, -7),
    "GC karma 0 (band −4..4)": lambda: gc_case(55, 0),
    "GC karma 7 (band 5..9)": lambda: gc_case(55, 7),
    "GC karma 10": lambda: gc_case(55, 10),
    "RB 60%, crit 5": lambda: rb_case(rb.TestSpec(60)),
    "RB 45%, crit 10": lambda: rb_case(rb.TestSpec(45, crit_chance=10)),
    "RB 130%, overflow crits": lambda: rb_case(rb.TestSpec(130, overflow_crit=True)),
    "RB −10%, no rescue": lambda: rb_case(rb.TestSpec(20, difficulty="difficile", rescue_negative=False)),
    "RB quasi-impossible": lambda: rb_case(rb.TestSpec(70, difficulty="quasi_impossible")),
    "WA CHA −4 (crit fail ≤ 3)": lambda: wa_case(wa.TestSpec(3, 12, cha=-4)),
    "WA CHA −2 (≤ 2)": lambda: wa_case(wa.TestSpec(3, 12, cha=-2)),
    "WA CHA 0": lambda: wa_case(wa.TestSpec(3, 12, cha=0)),
    "WA CHA 2 (crit ≥ 19)": lambda: wa_case(wa.TestSpec(3, 12, cha=2)),
    "WA CHA 4 (≥ 18)": lambda: wa_case(wa.TestSpec(3, 12, cha=4)),
    "WA CHA 6 (≥ 17)": lambda: wa_case(wa.TestSpec(3, 12, cha=6)),
    "AS 3d6 (skill 3, target 15)": lambda: as_case(AsgardSpec("survie", 3, target=15)),
    "AS 4d6 heroism (skill 3, target 15)": lambda: as_case(AsgardSpec("survie", 3, target=15, heroism_4d6=True)),
}
FRESH_CASES = ("GC karma 7 (band 5..9)", "AS 4d6 heroism (skill 3, target 15)")


def batch(fn):
    def run(n: int) -> None:
        for _ in repeat(None, n):
            fn()

    return run


def first_call_ns(case: str, who: str) -> float:
    """Time of the first call in a fresh interpreter (imports done before timing)."""
    code = (
        "import sys, time, json; sys.path.insert(0, 'bench'); import bench_odds as b\n"
        f"ours, ice, _ = b.CASES[{case!r}]()\n"
        f"fn = ours if {who!r} == 'ours' else ice\n"
        "t0 = time.perf_counter_ns(); fn(); print(json.dumps(time.perf_counter_ns() - t0))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=_common.ROOT, capture_output=True, text=True, timeout=60)
    return float(json.loads(out.stdout))


def fresh_process_check(rounds: int) -> str:
    rows = []
    for case in FRESH_CASES:
        t = {"ours": [], "icepool": []}
        for _ in range(rounds):
            t["ours"].append(first_call_ns(case, "ours"))
            t["icepool"].append(first_call_ns(case, "ice"))
        rows.append(
            [
                case,
                fmt_ns(statistics.median(t["ours"])),
                fmt_ns(statistics.median(t["icepool"])),
                summary(ratios(t["icepool"], t["ours"]), "{:.1f}") + "×",
            ]
        )
    return table(["case (first call in a fresh process)", "ours", "icepool", "icepool ÷ ours"], rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--budget", type=float, default=0.05, help="seconds per timed batch")
    ap.add_argument("--no-fresh-process", action="store_true", help="skip the fresh-process spot check")
    args = ap.parse_args()
    print(f"bench_odds — {machine()} — {args.rounds} interleaved rounds, median (min–max)\n")
    rows, speedups = [], []
    for name, make in CASES.items():
        ours, ice, warm = make()
        assert ours() == ice() == warm(), f"{name}: ours {ours()} != icepool {ice()}"
        contenders = {"ours": batch(ours), "icepool": batch(ice)}
        if warm is not ours:
            contenders["warm"] = batch(warm)
        t = interleave(contenders, args.rounds, args.budget)
        speed = ratios(t["icepool"], t["ours"])
        warm_speed = ratios(t["icepool"], t["warm"]) if "warm" in t else speed
        speedups.append(statistics.median(speed))
        rows.append(
            [
                name,
                "identical",
                fmt_ns(statistics.median(t["ours"])),
                fmt_ns(statistics.median(t["icepool"])),
                summary(speed) + "×",
                verdict(statistics.median(speed) >= 3.0),
                summary(warm_speed, "{:.0f}") + "×" + ("" if "warm" in t else " (no cache)"),
            ]
        )
    print(
        table(
            [
                "test",
                "Fractions",
                "ours (cold)",
                "icepool (cold)",
                "icepool ÷ ours cold (≥ 3×)",
                "target",
                "info: icepool ÷ ours warm (lru cache hit)",
            ],
            rows,
        )
    )
    met = sum(s >= 3.0 for s in speedups)
    print(f"\nTarget ≥ 3× met in {met}/{len(speedups)} cases; worst median speed-up {min(speedups):.1f}×.")
    if not args.no_fresh_process:
        print("\nFresh-process spot check (3 alternating pairs):\n")
        print(fresh_process_check(3))


if __name__ == "__main__":
    main()
