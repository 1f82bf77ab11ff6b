"""Actions on a combatant (`POST /v1/encounters/{eid}/actions`), their undo, and the
fight's history.

The body is validated by the campaign's ruleset (`EncounterRules.parse_action`:
each ruleset's models, unknown fields refused). The GM's `heal`, `damage` (raw
amounts on a resource of the sheet) and `condition` are handled here; the combat
actions (`attack`, `move`, `dash`, `posture`, `final_skill`) go through one
generic flow (`combat`): the actor and the target loaded and locked, who may act
(the GM, or the actor's owner on its turn: 403/409), the target's reaction, the
dice provenance, then the ruleset resolves the exchange and every change it made
is written, before/after, in the action's transaction."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

from sqlalchemy import Connection
from sqlmodel import Session

from app.kit.errors import Conflict, Forbidden, NotFound
from app.kit.models import RollingRequest
from app.models.encounters import (
    GM_ACTIONS,
    MAX_CONDITIONS,
    CombatAction,
    ConditionChange,
    HealOrDamage,
)
from app.models.fields import plausible_id
from app.models.fight_rows import Change, CombatantField, CombatantRow, FlowStep, Step
from app.models.validation import InvalidBody
from app.rulesets.contract.combat import ACTION, Exchange, Party
from app.services.auth import authorize, check_gm, check_member
from app.services.changed import CharacterDeleted
from app.services.encounters import store, view
from app.services.encounters.changes import Changes, clone
from app.services.encounters.dice import CombatDice
from app.services.encounters.record import record_action
from app.services.encounters.store import Fight
from app.services.encounters.unit import (
    EncounterWork,
    check_not_ended,
    check_provenance,
    check_status,
    check_version,
    scene,
    viewer,
    write,
)
from app.services.idempotency import Idempotency
from app.services.records import Principal, StoredCharacter

Handler = Callable[[Fight, Any, Changes, list[Step], CombatDice | None], None]


@dataclass(frozen=True)
class Action:
    handler: Handler
    gm_only: bool


def act(
    session: Session,
    principal: Principal,
    encounter_id: str,
    body: dict[str, Any],
    idem: Idempotency | None,
    if_match: str | None,
) -> dict[str, Any]:
    """An action, its body validated by the campaign's ruleset. The GM's actions are refused to
    players once the encounter is found (401 → 404 → 403); a `type` that is no
    string is the ruleset's 422."""

    def work(uow: EncounterWork, fight: Fight) -> dict[str, Any]:
        uow.known_standings = fight.stored_standings  # its characters' fights, known from its load
        return dispatch(uow, fight, principal, body, if_match=if_match)

    return write(
        session, principal, encounter_id, work, idem=idem, combatants=named(body), server_dice=rolls_server_dice(body)
    )


def rolls_server_dice(body: Any) -> bool:
    """Whether a body is an attack that names neither table dice nor a seed (read before it is
    validated): the server's dice will be rolled, so their epoch is claimed with the encounter's
    load. A body that is refused afterwards only held the epoch for its short life."""
    return isinstance(body, dict) and body.get("type") == "attack" and "dice" not in body and "seed" not in body


def named(body: Any) -> list[str]:
    """The combatants a body names (loaded with the encounter, in the same round trip): read before the
    body is validated, so only values that may be ids (`plausible_id`: a control character is the body's
    422 once validated, never a statement's parameter)."""
    ids = [body.get(k) for k in ("actor_id", "target_id")] if isinstance(body, dict) else []
    return [c for c in ids if plausible_id(c)]


def dispatch(
    uow: EncounterWork,
    fight: Fight,
    principal: Principal,
    body: Any,
    *,
    if_match: str | None = None,
    planner: Planner | None = None,
) -> dict[str, Any]:
    """The action's use case, its checks in order: the GM's actions refused to players, If-Match,
    the encounter active, the body the ruleset's; then a combat action (`combat`) or the GM's.
    `planner`: the combat action, every check passed, is handed to it instead of resolved
    (`actions/plan`: nothing rolled, nothing written)."""
    type_ = body.get("type") if isinstance(body, dict) else None
    if isinstance(type_, str) and type_ in GM_ACTIONS:
        check_gm(principal, f"make a {type_} action")
    check_version(fight, if_match, principal)
    check_status(fight, "active", "an action")
    req = fight.rules.parse_action(body)
    if isinstance(req, CombatAction):
        return combat(uow, fight, principal, req, planner=planner)
    assert isinstance(req, HealOrDamage | ConditionChange)  # the other GM_ACTIONS
    return gm_action(uow, fight, principal, req)


