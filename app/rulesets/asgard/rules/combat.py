"""Asgard encounter-time combat rules (AS-C1..C5, AS-C11, AS-C13, AS-T6), pure functions.

The encounter reads them (app/rulesets/asgard/combat.py). They take resolved
tests (`TestResult`, see core), plain dicts for the sheet's `condition` and the
combatant's conditions, and a DiceSource for any extra die they need.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.kit.errors import Conflict
from app.rules.dice import DiceSource, parse
from app.rules.errors import RuleError
from app.rulesets.asgard.rules.contests import Cooperation, Opposition, cooperate, oppose
from app.rulesets.asgard.rules.core import BASE_DICE, TestResult, resolve
from app.rulesets.asgard.rules.steps import AsgardStep

UNPERCEIVED_DIFFICULTY = 10  # AS-C1 "généralement 10"
EFFICACITE_BONUS = 2  # AS-C4
DEFENSE_STEP = 2  # AS-C4 prudence +2 / danger −2
MAX_FIGURANTS = 5  # AS-C11
PRIMES = ("attaques_multiples", "efficacite", "prudence")
PENALTIES = ("blessure_legere", "danger")


# --- AS-C1 -----------------------------------------------------------------


@dataclass(frozen=True)
class AttackResolution:
    hit: bool
    opposition: Opposition | None  # None for an unperceived attack
    difficulty: int | None


def resolve_attack(
    attack: TestResult, defense: TestResult | None, *, difficulty: int = UNPERCEIVED_DIFFICULTY
) -> AttackResolution:
    """AS-C1: combat against defense (AS-T9, ties to the defender); an unperceived attack
    (no defense) only needs combat ≥ the GM's difficulty (AS-T3's automatic results apply)."""
    if defense is None:
        if attack.automatic is not None:
            return AttackResolution(attack.automatic == "success", None, difficulty)
        assert attack.score is not None  # an attack test rolls its dice
        return AttackResolution(attack.score >= difficulty, None, difficulty)
    contest = oppose(attack, defense)
    return AttackResolution(contest.winner == "a", contest, None)


def cannot_perceive(condition: dict[str, Any] | None) -> str | None:
    """AS-C1: why a target cannot perceive the attack (it then does not defend): unconscious,
    dying (AS-C5) or dead; None when it perceives. `condition` is the sheet's AS-C5 state."""
    condition = condition or {}
    if condition.get("dead"):
        return "dead"
    if condition.get("unconscious_rounds"):
        return "unconscious"
    if condition.get("dying"):
        return "dying"
    return None


def defense_reaction(reaction: str, *, unperceived: bool, condition: dict[str, Any] | None) -> tuple[str, str | None]:
    """AS-C1: the target's reaction to this attack and why it is `none` when the rules make it
    so: an attack flagged `unperceived`, or a target that cannot perceive (`cannot_perceive`)."""
    if unperceived:
        return "none", "unperceived"
    why = cannot_perceive(condition)
    if why is not None:
        return "none", why
    return reaction, None


def cooperative_attack(results: tuple[TestResult, ...], *, modifier: int = 0) -> tuple[Cooperation, TestResult]:
    """AS-T6 in combat: every cooperating character makes its attack test; the best result leads
    (highest margin, its dice and weapon deal the damage), +1 for each other result ≥ 15, −1 for
    each other below 10. Returns the cooperation and the group's attack test (the leader's, its
    score adjusted), which the defense opposes (AS-C1)."""
    group = cooperate(results, modifier=modifier)
    leader = results[group.leader]
    adjusted = replace_modifier(leader, leader.spec.modifier + modifier + sum(group.adjustments))
    return group, adjusted


def replace_modifier(test: TestResult, modifier: int) -> TestResult:
    """The same test (same dice) with another modifier."""
    assert test.natural is not None  # a rolled test (or 11 taken)
    return resolve(replace(test.spec, modifier=modifier), test.dice, natural=test.natural)


# --- AS-C2 / C3 ------------------------------------------------------------


