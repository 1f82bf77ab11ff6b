"""Recording an action: the encounter saved (version + 1), the action row, its
roll-log entry (`kind: "combat"`) and its event, in the caller's transaction (kept
for its commit: `EncounterWork.later`, one round trip on PostgreSQL).

The roll log keeps one body for everyone: an entry holding something a player
may not see (a hidden combatant's dice, exact resources under `hp_visibility`)
is the GM's there, and players read it, filtered, in the encounter's history."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from app.models.tables import new_id, utcnow
from app.services.auth import Principal
from app.services.encounters import store, view
from app.services.encounters.changes import Changes
from app.services.encounters.dice import CombatDice
from app.services.encounters.store import Fight
from app.services.encounters.unit import EncounterWork, scene, viewer
from app.services.provenance import NO_DICE


def record_action(
    uow: EncounterWork,
    fight: Fight,
    principal: Principal,
    *,
    type_: str,
    changes: Changes,
    steps: list[dict[str, Any]],
    dice: CombatDice | None = None,
    actor_id: str | None = None,
    target_id: str | None = None,
    hidden: bool = False,
    character_id: str | None = None,
    others: Sequence[str] = (),
    reverts: str | None = None,
    event: str = "encounter.action",
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Save the fight and log the action; returns (the full body, the caller's view of it)."""
    at, conn = utcnow(), uow.conn
    version = fight.encounter["version"] + 1
    body = {
        "id": new_id(),
        "kind": "combat",
        "ruleset": fight.ruleset,
        "type": type_,
        "encounter_id": fight.id,
        "round": fight.encounter["round"],
        "actor_id": actor_id,
        "target_id": target_id,
        "rolls": dice.rolls() if dice is not None else [],
        "steps": steps,
        "changes": changes.public(),
        "encounter_version": version,
        "reverted_by": None,
        "hidden": hidden,
        "created_at": view.iso(at),
        **(dice.provenance if dice is not None else NO_DICE),
    }
    if reverts is not None:
        body["reverts"] = reverts
    seen = scene(conn, fight, view.referenced(body))
    data = {"id": fight.id, "version": version, "action_id": body["id"]}
    if reverts is not None:
        data["reverted"] = reverts
    store.save(conn, fight, at, later=uow.later)
    uow.later(
        partial(
            store.insert_action,
            conn,
            uow.log,
            fight,
            body,
            changes=changes.items,
            reverts=reverts,
            character_id=character_id,
            others=list(others),
            log_hidden=hidden or not view.players_see_all(body, seen),
            now=at,
        )
    )
    uow.later(partial(uow.record, event, data, hidden=view.action(body, seen, view.NOBODY) is None))
    shown = view.action(body, seen, viewer(principal))
    if shown is None:
        return body, _bare(body)
    return body, {**shown, "seed": body["seed"]} if "seed" in body else shown  # the caller's own seed


def record_update(uow: EncounterWork, fight: Fight, *, hidden: bool = False, event: str = "encounter.updated") -> int:
    """A setup change (not an action): the fight saved, version + 1, and its event."""
    version = store.save(uow.conn, fight, utcnow())
    uow.record(event, {"id": fight.id, "version": version}, hidden=hidden)
    return version


def _bare(body: dict[str, Any]) -> dict[str, Any]:
    """What is left of an action its caller may not see in full (never the case for its own)."""
    return {**body, "rolls": [], "steps": [], "changes": [], "actor_id": None, "target_id": None}
