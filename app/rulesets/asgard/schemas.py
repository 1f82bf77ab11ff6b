"""Pydantic schemas of the `asgard` ruleset: sheet (AS-S1..S4), options, request bodies."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, field_validator, model_validator

from app.kit.models import CampaignOptions, RollingRequest, Strict, TestRequestBase
from app.models import encounters, fight_state
from app.models.fields import Id
from app.models.governance import governed
from app.models.odds import NothingRolled
from app.rulesets.asgard.rules.core import DIFFICULTIES, skill_key

DifficultyName = Literal["facile", "moyen", "difficile", "heroique", "automatique"]
SkillName = str


class SheetPart(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Weapon(SheetPart):
    """AS-S2: a weapon deals 1d6..3d6 read from the attack's dice (AS-C2)."""

    name: str = Field(min_length=1, max_length=100)
    damage_dice: StrictInt = Field(ge=1, le=3, description="Damage dice read from the attack test (AS-C2).")
    ranged: StrictBool = False


class Asset(SheetPart):
    """AS-S2: an atout, free text with an optional heroic effect (AS-H3)."""

    name: str = Field(min_length=1, max_length=200)
    description: str = Field("", max_length=2000)
    heroic_effect: str | None = Field(None, max_length=2000)


class Condition(SheetPart):
    """State after AS-C5 ("mal en point"): dying countdown, unconsciousness."""

    dying: StrictBool = Field(False, description="Failed the resistance check of AS-C5.")
    dies_in_rounds: StrictInt | None = Field(None, ge=0, le=6, description="Dies at the end of this many rounds (1d6).")
    unconscious_rounds: StrictInt | None = Field(
        None, ge=0, le=12, description="Unconscious for this many rounds (2d6)."
    )
    dead: StrictBool = False


class Sheet(SheetPart):
    """AS-S4 sheet JSON. Skill names are stored lower case without accents."""

    skills: dict[str, StrictInt] = Field(
        default_factory=dict,
        description="AS-S1 skill values (typically +2..+10).",
        json_schema_extra=governed(at_creation=True),
    )
    vitality: StrictInt | None = Field(
        None, ge=0, le=10_000, description="Defaults to vitality_max.", json_schema_extra=governed(at_creation=True)
    )
    vitality_max: StrictInt = Field(ge=1, le=10_000, json_schema_extra=governed(at_creation=True))
    heroism: StrictInt = Field(
        0, ge=0, le=1000, description="AS-H1..H5: spent by the rules.", json_schema_extra=governed(at_creation=True)
    )
    protection: StrictInt = Field(0, ge=0, le=100)
    weapons: list[Weapon] = Field(default_factory=list, max_length=50)
    assets: list[Asset] = Field(default_factory=list, max_length=100)
    tier: Literal["boss", "second_couteau", "figurant"] | None = Field(
        None, description="AS-S3 NPC tier.", json_schema_extra=governed()
    )
    condition: Condition = Field(
        default_factory=Condition, description="AS-C5/C6: set by the rules.", json_schema_extra=governed()
    )

    @field_validator("skills", mode="before")
    @classmethod
    def _skill_names(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        out: dict = {}
        for name, v in value.items():
            key = skill_key(str(name))
            if not key or len(key) > 60 or not key.replace("_", "").isalnum():
                raise ValueError(f"invalid skill name {name!r}")
            if key in out:
                raise ValueError(f"skill {name!r} given twice")
            out[key] = v
        return out

    @field_validator("skills")
    @classmethod
    def _skill_values(cls, value: dict[str, int]) -> dict[str, int]:
        for name, v in value.items():
            if not -20 <= v <= 50:
                raise ValueError(f"skill {name!r} is {v}: between -20 and 50 allowed")
        if len(value) > 100:
            raise ValueError("at most 100 skills")
        return value

    @field_validator("assets", mode="before")
    @classmethod
    def _asset_text(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"name": a} if isinstance(a, str) else a for a in value]
        return value

    @model_validator(mode="after")
    def _vitality(self) -> Self:
        if self.vitality is None:
            self.vitality = self.vitality_max
        if self.vitality > self.vitality_max:
            raise ValueError(f"vitality {self.vitality} is above vitality_max {self.vitality_max}")
        return self


class Options(CampaignOptions):
    """Campaign options of `asgard`."""

    gm_difficulty: StrictInt = Field(
        10,
        ge=0,
        le=100,
        description="Default GM difficulty of first aid, healing and unperceived attacks (AS-C1, C6, C7).",
    )
    take_11_allowed: StrictBool = Field(True, description="The GM may have NPCs take 11 (AS-T8).")


