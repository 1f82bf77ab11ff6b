"""The contract between the generic encounter flow and one ruleset's combat: its
`EncounterRules` (each ruleset's combat.py `COMBAT`; the registry lists it with its adapter).

What an encounter needs from a ruleset, in one small typed interface.

Each ruleset says it once, in its own module: its resource pools (names, sheet
keys, maxima), what `down` means, its reactions, its initiative rule and what a
new round does to the order, and its combat actions (`attack`, and the optional
`move`, `dash`, `posture`, `final_skill`). The encounter service knows no ruleset
by name.

An action is resolved by the generic flow (`actions.py`): it validates the body
with the ruleset's model (`action_models`), loads the actor and the target,
checks who may act (the GM, or the actor's owner on its turn), settles the
target's reaction (its standing one; a body's only from a caller who controls
the target) and the dice provenance, then calls the ruleset's method with an
`Exchange`. The method rolls with each party's `dice` (every die tagged with
whose it is: attack test, reaction test(s), damage, in rule order), changes the
parties' `sheet` (karma, pools, posture, points…), `counters`, `position` and
`conditions` in place and appends its `steps` (each citing its rule id with its
figures). The flow then writes every change, before/after (what a revert
restores), the action, its roll-log entry (`kind: "combat"`) and its event, in
one transaction.

Actions per turn (README "Actions per turn", every ruleset): one action per turn unless a rule
grants more. The flow keeps the count, before the ruleset resolves anything, in the actor's
`Party.turn` (`counters["turn"]`, keyed by the current round and slot: a new turn starts it
afresh; a revert restores it like every other change): `turn["actions"]`, the action types
counted in this turn. An action counts when its type is an `ACTION` (`action_kinds`; a `MOVE`
follows the ruleset's movement rules, a `FREE` one never counts, and reactions are no actions:
they are settled inside the attacker's action), when the actor acts in the current slot
(`Exchange.on_turn`: the GM acting on a combatant's turn is held to it as its player is) and
when no rule grants it beyond the count (`granted_action`: a riposte, a counter-attack, a free
attack; by default the rule `out_of_turn` names). Once `actions_per_turn` are counted, another
is a 409 naming the rules that would allow one (`more_actions`). Extra actions that are slots
of their own in the order (GC-O3, GC-P5 advantage 6 through GC-O3, RB-F4's critical
initiative) are turns of their own: each counts from 0. The hooks, all with defaults:
`action_kinds`, `more_actions`, `actions_per_turn(actor, round_)` and
`granted_action(actor, req)`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel

from app.kit.models import union
from app.kit.steps import Step
from app.models.encounters import (
    GM_ACTIONS,
    CombatAction,
    CombatantCreateBase,
    CombatantUpdateBase,
    EncounterOptions,
    NextTurnRequestBase,
    StartRequestBase,
)
from app.models.fight_state import Counters as FightCounters
from app.models.validation import InvalidBody, validate
from app.rules.dice import DiceSource
from app.rules.errors import RuleError

COMBAT_ACTIONS = ("attack", "move", "dash", "posture", "final_skill")

# what an action type is to the "Actions per turn" rule (`EncounterRules.action_kinds`)
ACTION, MOVE, FREE = "action", "move", "free"

# a combatant's sheet as combat reads it: the ruleset's `Sheet` model (`RulesetAdapter.Sheet`), parsed once
# from the stored sheet (each default lives in that model once); each ruleset reads its own
# fields, which this shared type cannot name
SheetModel = Any


class CombatDice(Protocol):
    """The dice of one action as a ruleset's combat sees them (the services' `CombatDice` gives
    them): `source` rolls, `of(id)` rolls as one combatant's, `by` says whose each die is."""

    by: dict[int, str]

    @property
    def source(self) -> DiceSource: ...

    def of(self, combatant_id: str) -> DiceSource: ...

    def mark(self) -> int: ...

    def tag(self, start: int, owners: Iterable[str]) -> None: ...


