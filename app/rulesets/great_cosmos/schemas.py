"""Great Cosmos: pydantic schemas of the sheet (GC-S1..S10, GC-I1..I4), the
campaign options and the request bodies (tests, level-ups)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import AliasChoices, Field, StrictBool, StrictFloat, StrictInt, model_validator

from app.kit.models import CampaignOptions, RollingRequest, Strict, TestRequestBase
from app.models import encounters, fight_state
from app.models.encounters import CombatAction
from app.models.fields import Id
from app.models.governance import governed
from app.models.odds import NothingRolled
from app.rulesets.great_cosmos.rules.levels import level_range

StatName = Literal["force", "esprit", "charisme", "agilite", "precision", "chance"]
StatOrAlias = Literal["force", "esprit", "charisme", "agilite", "precision", "chance", "furtivite"]
Posture = Literal["offensive", "defensive", "illumination", "sepulcrale"]
Pool = Literal["hp", "mp"]
FreeEntry = str | dict[str, Any]

_STAT: dict[str, Any] = dict(ge=1, le=100)


class Stats(Strict):
    """GC-S1: six stats, 1..100 (`furtivite` is accepted for `agilite`)."""

    force: StrictInt = Field(..., **_STAT)
    esprit: StrictInt = Field(..., **_STAT)
    charisme: StrictInt = Field(..., **_STAT)
    agilite: StrictInt = Field(..., validation_alias=AliasChoices("agilite", "furtivite"), **_STAT)
    precision: StrictInt = Field(..., **_STAT)
    chance: StrictInt = Field(..., **_STAT)


class FinalSkill(Strict):
    """GC-S9: the Final Skill, usable only from level 5 (GC-L4): at least 1 point, its activation phrase required."""

    name: str = Field(..., min_length=1, max_length=200)
    punchline: str = Field(
        ..., min_length=1, max_length=1000, pattern=r"\S", description="GC-S9: the activation phrase (required)."
    )
    cost_kind: Literal["light", "dark"]
    cost_points: StrictInt = Field(1, ge=1, le=100, description="GC-S9: at least 1 point of cost_kind.")


class Item(Strict):
    """GC-I2: an item. `slots`: 1..3 (item, weapon, armor piece), 4..6 (two-handed
    weapon); trinkets need none (each `stack` of a place takes one slot)."""

    name: str = Field(..., min_length=1, max_length=200)
    kind: Literal["item", "weapon", "two_handed_weapon", "armor", "trinket"] = "item"
    slots: StrictInt | None = Field(None, ge=0, le=6)
    container: str | None = Field(None, description="Name of the container holding it; null = carried directly.")
    stack: str | None = Field(
        None, max_length=100, description="Trinkets: the stack it belongs to (default 'trinkets')."
    )
    piece: Literal["head", "chest_arms", "legs_boots"] | None = Field(
        None, description="Armor: which of the three pieces."
    )
    damage: str | None = Field(None, max_length=200, description="Weapons: damage expression (GC-P4), e.g. 2d6+3.")
    quantity: StrictInt = Field(1, ge=1, le=10000)
    notes: str | None = Field(None, max_length=2000)


class Container(Strict):
    """GC-I3: belt, pockets, backpack…: its own slot count (its contents also count
    against the capacity); `weight` is what the container itself takes."""

    name: str = Field(..., min_length=1, max_length=100)
    slots: StrictInt = Field(..., ge=0, le=1000)
    weight: StrictInt = Field(0, ge=0, le=1000)


class Inventory(Strict):
    """GC-I1..I4: items, money (PO) with the purse's own slot limit, containers."""

    items: list[Item] = Field(default_factory=list, max_length=1000)
    money: StrictInt = Field(0, ge=0, le=10**12)
    purse_slots: StrictInt | None = Field(None, ge=0, le=1000, description="The purse's slot limit (null: none).")
    containers: list[Container] = Field(default_factory=list, max_length=100)


class Backlash(Strict):
    """GC-P7: a running backlash as the sheet carries it."""

    posture: Literal["illumination", "sepulcrale"]
    disadvantage_die: StrictInt | None = Field(
        None, ge=1, le=6, description="The Sépulcrale's disadvantage d6 (none after an Illumination)."
    )


