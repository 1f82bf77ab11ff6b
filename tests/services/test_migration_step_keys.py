"""Issue 27 item 2's tail: migration 0014 fills `key` in the fight steps logged before keys existed,
from their `(rule, what)` by the mapping frozen in the migration (the call sites' literals that
tests/rulesets/test_step_keys.py reads, and the patterns of the texts the code formats)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from alembic import command
from app.core.migrations import alembic_config
from tests.api.test_events import _scratch_database
from tests.fixtures import ids
from tests.factories import wa_fighter
from tests.rulesets.test_step_keys import written_steps

MIGRATION = next((Path(__file__).resolve().parents[2] / "alembic" / "versions").glob("*_0014.py"))


def _migration():
    spec = importlib.util.spec_from_file_location("migration_0014", MIGRATION)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _unkeyed(node: Any) -> Any:
    """A body as logged before keys existed: no `key` in any step."""
    if isinstance(node, dict):
        return {k: _unkeyed(v) for k, v in node.items() if not (k == "key" and "rule" in node and "what" in node)}
    if isinstance(node, list):
        return [_unkeyed(v) for v in node]
    return node


def _ordered(node: Any) -> Any:
    """A body with each dict's key order made visible (the wire order: rule, key, what)."""
    if isinstance(node, dict):
        return [[k, _ordered(v)] for k, v in node.items()]
    if isinstance(node, list):
        return [_ordered(v) for v in node]
    return node


def _migrated(
    database_url, engine, tmp_path, bodies: list[tuple[str, dict]], *, events: list[tuple[str, Any]] = (), then=None
) -> list[dict]:
    """These (kind, body) logged and these (type, player_data) events recorded at revision 0013, then
    `upgrade head` (and `then(url)`): the bodies read back, then the events' player_data."""
    with _scratch_database(database_url, engine, tmp_path) as url:
        command.upgrade(alembic_config(url), "0013")
        scratch = create_engine(url)
        try:
            with scratch.begin() as conn:
                conn.execute(
                    text(
                        "INSERT INTO campaign (id, name, ruleset, options, version, created_at, updated_at,"
                        " client_metadata) VALUES ('c1', 'c', 'asgard', '{}', 1, CURRENT_TIMESTAMP,"
                        " CURRENT_TIMESTAMP, '{}')"
                    )
                )
                for n, (kind, body) in enumerate(bodies):
                    conn.execute(
                        text(
                            "INSERT INTO roll_log (id, campaign_id, kind, hidden, created_at, body)"
                            " VALUES (:id, 'c1', :kind, false, CURRENT_TIMESTAMP, :body)"
                        ),
                        {"id": f"e{n}", "kind": kind, "body": json.dumps(body)},
                    )
                for n, (type_, player_data) in enumerate(events, start=1):
                    conn.execute(
                        text(
                            "INSERT INTO event (campaign_id, number, type, hidden, created_at, data, player_data)"
                            " VALUES ('c1', :n, :type, false, CURRENT_TIMESTAMP, '{}', :player_data)"
                        ),
                        {
                            "n": n,
                            "type": type_,
                            "player_data": None if player_data is None else json.dumps(player_data),
                        },
                    )
            command.upgrade(alembic_config(url), "head")
            if then is not None:
                then(url)
            with scratch.connect() as conn:
                rows = conn.execute(text("SELECT body FROM roll_log ORDER BY seq")).scalars().all()
                rows += conn.execute(text("SELECT player_data FROM event ORDER BY seq")).scalars().all()
        finally:
            scratch.dispose()
    return [json.loads(r) if isinstance(r, str) else r for r in rows]


def _fought(t) -> str:
    """A WA fight played now (WA-C4 start with a tie, WA-C1 attack, the GM's damage, a condition,
    turns, a revert), on the table `t`: its encounter's id. Its combat entries hold steps of every
    kind the keys are tested on."""
    hero = t.character("Hero", wa_fighter(dex=2, weapons=[{"name": "hache", "stat": "FOR", "damage": "1d6"}]))
    foe = t.character("Foe", wa_fighter(dex=2))
    fight = t.encounter([{"character_id": hero}, {"character_id": foe}])
    n = ids(fight)
    t.start(fight["id"], dice=[15, 3])  # WA-C4: a tie at 12, rolled off
    t.act(fight["id"], {"type": "attack", "actor_id": n["Hero"], "target_id": n["Foe"], "dice": [15, 4]})
    t.act(fight["id"], {"type": "damage", "target_id": n["Foe"], "amount": 100, "resource": "hp"})
    t.act(fight["id"], {"type": "condition", "target_id": n["Hero"], "add": {"name": "stunned", "rounds": 1}})
    t.next_turn(fight["id"])
    t.next_turn(fight["id"])
    latest = t.client.get(f"/v1/encounters/{fight['id']}/actions", headers=t.gm).json()["items"][0]
    t.post(f"/v1/encounters/{fight['id']}/actions/{latest['id']}/revert", {})
    return fight["id"]


def test_issue27_item2_a_fight_logged_before_keys_gets_back_the_keys_the_code_writes(
    database_url, engine, tmp_path, table
):
    """A WA fight played now (WA-C4 start, WA-C1 attack, the GM's damage, a condition, turns, a
    revert), its steps stripped of their keys as before them: the migration gives each the key the
    code wrote, in the wire order."""
    _fought(table("worlds-awakening"))
    with engine.connect() as conn:
        logged = [
            json.loads(b) if isinstance(b, str) else b
            for b in conn.execute(text("SELECT body FROM roll_log WHERE kind = 'combat' ORDER BY seq")).scalars()
        ]
    keys = {s["key"] for b in logged for s in b["steps"]}
    assert {"tie_d20_roll_off_highest_first", "attack_test", "damage", "down_0_hp", "condition_added"} <= keys
    assert {"turn_ends", "turn_starts", "new_round"} & keys and len(logged) >= 6
    old = [_unkeyed(b) for b in logged]
    assert all("key" not in s for b in old for s in b["steps"])
    again = _migrated(database_url, engine, tmp_path, [("combat", b) for b in old])
    assert _ordered(again) == _ordered(logged)


