"""Great Cosmos combat actions in an encounter: `attack` (GC-P1..P7), `move` and `dash`
(GC-D1..D4), `posture` (GC-P1, GC-P2, GC-P5..P7) and `final_skill` (GC-P5/P6), on the
pure rules of `app.rulesets.great_cosmos.rules`.

What a fight changes on the character is written to its sheet (karma, hp, posture,
light/dark points); what exists only during the fight lives in the combatant's
`counters`:
- `special`, `backlash`, `riposte`, `counter_attack`, `provoked`: the GC-P2/P6/P7 state kept
  between actions and counted turn by turn (`rules.fight`); the GC-P5 advantage d6 itself is the
  sheet's `posture_advantage` (written on entering Illumination, cleared on leaving it) and a
  running backlash is the sheet's `backlash` (its disadvantage d6), so a test outside the
  encounter (`POST …/tests`) applies them too;
- `turn`: what it did this turn (GC-D3 phases, cells moved, the max move, dash, action).

Dice, in rule order, each tagged with whose it is: the attack test (d100, karma d10),
the target's automatic defence d10 (GC-P5), its dodge/parry test (d100, karma d10),
then the damage dice; a posture's advantage d6 (GC-P5) or the backlash's
disadvantage d6 (GC-P7, Sépulcrale); a dash's agilite test (GC-D4)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Unpack

from app.kit.steps import Step
from app.models.validation import InvalidBody
from app.rules.dice import DiceSource, TableDice
from app.rules.errors import RuleError
from app.rulesets.contract.combat import Exchange, ExchangeOdds, Party, Pool, TurnPassed
from app.rulesets.great_cosmos.rules import fight as state
from app.rulesets.great_cosmos.rules.core import TestResult, canonical_stat, resolve_test
from app.rulesets.great_cosmos.rules.odds import attack_odds as attack_odds_of
from app.rulesets.great_cosmos.rules.postures import (
    ATTACK_STATS,
    DEFENSE_STATS,
    DISADVANTAGES,
    ILLUMINATION,
    SEPULCRALE,
    SPECIAL_POSTURES,
    Attack,
    Fighter,
    can_defend,
    check_reaction,
    end_special_posture,
    enter_special_posture,
    final_skill_outcome,
    posture_advantage,
    posture_modifier,
    resolve_attack,
    take_damage,
    use_final_skill,
)
from app.rulesets.great_cosmos.rules.sheet import max_move
from app.rulesets.great_cosmos.rules.steps import Cell, GreatCosmosFigures, GreatCosmosStep, step
from app.rulesets.great_cosmos.rules.turns import MELEE_REACH, check_turn, dash_move, distance, is_melee
from app.rulesets.great_cosmos.schemas import AttackRequest, Backlash, Options, Sheet


class Named(DiceSource):
    """A party's dice whose purposes say what they are for (`attack`, `dodge karma`…)."""

    def __init__(self, inner: DiceSource, names: dict[str, str]):
        self.rolls = inner.rolls
        self.max_dice = inner.max_dice
        self._inner, self._names = inner, names

    def roll(self, faces: int, purpose: str) -> int:
        return self._inner.roll(faces, self._names.get(purpose, purpose))


def options(x: Exchange) -> Options:
    """The campaign's options, as the flow parsed them once."""
    return campaign(x.campaign_options)


def campaign(parsed: Any) -> Options:
    """The campaign's options the flow parsed once into this ruleset's `Options`."""
    assert isinstance(parsed, Options)
    return parsed


def posture_of(sheet: Sheet) -> str:
    """The posture held: the sheet's, else its default one (the model's default, `defensive`)."""
    return sheet.posture or sheet.default_posture


def backlash(sheet: Sheet) -> dict[str, Any] | None:
    """GC-P7: the backlash running now (the sheet's: `posture`, `disadvantage`), if any."""
    b = sheet.backlash
    if b is None:
        return None
    die = b.disadvantage_die
    return {**b.model_dump(), "disadvantage": DISADVANTAGES.get(die) if die else None}


def pending_backlash(counters: dict[str, Any]) -> dict[str, Any] | None:
    """GC-P7: a backlash owed or running (its 2 turns not over), if any."""
    b = counters.get("backlash")
    return b if isinstance(b, dict) else None


