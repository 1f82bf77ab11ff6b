"""Request and response schemas of combat encounters (API.md, "Encounters (combat)").

The options and request bodies every ruleset shares live here; a ruleset's own
encounter options extend `EncounterOptions` (e.g. Great Cosmos' GC-O2 `tie_method`), and its request
bodies extend the shared ones (`…Base` here: Great Cosmos' `actions` and `chosen_orders`, Asgard's
`take_11`), in its package's schemas.py; app.rulesets.encounter_bodies gathers them into the bodies
the routes take."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator

from app.kit.models import RollingRequest, Strict
from app.models.fields import DiceExpression, Id
from app.models.schemas import METADATA_DOC, NO_CONTROL, NO_NUL, Metadata, MetadataPatch, Timestamp

Side = Annotated[str, Field(min_length=1, max_length=40, pattern=NO_CONTROL)]
Reaction = Annotated[str, Field(min_length=1, max_length=20, pattern=NO_CONTROL)]
Initiative = Annotated[StrictInt, Field(ge=-10_000, le=10_000)]
Ends = Literal["start_of_turn", "end_of_turn"]
MAX_COMBATANTS = 500
MAX_COPIES = 50
MAX_CONDITIONS = 50


# --- options ----------------------------------------------------------------------------
class EncounterOptions(Strict):
    """Options of every encounter; unknown ones are refused (422)."""

    hp_visibility: Literal["exact", "status", "hidden"] = Field(
        "exact",
        description="What players see of the resources of combatants they do not own: the exact values, "
        "a status (unhurt, wounded, bloodied, down) or nothing.",
    )
    reveal_on_turn: StrictBool = Field(True, description="A hidden combatant is revealed when its first turn comes.")
    odds_for_players: Literal["visible", "all", "none"] = Field(
        "visible",
        description="The exact odds a player's `actions/plan` gives: `visible`, each figure only when every "
        "figure it uses is one the player may read (the target's sheet and pools as its views show them; "
        "else null and named in `withheld`); `all`, every figure against every target; `none`, none. "
        "The GM always gets them all.",
    )


# --- setup -------------------------------------------------------------------------------
POSITION_BOUND = 100_000  # a cell's x and y lie within ±this


class Position(Strict):
    x: StrictInt = Field(ge=-POSITION_BOUND, le=POSITION_BOUND)
    y: StrictInt = Field(ge=-POSITION_BOUND, le=POSITION_BOUND)


class CombatantCreateBase(Strict):
    """One campaign character in the fight, or `count` numbered copies of an NPC."""

    character_id: Id
    side: Side | None = Field(None, description="Default: `heroes` for a PC, `foes` for an NPC.")
    position: Position | None = None
    hidden: StrictBool = Field(False, description="Players do not see it until it is revealed.")
    reaction: Reaction | None = Field(
        None, description="Standing defence when attacked (the ruleset's names); null: the ruleset's default."
    )
    initiative: Initiative | None = Field(None, description="GM override: replaces the rolled initiative.")
    count: StrictInt | None = Field(
        None,
        ge=1,
        le=MAX_COPIES,
        description='Copy this NPC into N new NPC characters "Name 1…N", each its own '
        "sheet, each a combatant (the NPC itself stays out). With a `position`, each copy takes its own "
        "free cell (no combatant on it): the free cells nearest to `position` by the ruleset's distance "
        "(the catalogue's `combat.grid`: |dx| + |dy|, GC-D1), nearer first, then by y, then by x.",
    )

    def actions_per_round(self) -> int:
        """How many actions a round it has: one, unless its ruleset's model says more (GC-O3)."""
        return 1


class CombatantAddBase(CombatantCreateBase, RollingRequest):
    """`POST …/combatants`: one combatant (or `count` NPC copies). In a running fight it
    takes its place in the turn order by the ruleset's initiative rule, rolled with
    `seed` or table `dice` as at `start` (or the GM's `initiative`); a hidden combatant's joining
    is a hidden action. Before `start`, `seed` and `dice` are refused (nothing is rolled yet)."""


class EncounterCreateBase(Strict):
    name: str = Field(min_length=1, max_length=200, pattern=NO_NUL)
    options: dict[str, Any] | None = Field(None, description="Validated against the ruleset's encounter options.")
    combatants: list[CombatantCreateBase] = Field(default_factory=list, max_length=MAX_COMBATANTS)
    metadata: Metadata | None = None


