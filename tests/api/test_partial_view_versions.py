"""API.md round 4, "Input and views": a viewer who does not see the whole sheet (a `limited`
character) gets an ETag and a `version` computed from what it sees. An edit its view does not
show (hp 90 → 89, still `wounded`) keeps its ETag (`If-None-Match` → 304), its `version` and its
`updated_at`, and sends it no `character.updated`: the GM's hidden edits cannot be counted. The
GM and the owner keep the character's own version; the events a viewer gets agree with its GET."""

from __future__ import annotations

from tests.api.support import read_events
from tests.factories import GC_MINIMAL, gc_fighter
from tests.fixtures import ids, table  # noqa: F401


def _patch(client, c, character_id: str, body: dict) -> dict:
    r = client.patch(f"/v1/characters/{character_id}", json=body, headers=c.gm)
    assert r.status_code == 200, r.text
    return r.json()


def _get(client, character_id: str, headers, etag: str | None = None):
    return client.get(
        f"/v1/characters/{character_id}", headers={**headers, **({"If-None-Match": etag} if etag else {})}
    )


def _updates(client, c, headers, character_id: str) -> list[dict]:
    return [
        e["data"]
        for e in read_events(client, c.id, headers)
        if e["type"] == "character.updated" and e["data"]["id"] == character_id
    ]


def test_a_limited_view_keeps_its_etag_and_version_through_hidden_edits(
    client, campaign_factory, player_factory, character_factory
):
    c = campaign_factory("great-cosmos")
    alice, bob = player_factory(c, "Alice"), player_factory(c, "Bob")
    orc = character_factory(c, {**GC_MINIMAL, "hp": 100}, kind="npc", name="Orc", player=alice)["id"]
    _patch(client, c, orc, {"player_access": "limited", "sheet": {"hp": 90}})  # wounded

    seen = _get(client, orc, bob.headers)
    assert seen.status_code == 200 and seen.json()["pools"]["hp"] == {"status": "wounded"}
    tag, version = seen.headers["ETag"], seen.json()["version"]
    assert tag == f'"{version}"' and seen.json()["updated_at"] == seen.json()["created_at"]

    gm_before = _get(client, orc, c.gm).json()["version"]
    assert _patch(client, c, orc, {"sheet": {"hp": 89}})["version"] == gm_before + 1  # still wounded
    _patch(client, c, orc, {"sheet": {"notes": "hidden note"}})

    again = _get(client, orc, bob.headers, tag)
    assert again.status_code == 304 and again.headers["ETag"] == tag
    assert _get(client, orc, bob.headers).json() == seen.json()
    # the owner and the GM see every edit, with the character's own version
    owner = _get(client, orc, alice.headers)
    assert owner.json()["version"] == gm_before + 2 and owner.headers["ETag"] == f'"{gm_before + 2}"'
    assert _get(client, orc, alice.headers, f'"{gm_before + 1}"').status_code == 200

    _patch(client, c, orc, {"sheet": {"hp": 40}})  # bloodied: Bob's view changes
    now = _get(client, orc, bob.headers, tag)
    assert now.status_code == 200 and now.json()["pools"]["hp"] == {"status": "bloodied"}
    assert now.headers["ETag"] != tag and now.headers["ETag"] == f'"{now.json()["version"]}"'

    # Bob's events: one per change of his view, each with the version his GET shows
    bobs = _updates(client, c, bob.headers, orc)
    assert [(e["pools"]["hp"]["status"], e["version"]) for e in bobs] == [
        ("wounded", version),
        ("bloodied", now.json()["version"]),
    ]
    # the GM and the owner get every edit
    assert len(_updates(client, c, c.gm, orc)) == len(_updates(client, c, alice.headers, orc)) == 4


def test_an_actions_log_event_names_each_character_at_the_version_its_reader_reads(table):
    """In a fight (hp `exact`), the GM damages two `limited` characters, an NPC and Alice's PC: the
    `log.created` each player receives names each at the version that player's GET shows (Bob: the
    view's; Alice, the owner: her character's own), as its `character.updated` does."""
    t = table("great-cosmos")
    hero = t.character("Hero", gc_fighter(), kind="pc", player=t.bob)
    orc = t.character("Orc", gc_fighter(40))
    aiko = t.character("Aiko", gc_fighter(60), kind="pc", player=t.alice)
    for cid in (orc, aiko):
        _patch(t.client, t.c, cid, {"player_access": "limited"})
    s = t.encounter([{"character_id": cid} for cid in (hero, orc, aiko)])
    t.start(s["id"], dice=[])
    n = ids(s)
    t.act(s["id"], {"type": "damage", "target_id": n["Orc"], "amount": 5})
    t.act(s["id"], {"type": "damage", "target_id": n["Aiko"], "amount": 5})

    for player, owned in ((t.bob, set()), (t.alice, {aiko})):
        read = {cid: _get(t.client, cid, player.headers).json()["version"] for cid in (orc, aiko)}
        events = read_events(t.client, t.c.id, player.headers)
        logged = [
            (ref["id"], ref["version"])
            for e in events
            if e["type"] == "log.created"
            for ref in e["data"]["characters_changed"]
        ]
        assert logged == [(orc, read[orc]), (aiko, read[aiko])]
        for cid in (orc, aiko):  # the owner reads her own at its version; the others, the view's
            gm = _get(t.client, cid, t.gm).json()["version"]
            assert (read[cid] == gm) == (cid in owned)
        updated = [e["data"]["version"] for e in events if e["type"] == "character.updated" and e["data"]["id"] == orc]
        assert updated[-1] == read[orc]