@dataclass(frozen=True)
class Damage:
    weapon_dice: tuple[int, ...]  # read from the attack's dice, or rolled (take 11)
    extra_dice: tuple[int, ...]  # beyond 3d6, rolled
    heroism_die: int | None
    bonus: int  # figurants (AS-C11), assets' flat bonuses
    total: int


def weapon_dice(attack_dice: tuple[int, ...], damage_dice: int) -> tuple[int, ...]:
    """AS-C2: the attack's three dice are told apart, the distinguished one listed first
    (« distinguer l'un des d6 utilisés des deux autres »): a 1d6 weapon reads that first
    die, a 2d6 weapon the two others (second and third), a 3d6 weapon all three."""
    base = attack_dice[:BASE_DICE]
    if damage_dice == 1:
        return base[:1]
    if damage_dice == 2:
        return base[1:3]
    return base


def attack_damage(
    attack: TestResult, damage_dice: int, source: DiceSource, *, asset_dice: int = 0, bonus: int = 0
) -> Damage:
    """AS-C2: a weapon of Nd6 deals its dice read from the attack (`weapon_dice`);
    beyond 3d6 the extra dice are rolled and added; the heroism 4th die and asset dice add.
    An attack with no dice (an NPC taking 11, AS-T8) rolls its weapon dice (Decision)."""
    if damage_dice < 1:
        raise RuleError("a weapon deals at least 1d6", field="damage_dice")
    count = min(damage_dice, BASE_DICE)
    read = weapon_dice(attack.dice, count) if attack.dice else tuple(source.roll(6, "damage") for _ in range(count))
    extra = tuple(source.roll(6, "damage") for _ in range(max(0, damage_dice - BASE_DICE) + asset_dice))
    heroism = attack.heroism_die
    total = sum(read) + sum(extra) + (heroism or 0) + bonus
    return Damage(read, extra, heroism, bonus, total)


def damage_taken(damage: int, protection: int, *, defense: TestResult | None = None) -> int:
    """AS-C3: protection comes off, and so does the defender's heroism die even though the
    defense failed; never negative."""
    heroism = defense.heroism_die if defense is not None else None
    return max(0, damage - protection - (heroism or 0))


def halve_up(value: int) -> int:
    """AS-C4: divided by 2, rounded up."""
    return (value + 1) // 2


MAX_DAMAGE_DICE = 10


def damage_expression(text: str) -> tuple[int, int]:
    """AS-C2 with a dice expression instead of a weapon (`2d6+1`): (its d6 count, its constant).
    The d6 are the weapon's dice, read from the attack up to three, rolled beyond; the
    constant adds (never below 0 in all). (**Decision**: only d6 terms, added, 1 to 10 dice.)"""
    expr = parse(text)
    if any(t.faces != 6 or t.sign < 0 or t.keep is not None for t in expr.terms):
        raise RuleError(f"asgard damage is read in d6 (AS-C2): {text!r} is not like '2d6+1'", field="damage")
    count = sum(t.count for t in expr.terms)
    if not 1 <= count <= MAX_DAMAGE_DICE:
        raise RuleError(f"asgard damage has 1 to {MAX_DAMAGE_DICE} d6 (AS-C2), not {count}", field="damage")
    return count, expr.constant


# --- AS-C4 -----------------------------------------------------------------


@dataclass(frozen=True)
class Primes:
    """The primes and penalties of one action; `free_*` / `mandatory_*` come from circumstances."""

    primes: tuple[str, ...] = ()
    penalties: tuple[str, ...] = ()
    free_primes: tuple[str, ...] = ()
    mandatory_penalties: tuple[str, ...] = ()


@dataclass(frozen=True)
class PrimeEffects:
    action_bonus: int  # added to this action's test
    multiple_targets: bool
    halvings: int  # damage halved (rounded up) this many times, after everything else
    prudence_tests: int  # next defense tests at +2
    danger_tests: int  # next defense tests at −2


