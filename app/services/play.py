"""Use cases that apply a ruleset: tests, odds, level-ups, rerolls, character
actions, confrontations and group tests. Each is one `perform` (one transaction)."""
from __future__ import annotations

from fractions import Fraction
from typing import Any

from sqlmodel import Session

from app.kit.errors import NotFound
from app.rules.dice import dice_source
from app.services import rolls
from app.services.auth import Principal, check_gm, check_owner_or_gm
from app.services.characters import load_character
from app.services.operations import Idempotency, log_entry_body, perform, state
from app.services.rulesets import get_adapter
from app.services.rulesets.base import SUCCESS_OUTCOMES, OUTCOMES, Capability, CharacterState, OperationContext, RulesetAdapter
from app.services.validation import validate


def _owner_or_gm(action: str):
    def authorize(principal: Principal, _adapter, _req, characters: list[CharacterState]) -> None:
        for c in characters:
            check_owner_or_gm(principal, c.player_id, action)
    return authorize


def _gm(action: str):
    def authorize(principal: Principal, _adapter, _req, _characters: list[CharacterState]) -> None:
        check_gm(principal, action)
    return authorize


def run_test(session: Session, principal: Principal, character_id: str, body: dict, idem: Idempotency | None) -> dict[str, Any]:
    return perform(
        session, principal, campaign_id=principal.campaign_id,
        parse=lambda a: validate(a.TestRequest, body),
        targets=[character_id],
        authorize=_owner_or_gm("test this character"),
        run=lambda a, req, chars, ctx: a.test(chars[0], req, ctx),
        idem=idem,
    )


def level_up(session: Session, principal: Principal, character_id: str, body: dict, idem: Idempotency | None) -> dict[str, Any]:
    return perform(
        session, principal, campaign_id=principal.campaign_id,
        parse=lambda a: validate(a.request_model(Capability.LEVEL_UP), body),
        targets=[character_id],
        authorize=_gm("level a character up"),
        run=lambda a, req, chars, ctx: a.level_up(chars[0], req, ctx),
        idem=idem,
    )


def reroll(session: Session, principal: Principal, character_id: str, test_id: str, body: dict, idem: Idempotency | None) -> dict[str, Any]:
    def run(a: RulesetAdapter, req, chars, ctx: OperationContext):
        previous = ctx.get_log_entry(test_id)
        if previous is None or previous.get("kind") != "test" or previous.get("character_id") != character_id:
            raise NotFound("no test with this id for this character")
        return a.reroll(chars[0], previous, req, ctx)

    return perform(
        session, principal, campaign_id=principal.campaign_id,
        parse=lambda a: validate(a.request_model(Capability.REROLL), body),
        targets=[character_id],
        authorize=_owner_or_gm("reroll this character's test"),
        run=run,
        idem=idem,
    )


def character_action(session: Session, principal: Principal, character_id: str, body: dict, idem: Idempotency | None) -> dict[str, Any]:
    def authorize(p: Principal, adapter: RulesetAdapter, req, chars: list[CharacterState]) -> None:
        if adapter.actions[req.type].gm_only:
            check_gm(p, f"perform the action {req.type!r}")
        _owner_or_gm("act for this character")(p, adapter, req, chars)

    return perform(
        session, principal, campaign_id=principal.campaign_id,
        parse=lambda a: validate(a.action_for(body).model, body),
        targets=[character_id],
        authorize=authorize,
        run=lambda a, req, chars, ctx: a.actions[req.type].handler(chars[0], req, ctx),
        idem=idem,
    )


def opposed(session: Session, principal: Principal, campaign_id: str, body: dict, idem: Idempotency | None) -> dict[str, Any]:
    return perform(
        session, principal, campaign_id=campaign_id,
        parse=lambda a: validate(a.request_model(Capability.OPPOSED), body),
        targets=lambda req: [req.a.character_id, req.b.character_id],
        authorize=_gm("run a confrontation"),
        run=lambda a, req, chars, ctx: a.opposed(chars[0], chars[1], req, ctx),
        idem=idem,
    )


def group(session: Session, principal: Principal, campaign_id: str, body: dict, idem: Idempotency | None) -> dict[str, Any]:
    return perform(
        session, principal, campaign_id=campaign_id,
        parse=lambda a: validate(a.request_model(Capability.GROUP), body),
        targets=lambda req: [p.character_id for p in req.participants],
        authorize=_gm("run a group test"),
        run=lambda a, req, chars, ctx: a.group(chars, req, ctx),
        idem=idem,
    )


def fraction_out(p: Fraction) -> dict[str, Any]:
    return {"probability": f"{p.numerator}/{p.denominator}", "p": float(p)}


def odds(session: Session, principal: Principal, character_id: str, body: dict) -> dict[str, Any]:
    """The exact probability of every outcome of a test; nothing rolled or logged."""
    character, campaign = load_character(session, principal, character_id)
    check_owner_or_gm(principal, character.player_id, "see this character's odds")
    adapter = get_adapter(campaign.ruleset)
    req = validate(adapter.TestRequest, body)
    ctx = OperationContext(
        dice=dice_source(dice=[]), options=adapter.parse_options(campaign.options), is_gm=principal.is_gm,
        get_log_entry=lambda entry_id: log_entry_body(session, campaign.id, entry_id, include_hidden=principal.is_gm),
    )
    result = adapter.odds(adapter.state(character), req, ctx)
    outcomes = {name: result.outcomes.get(name, Fraction(0)) for name in OUTCOMES}
    success = sum((p for name, p in outcomes.items() if name in SUCCESS_OUTCOMES), Fraction(0))
    out: dict[str, Any] = {
        "character_id": character.id,
        "ruleset": campaign.ruleset,
        "outcomes": {name: fraction_out(p) for name, p in outcomes.items()},
        "success": fraction_out(success),
    }
    for name, dist in result.extra.items():
        out[name] = {str(k): fraction_out(p) for k, p in dist.items()}
    return out


def level_up_history(session: Session, principal: Principal, character_id: str, limit: int, cursor: str | None) -> dict[str, Any]:
    """The character's level-ups, newest first (404 unless it is in the caller's campaign)."""
    load_character(session, principal, character_id)
    return rolls.list_log(session, principal, principal.campaign_id, limit=limit, cursor=cursor,
                          character_id=character_id, kind="level_up")