def fighter(p: Party, round_: int, *, tests: bool = False) -> Fighter:
    """What the pure combat rules read of a party. `tests`: it rolls a d100 test now, so an
    Illumination whose advantage d6 is not on the sheet is refused, as `POST …/tests` does (GC-P5)."""
    sheet, special = _sheet(p), p.counters.get("special") or {}
    running = backlash(sheet) or {}
    return Fighter(
        id=p.id,
        stats=sheet.stats.model_dump(),
        karma=sheet.karma,
        hp=_hp(sheet),
        hp_max=sheet.hp_max,
        posture=posture_of(sheet),
        advantage=advantage_of(sheet, tests=tests),
        revive_used=bool(special.get("revive_used")),
        backlash=running.get("posture"),
        backlash_disadvantage=running.get("disadvantage"),
    )


def advantage_of(sheet: Sheet, *, tests: bool = False) -> str | None:
    """GC-P5: the effect of the sheet's `posture_advantage` during an Illumination (None outside it)."""
    if sheet.posture != ILLUMINATION:
        return None
    if not tests and sheet.posture_advantage is None:
        return None
    advantage = posture_advantage(ILLUMINATION, sheet.posture_advantage)
    return advantage.effect if advantage is not None else None


# the sheet's pools (GreatCosmos.pools): a value left out is at its maximum, said once, by the Pool
HP, MP = Pool("hp", "hp", "hp_max"), Pool("mp", "mp", "mp_max")


def _hp(sheet: Sheet) -> int:
    return HP.value(sheet)


def _sheet(p: Party) -> Sheet:
    """The party's sheet, this ruleset's model (the flow parsed it: `Party.sheet`)."""
    return p.sheet


def _set(p: Party, key: str, value: Any) -> None:
    """A sheet field (a nested one as its model), written only when it changes (the flow records
    before/after)."""
    if getattr(p.sheet, key) != value:
        setattr(p.sheet, key, value)


def _test_step(
    rule: str, key: str, what: str, who: str, test: TestResult, **figures: Unpack[GreatCosmosFigures]
) -> GreatCosmosStep:
    return {
        "rule": rule,
        "key": key,
        "what": what,
        "combatant_id": who,
        **figures,
        "target": test.target,
        "natural": test.natural,
        "karma_die": test.karma_die,
        "score": test.score,
        "outcome": test.outcome,
        "karma_used": test.karma_used,
        "karma": {"before": test.karma_before, "after": test.karma_after},
        "locked": test.locked,
    }


# --- the turn (GC-D2, GC-D3) --------------------------------------------------------------------


def _phase(x: Exchange, phase: str) -> None:
    """GC-D3: move-then-act or act-then-move, never move-act-move (consecutive moves are one)."""
    turn = x.actor.turn
    phases = list(turn.get("phases", []))
    if not phases or phases[-1] != phase:
        phases.append(phase)
    try:
        check_turn(phases)
    except RuleError:
        raise RuleError(
            f"a turn is move then act or act then move, never {' then '.join(phases)} (GC-D3)",
            field="type",
            extra={"rule": "GC-D3", "phases": phases},
            code="turn_phases",
        ) from None
    turn["phases"] = phases


def _act(x: Exchange, what: str) -> None:
    """The action of the turn: one (GC-O3 extra actions are their own slots), not after a dash
    (GC-D4 gives the action up), in GC-D3 order. Outside its turn (a riposte, the GM) no turn counts."""
    if not x.on_turn:
        return
    turn = x.actor.turn
    if turn.get("dashed"):
        raise RuleError(
            "the dash gave up this turn's action (GC-D4)", field="type", extra={"rule": "GC-D4"}, code="turn_phases"
        )
    if turn.get("acted"):
        raise RuleError(
            f"combatant {x.actor.id} has acted this turn already: {what} waits for its next turn (GC-D3)",
            field="type",
            extra={"rule": "GC-D3"},
            code="turn_phases",
        )
    _phase(x, "act")
    turn["acted"] = True


def _check_cancelled(x: Exchange) -> None:
    """GC-P7: a backlash whose disadvantage is 6 cancels every action of its two turns (409)."""
    state.check_action_allowed((backlash(x.actor.sheet) or {}).get("disadvantage"))


def _base_move(p: Party, round_: int) -> int:
    return max_move(_sheet(p).stats.agilite)


# --- attack ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Engaged:
    """An attack every check passed, before its dice: what `resolve_attack` (and its exact odds,
    `rules.odds.attack_odds`) is given, and what the steps name."""

    fa: Fighter
    fd: Fighter
    stat: str
    expression: str
    source: str
    reaction: str | None
    moved_away: bool
    terms: dict[str, Any]  # resolve_attack's keyword arguments