def prime_effects(choice: Primes) -> PrimeEffects:
    """AS-C4: one bought prime per action, paid with one penalty; free primes and mandatory
    penalties come on top; efficacite/prudence/danger stack, attaques_multiples never."""
    for name in choice.primes + choice.free_primes:
        if name not in PRIMES:
            raise RuleError(f"unknown prime {name!r}; known: {', '.join(PRIMES)}", field="primes", code="unknown_name")
    for name in choice.penalties + choice.mandatory_penalties:
        if name not in PENALTIES:
            raise RuleError(
                f"unknown penalty {name!r}; known: {', '.join(PENALTIES)}", field="penalties", code="unknown_name"
            )
    if len(choice.primes) > 1:
        raise RuleError("one prime per action (AS-C4), besides free ones", field="primes")
    if len(choice.penalties) != len(choice.primes):
        raise RuleError("a prime is bought with exactly one penalty (AS-C4)", field="penalties")
    primes = Counter(choice.primes + choice.free_primes)
    penalties = Counter(choice.penalties + choice.mandatory_penalties)
    if primes["attaques_multiples"] > 1:
        raise RuleError("attaques multiples never stack (AS-C4)", field="primes")
    return PrimeEffects(
        action_bonus=EFFICACITE_BONUS * primes["efficacite"],
        multiple_targets=primes["attaques_multiples"] == 1,
        halvings=primes["attaques_multiples"] + penalties["blessure_legere"],
        prudence_tests=primes["prudence"],
        danger_tests=penalties["danger"],
    )


def check_targets(effects: PrimeEffects, count: int) -> None:
    """AS-C4: attaques_multiples strikes exactly two targets in reach with one test; any other
    attack one."""
    if effects.multiple_targets != (count == 2) or not 1 <= count <= 2:
        raise RuleError(
            "attaques_multiples (AS-C4) takes exactly two targets in reach (target_id and also_target_id); "
            "any other attack one",
            field="also_target_id",
        )


def final_damage(damage: int, effects: PrimeEffects) -> int:
    """AS-C4: attaques multiples / blessure légère halve the damage (rounded up) after
    everything else (protection included)."""
    for _ in range(effects.halvings):
        damage = halve_up(damage)
    return damage


def next_defense(prudence_tests: int, danger_tests: int) -> tuple[int, int, int]:
    """AS-C4: the modifier of the next defense test (+2 prudence, −2 danger) and the
    counters left afterwards."""
    modifier = (DEFENSE_STEP if prudence_tests > 0 else 0) - (DEFENSE_STEP if danger_tests > 0 else 0)
    return modifier, max(0, prudence_tests - 1), max(0, danger_tests - 1)


# --- AS-C11 ----------------------------------------------------------------


def figurant_group_bonus(size: int) -> int:
    """AS-C11: extras act in groups of up to 5: one test, +1 per other member (damage too)."""
    if not 1 <= size <= MAX_FIGURANTS:
        raise RuleError(f"a group of extras has 1 to {MAX_FIGURANTS} members", field="group_size", code="too_many")
    return size - 1


def check_group(members: Sequence[tuple[str, str | None, bool]]) -> int:
    """AS-C11: a group of extras: (id, tier, down) of the attacker then the others; each one
    once, every one an extra (tier figurant) able to act. Returns the group bonus."""
    ids = [cid for cid, _, _ in members]
    if len(set(ids)) != len(ids):
        raise RuleError("a group names each extra once, the attacker aside (AS-C11)", field="group", code="named_twice")
    for cid, tier, down in members:
        if tier != "figurant":
            raise RuleError(
                f"combatant {cid} is not an extra (tier figurant): only extras act in groups (AS-C11)",
                field="group",
                extra={"rule": "AS-C11"},  # the problem names its rule: a client says why, in its own words
            )
        if down:
            raise RuleError(f"combatant {cid} is down: it does not act (AS-C11)", field="group", code="member_down")
    return figurant_group_bonus(len(members))


# --- AS-C11 / AS-T6: one turn for those who act together --------------------------


@dataclass(frozen=True)
class CombatSlot:
    combatants: tuple[str, ...]  # who acts in this slot (the leader first)
    leader: str


