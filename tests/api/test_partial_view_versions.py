"""API.md round 4, "Input and views": a viewer who does not see the whole sheet (a `limited`
character) gets an ETag and a `version` computed from what it sees. An edit its view does not
show (hp 90 → 89, still `wounded`) keeps its ETag (`If-None-Match` → 304), its `version` and its
`updated_at`, and sends it no `character.updated`: the GM's hidden edits cannot be counted. The
GM and the owner keep the character's own version; the events a viewer gets agree with its GET."""

from __future__ import annotations

from tests.api.support import read_events
from tests.factories import GC_MINIMAL


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
