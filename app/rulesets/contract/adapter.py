"""The contract between the generic use cases and one ruleset's operations on characters: its
adapter (`RulesetAdapter`, each ruleset's adapter.py `ADAPTER`).

A ruleset is one package, `app/rulesets/<id>/` (see app/rulesets/__init__.py and
docs/adding-a-ruleset.md): its pure `rules/`, `schemas.py` (pydantic schemas of its
sheet, options and request bodies), `results.py`, `adapter.py` (an adapter
subclassing `RulesetAdapter[Sheet, Options]`) and `combat.py` (its `EncounterRules`, the combat
contract: app/rulesets/contract/combat.py).
The generic services load characters, parse their sheets and the campaign's options into the ruleset's models (once per
operation), build the dice source, call the adapter, then persist its `Outcome`
in one unit of work (log entry + every sheet it changed) with idempotency and events.

Every ruleset tests and computes odds (`test`, `odds`: abstract). Each optional
capability is declared once, by subclassing its interface with its request model
(`LevelUps[LevelUpRequest]`, `Rerolls[…]`, `Confrontations[…]`, `GroupTests[…]`), or, for
character actions, by the `actions` registry of `Action(model, handler, gm_only)`.
`request_models(capability)` derives from that declaration: routes, the catalogue
and the OpenAPI document read it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from typing import Any, ClassVar, Generic, TypeVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError

from app.kit.models import CampaignOptions, RollingRequest, TestRequestBase
from app.models.results.common import Head
from app.models.validation import InvalidBody
from app.rules.dice import DiceSource
from app.rules.errors import RuleError, UnsupportedOperation

__all__ = [
    "OUTCOMES",
    "SUCCESS_OUTCOMES",
    "Capability",
    "CharacterState",
    "OperationContext",
    "Outcome",
    "Odds",
    "Action",
    "RulesetDescription",
    "RulesetAdapter",
    "LevelUps",
    "Rerolls",
    "Confrontations",
    "GroupTests",
    "test_body",
]

OUTCOMES = (
    "super_critical_success",
    "critical_success",
    "success",
    "failure",
    "critical_failure",
    "super_critical_failure",
)
SUCCESS_OUTCOMES = frozenset({"success", "critical_success", "super_critical_success"})

SheetT = TypeVar("SheetT", bound=BaseModel)
OptionsT = TypeVar("OptionsT", bound=CampaignOptions)
RequestT = TypeVar("RequestT", bound=BaseModel)


@dataclass(frozen=True)
class CharacterState(Generic[SheetT]):
    """A stored character as an adapter sees it: its sheet parsed into the ruleset's
    `Sheet` model. Never mutated: an adapter returns a changed copy
    (`sheet.model_copy(update=…)` or `model_copy(deep=True)`) in `Outcome.sheets`."""

    id: str
    campaign_id: str
    name: str
    kind: str  # "pc" | "npc"
    player_id: str | None
    sheet: SheetT
    version: int


@dataclass
class OperationContext(Generic[OptionsT]):
    """What an adapter may use besides its inputs; `options` is the campaign's,
    parsed into the ruleset's `Options` (read them as attributes)."""

    dice: DiceSource
    options: OptionsT
    is_gm: bool
    # Looks up a roll-log entry of this campaign by id (the body it was returned
    # with), or None: used by rules that refer to an earlier test (AS-T4, AS-H2).
    get_log_entry: Callable[[str], dict | None] = lambda _id: None
    # The latest roll-log entries involving a character (its own and those naming it: a fight's
    # action), newest first, at most `LATEST_ENTRIES`: used by a rule that refers to the blow
    # just taken (AS-H4).
    latest_entries: Callable[[str], list[dict]] = lambda _id: []


@dataclass
class Outcome:
    """What an operation produced: its result model and the sheets it changed.

    `body` is the ruleset's result model (a `Head` … `Tail` entry of its results.py, built
    with `Model.of(...)`); the service stamps the roll-log fields on it (`id`, `hidden`,
    `created_at`, `provenance`, and `rolls`, every die of `ctx.dice`, for a `Dice` entry),
    serialises it once for the log, the idempotency record and the response, and saves
    every sheet in `sheets` (character id -> the new sheet, a model of the ruleset's
    `Sheet`) in the same transaction.
    """

    body: Head
    character_id: str | None = None
    sheets: Mapping[str, BaseModel] = field(default_factory=dict)
    # the log entry this one cancels and replaces (AS-H2): an entry is cancelled once at most
    cancels: str | None = None
    # a test's exact odds of each outcome (all six), when the operation rolled one the test use case
    # did not (an AS-H2 reroll of a test): the service records its p_success as every test's
    odds: Mapping[str, Fraction] | None = None

    @property
    def kind(self) -> str:
        return self.body.kind