def gm_action(
    uow: EncounterWork, fight: Fight, principal: Principal, req: HealOrDamage | ConditionChange
) -> dict[str, Any]:
    action = ACTIONS[req.type]
    fight.some([req.actor_id, req.target_id])  # one read for both
    if req.actor_id is not None:
        fight.combatant(req.actor_id, "actor_id")
    target = fight.combatant(req.target_id, "target_id")
    changes = Changes(fight)
    steps: list[Step] = []
    dice = None  # the GM's actions roll where the ruleset's model takes dice (AS-C5 after `damage`)
    if isinstance(req, RollingRequest):
        check_provenance(principal, fight.campaign_options, dice=req.dice, hidden=req.hidden)
        dice = CombatDice.for_caller(principal, req, fight, uow.epochs)
        with dice.explained():
            action.handler(fight, req, changes, steps, dice)
        dice.finish()
    else:
        action.handler(fight, req, changes, steps, None)
    _, shown = record_action(
        uow,
        fight,
        principal,
        type_=req.type,
        changes=changes,
        steps=steps,
        dice=dice,
        actor_id=req.actor_id,
        target_id=target["id"],
        hidden=req.hidden,
        character_id=target["character_id"],
    )
    return shown


# --- the combat actions: one flow for every ruleset ---------------------------------------------


@dataclass
class Replay:
    """An action resolving the fight's latest one again (AS-H2's heroism reroll): its request, the
    replayed action's id, and the changes and steps that already undid it."""

    req: CombatAction
    action_id: str
    changes: Changes
    steps: list[Step]


def replay(
    uow: EncounterWork,
    fight: Fight,
    principal: Principal,
    req: CombatAction,
    action_id: str,
    *,
    planner: Planner | None = None,
) -> dict[str, Any]:
    """`req` resolves the fight's latest action again (`EncounterRules.replays`): only the latest
    (409 naming it); the spender (`actor_id`) is the GM's or its owner's (403); the ruleset gives
    the request to resolve again from the logged action (`replay_body`: 409 when the rules refuse);
    that action's changes are undone, then it is resolved again with this request's dice, the
    whole as one action of this request's type."""
    conn = uow.conn
    latest = store.latest_action(conn, fight.id)
    if latest is None or latest.id != action_id:
        raise Conflict(
            f"only the fight's latest action is resolved again: {latest.id} ({latest.type})"
            if latest is not None
            else "the fight has no action to resolve again",
            field="action_id",
            extra={"latest": latest.id if latest is not None else None},
            code="not_latest_action",
        )
    spender = fight.combatant(req.actor_id, "actor_id")
    store.load_characters(fight, [spender["character_id"]], lock=True)
    if fight.character_of(spender) is None:
        raise Conflict(
            f"the character of combatant {spender['id']} was deleted", field="actor_id", code="character_deleted"
        )
    if not principal.is_gm and fight.loaded_character(spender).player_id != principal.player_id:
        raise Forbidden("only the GM or the combatant's owner spends for it", field="actor_id", code="owner_or_gm_only")
    row = store.action_row(conn, fight.id, action_id)
    assert row is not None  # the latest action, found above
    original = fight.rules.parse_action(fight.rules.replay_body(req, row.body))
    assert isinstance(original, CombatAction)
    changes = Changes(fight)
    steps: list[Step] = []
    for item in reversed(row.changes):
        _restore(fight, item, changes, steps, False, [])  # an attack: no roster
    return combat(uow, fight, principal, original, again=Replay(req, action_id, changes, steps), planner=planner)


@dataclass
class Prepared:
    """A combat action every check passed, before anything is rolled: `build(dice)` makes its
    exchange afresh (copies of the parties, `dice` for its dice: each build is a resolution of
    its own), `exchange` the first one; `was_down`: each involved combatant down before it;
    `rolling`: the request giving its dice (AS-H2's reroll gives the dice of the action it replays)."""

    fight: Fight
    build: Callable[[CombatDice], Exchange]
    exchange: Exchange
    target_id: str | None
    was_down: dict[str, bool]
    rolling: CombatAction  # the request whose dice these are (its `seed`, table `dice`)


