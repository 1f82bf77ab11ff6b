"""Exact odds of worlds-awakening tests (WA-T1..T5): brute force through the dice
path, and icepool (test-only oracle) over an independent statement of the rules."""

from __future__ import annotations

from fractions import Fraction

import icepool
from hypothesis import given, settings, strategies as st

from app.rulesets.worlds_awakening.rules import core as wa
from app.rules.dice import TableDice


def brute_force(spec: wa.TestSpec) -> dict[str, Fraction]:
    counts: dict[str, int] = {}
    for face in range(1, 21):
        r = wa.roll_test(spec, TableDice([face]))
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
    return {o: Fraction(n, 20) for o, n in counts.items()}


def reference_outcome(spec: wa.TestSpec, natural: int) -> str:
    """WA-T1, T3, T4 restated from the page's tables."""
    fail_max = {-4: 3, -3: 2, -2: 2}.get(max(spec.cha, -4), 1)
    success_min = {6: 17, 5: 18, 4: 18, 3: 19, 2: 19}.get(min(spec.cha, 6), 20)
    if natural >= success_min:
        return "critical_success"
    if natural <= fail_max:
        return "critical_failure"
    total = natural + spec.stat_value + spec.modifier + spec.pending
    return "success" if total >= spec.threshold else "failure"


specs = st.builds(
    wa.TestSpec,
    stat_value=st.integers(-6, 8),
    threshold=st.integers(-5, 35),
    cha=st.integers(-6, 8),
    modifier=st.integers(-6, 6),
    pending=st.sampled_from([-2, 0, 2]),
)


@settings(max_examples=200, deadline=None)
@given(specs)
def test_wa_t1_odds_match_brute_force_and_icepool(spec):
    outcomes, totals = wa.odds(spec)
    nonzero = {k: v for k, v in outcomes.items() if v}
    assert nonzero == brute_force(spec)
    die = icepool.d20.map(lambda x: reference_outcome(spec, x))
    assert nonzero == {o: die.probability(o) for o in die.outcomes()}
    assert sum(totals.values()) == 1


def test_wa_t4_odds_of_cha_6_dex_2_moderee():
    outcomes, _ = wa.odds(wa.TestSpec(stat_value=2, threshold=12, cha=6))
    # crit success 17..20 (4), crit failure 1 (1), success: 10..16 (7), failure 2..9 (8)
    assert outcomes == {
        "critical_success": Fraction(4, 20),
        "success": Fraction(7, 20),
        "failure": Fraction(8, 20),
        "critical_failure": Fraction(1, 20),
    }


def test_wa_t5_pending_counts_in_odds():
    with_pending, _ = wa.odds(wa.TestSpec(stat_value=0, threshold=12, pending=2))
    without, _ = wa.odds(wa.TestSpec(stat_value=0, threshold=12))
    assert with_pending["success"] - without["success"] == Fraction(2, 20)


def per_face(spec: wa.TestSpec) -> tuple[dict[str, Fraction], dict[int, Fraction]]:
    """WA-T1, T3, T4: the odds face by face through `resolve` (the old way of counting)."""
    counts = dict.fromkeys(wa.OUTCOMES, 0)
    totals: dict[int, int] = {}
    for natural in range(1, 21):
        r = wa.resolve(spec, natural)
        counts[r.outcome] += 1
        totals[r.total] = totals.get(r.total, 0) + 1
    return {o: Fraction(n, 20) for o, n in counts.items()}, {t: Fraction(n, 20) for t, n in sorted(totals.items())}


def test_wa_t1_t3_t4_counted_odds_equal_per_face_resolve_on_every_cha_and_threshold_edge():
    # every CHA band (WA-T4), thresholds on each side of both critical ranges, and beyond 1..20
    for cha in range(-7, 9):
        for threshold in range(-25, 46):
            for bonus in (-4, 0, 3):
                spec = wa.TestSpec(stat_value=bonus, threshold=threshold, cha=cha, modifier=1, pending=-2)
                outcomes, totals = wa.odds(spec)
                assert (outcomes, totals) == per_face(spec)
                assert list(outcomes) == list(wa.OUTCOMES) and list(totals) == sorted(totals)
