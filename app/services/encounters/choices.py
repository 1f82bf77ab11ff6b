"""What a combatant may do now (`GET /v1/encounters/{eid}/choices`).

One source of truth: every answer is the action route's own, run without writing
(`trial`: the action's use case in the encounter's unit of work, rolled back instead of
committed: nothing written, no event, no log entry). An action type is `allowed` when
the route would accept it; refused, it carries the problem `code` the route answers.
A type that names a target is tried on every combatant the caller sees (a hidden one
is never a player's target); its `targets` are those the route accepts.

`needs`: what the body must still say because the sheet cannot (API.md "The combat assistant tells
the truth"): the type's required fields (`move`'s `to`, a `posture`, AS-H2's `action_id`) and what
the ruleset reads from the sheet when it can (`EncounterRules.needs`: an attack's `damage` when no
weapon is on the sheet). The bodies tried fill each need (`FILLERS`, the cells next to the actor,
each posture, the fight's latest action), so a need never makes a type refused."""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import Any, Literal

from sqlmodel import Session

from app.kit.errors import QUERY, AppError, Forbidden
from app.models.encounters import CombatAction
from app.models.fight_rows import CombatantRow
from app.services.auth import check_member
from app.services.encounters import actions, store
from app.services.encounters.store import Fight
from app.services.encounters.unit import EncounterWork, scene, viewer
from app.services.records import Principal

NO_FIELDS = {"type", "actor_id", "target_id", "seed", "dice", "hidden", "reaction", "weapon", "damage"}
# a value that fills a need the sheet leaves open, valid in every ruleset (Asgard reads damage in d6, AS-C2)
FILLERS: dict[str, Any] = {"damage": "1d6"}


def trial(
    session: Session, principal: Principal, encounter_id: str, body: dict[str, Any]
) -> tuple[dict[str, Any] | None, AppError | None]:
    """The action route's answer to `body` (its use case, `actions.dispatch`, without If-Match:
    none is sent), rolled back: (the action it would record, None) or (None, the problem it
    would answer)."""
    uow = EncounterWork(session, principal, encounter_id, None, combatants=actions.named(body))
    try:
        with uow:  # never committed: the unit of work rolls everything back on exit
            return actions.dispatch(uow, uow.fight, principal, body), None
    except AppError as exc:
        return None, exc


def code_of(exc: AppError) -> str:
    return exc.code


def check_chooser(session: Session, principal: Principal, encounter_id: str, combatant_id: str) -> Fight:
    """The fight, read; the combatant the GM, or its owner, asks about: one the player may not see
    is an unknown one (422 `unknown_id`, as the action route answers), another's a 403."""
    conn = session.connection()
    fight = store.load_fight(conn, encounter_id, lock=False)
    check_member(principal, fight.campaign_id, "encounter")
    c = fight.combatant(combatant_id, QUERY + "combatant_id")
    if not principal.is_gm:
        if not scene(conn, fight, {c["id"]}).sees(viewer(principal), c["id"]):
            raise store.unknown_combatant(combatant_id, QUERY + "combatant_id")
        store.load_characters(fight, [c["character_id"]], lock=False)
        ch = fight.character_of(c)
        if ch is None or ch.player_id != principal.player_id:
            raise Forbidden(
                "only the GM or the combatant's owner asks what it may do",
                field="combatant_id",
                code="owner_or_gm_only",
            )
    return fight