Planner = Callable[[Prepared], dict[str, Any]]


def combat(
    uow: EncounterWork,
    fight: Fight,
    principal: Principal,
    req: CombatAction,
    *,
    again: Replay | None = None,
    planner: Planner | None = None,
) -> dict[str, Any]:
    """Load and lock actor and target, check who acts and the target's reaction, let the
    ruleset resolve the exchange with tagged dice, write every change it made. `again`: the
    request resolves a logged action again (its checks passed when it was made). `planner`:
    the prepared action goes to it instead (nothing resolved, nothing written)."""
    replayed = fight.rules.replays(req) if again is None else None
    if replayed is not None:
        return replay(uow, fight, principal, req, replayed, planner=planner)
    target_id = getattr(req, "target_id", None)
    named_ids = [req.actor_id, target_id, *(cid for cid, _ in fight.rules.involved(req))]
    fight.some(named_ids)  # one read for all
    seen = None if principal.is_gm else scene(uow.conn, fight, {cid for cid in named_ids if cid is not None})
    who = viewer(principal)
    actor = _named(fight, seen, who, req.actor_id, "actor_id")
    target = _named(fight, seen, who, target_id, "target_id") if target_id is not None else None
    if target is not None and target["id"] == actor["id"]:
        raise InvalidBody("a combatant does not target itself", field="target_id", code="self_target")
    more = [(_named(fight, seen, who, cid, name), name) for cid, name in fight.rules.involved(req)]
    named = [(c, name) for c, name in ((actor, "actor_id"), (target, "target_id")) if c is not None] + more
    if len({c["id"] for c, _ in named}) != len(named):
        raise InvalidBody("a combatant takes one part in an action", field=named[-1][1], code="named_twice")
    involved = [c for c, _ in named]
    store.load_characters(fight, (c["character_id"] for c in involved), lock=True)
    for c, name in named:
        if fight.character_of(c) is None:
            raise Conflict(f"the character of combatant {c['id']} was deleted", field=name, code="character_deleted")
    rolling = again.req if again is not None else req  # whose dice and provenance
    dice = CombatDice.for_caller(principal, rolling, fight, None if planner is not None else uow.epochs)
    current = fight.encounter["current_turn"] or {}

    def build(dice: CombatDice, parties: dict[str, Party] | None = None) -> Exchange:
        parties = parties or {c["id"]: _party(fight, c, dice, current) for c in involved}
        x = Exchange(
            req=req,
            actor=parties[actor["id"]],
            target=parties.get(target["id"]) if target is not None else None,
            dice=dice,
            options=fight.options,
            campaign_options=fight.ruleset_options,
            round=fight.encounter["round"],
            reaction=reaction,
            reaction_chosen=chosen,
            same_slot=target is not None and {actor["id"], target["id"]} <= set(current.get("combatant_ids", [])),
            order=fight.encounter["turn_order"],
            replaying={"action_id": again.action_id, "by": again.req.actor_id} if again is not None else None,
            on_turn=actor["id"] in current.get("combatant_ids", []),
            by_gm=principal.is_gm,
            others_of=lambda: _others(uow.conn, fight, principal, involved),
            more=[parties[c["id"]] for c, _ in more],
            sees=lambda cid: principal.is_gm or scene(uow.conn, fight, {cid}).sees(who, cid),
            standing=lambda cid: _standing(fight, cid),
            acting=frozenset(current.get("combatant_ids", [])),
        )
        _count_action(fight, x)
        return x

    first = {c["id"]: _party(fight, c, dice, current) for c in involved}
    if again is None:
        _check_actor(uow.conn, fight, principal, actor, first[actor["id"]], req, current)
    check_provenance(principal, fight.campaign_options, dice=rolling.dice, hidden=rolling.hidden)
    reaction, chosen = _reaction(fight, principal if again is None else None, target, req)
    x = build(dice, first)
    was_down = {c["id"]: fight.rules.is_down(fight.sheet_of(fight.loaded_character(c))) for c in involved}
    if planner is not None:
        return planner(Prepared(fight, build, x, target["id"] if target is not None else None, was_down, rolling))
    with dice.explained():
        fight.rules.resolve(x)
    dice.finish()
    changes = again.changes if again is not None else Changes(fight)
    parties = {p.id: p for p in (x.actor, x.target, *x.more) if p is not None}
    for c in involved:
        _apply(fight, changes, c, parties[c["id"]])
        down = fight.rules.is_down(fight.sheet_of(fight.loaded_character(c)))
        if down != was_down[c["id"]]:
            x.steps.append(
                {
                    "rule": "turn",
                    "key": "down" if down else "back_in_the_fight",
                    "what": "down" if down else "back in the fight",
                    "combatant_id": c["id"],
                }
            )
    _, shown = record_action(
        uow,
        fight,
        principal,
        type_=rolling.type,
        changes=changes,
        steps=(again.steps if again is not None else []) + x.steps,
        dice=dice,
        actor_id=actor["id"],
        target_id=target["id"] if target else None,
        hidden=rolling.hidden,
        character_id=actor["character_id"],
        others=[c["character_id"] for c in involved],
    )
    return shown


