# ruff: noqa: F811  (the `table` fixture is imported from test_encounters)
"""Issue 26 item 3: the exact odds of an attack (`actions/plan`, each ruleset's
`EncounterRules.odds`) against brute force over every die combination of the action's own
resolution (small pools) and against a seeded simulation of it (>= 100,000 resolutions, large
pools), each within 4 standard errors.

Both run the action route's use case (`actions.dispatch`: the caller's checks, the parties, the
exchange) in one rolled-back unit of work; every check passed, the prepared action is resolved
in memory by the ruleset's `resolve` — exactly what the route then does, but for writing the
changes and recording the action (I/O): the cheapest faithful resolution."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from fractions import Fraction
from typing import Any

import pytest
from sqlmodel import Session

from app.rules.dice import RandomDice
from app.rules.errors import DiceNeeded
from app.rulesets.asgard import combat as as_combat
from app.rulesets.rulebook_d100 import combat as rb_combat
from app.rulesets.contract.combat import ExchangeOdds, Party
from app.rulesets.great_cosmos import exchange as gc_exchange
from app.rulesets.great_cosmos.rules.postures import resolve_attack as gc_resolve_attack
from app.services.records import Principal
from app.services.encounters import actions
from app.services.encounters.dice import CombatDice
from app.services.encounters.plan import brute_force, outcome
from app.services.encounters.unit import EncounterWork
from tests.api.encounter_support import Table, ids, table  # noqa: F401  (the fixture)
from tests.factories import as_fighter, gc_fighter, rb_fighter, wa_fighter

N = 100_000  # resolutions of a simulation
N_COOPERATION = 25_000


def duel(t: Table, a: dict, b: dict) -> tuple[str, dict[str, str]]:
    s = t.encounter(
        [
            {"character_id": t.character("Aiko", a, kind="pc", player=t.alice), "position": {"x": 0, "y": 0}},
            {"character_id": t.character("Brute", b, kind="npc"), "position": {"x": 1, "y": 0}},
        ]
    )
    t.start(s["id"], seed=3)
    return s["id"], ids(s)


@contextmanager
def prepared(engine, t: Table, eid: str, body: dict[str, Any]) -> Iterator[actions.Prepared]:
    """The GM's action, every check of the route passed, not resolved (rolled back on exit)."""
    principal = Principal(campaign_id=t.c.id, role="gm", player_id=None, token_hash="")
    with Session(engine) as session:
        uow = EncounterWork(session, principal, eid, None, combatants=actions.named(body))
        with uow:
            yield actions.dispatch(uow, uow.fight, principal, body, planner=lambda p: {"p": p})["p"]


def exact(p: actions.Prepared) -> ExchangeOdds:
    odds = p.fight.rules.odds(p.build(CombatDice(dice=[])))
    assert odds is not None
    assert sum(odds.outcomes.values()) == 1
    return odds


def exact_equals_brute_force(engine, t: Table, eid: str, body: dict[str, Any], limit: int) -> ExchangeOdds:
    """The ruleset's exact odds, checked equal to brute force over every combination of the dice of
    the route's resolution (`plan.brute_force`: the prepared exchange resolved on each)."""
    with prepared(engine, t, eid, body) as p:
        odds = exact(p)
        counted = brute_force(p, limit=limit)
    assert counted is not None, "too many combinations for this test"
    assert (odds.hit, odds.down, odds.out) == (counted.hit, counted.down, counted.out)
    return odds


def seeded(seed: int, n: int) -> Iterator[CombatDice]:
    """`n` resolutions' dice, one after the other from one seeded RNG (each its own CombatDice)."""
    rng = random.Random(seed)
    for _ in range(n):
        dice = CombatDice()
        dice.source.caller = RandomDice(rng)
        yield dice


def fresh(party: Party, dice: CombatDice) -> Party:
    """A copy of a party for one resolution: its sheet's fields are set, not changed in place, by the
    attacks simulated here (a shallow copy of it), its counters and conditions copied."""
    return replace(
        party,
        sheet=party.sheet.model_copy(),
        counters=dict(party.counters),
        conditions=list(party.conditions),
        dice=dice.of(party.id),
    )