class EncounterUpdate(Strict):
    name: str | None = Field(None, min_length=1, max_length=200, pattern=NO_NUL)
    options: dict[str, Any] | None = Field(None, description="Merged into the current options, then validated.")
    metadata: MetadataPatch | None = None


class CombatantUpdateBase(Strict):
    """GM: any field (`initiative` only before `start`); the owner: `reaction` only."""

    side: Side | None = None
    hidden: StrictBool | None = None
    position: Position | None = Field(None, description="null: off the grid.")
    initiative: Initiative | None = Field(None, description="GM override before start; null removes it.")
    reaction: Reaction | None = Field(None, description="null: the ruleset's default.")


# --- rolling requests --------------------------------------------------------------------
class StartRequestBase(RollingRequest):
    """Rolls initiative with the ruleset's rule (dice provenance applies)."""

    def npcs_taking_11(self) -> list[str]:
        """The combatants taking 11 on initiative, where the ruleset's model names them (AS-T8)."""
        return []

    def tie_orders(self) -> list[list[str]]:
        """The orders chosen for one-sided ties, where the ruleset's model takes them (GC-O2)."""
        return []


class NextTurnRequestBase(RollingRequest):
    """Ends the current turn; dice are rolled where the rules re-order a new round (GC-O1..O3)."""

    def tie_orders(self) -> list[list[str]]:
        """The orders chosen for a new round's one-sided ties, where the ruleset's model takes them (GC-O2)."""
        return []


class RevertRequest(Strict):
    force: StrictBool = Field(False, description="Restore even sheet fields changed since by something else.")


class ActionBase(Strict):
    hidden: StrictBool = Field(False, description="GM only: the action is not shown to players.")


class HealOrDamage(ActionBase):
    """GM: a raw amount on one of the target's resources (the ruleset's first pool by default)."""

    type: Literal["heal", "damage"]
    actor_id: Id | None = None
    target_id: Id
    amount: StrictInt = Field(ge=1, le=1_000_000)
    resource: str | None = Field(None, min_length=1, max_length=40)


class ConditionAdd(Strict):
    name: str = Field(min_length=1, max_length=60, pattern=NO_CONTROL)
    rounds: StrictInt | None = Field(
        None, ge=1, le=1000, description="Turns of its bearer it lasts; null: until removed."
    )
    ends: Ends = Field(
        "end_of_turn", description="When a round of it is counted off: at the start or the end of its bearer's turn."
    )


class ConditionChange(ActionBase):
    """GM: add (or replace, by name) and/or remove a condition of a combatant."""

    type: Literal["condition"]
    actor_id: Id | None = None
    target_id: Id
    add: ConditionAdd | None = None
    remove: str | None = Field(None, min_length=1, max_length=60)

    @model_validator(mode="after")
    def _something(self) -> Self:
        if self.add is None and self.remove is None:
            raise ValueError("give `add`, `remove` or both")
        return self


GM_ACTIONS: dict[str, type[ActionBase]] = {"heal": HealOrDamage, "damage": HealOrDamage, "condition": ConditionChange}


# --- combat actions: the fields every ruleset shares; each ruleset extends them ---------------
class CombatAction(RollingRequest):
    """An action of one combatant (`actor_id`): its owner on its turn, or the GM. Dice
    provenance applies (`seed`, table `dice` in rule order, `hidden` for the GM)."""

    actor_id: Id
    if TYPE_CHECKING:
        type: str  # each action's own Literal (`AttackRequest`, `MoveRequest`, …)


class AttackRequest(CombatAction):
    """`attack`: the attack test, the target's reaction test(s), then damage (table dice in that order).
    Each ruleset adds its own fields (the attack stat or skill, its extras)."""

    type: Literal["attack"]
    target_id: Id
    weapon: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="The name of a weapon on the actor's sheet (its damage expression).",
    )
    damage: DiceExpression | None = Field(None, description="A damage expression instead of a weapon (`1d6+1`).")
    reaction: Reaction | None = Field(
        None,
        description="Overrides the target's standing reaction: only a caller "
        "who controls the target (its owner, or the GM).",
    )

    @model_validator(mode="after")
    def _weapon_or_damage(self) -> Self:
        if self.weapon is not None and self.damage is not None:
            raise ValueError("give `weapon` or `damage`, not both")
        return self


