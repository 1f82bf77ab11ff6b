"""The contract between the generic use cases and one ruleset.

A ruleset is three files: `app/rules/<id>.py` (pure rules: stdlib only),
`app/models/rulesets/<id>.py` (pydantic schemas of its sheet, options and
request bodies) and `app/services/rulesets/<id>.py` (an adapter subclassing
`RulesetAdapter`). The generic services load characters, build the dice
source, call the adapter, then persist its `Outcome` in one transaction
(log entry + every sheet it changed) and handle idempotency and events.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from typing import Any, Callable, ClassVar

from pydantic import BaseModel

from app.kit.models import CampaignOptions, RollingRequest, Strict, TestRequestBase
from app.rules.dice import DiceSource
from app.rules.errors import UnsupportedOperation

OUTCOMES = (
    "super_critical_success",
    "critical_success",
    "success",
    "failure",
    "critical_failure",
    "super_critical_failure",
)
SUCCESS_OUTCOMES = frozenset({"success", "critical_success", "super_critical_success"})


@dataclass(frozen=True)
class CharacterState:
    """A snapshot of a stored character handed to an adapter (never mutated)."""

    id: str
    campaign_id: str
    name: str
    kind: str  # "pc" | "npc"
    player_id: str | None
    sheet: dict[str, Any]
    version: int


@dataclass
class OperationContext:
    """What an adapter may use besides its inputs."""

    dice: DiceSource
    options: CampaignOptions
    is_gm: bool
    # Looks up a roll-log entry of this campaign by id (the body it was returned
    # with), or None: used by rules that refer to an earlier test (AS-T4, AS-H2).
    get_log_entry: Callable[[str], dict | None] = lambda _id: None


@dataclass
class Outcome:
    """What an operation produced: the response body and the sheets it changed.

    The service adds `id`, `created_at`, `hidden` and, when the body has none,
    `rolls` (every die of `ctx.dice`), logs the body under `kind` and saves every
    sheet in `sheets` (character id -> full new sheet) in the same transaction.
    """

    kind: str
    body: dict[str, Any]
    character_id: str | None = None
    sheets: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the log entry this one cancels and replaces (AS-H2): an entry is cancelled once at most
    cancels: str | None = None


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


class RulesetAdapter:
    """One ruleset seen from the services. Subclasses set the class attributes
    and override what their rules support; the rest answers 422 'unsupported'."""

    id: ClassVar[str]
    title: ClassVar[str]
    Sheet: ClassVar[type[BaseModel]]
    Options: ClassVar[type[CampaignOptions]] = CampaignOptions
    TestRequest: ClassVar[type[TestRequestBase]]
    LevelUpRequest: ClassVar[type[RollingRequest] | None] = None
    RerollRequest: ClassVar[type[RollingRequest]] = RollingRequest
    OpposedRequest: ClassVar[type[BaseModel] | None] = None
    GroupRequest: ClassVar[type[BaseModel] | None] = None
    # type -> body model of each ruleset-specific character action
    actions: ClassVar[dict[str, type[RollingRequest]]] = {}
    # action types only the GM may perform (the others: the owner or the GM)
    gm_only_actions: ClassVar[frozenset[str]] = frozenset()

    def request_models(self, capability: Capability) -> list[type[BaseModel]]:
        """The request body models of a capability ([] = not offered by this ruleset;
        several for character actions, one per action type)."""
        if capability in (Capability.TEST, Capability.ODDS):
            return [self.TestRequest]
        if capability is Capability.ACTION:
            return list(self.actions.values())
        model = {Capability.REROLL: self.RerollRequest, Capability.LEVEL_UP: self.LevelUpRequest,
                 Capability.OPPOSED: self.OpposedRequest, Capability.GROUP: self.GroupRequest}[capability]
        return [model] if model is not None else []

    def supports(self, capability: Capability) -> bool:
        return bool(self.request_models(capability))

    # --- catalogue and sheets -------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """Stats, difficulty tables and anything else a client needs to build a UI."""
        raise NotImplementedError

    def normalize_sheet(self, raw: dict[str, Any], *, kind: str, gm_override: bool = False) -> dict[str, Any]:
        """Validate a sheet (pydantic ValidationError or RuleError on failure) and
        fill its derived defaults; returns the sheet as stored."""
        return self.Sheet.model_validate(raw).model_dump(mode="json")

    def normalize_sheet_in_context(self, raw: dict[str, Any], *, kind: str, gm_override: bool,
                                   options: CampaignOptions, previous: dict[str, Any] | None) -> dict[str, Any]:
        """What character writes call: `normalize_sheet` with the campaign's options and
        the stored sheet (None on creation). Override where a rule depends on them."""
        return self.normalize_sheet(raw, kind=kind, gm_override=gm_override)

    def derived(self, sheet: dict[str, Any]) -> dict[str, Any]:
        """Values computed from the sheet that clients should not recompute."""
        return {}

    # --- operations -----------------------------------------------------------
    def test(self, ch: CharacterState, req: TestRequestBase, ctx: OperationContext) -> Outcome:
        raise NotImplementedError

    def odds(self, ch: CharacterState, req: TestRequestBase, ctx: OperationContext) -> Odds:
        raise NotImplementedError

    def level_up(self, ch: CharacterState, req: BaseModel, ctx: OperationContext) -> Outcome:
        raise UnsupportedOperation(f"{self.id} has no level-up rule")

    def opposed(self, a: CharacterState, b: CharacterState, req: BaseModel, ctx: OperationContext) -> Outcome:
        raise UnsupportedOperation(f"{self.id} has no confrontation rule")

    def group(self, chars: list[CharacterState], req: BaseModel, ctx: OperationContext) -> Outcome:
        raise UnsupportedOperation(f"{self.id} has no group test rule")

    def reroll(self, ch: CharacterState, previous: dict[str, Any], req: RollingRequest, ctx: OperationContext) -> Outcome:
        raise UnsupportedOperation(f"{self.id} has no reroll rule")

    def action(self, ch: CharacterState, req: RollingRequest, ctx: OperationContext) -> Outcome:
        raise UnsupportedOperation(f"{self.id} has no character action {getattr(req, 'type', '?')!r}")


def test_body(
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
) -> dict[str, Any]:
    """The result shape of API.md for a test (fields that do not apply are null)."""
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}")
    return {
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