class Sheet(Strict):
    """GC-S10: a Great Cosmos character sheet (derived fields filled when absent)."""

    race: str = Field(
        ...,
        min_length=1,
        max_length=60,
        pattern=r"^[a-z][a-z0-9_]*$",
        description="GC-S3: humain, elementaire, magical_girl, gardien, succube, onikaosu carry rules; "
        "others are accepted.",
        json_schema_extra=governed(at_creation=True),
    )
    level: StrictInt = Field(
        1,
        ge=1,
        le=1000,
        description="GC-S5: starts at 1; level-ups (GC-L1..L7) raise it.",
        json_schema_extra=governed(),
    )
    stats: Stats = Field(..., json_schema_extra=governed(at_creation=True))
    intuition: StrictInt = Field(3, ge=1, le=6, json_schema_extra=governed(at_creation=True))
    karma: StrictInt = Field(
        0, ge=-10, le=10, description="GC-S4: starts at 0; tests move it (GC-K1..K5).", json_schema_extra=governed()
    )
    hp: StrictInt | None = Field(
        None, ge=0, description="Defaults to hp_max.", json_schema_extra=governed(at_creation=True)
    )
    hp_max: StrictInt = Field(..., ge=1, le=10**6, json_schema_extra=governed(at_creation=True))
    mp: StrictInt | None = Field(
        None, ge=0, description="Defaults to mp_max.", json_schema_extra=governed(at_creation=True)
    )
    mp_max: StrictInt = Field(..., ge=0, le=10**6, json_schema_extra=governed(at_creation=True))
    light_points: StrictInt | None = Field(
        None, ge=0, le=1000, description="GC-S6: defaults to the race's level-1 value.", json_schema_extra=governed()
    )
    dark_points: StrictInt | None = Field(
        None, ge=0, le=1000, description="GC-S6: defaults to the race's level-1 value.", json_schema_extra=governed()
    )
    mental_health: StrictInt | None = Field(
        None, ge=-1000, le=1000, description="GC-S7: defaults to the race maximum.", json_schema_extra=governed()
    )
    default_posture: Literal["offensive", "defensive"] = "defensive"
    posture: Posture | None = Field(
        None,
        description="Current posture (null: the default one); GC-K5 locks karma in the special ones.",
        json_schema_extra=governed(),
    )
    posture_advantage: StrictInt | None = Field(
        None,
        ge=1,
        le=6,
        description="GC-P5: the advantage d6 rolled on entering Illumination, kept with the posture for its whole "
        "length: 1 none, 2 no HP/MP cost, 3 extra positive effect, 4 +10 and 5 +20 on the target of "
        "every test, 6 extra action. Only with posture illumination (cleared when the posture ends); a "
        "test in Illumination without it is refused.",
        json_schema_extra=governed(),
    )
    backlash: Backlash | None = Field(
        None,
        description="GC-P7: the backlash running (its holder's next two turns after a special posture held more "
        "than 2 turns ended), its Sépulcrale disadvantage d6 included: 4 and 5 are -10 and -20 on the target "
        "of every test, those outside the encounter included. Written and cleared by the encounter (the end "
        "of the backlash or of the fight).",
        json_schema_extra=governed(),
    )
    skills: list[FreeEntry] = Field(default_factory=list, max_length=500)
    spells: list[FreeEntry] = Field(default_factory=list, max_length=500)
    affiliation: str | None = Field(None, max_length=200)
    talents: list[FreeEntry] = Field(default_factory=list, max_length=500)
    final_skill: FinalSkill | None = Field(
        None, description="GC-S9/GC-L4: unlocked at level 5.", json_schema_extra=governed()
    )
    inventory: Inventory | None = None
    notes: str | None = Field(None, max_length=20000)

    @model_validator(mode="after")
    def _pools_within_max(self) -> Self:
        if self.hp is not None and self.hp > self.hp_max:
            raise ValueError(f"hp {self.hp} exceeds hp_max {self.hp_max}")
        if self.mp is not None and self.mp > self.mp_max:
            raise ValueError(f"mp {self.mp} exceeds mp_max {self.mp_max}")
        return self


class Options(CampaignOptions):
    """Great Cosmos campaign options (the seed's optional rules are on by default)."""

    extreme_scores: StrictBool = Field(
        False,
        description="GC-T2 (GM's opt-in, Decision: off): score <= 0 is a super-critical "
        "success, > 100 a super-critical failure.",
    )
    inventory_rules: StrictBool = Field(True, description="GC-I1..I4: slot inventory.")
    movement_rules: StrictBool = Field(True, description="GC-D1..D4: grid movement and dash.")
    turn_order_rules: StrictBool = Field(True, description="GC-O1..O3: turn order by agilite.")
    sepulchral_damage_multiplier: StrictFloat = Field(
        3, gt=0, le=100, description="GC-P6 (Decision): damage multiplier in Sépulcrale."
    )
    backlash_damage_multiplier: StrictFloat = Field(
        0.5, ge=0, le=100, description="GC-P7 (Decision): damage multiplier during the Sépulcrale backlash."
    )
    backlash_after_turns: StrictInt = Field(
        2, ge=0, le=100, description="GC-P7: a special posture held longer than this many turns backlashes."
    )


