"""Asgard in an encounter: vitality and heroism, turn order AS-C13, attacks AS-C1..C5, AS-C11,
AS-T6 cooperation, AS-T7 close skills, the GM's damage and AS-C5's rounds.

Table dice of `start`: each combatant's open perception test, 3d6, in the order
combatants were added (none for an NPC taking 11, AS-T8, nor for a GM
override), then the 1d6 roll-offs of the ties (AS-C13)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from app.kit.errors import Forbidden
from app.models.encounters import CombatAction, EncounterOptions
from app.models.fields import Id
from app.rules.errors import RuleError
from app.rulesets.asgard import schemas
from app.rulesets.asgard.rules import combat, hazards
from app.rulesets.asgard.rules import odds as exact
from app.rulesets.asgard.rules.combat import initiative_order
from app.rulesets.asgard.rules.core import (
    TestResult,
    TestSpec,
    resolve,
    roll_test,
    skill_key,
    skill_value,
    spend_heroism,
)
from app.rulesets.asgard.rules.steps import AsgardStep, ShownTest, step
from app.rulesets.asgard.schemas import AttackRequest as AsgardAttackRequest
from app.rulesets.asgard.schemas import Condition, Damage, Heal, Options, Sheet
from app.rulesets.contract.combat import (
    CombatDice,
    EncounterRules,
    Entrant,
    Exchange,
    ExchangeOdds,
    Initiative,
    Party,
    Pool,
    one_per_slot,
)


# Defined here, not in schemas.py: the OpenAPI document names a model of a ruleset's schemas
# `<Ruleset><Class>` (app/api/openapi_doc.py), and `HeroismRerollRequest` is its published name.
class HeroismRerollRequest(CombatAction):
    """AS-H2 (Decision) in an encounter: `actor_id` spends 1 heroism to roll its own test of the
    fight's latest action (`action_id`: its attack, or its defence) again: that action is undone
    and resolved again with the same choices and new dice (table dice: that action's, in its
    order), as this one action; once per action."""

    type: Literal["heroism_reroll"]
    action_id: Id = Field(description="The fight's latest action (else 409 naming it).")


# the sheet's first pool: a vitality left out is at its maximum, said once, by the Pool
VITALITY = Pool("vitality", "vitality", "vitality_max")


class Asgard(EncounterRules):
    ruleset = "asgard"
    Counters = schemas.Counters
    StartRequest = schemas.AsgardStartRequest
    pools = (VITALITY, Pool("heroism", "heroism", None))
    reactions = (
        "defense",
        "defense_heroism",
        "none",
    )  # AS-C1 opposition by a defense test (AS-H1: 4d6); none: unperceived
    default_reaction = "defense"
    take_11_rule = "AS-T8"
    out_at_zero = False  # AS-C5: at 0 vitality, the volonte test decides whether it is out
    dice_order = (
        "AS-C13 3d6 perception per combatant in the order added (none when taking 11 or given the GM's "
        "initiative), then 1d6 roll-offs"
    )

    naming_step_fields = ("members", "leader")  # AS-C11 a group, AS-T6 cooperation
    combat_actions: ClassVar[dict[str, type[CombatAction]]] = {
        "attack": AsgardAttackRequest,
        combat.HEROISM_REROLL: HeroismRerollRequest,
    }
    round_end_reads_sheets = True  # AS-C5: a state from a fire or asphyxia counts too (`adopt_states`)

    def action_models(self) -> dict[str, type[BaseModel]]:
        """The GM's `damage` takes dice (AS-C5's tests when vitality reaches 0)."""
        return {**super().action_models(), "heal": Heal, "damage": Damage}

    def involved(self, req: CombatAction) -> list[tuple[str, str]]:
        """AS-C4's second target, AS-C11's group and AS-T6's cooperating characters take part."""
        if not isinstance(req, AsgardAttackRequest):
            return []
        more = [(req.also_target_id, "also_target_id")] if req.also_target_id is not None else []
        return more + [(cid, "group") for cid in req.group] + [(cid, "cooperating") for cid in req.cooperating]

    def replays(self, req: CombatAction) -> str | None:
        """AS-H2: a heroism reroll resolves the fight's latest action again."""
        return req.action_id if isinstance(req, HeroismRerollRequest) else None

    def replay_body(self, req: CombatAction, logged: dict[str, Any]) -> dict[str, Any]:
        """AS-H2 (see `rules.combat.combat_reroll`): the logged attack's own request."""
        body, _ = combat.combat_reroll(logged, req.actor_id)
        return body

    def stopped(self, counters: dict[str, Any], sheet: Sheet, round_: int) -> AsgardStep | None:
        """AS-C11 / AS-T6: who attacked with a group or cooperated has no turn of its own left in
        that round (its slot passes)."""
        spent = counters.get(TURN_SPENT)
        if spent and spent.get("round") == round_:
            return {
                "rule": spent["rule"],
                "key": "acted_with_others_this_round_no_turn_of_its_own_left",
                "what": "acted with others this round: no turn of its own left",
            }
        return None

    def gm_damage(self, target: Party, pool: Pool, before: int, amount: int, round_: int) -> list[AsgardStep]:
        """AS-C5 (Decision): the GM's damage bringing vitality to 0 rolls the mal en point tests
        against 5 + the damage, as a blow does (only becoming mal en point tests)."""
        steps: list[AsgardStep] = []
        if pool.key == "vitality" and before > 0 and pool.value(target.sheet) == 0:
            mal_en_point(target, amount, steps, round_)
        return steps

    def _engage(self, x: Exchange) -> tuple[list[tuple[Party, str]], AttackChoice]:
        """The attack's targets (each with its reaction) and choices, its checks passed."""
        req: AsgardAttackRequest = x.req
        by_id = {p.id: p for p in x.more}
        if x.replaying is not None:
            _pay_the_reroll(x, [x.actor, *([x.target] if x.target else []), *x.more])
        targets = [(x.foe, x.foe_reaction)]
        if req.also_target_id is not None:
            second = by_id[req.also_target_id]
            targets.append((second, second.reaction))
        if req.take_11:
            _check_take_11(x)
        if req.defense_close_skill and not (x.by_gm or x.reaction_chosen):
            raise Forbidden(
                "only the GM, or who controls the target with the body's `reaction`, chooses its close skill (AS-T7)",
                field="defense_close_skill",
                code="owner_or_gm_only",
            )
        if req.group and req.cooperating:
            raise RuleError(
                "extras attack as a group (AS-C11), characters cooperate (AS-T6): not both at once", field="cooperating"
            )
        choice = AttackChoice(
            skill=req.skill,
            modifier=req.modifier,
            weapon=req.weapon,
            damage=req.damage,
            primes=tuple(req.primes),
            penalties=tuple(req.penalties),
            free_primes=tuple(req.free_primes),
            mandatory_penalties=tuple(req.mandatory_penalties),
            heroism_4d6=req.heroism_4d6,
            take_11=req.take_11,
            unperceived=req.unperceived,
            difficulty=req.difficulty,
            close_skill=req.close_skill,
            defense_close_skill=req.defense_close_skill,
            asset_dice=req.asset_dice,
        )
        return targets, choice

    def action_costs(self, type_: str, sheet: Sheet) -> dict[str, Any] | None:
        """AS-H1: the attack's 4th die (`heroism_4d6`) costs 1 heroism, and so does the target's
        heroic defense (`defense_heroism`, its own); AS-H2 a heroism reroll 1 heroism (AS-H6: never
        below zero)."""
        available = {"heroism": sheet.heroism}
        if type_ == "attack":
            return {"heroism_4d6": {"heroism": 1}, "available": available}
        if type_ == combat.HEROISM_REROLL:
            return {combat.HEROISM_REROLL: {"heroism": 1}, "available": available}
        return None

    def odds(self, x: Exchange) -> ExchangeOdds | None:
        """The exact odds of an attack on its `target_id` (AS-C1..C5, AS-C11, AS-T6, AS-H1,
        AS-C4; `attack_odds`); none for a heroism reroll (AS-H2), nor for a cooperation of more
        combinations than the odds count (`rules.odds.MAX_COOPERATIONS`)."""
        req = x.req
        if req.type != "attack" or x.replaying is not None:
            return None
        targets, choice = self._engage(x)
        by_id = {p.id: p for p in x.more}
        return attack_odds(
            x.actor,
            targets,
            choice,
            group=[by_id[cid] for cid in req.group],
            cooperating=[by_id[cid] for cid in req.cooperating],
            gm_difficulty=_options(x.campaign_options).gm_difficulty,
        )

    def attack(self, x: Exchange) -> None:
        """AS-C1..C5, AS-C11 (see `resolve_attack`)."""
        req: AsgardAttackRequest = x.req
        targets, choice = self._engage(x)
        by_id = {p.id: p for p in x.more}
        together = [by_id[cid] for cid in (*req.group, *req.cooperating)]
        steps = resolve_attack(
            x.dice,
            x.actor,
            targets,
            choice,
            group=[by_id[cid] for cid in req.group],
            cooperating=[by_id[cid] for cid in req.cooperating],
            gm_difficulty=_options(x.campaign_options).gm_difficulty,
            round_=x.round,
        )
        attack_test = next(st for st in steps if st["rule"] == "AS-C1" and st["what"] == "attack test")
        attack_test["request"] = req.model_dump(
            mode="json", exclude_defaults=True, exclude={"dice", "seed", "hidden", *combat.NAMED_ELSEWHERE}
        )
        x.steps.extend(steps)  # the request logged with the attack test: a heroism reroll resolves it again (AS-H2)
        if together:
            _share_the_turn(x, together, "AS-C11" if req.group else "AS-T6")

    def ticks_at_round_end(self, conditions: list[dict[str, Any]]) -> bool:
        return combat.counted(conditions)

    def round_ends(
        self, combatant_id: str, sheet: Sheet, conditions: list[dict[str, Any]], round_: int
    ) -> tuple[list[dict[str, Any]], list[AsgardStep]]:
        """AS-C5 (see `rules.combat.count_rounds`): the sheet's condition is the source of truth."""
        condition, kept, steps = combat.count_rounds(combatant_id, sheet.condition.model_dump(), conditions, round_)
        sheet.condition = Condition.model_validate(condition)
        return kept, steps

    def is_down(self, sheet: Sheet) -> bool:
        """AS-C5: dead, or unconscious (a sheet condition); "mal en point" alone still acts."""
        return sheet.condition.dead or bool(sheet.condition.unconscious_rounds)

    def roll_initiative(
        self, dice: CombatDice, entrants: list[Entrant], options: EncounterOptions, campaign_options: Any
    ) -> Initiative:
        """AS-C13 (Decision): an open `perception` test each (NPCs may take 11, AS-T8),
        highest result first; ties by the higher perception value, then 1d6 roll-offs."""
        if any(e.take_11 for e in entrants) and not _options(campaign_options).take_11_allowed:
            raise RuleError(
                "this campaign does not allow taking 11 (option take_11_allowed)",
                field="take_11",
                code="take_11_refused",
            )
        tests: list[tuple[str, TestResult]] = []
        steps: list[AsgardStep] = []
        for e in entrants:
            if e.take_11 and e.kind != "npc":
                raise RuleError("only NPCs take 11 (AS-T8)", field="take_11", code="take_11_refused")
            perception = skill_value(e.sheet.skills, "perception")
            spec = TestSpec(skill="perception", skill_value=perception, take_11=e.take_11)
            if e.override is not None:  # the GM's result replaces the test
                test = resolve(spec, (), natural=e.override - perception)
            else:
                test = roll_test(spec, dice.of(e.combatant_id), "initiative")
            tests.append((e.combatant_id, test))
            steps.append(
                {
                    "rule": "AS-C13",
                    "key": "open_perception_test",
                    "what": "open perception test",
                    "combatant_id": e.combatant_id,
                    "dice": list(test.dice),
                    "perception": perception,
                    "result": test.score,
                    "take_11": e.take_11,
                    "override": e.override is not None,
                }
            )
        ranked = initiative_order(tests, dice.source)
        for r in ranked:
            if r.roll_offs:
                steps.append(
                    {
                        "rule": "AS-C13",
                        "key": "tie_1d6_roll_off",
                        "what": "tie: 1d6 roll-off",
                        "combatant_id": r.combatant,
                        "d6": list(r.roll_offs),
                    }
                )
        order = one_per_slot([(r.combatant, r.test.score, _tiebreak(r)) for r in ranked])
        return Initiative(order=order, initiatives={r.combatant: r.test.score for r in ranked}, steps=steps)