def _named(
    fight: Fight, seen: view.Scene | None, who: view.Viewer, combatant_id: str | None, field_: str
) -> CombatantRow:
    """A combatant the body names; one the caller may not see (`seen`: a player's scene) answers as
    an unknown id does, same status, same problem."""
    c = fight.combatant(combatant_id, field_)
    if seen is not None and not seen.sees(who, c["id"]):
        raise store.unknown_combatant(combatant_id, field_)
    return c


def _party(fight: Fight, c: CombatantRow, dice: CombatDice, current: dict[str, Any]) -> Party:
    """The combatant as the ruleset's action reads and changes it (copies)."""
    ch = fight.loaded_character(c)
    counters = clone(c["counters"] or {})
    key = {"round": fight.encounter["round"], "slot": current.get("slot")}
    turn = counters.get("turn") or {}
    if {k: turn.get(k) for k in key} != key:
        turn = {**key}
    return Party(
        id=c["id"],
        character_id=c["character_id"],
        name=ch.name,
        kind=ch.kind,
        side=c["side"],
        reaction=c["reaction"] or fight.rules.default_reaction,
        sheet=fight.sheet_copy(ch),
        counters=counters,
        position=clone(c["position"]),
        conditions=clone(c["conditions"]),
        actions=c["actions"],
        dice=dice.of(c["id"]),
        turn=clone(turn),
    )


def _standing(fight: Fight, combatant_id: str) -> bool:
    """Whether this combatant is in the fight and not down (a rule naming another one: GC-P6)."""
    found = fight.some([combatant_id])
    if not found:
        return False
    store.load_characters(fight, [found[0]["character_id"]], lock=False)
    ch = fight.character_of(found[0])
    return ch is not None and not fight.rules.is_down(fight.sheet_of(ch))


def _others(conn: Connection, fight: Fight, principal: Principal, involved: list[CombatantRow]) -> list[Party]:
    """The other combatants the caller sees, read only (positions, for reach and occupied cells):
    a hidden one holds no cell against a player who cannot see it, whose move onto it is the move
    onto an empty cell."""
    ids = {c["id"] for c in involved}
    seen, who = None if principal.is_gm else scene(conn, fight), viewer(principal)
    return [
        Party(
            id=c["id"],
            character_id=c["character_id"],
            name="",
            kind="",
            side=c["side"],
            reaction="",
            sheet=None,  # read only (positions): no sheet read
            counters={},
            position=c["position"],
            conditions=[],
            actions=c["actions"],
            dice=None,  # type: ignore[arg-type]  # read only (positions): these parties never roll
        )
        for c in fight.combatants
        if c["id"] not in ids and (seen is None or seen.sees(who, c["id"]))
    ]