def engage(x: Exchange) -> Engaged:
    """GC-P1..P7, GC-D1, GC-O2: reach, the reaction the rules allow, the turn's action spent."""
    a, t, req, opts = x.actor, x.target, x.req, options(x)
    assert t is not None
    if _hp(t.sheet) <= 0:
        raise InvalidBody(f"combatant {t.id} is down already", field="target_id", code="target_down")
    _check_cancelled(x)
    stat = canonical_stat(req.stat) if req.stat else ATTACK_STATS[req.kind]
    expression, source = _damage_expression(a, req)
    moved_away = _reach(x, opts)
    fa, fd = fighter(a, x.round, tests=True), fighter(t, x.round, tests=x.reaction not in (None, "none"))
    _check_chosen_reaction(x, fd)
    if _strike_back(x) is None:
        _act(x, "an attack")
    _provocation(x, t)
    reaction = _reaction(x, fd)
    terms = dict(
        stat=stat,
        damage=expression,
        reaction=reaction,
        modifier=req.modifier,
        unparryable=req.unparryable,
        undodgeable=req.undodgeable,
        same_slot=x.same_slot,
        target_moved_away=moved_away,
        sepulchral=opts.sepulchral_damage_multiplier,
        backlash=opts.backlash_damage_multiplier,
        extreme_scores=opts.extreme_scores,
    )
    return Engaged(fa, fd, stat, expression, source, reaction, moved_away, terms)


def attack_odds(x: Exchange) -> ExchangeOdds:
    """The exact odds of `attack(x)`: the same checks, the same fighters and terms,
    `rules.odds.attack_odds` in place of `resolve_attack`."""
    e = engage(x)
    odds = attack_odds_of(e.fa, e.fd, **e.terms)
    return ExchangeOdds(outcomes=odds.outcomes, hit=odds.hit, down=odds.down)


def attack(x: Exchange) -> None:
    """GC-P1..P7, GC-D1, GC-O2: reach, the reaction the rules allow, the exchange, its effects."""
    a, t, req = x.actor, x.foe, x.req
    e = engage(x)
    stat, expression, source, moved_away, fa, reaction = e.stat, e.expression, e.source, e.moved_away, e.fa, e.reaction
    result = resolve_attack(
        Named(a.dice, {"test": "attack", "karma": "attack karma"}),
        fa,
        e.fd,
        **e.terms,
        defender_dice=Named(
            t.dice, {"test": reaction or "defense", "karma": f"{reaction} karma", "auto_defense": "auto defense"}
        ),
    )
    x.steps.append(
        _test_step(
            "GC-P3",
            "attack_test",
            "attack test",
            a.id,
            result.attack,
            kind=req.kind,
            stat=stat,
            posture=fa.posture,
            modifier=req.modifier,
            posture_modifier=posture_modifier(fa),
        )
    )
    _set(a, "karma", result.attacker.karma)
    if moved_away:
        x.steps.append(
            step(
                "GC-O2",
                "the target moved out of reach in this same slot: the attack fails",
                key="the_target_moved_out_of_reach_in_this_same_slot_the_attack_fails",
                combatant_id=t.id,
            )
        )
    _defence(x, result, reaction)
    _set(t, "karma", result.defender.karma)
    if result.damage is not None:
        _wound(x, result, expression, source, fa)


def _strike_back(x: Exchange) -> str | None:
    """GC-P2 riposte / GC-P6 counter-attack: an attack, outside its turn, on the one it may strike back at
    (spent: once; next-turn ends it unused)."""
    a, t = x.actor, x.foe
    rule = None if x.on_turn else state.strike_back(a.counters, t.id)
    if rule is None:
        return None
    state.use_strike_back(a.counters, rule)
    x.steps.append(
        step(
            rule,
            "riposte" if rule == "GC-P2" else "counter-attack",
            key="riposte" if rule == "GC-P2" else "counter_attack",
            combatant_id=a.id,
            against=t.id,
        )
    )
    return rule


def _provocation(x: Exchange, target: Party) -> None:
    """GC-P6: in the turn a provocation binds, the actor's attacks aim at its provoker; it lapses at once
    when the provoker is down or out of the fight."""
    a = x.actor
    by = state.provoker(a.counters)
    if by is None:
        return
    try:
        obeyed = state.check_provoked(a.counters, target.id, provoker_standing=x.standing(by))
    except RuleError as exc:  # a provoker the caller does not see is not named
        named = by if x.sees(by) else None
        raise RuleError(
            f"combatant {a.id} is provoked: its next attack aims at {named or 'its provoker'} (GC-P6)",
            field="target_id",
            extra={"rule": "GC-P6", "provoked_by": named},
            code="provoked",
        ) from exc
    if obeyed is None:
        x.steps.append(
            step(
                "GC-P6",
                "provocation lapses: the provoker is down or out of the fight",
                key="provocation_lapses_the_provoker_is_down_or_out_of_the_fight",
                combatant_id=a.id,
            )
        )
    else:
        x.steps.append(
            step(
                "GC-P6",
                "provoked: attacks its provoker",
                key="provoked_attacks_its_provoker",
                combatant_id=a.id,
                provoked_by=by,
            )
        )