_Aimed = TypeVar("_Aimed", "TestRequest", "GroupRequest")  # a test naming a difficulty or a target


def _one_target(model: _Aimed) -> _Aimed:
    if model.difficulty is not None and model.target is not None:
        raise ValueError("give `difficulty` or `target`, not both")
    return model


class TestRequest(TestRequestBase):
    """A test: no difficulty and no target = an open test (AS-T5)."""

    skill: SkillName = Field(min_length=1, max_length=60)
    difficulty: DifficultyName | None = Field(None, description="AS-T2; `automatique` = success, no test.")
    target: StrictInt | None = Field(None, ge=-100, le=200)
    heroism_4d6: StrictBool = Field(False, description="AS-H1: spend 1 heroism to roll 4d6.")
    close_skill: StrictBool = Field(
        False, description="AS-T7: a close skill replaces the required one (+5 difficulty)."
    )
    retry_of: Id | None = Field(
        None,
        description="AS-T4: id of the failed test retried; it rolls only when its exact chance of success is "
        "higher than the failed attempts' (a new asset or better circumstances: a `modifier`), "
        "else it fails automatically.",
    )
    take_11: StrictBool = Field(False, description="AS-T8: an NPC takes 11 instead of rolling (GM only).")

    _check = model_validator(mode="after")(_one_target)


class OddsRequest(NothingRolled, TestRequest):
    """The same test's exact odds (`POST …/tests/odds`): nothing rolled nor logged, so no `seed`, `dice` or `hidden`."""


class RerollRequest(RollingRequest):
    """AS-H2: cancel the character's latest entry — a test, an opposition (its own side is
    rolled again) or a cooperation (the whole group test) — and roll it again (1 heroism).
    A test rolled with 4d6 is rolled with 4d6 again, not paid again. Table dice (`dice`): the
    test's, this character's side's, or every participant's in order (their own `dice` of the
    cooperation do not apply again)."""

    heroism_4d6: StrictBool = Field(
        False, description="AS-H1 on the new roll when the test had 3d6 (1 more heroism point)."
    )


class Side(Strict):
    """One side of an opposition (AS-T9)."""

    character_id: Id
    skill: SkillName = Field(min_length=1, max_length=60)
    modifier: StrictInt = Field(0, ge=-1000, le=1000)
    heroism_4d6: StrictBool = False
    close_skill: StrictBool = Field(False, description="AS-T7: −5 to the result in a confrontation.")
    take_11: StrictBool = False


class OpposedRequest(RollingRequest):
    """AS-T9: `a` acts, `b` defends (or is the status quo): ties go to `b`.
    Table dice are consumed a's then b's."""

    a: Side
    b: Side


class Participant(Strict):
    character_id: Id
    skill: SkillName | None = Field(None, min_length=1, max_length=60, description="Defaults to the group's skill.")
    modifier: StrictInt = Field(0, ge=-1000, le=1000)
    heroism_4d6: StrictBool = False
    close_skill: StrictBool = False
    take_11: StrictBool = False
    dice: list[StrictInt] | None = Field(None, max_length=10, description="This participant's own table dice.")


class GroupRequest(RollingRequest):
    """AS-T6 cooperation: every participant tests; the best leads, ±1 per other."""

    mode: Literal["cooperation"] = "cooperation"
    skill: SkillName = Field(min_length=1, max_length=60)
    difficulty: DifficultyName | None = None
    target: StrictInt | None = Field(None, ge=-100, le=200)
    modifier: StrictInt = Field(0, ge=-1000, le=1000, description="Added to the leader's result.")
    participants: list[Participant] = Field(min_length=1, max_length=20)

    _check = model_validator(mode="after")(_one_target)

    @model_validator(mode="after")
    def _distinct(self) -> Self:
        ids = [p.character_id for p in self.participants]
        if len(set(ids)) != len(ids):
            raise ValueError("a character cooperates only once")
        return self


__all__ = [
    "Sheet",
    "Options",
    "TestRequest",
    "OddsRequest",
    "RerollRequest",
    "OpposedRequest",
    "GroupRequest",
    "Side",
    "Participant",
    "Weapon",
    "Asset",
    "Condition",
    "DIFFICULTIES",
]


# --- character actions (POST /v1/characters/{id}/actions) ----------------------


