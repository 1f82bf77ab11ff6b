"""Issue 13, "Must hold": an encounter's events on a real uvicorn with 2 workers.

A player's stream, resumed with `Last-Event-ID` after each of several disconnects
(each reconnect may land on the other worker), loses no encounter event and gets
none twice; and it never carries what only the GM may see: a hidden combatant
(its NPC copies' `character.created`, its actions), a hidden action, or a sheet's
exact HP when the encounter shows players a status (`hp_visibility: status`)."""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import Any

import httpx

from tests.factories import GC, gc_fighter, stats
from tests.hardening.conftest import bearer
from tests.hardening.test_streams import SSE, all_events, events_url


def gc(agilite: int) -> dict[str, Any]:
    """A great-cosmos combatant (force 60, precision 55) whose agility orders the turns (GC-O1)."""
    return gc_fighter(stats=stats(GC, force=60, precision=55, agilite=agilite))


def post(http: httpx.Client, path: str, token: str, body: dict | None = None, status: int = 201) -> dict[str, Any]:
    r = http.post(path, json=body, headers=bearer(token))
    assert r.status_code == status, r.text
    return r.json()


def keys_and_strings(node: Any) -> tuple[set[str], set[str]]:
    """Every key and every string value in a JSON document."""
    keys, strings = set(), set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            keys.update(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            strings.add(item)
    return keys, strings


class Fight:
    """A Great Cosmos fight driven by the GM: Aiko (Alice's), Brute, two hidden copies of Shade."""

    def __init__(self, http: httpx.Client, cid: str, gm: str, alice_id: str):
        self.http, self.gm = http, gm
        aiko = post(
            http,
            f"/v1/campaigns/{cid}/characters",
            gm,
            {"name": "Aiko", "kind": "pc", "player_id": alice_id, "sheet": gc(70)},
        )["id"]
        brute = post(http, f"/v1/campaigns/{cid}/characters", gm, {"name": "Brute", "kind": "npc", "sheet": gc(40)})[
            "id"
        ]
        self.shade = post(
            http, f"/v1/campaigns/{cid}/characters", gm, {"name": "Shade", "kind": "npc", "sheet": gc(55)}
        )["id"]
        self.cid, self.aiko_char, self.brute_char = cid, aiko, brute
        self.hidden_ids: set[str] = set()  # what a player must never see: combatants, characters, actions

    def setup(self) -> None:
        state = post(
            self.http,
            f"/v1/campaigns/{self.cid}/encounters",
            self.gm,
            {
                "name": "Ambush",
                "options": {"hp_visibility": "status", "reveal_on_turn": False},
                "combatants": [
                    {"character_id": self.aiko_char},
                    {"character_id": self.brute_char},
                    {"character_id": self.shade, "count": 2, "hidden": True},
                ],
            },
        )
        self.eid = state["id"]
        by_name = {c["name"]: c for c in state["combatants"]}
        self.aiko, self.brute = by_name["Aiko"]["id"], by_name["Brute"]["id"]
        self.shades = [c["id"] for c in state["combatants"] if c["hidden"]]
        self.hidden_ids |= {c[k] for c in state["combatants"] if c["hidden"] for k in ("id", "character_id")}
        assert len(self.shades) == 2
        post(self.http, f"/v1/encounters/{self.eid}/start", self.gm, {"seed": 5})

    def act(self, body: dict[str, Any], *, secret: bool = False) -> None:
        action = post(self.http, f"/v1/encounters/{self.eid}/actions", self.gm, body)
        if secret:
            self.hidden_ids.add(action["id"])

    def some_writes(self, k: int) -> None:
        """Visible and GM-only writes: attacks both ways, a hidden combatant's attack, a hidden GM
        heal, a condition, a next-turn."""
        ranged = {"type": "attack", "kind": "ranged", "damage": "1d6", "seed": k}
        self.act({**ranged, "actor_id": self.aiko, "target_id": self.brute})
        self.act({**ranged, "actor_id": self.shades[k % 2], "target_id": self.aiko}, secret=True)
        self.act({"type": "heal", "target_id": self.brute, "amount": 1, "hidden": True}, secret=True)
        self.act({"type": "condition", "target_id": self.brute, "add": {"name": f"marked {k}", "rounds": 1}})
        post(self.http, f"/v1/encounters/{self.eid}/next-turn", self.gm, {"seed": 100 + k})


def test_a_players_resumed_stream_loses_no_encounter_event_and_never_carries_gm_only_data(live):
    server = live.start(workers=2)
    cid, gm, _ = live.campaign(server, "great-cosmos")
    with httpx.Client(base_url=server.url, timeout=30.0) as http:
        alice = post(http, f"/v1/campaigns/{cid}/players", gm, {"name": "Alice"})
        fight = Fight(http, cid, gm, alice["id"])
        present = max(e["id"] for e in all_events(http, cid, gm))
        received: list[dict[str, str]] = []
        last = str(present)
        with ExitStack() as stack:
            stream = SSE(stack, events_url(server, cid), alice["token"], last_id=last)
            fight.setup()
            for cycle in range(4):
                # read what is there, drop the connection, write more while away, come back
                expected = [e for e in all_events(http, cid, alice["token"]) if e["id"] > int(last)]
                for _ in expected:
                    received.append(stream.next_event())
                last = received[-1]["id"] if received else last
                stream.close()
                fight.some_writes(cycle)
                stream = SSE(stack, events_url(server, cid), alice["token"], last_id=last)
            expected = [e for e in all_events(http, cid, alice["token"]) if e["id"] > int(last)]
            received += [stream.next_event() for _ in expected]
        mine = [e for e in all_events(http, cid, alice["token"]) if e["id"] > present]
        everything = [e for e in all_events(http, cid, gm) if e["id"] > present]
        shown = post(http, f"/v1/encounters/{fight.eid}/end", gm, status=200)

    # nothing lost, nothing twice, in order: exactly the player's events since it first connected
    assert [int(f["id"]) for f in received] == [e["id"] for e in mine]
    assert [(f["event"], json.loads(f["data"])) for f in received] == [(e["type"], e["data"]) for e in mine]
    actions = [e for e in mine if e["type"] == "encounter.action"]
    assert len(actions) == 4 * 3  # per cycle: Aiko's attack, the condition, the next-turn (start: encounter.updated)
    # the GM's stream has what the player's does not: the hidden copies, their actions, the hidden heal
    # (and its sheet change), the roll-log entries the players' log leaves out
    gm_only = [e for e in everything if e["id"] not in {m["id"] for m in mine}]
    assert sorted({e["type"] for e in gm_only}) == [
        "character.created",
        "character.updated",
        "encounter.action",
        "log.created",
    ]
    assert len([e for e in gm_only if e["type"] == "encounter.action"]) == 4 * 2
    # never a hidden combatant, character or action, never a sheet or a resource in the player's stream
    # but its own character's sheet (issue 25 item 2: `character.updated` as the owner reads it)
    for data in [json.loads(f["data"]) for f in received] + [e["data"] for e in mine]:
        keys, strings = keys_and_strings(data)
        assert not strings & fight.hidden_ids, data
        if data.get("id") != fight.aiko_char:
            assert not keys & {"sheet", "hp", "resources", "vitality"}, data
    assert shown["status"] == "ended"