def within(p: Fraction, observed: int, n: int, what: str) -> None:
    """The observed count within 4 standard errors of n·p (a probability of 0 or 1: exactly)."""
    sd = math.sqrt(n * float(p) * (1 - float(p)))
    assert abs(observed - n * float(p)) <= max(4 * sd, 1e-9), f"{what}: {observed}/{n} vs exact {float(p):.5f}"


def check_simulation(
    odds: ExchangeOdds, seen: Counter[str], hits: int, downs: int, n: int, outs: int | None = None
) -> None:
    assert set(seen) <= set(odds.outcomes), seen
    for name, p in odds.outcomes.items():
        within(p, seen[name], n, name)
    within(odds.hit, hits, n, "hit")
    within(odds.down, downs, n, "down")
    assert (odds.out is None) == (outs is None)
    if odds.out is not None and outs is not None:
        within(odds.out, outs, n, "out")


# --- Great Cosmos ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attacker", "defender", "extra"),
    [
        # GC-P1 an offensive defender cannot defend; GC-K2 the attacker's karma -6 adds a d10
        (gc_fighter(60, karma=-6), gc_fighter(40, posture="offensive", hp=3, hp_max=10), {"damage": "1d4"}),
        # GC-P2 a dodge (d100 against d100; the attack at -40: fewer hits to count on), GC-P1 x2 damage
        (gc_fighter(60, posture="offensive"), gc_fighter(40, hp=3, hp_max=10), {"damage": "1d2", "modifier": -40}),
    ],
    ids=["GC-K2_karma_die_no_defence", "GC-P2_dodge_GC-P1_offensive"],
)
def test_issue26_item3_gc_exact_attack_odds_equal_brute_force_over_every_die_combination(
    table, database, attacker, defender, extra
):
    t = table("great-cosmos")
    eid, n = duel(t, attacker, defender)
    body = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], **extra}
    odds = exact_equals_brute_force(database, t, eid, body, limit=10_000)
    assert 0 < odds.down < odds.hit < 1


def test_issue26_item3_gc_exact_odds_d100_and_karma_d10_on_both_sides_match_a_seeded_simulation(table, database):
    """GC-K2 karma d10 on both sides (attacker karma -7: +d10; the Illumination defender's karma
    locked at +10 (GC-K5): -d10), GC-P5 its automatic defence d10 and +20 advantage, GC-P2 its
    dodge, GC-P4 2d6 damage: 100,000 seeded resolutions of the pure `resolve_attack` the route's
    attack calls (`exchange.attack` is that, after `exchange.engage`'s checks and fighters, plus
    its steps and sheet writes: hp after = max(0, the wound's), down at 0, as it writes them)."""
    t = table("great-cosmos")
    defender = gc_fighter(45, posture="illumination", posture_advantage=5, hp=6, hp_max=12, light_points=1)
    eid, n = duel(t, gc_fighter(70, karma=-7), defender)
    body = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "damage": "2d6"}
    with prepared(database, t, eid, body) as p:
        odds = exact(p)
        e = gc_exchange.engage(p.build(CombatDice(dice=[])))
    rng = random.Random(26)
    seen: Counter[str] = Counter()
    hits = downs = 0
    for _ in range(N):
        r = gc_resolve_attack(RandomDice(rng), e.fa, e.fd, **e.terms)
        after = max(0, r.wound.hp_after) if r.wound is not None else e.fd.hp
        hits += after < e.fd.hp
        downs += after <= 0
        seen[
            "missed"
            if not r.hit
            else "auto_defended"
            if r.auto_defended
            else "defended"
            if r.defense_holds
            else "damage"
        ] += 1
    assert all(0 < share < 1 for share in odds.outcomes.values())
    check_simulation(odds, seen, hits, downs, N)


# --- Asgard ---------------------------------------------------------------------------------------


def fight(t: Table, people: list[tuple[str, dict, str]]) -> tuple[str, dict[str, str]]:
    s = t.encounter(
        [
            {
                "character_id": t.character(name, sheet, kind=kind, player=t.alice if kind == "pc" else None),
                "position": {"x": i, "y": 0},
            }
            for i, (name, sheet, kind) in enumerate(people)
        ]
    )
    t.start(s["id"], seed=3)
    return s["id"], ids(s)


