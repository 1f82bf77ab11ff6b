"""Use cases that apply a ruleset: tests, odds, level-ups, rerolls, character
actions, confrontations and group tests. Each rolling one is a `RollingWork` (one
transaction) read top to bottom, `retried` when a concurrent writer beat it."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any

from sqlalchemy import bindparam, select
from sqlmodel import Session

from app.kit.errors import Conflict, NotFound
from app.models.tables import LogEntry, LogEntryCharacter, core_table
from app.models.validation import InvalidBody, validate
from app.rules.dice import dice_source
from app.rulesets.contract.adapter import (
    OUTCOMES,
    Capability,
    CharacterState,
    Confrontations,
    GroupTests,
    LevelUps,
    OperationContext,
    Rerolls,
    RulesetAdapter,
)
from app.rulesets.registry import get_adapter
from app.services import rolls
from app.services.auth import authorize, check_gm
from app.services.characters import load_character
from app.services.idempotency import Idempotency
from app.services.operations import (
    RollingWork,
    about_the_character,
    fraction_out,
    log_entry_body,
    retried,
    success_of,
)
from app.services.records import Principal


def run_test(
    session: Session, principal: Principal, character_id: str, body: dict, idem: Idempotency | None
) -> dict[str, Any]:
    """Owner or GM: one test of the ruleset, its effects saved (the caller's credential, the
    campaign and the character read in one round trip: `RollingWork(lock=…)`)."""
    own_dice = isinstance(body, dict) and (body.get("seed") is not None or body.get("dice") is not None)
    work = RollingWork(session, principal, principal.campaign_id, idem, lock=character_id, server_dice=not own_dice)
    return _test(work, character_id, body)


@retried
def _test(uow: RollingWork, character_id: str, body: dict) -> dict[str, Any]:
    with uow:
        [hero] = uow.lock([character_id])
        req = validate(uow.adapter.TestRequest, body)
        authorize(uow.principal, hero.player_id)
        ctx = uow.context(req)
        outcome = uow.adapter.test(hero, req, ctx)
        odds = outcome_odds(uow.adapter, hero, req, ctx)
        return uow.commit_outcome(outcome, odds=odds)  # its result carries p_success, stamped with the log's fields


def outcome_odds(adapter: RulesetAdapter, hero: CharacterState, req: Any, ctx: OperationContext) -> dict[str, Fraction]:
    """The exact probability of the outcomes of the test `req` as it is rolled (an
    outcome left out has none), the odds route's figures for the same body (`hero` as it was before
    the test: the rules return new sheets, never change the one they read). Nothing rolled: its
    own empty dice. The ruleset's own object (its cached computation's: shared, never changed)."""
    return adapter.odds(hero, req, replace(ctx, dice=dice_source(dice=[]))).outcomes


def level_up(
    session: Session, principal: Principal, character_id: str, body: dict, idem: Idempotency | None
) -> dict[str, Any]:
    """GM: the ruleset's level-up (422 where it has none)."""
    return _level_up(RollingWork(session, principal, principal.campaign_id, idem), character_id, body)


@retried
def _level_up(uow: RollingWork, character_id: str, body: dict) -> dict[str, Any]:
    with uow:
        [hero] = uow.lock([character_id])
        req = validate(uow.adapter.request_model(Capability.LEVEL_UP), body)
        authorize(uow.principal)
        assert isinstance(uow.adapter, LevelUps)  # request_model found the capability
        return uow.commit_outcome(uow.adapter.level_up(hero, req, uow.context(req)))


def reroll(
    session: Session, principal: Principal, character_id: str, test_id: str, body: dict, idem: Idempotency | None
) -> dict[str, Any]:
    """Owner or GM: cancel a test and roll it again (where the ruleset allows)."""
    return _reroll(RollingWork(session, principal, principal.campaign_id, idem), character_id, test_id, body)


@retried
def _reroll(uow: RollingWork, character_id: str, test_id: str, body: dict) -> dict[str, Any]:
    with uow:
        owner = uow.characters.get(character_id).player_id  # 404 first; locked below with the entry's others
        req = validate(uow.adapter.request_model(Capability.REROLL), body)
        authorize(uow.principal, owner)
        entry = _entry_involving(uow, test_id, character_id)
        if entry is None:  # 404 before the 403 of dice the caller may not choose
            raise NotFound("no test with this id for this character")
        ctx = uow.context(req)
        previous, involved = entry
        try:
            [hero, *_] = uow.lock([character_id, *(c for c in involved if c != character_id)])
        except NotFound:
            raise Conflict(
                "a character of this entry no longer exists: it cannot be rolled again", code="character_deleted"
            ) from None
        _check_latest(uow, character_id, test_id)
        assert isinstance(uow.adapter, Rerolls)  # request_model found the capability
        outcome = uow.adapter.reroll(hero, previous, req, ctx)
        return uow.commit_outcome(
            outcome, odds=outcome.odds
        )  # a test rolled again: its p_success and figures, as every test's


_log = core_table(LogEntry)
_involved = core_table(LogEntryCharacter)
_ENTRY = select(_log.c.seq, _log.c.character_id, _log.c.hidden, _log.c.body).where(
    _log.c.id == bindparam("id"), _log.c.campaign_id == bindparam("campaign_id")
)
_OTHERS = select(_involved.c.character_id).where(_involved.c.seq == bindparam("seq"))
_LATEST = about_the_character(_log.c.id, _log.c.rerolls).limit(1)
_LATEST_SHOWN = _LATEST.where(_log.c.hidden.is_(False))  # what a player sees


