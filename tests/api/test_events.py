"""GET /v1/campaigns/{cid}/events: every change, as Server-Sent Events; hidden rolls only for the GM."""
from __future__ import annotations

import json

GC_SHEET = {"race": "humain", "hp_max": 100, "mp_max": 50,
            "stats": {"force": 68, "esprit": 50, "charisme": 40, "agilite": 55, "precision": 45, "chance": 60}}


def read_events(client, campaign_id, headers, **params):
    """The campaign's events from the start (after=0), without following."""
    r = client.get(f"/v1/campaigns/{campaign_id}/events", params={"follow": "false", "after": "0", **params},
                   headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/event-stream")
    events = []
    for block in r.text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if "event" in fields:
            events.append({"id": int(fields["id"]), "type": fields["event"], "data": json.loads(fields["data"])})
    return events


def test_every_change_is_an_event_in_order(client, campaign_factory, character_factory, player_factory):
    c = campaign_factory("great-cosmos")
    player = player_factory(c)
    ch = character_factory(c, GC_SHEET, player=player)
    client.patch(f"/v1/characters/{ch['id']}", json={"name": "Aiko"}, headers=c.gm)
    test = client.post(f"/v1/characters/{ch['id']}/tests", json={"stat": "force", "dice": [42]}, headers=c.gm).json()
    client.delete(f"/v1/characters/{ch['id']}", headers=c.gm)

    events = read_events(client, c.id, c.gm)
    assert [e["type"] for e in events] == [
        "player.created", "character.created", "character.updated", "log.created", "character.deleted"]
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)
    assert events[3]["data"] == {"entry": test, "characters_changed": [{"id": ch["id"], "version": 3}]}


def test_resume_after_last_event_id(client, campaign_factory, player_factory):
    c = campaign_factory("great-cosmos")
    player_factory(c, "A")
    first = read_events(client, c.id, c.gm)
    player_factory(c, "B")
    r = client.get(f"/v1/campaigns/{c.id}/events", params={"follow": "false"},
                   headers={**c.gm, "Last-Event-ID": str(first[-1]["id"])})
    assert "event: player.created" in r.text and '"name":"B"' in r.text and '"name":"A"' not in r.text


def test_hidden_rolls_never_reach_players_through_events(client, campaign_factory, player_factory):
    c = campaign_factory("great-cosmos")
    player = player_factory(c)
    r = client.post(f"/v1/campaigns/{c.id}/rolls", json={"expression": "1d6", "dice": [4], "hidden": True}, headers=c.gm)
    assert r.status_code == 201
    client.post(f"/v1/campaigns/{c.id}/rolls", json={"expression": "1d6", "dice": [2]}, headers=c.gm)
    gm_view = [e for e in read_events(client, c.id, c.gm) if e["type"] == "log.created"]
    player_view = [e for e in read_events(client, c.id, player.headers) if e["type"] == "log.created"]
    assert [e["data"]["entry"]["total"] for e in gm_view] == [4, 2]
    assert [e["data"]["entry"]["total"] for e in player_view] == [2]


def test_events_need_membership(client, campaign_factory):
    a, b = campaign_factory("great-cosmos"), campaign_factory("asgard")
    assert client.get(f"/v1/campaigns/{a.id}/events", headers=b.gm).status_code == 404
    assert client.get(f"/v1/campaigns/{a.id}/events").status_code == 401


def test_a_connect_without_cursor_starts_at_the_present(client, campaign_factory, player_factory):
    c = campaign_factory("great-cosmos")
    player_factory(c, "A")
    last = read_events(client, c.id, c.gm)[-1]["id"]
    r = client.get(f"/v1/campaigns/{c.id}/events", params={"follow": "false"}, headers=c.gm)
    assert r.status_code == 200
    assert "event:" not in r.text and f"id: {last}\n" in r.text  # no history; the position, to resume from


def test_last_event_id_wins_over_after(client, campaign_factory, player_factory):
    """A browser reconnects to the same URL (its ?after=) with the Last-Event-ID it reached."""
    c = campaign_factory("great-cosmos")
    player_factory(c, "A")
    first = read_events(client, c.id, c.gm)[-1]["id"]
    player_factory(c, "B")
    r = client.get(f"/v1/campaigns/{c.id}/events", params={"follow": "false", "after": "0"},
                   headers={**c.gm, "Last-Event-ID": str(first)})
    assert '"name":"B"' in r.text and '"name":"A"' not in r.text


def test_a_log_event_stores_a_reference_and_streams_the_body(client, campaign_factory, db_session):
    from sqlmodel import select

    from app.models.tables import Event

    c = campaign_factory("great-cosmos")
    roll = client.post(f"/v1/campaigns/{c.id}/rolls", json={"expression": "3d6", "dice": [1, 2, 3]}, headers=c.gm).json()
    stored = db_session.exec(select(Event.data).where(Event.campaign_id == c.id, Event.type == "log.created")).one()
    assert stored == {"entry_id": roll["id"], "characters_changed": []}
    [event] = [e for e in read_events(client, c.id, c.gm) if e["type"] == "log.created"]
    assert event["data"] == {"entry": roll, "characters_changed": []}