def _check_actor(
    conn: Connection,
    fight: Fight,
    principal: Principal,
    actor: CombatantRow,
    party: Party,
    req: CombatAction,
    current: dict[str, Any],
) -> None:
    """The GM acts for any combatant; a player for one it owns (403), on its turn (409)
    unless the rules let it act now (a riposte, a counter-attack). Nobody acts for a down
    combatant, nor for one the rules stop (GC-P7)."""
    sheet = fight.sheet_of(fight.loaded_character(actor))
    if not principal.is_gm:
        if fight.loaded_character(actor).player_id != principal.player_id:
            raise Forbidden(
                "only the GM or the combatant's owner may act for it", field="actor_id", code="owner_or_gm_only"
            )
        if actor["id"] not in current.get("combatant_ids", []) and fight.rules.out_of_turn(party, req) is None:
            raise Conflict(
                f"it is not combatant {actor['id']}'s turn",
                field="actor_id",
                extra={"current": view.current_view(current or None, scene(conn, fight), viewer(principal))},
                code="not_your_turn",
            )
    if fight.rules.is_down(sheet):
        raise Conflict(f"combatant {actor['id']} is down: it does not act", field="actor_id", code="combatant_down")
    stopped = fight.rules.stopped(actor["counters"] or {}, sheet, fight.encounter["round"])
    if stopped is not None:
        raise Conflict(
            f"combatant {actor['id']} cannot act this round ({stopped['rule']}: {stopped['what']})",
            field="actor_id",
            extra={"rule": stopped["rule"]},
            code="cannot_act",
        )


def _count_action(fight: Fight, x: Exchange) -> None:
    """Actions per turn (README, every ruleset): one action per turn unless a rule grants more.
    An action on the actor's turn (for the GM as for its player) counts in `turn["actions"]`
    unless its type is a move or free (`action_kinds`) or a rule grants it (`granted_action`: a
    riposte, a counter-attack, a free attack); one more than `actions_per_turn` is a 409 naming
    the rules that would allow one, before anything is rolled or changed."""
    rules, a, type_ = fight.rules, x.actor, x.req.type
    if not x.on_turn or rules.action_kind(type_) != ACTION or rules.granted_action(a, x.req) is not None:
        return
    taken = list(a.turn.get("actions") or [])
    allowed = rules.actions_per_turn(a, x.round)
    if len(taken) >= allowed:
        grants = ", ".join(rules.more_actions) or f"no rule of {rules.ruleset} grants one"
        used = f"has taken its action this turn ({', '.join(taken)})" if taken else "has no action this turn"
        raise Conflict(
            f"combatant {a.id} {used}: one action per turn unless a rule grants more ({grants})",
            field="type",
            extra={
                "rule": "actions_per_turn",
                "actions_taken": taken,
                "actions_per_turn": allowed,
                "granted_by": [g.split(" ", 1)[0] for g in rules.more_actions],
            },
            code="actions_per_turn",
        )
    a.turn["actions"] = [*taken, type_]


def _reaction(
    fight: Fight, principal: Principal | None, target: CombatantRow | None, req: CombatAction
) -> tuple[str | None, bool]:
    """The target's standing reaction, or the body's: only from a caller who controls the target
    (`principal` None: a logged action resolved again, checked when it was made)."""
    if target is None:
        return None, False
    asked = getattr(req, "reaction", None)
    if asked is None:
        return target["reaction"] or fight.rules.default_reaction, False
    if (
        principal is not None
        and not principal.is_gm
        and fight.loaded_character(target).player_id != principal.player_id
    ):
        raise Forbidden(
            "only the GM or the target's owner chooses its reaction; leave `reaction` out to use its standing one",
            field="reaction",
            code="owner_or_gm_only",
        )
    fight.rules.check_reaction(asked)
    return asked, True


def _apply(fight: Fight, changes: Changes, c: CombatantRow, party: Party) -> None:
    """Every difference the ruleset made to the party, before/after (sheet fields, then the combatant's)."""
    changes.typed_sheet(c, party.sheet)
    counters = dict(party.counters)
    stored = counters.get("turn") or {}
    if len(party.turn) > 2:  # the flow or the ruleset noted something of this turn
        counters["turn"] = party.turn
    elif all(stored.get(k) == party.turn.get(k) for k in ("round", "slot")):  # this turn's notes, all spent
        counters.pop("turn", None)
    changes.combatant(c, "position", party.position)
    changes.combatant(c, "conditions", party.conditions)
    changes.combatant(c, "actions", party.actions)
    changes.combatant(c, "counters", counters)


def _loaded(fight: Fight, c: CombatantRow) -> StoredCharacter:
    """The combatant's character, locked for a sheet write; 409 when it was deleted."""
    store.load_characters(fight, [c["character_id"]], lock=True)
    ch = fight.character_of(c)
    if ch is None:
        raise Conflict(f"the character of combatant {c['id']} was deleted", field="target_id", code="character_deleted")
    return ch