def _tiebreak(r: combat.Initiative) -> dict[str, Any] | None:
    if not r.roll_offs:
        return None
    return {"die": "d6", "value": r.roll_offs[-1], "rolls": list(r.roll_offs)}


# --- attacks (AS-C1..C5, AS-C11, AS-H1) -------------------------------------------------------


@dataclass(frozen=True)
class AttackChoice:
    """The attacker's side of an attack: skill, weapon or damage expression, AS-C4's primes
    and penalties, AS-H1's heroism die, AS-T8's 11, an unperceived attack (AS-C1)."""

    skill: str = "combat"
    modifier: int = 0
    weapon: str | None = None
    damage: str | None = None
    primes: tuple[str, ...] = ()
    penalties: tuple[str, ...] = ()
    free_primes: tuple[str, ...] = ()
    mandatory_penalties: tuple[str, ...] = ()
    heroism_4d6: bool = False
    take_11: bool = False
    unperceived: bool = False
    difficulty: int | None = None
    close_skill: bool = False
    defense_close_skill: bool = False
    asset_dice: int = 0


HEROIC_DEFENSE = "defense_heroism"  # AS-H1 on the defense test: 4d6, the extra die also off the damage (AS-C3)
TURN_SPENT = "turn_spent"  # counters: the round a combatant acted in another's slot (AS-C11, AS-T6)