def _reach(x: Exchange, opts: Options) -> bool:
    """GC-D1: a melee attack needs distance 1 (both on the grid). A target of the same parallel
    slot that moved away makes the attack fail (GC-O2): True then."""
    a, t = x.actor, x.foe
    if x.req.kind != "melee" or not opts.movement_rules or a.position is None or t.position is None:
        return False
    here, there = (a.position["x"], a.position["y"]), (t.position["x"], t.position["y"])
    if is_melee(here, there):
        return False
    if x.same_slot and "move" in t.turn.get("phases", []):
        return True
    d = distance(here, there)
    raise RuleError(
        f"target {t.id} is out of reach: a melee attack needs distance {MELEE_REACH} (GC-D1), it is at {d}",
        field="target_id",
        extra={"rule": "GC-D1", "distance": d, "reach": MELEE_REACH},
        code="out_of_reach",
    )


def inventory_weapons(sheet: Sheet) -> list[tuple[str, str]]:
    """GC-P4: (name, damage) of each weapon of the inventory with a damage."""
    inventory = sheet.inventory
    return [
        (i.name, i.damage)
        for i in (inventory.items if inventory is not None else [])
        if i.damage and i.kind in ("weapon", "two_handed_weapon")
    ]


def _damage_expression(a: Party, req: AttackRequest) -> tuple[str, str]:
    """GC-P4: the request's expression, the named weapon of the inventory, or its first weapon."""
    if req.damage is not None:
        return req.damage, "request"
    weapons = inventory_weapons(_sheet(a))
    if req.weapon is not None:
        found = next((w for w in weapons if w[0] == req.weapon), None)
        if found is None:
            names = ", ".join(name for name, _ in weapons) or "none"
            raise InvalidBody(
                f"no weapon {req.weapon!r} with a damage in {a.name}'s inventory (weapons: {names})",
                field="weapon",
                code="unknown_name",
            )
        return found[1], f"weapon {found[0]}"
    if not weapons:
        raise InvalidBody(
            f"{a.name} has no weapon with a damage in its inventory: name a `damage` expression (GC-P4)",
            field="damage",
            code="unknown_name",
        )
    return weapons[0][1], f"weapon {weapons[0][0]}"


def _check_chosen_reaction(x: Exchange, fd: Fighter) -> None:
    """A reaction the body chose that the rules forbid: 422 before anything happens (GC-P1, GC-P5..P7, GC-O2)."""
    if not x.reaction_chosen or x.reaction in (None, "none"):
        return
    if x.same_slot:
        raise RuleError(
            "no dodge nor parry against an attack from the same parallel slot (GC-O2)",
            field="reaction",
            code="reaction_not_allowed",
        )
    if not can_defend(fd):
        rule = "GC-P7" if fd.backlash == ILLUMINATION else "GC-P6" if fd.posture == SEPULCRALE else "GC-P1"
        raise RuleError(
            f"a {f'{fd.backlash} backlash' if rule == 'GC-P7' else fd.posture} defender cannot dodge "
            f"nor parry ({rule})",
            field="reaction",
            code="reaction_not_allowed",
        )
    check_reaction(x.reaction, unparryable=x.req.unparryable, undodgeable=x.req.undodgeable)


