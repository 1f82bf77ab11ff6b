"""Recording an action: the encounter saved (version + 1), the action row, its
roll-log entry (`kind: "combat"`) and its events, in the caller's transaction (kept
for its commit: `EncounterWork.later`, one round trip on PostgreSQL).

Its events mirror the change, each per viewer (API.md): `character.updated`
for each sheet it changed (the character as that viewer reads it), `log.created` for
its entry (as that viewer reads the roll log), then the encounter's event carrying
the action as that viewer reads it (`view.action`: a player never receives the
action of a combatant it may not see, nor a hidden combatant's sheet).

The roll log keeps one body for everyone: an entry holding something a player
may not see (a hidden combatant's dice, exact resources under `hp_visibility`)
is the GM's there, and players read it, filtered, in the encounter's history."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from sqlmodel import Session

from app.kit.errors import NotFound
from app.models import seen as seen_versions
from app.models.fight_rows import Step
from app.models.results.common import wire_time
from app.models.tables import new_id, utcnow
from app.rulesets.events import EventName
from app.services import events
from app.services.auth import check_member
from app.services.changed import CharacterChanged, Seen
from app.services.encounters import store, view
from app.services.encounters.changes import Changes
from app.services.encounters.dice import CombatDice
from app.services.encounters.store import Fight
from app.services.encounters.unit import EncounterWork, scene, viewer
from app.services.provenance import NO_DICE, entry_for_viewer
from app.services.records import Principal


def record_action(
    uow: EncounterWork,
    fight: Fight,
    principal: Principal,
    *,
    type_: str,
    changes: Changes,
    steps: Sequence[Step],
    dice: CombatDice | None = None,
    actor_id: str | None = None,
    target_id: str | None = None,
    hidden: bool = False,
    character_id: str | None = None,
    others: Sequence[str] = (),
    reverts: str | None = None,
    event: EventName = "encounter.action",
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
        "steps": list(steps),
        "changes": changes.public(),
        "encounter_version": version,
        "reverted_by": None,
        "hidden": hidden,
        "created_at": wire_time(at),
        **(dice.provenance if dice is not None else NO_DICE),
    }
    if reverts is not None:
        body["reverts"] = reverts
    seen = scene(conn, fight, view.referenced(body, fight.rules))
    data = {"id": fight.id, "version": version, "action_id": body["id"]}
    if reverts is not None:
        data["reverted"] = reverts
    event_data, event_args = _action_event(data, body, seen)
    told = _told(fight, body, seen, event_args)
    sheets = sorted(fight.dirty_sheets)
    store.save(conn, fight, at, later=uow.later)
    log_hidden = hidden or not view.players_see_all(body, seen)
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
            log_hidden=log_hidden,
            now=at,
            seen_versions=told,
        )
    )
    unseen = view.action(body, seen, view.NOBODY) is None
    # the sheets it changed: told (an action the other players do not see: its changes are not theirs
    # to know of either), with the other fights showing them moved, at this place in the writes
    said_changed(uow, fight, sheets, hidden=unseen)
    telling = uow.telling()  # read before the writes' batch
    uow.later(telling.tell)
    changed = [telling.seen[cid] for cid in sheets]
    log_data, log_args = _log_event(body["id"], changed, hidden=log_hidden)
    uow.later(partial(events.record, uow.session, uow.campaign_id, "log.created", log_data, conn=conn, **log_args))
    uow.later(
        partial(
            events.record,
            uow.session,
            uow.campaign_id,
            event,
            event_data,
            conn=conn,
            player_versions=told,
            **event_args,
        )
    )
    uow.later(telling.move)  # the other fights showing those characters: after the action's events
    mine = view.action(body, seen, viewer(principal), told)
    if mine is None:
        return body, _bare(body)
    return body, {**mine, "seed": body["seed"]} if "seed" in body else mine  # the caller's own seed


def _told(fight: Fight, body: dict[str, Any], seen: view.Scene, audience: dict[str, Any]) -> dict[str, Any]:
    """The players' versions after this action (`models.seen`), saved with the fight: every player's
    moves when the players are told of it; else those of the player told alone and of the owners of
    the combatants it changed (their own view shows the change)."""
    versions = fight.encounter["player_versions"]
    if not audience["hidden"]:
        told = seen_versions.bumped(versions, everyone=True)
    else:
        owners = {seen.owner.get(c.get("combatant_id") or "") for c in body["changes"]}
        owners.add(audience["owner_id"])
        told = seen_versions.bumped(versions, owners=sorted(o for o in owners if o is not None))
    fight.encounter["player_versions"] = told
    return told


def record_update(
    uow: EncounterWork,
    fight: Fight,
    *,
    hidden: bool = False,
    owners: Sequence[str | None] = (),
    event: EventName = "encounter.updated",
) -> int:
    """A setup change (not an action): the fight saved, version + 1, and its events (the sheets it
    changed, `end`'s, then the encounter's). `hidden`: a change about hidden combatants, told to the
    GM and to their `owners` alone (their view shows those combatants)."""
    sheets = sorted(fight.dirty_sheets)
    told_alone = sorted({o for o in owners if o is not None}) if hidden else []
    told = seen_versions.bumped(fight.encounter["player_versions"], everyone=not hidden, owners=told_alone)
    fight.encounter["player_versions"] = told
    version = store.save(uow.conn, fight, utcnow())
    said_changed(uow, fight, sheets, hidden=hidden)
    telling = uow.telling()
    telling.tell()  # the sheets it changed told before the fight's event
    data = {"id": fight.id, "version": version}
    if not hidden:
        uow.record(event, data, player_versions=told)
    elif not told_alone:
        uow.record(event, data, hidden=True)
    for owner in told_alone:  # (one, but for several hidden combatants added at once)
        uow.record(event, data, hidden=True, owner_id=owner, player_versions=told)
    telling.move()  # the other fights showing them: after this one's event
    return version


def said_changed(uow: EncounterWork, fight: Fight, sheets: list[str], *, hidden: bool) -> None:
    """Each sheet this change saves (`sheets`, as `store.save` leaves them in the fight) said to the unit
    of work as a change (`hidden`: one the other players do not see)."""
    for cid in sheets:
        after = fight.characters[cid]
        uow.changed(CharacterChanged(fight.originals.pop(cid, after), after, hidden=hidden))


def _log_event(entry_id: str, changed: list[Seen], *, hidden: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """`log.created` of an action: (its data, its audience). Each changed character with the version
    its reader reads: the GM and the owner the character's own, the other players that of their view
    (a `limited` character's: `characters.limited`), none of one unknown to them."""

    def refs(player_id: str | None) -> list[dict[str, Any]]:
        return [
            {"id": s.character.id, "version": s.character.version if mine(s, player_id) else s.version}
            for s in changed
            if not s.unknown
        ]

    def mine(s: Seen, player_id: str | None) -> bool:
        return player_id is not None and s.character.player_id == player_id

    everyone = [{"id": s.character.id, "version": s.character.version} for s in changed]
    data = {"entry_id": entry_id, "characters_changed": everyone}
    others = refs(None)
    owners = {s.character.player_id for s in changed if not s.unknown and s.version != s.character.version}
    views = {p: {"entry_id": entry_id, "characters_changed": refs(p)} for p in sorted(o for o in owners if o)}
    player_data = None if others == data["characters_changed"] else {"entry_id": entry_id, "characters_changed": others}
    return data, {"hidden": hidden, "player_data": player_data, "player_views": views or None}


def _action_event(
    data: dict[str, Any], body: dict[str, Any], seen: view.Scene
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The encounter event of an action: (its data, `events.record`'s audience arguments). The GM's
    carries the whole action (by reference: the roll log holds it once); the players' the action
    as `view.action` shows it to them, one player's own when it sees more (its hidden combatant,
    its exact pools)."""
    others = view.action(body, seen, view.NOBODY)
    views: dict[str, dict[str, Any]] = {}
    for player_id in sorted({p for p in seen.owner.values() if p is not None}):
        mine = view.action(body, seen, view.Viewer(is_gm=False, player_id=player_id))
        if mine is not None and mine != others:
            views[player_id] = {**data, "action": mine}
    owner_id = None
    if others is None:  # a hidden action: among the players, only the one who sees it (there is one at most)
        if len(views) == 1:
            owner_id = next(iter(views))
        else:
            views = {}
    player_data = (
        None if others is None or others == entry_for_viewer(body, is_gm=False) else {**data, "action": others}
    )
    args = {"hidden": others is None, "owner_id": owner_id, "player_data": player_data, "player_views": views or None}
    return {**data, events.ACTION_REF: body["id"]}, args


def _bare(body: dict[str, Any]) -> dict[str, Any]:
    """What is left of an action its caller may not see in full (never the case for its own)."""
    return {**body, "rolls": [], "steps": [], "changes": [], "actor_id": None, "target_id": None}


def read_action(session: Session, principal: Principal, encounter_id: str, action_id: str) -> dict[str, Any]:
    """One action of the history as the caller may read it (`view.action`, as the list shows it);
    404 for one it may not see, exactly as for an unknown one (API.md)."""
    conn = session.connection()
    fight = store.load_fight(conn, encounter_id, lock=False)
    check_member(principal, fight.campaign_id, "encounter")
    row = store.action_row(conn, fight.id, action_id)
    seen = None
    if row is not None:
        body = {**row.body, "reverted_by": row.reverted_by}
        seen = view.action(
            body, scene(conn, fight, view.referenced(body, fight.rules)), viewer(principal), row.seen_versions
        )
    if seen is None:
        raise NotFound("no action with this id in this encounter")
    return seen
