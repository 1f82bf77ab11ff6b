"""Actions on a combatant (`POST /v1/encounters/{eid}/actions`), their undo, and the
fight's history.

Actions are a registry `{type: Action(handler, gm_only)}`: the GM's `heal`,
`damage` (raw amounts on a resource of the sheet, versioned, in the same
transaction) and `condition`. (Attacks, moves and postures come next, #13.)"""
from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from app.kit.errors import Conflict, NotFound
from app.models.encounters import MAX_CONDITIONS, ConditionChange, HealOrDamage
from app.services.auth import Principal, check_gm, check_member
from app.services.encounters import store, view
from app.services.encounters.changes import Changes
from app.services.encounters.record import record_action
from app.services.encounters.store import Fight
from app.services.encounters.unit import (
    check_not_ended,
    check_status,
    check_version,
    scene,
    viewer,
    write,
)
from app.services.operations import Idempotency
from app.services.validation import InvalidBody

Handler = Callable[[Any, Fight, Any, Changes, list], None]


@dataclass(frozen=True)
class Action:
    handler: Handler
    gm_only: bool


def act(session: Session, principal: Principal, encounter_id: str, req: HealOrDamage | ConditionChange,
        idem: Idempotency | None, if_match: str | None) -> dict[str, Any]:
    action = ACTIONS[req.type]
    if action.gm_only:
        check_gm(principal, f"make a {req.type} action")

    def work(conn, fight: Fight) -> dict[str, Any]:
        check_version(fight, if_match)
        check_status(fight, "active", "an action")
        if req.actor_id is not None:
            fight.combatant(req.actor_id, "actor_id")
        target = fight.combatant(req.target_id, "target_id")
        changes, steps = Changes(fight), []
        action.handler(conn, fight, req, changes, steps)
        _, shown = record_action(session, conn, fight, principal, type_=req.type, changes=changes, steps=steps,
                                 actor_id=req.actor_id, target_id=target["id"], hidden=req.hidden,
                                 character_id=target["character_id"])
        return shown

    return write(session, principal, encounter_id, work, idem=idem)


def _loaded(conn, fight: Fight, c: dict[str, Any]) -> dict[str, Any]:
    """The combatant's character, locked for a sheet write; 409 when it was deleted."""
    store.load_characters(conn, fight, [c["character_id"]], lock=True)
    ch = fight.character_of(c)
    if ch is None:
        raise Conflict(f"the character of combatant {c['id']} was deleted", field="target_id")
    return ch


def heal_or_damage(conn, fight: Fight, req: HealOrDamage, changes: Changes, steps: list) -> None:
    """The GM's raw amount, clamped to the pool's bounds (0 or the sheet's floor, its maximum)."""
    target = fight.combatant(req.target_id, "target_id")
    pool = fight.rules.pool(req.resource)
    sheet = _loaded(conn, fight, target)["sheet"]
    before, maximum = pool.value(sheet), pool.maximum(sheet)
    if req.type == "heal":  # up to the maximum (a value already above it, by GM fiat, stays)
        after = before + req.amount if maximum is None else max(before, min(before + req.amount, maximum))
    else:  # down to the lowest value the sheet allows
        after = min(before, max(pool.floor, before - req.amount))
    was_down = fight.rules.is_down(sheet)
    changes.resource(target, pool, after)
    steps.append({"rule": "GM", "what": req.type, "combatant_id": target["id"], "resource": pool.name,
                  "amount": req.amount, "before": before, "after": after})
    now_down = fight.rules.is_down(fight.character_of(target)["sheet"])
    if now_down != was_down:
        steps.append({"rule": "turn", "what": "down" if now_down else "back in the fight", "combatant_id": target["id"]})


def condition(conn, fight: Fight, req: ConditionChange, changes: Changes, steps: list) -> None:
    target = fight.combatant(req.target_id, "target_id")
    conditions = list(target["conditions"])
    if req.remove is not None:
        if not any(c["name"] == req.remove for c in conditions):
            raise InvalidBody(f"combatant {target['id']} has no condition {req.remove!r}", field="remove")
        conditions = [c for c in conditions if c["name"] != req.remove]
        steps.append({"rule": "conditions", "what": "condition removed", "combatant_id": target["id"],
                      "name": req.remove})
    if req.add is not None:
        new = {"name": req.add.name, "rounds_left": req.add.rounds, "ends": req.add.ends}
        conditions = [c for c in conditions if c["name"] != new["name"]] + [new]
        if len(conditions) > MAX_CONDITIONS:
            raise InvalidBody(f"a combatant bears at most {MAX_CONDITIONS} conditions", field="add")
        steps.append({"rule": "conditions", "what": "condition added", "combatant_id": target["id"], **new})
    changes.combatant(target, "conditions", conditions)