class MoveRequest(CombatAction):
    """`move`: to a cell of the grid."""

    type: Literal["move"]
    to: Position


class DashRequest(CombatAction):
    """`dash`: gives up the action to move further this turn."""

    type: Literal["dash"]


class PostureRequest(CombatAction):
    """`posture`: the actor's combat posture (the ruleset's names)."""

    type: Literal["posture"]
    posture: str = Field(min_length=1, max_length=40)


class FinalSkillRequest(CombatAction):
    """`final_skill`: the actor's final skill, on a target or none."""

    type: Literal["final_skill"]
    target_id: Id | None = None


# --- responses (documentation: the service returns these shapes) ---------------------------
class Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class OrderEntry(Open):
    combatant_id: str
    slot: int
    initiative: int | None
    extra_action: bool
    tiebreak: dict[str, Any] | None = Field(
        description="The dice that broke a tie (`{die, value, …}`, the ruleset's), or null."
    )
    parallel_with: list[str]
    action: int | None = Field(
        None, description="great-cosmos GC-O3: which of the combatant's actions this slot is (1, 2, …)."
    )
    from_round: int | None = Field(None, description="rulebook-d100 RB-F4: the first round it acts in.")


class CurrentTurn(Open):
    """The slot being played and who acts in it (several: in parallel)."""

    slot: int
    combatant_id: str | None = Field(description="The first who acts (null: none the caller may see).")
    combatant_ids: list[str]


class PoolValue(BaseModel):
    """A pool as the caller may see it exactly: its value and its maximum."""

    model_config = ConfigDict(extra="forbid")
    value: int
    max: int


class CounterValue(BaseModel):
    """A pool without a maximum (asgard's heroism): its value."""

    model_config = ConfigDict(extra="forbid")
    value: int


class PoolStatusValue(BaseModel):
    """A pool as a status word (`hp_visibility: status`): full → unhurt, above half → wounded,
    above 0 → bloodied, 0 → down; a pool full at 0 (a maximum of 0) is unhurt."""

    model_config = ConfigDict(extra="forbid")
    status: Literal["unhurt", "wounded", "bloodied", "down"]


Resource = Annotated[PoolValue | CounterValue | PoolStatusValue, Field(union_mode="left_to_right")]


class ConditionPublic(Open):
    """A condition of a combatant: its name, the rounds left (null: until removed) and when they count."""

    name: str
    rounds_left: int | None
    ends: Literal["start_of_turn", "end_of_turn", "end_of_round"]
    since_round: int | None = Field(None, description="asgard AS-C5: the round it began.")


class CombatantPublic(Open):
    id: str
    character_id: str
    name: str | None
    kind: Literal["pc", "npc"] | None = Field(None, description="Its character's kind (null: deleted since).")
    player_id: str | None
    side: str
    hidden: bool
    position: Position | None
    initiative: int | None
    initiative_override: int | None = None
    actions: int
    down: bool
    reaction: str | None
    resources: dict[str, Resource] = Field(
        description="Each pool: {value, max} (a pool without a maximum: {value}), or {status}, or none (hp_visibility)."
    )
    posture: str | None = None
    conditions: list[ConditionPublic]
    counters: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "What the rules keep during the fight (great-cosmos: the special posture held since which round, "
            "its Revive, a backlash, a riposte or counter-attack available, a provocation; asgard: AS-C4 prudence "
            "and danger tests owed). The GC-P5 advantage d6 is the sheet's `posture_advantage`."
        ),
    )


class EncounterPublic(Open):
    id: str
    campaign_id: str
    name: str
    status: Literal["setup", "active", "ended"]
    round: int
    version: int
    options: dict[str, Any]
    combatants: list[CombatantPublic]
    order: list[OrderEntry]
    current: CurrentTurn | None
    metadata: dict[str, str] = Field(default_factory=dict, description=METADATA_DOC)
    created_at: Timestamp
    updated_at: Timestamp


class EncounterSummary(Open):
    id: str
    campaign_id: str
    name: str
    status: str
    round: int
    version: int
    metadata: dict[str, str] = Field(default_factory=dict, description=METADATA_DOC)
    created_at: Timestamp
    updated_at: Timestamp