def _pay_the_reroll(x: Exchange, parties: list[Party]) -> None:
    """AS-H2: the spender pays 1 heroism (AS-H6: never below zero) for the action resolved again."""
    assert x.replaying is not None
    spender = next(p for p in parties if p.id == x.replaying["by"])
    before = _sheet(spender).heroism
    spender.sheet.heroism = spend_heroism(before, combat.REROLL_COST, "rolling a test again (AS-H2)", field="actor_id")
    x.steps.append(
        step(
            "AS-H2",
            "heroism spent: the action resolved again with new dice",
            key="heroism_spent_the_action_resolved_again_with_new_dice",
            combatant_id=spender.id,
            rerolls=x.replaying["action_id"],
            resource="heroism",
            before=before,
            after=spender.sheet.heroism,
        )
    )


def _share_the_turn(x: Exchange, together: list[Party], rule: str) -> None:
    """AS-C11 / AS-T6: those who acted with the actor lose their own slot of the round
    (`rules.combat.slots_lost`: one shared slot, the actor's)."""
    order = [e["combatant_id"] for e in sorted(x.order, key=lambda e: e["slot"])]
    order = list(dict.fromkeys([*order, x.actor.id, *(p.id for p in together)]))
    lost = set(combat.slots_lost(order, x.actor.id, [p.id for p in together]))
    for p in together:
        if p.id in lost:
            p.counters[TURN_SPENT] = {"round": x.round, "rule": rule}  # naming no one (a hidden actor)
    x.steps.append(
        step(
            rule,
            "one shared turn: the others' own turns of this round pass",
            key="one_shared_turn_the_others_own_turns_of_this_round_pass",
            members=[p.id for p in together],
        )
    )