def _reaction(x: Exchange, fd: Fighter) -> str | None:
    """The target's reaction: a chosen one is checked by the rules (422 when they forbid it); a
    standing one the rules forbid becomes none, and a step says why (GC-P1, GC-P5..P7, GC-O2)."""
    reaction = None if x.reaction in (None, "none") else x.reaction
    if reaction is None or x.reaction_chosen:
        return reaction
    why: Step | None = None
    if x.same_slot:
        why = {
            "rule": "GC-O2",
            "key": "no_defence_same_slot",
            "what": "no dodge nor parry against an attack from the same parallel slot",
        }
    elif not can_defend(fd):
        rule = "GC-P7" if fd.backlash == ILLUMINATION else "GC-P6" if fd.posture == SEPULCRALE else "GC-P1"
        why = {
            "rule": rule,
            "key": "no_defence_in_posture",
            "what": f"no dodge nor parry in {f'{fd.backlash} backlash' if rule == 'GC-P7' else fd.posture}",
        }
    elif (reaction == "parry" and x.req.unparryable) or (reaction == "dodge" and x.req.undodgeable):
        why = {
            "rule": "GC-P5",
            "key": "no_defence_against_this_attack",
            "what": f"an {'unparryable' if reaction == 'parry' else 'undodgeable'} attack: no {reaction}",
        }
    if why is None:
        return reaction
    refused: GreatCosmosStep = {**why, "combatant_id": x.foe.id, "standing_reaction": reaction, "reaction": "none"}
    x.steps.append(refused)
    return None


def _defence(x: Exchange, result: Attack, reaction: str | None) -> None:
    t = x.foe
    if result.auto_defense_die is not None:
        x.steps.append(
            step(
                "GC-P5",
                "automatic defence (d10 <= 7)",
                key="automatic_defence_d10_7",
                combatant_id=t.id,
                d10=result.auto_defense_die,
                holds=result.auto_defended,
            )
        )
    if result.defense is not None:
        assert reaction is not None  # a defence test answers a reaction
        x.steps.append(
            _test_step(
                "GC-P2",
                "dodge" if reaction == "dodge" else "parry",
                reaction,
                t.id,
                result.defense,
                stat=DEFENSE_STATS[reaction],
                holds=result.defense_holds,
                riposte_available=result.riposte_available,
                attack_score=result.attack.score,
            )
        )
    if result.riposte_available:
        t.counters["riposte"] = x.actor.id


def _wound(x: Exchange, result: Attack, expression: str, source: str, fa: Fighter) -> None:
    """GC-P4 damage with the posture multipliers (GC-P1 x2, GC-P6 x3, GC-P7 x0.5), GC-P6 effects.
    (Steps naming a `resource` show its before/after only to who may see it exactly: hp_visibility.)"""
    a, t, dmg, wound = x.actor, x.foe, result.damage, result.wound
    assert dmg is not None and wound is not None  # a hit: called only when the attack did damage
    after = max(0, wound.hp_after)  # GC-S5: hp stays >= 0 (0 is down)
    x.steps.append(
        step(
            "GC-P4",
            "damage",
            key="damage",
            combatant_id=t.id,
            expression=expression,
            source=source,
            raw=dmg.raw,
            multiplier=_number(dmg.multiplier),
            posture=fa.posture,
            backlash=fa.backlash,
            total=dmg.total,
            resource="hp",
            before=wound.hp_before,
            after=after,
        )
    )
    _set(t, "hp", after)
    if wound.revived:
        t.counters["special"] = {**(t.counters.get("special") or {}), "revive_used": True}
        x.steps.append(
            step(
                "GC-P6",
                "Revive: a fatal blow leaves 50% of hp_max instead (once)",
                key="revive_a_fatal_blow_leaves_50_of_hp_max_instead_once",
                combatant_id=t.id,
                resource="hp",
                after=wound.hp_after,
            )
        )
    if wound.counter_attack_available:
        t.counters["counter_attack"] = a.id
        x.steps.append(
            step("GC-P6", "counter-attack available", key="counter_attack_available", combatant_id=t.id, against=a.id)
        )
    if result.provoked:
        state.provoke(t.counters, a.id, before_its_action=t.id in x.acting and not t.turn.get("acted"))
        x.steps.append(
            step(
                "GC-P6",
                "provocation: its next offensive action aims at the Sépulcrale",
                key="provocation_its_next_offensive_action_aims_at_the_sepulcrale",
                combatant_id=t.id,
                provoked_by=a.id,
            )
        )


def _number(f: Fraction) -> int | float:
    return int(f) if f.denominator == 1 else float(f)


# --- move and dash (GC-D1..D4) ------------------------------------------------------------------