class TestRequest(TestRequestBase):
    """GC-T1/GC-T3: a test of one stat (`furtivite` = `agilite`) or of `intuition`."""

    stat: Literal["force", "esprit", "charisme", "agilite", "precision", "chance", "furtivite", "intuition"]


class OddsRequest(NothingRolled, TestRequest):
    """The same test's exact odds (`POST …/tests/odds`): nothing rolled nor logged, so no `seed`, `dice` or `hidden`."""


class Transfer(Strict):
    """GC-L4: stat points moved from one stat to another."""

    from_: StatOrAlias = Field(..., alias="from")
    to: StatOrAlias
    points: StrictInt = Field(..., ge=1, le=10)


def at_level(name: str) -> dict[str, Any]:
    """The `json_schema_extra` of a level-up field that applies at some new levels only: `x-level`
    `{"min", "max"}` (no `max`: that level and every one above), from the rules' own table, so a
    client shows each level's fields without reading the descriptions."""
    levels = level_range(name)
    if levels is None:
        raise ValueError(f"{name} applies at every level-up: no x-level")
    low, high = levels
    return {"x-level": {"min": low} if high is None else {"min": low, "max": high}}


class LevelUpRequest(RollingRequest):
    """GC-L1..L6: the choices of one level-up (which apply depends on the new level: `x-level`)."""

    mode: Literal["two_d10", "one_d20"] | None = Field(
        None, description="Level 2 (GC-L1).", json_schema_extra=at_level("mode")
    )
    stats: list[StatOrAlias] | None = Field(
        None,
        max_length=2,
        description="Level 2: two different stats (two_d10) or one (one_d20).",
        json_schema_extra=at_level("stats"),
    )
    stat: StatOrAlias | None = Field(
        None, description="Level 3 (GC-L2): which of the tied lowest stats.", json_schema_extra=at_level("stat")
    )
    pool: Pool | None = Field(None, description="Level 4 (GC-L3): hp or mp +1d100.", json_schema_extra=at_level("pool"))
    transfers: list[Transfer] | None = Field(
        None,
        max_length=20,
        description="Level 5 (GC-L4): up to 10 points moved.",
        json_schema_extra=at_level("transfers"),
    )
    light: StrictInt | None = Field(
        None,
        ge=0,
        le=1000,
        description="GC-S6: light points the GM grants (any level); level 5 (GC-L4): light + "
        "dark >= 3, its +3 included.",
    )
    dark: StrictInt | None = Field(
        None,
        ge=0,
        le=1000,
        description="GC-S6: dark points the GM grants (any level); level 5 (GC-L4): light + dark "
        ">= 3, its +3 included.",
    )
    changes: dict[str, StrictInt] | None = Field(
        None,
        description="Level 6+ (GC-L5): deltas of stats, hp_max, mp_max, light_points, dark_points, intuition.",
        json_schema_extra=at_level("changes"),
    )
    chance_bonus_pool: Pool = Field(..., description="GC-L6: hp or mp gets +2d20 if the chance test succeeds.")


# --- encounters: options and request bodies (combat.py) ------------------------------------
class GreatCosmosEncounterOptions(encounters.EncounterOptions):
    tie_method: Literal["d20", "parallel"] = Field(
        "d20",
        description="GC-O2: tied entities roll a d20 each, lowest first (tied again: parallel), "
        "or act in parallel at once.",
    )


class GreatCosmosCombatantCreate(encounters.CombatantCreateBase):
    actions: StrictInt = Field(1, ge=1, le=5, description="Actions per round (GC-O3; great-cosmos only).")

    def actions_per_round(self) -> int:
        return self.actions


class GreatCosmosCombatantUpdate(encounters.CombatantUpdateBase):
    actions: StrictInt | None = Field(None, ge=1, le=5)


ChosenOrder = Annotated[list[Id], Field(min_length=1, max_length=encounters.MAX_COMBATANTS)]
CHOSEN = (
    "great-cosmos GC-O2 (the GM's): the order the players chose for a tie all on one side, each list the ids "
    "of one tie group, first to act first (a new round's ties on next-turn); naming a group that is not a "
    "one-sided tie: 422."
)


class GreatCosmosStartRequest(encounters.StartRequestBase):
    chosen_orders: list[ChosenOrder] = Field(
        default_factory=list, max_length=encounters.MAX_COMBATANTS, description=CHOSEN
    )

    def tie_orders(self) -> list[list[str]]:
        return self.chosen_orders