def test_issue27_item2_old_steps_get_their_key_by_rule_and_text_unknown_ones_none(database_url, engine, tmp_path):
    """Formatted texts (a condition's, a posture's name) by their pattern, a reroll's nested steps,
    a key already there kept, an unknown text (or a known text under another rule) left without a
    key, a test entry untouched; downgrade to 0013 keeps the bodies (safe), upgrade again changes nothing."""
    combat = {
        "kind": "combat",
        "type": "attack",
        "steps": [
            {"rule": "AS-C5", "what": "mourant: counted in the fight", "rounds_left": 3},
            {"rule": "AS-C6", "what": "no longer mourant", "combatant_id": "x"},
            {"rule": "GC-P5", "what": "enters Illumination", "combatant_id": "x"},
            {"rule": "GC-P2", "what": "defensive posture"},
            {"rule": "GC-P7", "what": "no dodge nor parry in Illumination backlash"},
            {"rule": "GC-O3", "what": "extra action 2"},
            {"rule": "RB-F1", "what": "pe", "after": 3},
            {"rule": "AS-C1", "key": "its_own", "what": "attack test"},
            {"rule": "AS-C1", "what": "a text reworded since"},
            {"rule": "WA-C1", "what": "mal en point"},
        ],
        "replayed": {"steps": [{"rule": "AS-H2", "what": "heroism spent: the action resolved again with new dice"}]},
    }
    test_entry = {"kind": "test", "steps": [{"rule": "AS-C1", "what": "attack test"}]}
    seen: dict[str, list[dict]] = {}

    def down_and_up(url: str) -> None:
        scratch = create_engine(url)
        try:
            command.downgrade(alembic_config(url), "0013")
            with scratch.connect() as conn:
                seen["at 0013"] = [
                    json.loads(b) if isinstance(b, str) else b
                    for b in conn.execute(text("SELECT body FROM roll_log ORDER BY seq")).scalars()
                ]
            command.upgrade(alembic_config(url), "head")
        finally:
            scratch.dispose()

    player_event = {"id": "enc", "version": 2, "action": {"type": "attack", "steps": [dict(combat["steps"][0])]}}
    body, test, event, nothing, other = _migrated(
        database_url,
        engine,
        tmp_path,
        [("combat", combat), ("test", test_entry)],
        events=[("encounter.action", player_event), ("encounter.action", None), ("log.created", player_event)],
        then=down_and_up,
    )
    assert [(s["rule"], s.get("key")) for s in body["steps"]] == [
        ("AS-C5", "condition_counted_in_the_fight"),
        ("AS-C6", "condition_no_longer"),
        ("GC-P5", "enters_special_posture"),
        ("GC-P2", "posture_taken"),
        ("GC-P7", "no_defence_in_posture"),
        ("GC-O3", "extra_action"),
        ("RB-F1", "damage"),
        ("AS-C1", "its_own"),
        ("AS-C1", None),
        ("WA-C1", None),
    ]
    assert list(body["steps"][0]) == ["rule", "key", "what", "rounds_left"]  # the wire order
    assert body["replayed"]["steps"][0]["key"] == "heroism_spent_the_action_resolved_again_with_new_dice"
    assert test == test_entry
    assert _ordered(seen["at 0013"]) == _ordered([body, test])
    # the players' copy of an action in their events: keyed too; other events untouched
    assert event["action"]["steps"] == [body["steps"][0]]
    assert (nothing, other) == (None, player_event)


# keys the code declares that migration 0014's map does not give: steps first written after it (they
# were never logged without their key); a step added to the code is added here, never to the migration
NEW_SINCE_0014 = {"npc_copy_deleted"}  # issue 27: a join's revert deleting its NPC copies


def test_issue27_item2_the_frozen_map_agrees_with_every_key_the_code_declares():
    """Every literal `(key, what)` the call sites declare is what the migration's map gives for it
    under some rule it knows, or a formatted text one of its patterns gives (a key renamed in the
    code shows here); every key the code declares is in the map but those written after it; and
    every key the map gives is one the code declares."""
    m = _migration()
    declared = {(k, w) for *_, pairs in written_steps() for k, w in pairs if k and w and k not in NEW_SINCE_0014}
    mapped = {(k, w) for by_what in m.EXACT.values() for w, k in by_what.items()}
    unmapped = [(k, w) for k, w in sorted(declared - mapped) if not any(m.key_of(r, w) == k for r in m.EXACT)]
    # a formatted text (the scan fills its fields with "1" or "dying"): the key of one of its patterns
    assert [k for k, _ in unmapped if k not in {key for *_, key in m.PATTERNS}] == []
    code_keys = {k for *_, pairs in written_steps() for k, _ in pairs if k}
    map_keys = {k for by_what in m.EXACT.values() for k in by_what.values()} | {k for *_, k in m.PATTERNS}
    assert map_keys - code_keys == set()
    assert code_keys - map_keys == NEW_SINCE_0014
    assert len(map_keys) == 100  # the kinds of step the migration knows