def heal_or_damage(
    fight: Fight, req: HealOrDamage, changes: Changes, steps: list[Step], dice: CombatDice | None
) -> None:
    """The GM's raw amount, clamped to the pool's bounds (0 or the sheet's floor, its maximum)."""
    target = fight.combatant(req.target_id, "target_id")
    pool = fight.rules.pool(req.resource)
    sheet = fight.sheet_of(_loaded(fight, target))
    before, maximum = pool.value(sheet), pool.maximum(sheet)
    if req.type == "heal":  # up to the maximum (a value already above it, by GM fiat, stays)
        after = before + req.amount if maximum is None else max(before, min(before + req.amount, maximum))
    else:  # down to the lowest value the sheet allows
        after = min(before, max(pool.floor, before - req.amount))
    was_down = fight.rules.is_down(sheet)
    party = _party(
        fight, target, dice if dice is not None else CombatDice(dice=[]), fight.encounter["current_turn"] or {}
    )
    pool.set(party.sheet, after)
    # what the rules say follows the GM's damage (GC-P6 Revive, AS-C5's mal en point tests, with dice)
    ruled = (
        fight.rules.gm_damage(party, pool, before, req.amount, fight.encounter["round"]) if req.type == "damage" else []
    )
    after = pool.value(party.sheet)
    steps.append(
        {
            "rule": "GM",
            "key": "heal" if req.type == "heal" else "damage",
            "what": req.type,
            "combatant_id": target["id"],
            "resource": pool.name,
            "amount": req.amount,
            "before": before,
            "after": after,
        }
    )
    steps.extend({**step, "combatant_id": step.get("combatant_id", target["id"])} for step in ruled)
    for step in fight.rules.pool_changed(party.sheet, pool, before, after):
        steps.append({**step, "combatant_id": target["id"]})
    _apply(fight, changes, target, party)
    now_down = fight.rules.is_down(fight.sheet_of(fight.loaded_character(target)))
    if now_down != was_down:
        steps.append(
            {
                "rule": "turn",
                "key": "down" if now_down else "back_in_the_fight",
                "what": "down" if now_down else "back in the fight",
                "combatant_id": target["id"],
            }
        )


def condition(fight: Fight, req: ConditionChange, changes: Changes, steps: list[Step], dice: CombatDice | None) -> None:
    target = fight.combatant(req.target_id, "target_id")
    conditions = list(target["conditions"])
    if req.remove is not None:
        if not any(c["name"] == req.remove for c in conditions):
            raise InvalidBody(
                f"combatant {target['id']} has no condition {req.remove!r}", field="remove", code="unknown_name"
            )
        conditions = [c for c in conditions if c["name"] != req.remove]
        steps.append(
            FlowStep(
                rule="conditions",
                key="condition_removed",
                what="condition removed",
                combatant_id=target["id"],
                name=req.remove,
            )
        )
    if req.add is not None:
        new = {"name": req.add.name, "rounds_left": req.add.rounds, "ends": req.add.ends}
        conditions = [c for c in conditions if c["name"] != new["name"]] + [new]
        if len(conditions) > MAX_CONDITIONS:
            raise InvalidBody(f"a combatant bears at most {MAX_CONDITIONS} conditions", field="add", code="too_many")
        steps.append(
            FlowStep(
                rule="conditions",
                key="condition_added",
                what="condition added",
                combatant_id=target["id"],
                name=req.add.name,
                rounds_left=req.add.rounds,
                ends=req.add.ends,
            )
        )
    changes.combatant(target, "conditions", conditions)


ACTIONS: dict[str, Action] = {
    "heal": Action(heal_or_damage, gm_only=True),
    "damage": Action(heal_or_damage, gm_only=True),
    "condition": Action(condition, gm_only=True),
}


# --- undo ------------------------------------------------------------------------------------


