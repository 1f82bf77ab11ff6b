"""Great Cosmos combat: postures, attacks, defenses and damage (GC-P1..P7). Pure rules.

Dice order of one attack (`resolve_attack`): the attack test (d100, karma d10),
then — if it hits — the Illumination auto-defense d10, then the defense test
(d100, karma d10), then — if it lands — the damage dice.

GC-T2: the extreme-score conversion is the GM's opt-in (`extreme_scores`, default off).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from math import floor
from typing import Any

from app.rules.dice import DiceSource, parse
from app.rules.errors import InsufficientResource, RuleError
from app.rulesets.great_cosmos.rules.core import (
    CRITICAL_FAILURE,
    CRITICAL_SUCCESS,
    FAILURE,
    SUPER_CRITICAL_FAILURE,
    SUPER_CRITICAL_SUCCESS,
    TestResult,
    resolve_test,
)
from app.rulesets.great_cosmos.rules.sheet import check_final_skill

OFFENSIVE, DEFENSIVE, ILLUMINATION, SEPULCRALE = "offensive", "defensive", "illumination", "sepulcrale"
SPECIAL_POSTURES = {ILLUMINATION: "light", SEPULCRALE: "dark"}
ATTACK_STATS = {"melee": "force", "ranged": "precision", "magic": "esprit"}  # GC-P3 defaults
DEFENSE_STATS = {"dodge": "agilite", "parry": "force"}  # GC-P2
ADVANTAGES = {
    1: "none",
    2: "no_hp_mp_cost",
    3: "extra_positive_effect",
    4: "bonus_10",
    5: "bonus_20",
    6: "extra_action",
}
DISADVANTAGES = {
    1: "none",
    2: "hp_mp_cost_doubled",
    3: "extra_negative_effect",
    4: "malus_10",
    5: "malus_20",
    6: "action_cancelled",
}
_MODIFIERS = {"bonus_10": 10, "bonus_20": 20, "malus_10": -10, "malus_20": -20}
AUTO_DEFENSE_THRESHOLD = 7  # GC-P5: d10 <= 7


@dataclass(frozen=True)
class Fighter:
    """What the combat rules read of one combatant."""

    id: str
    stats: dict[str, int]
    karma: int
    hp: int
    hp_max: int
    posture: str = DEFENSIVE
    advantage: str | None = None  # GC-P5 advantage of the current Illumination
    revive_used: bool = False  # GC-P6
    backlash: str | None = None  # GC-P7: the posture whose backlash is running
    backlash_disadvantage: str | None = None


def posture_modifier(f: Fighter) -> int:
    """GC-P5/GC-P7: +10/+20 of an Illumination advantage, -10/-20 of a backlash disadvantage."""
    return _MODIFIERS.get(f.advantage or "", 0) + _MODIFIERS.get(f.backlash_disadvantage or "", 0)


@dataclass(frozen=True)
class Advantage:
    """GC-P5: the advantage d6 of an Illumination, kept for the whole posture."""

    die: int
    effect: str  # ADVANTAGES[die]
    bonus: int  # on the target of every test during the posture (Decision: +10 / +20)


def posture_advantage(posture: str | None, die: int | None) -> Advantage | None:
    """GC-P5 (Decision): every test during an Illumination applies the advantage d6 rolled on
    entering it (stored with the posture): +10 on 4, +20 on 5 on its target, 0 for the other
    faces. None outside Illumination. An Illumination whose die is not known is refused rather
    than tested without it."""
    if posture != ILLUMINATION:
        return None
    if die is None:
        raise RuleError(
            "this character is in Illumination but the advantage d6 rolled on entering it (GC-P5) is "
            "not on its sheet: the GM sets sheet.posture_advantage (1..6) before its tests",
            field="sheet.posture_advantage",
        )
    if die not in ADVANTAGES:
        raise RuleError(f"the advantage d6 is 1..6, not {die}", field="sheet.posture_advantage")
    effect = ADVANTAGES[die]
    return Advantage(die, effect, _MODIFIERS.get(effect, 0))


def damage_multiplier(f: Fighter, *, sepulchral: float = 3, backlash: float = 0.5) -> Fraction:
    """GC-P1 offensive x2, GC-P2 defensive x1, GC-P6 Sépulcrale x option (default 3),
    GC-P7 Sépulcrale backlash x option (default 0.5) on top; Illumination deals normal damage."""
    base = {OFFENSIVE: Fraction(2), SEPULCRALE: Fraction(sepulchral).limit_denominator(1000)}.get(
        f.posture, Fraction(1)
    )
    if f.backlash == SEPULCRALE:
        base *= Fraction(backlash).limit_denominator(1000)
    return base


def can_defend(f: Fighter) -> bool:
    """GC-P1: offensive cannot dodge nor parry; GC-P2 defensive may; GC-P5 Illumination may;
    GC-P7 no defense during an Illumination backlash. GC-P6 (Decision): Sépulcrale is an
    offensive posture, no dodge nor parry; its defence is the counter-attack."""
    return f.posture in (DEFENSIVE, ILLUMINATION) and f.backlash != ILLUMINATION


def can_act(f: Fighter) -> bool:
    """GC-P7: an Illumination backlash forbids acting (and speaking) for its turns."""
    return f.backlash != ILLUMINATION


@dataclass(frozen=True)
class Defense:
    holds: bool
    riposte_available: bool


def defense_holds(attack: TestResult, defense: TestResult) -> Defense:
    """GC-P2: the defense holds iff it succeeds and its score <= the attack's; a
    super-critical defense always holds; against a super-critical attack only a
    super-critical defense holds. A critical or super-critical defense that holds marks a
    riposte; a defense that fails grants none."""
    if attack.outcome == SUPER_CRITICAL_SUCCESS:
        holds = defense.outcome == SUPER_CRITICAL_SUCCESS
    elif defense.outcome == SUPER_CRITICAL_SUCCESS:
        holds = True
    else:
        holds = defense.success and defense.score <= attack.score
    critical = defense.outcome in (CRITICAL_SUCCESS, SUPER_CRITICAL_SUCCESS)
    return Defense(holds=holds, riposte_available=holds and critical)


def check_reaction(reaction: str | None, *, unparryable: bool = False, undodgeable: bool = False) -> None:
    """GC-P5: a parry of an `unparryable` attack or a dodge of an `undodgeable` one is never
    possible, in any posture (« attaques spéciales imparables et/ou inesquivables »)."""
    if reaction == "parry" and unparryable:
        raise RuleError(
            "an unparryable attack cannot be parried (GC-P5)", field="reaction", code="reaction_not_allowed"
        )
    if reaction == "dodge" and undodgeable:
        raise RuleError("an undodgeable attack cannot be dodged (GC-P5)", field="reaction", code="reaction_not_allowed")


def auto_defense_applies(
    f: Fighter, attack: TestResult, *, unparryable: bool = False, undodgeable: bool = False
) -> bool:
    """GC-P5: in Illumination, each attack suffered may be auto-dodged/parried, except a
    super-critical one or a special attack flagged unparryable and/or undodgeable."""
    special = unparryable or undodgeable
    return f.posture == ILLUMINATION and attack.outcome != SUPER_CRITICAL_SUCCESS and not special


def roll_auto_defense(dice: DiceSource) -> tuple[int, bool]:
    """GC-P5: 7 chances in 10 (d10 <= 7)."""
    die = dice.roll(10, "auto_defense")
    return die, die <= AUTO_DEFENSE_THRESHOLD


@dataclass(frozen=True)
class Damage:
    """GC-P4: rolled damage, its multiplier and the total (rounded down)."""

    expression: str
    raw: int
    multiplier: Fraction
    total: int


def roll_damage(dice: DiceSource, expression: str, multiplier: Fraction) -> Damage:
    """GC-P4: the weapon/skill expression (GM-defined), then the posture multiplier, rounded down."""
    raw = parse(expression).roll(dice, "damage")
    return Damage(expression=expression, raw=raw, multiplier=multiplier, total=max(0, floor(raw * multiplier)))


@dataclass(frozen=True)
class Wound:
    hp_before: int
    hp_after: int
    revived: bool
    counter_attack_available: bool


def half_of(hp_max: int) -> int:
    """GC-P6 (Decision): « récupère 50% »: half of hp_max, rounded up."""
    return (hp_max + 1) // 2


def take_damage(f: Fighter, amount: int) -> tuple[Fighter, Wound]:
    """GC-P6: damage lowers HP (any damage: an attack's, a hazard's, the GM's `damage` action); in
    Sépulcrale the first fatal blow leaves 50% of hp_max instead, rounded up (Revive, once) and any
    damage allows a counter-attack, none once it is down."""
    hp = f.hp - amount
    revived = False
    if hp <= 0 and f.posture == SEPULCRALE and not f.revive_used:
        hp, revived = half_of(f.hp_max), True
    new = replace(f, hp=hp, revive_used=f.revive_used or revived)
    counter = f.posture == SEPULCRALE and amount > 0 and hp > 0
    return new, Wound(f.hp, hp, revived, counter_attack_available=counter)


@dataclass(frozen=True)
class Attack:
    """One attack and its consequences (GC-P1..P6)."""

    attack: TestResult
    hit: bool
    auto_defense_die: int | None
    auto_defended: bool
    defense: TestResult | None
    defense_holds: bool
    riposte_available: bool
    damage: Damage | None
    wound: Wound | None
    attacker: Fighter
    defender: Fighter
    provoked: bool  # GC-P6: the defender must aim its next offensive action at the attacker
    target_moved_away: bool = False  # GC-O2: the target left reach in the same parallel slot


def resolve_attack(
    dice: DiceSource,
    attacker: Fighter,
    defender: Fighter,
    *,
    stat: str,
    damage: str,
    reaction: str | None = None,
    modifier: int = 0,
    unparryable: bool = False,
    undodgeable: bool = False,
    same_slot: bool = False,
    target_moved_away: bool = False,
    sepulchral: float = 3,
    backlash: float = 0.5,
    extreme_scores: bool = False,
    defender_dice: DiceSource | None = None,
) -> Attack:
    """GC-P1..P6: attack test (GC-P3), Illumination auto-defense (GC-P5), dodge/parry
    (GC-P2), damage with posture multipliers (GC-P4) and Sépulcrale effects (GC-P6).

    GC-O2: an attack from the defender's own parallel slot (`same_slot`) allows no dodge
    nor parry (automatic or not), and one whose target moved out of reach in that slot
    (`target_moved_away`) fails whatever its test (the test is still rolled).

    `defender_dice` (default `dice`): where the defender's dice come from (the automatic
    defence d10 and the dodge/parry test), so each die is known to be the attacker's or the
    defender's; the order stays attack test, defence, damage."""
    defender_dice = dice if defender_dice is None else defender_dice
    if not can_act(attacker):
        raise RuleError("a character in Illumination backlash cannot act (GC-P7)", field="actor_id")
    if reaction is not None and reaction not in DEFENSE_STATS:
        raise RuleError("reaction is dodge or parry", field="reaction", code="unknown_name")
    if reaction is not None and not can_defend(defender):
        raise RuleError(
            f"a {defender.posture} defender cannot dodge nor parry (GC-P1, GC-P6)",
            field="reaction",
            code="reaction_not_allowed",
        )
    if reaction is not None and same_slot:
        raise RuleError(
            "no dodge nor parry against an attack from the same parallel slot (GC-O2)",
            field="reaction",
            code="reaction_not_allowed",
        )
    check_reaction(reaction, unparryable=unparryable, undodgeable=undodgeable)
    attack = resolve_test(
        dice,
        attacker.stats[stat] + modifier + posture_modifier(attacker),
        attacker.karma,
        posture=attacker.posture,
        extreme_scores=extreme_scores,
    )
    attacker = replace(attacker, karma=attack.karma_after)
    hit = attack.success and not target_moved_away
    out: dict[str, Any] = dict(
        attack=attack,
        hit=hit,
        auto_defense_die=None,
        auto_defended=False,
        defense=None,
        defense_holds=False,
        riposte_available=False,
        damage=None,
        wound=None,
        provoked=False,
        target_moved_away=target_moved_away,
    )
    if not hit:
        return Attack(attacker=attacker, defender=defender, **out)
    if not same_slot and auto_defense_applies(defender, attack, unparryable=unparryable, undodgeable=undodgeable):
        out["auto_defense_die"], out["auto_defended"] = roll_auto_defense(defender_dice)
        if out["auto_defended"]:
            return Attack(attacker=attacker, defender=defender, **out)
    if reaction is not None:
        d = resolve_test(
            defender_dice,
            defender.stats[DEFENSE_STATS[reaction]] + posture_modifier(defender),
            defender.karma,
            posture=defender.posture,
            extreme_scores=extreme_scores,
        )
        defender = replace(defender, karma=d.karma_after)
        verdict = defense_holds(attack, d)
        out.update(defense=d, defense_holds=verdict.holds, riposte_available=verdict.riposte_available)
        if verdict.holds:
            return Attack(attacker=attacker, defender=defender, **out)
    dmg = roll_damage(dice, damage, damage_multiplier(attacker, sepulchral=sepulchral, backlash=backlash))
    defender, wound = take_damage(defender, dmg.total)
    out.update(damage=dmg, wound=wound, provoked=attacker.posture == SEPULCRALE and dmg.total > 0)
    return Attack(attacker=attacker, defender=defender, **out)


