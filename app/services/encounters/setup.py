"""Setting a fight up (GM): create it from campaign characters (NPC copies with
`count`), change it, add, change and remove combatants, end it; and the reads,
each as the caller may see it."""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Connection, insert
from sqlmodel import Session

from app.kit.errors import Forbidden, NotFound
from app.models import seen
from app.models.encounters import (
    MAX_COMBATANTS,
    POSITION_BOUND,
    CombatantAddBase,
    CombatantCreateBase,
    CombatantUpdateBase,
    EncounterCreateBase,
    EncounterUpdate,
    Position,
)
from app.models.fight_rows import CombatantRow, EncounterRow
from app.models.schemas import merge_metadata
from app.models.tables import Combatant, core_table, new_id, utcnow
from app.models.validation import InvalidBody, invalid_from
from app.rules.errors import RuleError
from app.rulesets.contract.combat import EncounterRules
from app.rulesets.encounter_bodies import for_ruleset
from app.rulesets.registry import rules_for
from app.services.auth import authorize, check_member
from app.services.changed import CharacterCreated
from app.services.encounters import store, turns, view
from app.services.encounters.record import record_update
from app.services.encounters.store import Fight
from app.services.encounters.unit import (
    EncounterWork,
    check_not_ended,
    check_status,
    check_version,
    scene,
    viewer,
    write,
)
from app.services.pages import decode_cursor, encode_cursor
from app.services.records import Principal, StoredCharacter
from app.services.uow import UnitOfWork, load_campaign
from app.services.visibility import others_level, standing_of

_INSERT_COMBATANTS = insert(core_table(Combatant))


def _options(rules: EncounterRules, raw: dict[str, Any]) -> dict[str, Any]:
    try:
        return rules.Options.model_validate(raw).model_dump(mode="json")
    except ValidationError as exc:
        raise invalid_from(exc, ("body", "options")) from None


def create_encounter(
    session: Session, principal: Principal, campaign_id: str, data: EncounterCreateBase
) -> dict[str, Any]:
    campaign = load_campaign(session, principal, campaign_id)
    rules = rules_for(campaign.ruleset)
    with UnitOfWork(session, campaign_id) as uow:
        at = utcnow()
        row: EncounterRow = {
            "id": new_id(),
            "campaign_id": campaign_id,
            "name": data.name,
            "status": "setup",
            "round": 0,
            "version": 1,
            "player_versions": seen.starting_at(1),
            "options": _options(rules, data.options or {}),
            "turn_order": [],
            "current_turn": None,
            "client_metadata": data.metadata or {},
            "created_at": at,
            "updated_at": at,
        }
        store.insert_encounter(uow.conn, row)
        fight = Fight(
            encounter=row,
            ruleset=campaign.ruleset,
            campaign_options=campaign.options,
            every=[],
            repository=uow.characters,
        )
        _add(uow, fight, data.combatants, ("body", "combatants"))
        if fight.new_combatants:
            uow.conn.execute(_INSERT_COMBATANTS, fight.new_combatants)
        uow.record("encounter.created", {"id": row["id"], "version": 1})
        shown = view.state(fight, scene(uow.conn, fight), viewer(principal))
        uow.commit()
        return shown


def _add(uow: UnitOfWork, fight: Fight, items: list[CombatantCreateBase], loc: tuple) -> list[CombatantRow]:
    """New combatants (and the NPC copies `count` asks for), appended to the fight."""
    planned = len(fight.combatants) + sum(i.count or 1 for i in items)
    if planned > MAX_COMBATANTS:
        raise InvalidBody(
            f"an encounter has at most {MAX_COMBATANTS} combatants ({planned} asked)",
            field=".".join(loc[1:]),
            code="too_many",
        )
    # locked (after the fight, in id order: the encounters' lock order), so one being deleted is waited
    # for and then unknown, never added as it goes
    found = uow.characters.find([i.character_id for i in items], lock=True)
    present = {c["character_id"] for c in fight.combatants}
    added: list[CombatantRow] = []
    for n, sent in enumerate(items):
        where = ".".join(map(str, (*loc[1:], n)))
        item = for_ruleset(fight.rules.CombatantCreate, sent, fight.ruleset, where)
        ch = found.get(item.character_id)
        if ch is None:
            raise InvalidBody(
                f"no character {item.character_id!r} in this campaign", field=f"{where}.character_id", code="unknown_id"
            )
        _check_reaction(fight.rules, item.reaction, where)
        if item.count is None:
            if ch.id in present:
                raise InvalidBody(
                    f"character {ch.id!r} is already a combatant of this encounter",
                    field=f"{where}.character_id",
                    code="named_twice",
                )
            characters = [ch]
        else:
            characters = _copies(uow, fight, ch, item.count, where, hidden=item.hidden)
        cells = _cells_near(fight, item.position, len(characters)) if item.count is not None else None
        for k, character in enumerate(characters):
            present.add(character.id)
            fight.characters[character.id] = character
            added.append(_combatant(fight, character, item, cells[k] if cells is not None else item.position))
    return added