def _options(parsed: Any) -> Options:
    """The campaign's options the flow parsed once (AS-C1 `gm_difficulty`, AS-T8 `take_11_allowed`)."""
    assert isinstance(parsed, Options)
    return parsed


def _check_take_11(x: Exchange) -> None:
    """AS-T8: only the GM, only for an NPC, never with 4d6, where the campaign allows it."""
    if x.actor.kind != "npc":
        raise RuleError("only NPCs take 11 (AS-T8)", field="take_11", code="take_11_refused")
    if not x.by_gm:
        raise Forbidden("only the GM may have an NPC take 11 (AS-T8)", field="take_11", code="gm_only")
    if not _options(x.campaign_options).take_11_allowed:
        raise RuleError(
            "this campaign does not allow taking 11 (option take_11_allowed)", field="take_11", code="take_11_refused"
        )
    if x.req.heroism_4d6:
        raise RuleError(
            "an NPC taking 11 rolls no dice: heroism_4d6 does not apply", field="heroism_4d6", code="take_11_refused"
        )


@dataclass(frozen=True)
class Engaged:
    """An attack before its first die (AS-C4, AS-C11, AS-C1, AS-H1/H6, AS-C2): what its tests and
    damage read, for `resolve_attack` and its exact odds alike."""

    effects: combat.PrimeEffects
    bonus: int
    reactions: list[tuple[Party, str, str | None]]
    dice_count: int
    constant: int
    weapon: str | None
    spec: TestSpec


def engage(
    attacker: Party,
    targets: list[tuple[Party, str]],
    choice: AttackChoice,
    group: Sequence[Party],
    steps: list[AsgardStep],
) -> Engaged:
    """The primes and penalties, the group's bonus, each target's reaction (a heroic defense
    without heroism refused before any die), the weapon, the attacker's heroism die spent and
    its attack test's spec."""
    effects = combat.prime_effects(
        combat.Primes(choice.primes, choice.penalties, choice.free_primes, choice.mandatory_penalties)
    )
    combat.check_targets(effects, len(targets))
    if choice.primes or choice.penalties or choice.free_primes or choice.mandatory_penalties:
        steps.append(
            {
                "rule": "AS-C4",
                "key": "primes_and_penalties",
                "what": "primes and penalties",
                "combatant_id": attacker.id,
                "primes": list(choice.primes + choice.free_primes),
                "penalties": list(choice.penalties + choice.mandatory_penalties),
                "action_bonus": effects.action_bonus,
                "halvings": effects.halvings,
                "prudence_tests": effects.prudence_tests,
                "danger_tests": effects.danger_tests,
            }
        )
    bonus = _group_bonus(attacker, group, steps)
    reactions = [
        (
            target,
            *combat.defense_reaction(
                reaction, unperceived=choice.unperceived, condition=_sheet(target).condition.model_dump()
            ),
        )
        for target, reaction in targets
    ]
    for target, reaction, _ in reactions:  # AS-H6: refused before any die is rolled
        if reaction == HEROIC_DEFENSE:
            spend_heroism(
                _sheet(target).heroism,
                1,
                f"the heroic defense of combatant {target.id} (AS-H1; AS-H6: never below zero, never a plain one)",
                field="reaction",
            )
    dice_count, constant, weapon = _weapon(attacker.sheet, choice)
    if choice.heroism_4d6:
        _spend_heroism(attacker, steps, "the heroism die of the attack (AS-H1)", "heroism_4d6")
    skills = _sheet(attacker).skills
    spec = TestSpec(
        skill=skill_key(choice.skill),
        skill_value=skill_value(skills, choice.skill),
        modifier=choice.modifier + effects.action_bonus + bonus,
        heroism_4d6=choice.heroism_4d6,
        close_skill=choice.close_skill,
        confrontation=True,
        take_11=choice.take_11,
    )
    return Engaged(effects, bonus, reactions, dice_count, constant, weapon, spec)