class GreatCosmosNextTurnRequest(encounters.NextTurnRequestBase):
    chosen_orders: list[ChosenOrder] = Field(
        default_factory=list, max_length=encounters.MAX_COMBATANTS, description=CHOSEN
    )

    def tie_orders(self) -> list[list[str]]:
        return self.chosen_orders


# GC-P1..P7, GC-D1..D4: the combat actions
EncounterStat = Literal["force", "esprit", "charisme", "agilite", "precision", "chance", "furtivite"]
Modifier = Annotated[StrictInt, Field(ge=-1000, le=1000, description="Added to the test's target (positive = easier).")]


class AttackRequest(encounters.AttackRequest):
    """GC-P1..P6: `kind` melee (needs distance 1, GC-D1), ranged or magic; the attack stat
    defaults to the kind's (GC-P3: force, precision, esprit); damage from the weapon or the
    expression (GC-P4; default: the first weapon of the sheet's inventory with a damage)."""

    kind: Literal["melee", "ranged", "magic"] = Field("melee", description="GC-P3: melee, ranged or magic.")
    stat: EncounterStat | None = Field(None, description="GC-P3: the attack stat (default by kind).")
    modifier: Modifier = 0
    unparryable: StrictBool = Field(False, description="GC-P5: a special attack no one may parry.")
    undodgeable: StrictBool = Field(False, description="GC-P5: a special attack no one may dodge.")
    reaction: Literal["dodge", "parry", "none"] | None = Field(
        None, description="GC-P2: overrides the target's standing reaction (only a caller who controls the target)."
    )


class MoveRequest(encounters.MoveRequest):
    """GC-D1..D3: |dx| + |dy| cells, at most the turn's max move; never move-act-move."""


class DashRequest(encounters.DashRequest):
    """GC-D4: an agilite test multiplies the turn's max move (gives up the action)."""

    modifier: Modifier = 0


class PostureRequest(encounters.PostureRequest):
    """GC-P1, GC-P2, GC-P5..P7: offensive, defensive, or a special posture (costs its point)."""

    posture: Literal["offensive", "defensive", "illumination", "sepulcrale"]


class FinalSkillRequest(encounters.FinalSkillRequest):
    """GC-P5/GC-P6: the Final Skill (level >= 5, its cost); it ends the special posture. With a
    `stat`, a test is rolled whose critical failures count as plain failures."""

    stat: EncounterStat | None = None
    modifier: Modifier = 0


ENCOUNTER_ACTIONS: dict[str, type[CombatAction]] = {
    "attack": AttackRequest,
    "move": MoveRequest,
    "dash": DashRequest,
    "posture": PostureRequest,
    "final_skill": FinalSkillRequest,
}


# --- what a Great Cosmos fight keeps on a combatant (rules/fight.py; an imported bundle is read with it) ---


class GreatCosmosTurn(fight_state.Turn):
    """A turn's notes: GC-P3's phases taken, whether it acted or dashed, how far it moved of its reach."""

    phases: list[Annotated[str, Field(max_length=20)]] | None = None
    acted: StrictBool | None = None
    dashed: StrictBool | None = None
    moved: Annotated[StrictInt, Field(ge=0)] | None = None
    max_move: StrictInt | None = None


class SpecialPostureHeld(fight_state.Kept):
    """GC-P5/P6: the special posture held (`new_special`)."""

    posture: str = Field(max_length=40)
    since_round: Annotated[StrictInt, Field(ge=0)] | None = None
    turns: Annotated[StrictInt, Field(ge=0)] | None = None
    turn_round: Annotated[StrictInt, Field(ge=0)] | None = None
    revive_used: StrictBool | None = None
    extra_action: StrictBool | None = None


class BacklashOwed(fight_state.Kept):
    """GC-P7: a backlash owed or running (`new_backlash`)."""

    posture: str = Field(max_length=40)
    turns_left: Annotated[StrictInt, Field(ge=0, le=10)]
    running: StrictBool
    disadvantage_die: Annotated[StrictInt, Field(ge=1, le=6)] | None = None
    disadvantage: str | None = Field(None, max_length=40)


class Counters(fight_state.Counters):
    """GC-P2 riposte, GC-P6 counter-attack and provocation, GC-P5/P6 special posture, GC-P7 backlash."""

    turn: GreatCosmosTurn | None = None  # the shared turn, with GC's notes
    special: SpecialPostureHeld | None = None
    backlash: BacklashOwed | None = None
    riposte: fight_state.Ref | None = None
    counter_attack: fight_state.Ref | None = None
    provoked_by: fight_state.Ref | None = None
    provocation_pending: StrictBool | None = None