@dataclass(frozen=True)
class Pool:
    """A resource pool of the sheet: `{value, max}` in the state, and what heal/damage change."""

    name: str
    key: str  # the sheet key of the value
    max_key: str | None  # the sheet key of the maximum (None: no maximum)
    floor: int = 0  # the lowest value the sheet allows

    def value(self, sheet: SheetModel) -> int:
        """The current value; a sheet leaving it out is at its maximum (the rulesets' default, said once)."""
        value = getattr(sheet, self.key)
        if value is None:
            return int(getattr(sheet, self.max_key) or 0) if self.max_key else 0
        return int(value)

    def maximum(self, sheet: SheetModel) -> int | None:
        maximum = getattr(sheet, self.max_key) if self.max_key else None
        return int(maximum) if maximum is not None else None

    def set(self, sheet: SheetModel, value: int) -> None:
        """The pool's value written on the sheet (a Party's copy)."""
        setattr(sheet, self.key, value)


@dataclass(frozen=True)
class Grid:
    """How the ruleset counts the distance between two cells `{x, y}` of the grid (the catalogue's
    `combat.grid`; NPC copies are placed by it, `EncounterRules.distance`)."""

    metric: Literal["manhattan"]  # |dx| + |dy|, no diagonals
    rule: str | None  # the rule saying so (GC-D1), or None: the ruleset has no grid rule
    description: str


MANHATTAN = Grid(
    metric="manhattan",
    rule=None,
    description="Cells {x, y}; this ruleset has no grid rule: the service counts a distance as |dx| + |dy| "
    "(no diagonals), e.g. to place NPC copies near their original.",
)


def manhattan(a: tuple[int, int], b: tuple[int, int]) -> int:
    """|dx| + |dy|: the cells between two cells, no diagonals."""
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


@dataclass(frozen=True)
class Entrant:
    """One combatant as the initiative rule reads it."""

    combatant_id: str
    kind: str  # "pc" | "npc"
    sheet: SheetModel  # the ruleset's `Sheet` model, read only
    override: int | None = None  # the GM's initiative
    actions: int = 1
    take_11: bool = False
    counters: dict[str, Any] = field(default_factory=dict)  # the combatant's per-fight counters
    side: str | None = None
    chosen: tuple[int, int] | None = None  # GC-O2: (which of the request's `chosen_orders`, its place in it)


@dataclass
class Initiative:
    """A round's turn order: entries `{combatant_id, slot, initiative, extra_action,
    tiebreak, parallel_with, …}` (slots count from 0; entries sharing a slot act in
    parallel), each combatant's initiative, and the steps (rule ids and figures)."""

    order: list[dict[str, Any]]
    initiatives: dict[str, int | None] = field(default_factory=dict)
    steps: Sequence[Step] = field(default_factory=list)  # the ruleset's own (`AsgardStep`…)


