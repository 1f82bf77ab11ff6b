"""The dice an action will consume (`POST /v1/encounters/{eid}/actions/plan`, issue 26 item 2).

The plan cannot drift from the action: it is the action route itself, run without
writing (`choices.trial`: rolled back, no event, no log entry), fed table dice one at
a time — each run's `dice_needed` names the next die (its die, purpose and whose it
is) — so the dice listed are exactly the dice the action takes, in its order. The
caller's own checks come first (the same body as the caller, no dice: a refusal is
the problem the action would answer); the dice are then walked with the GM's table
dice (every die enterable), nothing rolled.

Which dice come next depends on earlier ones (a damage die only on a hit, AS-C5's
tests only when vitality reaches 0): the walk is made under several fixed choices of
values (the actor's dice low and the others' high, the reverse, all low, all high);
the longest sequence is the plan, and a die missing from another walk is listed with
its `condition`. `entered_by`: `caller` when the caller may enter that die (the GM:
every die; a player: its own combatants' when the campaign lets players enter dice),
else `server`."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from sqlmodel import Session

from app.kit.models import RollingRequest
from app.models.validation import InvalidBody
from app.rules.errors import TooManyDice
from app.services.auth import Principal
from app.services.encounters import store
from app.services.encounters.choices import trial
from app.services.encounters.store import Fight

MAX_DICE = 200
MAX_RESOLUTIONS = 400  # the exact odds are counted by brute force up to this many resolutions
CONDITION = "needed only on some results of the dice before it (not in every resolution of the action)"
Strategy = Callable[[dict[str, Any], str], int]


def _faces(die: str) -> int:
    digits = die.lstrip("dD")
    return int(digits) if digits.isdigit() else 1


def _low(needed: dict[str, Any], actor: str) -> int:
    return 1


def _high(needed: dict[str, Any], actor: str) -> int:
    return _faces(needed["die"])


def _actor_low(needed: dict[str, Any], actor: str) -> int:
    return 1 if needed.get("by") in (actor, None) else _faces(needed["die"])


def _actor_high(needed: dict[str, Any], actor: str) -> int:
    return _faces(needed["die"]) if needed.get("by") in (actor, None) else 1


STRATEGIES: tuple[Strategy, ...] = (_actor_low, _actor_high, _low, _high)


def plan(session: Session, principal: Principal, encounter_id: str, body: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidBody("the body is an action (a JSON object)")
    if "dice" in body or "seed" in body:
        raise InvalidBody(
            "a plan takes the action without dice: leave `dice` and `seed` out",
            field="dice" if "dice" in body else "seed",
        )
    _, refused = trial(session, principal, encounter_id, body)  # the caller's own checks, server dice
    if refused is not None:
        raise refused
    fight = store.load_fight(session.connection(), encounter_id, lock=False)
    may_enter = _enterer(fight, principal)
    if not isinstance(fight.rules.parse_action(body), RollingRequest):  # takes no dice (the GM's heal…)
        session.rollback()
        return {"dice": []}
    session.rollback()
    gm = Principal(campaign_id=principal.campaign_id, role="gm", player_id=None, token_hash=principal.token_hash)
    actor = body.get("actor_id") if isinstance(body.get("actor_id"), str) else ""
    walks = [_walk(session, gm, encounter_id, body, strategy, str(actor)) for strategy in STRATEGIES]
    base = max(walks, key=len)
    dice, seen = [], Counter[tuple[str, str, str | None]]()
    for roll in base:
        key = (roll["die"], roll["purpose"], roll["by"])
        seen[key] += 1
        entry = {"die": roll["die"], "purpose": roll["purpose"], "by": roll["by"], "entered_by": may_enter(roll["by"])}
        if any(sum(1 for r in walk if (r["die"], r["purpose"], r["by"]) == key) < seen[key] for walk in walks):
            entry["condition"] = CONDITION
        dice.append(entry)
    out: dict[str, Any] = {"dice": dice}
    target = body.get("target_id")
    if isinstance(target, str) and math.prod(_faces(d["die"]) for d in base) <= MAX_RESOLUTIONS:
        odds = _odds(session, gm, encounter_id, body, target, fight.rules.pools[0].name)
        if odds is not None:
            out["odds"] = odds
    session.rollback()
    return out


def _share(p: Fraction) -> dict[str, Any]:
    return {"probability": f"{p.numerator}/{p.denominator}", "p": float(p)}


class _TooMany(Exception):
    """The action's dice have more combinations than an exact count walks here."""