def asgard_engaged(p: actions.Prepared) -> tuple[ExchangeOdds, Any, tuple[Party, str], Any]:
    """The exact odds, a fresh exchange, its one target with its reaction, the attack's choices
    (`Asgard._engage`, as the route's attack reads them)."""
    x = p.build(CombatDice(dice=[]))
    targets, choice = as_combat.COMBAT._engage(x)
    (target,) = targets
    return exact(p), x, target, choice


def current_first(t: Table, eid: str, n: dict[str, str], name: str) -> None:
    """Turns passed until `name` acts (the GM's next-turn)."""
    for _ in range(len(n) + 1):
        if t.state(eid)["current"]["combatant_ids"] == [n[name]]:
            return
        t.next_turn(eid)
    raise AssertionError(f"{name} never acts")


@pytest.mark.parametrize(
    ("options", "extra", "target_kind"),
    [
        # AS-C1 unperceived (no defense, combat >= 10), AS-H1 the 4th die added to the damage, AS-C2 2d6+1
        ({}, {"unperceived": True, "heroism_4d6": True, "damage": "2d6+1"}, "npc"),
        # AS-T8 an NPC taking 11 (no attack dice: its weapon's d6 rolled), AS-C1 the defense 3d6, AS-C3
        ({"take_11_allowed": True}, {"take_11": True, "damage": "1d6+2"}, "pc"),
    ],
    ids=["AS-C1_unperceived_AS-H1", "AS-T8_take_11_AS-C1_defense"],
)
def test_issue26_item3_asgard_exact_attack_odds_equal_brute_force_over_every_die_combination(
    table, database, options, extra, target_kind
):
    """The defender's vitality stays above 0 (AS-C5's tests would multiply the combinations):
    `down` is checked by the simulation below."""
    t = table("asgard", options)
    kind = "npc" if extra.get("take_11") else "pc"
    eid, n = fight(
        t,
        [
            ("Aiko", as_fighter(3, heroism=2), kind),
            ("Brute", as_fighter(2, vitality=30, vitality_max=30, protection=1), target_kind),
        ],
    )
    current_first(t, eid, n, "Aiko")
    body = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], **extra}
    odds = exact_equals_brute_force(database, t, eid, body, limit=5_000)
    assert odds.outcomes["damage"] == odds.hit  # every hit lowers vitality here (damage > protection)
    assert 0 < odds.hit < 1


def test_issue26_item3_asgard_group_attack_exact_odds_match_a_seeded_simulation(table, database):
    """AS-C11 a group of three extras (one test, +2 to the test and the damage), AS-C1 the defense
    3d6, AS-C3 protection 1, AS-C5 the volonte test when vitality reaches 0 (down: unconscious):
    100,000 seeded resolutions of `resolve_attack`, the route's attack (`Asgard.attack` is its
    `_engage` then that, plus the steps it logs and the turn it shares), each on fresh copies of
    the parties the route built."""
    t = table("asgard")
    extra = {"tier": "figurant"}
    eid, n = fight(
        t,
        [
            ("Aiko", as_fighter(5, **extra), "npc"),
            ("Bo", as_fighter(1, **extra), "npc"),
            ("Cy", as_fighter(1, **extra), "npc"),
            ("Brute", as_fighter(2, vitality=5, vitality_max=12, protection=1), "pc"),
        ],
    )
    current_first(t, eid, n, "Aiko")
    body = {
        "type": "attack",
        "actor_id": n["Aiko"],
        "target_id": n["Brute"],
        "group": [n["Bo"], n["Cy"]],
        "damage": "2d6",
    }
    with prepared(database, t, eid, body) as p:
        odds, x, (target, reaction), choice = asgard_engaged(p)
        seen: Counter[str] = Counter()
        hits = downs = outs = 0
        for dice in seeded(2626, N):
            # the parties it changes, copied; the group's members are only read
            group = [replace(q, dice=dice.of(q.id)) for q in x.more]
            foe, me = fresh(target, dice), fresh(x.actor, dice)
            steps = as_combat.resolve_attack(dice, me, [(foe, reaction)], choice, group=group, round_=x.round)
            hit = foe.sheet.vitality < target.sheet.vitality
            hits += hit
            downs += foe.sheet.vitality == 0
            outs += as_combat.COMBAT.is_down(foe.sheet)
            seen["damage" if any(s["what"] == "damage" for s in steps) else "missed"] += 1
    assert all(0 < share < 1 for share in odds.outcomes.values())
    assert odds.out is not None and 0 < odds.out < odds.down < odds.hit
    check_simulation(odds, seen, hits, downs, N, outs)