def _cells_near(fight: Fight, origin: Position | None, count: int) -> list[Position | None]:
    """The cells of `count` NPC copies placed at `origin` (the position given for
    the NPC), each on its own free cell (no combatant of the fight on it): the free cells nearest
    to `origin` by the ruleset's distance (`EncounterRules.distance`, GC-D1's |dx| + |dy|), nearer
    first, then by row (y), then column (x): deterministic. Without a position, off the grid."""
    if origin is None:
        return [None] * count
    taken = {(p["x"], p["y"]) for c in fight.combatants if (p := c["position"]) is not None}
    at = (origin.x, origin.y)
    cells: list[Position | None] = []
    d = 0
    while len(cells) < count:
        ring = sorted(
            (at[1] + dy, at[0] + dx)
            for dy in range(-d, d + 1)
            for dx in range(-d, d + 1)
            if fight.rules.distance(at, (at[0] + dx, at[1] + dy)) == d
        )
        for y, x in ring:
            if len(cells) < count and (x, y) not in taken and max(abs(x), abs(y)) <= POSITION_BOUND:
                taken.add((x, y))
                cells.append(Position(x=x, y=y))
        d += 1
    return cells


def _copies(
    uow: UnitOfWork, fight: Fight, template: StoredCharacter, count: int, where: str, *, hidden: bool
) -> list[StoredCharacter]:
    """`count` numbered NPC characters copied from an NPC ("Goblin 1…N"), each its own sheet; the
    copies of hidden combatants are announced in the GM's streams only (their sheets, HP included)."""
    if template.kind != "npc":
        raise InvalidBody("only an NPC is copied with `count`", field=f"{where}.count", code="rule_violation")
    at = utcnow()
    copies = []
    for name in store.numbered_names(uow.conn, fight.campaign_id, template.name, count):
        copy = uow.characters.add(
            id=new_id(),
            player_id=None,
            name=name[:200],
            kind="npc",
            sheet=deepcopy(template.sheet),
            now=at,
            player_access=template.player_access,
        )
        uow.changed(CharacterCreated(copy, hidden=hidden))
        copies.append(copy)
    uow.publish()  # told before the fight's own events
    return copies


def _combatant(
    fight: Fight, character: StoredCharacter, item: CombatantCreateBase, position: Position | None
) -> CombatantRow:
    row: CombatantRow = {
        "id": new_id(),
        "encounter_id": fight.id,
        "character_id": character.id,
        "ordinal": store.next_ordinal(fight),
        "side": item.side or ("heroes" if character.kind == "pc" else "foes"),
        "hidden": item.hidden,
        "position": position.model_dump() if position else None,
        "initiative": None,
        "initiative_override": item.initiative,
        "actions": item.actions_per_round(),
        "reaction": item.reaction,
        "conditions": [],
        "counters": {},
        "created_at": utcnow(),
    }
    fight.combatants.append(row)
    fight.new_combatants.append(row)
    return row


def _check_reaction(rules: EncounterRules, reaction: str | None, where: str) -> None:
    if reaction is not None:
        try:
            rules.check_reaction(reaction)
        except RuleError as exc:
            exc.field = f"{where}.reaction" if where else "reaction"
            raise


# --- changes ---------------------------------------------------------------------------------