def _odds(
    session: Session, gm: Principal, encounter_id: str, body: dict[str, Any], target: str, pool: str
) -> dict[str, Any] | None:
    """The exact odds, by brute force: the action resolved on every combination of its dice (each
    die uniform, a die asked only where the earlier ones need it), each resolution the route's
    own; `hit`: the target's first pool lowered, `down`: the target brought down this action.
    None when the combinations exceed `MAX_RESOLUTIONS` (a d100 against a d100…: not tried when the
    plan's own dice have more combinations than that)."""
    hit, down = Fraction(0), Fraction(0)
    resolutions = 0

    def explore(prefix: list[int], p: Fraction) -> None:
        nonlocal hit, down, resolutions
        resolutions += 1
        if resolutions > MAX_RESOLUTIONS:
            raise _TooMany
        done, refused = trial(session, gm, encounter_id, {**body, "dice": prefix})
        if refused is not None:
            if refused.code != "dice_needed":
                raise refused
            faces = _faces(refused.extra["needed"]["die"])
            if resolutions + faces > MAX_RESOLUTIONS:
                raise _TooMany
            for value in range(1, faces + 1):
                explore([*prefix, value], p / faces)
            return
        assert done is not None
        if any(c.get("combatant_id") == target and c.get("field") == pool and _lower(c) for c in done["changes"]):
            hit += p
        if any(
            s.get("rule") == "turn" and s.get("what") == "down" and s.get("combatant_id") == target
            for s in done["steps"]
        ):
            down += p

    try:
        explore([], Fraction(1))
    except _TooMany:
        return None
    return {"hit": _share(hit), "down": _share(down)}


def _lower(change: dict[str, Any]) -> bool:
    before, after = change.get("before"), change.get("after")
    return isinstance(before, int) and isinstance(after, int) and after < before


def _walk(
    session: Session, gm: Principal, encounter_id: str, body: dict[str, Any], strategy: Strategy, actor: str
) -> list[dict[str, Any]]:
    """The dice the action consumes when each die takes the strategy's value: run with the table
    dice so far until it needs none more (its recorded `rolls`)."""
    dice: list[int] = []
    while len(dice) <= MAX_DICE:
        done, refused = trial(session, gm, encounter_id, {**body, "dice": dice})
        if refused is None:
            assert done is not None
            return [{"die": r["die"], "purpose": r["purpose"], "by": r.get("by")} for r in done["rolls"]]
        if refused.code != "dice_needed":
            raise refused  # an outcome the rules refuse, after the caller's checks passed
        dice.append(strategy(refused.extra["needed"], actor))
    raise TooManyDice(len(dice), MAX_DICE, field="dice")  # a safety stop: no action takes this many


def _enterer(fight: Fight, principal: Principal) -> Callable[[str | None], str]:
    """Who enters a die of this combatant: the GM every die; a player its own combatants' when the
    campaign's `players_may_enter_dice`, the server every other (API.md, dice provenance)."""
    if principal.is_gm:
        return lambda _by: "caller"
    if not fight.ruleset_options.players_may_enter_dice:
        return lambda _by: "server"
    store.load_characters(fight, (c["character_id"] for c in fight.combatants), lock=False)

    def who(by: str | None) -> str:
        found = fight.some([by]) if by is not None else []
        ch = fight.character_of(found[0]) if found else None
        return "caller" if ch is not None and ch.player_id == principal.player_id else "server"

    return who