def resolve_attack(
    dice: CombatDice,
    attacker: Party,
    targets: list[tuple[Party, str]],
    choice: AttackChoice,
    *,
    group: Sequence[Party] = (),
    cooperating: Sequence[Party] = (),
    gm_difficulty: int = combat.UNPERCEIVED_DIFFICULTY,
    round_: int = 1,
) -> list[AsgardStep]:
    """One Asgard attack, in rule order; changes the fighters (copies) and returns the steps.

    AS-C4 primes and penalties (`attaques_multiples`: exactly two targets, one test); AS-C11
    a group of extras (one test, +1 per other member, to the test and the damage); AS-H1 the
    attacker's heroism die; AS-C1 the attack test, then each target's defense test (its
    standing reaction: `defense`, `defense_heroism` — 4d6 for 1 heroism — or `none`: an
    unperceived attack, combat ≥ the GM's difficulty), AS-C4 prudence/danger on that test;
    AS-C2 damage from the attack's dice (+ heroism die, extra d6 beyond three, group bonus);
    AS-C3 protection and the defender's heroism die; AS-C4 halvings; vitality (never below 0);
    AS-C5 "mal en point" tests when vitality reaches 0 (dying and unconscious conditions).
    AS-T6 cooperating characters: each makes its attack test, the best leads (its dice and
    weapon deal the damage), +1/−1 per other result. AS-T7 a close skill: −5 on that test.
    AS-C1 a target that cannot perceive (unconscious, dying) does not defend. AS-H6 a heroic
    defense without heroism is refused before any die is rolled.
    Dice: attack 3d6 [+d6 heroism], each cooperating character's 3d6, each defense 3d6 [+d6],
    damage d6 beyond three then the asset's d6, then each target's AS-C5 dice (resistance 3d6
    [1d6], volonte 3d6 [2d6])."""
    steps: list[AsgardStep] = []
    e = engage(attacker, targets, choice, group, steps)
    effects, bonus, reactions, dice_count, constant, weapon, spec = (
        e.effects,
        e.bonus,
        e.reactions,
        e.dice_count,
        e.constant,
        e.weapon,
        e.spec,
    )
    attack = roll_test(spec, dice.of(attacker.id), "attack")
    steps.append(
        {"rule": "AS-C1", "key": "attack_test", "what": "attack test", "combatant_id": attacker.id, **_test(attack)}
    )
    if cooperating:
        attack, dice_count, constant, weapon = _cooperate(dice, attacker, attack, cooperating, choice, steps)
    exchanges = [
        _defend(
            dice,
            attack,
            target,
            reaction,
            steps,
            choice.difficulty if choice.difficulty is not None else gm_difficulty,
            why=why,
            close_skill=choice.defense_close_skill,
        )
        for target, reaction, why in reactions
    ]
    hits = [(target, defense) for target, defense, hit in exchanges if hit]
    if hits:
        damage = combat.attack_damage(
            attack, dice_count, dice.of(attacker.id), asset_dice=choice.asset_dice, bonus=bonus + constant
        )
        steps.append(
            {
                "rule": "AS-C2",
                "key": "damage",
                "what": "damage",
                "combatant_id": attacker.id,
                "weapon": weapon,
                "damage_dice": dice_count,
                "read_dice": list(damage.weapon_dice),
                "extra_dice": list(damage.extra_dice),
                "asset_dice": choice.asset_dice,
                "heroism_die": damage.heroism_die,
                "group_bonus": bonus,
                "constant": constant,
                "damage": max(0, damage.total),
            }
        )
        for target, defense in hits:
            _harm(dice, target, damage.total, defense, effects, steps, round_)
    for name, count in (("prudence", effects.prudence_tests), ("danger", effects.danger_tests)):
        if count:
            attacker.counters[name] = int(attacker.counters.get(name) or 0) + count
    return steps