@dataclass
class Odds:
    """Exact probabilities: one per outcome (all six present), plus ruleset extras
    (e.g. the distribution of success levels) as {name: {value: Fraction}}."""

    outcomes: dict[str, Fraction]
    extra: dict[str, dict[str, Fraction]] = field(default_factory=dict)


class Capability(StrEnum):
    """What a ruleset may offer; `RulesetAdapter.request_models` is the one answer
    to "does this ruleset support X" (routes, catalogue and OpenAPI read it)."""

    TEST = "test"
    ODDS = "odds"
    REROLL = "reroll"
    LEVEL_UP = "level_up"
    OPPOSED = "opposed"
    GROUP = "group"
    ACTION = "action"


@dataclass(frozen=True)
class Action(Generic[SheetT, OptionsT]):
    """One character action of a ruleset (`POST /v1/characters/{id}/actions`, its
    body's `type` names it): the body model, the rule that applies it, and whether
    only the GM may perform it (the others: the character's owner or the GM)."""

    model: type[RollingRequest]
    handler: Callable[[CharacterState[SheetT], Any, OperationContext[OptionsT]], Outcome]
    gm_only: bool = False


class RulesetDescription(BaseModel):
    """What `GET /v1/rulesets/{id}` says of a ruleset besides its schemas. Every
    ruleset answers these fields; its subclass declares its own."""

    model_config = ConfigDict(extra="forbid")

    id: str
    title: str
    stats: list[str]  # what a test names (Asgard: its skills)
    difficulties: dict[str, Any] = {}
    outcomes: list[str]


class CapabilityInterface(ABC):
    """An optional capability: an adapter offers it by subclassing the interface
    with its request model (`LevelUps[models.LevelUpRequest]`) and implementing its method."""

    capability: ClassVar[Capability]
    method: ClassVar[str]
    unsupported: ClassVar[str]  # "<ruleset> has no <this> rule"


class LevelUps(CapabilityInterface, Generic[RequestT]):
    """`POST /v1/characters/{id}/level-ups` (GM)."""

    capability = Capability.LEVEL_UP
    method = "level_up"
    unsupported = "level-up"

    @abstractmethod
    def level_up(self, ch: CharacterState, req: RequestT, ctx: OperationContext) -> Outcome:
        """One level more for `ch`; the new sheet in the outcome."""


class Rerolls(CapabilityInterface, Generic[RequestT]):
    """`POST /v1/characters/{id}/tests/{test_id}/reroll` (owner or GM)."""

    capability = Capability.REROLL
    method = "reroll"
    unsupported = "reroll"

    @abstractmethod
    def reroll(self, ch: CharacterState, previous: dict[str, Any], req: RequestT, ctx: OperationContext) -> Outcome:
        """Cancel `previous` (the logged test body) and roll it again; set `Outcome.cancels`."""


class Confrontations(CapabilityInterface, Generic[RequestT]):
    """`POST /v1/campaigns/{id}/tests/opposed` (GM)."""

    capability = Capability.OPPOSED
    method = "opposed"
    unsupported = "confrontation"

    @abstractmethod
    def opposed(self, a: CharacterState, b: CharacterState, req: RequestT, ctx: OperationContext) -> Outcome:
        """`a`'s test against `b`'s."""


class GroupTests(CapabilityInterface, Generic[RequestT]):
    """`POST /v1/campaigns/{id}/tests/group` (GM)."""

    capability = Capability.GROUP
    method = "group"
    unsupported = "group test"

    @abstractmethod
    def group(self, chars: list[CharacterState], req: RequestT, ctx: OperationContext) -> Outcome:
        """Every participant (in `req`'s order) tests."""