class FallAction(RollingRequest):
    """AS-C8: 1d6 per full 3 m; acrobatie/15 cancels one, a deliberate jump's acrobatie/10 one more."""

    type: Literal["fall"]
    metres: StrictFloat = Field(ge=0, le=10_000)
    voluntary: StrictBool = False


class FireAction(RollingRequest):
    """AS-C9: damage per round in a fire."""

    type: Literal["fire"]
    size: Literal["torch", "campfire", "blaze"]
    rounds: StrictInt = Field(1, ge=1, le=100)


class AsphyxiaAction(RollingRequest):
    """AS-C10: `rounds` rounds without air, starting at round `from_round` of the apnea."""

    type: Literal["asphyxia"]
    rounds: StrictInt = Field(ge=1, le=500)
    from_round: StrictInt = Field(1, ge=1, le=10_000)
    out_of_breath: StrictBool = Field(False, description="A resistance test already failed earlier.")


class DamageAction(RollingRequest):
    """Damage announced by the GM (AS-C3); reaching 0 vitality rolls the AS-C5 checks."""

    type: Literal["damage"]
    amount: StrictInt = Field(ge=0, le=10_000)
    protection: StrictBool = Field(False, description="Subtract the sheet's protection (an attack, AS-C3).")


class MalEnPointAction(RollingRequest):
    """AS-C5 checks for a character at 0 vitality, against 5 + the damage that put it there."""

    type: Literal["mal_en_point"]
    damage: StrictInt = Field(ge=0, le=10_000)


class FirstAidAction(RollingRequest):
    """AS-C6, posted on the patient: the healer's soins test (own soins when healer_soins is absent)."""

    type: Literal["first_aid"]
    healer_soins: StrictInt | None = Field(None, ge=-20, le=50)
    healer_id: Id | None = Field(None, description="Recorded only.")
    target: StrictInt | None = Field(None, ge=0, le=200, description="GM difficulty; default option gm_difficulty.")
    modifier: StrictInt = Field(0, ge=-1000, le=1000)


class RestAction(RollingRequest):
    """AS-C7: a full day or night of rest, optionally with a healer's soins test."""

    type: Literal["rest"]
    healer_soins: StrictInt | None = Field(None, ge=-20, le=50)
    healer_id: Id | None = Field(None, description="Recorded only.")
    target: StrictInt | None = Field(None, ge=0, le=200, description="The healer's difficulty; default gm_difficulty.")


class ChaseAction(RollingRequest):
    """AS-C12: one chase turn, an open test moving the progression by the degree reached."""

    type: Literal["chase"]
    mode: Literal["foot", "vehicle", "mount"]
    progression: StrictInt = Field(0, ge=-10_000, le=10_000)
    modifier: StrictInt = Field(0, ge=-1000, le=1000)
    heroism_4d6: StrictBool = False
    close_skill: StrictBool = False
    take_11: StrictBool = False


class HeroicEffectAction(RollingRequest):
    """AS-H3: spend 1 heroism to trigger an asset's heroic effect."""

    type: Literal["heroic_effect"]
    asset: str = Field(min_length=1, max_length=200)


class CancelDamageAction(RollingRequest):
    """AS-H4: spend 2 heroism to cancel damage the GM just announced; `already_applied`
    gives the vitality back."""

    type: Literal["cancel_damage"]
    damage: StrictInt = Field(ge=0, le=10_000)
    already_applied: StrictBool = Field(
        False,
        description="AS-H4: the damage was applied already: exactly what that blow took is given back (never "
        "more than `damage`, never above the vitality before it). Without `damage_id`, the blow is the "
        "character's latest vitality change, which must be a blow (else 422).",
    )
    damage_id: Id | None = Field(
        None,
        description="AS-H4: the log entry of the blow already applied (a character action, an encounter action): "
        "exactly the vitality it took is given back, never more (implies already_applied).",
    )


class ProtectAllyAction(RollingRequest):
    """AS-H5: spend 1 heroism to take the damage meant for a nearby ally."""

    type: Literal["protect_ally"]
    ally_id: Id
    damage: StrictInt = Field(ge=0, le=10_000)
    protection: StrictBool = Field(False, description="Subtract this character's protection (an attack, AS-C3).")


# --- encounter request bodies (combat.py) ---------------------------------
Prime = Literal["attaques_multiples", "efficacite", "prudence"]
Penalty = Literal["blessure_legere", "danger"]


class AsgardStartRequest(encounters.StartRequestBase):
    take_11: list[Id] = Field(
        default_factory=list,
        max_length=encounters.MAX_COMBATANTS,
        description="asgard: NPC combatants taking 11 on their perception test (AS-T8, AS-C13).",
    )

    def npcs_taking_11(self) -> list[str]:
        return self.take_11