def _group_bonus(attacker: Party, group: Sequence[Party], steps: list[AsgardStep]) -> int:
    """AS-C11: extras (`figurant`) act in groups of up to 5: +1 per other member."""
    if not group:
        return 0
    members = [attacker, *group]
    bonus = combat.check_group([(m.id, _sheet(m).tier, COMBAT.is_down(m.sheet)) for m in members])
    steps.append(
        {
            "rule": "AS-C11",
            "key": "group_of_extras_one_test",
            "what": "group of extras: one test",
            "combatant_id": attacker.id,
            "members": [m.id for m in members],
            "bonus": bonus,
        }
    )
    return bonus


def _cooperate(
    dice: CombatDice,
    attacker: Party,
    own: Any,
    cooperating: Sequence[Party],
    choice: AttackChoice,
    steps: list[AsgardStep],
) -> tuple[Any, int, int, str | None]:
    """AS-T6: each cooperating character's attack test (its own skill value), after the actor's;
    the best result leads (`rules.combat.cooperative_attack`): (the group's attack test, and the
    leader's weapon: d6 count, constant, name)."""
    for p in cooperating:
        if COMBAT.is_down(p.sheet):
            raise RuleError(
                f"combatant {p.id} is down: it does not act (AS-T6)", field="cooperating", code="member_down"
            )
    results = [own]
    for p in cooperating:
        results.append(roll_test(_cooperating_spec(p, choice), dice.of(p.id), "attack"))
        steps.append(
            {
                "rule": "AS-T6",
                "key": "cooperating_attack_test",
                "what": "cooperating attack test",
                "combatant_id": p.id,
                **_test(results[-1]),
            }
        )
    group, attack = combat.cooperative_attack(tuple(results))
    members = [attacker, *cooperating]
    leader = members[group.leader]
    if leader is attacker:
        count, constant, weapon = _weapon(attacker.sheet, choice)
    else:
        count, constant, weapon = _weapon(leader.sheet, AttackChoice())  # its own first weapon
    steps.append(
        {
            "rule": "AS-T6",
            "key": "cooperation_the_best_result_leads",
            "what": "cooperation: the best result leads",
            "combatant_id": attacker.id,
            "members": [m.id for m in members],
            "leader": leader.id,
            "adjustments": list(group.adjustments),
            "score": attack.score,
        }
    )
    return attack, count, constant, weapon


def _cooperating_spec(p: Party, choice: AttackChoice) -> TestSpec:
    """AS-T6: a cooperating character's attack test: the action's skill, its own value."""
    return TestSpec(
        skill=skill_key(choice.skill),
        skill_value=skill_value(_sheet(p).skills, choice.skill, field="cooperating"),
        confrontation=True,
    )


def _cooperating(cooperating: Sequence[Party], choice: AttackChoice) -> list[tuple[TestSpec, tuple[int, int]]]:
    """AS-T6: each cooperating character's test and weapon (d6 count, constant: its own first
    weapon, which deals the damage when it leads, as `_cooperate` reads it)."""
    return [(_cooperating_spec(p, choice), _weapon(p.sheet, AttackChoice())[:2]) for p in cooperating]


def _weapon(sheet: Sheet, choice: AttackChoice) -> tuple[int, int, str | None]:
    """AS-C2: (d6 count, constant, weapon name): the named weapon of the sheet, a damage
    expression, or the sheet's first weapon."""
    if choice.weapon is not None and choice.damage is not None:
        raise RuleError("give `weapon` or `damage`, not both", field="damage")
    if choice.damage is not None:
        count, constant = combat.damage_expression(choice.damage)
        return count, constant, None
    weapons = sheet.weapons
    if choice.weapon is None:
        if not weapons:
            raise RuleError(
                "the attacker has no weapon on its sheet: name a `damage` expression (AS-C2)", field="weapon"
            )
        return weapons[0].damage_dice, 0, weapons[0].name
    for w in weapons:
        if w.name == choice.weapon:
            return w.damage_dice, 0, w.name
    raise RuleError(
        f"no weapon {choice.weapon!r} on the attacker's sheet; it has {', '.join(w.name for w in weapons) or 'none'}",
        field="weapon",
        code="unknown_name",
    )