def revert(
    session: Session,
    principal: Principal,
    encounter_id: str,
    action_id: str,
    force: bool,
    idem: Idempotency | None,
    if_match: str | None,
) -> dict[str, Any]:
    """GM: undo the latest action not yet reverted, restoring every field it changed.
    A sheet field changed since by something else → 409 naming it, unless `force`."""

    def work(uow: EncounterWork, fight: Fight) -> dict[str, Any]:
        authorize(principal)
        conn = uow.conn
        check_version(fight, if_match, principal)
        check_not_ended(fight)
        row = store.action_row(conn, fight.id, action_id)
        if row is None:
            raise NotFound("no action with this id in this encounter")
        if row.type == "revert":
            raise Conflict(
                "a revert is not reverted: revert the action before it instead",
                field="action_id",
                code="revert_of_revert",
            )
        if row.reverted_by is not None:
            raise Conflict(
                f"action {action_id} was already reverted (by {row.reverted_by})",
                extra={"reverted_by": row.reverted_by},
                code="already_reverted",
            )
        latest = store.latest_action(conn, fight.id)
        assert latest is not None  # `row` is one: not a revert, not reverted
        if latest.id != action_id:
            raise Conflict(
                f"only the latest action not yet reverted may be reverted: {latest.id} ({latest.type})",
                extra={"latest": latest.id},
                code="not_latest_action",
            )
        # read before the revert changes the scene (a `join` reverted: its combatants gone, the
        # players who saw them would not be told they left)
        hidden = _players_never_saw(conn, fight, row)
        changes = Changes(fight)
        steps: list[Step] = []
        copies: list[CombatantRow] = []
        for item in reversed(row.changes):
            _restore(fight, item, changes, steps, force, copies)
        _delete_copies(uow, fight, list(reversed(copies)), steps, force)
        store.write_roster(conn, fight)  # a `join` reverted: its combatants leave
        body, shown = record_action(
            uow,
            fight,
            principal,
            type_="revert",
            changes=changes,
            steps=steps,
            hidden=hidden,
            reverts=action_id,
            event="encounter.reverted",
        )
        uow.later(partial(store.mark_reverted, conn, action_id, body["id"]))
        return shown

    return write(session, principal, encounter_id, work, idem=idem)


def _players_never_saw(conn: Connection, fight: Fight, row: store.TableRow) -> bool:
    """Whether the reverted action is hidden from players (hidden, or a hidden combatant's): its
    revert, its event and its log entry are then the GM's too."""
    body = row.body
    return row.hidden or view.action(body, scene(conn, fight, view.referenced(body, fight.rules)), view.NOBODY) is None


def _restore(
    fight: Fight, item: Change, changes: Changes, steps: list[Step], force: bool, copies: list[CombatantRow]
) -> None:
    """One change of the reverted action undone (`copies`: the combatants leaving whose characters
    the action made, NPC copies of a `join` with `count`, to delete)."""
    if item["on"] == "encounter":
        changes.encounter(item["field"], item["before"])
        return
    c = next((c for c in fight.combatants if c["id"] == item["combatant_id"]), None)
    if c is None:
        steps.append(
            FlowStep(
                rule="revert",
                key="combatant_removed_since_not_restored",
                what="combatant removed since: not restored",
                field=item["field"],
            )
        )
        return
    if item["on"] == "combatant":
        changes.combatant(c, cast(CombatantField, item["field"]), item["before"])
        return
    if item["on"] == "roster":  # A combatant that joined the running fight leaves it
        fight.combatants.remove(c)
        fight.removed_combatants.append(c["id"])
        changes.items.append({**item, "before": True, "after": False})
        if item.get("copy"):
            copies.append(c)
        return
    store.load_characters(fight, [c["character_id"]], lock=True)
    ch = fight.character_of(c)
    pool = next((p for p in fight.rules.pools if p.key == item["key"]), None)
    if ch is None:
        current = None
    else:
        current = pool.value(fight.sheet_of(ch)) if pool is not None else ch.sheet.get(item["key"])
    if current != item["after"] and not force:
        raise Conflict(
            f"{item['field']} of combatant {c['id']} changed since that action ({item['after']} then, {current} now): "
            'send {"force": true} to restore it anyway',
            field=item["field"],
            extra={"combatant_id": c["id"], "field": item["field"], "expected": item["after"], "current": current},
            code="changed_since",
        )
    if ch is None:
        steps.append(
            {
                "rule": "revert",
                "key": "character_deleted_since_not_restored",
                "what": "character deleted since: not restored",
                "combatant_id": c["id"],
            }
        )
        return
    changes.sheet(c, item["key"], item["before"])