def update_encounter(
    session: Session, principal: Principal, encounter_id: str, data: EncounterUpdate, if_match: str | None
) -> dict[str, Any]:
    def work(uow: EncounterWork, fight: Fight) -> dict[str, Any]:
        authorize(principal)
        conn = uow.conn
        check_version(fight, if_match, principal)
        if data.metadata is None or data.name is not None or data.options is not None:
            check_not_ended(fight)  # `metadata` (a client's own ids) may still change on an ended fight
        if data.name is not None:
            fight.encounter["name"] = data.name
        if data.options is not None:
            fight.encounter["options"] = _options(fight.rules, {**fight.encounter["options"], **data.options})
        if data.metadata is not None:
            fight.encounter["client_metadata"] = merge_metadata(fight.encounter["client_metadata"], data.metadata)
        record_update(uow, fight)
        return _state(conn, fight, principal)

    return write(session, principal, encounter_id, work)


def add_combatants(
    session: Session, principal: Principal, encounter_id: str, item: CombatantAddBase, if_match: str | None
) -> dict[str, Any]:
    """Before `start`: a setup change. In a running fight: an undoable action
    (`join`) placing it in the turn order by the ruleset's initiative rule (`turns.join`)."""

    def work(uow: EncounterWork, fight: Fight) -> dict[str, Any]:
        authorize(principal)
        conn = uow.conn
        check_version(fight, if_match, principal)
        check_not_ended(fight)
        if fight.encounter["status"] == "active":
            added = _add(uow, fight, [item], ("body",))
            shown = turns.join(uow, fight, principal, added, item)
            return {**_state(conn, fight, principal), "action": shown}
        if item.seed is not None or item.dice is not None:
            raise InvalidBody(
                "initiative is rolled at start: `seed` and `dice` are for a fight already running",
                field="seed" if item.seed is not None else "dice",
                code="rule_violation",
            )
        added = _add(uow, fight, [item], ("body",))
        hidden = all(c["hidden"] for c in added)
        record_update(uow, fight, hidden=hidden, owners=_owners(conn, fight, added) if hidden else ())
        return _state(conn, fight, principal)

    return write(session, principal, encounter_id, work)


def update_combatant(
    session: Session,
    principal: Principal,
    encounter_id: str,
    combatant_id: str,
    data: CombatantUpdateBase,
    if_match: str | None,
) -> dict[str, Any]:
    """GM: every field (`initiative` before start only); the owner: `reaction` only."""
    sent = sorted(data.model_fields_set)

    def work(uow: EncounterWork, fight: Fight) -> dict[str, Any]:
        conn = uow.conn
        c = _visible_combatant(conn, fight, principal, combatant_id)
        if not principal.is_gm and set(sent) - {"reaction"}:
            raise Forbidden(
                "a combatant's owner may change only its reaction",
                extra={"fields": sent},
                code="reaction_only",
            )
        check_version(fight, if_match, principal)
        check_not_ended(fight)
        fields = for_ruleset(fight.rules.CombatantUpdate, data, fight.ruleset).model_dump(exclude_unset=True)
        for name in ("side", "hidden", "actions"):
            if name in fields and fields[name] is None:
                raise InvalidBody(f"{name} cannot be null", field=name)
        _check_reaction(fight.rules, fields.get("reaction"), "")
        if "initiative" in fields:
            check_status(fight, "setup", "an initiative override")
            fields["initiative_override"] = fields.pop("initiative")
        was_hidden = c["hidden"]
        seen = not was_hidden and bool(fields.get("hidden")) and _seen_by_others(conn, fight, c)
        for name in store.COMBATANT_FIELDS:
            if name in fields:
                c[name] = fields[name]
        fight.dirty_combatants.add(c["id"])
        hidden = was_hidden and c["hidden"]
        record_update(uow, fight, hidden=hidden, owners=_owners(conn, fight, [c]) if hidden else ())
        if seen:  # its character, shown to the other players until now: their pages drop its card at once
            uow.record("character.hidden", {"id": c["character_id"]})
        return _state(conn, fight, principal)

    return write(session, principal, encounter_id, work)


def _owners(conn: Connection, fight: Fight, combatants: list[CombatantRow]) -> list[str | None]:
    """The players owning these combatants' characters (told alone of a change about them, hidden)."""
    ids = [c["character_id"] for c in combatants]
    known = {cid: ch.player_id for cid, ch in fight.characters.items()}
    known.update(store.owners(conn, [i for i in ids if i not in known]))
    return [known.get(i) for i in ids]