def _spend_heroism(f: Party, steps: list[AsgardStep], what: str, field_: str) -> None:
    before = _sheet(f).heroism
    f.sheet.heroism = spend_heroism(before, 1, what, field=field_)
    steps.append(
        {
            "rule": "AS-H1",
            "key": "heroism_spent_a_4th_die",
            "what": "heroism spent: a 4th die",
            "combatant_id": f.id,
            "resource": "heroism",
            "before": before,
            "after": f.sheet.heroism,
        }
    )


def _defend(
    dice: CombatDice,
    attack: TestResult,
    target: Party,
    reaction: str,
    steps: list[AsgardStep],
    difficulty: int,
    *,
    why: str | None = None,
    close_skill: bool = False,
) -> tuple[Party, TestResult | None, bool]:
    """AS-C1: the target's defense test (AS-C4 prudence/danger on it, AS-T7 −5 for a close
    skill) and the opposition; `none`: an unperceived attack, or a target that cannot perceive
    (`why`: unconscious, dying), no defense, combat ≥ the GM's difficulty."""
    if reaction == "none":
        result = combat.resolve_attack(attack, None, difficulty=difficulty)
        if why not in (None, "unperceived"):
            steps.append(
                {
                    "rule": "AS-C1",
                    "key": "it_does_not_perceive",
                    "what": f"{why}: it does not perceive",
                    "combatant_id": target.id,
                }
            )
        steps.append(
            {
                "rule": "AS-C1",
                "key": "unperceived_attack_no_defense",
                "what": "unperceived attack: no defense",
                "combatant_id": target.id,
                "difficulty": difficulty,
                "score": attack.score,
                "automatic": attack.automatic,
                "hit": result.hit,
            }
        )
        return target, None, result.hit
    prudence, danger = int(target.counters.get("prudence") or 0), int(target.counters.get("danger") or 0)
    modifier, prudence_left, danger_left = combat.next_defense(prudence, danger)
    if prudence or danger:
        for name, left in (("prudence", prudence_left), ("danger", danger_left)):
            if left:
                target.counters[name] = left
            else:
                target.counters.pop(name, None)
        steps.append(
            {
                "rule": "AS-C4",
                "key": "prudence_danger_on_this_defense_test",
                "what": "prudence / danger on this defense test",
                "combatant_id": target.id,
                "modifier": modifier,
                "prudence_left": prudence_left,
                "danger_left": danger_left,
            }
        )
    heroic = reaction == HEROIC_DEFENSE  # affordable: checked before any die (AS-H6)
    if heroic:
        _spend_heroism(target, steps, "the heroism die of the defense (AS-H1)", "reaction")
    defense = roll_test(_defense_spec(target, modifier, heroic, close_skill), dice.of(target.id), "defense")
    result = combat.resolve_attack(attack, defense)
    steps.append(
        {"rule": "AS-C1", "key": "defense_test", "what": "defense test", "combatant_id": target.id, **_test(defense)}
    )
    steps.append(
        {
            "rule": "AS-T9",
            "key": "opposition",
            "what": "opposition",
            "combatant_id": target.id,
            "attack": attack.score,
            "defense": defense.score,
            "winner": "attacker" if result.hit else "defender",
            "decided_by": result.opposition.decided_by if result.opposition else None,
            "hit": result.hit,
        }
    )
    return target, defense, result.hit


def _defense_spec(target: Party, modifier: int, heroic: bool, close_skill: bool) -> TestSpec:
    """AS-C1: the target's defense test (AS-C4's modifier, AS-H1 4d6, AS-T7 a close skill)."""
    return TestSpec(
        skill="defense",
        skill_value=skill_value(_sheet(target).skills, "defense"),
        modifier=modifier,
        heroism_4d6=heroic,
        close_skill=close_skill,
        confrontation=True,
    )