def combat_slots(order: Sequence[str], groups: Sequence[tuple[str, Sequence[str]]] = ()) -> list[CombatSlot]:
    """AS-T6 / AS-C11 in combat: characters who cooperate, like extras attacking as a group, act
    together « au cours d'un unique tour de jeu »: each group (leader, members) takes one single
    shared slot, at its leader's place in the AS-C13 order; its other members lose their own
    slots of that round. `order`: the round's combatant ids, first to act first."""
    placed = set(order)
    member_of: dict[str, str] = {}
    for n, (leader, members) in enumerate(groups):
        everyone = (leader, *[m for m in members if m != leader])
        if len(everyone) < 2:
            raise RuleError("acting together needs at least two combatants (AS-T6)", field=f"groups.{n}")
        for cid in everyone:
            if cid not in placed:
                raise RuleError(f"{cid!r} is not in the turn order", field=f"groups.{n}", code="unknown_id")
            if cid in member_of:
                raise RuleError(f"{cid!r} acts in one group at a time (AS-T6)", field=f"groups.{n}", code="named_twice")
            member_of[cid] = leader
    by_leader = {leader: (leader, *[m for m in members if m != leader]) for leader, members in groups}
    slots = []
    for cid in order:
        if cid in by_leader:
            slots.append(CombatSlot(by_leader[cid], cid))
        elif cid not in member_of:
            slots.append(CombatSlot((cid,), cid))
    return slots


def slots_lost(order: Sequence[str], leader: str, members: Sequence[str]) -> list[str]:
    """AS-T6 / AS-C11: the combatants whose own slot of the round passes once `leader` and
    `members` acted together (every member but the leader: `combat_slots`)."""
    kept = {cid for slot in combat_slots(order, [(leader, members)]) for cid in slot.combatants if cid == slot.leader}
    return [cid for cid in order if cid not in kept and cid in {leader, *members}]


# --- AS-C5 in a fight: the dying and unconscious rounds -------------------------------------

DYING, UNCONSCIOUS = "dying", "unconscious"
END_OF_ROUND = "end_of_round"  # AS-C5 counts rounds, not its bearer's turns (a down bearer has none)