INTERFACES: tuple[type[CapabilityInterface], ...] = (LevelUps, Rerolls, Confrontations, GroupTests)


class StoredSheetInvalid(RuleError):
    title = "Stored sheet no longer valid"
    code = "stored_sheet_invalid"


class RulesetAdapter(ABC, Generic[SheetT, OptionsT]):
    """One ruleset seen from the services. A subclass names its models once, in
    its bases: `RulesetAdapter[Sheet, Options]` (→ `Sheet`, `Options`) and each
    capability interface it offers (→ `request_models`); it sets `id`, `title`,
    `TestRequest`, `OddsRequest`, and `actions` if it has character actions."""

    id: ClassVar[str]
    title: ClassVar[str]
    # the models named by the subclass's RulesetAdapter[Sheet, Options] (__init_subclass__); not
    # ClassVars only because a ClassVar may not name the type variables
    Sheet: type[SheetT]
    Options: type[OptionsT]
    TestRequest: ClassVar[type[TestRequestBase]]
    OddsRequest: ClassVar[type[TestRequestBase]]  # the test's body without seed/dice/hidden (app.models.odds)
    # type -> Action: the ruleset's character actions (none: no action route for it)
    actions: ClassVar[Mapping[str, Action]] = {}
    # capability -> the request model of each interface the adapter subclasses
    capability_requests: ClassVar[Mapping[Capability, type[BaseModel]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        requests: dict[Capability, type[BaseModel]] = {}
        for klass in reversed(cls.__mro__):
            for base in klass.__dict__.get("__orig_bases__", ()):
                origin, args = get_origin(base), get_args(base)
                if any(isinstance(a, TypeVar) for a in args):
                    continue  # a generic intermediate class: its concrete subclass names the models
                if origin is RulesetAdapter:
                    cls.Sheet, cls.Options = args
                elif isinstance(origin, type) and issubclass(origin, CapabilityInterface):
                    requests[origin.capability] = args[0]
        for interface in INTERFACES:
            if interface.capability not in requests and callable(getattr(cls, interface.method, None)):
                raise TypeError(
                    f"{cls.__name__}.{interface.method}: declare the capability by subclassing "
                    f"{interface.__name__}[<request model>]"
                )
        cls.capability_requests = requests

    # --- what the ruleset offers -----------------------------------------------
    def request_models(self, capability: Capability) -> list[type[BaseModel]]:
        """The request body models of a capability ([] = not offered by this ruleset;
        several for character actions, one per action type)."""
        if capability is Capability.TEST:
            return [self.TestRequest]
        if capability is Capability.ODDS:
            return [self.OddsRequest]
        if capability is Capability.ACTION:
            return [action.model for action in self.actions.values()]
        model = self.capability_requests.get(capability)
        return [model] if model is not None else []

    def supports(self, capability: Capability) -> bool:
        return bool(self.request_models(capability))

    def request_model(self, capability: Capability) -> type[Any]:
        """The body model of a one-body capability; 422 'unsupported' when the ruleset lacks it.
        (Typed Any: the capability's method reads the fields of the ruleset's own model.)"""
        model = self.capability_requests.get(capability)
        if model is None:
            what = next(i.unsupported for i in INTERFACES if i.capability is capability)
            raise UnsupportedOperation(f"{self.id} has no {what} rule")
        return model

    def action_for(self, body: Any) -> Action:
        """The action a body's `type` names; 422 naming the known types otherwise."""
        kind = body.get("type") if isinstance(body, dict) else None
        if not isinstance(kind, str) or kind not in self.actions:
            known = ", ".join(sorted(self.actions)) or "none"
            raise InvalidBody(
                f"unknown action type {kind!r} for {self.id}; known: {known}",
                field="type",
                code="unsupported_operation",
            )
        return self.actions[kind]

    # --- parsing (once per operation) --------------------------------------------
    def parse_sheet(self, stored: dict[str, Any]) -> SheetT:
        """A stored sheet as the ruleset's model (stored sheets were normalized, so
        this fails only when a sheet model became stricter since). Read in lax mode: a
        request's body is strict (a boolean is `true`, not `"yes"`), what was stored before a
        field became strict is still read as it was accepted then."""
        try:
            return self.Sheet.model_validate(stored, strict=False)
        except ValidationError as exc:
            raise StoredSheetInvalid(
                f"the stored sheet no longer fits the {self.id} sheet schema: "
                f"{exc.errors(include_url=False)[0]['msg']}; the GM should edit it",
                field="sheet",
            ) from None

    def sheet_as_now(self, stored: dict[str, Any]) -> dict[str, Any]:
        """A stored sheet in the form a sheet is stored in today (read in lax mode, then dumped):
        what a merge patch is applied to, so a value stored while its field was lax ("3" for 3)
        does not make a request that never sent it invalid. As stored when it no longer fits at
        all (the patch may be what mends it)."""
        try:
            return self.dump_sheet(self.parse_sheet(stored))
        except StoredSheetInvalid:
            return stored

    def options_as_now(self, stored: dict[str, Any]) -> dict[str, Any]:
        """Stored campaign options in today's stored form (see `sheet_as_now`)."""
        try:
            return self.parse_options(stored).model_dump(mode="json")
        except ValidationError:
            return stored

    def parse_options(self, stored: dict[str, Any]) -> OptionsT:
        """Stored campaign options as the ruleset's model, in lax mode (see `parse_sheet`)."""
        return self.Options.model_validate(stored, strict=False)

    def state(self, stored: Any) -> CharacterState[SheetT]:
        """A stored character (anything with its columns as attributes), its sheet parsed."""
        return CharacterState(
            stored.id,
            stored.campaign_id,
            stored.name,
            stored.kind,
            stored.player_id,
            self.parse_sheet(stored.sheet),
            stored.version,
        )

    @staticmethod
    def dump_sheet(sheet: BaseModel) -> dict[str, Any]:
        """A sheet as it is stored (JSON)."""
        return sheet.model_dump(mode="json")

    # --- catalogue and sheets -------------------------------------------------
    @abstractmethod
    def describe(self) -> RulesetDescription:
        """Stats, difficulty tables and anything else a client needs to build a UI."""

    def normalize_sheet(self, raw: dict[str, Any], *, kind: str, gm_override: bool = False) -> dict[str, Any]:
        """Validate a sheet (pydantic ValidationError or RuleError on failure) and
        fill its derived defaults; returns the sheet as stored."""
        return self.dump_sheet(self.Sheet.model_validate(raw))

    def normalize_sheet_in_context(
        self, raw: dict[str, Any], *, kind: str, gm_override: bool, options: OptionsT, previous: dict[str, Any] | None
    ) -> dict[str, Any]:
        """What character writes call: `normalize_sheet` with the campaign's options and
        the stored sheet (None on creation). Override where a rule depends on them."""
        return self.normalize_sheet(raw, kind=kind, gm_override=gm_override)

    def derived(self, sheet: SheetT) -> dict[str, Any]:
        """Values computed from the sheet that clients should not recompute."""
        return {}

    # --- operations every ruleset has ---------------------------------------------
    @abstractmethod
    def test(self, ch: CharacterState[SheetT], req: Any, ctx: OperationContext[OptionsT]) -> Outcome:
        """One test of `ch` (the request is the ruleset's `TestRequest`)."""

    @abstractmethod
    def odds(self, ch: CharacterState[SheetT], req: Any, ctx: OperationContext[OptionsT]) -> Odds:
        """The exact odds of that test; nothing rolled."""


ResultT = TypeVar("ResultT", bound=BaseModel)


def test_body(
    model: type[ResultT],
    ch: CharacterState,
    ruleset: str,
    *,
    natural: int | None,
    score: int | None,
    target: int | None,
    outcome: str,
    success_level: int | None = None,
    degree: str | None = None,
    effects: dict[str, Any] | None = None,
    **extra: Any,
) -> ResultT:
    """API.md's result of a test as `model` (fields that do not apply are null): a test entry
    (a `Head` model: its `of`) or a test inside another result."""
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}")
    fields = {
        "character_id": ch.id,
        "ruleset": ruleset,
        "kind": "test",
        "natural": natural,
        "score": score,
        "target": target,
        "outcome": outcome,
        "success": outcome in SUCCESS_OUTCOMES,
        "success_level": success_level,
        "degree": degree,
        "effects": effects or {},
        **extra,
    }
    return model.of(**fields) if issubclass(model, Head) else model.model_validate(fields)