def entry(
    combatant_id: str,
    slot: int,
    initiative: int | None,
    *,
    extra_action: bool = False,
    tiebreak: dict[str, Any] | None = None,
    parallel_with: list[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "combatant_id": combatant_id,
        "slot": slot,
        "initiative": initiative,
        "extra_action": extra_action,
        "tiebreak": tiebreak,
        "parallel_with": parallel_with or [],
        **extra,
    }


def one_per_slot(ranked: list[tuple[str, int | None, dict[str, Any] | None]]) -> list[dict[str, Any]]:
    """An order where every combatant has its own slot: [(id, initiative, tiebreak)] best first."""
    return [entry(cid, slot, value, tiebreak=tie) for slot, (cid, value, tie) in enumerate(ranked)]


@dataclass
class Party:
    """One side of an action (the actor, the target) as a ruleset's action reads and
    changes it. `sheet` (the ruleset's `Sheet` model), `counters`, `position`, `conditions` and
    `actions` are copies: the ruleset changes them in place (a nested value of the sheet as its
    model's type); the flow records every difference (before/after: the sheets' `model_dump()`)."""

    id: str  # the combatant's id
    character_id: str
    name: str
    kind: str  # "pc" | "npc"
    side: str
    reaction: str  # its standing reaction (the ruleset's default when unset)
    sheet: SheetModel
    counters: dict[str, Any]
    position: dict[str, int] | None
    conditions: list[dict[str, Any]]
    actions: int
    dice: DiceSource  # every die rolled with it is this combatant's (`by`)
    turn: dict[str, Any] = field(default_factory=dict)  # what it did in the current turn (`counters["turn"]`)


@dataclass
class Exchange:
    """One action being resolved: the validated request, the parties, the encounter's
    and the campaign's options, and the steps the ruleset appends."""

    # the ruleset's model of the body's `type` (`parse_action`), a CombatAction: each handler
    # reads its own type's fields, which no static type of this one field can name
    req: Any
    actor: Party
    target: Party | None
    dice: CombatDice
    options: EncounterOptions
    # the campaign's options parsed once into the ruleset's `Options` (a CampaignOptions; each
    # handler reads its own ruleset's fields, which this shared type cannot name)
    campaign_options: Any
    round: int
    reaction: str | None  # the target's reaction: its standing one, or the body's (checked)
    reaction_chosen: bool  # the body chose it (a refusal is then a 422, not a fallback)
    same_slot: bool  # actor and target act in the same parallel slot (GC-O2)
    on_turn: bool = True  # the actor acts in the current slot (else: the GM's call, or a riposte)
    by_gm: bool = False  # the caller is the GM (AS-T8: only the GM has an NPC take 11)
    others_of: Callable[[], list[Party]] = list  # the other combatants (read only: positions), when asked
    more: list[Party] = field(default_factory=list)  # the parties of `involved` (changed like actor and target)
    sees: Callable[[str], bool] = lambda _id: True  # whether the caller sees this combatant (a rule naming one)
    order: list[dict[str, Any]] = field(default_factory=list)  # the round's turn order (AS-T6: shared slots)
    # resolving a logged action again (`replays`): {"action_id": that action, "by": the spender}
    replaying: dict[str, Any] | None = None
    standing: Callable[[str], bool] = lambda _id: True  # whether this combatant is in the fight and not down
    acting: frozenset[str] = frozenset()  # the combatants of the current slot (whose turn it is)
    steps: list[Step] = field(default_factory=list)  # each the ruleset's own (`AsgardStep`…)

    @property
    def foe(self) -> Party:
        """The target of an action whose model requires one (an attack's `target_id`)."""
        assert self.target is not None
        return self.target

    @property
    def foe_reaction(self) -> str:
        """The target's reaction: with a target there is always one (the body's, its standing
        one, or the ruleset's default: `actions._reaction`)."""
        assert self.reaction is not None
        return self.reaction

    @cached_property
    def others(self) -> list[Party]:
        """The other combatants, read only (positions: GC-D1 occupied cells), built on first use."""
        return self.others_of()


@dataclass(frozen=True)
class ExchangeOdds:
    """The exact odds of one action: `outcomes` (the exchange's own, named by the ruleset, summing
    to 1), `hit` (the target's first pool lowered), `down` (that pool brought to 0 by this action,
    in every ruleset) and, for a ruleset where 0 does not yet take a combatant out
    (`EncounterRules.out_at_zero` false), `out` (the target put out by this action: `is_down`)."""

    outcomes: dict[str, Fraction]
    hit: Fraction
    down: Fraction
    out: Fraction | None = None


@dataclass
class TurnPassed:
    """What a combatant's turn starting or ending changed in the ruleset's state: its counters
    after, sheet fields to write (key -> value) and the steps saying so."""

    counters: dict[str, Any]
    sheet: dict[str, Any] = field(default_factory=dict)
    steps: Sequence[Step] = field(default_factory=list)


def sheet_weapon(sheet: SheetModel, name: str | None, rule: str) -> Any:
    """The weapon an attack uses (the sheet's model of it): the one named, else the sheet's first;
    a 422 naming the sheet's weapons, or asking for a `damage` expression when it has none."""
    weapons = sheet.weapons
    if name is None:
        if not weapons:
            raise RuleError(
                f"the attacker has no weapon on its sheet: give a `damage` expression ({rule})", field="weapon"
            )
        return weapons[0]
    weapon = next((w for w in weapons if w.name == name), None)
    if weapon is None:
        raise RuleError(
            f"no weapon {name!r} on the attacker's sheet; it has {', '.join(w.name for w in weapons) or 'none'}",
            field="weapon",
            code="unknown_name",
        )
    return weapon


def unsupported(ruleset: str, type_: str, supported: list[str]) -> InvalidBody:
    return InvalidBody(
        f"{ruleset} has no {type_!r} action in an encounter; it has {', '.join(supported)}",
        field="type",
        code="unsupported_operation",
    )


class EncounterRules(ABC):
    """One ruleset's encounter pieces. Subclasses set the class attributes and
    implement `roll_initiative`; the rest has defaults."""

    ruleset: ClassVar[str]
    Options: ClassVar[type[EncounterOptions]] = EncounterOptions
    # the setup and turn bodies as this ruleset reads them: the shared ones, or its own extending them
    # (GC-O3 `actions`, GC-O2 `chosen_orders`, AS-T8 `take_11`); app.rulesets.encounter_bodies gathers
    # every ruleset's into the bodies the routes take
    CombatantCreate: ClassVar[type[CombatantCreateBase]] = CombatantCreateBase
    CombatantUpdate: ClassVar[type[CombatantUpdateBase]] = CombatantUpdateBase
    StartRequest: ClassVar[type[StartRequestBase]] = StartRequestBase
    NextTurnRequest: ClassVar[type[NextTurnRequestBase]] = NextTurnRequestBase
    # what a combatant's `counters` hold in this ruleset's fights (an imported bundle is read with it)
    Counters: ClassVar[type[FightCounters]] = FightCounters
    pools: ClassVar[tuple[Pool, ...]]
    reactions: ClassVar[tuple[str, ...]] = ("none",)
    default_reaction: ClassVar[str] = "none"
    multiple_actions: ClassVar[bool] = False  # combatants may have several actions a round (GC-O3)
    reorders_each_round: ClassVar[bool] = False  # a new round re-reads every sheet (GC-O1)
    dice_order: ClassVar[str] = ""  # the order table dice of `start` are consumed in
    late_rule: ClassVar[str] = "turn"  # the rule that keeps an entry of the order from acting yet
    take_11_rule: ClassVar[str | None] = None  # the rule letting an NPC take 11 on initiative (AS-T8), if any
    chosen_order_rule: ClassVar[str | None] = None  # the rule letting one side choose a tie's order (GC-O2), if any
    changes_at_fight_end: ClassVar[bool] = False  # `fight_ends` changes sheets or counters (GC-P6)
    lapses_at_turn_change: ClassVar[bool] = False  # `turn_changes` drops counters of every combatant (GC-P2)
    grid: ClassVar[Grid] = MANHATTAN  # how a distance is counted on the grid (GC-D1)
    # the first pool at 0 takes a combatant out (`is_down`); false where it takes more (AS-C5's
    # tests): a plan's odds then give `out` beside `down` (the pool brought to 0)
    out_at_zero: ClassVar[bool] = True
    # the counters whose value is a combatant's id (GC-P2 a riposte): a player sees one only when it
    # sees that combatant (hidden things are unknown things)
    naming_counters: ClassVar[tuple[str, ...]] = ()
    # the step fields whose value is a combatant's id or a list of them (AS-C11 `members`): a player
    # reads only the ids of combatants it sees (one it does not see: null)
    naming_step_fields: ClassVar[tuple[str, ...]] = ()

    def distance(self, a: tuple[int, int], b: tuple[int, int]) -> int:
        """The distance between two cells as `grid` counts it (at least the larger of |dx| and |dy|:
        a placement looks for the cells at distance d within d cells each way)."""
        return manhattan(a, b)

    # --- resources and state -------------------------------------------------------
    def resources(self, sheet: SheetModel) -> dict[str, dict[str, Any]]:
        return {p.name: {"value": p.value(sheet), "max": p.maximum(sheet)} for p in self.pools}

    def pool(self, name: str | None) -> Pool:
        """A pool by name (the first one by default); 422 naming the known ones."""
        if name is None:
            return self.pools[0]
        for p in self.pools:
            if p.name == name:
                return p
        raise InvalidBody(
            f"unknown resource {name!r}; {self.ruleset} has {', '.join(p.name for p in self.pools)}",
            field="resource",
            code="unknown_name",
        )

    def is_down(self, sheet: SheetModel) -> bool:
        """Out of the fight: skipped by next-turn. Default: the first pool at 0 or below."""
        return self.pools[0].value(sheet) <= 0

    def posture(self, sheet: SheetModel) -> str | None:
        return None

    def pool_changed(self, sheet: SheetModel, pool: Pool, before: int, after: int) -> Sequence[Step]:
        """The GM's heal/damage changed a pool of `sheet` (a copy): the ruleset updates what follows
        from it in place (WA-C5 `down`) and returns the steps saying so; default nothing."""
        return []

    round_end_reads_sheets: ClassVar[bool] = False  # every combatant's sheet is read at a round's end (AS-C5)

    def gm_damage(self, target: Party, pool: Pool, before: int, amount: int, round_: int) -> Sequence[Step]:
        """The GM's `damage` of `amount` lowered `pool` of `target` from `before` to the value on its
        sheet now (the raw amount, within the pool's bounds). `target` is a copy the ruleset changes
        in place where the rules say what follows (GC-P6 Revive sets the pool again and its counters;
        AS-C5's mal en point tests roll with `target.dice`, from the body's `dice` when the ruleset's
        model takes them); returns the steps. Default: nothing follows."""
        return []

    def turn_passes(self, combatant_id: str, counters: dict[str, Any], phase: str, round_: int) -> TurnPassed | None:
        """A combatant's turn starts or ends (`start_of_turn` / `end_of_turn`; a skipped turn passes too):
        what the ruleset's per-turn state becomes (`counters` is a copy), or None when nothing changes."""
        return None

    def turn_changes(self, counters: dict[str, Any]) -> dict[str, Any] | None:
        """The turn changes (`lapses_at_turn_change`): a combatant's counters after it (GC-P2 a riposte
        unused is gone), or None when nothing changes; default None."""
        return None

    def fight_ends(self, combatant_id: str, sheet: SheetModel, counters: dict[str, Any]) -> Sequence[Step]:
        """The encounter ends (`changes_at_fight_end`): the ruleset changes `sheet` and `counters` (copies) in
        place and returns the steps (GC-P6: special postures end); default nothing."""
        return []

    def ticks_at_round_end(self, conditions: list[dict[str, Any]]) -> bool:
        """Whether a combatant bearing these conditions has something counted at the end of each
        round (AS-C5's dying and unconscious rounds): only those combatants' sheets are read."""
        return False

    def round_ends(
        self, combatant_id: str, sheet: SheetModel, conditions: list[dict[str, Any]], round_: int
    ) -> tuple[list[dict[str, Any]], Sequence[Step]]:
        """The end of round `round_` for one combatant, down or not: the ruleset changes `sheet` (a
        copy) in place and returns (its conditions after, the steps); default nothing."""
        return conditions, []

    def check_reaction(self, reaction: str) -> None:
        if reaction not in self.reactions:
            raise InvalidBody(
                f"unknown reaction {reaction!r}; {self.ruleset} knows {', '.join(self.reactions)}",
                field="reaction",
                code="unknown_name",
            )

    # --- turn order ----------------------------------------------------------------------
    @abstractmethod
    def roll_initiative(
        self, dice: CombatDice, entrants: list[Entrant], options: EncounterOptions, campaign_options: Any
    ) -> Initiative:
        """The first round's order (entrants in the order they were added; `campaign_options`: the
        ruleset's parsed `Options`, as `Exchange.campaign_options`)."""

    def stopped(self, counters: dict[str, Any], sheet: SheetModel, round_: int) -> Step | None:
        """A step saying why the rules keep this combatant from acting in this round (GC-P7), or None."""
        return None

    def next_round(
        self,
        dice: CombatDice,
        order: list[dict[str, Any]],
        entrants: list[Entrant] | None,
        round_: int,
        options: EncounterOptions,
        campaign_options: Any,
    ) -> Initiative | None:
        """The order of round `round_` (2, 3, …), or None when it stays as it is.
        `entrants` is given (every sheet read) only when `reorders_each_round`."""
        return None

    def joining(self, entries: list[dict[str, Any]], round_: int) -> list[dict[str, Any]]:
        """Of the order `roll_initiative` gave combatants joining a running fight
        in round `round_`, the entries that count (default: all)."""
        return entries

    def can_act_in(self, order_entry: dict[str, Any], round_: int) -> bool:
        """Whether this entry of the order acts in this round (RB-F4: a critical failure from round 2)."""
        return order_entry.get("from_round", 1) <= round_

    # --- actions ---------------------------------------------------------------------------
    combat_actions: ClassVar[dict[str, type[CombatAction]]] = {}  # type -> its request model (the capabilities)

    def action_models(self) -> dict[str, type[BaseModel]]:
        """Every action type of this ruleset -> its request model: the GM's heal/damage/condition
        and the combat actions the ruleset implements."""
        return {**GM_ACTIONS, **self.combat_actions}

    def action_union(self) -> Any:
        """The request body of an action in this ruleset: a union discriminated by `type`."""
        models = list(dict.fromkeys(self.action_models().values()))
        prefix = "".join(part.capitalize() for part in self.ruleset.split("-"))
        return union(f"{prefix}EncounterActionRequest", models, "type")  # several: GM_ACTIONS alone are three

    def parse_action(self, body: Any) -> BaseModel:
        """The body validated by this ruleset's model of its `type` (unknown fields: 422);
        a type the ruleset does not implement is a 422 naming those it has, as is a `type` that is
        no string (`{}`, `[1]`: unhashable)."""
        models = self.action_models()
        type_ = body.get("type") if isinstance(body, dict) else None
        if not isinstance(type_, str):
            raise InvalidBody(f"`type` is one of {', '.join(models)}", field="type")
        if type_ not in models:
            raise unsupported(self.ruleset, type_, list(models))
        return validate(models[type_], body)

    def involved(self, req: CombatAction) -> list[tuple[str, str]]:
        """Combatants besides the actor and the target the action reads and changes, each with
        the body field naming it (AS-C4 a second target, AS-C11 a group of extras); default none."""
        return []

    def replays(self, req: CombatAction) -> str | None:
        """The id of the action this request resolves again (AS-H2's heroism reroll: the flow checks
        it is the fight's latest, undoes it and resolves `replay_body` with this request's dice),
        or None (default: every action is new)."""
        return None

    def replay_body(self, req: CombatAction, logged: dict[str, Any]) -> dict[str, Any]:
        """The request to resolve again, from the logged body of the action `replays` named (a
        refusal is a 409 naming the rule); only called when `replays` names one."""
        raise unsupported(self.ruleset, req.type, list(self.action_models()))

    def out_of_turn(self, actor: Party, req: CombatAction) -> str | None:
        """The rule letting this combatant act outside its turn (a riposte, a counter-attack), or None."""
        return None

    # --- actions per turn (README "Actions per turn"; see the module's docstring) -------------
    # an action type -> ACTION (counts), MOVE (the ruleset's movement rules govern it) or FREE
    # (never counts); a type missing here is an ACTION. GC-D4: a dash gives the action up, so it is
    # one; GC-P1: a posture change is not the turn's action.
    action_kinds: ClassVar[dict[str, str]] = {
        "attack": ACTION,
        "final_skill": ACTION,
        "dash": ACTION,
        "move": MOVE,
        "posture": FREE,
    }
    # the rules of this ruleset that grant more than the turn's one action, each with what it
    # grants (named in the 409 refusing a second action), e.g. "RB-F3 a critical dodge's free attack"
    more_actions: ClassVar[tuple[str, ...]] = ()

    def actions_per_turn(self, actor: Party, round_: int) -> int:
        """How many actions this combatant takes in its current turn: one (0: the rules cancel it)."""
        return 1

    def granted_action(self, actor: Party, req: CombatAction) -> str | None:
        """The rule granting this action beyond the turn's count (it is then not counted), or
        None; default: the rule that lets it act outside its turn (`out_of_turn`)."""
        return self.out_of_turn(actor, req)

    def action_kind(self, type_: str) -> str:
        return self.action_kinds.get(type_, ACTION)

    def attack(self, x: Exchange) -> None:
        """`attack`: the attack test, the reaction test(s) (`x.reaction`), damage, karma effects."""
        raise unsupported(self.ruleset, "attack", list(self.action_models()))

    def move(self, x: Exchange) -> None:
        raise unsupported(self.ruleset, "move", list(self.action_models()))

    def dash(self, x: Exchange) -> None:
        raise unsupported(self.ruleset, "dash", list(self.action_models()))

    def posture_action(self, x: Exchange) -> None:
        """`posture` (named so: `posture(sheet)` reads the current one)."""
        raise unsupported(self.ruleset, "posture", list(self.action_models()))

    def final_skill(self, x: Exchange) -> None:
        raise unsupported(self.ruleset, "final_skill", list(self.action_models()))

    def action_costs(self, type_: str, sheet: SheetModel) -> dict[str, Any] | None:
        """What an action of this type may cost the combatant whose sheet this is (`choices`):
        `{choice: {resource: amount}}` for each choice that spends something, and `available`: what
        the sheet holds of those resources; None when nothing it does costs."""
        return None

    def needs(self, type_: str, sheet: SheetModel) -> tuple[str, ...]:
        """What a body of this type must say because this sheet cannot (`choices`' `needs`): an
        attack's `damage` expression when the sheet holds no weapon to strike with."""
        return ("damage",) if type_ == "attack" and not self.weapons(sheet) else ()

    def weapons(self, sheet: SheetModel) -> list[Any]:
        """The weapons an attack may take its damage from (default: the sheet's `weapons`)."""
        return list(getattr(sheet, "weapons", None) or [])

    def odds(self, x: Exchange) -> ExchangeOdds | None:
        """The exact odds of the action `x` would resolve (`actions/plan`), built from
        the same pure rules as the action; None when the ruleset has none for this type (the plan
        then counts the action's resolutions one by one, when few)."""
        return None

    def resolve(self, x: Exchange) -> None:
        """Dispatch `x.req.type` to its method."""
        type_ = x.req.type
        if type_ not in self.combat_actions:
            raise unsupported(self.ruleset, type_, list(self.action_models()))
        {
            "attack": self.attack,
            "move": self.move,
            "dash": self.dash,
            "posture": self.posture_action,
            "final_skill": self.final_skill,
        }[type_](x)
