"""Use cases that apply a ruleset: tests, odds, level-ups, rerolls, character
actions, confrontations and group tests. Each rolling one is a `RollingWork` (one
transaction) read top to bottom, `retried` when a concurrent writer beat it."""
from __future__ import annotations

from fractions import Fraction
from typing import Any

from sqlmodel import Session

from app.kit.errors import NotFound
from app.rules.dice import dice_source
from app.services import rolls
from app.services.auth import Principal, check_gm, check_owner_or_gm
from app.services.characters import load_character
from app.services.operations import Idempotency, RollingWork, log_entry_body, retried
from app.services.rulesets import get_adapter
from app.services.rulesets.base import SUCCESS_OUTCOMES, OUTCOMES, Capability, OperationContext
from app.services.validation import validate


def run_test(session: Session, principal: Principal, character_id: str, body: dict, idem: Idempotency | None) -> dict[str, Any]:
    """Owner or GM: one test of the ruleset, its effects saved."""
    return _test(RollingWork(session, principal, principal.campaign_id, idem), character_id, body)


@retried
def _test(uow: RollingWork, character_id: str, body: dict) -> dict[str, Any]:
    with uow:
        [hero] = uow.lock([character_id])
        req = validate(uow.adapter.TestRequest, body)
        check_owner_or_gm(uow.principal, hero.player_id, "test this character")
        return uow.commit(uow.adapter.test(hero, req, uow.context(req)))


def level_up(session: Session, principal: Principal, character_id: str, body: dict, idem: Idempotency | None) -> dict[str, Any]:
    """GM: the ruleset's level-up (422 where it has none)."""
    return _level_up(RollingWork(session, principal, principal.campaign_id, idem), character_id, body)


@retried
def _level_up(uow: RollingWork, character_id: str, body: dict) -> dict[str, Any]:
    with uow:
        [hero] = uow.lock([character_id])
        req = validate(uow.adapter.request_model(Capability.LEVEL_UP), body)
        check_gm(uow.principal, "level a character up")
        return uow.commit(uow.adapter.level_up(hero, req, uow.context(req)))


def reroll(session: Session, principal: Principal, character_id: str, test_id: str, body: dict, idem: Idempotency | None) -> dict[str, Any]:
    """Owner or GM: cancel a test and roll it again (where the ruleset allows)."""
    return _reroll(RollingWork(session, principal, principal.campaign_id, idem), character_id, test_id, body)


@retried
def _reroll(uow: RollingWork, character_id: str, test_id: str, body: dict) -> dict[str, Any]:
    with uow:
        [hero] = uow.lock([character_id])
        req = validate(uow.adapter.request_model(Capability.REROLL), body)
        check_owner_or_gm(uow.principal, hero.player_id, "reroll this character's test")
        ctx = uow.context(req)
        previous = ctx.get_log_entry(test_id)
        if previous is None or previous.get("kind") != "test" or previous.get("character_id") != character_id:
            raise NotFound("no test with this id for this character")
        return uow.commit(uow.adapter.reroll(hero, previous, req, ctx))


def character_action(session: Session, principal: Principal, character_id: str, body: dict, idem: Idempotency | None) -> dict[str, Any]:
    """A ruleset-specific action (its body's `type` names it in the ruleset's registry)."""
    return _action(RollingWork(session, principal, principal.campaign_id, idem), character_id, body)


@retried
def _action(uow: RollingWork, character_id: str, body: dict) -> dict[str, Any]:
    with uow:
        [hero] = uow.lock([character_id])
        action = uow.adapter.action_for(body)
        req = validate(action.model, body)
        if action.gm_only:
            check_gm(uow.principal, f"perform the action {req.type!r}")
        check_owner_or_gm(uow.principal, hero.player_id, "act for this character")
        return uow.commit(action.handler(hero, req, uow.context(req)))


def opposed(session: Session, principal: Principal, campaign_id: str, body: dict, idem: Idempotency | None) -> dict[str, Any]:
    """GM: a confrontation of two characters' tests (where the ruleset has one)."""
    return _opposed(RollingWork(session, principal, campaign_id, idem), body)


@retried
def _opposed(uow: RollingWork, body: dict) -> dict[str, Any]:
    with uow:
        req = validate(uow.adapter.request_model(Capability.OPPOSED), body)
        a, b = uow.lock([req.a.character_id, req.b.character_id])
        check_gm(uow.principal, "run a confrontation")
        return uow.commit(uow.adapter.opposed(a, b, req, uow.context(req)))


def group(session: Session, principal: Principal, campaign_id: str, body: dict, idem: Idempotency | None) -> dict[str, Any]:
    """GM: a group test (cooperation, ranking: where the ruleset has one)."""
    return _group(RollingWork(session, principal, campaign_id, idem), body)


@retried
def _group(uow: RollingWork, body: dict) -> dict[str, Any]:
    with uow:
        req = validate(uow.adapter.request_model(Capability.GROUP), body)
        participants = uow.lock([p.character_id for p in req.participants])
        check_gm(uow.principal, "run a group test")
        return uow.commit(uow.adapter.group(participants, req, uow.context(req)))


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