class AttackRequest(encounters.AttackRequest):
    """AS-C1..C5, AS-C11: table dice in rule order: the attack test (3d6, a 4th die with
    `heroism_4d6`), each target's defense test (3d6, a 4th with the `defense_heroism`
    reaction), the weapon's d6 beyond three, then each target's AS-C5 tests when its vitality
    reaches 0 (resistance 3d6 [1d6 dying rounds], volonte 3d6 [2d6 unconscious rounds])."""

    skill: str = Field("combat", min_length=1, max_length=60, description="AS-C1: the attack skill.")
    modifier: StrictInt = Field(0, ge=-100, le=100, description="Other modifiers of the attack test.")
    primes: list[Prime] = Field(
        default_factory=list, max_length=1, description="AS-C4: one prime bought this action, paid with one penalty."
    )
    penalties: list[Penalty] = Field(default_factory=list, max_length=1, description="AS-C4: the penalty paying it.")
    free_primes: list[Prime] = Field(
        default_factory=list, max_length=5, description="AS-C4: primes the circumstances give for free."
    )
    mandatory_penalties: list[Penalty] = Field(
        default_factory=list, max_length=5, description="AS-C4: penalties the circumstances impose."
    )
    heroism_4d6: StrictBool = Field(False, description="AS-H1: 1 heroism, a 4th die that adds to the damage (AS-C2).")
    take_11: StrictBool = Field(
        False,
        description="AS-T8: the GM has an NPC take 11 on its attack test (no dice; "
        "AS-C2 then reads no attack dice: the weapon's d6 are rolled).",
    )
    unperceived: StrictBool = Field(False, description="AS-C1: an attack the target does not perceive: no defense.")
    difficulty: StrictInt | None = Field(
        None,
        ge=0,
        le=100,
        description="AS-C1: the GM difficulty of an unperceived attack (default: the campaign's gm_difficulty, 10).",
    )
    also_target_id: Id | None = Field(None, description="AS-C4 attaques_multiples: the second target in reach.")
    group: list[Id] = Field(
        default_factory=list,
        max_length=4,
        description="AS-C11: the other extras (tier figurant) attacking with the actor; their own turns "
        "of the round pass.",
    )
    cooperating: list[Id] = Field(
        default_factory=list,
        max_length=4,
        description="AS-T6: the other characters attacking with the actor as one cooperation (each rolls its "
        "attack test after the actor's; the best leads, +1/−1 per other result); one shared slot, the "
        "actor's: their own turns of the round pass.",
    )
    close_skill: StrictBool = Field(False, description="AS-T7: the attack uses a close skill: its result −5.")
    defense_close_skill: StrictBool = Field(
        False,
        description="AS-T7: the target defends with a close skill: its result −5 (the GM, or with the body's "
        "`reaction`, chosen by who controls the target).",
    )
    asset_dice: StrictInt = Field(
        0, ge=0, le=3, description="AS-C2: d6 an asset the GM allows adds to the damage (rolled after the weapon's)."
    )
    reaction: Literal["defense", "defense_heroism", "none"] | None = Field(
        None, description="Overrides the target's standing reaction (only a caller who controls the target)."
    )


class Heal(encounters.HealOrDamage):
    """The GM's raw heal (as every ruleset's)."""

    type: Literal["heal"]


class Damage(RollingRequest, encounters.HealOrDamage):
    """The GM's raw damage on a resource; vitality brought to 0 rolls AS-C5's tests (table dice:
    resistance 3d6 [1d6 dying rounds], volonte 3d6 [2d6 unconscious rounds])."""

    type: Literal["damage"]


# --- what an Asgard fight keeps on a combatant (combat.py; an imported bundle is read with it) ---------


class TurnSpent(fight_state.Kept):
    """AS-C11, AS-T6: the round a combatant acted in another's slot (`combat.TURN_SPENT`)."""

    round: Annotated[StrictInt, Field(ge=0)]
    rule: str = Field(max_length=20)


class Counters(fight_state.Counters):
    """AS-C4: the prudence and danger tests owed; AS-C11/AS-T6: a turn spent in another's slot."""

    turn_spent: TurnSpent | None = None
    prudence: Annotated[StrictInt, Field(ge=0, le=1000)] | None = None
    danger: Annotated[StrictInt, Field(ge=0, le=1000)] | None = None
