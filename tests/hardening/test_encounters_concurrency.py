"""Encounters under concurrency (#13 "Must hold"): actions on one encounter sent at
once by several clients to a real uvicorn with 2 workers never interleave: each
one starts from the state the previous one left (the encounter row is locked
FOR UPDATE on PostgreSQL; SQLite writers are serialized), none is lost, and the
encounter version counts them exactly."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.factories import SHEETS, TEST_BODIES
from tests.hardening.conftest import bearer

THREADS = 8
PER_THREAD = 5


def test_concurrent_actions_on_one_encounter_never_interleave(live):
    server = live.start(workers=2)
    sheet = {**SHEETS["worlds-awakening"], "hp": 1000, "hp_max": 1000}
    cid, token, hero = live.campaign(server, "worlds-awakening", sheet)
    gm = bearer(token)
    with httpx.Client(base_url=server.url, timeout=30.0) as http:
        r = http.post(
            f"/v1/campaigns/{cid}/encounters",
            headers=gm,
            json={"name": "Crowd", "combatants": [{"character_id": hero}]},
        )
        assert r.status_code == 201, r.text
        eid, target = r.json()["id"], r.json()["combatants"][0]["id"]
        assert http.post(f"/v1/encounters/{eid}/start", json={}, headers=gm).status_code == 201

    def hammer(n: int) -> list[dict]:
        out = []
        with httpx.Client(base_url=server.url, timeout=60.0) as http:
            for i in range(PER_THREAD):
                body = (
                    {"type": "damage", "target_id": target, "amount": 1}
                    if (n + i) % 2 == 0
                    else {"type": "condition", "target_id": target, "add": {"name": f"mark-{n}-{i}"}}
                )
                r = http.post(f"/v1/encounters/{eid}/actions", json=body, headers=gm)
                assert r.status_code == 201, r.text
                out.append(r.json())
        return out

    with ThreadPoolExecutor(THREADS) as pool:
        actions = [a for batch in pool.map(hammer, range(THREADS)) for a in batch]

    total = THREADS * PER_THREAD
    damages = [a for a in actions if a["type"] == "damage"]
    assert sorted(a["encounter_version"] for a in actions) == list(range(3, 3 + total))
    # each action starts from what the one before left: hp and conditions chain without a gap
    hp = 1000
    conditions: list = []
    for a in sorted(actions, key=lambda a: a["encounter_version"]):
        change = a["changes"][0]
        if a["type"] == "damage":
            assert (change["before"], change["after"]) == (hp, hp - 1), a
            hp -= 1
        else:
            assert change["before"] == conditions, a
            conditions = change["after"]
    with httpx.Client(base_url=server.url, timeout=30.0) as http:
        state = http.get(f"/v1/encounters/{eid}", headers=gm).json()
        character = http.get(f"/v1/characters/{hero}", headers=gm).json()
    assert state["version"] == 2 + total
    assert state["combatants"][0]["resources"]["hp"]["value"] == 1000 - len(damages) == character["sheet"]["hp"]
    assert len(state["combatants"][0]["conditions"]) == total - len(damages)
    assert character["version"] == 1 + len(damages)


def test_actions_in_two_encounters_sharing_characters_and_tests_on_them_lose_nothing(live):
    """Issue 16 item 4: an action locks its actor's and target's characters in its first round trip (in id
    order, after the encounter) and writes in one batch with its COMMIT. Two encounters with the same two
    characters, each hit from the other side at once, while tests lock one of them: every request is
    answered 201 (no deadlock left unresolved), and no sheet change is lost. Each hit moves the other
    fight too (it shows the character hit): an action locks the fights showing its characters with its
    own, in id order, before those characters."""
    server = live.start(workers=2)
    sheet = {**SHEETS["worlds-awakening"], "hp": 1000, "hp_max": 1000}
    cid, token, ash = live.campaign(server, "worlds-awakening", sheet)
    gm = bearer(token)
    with httpx.Client(base_url=server.url, timeout=30.0) as http:
        r = http.post(
            f"/v1/campaigns/{cid}/characters", headers=gm, json={"name": "Birch", "kind": "npc", "sheet": sheet}
        )
        assert r.status_code == 201, r.text
        birch = r.json()["id"]
        fights = []
        for name in ("North", "South"):
            r = http.post(
                f"/v1/campaigns/{cid}/encounters",
                headers=gm,
                json={"name": name, "combatants": [{"character_id": ash}, {"character_id": birch}]},
            )
            assert r.status_code == 201, r.text
            eid = r.json()["id"]
            by_character = {c["character_id"]: c["id"] for c in r.json()["combatants"]}
            assert http.post(f"/v1/encounters/{eid}/start", json={}, headers=gm).status_code == 201
            fights.append((eid, by_character))
    (north, in_north), (south, in_south) = fights

    def hammer(n: int) -> list[tuple[str, int]]:
        out = []
        with httpx.Client(base_url=server.url, timeout=60.0) as http:
            for _ in range(PER_THREAD):
                if n % 3 == 2:  # a test on Ash (locks its character)
                    r = http.post(f"/v1/characters/{ash}/tests", json=TEST_BODIES["worlds-awakening"], headers=gm)
                    assert r.status_code == 201, r.text
                    continue
                eid, c, hit = (north, in_north, birch) if n % 3 == 0 else (south, in_south, ash)
                actor = c[ash] if hit == birch else c[birch]
                r = http.post(
                    f"/v1/encounters/{eid}/actions",
                    headers=gm,
                    json={"type": "damage", "actor_id": actor, "target_id": c[hit], "amount": 1},
                )
                assert r.status_code == 201, r.text
                out.append((hit, r.json()["encounter_version"]))
        return out

    with ThreadPoolExecutor(THREADS) as pool:
        hits = [h for batch in pool.map(hammer, range(THREADS)) for h in batch]

    on = {who: sum(1 for hit, _ in hits if hit == who) for who in (ash, birch)}
    with httpx.Client(base_url=server.url, timeout=30.0) as http:
        characters = {who: http.get(f"/v1/characters/{who}", headers=gm).json() for who in (ash, birch)}
        versions = {eid: http.get(f"/v1/encounters/{eid}", headers=gm).json()["version"] for eid in (north, south)}
    for who in (ash, birch):
        assert characters[who]["sheet"]["hp"] == 1000 - on[who]
        assert characters[who]["version"] == 1 + on[who]
    # each hit moves both fights: its own, and the other, which shows the same character (issue 25)
    total = on[ash] + on[birch]
    assert versions == {north: 2 + total, south: 2 + total}
    for who in (ash, birch):
        theirs = sorted(v for hit, v in hits if hit == who)
        assert len(set(theirs)) == len(theirs) and all(3 <= v < 3 + total for v in theirs), theirs