# --- entering and leaving the special postures (GC-P5..P7) -------------------------------


@dataclass(frozen=True)
class PostureEntry:
    posture: str
    light_points: int
    dark_points: int
    advantage_die: int | None
    advantage: str | None


def enter_special_posture(dice: DiceSource, posture: str, light_points: int, dark_points: int) -> PostureEntry:
    """GC-P5: Illumination costs 1 light point and rolls the advantage d6;
    GC-P6: Sépulcrale costs 1 dark point. Not enough points → 409."""
    kind = SPECIAL_POSTURES.get(posture)
    if kind is None:
        raise RuleError("the special postures are illumination and sepulcrale", field="posture")
    if (light_points if kind == "light" else dark_points) < 1:
        raise InsufficientResource(f"entering {posture} costs 1 {kind} point (GC-P5/P6)", field="posture")
    if kind == "light":
        die = dice.roll(6, "advantage")
        return PostureEntry(posture, light_points - 1, dark_points, die, ADVANTAGES[die])
    return PostureEntry(posture, light_points, dark_points - 1, None, None)


def final_skill_outcome(outcome: str) -> str:
    """GC-P5/GC-P6: critical and super-critical failures are ignored on the Final Skill
    (they count as plain failures)."""
    return FAILURE if outcome in (CRITICAL_FAILURE, SUPER_CRITICAL_FAILURE) else outcome