def down_and_out_counted(p: actions.Prepared, branched: set[str]) -> tuple[Fraction, Fraction]:
    """(P(vitality brought to 0), P(out)) over every value of the dice whose purpose is in
    `branched`, the route's own resolution (`prepared.build`, the ruleset's `resolve`); every other
    die fixed at 6 (AS-C5's resistance, dying and unconscious rounds: none of them decides either)."""
    down, out = Fraction(0), Fraction(0)
    before = p.exchange.foe.sheet.vitality

    def explore(prefix: list[int], share: Fraction) -> None:
        nonlocal down, out
        x = p.build(CombatDice(dice=prefix))
        try:
            p.fight.rules.resolve(x)
        except DiceNeeded as needed:
            faces = int(needed.extra["needed"]["die"][1:])
            if needed.extra["needed"]["purpose"].partition(":")[0] not in branched:
                return explore([*prefix, faces], share)
            for value in range(1, faces + 1):
                explore([*prefix, value], share / faces)
            return
        foe = next(q for q in (x.target, *x.more) if q is not None and q.id == p.target_id)
        down += share if before > 0 == foe.sheet.vitality else 0
        out += share if as_combat.COMBAT.is_down(foe.sheet) else 0

    explore([], Fraction(1))
    return down, out


def test_as_c5_down_is_vitality_brought_to_0_and_out_is_unconscious_exact(table, database):
    """AS-C5: `down` is the target's vitality brought to 0 (as in every ruleset), `out` the
    volonte test failed as well (unconscious), both exact: counted over every value of the damage
    die and of the volonte test's 3d6 of the route's own resolution. AS-T8 the NPC takes 11 (no
    attack die), AS-C1 unperceived (no defense): 1d6+2 against 5 vitality brings it to 0 on 3..6."""
    t = table("asgard", {"take_11_allowed": True})
    eid, n = fight(
        t, [("Aiko", as_fighter(3), "npc"), ("Brute", as_fighter(2, vitality=5, vitality_max=12, protection=0), "pc")]
    )
    current_first(t, eid, n, "Aiko")
    body = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "take_11": True}
    body |= {"unperceived": True, "damage": "1d6+2"}
    with prepared(database, t, eid, body) as p:
        odds = exact(p)
        down, out = down_and_out_counted(p, {"damage", "volonte"})
    assert (odds.hit, odds.down, odds.out) == (1, Fraction(2, 3), out)
    assert down == Fraction(2, 3) and 0 < out < down
    planned = t.client.post(f"/v1/encounters/{eid}/actions/plan", json=body, headers=t.gm).json()["odds"]
    assert (planned["down"]["probability"], planned["out"]["probability"]) == (
        "2/3",
        f"{out.numerator}/{out.denominator}",
    )
    assert planned["withheld"] == []


# --- Worlds Awakening ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attacker", "extra"),
    [
        (wa_fighter(2), {"damage": "2d4+1"}),  # WA-C1 against the defense, WA-C2 a 20 doubles the dice
        (wa_fighter(2, stats={"DEX": 2, "CHA": 3, "FOR": 4}), {"damage": "1d6", "modifier": -3}),  # WA-T4 CHA
    ],
    ids=["WA-C2_doubled_dice", "WA-T4_wider_critical_ranges"],
)
def test_issue26_item3_wa_exact_attack_odds_equal_brute_force_over_every_die_combination(
    table, database, attacker, extra
):
    t = table("worlds-awakening")
    eid, n = duel(t, attacker, wa_fighter(1, hp=6, hp_max=6))
    body = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], **extra}
    odds = exact_equals_brute_force(database, t, eid, body, limit=5_000)
    assert odds.hit == odds.outcomes["hit"] + odds.outcomes["critical"]  # every damage here lowers hp
    assert 0 < odds.down < odds.hit < 1