def _entry_involving(uow: RollingWork, entry_id: str, character_id: str) -> tuple[dict, list[str]] | None:
    """The log entry `entry_id` of the campaign (its body, every character it involves) if it
    involves the character and the caller may see it (a hidden entry is the GM's); else None."""
    row = uow.conn.execute(_ENTRY, {"id": entry_id, "campaign_id": uow.campaign_id}).first()
    if row is None or (row.hidden and not uow.principal.is_gm):
        return None
    involved = ([row.character_id] if row.character_id else []) + list(
        uow.conn.execute(_OTHERS, {"seq": row.seq}).scalars()
    )
    return (row.body, involved) if character_id in involved else None


def _check_latest(uow: RollingWork, character_id: str, entry_id: str) -> None:
    """AS-H2: only the test "just made" is rolled again: the latest entry involving the
    character (among those the caller sees: hidden GM entries are not a player's); an older
    one is a 409 naming the newer entry. When the newer one rolled this entry again already,
    the commit says so (409 `rerolled_by`)."""
    latest = uow.conn.execute(
        _LATEST if uow.principal.is_gm else _LATEST_SHOWN,
        {"campaign_id": uow.campaign_id, "character_id": character_id},
    ).first()
    if latest is not None and latest.id != entry_id and latest.rerolls != entry_id:
        raise Conflict(
            f"only the character's latest entry can be rolled again (AS-H2): {latest.id} came after {entry_id}",
            field="test_id",
            extra={"newer_entry": latest.id},
            code="not_latest_entry",
        )


def character_action(
    session: Session, principal: Principal, character_id: str, body: dict, idem: Idempotency | None
) -> dict[str, Any]:
    """A ruleset-specific action (its body's `type` names it in the ruleset's registry)."""
    return _action(RollingWork(session, principal, principal.campaign_id, idem), character_id, body)


@retried
def _action(uow: RollingWork, character_id: str, body: dict) -> dict[str, Any]:
    with uow:
        [hero] = uow.lock([character_id])
        action = uow.adapter.action_for(body)
        req = validate(action.model, body)
        if action.gm_only:
            check_gm(uow.principal, f"perform the action {body['type']!r}")  # the type action_for found
        authorize(uow.principal, hero.player_id)
        return uow.commit_outcome(action.handler(hero, req, uow.context(req)))


def opposed(
    session: Session, principal: Principal, campaign_id: str, body: dict, idem: Idempotency | None
) -> dict[str, Any]:
    """GM: a confrontation of two characters' tests (where the ruleset has one)."""
    return _opposed(RollingWork(session, principal, campaign_id, idem), body)


@retried
def _opposed(uow: RollingWork, body: dict) -> dict[str, Any]:
    with uow:
        req = validate(uow.adapter.request_model(Capability.OPPOSED), body)
        a, b = uow.lock([req.a.character_id, req.b.character_id])
        assert isinstance(uow.adapter, Confrontations)  # request_model found the capability
        return uow.commit_outcome(uow.adapter.opposed(a, b, req, uow.context(req)))


def group(
    session: Session, principal: Principal, campaign_id: str, body: dict, idem: Idempotency | None
) -> dict[str, Any]:
    """GM: a group test (cooperation, ranking: where the ruleset has one)."""
    return _group(RollingWork(session, principal, campaign_id, idem), body)


@retried
def _group(uow: RollingWork, body: dict) -> dict[str, Any]:
    with uow:
        req = validate(uow.adapter.request_model(Capability.GROUP), body)
        participants = uow.lock([p.character_id for p in req.participants])
        assert isinstance(uow.adapter, GroupTests)  # request_model found the capability
        return uow.commit_outcome(uow.adapter.group(participants, req, uow.context(req)))


def odds(session: Session, principal: Principal, character_id: str, body: dict) -> dict[str, Any]:
    """The exact probability of every outcome of a test; nothing rolled or logged."""
    character, campaign = load_character(session, principal, character_id)
    authorize(principal, character.player_id)
    adapter = get_adapter(campaign.ruleset)
    if unused := [k for k in ("dice", "seed", "hidden") if isinstance(body, dict) and k in body]:
        raise InvalidBody(
            f"odds roll nothing: {', '.join(unused)} is not used by this request (leave it out)",
            field=unused[0],
            extra={
                "errors": [
                    {"loc": ["body", k], "msg": "not used by odds: nothing is rolled nor logged"} for k in unused
                ]
            },
            code="not_used_by_odds",
        )
    req = validate(adapter.TestRequest, body)
    ctx = OperationContext(
        dice=dice_source(dice=[]),
        options=adapter.parse_options(campaign.options),
        is_gm=principal.is_gm,
        get_log_entry=lambda entry_id: log_entry_body(session, campaign.id, entry_id, include_hidden=principal.is_gm),
    )
    result = adapter.odds(adapter.state(character), req, ctx)
    outcomes = {name: result.outcomes.get(name, Fraction(0)) for name in OUTCOMES}
    success = success_of(outcomes)
    out: dict[str, Any] = {
        "character_id": character.id,
        "ruleset": campaign.ruleset,
        "outcomes": {name: fraction_out(p) for name, p in outcomes.items()},
        "success": fraction_out(success),
    }
    for name, dist in result.extra.items():
        out[name] = {str(k): fraction_out(p) for k, p in dist.items()}
    return out


def level_up_history(
    session: Session, principal: Principal, character_id: str, limit: int, cursor: str | None
) -> rolls.JsonPage:
    """The character's level-ups, newest first (404 unless it is in the caller's campaign)."""
    load_character(session, principal, character_id)
    return rolls.list_log(
        session,
        principal,
        principal.campaign_id,
        limit=limit,
        cursor=cursor,
        character_id=character_id,
        kind="level_up",
    )