def use_final_skill(
    level: int,
    posture: str | None,
    cost_kind: str,
    cost_points: int,
    light_points: int,
    dark_points: int,
    *,
    punchline: str,
) -> tuple[int, int]:
    """GC-S9/GC-L4/GC-P5: the Final Skill (at least 1 point, its punchline said) needs
    level 5 and a special posture (it is one of their powers), costs its light/dark points
    (409 when short) and ends the posture. Returns (light_points, dark_points) after the cost."""
    check_final_skill(cost_kind, cost_points, punchline)
    if level < 5:
        raise RuleError(f"the Final Skill unlocks at level 5 (level {level})", field="final_skill")
    if posture not in SPECIAL_POSTURES:
        raise RuleError("the Final Skill is used in Illumination or Sépulcrale (GC-P5/P6)", field="posture")
    have = light_points if cost_kind == "light" else dark_points
    if have < cost_points:
        raise InsufficientResource(
            f"the Final Skill costs {cost_points} {cost_kind} points; {have} left", field="final_skill"
        )
    if cost_kind == "light":
        return light_points - cost_points, dark_points
    return light_points, dark_points - cost_points


@dataclass(frozen=True)
class PostureEnd:
    """GC-P6/GC-P7: what ending a special posture does."""

    posture: str
    backlash: bool
    backlash_turns: int
    cannot_act: bool  # Illumination backlash: no action, dodge, parry nor speech
    acts_last: bool  # Sépulcrale backlash
    damage_multiplier: Fraction | None
    disadvantage_die: int | None
    disadvantage: str | None
    apocalypse: bool  # Sépulcrale without Revive: dies and comes back at 50% hp_max
    hp_after: int | None