def move(x: Exchange) -> None:
    """GC-D1: |dx| + |dy| cells; GC-D2: at most the turn's max move (a dash multiplies it);
    GC-D3: never move-act-move; then a cell another combatant holds is refused. The distance is
    judged first and only the combatants the caller sees hold a cell (`x.others`): a player's move
    onto a hidden one's cell is a move onto an empty cell."""
    a, to, opts = x.actor, x.req.to, options(x)
    cell, shown = {"x": to.x, "y": to.y}, Cell(x=to.x, y=to.y)
    if not opts.movement_rules:
        _check_free(x, cell)
        x.steps.append(
            step(
                "GC-D1",
                "placed (movement rules off: campaign option)",
                key="placed_movement_rules_off_campaign_option",
                combatant_id=a.id,
                to=shown,
            )
        )
        a.position = cell
        return
    if a.position is None:
        raise InvalidBody(
            f"combatant {a.id} is not on the grid: the GM places it first", field="to", code="not_on_grid"
        )
    d = distance((a.position["x"], a.position["y"]), (to.x, to.y))
    turn = a.turn
    allowed = turn.get("max_move", _base_move(a, x.round))
    moved = turn.get("moved", 0) + d
    if moved > allowed:
        raise RuleError(
            f"{moved} cells moved this turn; at most {allowed} (GC-D2)",
            field="to",
            extra={"rule": "GC-D2", "max_move": allowed, "moved": moved},
            code="move_too_far",
        )
    _check_free(x, cell)
    _phase(x, "move")
    turn["moved"], turn["max_move"] = moved, allowed
    # `from` is a Python keyword: the step is written as its literal, not with `step`
    moving: GreatCosmosStep = {
        "rule": "GC-D1",
        "key": "move",
        "what": "move",
        "combatant_id": a.id,
        "from": Cell(x=a.position["x"], y=a.position["y"]),
        "to": shown,
        "distance": d,
    }
    x.steps.append(moving)
    x.steps.append(step("GC-D2", "max move", key="max_move", combatant_id=a.id, max_move=allowed, moved=moved))
    a.position = cell


def _check_free(x: Exchange, cell: dict[str, int]) -> None:
    """A cell held by another combatant the caller sees is refused (422 naming `to`)."""
    if any(o.position == cell for o in x.others):
        raise InvalidBody(
            f"cell ({cell['x']}, {cell['y']}) is taken by another combatant", field="to", code="cell_taken"
        )


def dash(x: Exchange) -> None:
    """GC-D4: gives up the action: an agilite test multiplies the turn's max move (x2, x2.5 critical,
    x3 super-critical, rounded up); a failure leaves it."""
    a, opts = x.actor, options(x)
    turn = a.turn
    _check_cancelled(x)
    if turn.get("dashed"):
        raise RuleError(f"combatant {a.id} has dashed this turn already (GC-D4)", field="type", code="turn_phases")
    if turn.get("acted"):
        raise RuleError(
            "a dash gives up the turn's action, already used (GC-D4)",
            field="type",
            extra={"rule": "GC-D4"},
            code="turn_phases",
        )
    f = fighter(a, x.round, tests=True)
    base = turn.get("max_move", _base_move(a, x.round))
    test = resolve_test(
        Named(a.dice, {"test": "dash", "karma": "dash karma"}),
        f.stats.get("agilite", 0) + x.req.modifier + posture_modifier(f),
        f.karma,
        posture=f.posture,
        extreme_scores=opts.extreme_scores,
    )
    multiplier, new = dash_move(base, test.outcome)
    x.steps.append(
        _test_step(
            "GC-D4",
            "dash_agilite_test",
            "dash: agilite test",
            a.id,
            test,
            stat="agilite",
            modifier=x.req.modifier,
            base_move=base,
            multiplier=_number(multiplier),
            max_move=new,
        )
    )
    _set(a, "karma", test.karma_after)
    turn["dashed"], turn["max_move"] = True, new


# --- postures (GC-P1, GC-P2, GC-P5..P7) and the Final Skill -------------------------------------


def posture(x: Exchange) -> None:
    """Offensive/defensive; entering Illumination or Sépulcrale spends its point (GC-P5: the
    advantage d6); leaving one after more than 2 turns backlashes (GC-P7)."""
    a, new = x.actor, x.req.posture
    current = posture_of(a.sheet)
    if new == current:
        raise InvalidBody(f"combatant {a.id} is in {new} posture already", field="posture")
    state.check_posture_change(on_turn=x.on_turn, acted=bool(a.turn.get("acted") or a.turn.get("dashed")))
    if current in SPECIAL_POSTURES:
        end_posture(x, a)
    if new in SPECIAL_POSTURES:
        _enter(x, a, new)
    else:
        x.steps.append(
            step(
                "GC-P1" if new == "offensive" else "GC-P2",
                f"{new} posture",
                key="posture_taken",
                combatant_id=a.id,
                before=current,
                damage_multiplier=2 if new == "offensive" else 1,
                may_defend=new == "defensive",
            )
        )
    _set(a, "posture", new)


