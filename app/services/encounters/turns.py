"""Initiative and turns: `start` (each ruleset's initiative rule) and `next-turn`
(the next slot, down combatants skipped, conditions ticked, the round wrapped and
re-ordered where the rules say so, a hidden combatant revealed on its first turn)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection
from sqlmodel import Session

from app.kit.errors import Conflict, Forbidden
from app.models.encounters import CombatantAddBase, NextTurnRequestBase, StartRequestBase
from app.models.fight_rows import CombatantRow, FlowStep, Step
from app.models.validation import InvalidBody
from app.rulesets.contract.combat import Entrant
from app.rulesets.encounter_bodies import for_ruleset
from app.services.auth import authorize, check_gm
from app.services.encounters import store, view
from app.services.encounters.changes import Changes, clone
from app.services.encounters.dice import CombatDice
from app.services.encounters.record import record_action
from app.services.encounters.store import Fight
from app.services.encounters.unit import (
    EncounterWork,
    check_provenance,
    check_status,
    check_version,
    scene,
    viewer,
    write,
)
from app.services.idempotency import Idempotency
from app.services.records import Principal

END, START = "end_of_turn", "start_of_turn"


def start(
    session: Session,
    principal: Principal,
    encounter_id: str,
    req: StartRequestBase,
    idem: Idempotency | None,
    if_match: str | None,
) -> dict[str, Any]:
    """GM: roll initiative (the ruleset's rule), round 1, the first slot able to act."""

    def work(uow: EncounterWork, fight: Fight) -> dict[str, Any]:
        authorize(principal)
        conn = uow.conn
        check_version(fight, if_match, principal)
        check_status(fight, "setup", "start")
        if not fight.combatants:
            raise Conflict("an encounter starts with at least one combatant", code="no_combatants")
        check_provenance(principal, fight.campaign_options, dice=req.dice, hidden=req.hidden)
        own = for_ruleset(fight.rules.StartRequest, req, fight.ruleset)
        take_11 = own.npcs_taking_11()
        _check_take_11(fight, take_11)
        chosen = _check_chosen(fight, principal, own.tie_orders())
        store.load_characters(fight, (c["character_id"] for c in fight.combatants), lock=False)
        dice = CombatDice.for_caller(principal, req, fight, uow.epochs)
        with dice.explained():
            initiative = fight.rules.roll_initiative(
                dice, _entrants(fight, set(take_11), chosen), fight.options, fight.ruleset_options
            )
        changes, steps = Changes(fight), list(initiative.steps)
        changes.encounter("status", "active")
        changes.encounter("round", 1)
        for c in fight.combatants:
            changes.combatant(c, "initiative", initiative.initiatives.get(c["id"]))
        changes.encounter("order", initiative.order)
        enter_next(conn, fight, changes, dice, steps, from_slot=0)
        dice.finish()
        _, shown = record_action(
            uow,
            fight,
            principal,
            type_="start",
            changes=changes,
            steps=steps,
            dice=dice,
            hidden=req.hidden,
            event="encounter.updated",  # API.md: start is a state change (and its first action)
        )
        return {**view.state(fight, scene(conn, fight), viewer(principal)), "action": shown}

    return write(session, principal, encounter_id, work, idem=idem)


def next_turn(
    session: Session,
    principal: Principal,
    encounter_id: str,
    req: NextTurnRequestBase,
    idem: Idempotency | None,
    if_match: str | None,
) -> dict[str, Any]:
    """GM, or the owner of a combatant whose turn it is: end the turn."""

    def work(uow: EncounterWork, fight: Fight) -> dict[str, Any]:
        conn = uow.conn
        check_version(fight, if_match, principal)
        check_status(fight, "active", "next-turn")
        current = fight.encounter["current_turn"] or {}
        _check_turn_owner(conn, fight, principal, current.get("combatant_ids", []))
        check_provenance(principal, fight.campaign_options, dice=req.dice, hidden=req.hidden)
        chosen = _check_chosen(
            fight, principal, for_ruleset(fight.rules.NextTurnRequest, req, fight.ruleset).tie_orders()
        )
        dice = CombatDice.for_caller(principal, req, fight, uow.epochs)
        changes = Changes(fight)
        steps: list[Step] = []
        for c in _main_actors(fight, current):
            tick(changes, steps, c, END)
        if fight.rules.lapses_at_turn_change:  # what the rules keep only until the turn changes (GC-P2)
            for c in fight.combatants:
                kept = fight.rules.turn_changes(c["counters"] or {})
                if kept is not None:
                    changes.combatant(c, "counters", kept)
        steps.append(
            FlowStep(
                rule="turn",
                key="turn_ends",
                what="turn ends",
                slot=current.get("slot"),
                combatant_id=current.get("combatant_id"),
            )
        )
        round_ = fight.encounter["round"]
        enter_next(conn, fight, changes, dice, steps, from_slot=(current.get("slot", -1) + 1), chosen=chosen)
        if chosen and fight.encounter["round"] == round_:
            raise InvalidBody(
                f"chosen_orders order the ties of a new round; this turn ends in round {round_} "
                f"({fight.rules.chosen_order_rule})",
                field="chosen_orders",
                code="rule_violation",
            )
        dice.finish()
        _, shown = record_action(
            uow, fight, principal, type_="next_turn", changes=changes, steps=steps, dice=dice, hidden=req.hidden
        )
        return shown

    return write(session, principal, encounter_id, work, idem=idem)


def join(
    uow: EncounterWork, fight: Fight, principal: Principal, added: list[CombatantRow], req: CombatantAddBase
) -> dict[str, Any]:
    """Combatants added to a running fight. Their initiative is rolled by the
    ruleset's rule as at `start` (the request's `seed`/`dice`, or the GM's `initiative`), the
    ruleset says which of their entries count now (`EncounterRules.joining`), and each takes its
    place by initiative, after those already there with the same value (they rolled first); the
    current combatant stays current. An undoable action `join` (its revert removes them, and deletes
    the NPC copies `count` made: `actions._delete_copies`)."""
    store.load_characters(fight, (c["character_id"] for c in added), lock=False)
    new_ids = [c["id"] for c in added]
    entrants = _entrants(fight, set(), among=added)
    dice = CombatDice.for_caller(principal, req, fight, uow.epochs)
    with dice.explained():
        rolled = fight.rules.roll_initiative(dice, entrants, fight.options, fight.ruleset_options)
    round_ = fight.encounter["round"]
    order, moved = _merged(fight.encounter["turn_order"], fight.rules.joining(rolled.order, round_))
    changes, steps = Changes(fight), list(rolled.steps)
    copied = req.count is not None
    for c in added:
        c["initiative"] = rolled.initiatives.get(c["id"])  # a new row: written with it
        changes.items.append(
            # `copy`: an NPC copy this join made (`count`), which its revert deletes (internal, not shown)
            {"combatant_id": c["id"], "field": "joined", "before": False, "after": True, "on": "roster", "copy": copied}
        )
    changes.encounter("order", order)
    current = fight.encounter["current_turn"]
    if current is not None:
        changes.encounter("current", {**current, "slot": moved[current["slot"]]})
    for e in order:
        if e["combatant_id"] in new_ids:
            steps.append(
                FlowStep(
                    rule="turn",
                    key="joins_the_fight",
                    what="joins the fight",
                    combatant_id=e["combatant_id"],
                    slot=e["slot"],
                )
            )
    dice.finish()
    store.write_roster(uow.conn, fight)
    _, shown = record_action(
        uow,
        fight,
        principal,
        type_="join",
        changes=changes,
        steps=steps,
        dice=dice,
        actor_id=new_ids[0],
        hidden=all(c["hidden"] for c in added),
    )
    return shown


def _merged(order: list[dict[str, Any]], joining: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[int, int]]:
    """The order with the `joining` entries placed by initiative (before the first slot of a lower
    one; none: last), slots renumbered; and each old slot's new number."""
    slots = _by_slot(order)
    old = [group[0]["slot"] for group in slots]
    for group in _by_slot(joining):
        value = group[0]["initiative"]
        at = next(
            (
                i
                for i, s in enumerate(slots)
                if value is not None and (s[0]["initiative"] is None or s[0]["initiative"] < value)
            ),
            len(slots),
        )
        slots.insert(at, group)
        old.insert(at, -1)
    merged = [{**e, "slot": n} for n, group in enumerate(slots) for e in group]
    return merged, {was: n for n, was in enumerate(old) if was >= 0}


def _by_slot(entries: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The entries of an order grouped by slot, in slot order."""
    groups: list[list[dict[str, Any]]] = []
    for e in sorted(entries, key=lambda e: e["slot"]):
        if groups and groups[-1][0]["slot"] == e["slot"]:
            groups[-1].append(e)
        else:
            groups.append([e])
    return groups


# --- the turn pointer ---------------------------------------------------------------------------


def enter_next(
    conn: Connection,
    fight: Fight,
    changes: Changes,
    dice: CombatDice,
    steps: list[Step],
    *,
    from_slot: int,
    chosen: dict[str, tuple[int, int]] | None = None,
) -> None:
    """Move `current` to the first slot from `from_slot` with a combatant able to act,
    wrapping into the next round (re-ordered where the ruleset says so) past the last
    slot; then reveal and tick the start-of-turn conditions of who acts. A round where
    nobody can act leaves `current` null."""
    slot, wrapped = from_slot, False
    while True:
        order = fight.encounter["turn_order"]
        for s in sorted({e["slot"] for e in order if e["slot"] >= slot}):
            actors = _able(conn, fight, order, s, changes, steps)
            if actors:
                _enter(fight, changes, steps, s, actors)
                return
        if wrapped:
            changes.encounter("current", None)
            steps.append({"rule": "turn", "key": "nobody_can_act", "what": "nobody can act"})
            return
        wrapped, slot = True, 0
        _new_round(conn, fight, changes, dice, steps, chosen)


def _new_round(
    conn: Connection,
    fight: Fight,
    changes: Changes,
    dice: CombatDice,
    steps: list[Step],
    chosen: dict[str, tuple[int, int]] | None = None,
) -> None:
    _round_ends(fight, changes, steps)
    round_ = fight.encounter["round"] + 1
    changes.encounter("round", round_)
    steps.append(FlowStep(rule="turn", key="new_round", what="new round", round=round_))
    entrants = None
    if fight.rules.reorders_each_round:
        store.load_characters(fight, (c["character_id"] for c in fight.combatants), lock=False)
        entrants = _entrants(fight, set(), chosen)
    with dice.explained():
        again = fight.rules.next_round(
            dice, fight.encounter["turn_order"], entrants, round_, fight.options, fight.ruleset_options
        )
    if again is not None:
        changes.encounter("order", again.order)
        steps.extend(again.steps)


def _round_ends(fight: Fight, changes: Changes, steps: list[Step]) -> None:
    """What the ruleset counts at the end of each round, for every combatant, down or not (AS-C5):
    only the sheets of those bearing such a condition are read (and locked: they are written)."""
    bearers = [
        c
        for c in fight.combatants
        if fight.rules.round_end_reads_sheets or fight.rules.ticks_at_round_end(c["conditions"])
    ]
    if not bearers:
        return
    store.load_characters(fight, (c["character_id"] for c in bearers), lock=True)
    for c in bearers:
        ch = fight.character_of(c)
        if ch is None:
            continue
        sheet = fight.sheet_copy(ch)
        conditions, more = fight.rules.round_ends(c["id"], sheet, clone(c["conditions"]), fight.encounter["round"])
        changes.typed_sheet(c, sheet)
        changes.combatant(c, "conditions", conditions)
        steps.extend(more)


def _able(
    conn: Connection,
    fight: Fight,
    order: list[dict[str, Any]],
    slot: int,
    changes: Changes,
    steps: list[Step],
) -> list[CombatantRow]:
    """The combatants of this slot who act now (not down; RB-F4 from their first round). The turn
    of one skipped still passes: its conditions count at its start and its end, as if it had acted
    (a condition lasts rounds of the fight, whether its bearer can act or not)."""
    entries = [e for e in order if e["slot"] == slot]
    present = fight.some(e["combatant_id"] for e in entries)
    by_id = {c["id"]: c for c in present}
    store.load_characters(fight, (c["character_id"] for c in present), lock=False)
    actors: list[CombatantRow] = []
    round_ = fight.encounter["round"]
    for e in entries:
        c = by_id.get(e["combatant_id"])
        if c is None:
            continue
        ch = fight.character_of(c)
        if not fight.rules.can_act_in(e, round_):
            steps.append(
                {
                    "rule": fight.rules.late_rule,
                    "key": "does_not_act_this_round",
                    "what": "does not act this round",
                    "combatant_id": c["id"],
                }
            )
        elif ch is None or fight.rules.is_down(fight.sheet_of(ch)):
            steps.append({"rule": "turn", "key": "down_skipped", "what": "down: skipped", "combatant_id": c["id"]})
        elif (
            why := fight.rules.stopped(c["counters"] or {}, fight.sheet_of(ch), fight.encounter["round"])
        ) is not None:
            steps.append({**why, "combatant_id": c["id"]})
        else:
            actors.append(c)
            continue
        if not e["extra_action"]:
            tick(changes, steps, c, START)
            tick(changes, steps, c, END)
    return actors


def _enter(fight: Fight, changes: Changes, steps: list[Step], slot: int, actors: list[CombatantRow]) -> None:
    ids = [c["id"] for c in actors]
    changes.encounter("current", {"slot": slot, "combatant_id": ids[0], "combatant_ids": ids})
    for c in actors:
        steps.append(FlowStep(rule="turn", key="turn_starts", what="turn starts", slot=slot, combatant_id=c["id"]))
        if c["hidden"] and fight.options.reveal_on_turn:
            changes.combatant(c, "hidden", False)
            steps.append(
                {
                    "rule": "reveal_on_turn",
                    "key": "revealed_on_its_first_turn",
                    "what": "revealed on its first turn",
                    "combatant_id": c["id"],
                }
            )
    for c in _main_actors(fight, fight.encounter["current_turn"]):
        tick(changes, steps, c, START)


def _main_actors(fight: Fight, current: dict[str, Any] | None) -> list[CombatantRow]:
    """The combatants of the current slot on their main action (an extra action, GC-O3 or
    RB-F4, is not a new turn: conditions count once a round)."""
    if not current:
        return []
    slot = current["slot"]
    main = {e["combatant_id"] for e in fight.encounter["turn_order"] if e["slot"] == slot and not e["extra_action"]}
    return fight.some(main & set(current.get("combatant_ids", [])))


def tick(changes: Changes, steps: list[Step], c: CombatantRow, phase: str) -> None:
    """A condition counted off at this phase of its bearer's turn loses a round; at 0 it ends."""
    kept, touched = [], False
    for cond in c["conditions"]:
        if cond["ends"] != phase or cond["rounds_left"] is None:
            kept.append(cond)
            continue
        touched = True
        left = cond["rounds_left"] - 1
        steps.append(
            FlowStep(
                rule="conditions",
                key="condition_ends" if left <= 0 else "condition_ticks",
                what="condition ends" if left <= 0 else "condition ticks",
                combatant_id=c["id"],
                name=cond["name"],
                rounds_left=max(left, 0),
            )
        )
        if left > 0:
            kept.append({**cond, "rounds_left": left})
    if touched:
        changes.combatant(c, "conditions", kept)
    passed = changes.fight.rules.turn_passes(
        c["id"], clone(c["counters"] or {}), phase, changes.fight.encounter["round"]
    )
    if passed is not None:  # the ruleset's per-turn state (GC-P6, GC-P7)
        changes.combatant(c, "counters", passed.counters)
        if passed.sheet:
            store.load_characters(changes.fight, [c["character_id"]], lock=True)
            if changes.fight.character_of(c) is not None:
                for key, value in passed.sheet.items():
                    changes.sheet(c, key, value)
        steps.extend(passed.steps)


# --- helpers -------------------------------------------------------------------------------


def _entrants(
    fight: Fight,
    take_11: set[str],
    chosen: dict[str, tuple[int, int]] | None = None,
    among: list[CombatantRow] | None = None,
) -> list[Entrant]:
    out = []
    for c in fight.combatants if among is None else among:
        ch = fight.character_of(c)
        if ch is None:
            raise Conflict(
                f"the character of combatant {c['id']} was deleted: remove the combatant first",
                field="combatants",
                extra={"combatant_id": c["id"]},
                code="character_deleted",
            )
        out.append(
            Entrant(
                combatant_id=c["id"],
                kind=ch.kind,
                sheet=fight.sheet_of(ch),
                override=c["initiative_override"],
                counters=c["counters"] or {},
                actions=c["actions"],
                take_11=c["id"] in take_11,
                side=c["side"],
                chosen=(chosen or {}).get(c["id"]),
            )
        )
    return out


def _check_take_11(fight: Fight, take_11: list[str]) -> None:
    """AS-T8: each named a combatant (the ruleset's model takes `take_11` only where a rule has them)."""
    for cid in take_11:
        fight.combatant(cid, "take_11")


def _check_chosen(fight: Fight, principal: Principal, orders: list[list[str]]) -> dict[str, tuple[int, int]]:
    """GC-O2: the order the players of one side chose for their tie, as the GM enters it: combatant id ->
    (which order, its place in it); each id a combatant (422), once; the ruleset judges the ties."""
    if not orders:
        return {}
    check_gm(principal, "enter the order players chose for a tie")
    out: dict[str, tuple[int, int]] = {}
    for i, order in enumerate(orders):
        for j, cid in enumerate(order):
            fight.combatant(cid, f"chosen_orders.{i}.{j}")
            if cid in out:
                raise InvalidBody(
                    f"combatant {cid!r} is named twice", field=f"chosen_orders.{i}.{j}", code="named_twice"
                )
            out[cid] = (i, j)
    return out


def _check_turn_owner(conn: Connection, fight: Fight, principal: Principal, current_ids: list[str]) -> None:
    """A player ends only its own combatant's turn: 403 if it owns none here, 409 if not its turn."""
    if principal.is_gm:
        return
    owners = store.owners(conn, (c["character_id"] for c in fight.combatants))
    mine = {c["id"] for c in fight.combatants if owners.get(c["character_id"]) == principal.player_id}
    if not mine:
        raise Forbidden(
            "only the GM or the owner of the combatant whose turn it is may end the turn", code="owner_or_gm_only"
        )
    if not mine & set(current_ids):
        raise Conflict(
            "it is not your combatant's turn",
            extra={
                "current": view.current_view(fight.encounter["current_turn"], scene(conn, fight), viewer(principal))
            },
            code="not_your_turn",
        )