def choices(session: Session, principal: Principal, encounter_id: str, combatant_id: str) -> dict[str, Any]:
    fight = check_chooser(session, principal, encounter_id, combatant_id)
    conn = session.connection()
    me = fight.combatant(combatant_id, QUERY + "combatant_id")
    seen = None if principal.is_gm else scene(conn, fight)
    who = viewer(principal)
    others = [c["id"] for c in fight.combatants if c["id"] != me["id"] and (seen is None or seen.sees(who, c["id"]))]
    current = fight.encounter["current_turn"] or {}
    counters = me["counters"] or {}
    turn = counters.get("turn") or {}
    this_turn = turn.get("round") == fight.encounter["round"] and turn.get("slot") == current.get("slot")
    rules = fight.rules
    store.load_characters(fight, [me["character_id"]], lock=False)
    ch = fight.character_of(me)
    sheet = fight.sheet_of(ch) if ch is not None else None
    filled = dict(FILLERS)
    if any("action_id" in _required(m) for m in rules.combat_actions.values()):  # AS-H2: the latest action
        latest = store.latest_action(conn, fight.id)
        filled["action_id"] = latest.id if latest is not None else None
    session.rollback()  # the reads above end here: each trial is its own unit of work
    out = []
    for type_, model in rules.combat_actions.items():
        needs = [*_required(model), *(rules.needs(type_, sheet) if sheet is not None else ())]
        entry = _choice(session, principal, encounter_id, me, type_, model, others, fight, needs, filled)
        # what it may cost (light/dark points, heroism…), from the sheet as the action reads it
        costs = rules.action_costs(type_, sheet) if sheet is not None else None
        if costs is not None:
            entry["costs"] = costs
        out.append(entry)
    return {
        "combatant_id": me["id"],
        "turn": me["id"] in current.get("combatant_ids", []),
        "acted": bool(this_turn and (turn.get("acted") or turn.get("actions"))),
        "moved": int(turn.get("moved", 0) or 0) if this_turn else 0,
        "actions": out,
    }


def _choice(
    session: Session,
    principal: Principal,
    encounter_id: str,
    me: CombatantRow,
    type_: str,
    model: type[CombatAction],
    others: list[str],
    fight: Fight,
    needs: list[str],
    filled: dict[str, Any],
) -> dict[str, Any]:
    fields = model.model_fields
    takes_target = "target_id" in fields
    needs_target = takes_target and fields["target_id"].is_required()
    entry: dict[str, Any] = {"type": type_, "allowed": False, "targets": [], "needs": needs}
    first: AppError | None = None
    given = {name: filled[name] for name in needs if filled.get(name) is not None}
    bodies = list(_bodies(model, me, given))
    for extra in bodies:
        base = {"type": type_, "actor_id": me["id"], **extra}
        candidates: list[str | None] = [*others] if needs_target else [None, *others] if takes_target else [None]
        for target in candidates:
            body = {**base, "target_id": target} if target is not None else base
            done, refused = trial(session, principal, encounter_id, body)
            if refused is None:
                entry["allowed"] = True
                if target is not None and target not in entry["targets"]:
                    entry["targets"].append(target)
            elif first is None:
                first = refused
            if done is not None and not takes_target:
                break
        if entry["allowed"]:
            break
    if not entry["allowed"]:
        if first is None:  # nobody to target
            first = _no_target(session, principal, encounter_id, me, type_)
        entry["code"] = code_of(first)
    if "reaction" in fields:
        entry["reactions"] = list(fight.rules.reactions)
    return entry


def _no_target(session: Session, principal: Principal, encounter_id: str, me: CombatantRow, type_: str) -> AppError:
    """The route's answer to the action with no target at all (nobody else in the fight)."""
    _, refused = trial(session, principal, encounter_id, {"type": type_, "actor_id": me["id"]})
    assert refused is not None
    return refused


def _required(model: type[CombatAction]) -> list[str]:
    """The fields a body of this type must always say (`targets` says who: not a need)."""
    return [name for name, f in model.model_fields.items() if f.is_required() and name not in NO_FIELDS]


def _bodies(model: type[CombatAction], me: CombatantRow, given: dict[str, Any]) -> Iterable[dict[str, Any]]:
    """The bodies tried for a type, its needs filled: `given` (a damage expression, the fight's
    latest action), each value of a required Literal field (a posture's names), the cells next to
    the actor for a position (`move`'s `to`)."""
    open_ = [name for name in _required(model) if name not in given]
    if not open_:
        yield given
        return
    name, f = open_[0], model.model_fields[open_[0]]
    if typing.get_origin(f.annotation) is Literal:
        for value in typing.get_args(f.annotation):
            yield {**given, name: value}
        return
    if name != "to":  # nothing to try: the route's refusal of the body without it
        yield given
        return
    position = me.get("position") or {"x": 0, "y": 0}
    for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1)):
        yield {**given, name: {"x": position["x"] + dx, "y": position["y"] + dy}}