def _enter(x: Exchange, a: Party, new: str) -> None:
    light, dark = _sheet(a).light_points or 0, _sheet(a).dark_points or 0
    entry = enter_special_posture(Named(a.dice, {}), new, light, dark)
    _set(a, "light_points", entry.light_points)
    _set(a, "dark_points", entry.dark_points)
    _set(a, "posture_advantage", entry.advantage_die)  # GC-P5: on the sheet, applied by every d100 test
    special = state.new_special(new, x.round)
    rule = "GC-P5" if new == ILLUMINATION else "GC-P6"
    x.steps.append(
        step(
            rule,
            f"enters {new}",
            key="enters_special_posture",
            combatant_id=a.id,
            cost={"light" if new == ILLUMINATION else "dark": 1},
            karma_locked=10 if new == ILLUMINATION else -10,
            advantage_die=entry.advantage_die,
            advantage=entry.advantage,
        )
    )
    if entry.advantage == "extra_action":
        special["extra_action"] = True
        a.actions += 1
        x.steps.append(
            step(
                "GC-P5",
                "advantage: an extra action each round while the posture lasts",
                key="advantage_an_extra_action_each_round_while_the_posture_lasts",
                combatant_id=a.id,
                actions=a.actions,
            )
        )
    a.counters["special"] = special


def end_posture(x: Exchange, a: Party, *, to: str | None = None) -> None:
    """GC-P7: held more than `backlash_after_turns` turns (rounds), a backlash for 2 turns (the
    Sépulcrale's disadvantage d6); GC-P6 Apocalypse: a Sépulcrale whose Revive never fired dies and
    comes back at 50% hp_max. `to`: the posture after it (the final skill: the default one)."""
    opts, f = options(x), fighter(a, x.round)
    special = a.counters.pop("special", None) or {}
    held = state.posture_length(special, x.round, on_turn=x.on_turn, acted=bool(a.turn.get("acted")))
    end = end_special_posture(
        Named(a.dice, {}), f, held, backlash_after=opts.backlash_after_turns, backlash=opts.backlash_damage_multiplier
    )
    x.steps.append(
        step(
            "GC-P7",
            f"leaves {f.posture}",
            key="leaves_special_posture",
            combatant_id=a.id,
            turns_held=held,
            backlash=end.backlash,
            backlash_turns=end.backlash_turns,
            cannot_act=end.cannot_act,
            acts_last=end.acts_last,
            damage_multiplier=_number(end.damage_multiplier) if end.damage_multiplier is not None else None,
            disadvantage_die=end.disadvantage_die,
            disadvantage=end.disadvantage,
        )
    )
    if end.backlash:
        owed = state.new_backlash(f.posture, end.disadvantage_die, end.disadvantage, at_once=not x.on_turn)
        a.counters["backlash"] = owed
        if owed["running"]:
            _set(a, "backlash", Backlash.model_validate(state.sheet_backlash(owed)))
    if end.apocalypse:
        x.steps.append(
            step(
                "GC-P6",
                "Apocalypse: Revive never fired: dies and comes back at 50% hp_max",
                key="apocalypse_revive_never_fired_dies_and_comes_back_at_50_hp_max",
                combatant_id=a.id,
                resource="hp",
                before=f.hp,
                after=end.hp_after,
            )
        )
        _set(a, "hp", end.hp_after)
    if special.get("extra_action"):
        a.actions = max(1, a.actions - 1)
    _set(a, "posture_advantage", None)  # GC-P5: the advantage lasts as long as the posture
    if to is not None:
        _set(a, "posture", to)