def _seen_by_others(conn: Connection, fight: Fight, c: CombatantRow) -> bool:
    """Whether the players other than its owner see the combatant's character now (before it hides)."""
    store.load_characters(fight, [c["character_id"]], lock=False)
    ch = fight.character_of(c)
    return ch is not None and others_level(ch, standing_of(conn, ch)) != "none"


def delete_combatant(
    session: Session, principal: Principal, encounter_id: str, combatant_id: str, if_match: str | None
) -> None:
    def work(uow: EncounterWork, fight: Fight) -> dict[str, Any]:
        authorize(principal)
        c = fight.combatant(combatant_id)
        check_version(fight, if_match, principal)
        check_status(fight, "setup", "removing a combatant")
        fight.combatants.remove(c)
        fight.removed_combatants.append(c["id"])
        record_update(uow, fight, hidden=c["hidden"], owners=_owners(uow.conn, fight, [c]) if c["hidden"] else ())
        return {}

    write(session, principal, encounter_id, work)


def end(session: Session, principal: Principal, encounter_id: str, if_match: str | None) -> dict[str, Any]:
    """GM: the fight is over; every later action is a 409."""

    def work(uow: EncounterWork, fight: Fight) -> dict[str, Any]:
        authorize(principal)
        conn = uow.conn
        check_version(fight, if_match, principal)
        check_not_ended(fight)
        fight.encounter["status"] = "ended"
        if fight.rules.changes_at_fight_end:
            _fight_ends(fight)
        record_update(uow, fight)
        return _state(conn, fight, principal)

    return write(session, principal, encounter_id, work, status_code=200)


def _fight_ends(fight: Fight) -> None:
    """What ending the fight does to each combatant (GC-P6: special postures end), written with the end."""
    store.load_characters(fight, (c["character_id"] for c in fight.combatants), lock=True)
    for c in fight.combatants:
        ch = fight.character_of(c)
        if ch is None:
            continue
        sheet, counters = fight.sheet_copy(ch), deepcopy(c["counters"] or {})
        fight.rules.fight_ends(c["id"], sheet, counters)
        dumped = sheet.model_dump(mode="json")
        if dumped != fight.sheet_of(ch).model_dump(mode="json"):
            fight.set_sheet(ch, {**ch.sheet, **dumped})
        if counters != (c["counters"] or {}):
            c["counters"] = counters
            fight.dirty_combatants.add(c["id"])


def _visible_combatant(conn: Connection, fight: Fight, principal: Principal, combatant_id: str) -> CombatantRow:
    """The combatant named by the path; 404 for one the caller may not see (never leak a hidden one)."""
    c = next((c for c in fight.combatants if c["id"] == combatant_id), None)
    if c is None or not scene(conn, fight).sees(viewer(principal), combatant_id):
        raise NotFound("no combatant with this id in this encounter")
    if not principal.is_gm:
        owner = store.owners(conn, [c["character_id"]]).get(c["character_id"])
        if owner != principal.player_id:
            raise Forbidden("only the GM or the combatant's owner may change it", code="owner_or_gm_only")
    return c


def _state(conn: Connection, fight: Fight, principal: Principal) -> dict[str, Any]:
    store.load_characters(fight, (c["character_id"] for c in fight.combatants), lock=False)
    return view.state(fight, scene(conn, fight), viewer(principal))


# --- reads -------------------------------------------------------------------------------------


def read_encounter(session: Session, principal: Principal, encounter_id: str) -> dict[str, Any]:
    conn = session.connection()
    fight = store.load_fight(conn, encounter_id, lock=False)
    check_member(principal, fight.campaign_id, "encounter")
    return _state(conn, fight, principal)


def list_encounters(
    session: Session, principal: Principal, campaign_id: str, *, limit: int, cursor: str | None, status: str | None
) -> dict[str, Any]:
    load_campaign(session, principal, campaign_id)
    rows = store.encounter_page(
        session.connection(), campaign_id, status=status, after=decode_cursor(cursor) if cursor else None, limit=limit
    )
    next_cursor = encode_cursor(rows[limit - 1].created_at, rows[limit - 1].id) if len(rows) > limit else None
    return {"items": [view.summary(r, viewer(principal)) for r in rows[:limit]], "next_cursor": next_cursor}