def attack_odds(
    attacker: Party,
    targets: list[tuple[Party, str]],
    choice: AttackChoice,
    *,
    group: Sequence[Party] = (),
    cooperating: Sequence[Party] = (),
    gm_difficulty: int = combat.UNPERCEIVED_DIFFICULTY,
) -> ExchangeOdds | None:
    """The exact odds of `resolve_attack` on its first target (`rules.odds.attack_odds`), from the
    same engaged attack: its test's spec, the target's reaction and defense spec (AS-C4 prudence /
    danger as `_defend` reads them), the weapon, the protection, vitality and volonte (AS-C5);
    AS-T6 each cooperating character's test and weapon (`_cooperating`). None beyond the
    cooperations the odds count."""
    e = engage(attacker, targets, choice, group, [])
    target, reaction, _ = e.reactions[0]
    sheet = _sheet(target)
    defense = None
    if reaction != "none":
        prudence, danger = int(target.counters.get("prudence") or 0), int(target.counters.get("danger") or 0)
        modifier, _, _ = combat.next_defense(prudence, danger)
        defense = _defense_spec(target, modifier, reaction == HEROIC_DEFENSE, choice.defense_close_skill)
    try:
        others = _cooperating(cooperating, choice)
    except RuleError:  # a character without a weapon: the action refuses the dice where it leads
        return None
    try:
        odds = exact.attack_odds(
            e.spec,
            weapon=(e.dice_count, e.constant),
            bonus=e.bonus,
            cooperating=others,
            asset_dice=choice.asset_dice,
            defense=defense,
            difficulty=choice.difficulty if choice.difficulty is not None else gm_difficulty,
            protection=sheet.protection,
            effects=e.effects,
            vitality=VITALITY.value(sheet),
            volonte=skill_value(sheet.skills, "volonte"),
        )
    except exact.TooMany:
        return None
    out = Fraction(0) if COMBAT.is_down(sheet) else odds.out  # out already: this action does not put it out
    return ExchangeOdds(outcomes=odds.outcomes, hit=odds.hit, down=odds.down, out=out)


def _harm(
    dice: CombatDice,
    target: Party,
    damage: int,
    defense: TestResult | None,
    effects: combat.PrimeEffects,
    steps: list[AsgardStep],
    round_: int,
) -> None:
    """AS-C3 protection (and the defender's heroism die), AS-C4 halvings, vitality, AS-C5."""
    protection = _sheet(target).protection
    taken = combat.damage_taken(damage, protection, defense=defense)
    steps.append(
        {
            "rule": "AS-C3",
            "key": "protection",
            "what": "protection",
            "combatant_id": target.id,
            "damage": max(0, damage),
            "protection": protection,
            "heroism_die": defense.heroism_die if defense is not None else None,
            "taken": taken,
        }
    )
    final = combat.final_damage(taken, effects)
    if effects.halvings:
        steps.append(
            {
                "rule": "AS-C4",
                "key": "damage_halved_rounded_up",
                "what": "damage halved, rounded up",
                "combatant_id": target.id,
                "halvings": effects.halvings,
                "before": taken,
                "after": final,
            }
        )
    before = VITALITY.value(target.sheet)
    after = hazards.take_damage(before, final)
    target.sheet.vitality = after
    steps.append(
        {
            "rule": "AS-C3",
            "key": "vitality",
            "what": "vitality",
            "combatant_id": target.id,
            "damage": final,
            "resource": "vitality",
            "before": before,
            "after": after,
        }
    )
    if before > 0 and after == 0:
        mal_en_point(target, final, steps, round_)


def mal_en_point(target: Party, damage: int, steps: list[AsgardStep], round_: int) -> None:
    """AS-C5: resistance/(5 + damage) failed → dying, dies at the end of the 1d6-th next
    round; volonte/(5 + damage) failed → unconscious for 2d6 rounds. Both are the sheet's
    `condition` (the source of truth) shown as conditions of the combatant, counted at the end
    of each round after this one (`rules.combat.count_rounds`), whether or not their bearer acts."""
    skills = _sheet(target).skills
    checks = hazards.mal_en_point(
        skill_value(skills, "resistance"), skill_value(skills, "volonte"), damage, target.dice
    )
    condition, target.conditions = combat.mal_en_point_conditions(
        _sheet(target).condition.model_dump(),
        target.conditions,
        dies_in_rounds=checks.dies_in_rounds if checks.dying else None,
        unconscious_rounds=checks.unconscious_rounds,
        round_=round_,
    )
    target.sheet.condition = Condition.model_validate(condition)
    steps.append(
        {
            "rule": "AS-C5",
            "key": "mal_en_point",
            "what": "mal en point",
            "combatant_id": target.id,
            "difficulty": hazards.MAL_EN_POINT_BASE + max(0, damage),
            "resistance": _test(checks.resistance),
            "dying": checks.dying,
            "dies_in_rounds": checks.dies_in_rounds,
            "volonte": _test(checks.volonte),
            "unconscious_rounds": checks.unconscious_rounds,
        }
    )


def _test(t: TestResult) -> ShownTest:
    return {
        "skill": t.spec.skill,
        "skill_value": t.spec.skill_value,
        "modifier": t.spec.modifier,
        "dice": list(t.dice),
        "take_11": t.spec.take_11,
        "close_skill": t.spec.close_skill,
        "score": t.score,
        "target": t.target,
        "automatic": t.automatic,
        "outcome": t.outcome,
    }


COMBAT = Asgard()


def _sheet(party: Party) -> Sheet:
    """The party's sheet, this ruleset's model (the flow parsed it: `Party.sheet`)."""
    return party.sheet