def end_special_posture(
    dice: DiceSource,
    f: Fighter,
    turns_held: int,
    *,
    backlash_after: int = 2,
    backlash: float = 0.5,
) -> PostureEnd:
    """GC-P7: held more than 2 turns (`turns_held`: `fight.posture_length`) → backlash for 2 turns
    (Illumination: cannot act nor defend nor speak; Sépulcrale: acts last, damage x0.5, disadvantage d6).
    GC-P6 Apocalypse: a Sépulcrale ending without Revive kills and brings back at 50% hp_max (rounded up)."""
    if f.posture not in SPECIAL_POSTURES:
        raise RuleError("only Illumination and Sépulcrale end with a backlash", field="posture")
    hit = turns_held > backlash_after
    sep = f.posture == SEPULCRALE
    die = dice.roll(6, "disadvantage") if hit and sep else None
    apocalypse = sep and not f.revive_used
    return PostureEnd(
        posture=f.posture,
        backlash=hit,
        backlash_turns=2 if hit else 0,
        cannot_act=hit and not sep,
        acts_last=hit and sep,
        damage_multiplier=Fraction(backlash).limit_denominator(1000) if hit and sep else None,
        disadvantage_die=die,
        disadvantage=DISADVANTAGES[die] if die else None,
        apocalypse=apocalypse,
        hp_after=half_of(f.hp_max) if apocalypse else None,
    )