def mal_en_point_conditions(
    condition: dict[str, Any],
    conditions: list[dict[str, Any]],
    *,
    dies_in_rounds: int | None,
    unconscious_rounds: int | None,
    round_: int,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """AS-C5: the sheet's condition and the combatant's conditions after the mal en point tests
    of round `round_` (dying: `dies_in_rounds`; unconscious: `unconscious_rounds`; None: passed)."""
    condition, conditions = dict(condition), list(conditions)
    if dies_in_rounds is not None:
        condition.update(dying=True, dies_in_rounds=dies_in_rounds)
        conditions = [c for c in conditions if c["name"] != DYING] + [
            {"name": DYING, "rounds_left": dies_in_rounds, "ends": END_OF_ROUND, "since_round": round_}
        ]
    if unconscious_rounds is not None:
        condition["unconscious_rounds"] = unconscious_rounds
        conditions = [c for c in conditions if c["name"] != UNCONSCIOUS] + [
            {"name": UNCONSCIOUS, "rounds_left": unconscious_rounds, "ends": END_OF_ROUND, "since_round": round_}
        ]
    return condition, conditions


def counted(conditions: list[dict[str, Any]]) -> bool:
    """Whether these conditions hold an AS-C5 count (dying or unconscious rounds)."""
    return any(c["name"] in (DYING, UNCONSCIOUS) and c.get("ends") == END_OF_ROUND for c in conditions)


def adopt_states(
    condition: dict[str, Any], conditions: list[dict[str, Any]], round_: int
) -> tuple[list[dict[str, Any]], list[AsgardStep]]:
    """AS-C5 (Decision: the states count whatever brought vitality to 0): a dying or unconscious
    state of the sheet with no count in the fight (fire AS-C9, asphyxia AS-C10, any action on the
    character during round `round_`) starts counting: its rounds count from the next round on.
    Returns (the conditions, the steps)."""
    conditions = list(conditions)
    steps: list[AsgardStep] = []
    if condition.get("dead"):
        return conditions, steps
    names = {c["name"] for c in conditions if c.get("ends") == END_OF_ROUND}
    for name, rounds in (
        (DYING, condition.get("dies_in_rounds") if condition.get("dying") else None),
        (UNCONSCIOUS, condition.get("unconscious_rounds")),
    ):
        if rounds and name not in names:
            conditions.append({"name": name, "rounds_left": rounds, "ends": END_OF_ROUND, "since_round": round_})
            steps.append(
                {
                    "rule": "AS-C5",
                    "key": "condition_counted_in_the_fight",
                    "what": f"{name}: counted in the fight",
                    "rounds_left": rounds,
                }
            )
    return conditions, steps


def count_rounds(
    combatant_id: str, condition: dict[str, Any], conditions: list[dict[str, Any]], round_: int
) -> tuple[dict[str, Any], list[dict[str, Any]], list[AsgardStep]]:
    """AS-C5 at the end of round `round_`, for a combatant down or not: each round after the blow's
    counts. Dying: at the end of the (1d6)-th next round the character dies (`dead`). Unconscious
    for 2d6 rounds (Decision: whole rounds after the blow's, as the dying ones): at the end of the
    last it wakes up. The sheet (`condition`) says what still runs: a character no longer dying
    (first aid, AS-C6) or already awake loses the combatant's condition without a count; a state
    of the sheet not counted yet (a fire, asphyxia) starts counting (`adopt_states`).
    Returns (the sheet's condition, the conditions, the steps)."""
    condition = dict(condition)
    kept: list[dict[str, Any]] = []
    steps: list[AsgardStep] = []
    for c in conditions:
        if c["name"] not in (DYING, UNCONSCIOUS) or c.get("ends") != END_OF_ROUND:
            kept.append(c)
            continue
        dying = c["name"] == DYING
        running = (
            (condition.get("dying") and not condition.get("dead"))
            if dying
            else bool(condition.get("unconscious_rounds")) and not condition.get("dead")
        )
        if not running:
            steps.append(
                {
                    "rule": "AS-C5" if not dying or condition.get("dead") else "AS-C6",
                    "key": "condition_no_longer",
                    "what": f"no longer {c['name']}",
                    "combatant_id": combatant_id,
                }
            )
            continue
        if round_ <= c.get("since_round", 0):  # the blow's own round does not count
            kept.append(c)
            continue
        left = max(0, c["rounds_left"] - 1)
        if dying:
            condition["dies_in_rounds"] = left
        else:
            condition["unconscious_rounds"] = left or None
        if left:
            kept.append({**c, "rounds_left": left})
            steps.append(
                {
                    "rule": "AS-C5",
                    "key": "condition_a_round_less",
                    "what": f"{c['name']}: a round less",
                    "combatant_id": combatant_id,
                    "rounds_left": left,
                }
            )
        elif dying:
            condition.update(dying=False, dead=True, unconscious_rounds=None)
            steps.append(
                {
                    "rule": "AS-C5",
                    "key": "dies_at_the_end_of_the_round",
                    "what": "dies at the end of the round",
                    "combatant_id": combatant_id,
                    "round": round_,
                }
            )
        else:
            steps.append(
                {"rule": "AS-C5", "key": "wakes_up", "what": "wakes up", "combatant_id": combatant_id, "round": round_}
            )
    if condition.get("dead"):
        kept = [c for c in kept if c["name"] not in (DYING, UNCONSCIOUS)]
    else:
        kept, adopted = adopt_states(condition, kept, round_)
        steps.extend({**step, "combatant_id": combatant_id} for step in adopted)
    return condition, kept, steps


# --- AS-H2 in an encounter ------------------------------------------------------------

HEROISM_REROLL = "heroism_reroll"
REROLL_COST = 1


def combat_reroll(logged: dict[str, Any], spender: str) -> tuple[dict[str, Any], str]:
    """AS-H2 (Decision) in an encounter: the spender rerolls its own test of the fight's latest
    action — its attack (the actor) or its defence (a target that made a defense test) — which is
    resolved again with the same choices (`request`, logged with the attack test) and new dice;
    once per action (a heroism reroll is not rerolled: 409). `logged`: that action's logged body.
    Returns (the request to resolve again, which test is rerolled: "attack" or "defense")."""
    if logged.get("type") == HEROISM_REROLL:
        raise Conflict(
            f"action {logged.get('id')} is a heroism reroll already: AS-H2 rolls a test again once",
            field="action_id",
            extra={"rule": "AS-H2"},
            code="already_rerolled",
        )
    steps = logged.get("steps") or []
    attack = next((s for s in steps if s.get("rule") == "AS-C1" and s.get("what") == "attack test"), None)
    if logged.get("type") != "attack" or attack is None or "request" not in attack:
        raise Conflict(
            f"action {logged.get('id')} ({logged.get('type')}) has no attack or defence test to roll again (AS-H2)",
            field="action_id",
            extra={"rule": "AS-H2"},
            code="not_allowed_now",
        )
    defenders = {s["combatant_id"] for s in steps if s.get("rule") == "AS-C1" and s.get("what") == "defense test"}
    if spender == logged.get("actor_id"):
        which = "attack"
    elif spender in defenders:
        which = "defense"
    else:
        raise Conflict(
            f"combatant {spender} made no test in action {logged.get('id')}: AS-H2 rerolls one's own test",
            field="actor_id",
            extra={"rule": "AS-H2"},
            code="not_allowed_now",
        )
    return {**attack["request"], **_named_in(steps)}, which


NAMED_ELSEWHERE = ("also_target_id", "group", "cooperating")  # read back from their own steps


def _named_in(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The combatants an attack's request named besides its actor and target, read from the steps
    that name them (each shown only to who sees that combatant): AS-C4's second target (the second
    to defend), AS-C11's group, AS-T6's cooperating characters."""
    named: dict[str, Any] = {}
    targets = list(
        dict.fromkeys(
            s["combatant_id"]
            for s in steps
            if s.get("rule") == "AS-C1" and s.get("what") in ("defense test", "unperceived attack: no defense")
        )
    )
    if len(targets) == 2:
        named["also_target_id"] = targets[1]
    for rule, what, field_ in (
        ("AS-C11", "group of extras: one test", "group"),
        ("AS-T6", "cooperation: the best result leads", "cooperating"),
    ):
        step = next((s for s in steps if s.get("rule") == rule and s.get("what") == what), None)
        if step is not None:
            named[field_] = list(step["members"][1:])
    return named


# --- AS-C13 ----------------------------------------------------------------


@dataclass(frozen=True)
class Initiative:
    combatant: str
    perception: int
    test: TestResult
    roll_offs: tuple[int, ...]  # 1d6 per tie-break round


def initiative_order(entries: list[tuple[str, TestResult]], source: DiceSource) -> list[Initiative]:
    """AS-C13 (Decision): open perception tests, highest result first; ties by higher
    perception value, then 1d6 roll-offs (rolled in listed order, again while tied)."""
    roll_offs: dict[str, list[int]] = {cid: [] for cid, _ in entries}
    by_key: dict[tuple[int, int], list[str]] = {}
    for cid, test in entries:
        assert test.score is not None  # a perception test rolls its dice
        by_key.setdefault((test.score, test.spec.skill_value), []).append(cid)
    for tied in by_key.values():
        _roll_off(tied, roll_offs, source)
    tests = dict(entries)
    ordered = sorted(
        (cid for cid, _ in entries),
        key=lambda c: (tests[c].score, tests[c].spec.skill_value, roll_offs[c]),
        reverse=True,
    )
    return [Initiative(c, tests[c].spec.skill_value, tests[c], tuple(roll_offs[c])) for c in ordered]


def _roll_off(tied: list[str], roll_offs: dict[str, list[int]], source: DiceSource) -> None:
    """Each tied combatant rolls 1d6; those still tied roll again."""
    if len(tied) < 2:
        return
    groups: dict[int, list[str]] = {}
    for cid in tied:
        value = source.roll(6, f"initiative_roll_off:{cid}")
        roll_offs[cid].append(value)
        groups.setdefault(value, []).append(cid)
    for group in groups.values():
        _roll_off(group, roll_offs, source)