ACTIONS: dict[str, Action] = {
    "heal": Action(heal_or_damage, gm_only=True),
    "damage": Action(heal_or_damage, gm_only=True),
    "condition": Action(condition, gm_only=True),
}


# --- undo ------------------------------------------------------------------------------------

def revert(session: Session, principal: Principal, encounter_id: str, action_id: str, force: bool,
           idem: Idempotency | None, if_match: str | None) -> dict[str, Any]:
    """GM: undo the latest action not yet reverted, restoring every field it changed.
    A sheet field changed since by something else → 409 naming it, unless `force`."""
    check_gm(principal, "revert an action")

    def work(conn, fight: Fight) -> dict[str, Any]:
        check_version(fight, if_match)
        check_not_ended(fight)
        row = store.action_row(conn, fight.id, action_id)
        if row is None:
            raise NotFound("no action with this id in this encounter")
        if row.type == "revert":
            raise Conflict("a revert is not reverted: revert the action before it instead", field="action_id")
        if row.reverted_by is not None:
            raise Conflict(f"action {action_id} was already reverted (by {row.reverted_by})",
                           extra={"reverted_by": row.reverted_by})
        latest = store.latest_action(conn, fight.id)
        if latest.id != action_id:
            raise Conflict(f"only the latest action not yet reverted may be reverted: {latest.id} ({latest.type})",
                           extra={"latest": latest.id})
        changes, steps = Changes(fight), []
        for item in reversed(row.changes):
            _restore(conn, fight, item, changes, steps, force)
        body, shown = record_action(session, conn, fight, principal, type_="revert", changes=changes, steps=steps,
                                    hidden=row.hidden, reverts=action_id, event="encounter.reverted")
        store.mark_reverted(conn, action_id, body["id"])
        return shown

    return write(session, principal, encounter_id, work, idem=idem)


def _restore(conn, fight: Fight, item: dict[str, Any], changes: Changes, steps: list, force: bool) -> None:
    if item["on"] == "encounter":
        changes.encounter(item["field"], item["before"])
        return
    c = next((c for c in fight.combatants if c["id"] == item["combatant_id"]), None)
    if c is None:
        steps.append({"rule": "revert", "what": "combatant removed since: not restored", "field": item["field"]})
        return
    if item["on"] == "combatant":
        changes.combatant(c, item["field"], item["before"])
        return
    store.load_characters(conn, fight, [c["character_id"]], lock=True)
    ch = fight.character_of(c)
    pool = fight.rules.pool(item["field"])
    current = pool.value(ch["sheet"]) if ch is not None else None
    if current != item["after"] and not force:
        raise Conflict(
            f"{item['field']} of combatant {c['id']} changed since that action ({item['after']} then, {current} now): "
            "send {\"force\": true} to restore it anyway",
            field=item["field"], extra={"combatant_id": c["id"], "field": item["field"], "expected": item["after"],
                                        "current": current})
    if ch is None:
        steps.append({"rule": "revert", "what": "character deleted since: not restored", "combatant_id": c["id"]})
        return
    changes.resource(c, pool, item["before"])


# --- history ---------------------------------------------------------------------------------

def list_actions(session: Session, principal: Principal, encounter_id: str, *, limit: int,
                 cursor: str | None) -> dict[str, Any]:
    """Newest first; reverted ones carry `reverted_by`; each as the caller may see it."""
    conn = session.connection()
    fight = store.load_fight(conn, encounter_id, lock=False)
    check_member(principal, fight.campaign_id, "encounter")
    before = _seq_of(conn, fight, cursor) if cursor else None
    rows = store.action_page(conn, fight.id, before_seq=before, limit=limit)
    seen, who = scene(conn, fight), viewer(principal)
    items = []
    for row in rows[:limit]:
        shown = view.action({**row.body, "reverted_by": row.reverted_by}, seen, who)
        if shown is not None:
            items.append(shown)
    next_cursor = _cursor(rows[limit - 1].body["id"]) if len(rows) > limit else None
    return {"items": items, "next_cursor": next_cursor}


def _cursor(action_id: str) -> str:
    return base64.urlsafe_b64encode(f"a{action_id}".encode()).decode().rstrip("=")


def _seq_of(conn, fight: Fight, cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except ValueError:  # not base64, not UTF-8
        text = ""
    row = store.action_row(conn, fight.id, text[1:]) if text.startswith("a") and len(text) <= 40 else None
    if row is None:
        raise InvalidBody("the cursor is not one this service returned", field="cursor")
    return row.seq