# --- Rulebook D100 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reaction", "extra"),
    [
        ("none", {"damage": "1d4"}),  # RB-F2: the success level (doubled on a critical) + the weapon
        ("absorb", {"damage": "1d6", "kind": "melee"}),  # RB-F3: the armour off the damage
    ],
    ids=["RB-F2_no_defense", "RB-F3_absorb"],
)
def test_issue26_item3_rb_exact_attack_odds_equal_brute_force_over_every_die_combination(
    table, database, reaction, extra
):
    t = table("rulebook-d100")
    eid, n = duel(t, rb_fighter(60), rb_fighter(40, hp=4, hp_max=10, armor=1))
    r = t.client.patch(f"/v1/encounters/{eid}/combatants/{n['Brute']}", json={"reaction": reaction}, headers=t.gm)
    assert r.status_code == 200, r.text
    body = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], **extra}
    odds = exact_equals_brute_force(database, t, eid, body, limit=5_000)
    assert odds.outcomes["dodged"] == 0 and 0 < odds.down < odds.hit < 1


def test_issue26_item3_rb_dodge_exact_odds_match_a_seeded_simulation(table, database):
    """RB-C4 the dodge's confrontation (RB-C1 the standings, RB-C2's d100 rerolls of a tie, too
    many combinations to count one by one), RB-F3 a critical failure of the dodge doubling the
    damage: 100,000 seeded resolutions of the route's `resolve_attack` (`RulebookD100.attack` is
    that, after RB-F3's free-attack check, plus its steps), each on fresh copies of the parties."""
    t = table("rulebook-d100")
    eid, n = duel(t, rb_fighter(60), rb_fighter(40, hp=5, hp_max=10))
    body = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "damage": "1d6"}
    with prepared(database, t, eid, body) as p:
        odds = exact(p)
        x = p.build(CombatDice(dice=[]))
        choice, opts = rb_combat._choice(x.req), x.campaign_options
        seen: Counter[str] = Counter()
        hits = downs = 0
        for dice in seeded(2627, N):
            foe = fresh(x.foe, dice)
            steps = rb_combat.resolve_attack(
                dice,
                fresh(x.actor, dice),
                foe,
                "dodge",
                choice,
                round_=x.round,
                campaign_options=opts,
            )
            hits += foe.sheet.hp < x.foe.sheet.hp
            downs += foe.sheet.hp <= 0
            whats = {s["what"] for s in steps}
            seen["missed" if "the attack misses" in whats else "damage" if "damage" in whats else "dodged"] += 1
    assert x.foe_reaction == "dodge" and all(0 < share < 1 for share in odds.outcomes.values())
    check_simulation(odds, seen, hits, downs, N)


def test_issue26_item3_asgard_cooperation_exact_odds_match_a_seeded_simulation(table, database):
    """AS-T6 a character cooperating with the attacker (both attack tests, the best leads: its dice
    and its own weapon deal the damage, +1/−1 for the other's result), AS-C1 the defense: 100,000
    seeded resolutions of `resolve_attack`, as for the group above."""
    t = table("asgard")
    axe = {"weapons": [{"name": "hache", "damage_dice": 3, "ranged": False}]}
    eid, n = fight(
        t,
        [
            ("Aiko", as_fighter(5, weapons=[{"name": "dague", "damage_dice": 1, "ranged": False}]), "pc"),
            ("Bo", as_fighter(4, **axe), "pc"),
            ("Brute", as_fighter(2, vitality=7, vitality_max=12, protection=2), "npc"),
        ],
    )
    current_first(t, eid, n, "Aiko")
    body = {"type": "attack", "actor_id": n["Aiko"], "target_id": n["Brute"], "cooperating": [n["Bo"]]}
    with prepared(database, t, eid, body) as p:
        odds, x, (target, reaction), choice = asgard_engaged(p)
        seen: Counter[str] = Counter()
        hits = downs = outs = 0
        for dice in seeded(2628, N_COOPERATION):
            foe = fresh(target, dice)
            steps = as_combat.resolve_attack(
                dice,
                fresh(x.actor, dice),
                [(foe, reaction)],
                choice,
                cooperating=[fresh(q, dice) for q in x.more],
                round_=x.round,
            )
            hits += foe.sheet.vitality < target.sheet.vitality
            downs += foe.sheet.vitality == 0
            outs += as_combat.COMBAT.is_down(foe.sheet)
            seen["damage" if any(s["what"] == "damage" for s in steps) else "missed"] += 1
    assert all(0 < share < 1 for share in odds.outcomes.values())
    assert odds.out is not None and 0 < odds.out < odds.down < odds.hit
    check_simulation(odds, seen, hits, downs, N_COOPERATION, outs)