def final_skill(x: Exchange) -> None:
    """GC-S9, GC-P5/P6: level >= 5, in a special posture, its light/dark cost; an optional test
    whose critical failures count as plain failures; it ends the posture (GC-P7 may follow)."""
    a, req = x.actor, x.req
    sheet = _sheet(a)
    skill = sheet.final_skill
    if skill is None:
        raise InvalidBody(f"{a.name} has no final skill on its sheet (GC-S9)", field="type", code="unknown_name")
    _check_cancelled(x)
    _act(x, "the Final Skill")
    if x.target is not None and x.target.side != a.side:  # GC-P6: a Final Skill aimed at an enemy
        _provocation(x, x.target)
    light, dark = use_final_skill(
        sheet.level,
        posture_of(sheet),
        skill.cost_kind,
        skill.cost_points,
        sheet.light_points or 0,
        sheet.dark_points or 0,
        punchline=skill.punchline,
    )
    x.steps.append(
        step(
            "GC-P5" if posture_of(sheet) == ILLUMINATION else "GC-P6",
            "Final Skill",
            key="final_skill",
            combatant_id=a.id,
            name=skill.name,
            punchline=skill.punchline,
            cost={skill.cost_kind: skill.cost_points},
            target_id=req.target_id,
        )
    )
    _set(a, "light_points", light)
    _set(a, "dark_points", dark)
    if req.stat is not None:
        f = fighter(a, x.round, tests=True)
        stat = canonical_stat(req.stat)
        test = resolve_test(
            Named(a.dice, {"test": "final skill", "karma": "final skill karma"}),
            f.stats.get(stat, 0) + req.modifier + posture_modifier(f),
            f.karma,
            posture=f.posture,
            extreme_scores=options(x).extreme_scores,
        )
        x.steps.append(
            _test_step(
                "GC-P5",
                "final_skill_test_critical_failures_count_as_failures",
                "Final Skill test (critical failures count as failures)",
                a.id,
                test,
                stat=stat,
                counted_as=final_skill_outcome(test.outcome),
            )
        )
        _set(a, "karma", test.karma_after)
    end_posture(x, a, to=_sheet(a).default_posture)


# --- between actions: turns passing, the GM's damage, the end of the fight -----------------------


def turn_passes(counters: dict[str, Any], phase: str, round_: int) -> TurnPassed | None:
    """GC-P2/P6/P7 at the start or end of a combatant's turn (`rules.fight.turn_passes`)."""
    passed = state.turn_passes(counters, phase, round_)
    return None if passed is None else TurnPassed(*passed)


def gm_damage(target: Party, pool: Pool, before: int, amount: int) -> list[GreatCosmosStep]:
    """GC-P6: the GM's `damage` is damage: a fatal one revives a Sépulcrale once (50% of hp_max, rounded up):
    its hp set again, its Revive spent (`target` changed in place)."""
    sheet = _sheet(target)
    if pool.key != "hp" or posture_of(sheet) != SEPULCRALE:
        return []
    special = target.counters.get("special") or {}
    f = Fighter(
        id="",
        stats={},
        karma=0,
        hp=before,
        hp_max=sheet.hp_max,
        posture=SEPULCRALE,
        revive_used=bool(special.get("revive_used")),
    )
    _, wound = take_damage(f, amount)
    if not wound.revived:
        return []
    target.counters["special"] = {**special, "revive_used": True}
    HP.set(sheet, wound.hp_after)
    return [
        {
            "rule": "GC-P6",
            "key": "revive_a_fatal_blow_leaves_50_of_hp_max_instead_once",
            "what": "Revive: a fatal blow leaves 50% of hp_max instead (once)",
            "resource": "hp",
            "after": wound.hp_after,
        }
    ]


def fight_ends(sheet: Sheet, counters: dict[str, Any]) -> list[GreatCosmosStep]:
    """GC-P6 (Decision): ending the encounter ends every special posture still held: back to the default
    posture, Apocalypse where Revive never fired, no backlash after the fight (a running one is cleared)."""
    steps: list[GreatCosmosStep] = []
    posture = sheet.posture
    special = counters.pop("special", None) or {}
    if posture in SPECIAL_POSTURES:
        hp_max = sheet.hp_max
        end = end_special_posture(
            TableDice([]),  # held 0 turns: no backlash, so no disadvantage die
            Fighter(
                id="",
                stats={},
                karma=0,
                hp=_hp(sheet),
                hp_max=hp_max,
                posture=posture,
                revive_used=bool(special.get("revive_used")),
            ),
            0,
        )
        if end.apocalypse:
            steps.append(
                {
                    "rule": "GC-P6",
                    "key": "apocalypse_revive_never_fired_dies_and_comes_back_at_50_hp_max",
                    "what": "Apocalypse: Revive never fired: dies and comes back at 50% hp_max",
                    "resource": "hp",
                    "before": _hp(sheet),
                    "after": end.hp_after,
                }
            )
            sheet.hp = end.hp_after
        sheet.posture = sheet.default_posture
        sheet.posture_advantage = None
        steps.append(
            {"rule": "GC-P6", "key": "the_fight_ends_leaves_posture", "what": f"the fight ends: leaves {posture}"}
        )
    if counters.pop("backlash", None) is not None or sheet.backlash is not None:
        sheet.backlash = None
        steps.append(
            {
                "rule": "GC-P7",
                "key": "the_fight_ends_no_backlash_after_it",
                "what": "the fight ends: no backlash after it",
            }
        )
    return steps