def _delete_copies(
    uow: EncounterWork, fight: Fight, copies: list[CombatantRow], steps: list[Step], force: bool
) -> None:
    """The NPC copies a `join` with `count` made leave with it: each character deleted as
    `DELETE /v1/characters/{id}` deletes one (the fights still showing it move, with their
    `encounter.updated`; its `character.deleted`, to those who could see it; its log entries stay,
    the log is append-only), in the revert's transaction. A copy changed since the join (its
    version moved: a sheet edit, a character action) or put in another fight since is not deleted
    without `force` (409 `changed_since`): the revert would lose that."""
    if not copies:
        return
    ids = [c["character_id"] for c in copies]
    uow.locks.before(ids)  # their other fights, before the copies
    store.load_characters(fight, ids, lock=True)
    for c in copies:
        ch = fight.characters.get(c["character_id"])
        if ch is None:  # deleted since: nothing left to delete
            continue
        others = [e for e in uow.locks.showing([ch.id]) if e.id != fight.id]
        if not force and (ch.version != 1 or others):
            field, expected, current = (
                ("version", 1, ch.version) if ch.version != 1 else ("encounters", [], sorted(e.id for e in others))
            )
            raise Conflict(
                f"NPC copy {ch.id} ({ch.name}) {'changed' if field == 'version' else 'joined another fight'} since "
                'that action: send {"force": true} to delete it anyway',
                field=field,
                extra={"combatant_id": c["id"], "field": field, "expected": expected, "current": current},
                code="changed_since",
            )
        uow.changed(CharacterDeleted(ch, hidden=c["hidden"]))
        del fight.characters[ch.id]
        uow.publish()  # deleted now, and told: before the revert's own events
        steps.append(
            FlowStep(
                rule="revert",
                key="npc_copy_deleted",
                what="NPC copy deleted",
                combatant_id=c["id"],
                character_id=ch.id,
            )
        )


# --- history ---------------------------------------------------------------------------------


def list_actions(
    session: Session, principal: Principal, encounter_id: str, *, limit: int, cursor: str | None
) -> dict[str, Any]:
    """Newest first; reverted ones carry `reverted_by`; each as the caller may see it. A page holds
    `limit` actions the caller sees (fewer: the last page) and its cursor names the last of them,
    never one it may not see."""
    conn = session.connection()
    fight = store.load_fight(conn, encounter_id, lock=False)
    check_member(principal, fight.campaign_id, "encounter")
    seen, who = scene(conn, fight), viewer(principal)
    before = _seq_of(conn, fight, cursor, seen, who) if cursor else None
    items = _visible_page(conn, fight, seen, who, before, limit)
    next_cursor = _cursor(items[limit - 1]["id"]) if len(items) > limit else None
    return {"items": items[:limit], "next_cursor": next_cursor}


def _visible_page(
    conn: Connection, fight: Fight, seen: view.Scene, who: view.Viewer, before: int | None, limit: int
) -> list[dict[str, Any]]:
    """Up to `limit` + 1 actions as the viewer sees them, newest first below `before`: read a page at
    a time until that many are seen or the history ends (the GM: one page)."""
    items: list[dict[str, Any]] = []
    while len(items) <= limit:
        rows = store.action_page(conn, fight.id, before_seq=before, limit=limit)
        for row in rows:
            shown = view.action({**row.body, "reverted_by": row.reverted_by}, seen, who, row.seen_versions)
            if shown is not None:
                items.append(shown)
        if len(rows) <= limit:
            break
        before = rows[-1].seq
    return items


def _cursor(action_id: str) -> str:
    return base64.urlsafe_b64encode(f"a{action_id}".encode()).decode().rstrip("=")


def _seq_of(conn: Connection, fight: Fight, cursor: str, seen: view.Scene, who: view.Viewer) -> int:
    """The place a cursor names; one built from an action the caller may not see is refused as
    an unknown one."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except ValueError:  # not base64, not UTF-8
        text = ""
    row = store.action_row(conn, fight.id, text[1:]) if text.startswith("a") and len(text) <= 40 else None
    if row is None or view.action(row.body, seen, who) is None:
        raise InvalidBody("the cursor is not one this service returned", field="cursor", code="invalid_cursor")
    return row.seq
