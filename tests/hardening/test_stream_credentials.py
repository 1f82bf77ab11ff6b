"""Issue 21 item 1: a stream belongs to a live credential.

Rotating a player's token, removing the player, rotating the GM token or deleting the
campaign ends the streams opened with that credential — bearer and ticket ones, on
both workers — with `event: error` `{"code": "token_revoked"}` within one poll
interval (asserted with a generous bound: liveness, not speed); the other
credentials' streams go on, and a resume with the old token is a 401."""

from __future__ import annotations

import json
from contextlib import ExitStack

import httpx

from tests.hardening.conftest import bearer
from tests.hardening.test_streams import SSE, add_player, events_url

STREAMS_PER_TOKEN = 4  # on 2 workers: a credential's streams land on both (they are spread by the kernel)
BOUND_SECONDS = 8.0  # one poll interval is 0.5 s


def _open(stack: ExitStack, server, cid: str, token: str, *, ticket: bool = False) -> SSE:
    if ticket:
        with httpx.Client(base_url=server.url, timeout=10.0) as http:
            r = http.post(f"/v1/campaigns/{cid}/events/tickets", headers=bearer(token))
            assert r.status_code == 201, r.text
        stream = _TicketSSE(stack, events_url(server, cid), r.json()["ticket"])
    else:
        stream = SSE(stack, events_url(server, cid), token)
    assert stream.response.status_code == 200
    assert stream.next_frame() == {"retry": "2000"}
    assert "id" in stream.next_frame()  # the present
    return stream


class _TicketSSE(SSE):
    """A stream opened as a browser's EventSource does: a ticket, no Authorization."""

    def __init__(self, stack: ExitStack, url: str, ticket: str):
        client = stack.enter_context(httpx.Client(timeout=httpx.Timeout(10.0, read=BOUND_SECONDS)))
        self.response = stack.enter_context(client.stream("GET", url, params={"ticket": ticket}))
        self.lines = self.response.iter_lines()


def _ends_revoked(stream: SSE) -> None:
    frame = stream.next_event()
    assert frame["event"] == "error", frame
    data = json.loads(frame["data"])
    assert data["code"] == "token_revoked" and data["status"] == 401, data


def _still_live(server, cid: str, gm: str, streams: list[SSE]) -> None:
    """A new event reaches each of `streams` (they were not ended with the others)."""
    with httpx.Client(base_url=server.url, timeout=10.0) as http:
        r = http.post(f"/v1/campaigns/{cid}/rolls", json={"expression": "1d6"}, headers=bearer(gm))
        assert r.status_code == 201, r.text
    for stream in streams:
        assert stream.next_event()["event"] == "log.created"


def test_issue21_item1_rotated_player_token_ends_its_streams_on_every_worker(live):
    server = live.start(workers=2)
    cid, gm, _ = live.campaign(server, "great-cosmos")
    with httpx.Client(base_url=server.url, timeout=10.0) as http:
        player = add_player(http, cid, gm)
        pid = http.get("/v1/me", headers=bearer(player)).json()["player_id"]
    with ExitStack() as stack:
        doomed = [_open(stack, server, cid, player, ticket=i % 2 == 1) for i in range(STREAMS_PER_TOKEN)]
        gm_stream = _open(stack, server, cid, gm)
        with httpx.Client(base_url=server.url, timeout=10.0) as http:
            r = http.post(f"/v1/campaigns/{cid}/players/{pid}/token/rotate", headers=bearer(gm))
            assert r.status_code == 200, r.text
        for stream in doomed:
            _ends_revoked(stream)
        _still_live(server, cid, gm, [gm_stream])
    with httpx.Client(base_url=server.url, timeout=10.0) as http:
        r = http.get(events_url(server, cid), params={"after": "0", "follow": "false"}, headers=bearer(player))
        assert r.status_code == 401, r.text


def test_issue21_item1_removed_player_and_rotated_gm_token_end_their_streams(live):
    server = live.start(workers=2)
    cid, gm, _ = live.campaign(server, "great-cosmos")
    with httpx.Client(base_url=server.url, timeout=10.0) as http:
        removed, kept = add_player(http, cid, gm, "Removed"), add_player(http, cid, gm, "Kept")
        pid = http.get("/v1/me", headers=bearer(removed)).json()["player_id"]
    with ExitStack() as stack:
        removed_streams = [_open(stack, server, cid, removed) for _ in range(2)]
        gm_streams = [_open(stack, server, cid, gm, ticket=i == 1) for i in range(STREAMS_PER_TOKEN)]
        kept_stream = _open(stack, server, cid, kept)
        with httpx.Client(base_url=server.url, timeout=10.0) as http:
            r = http.delete(f"/v1/campaigns/{cid}/players/{pid}", headers=bearer(gm))
            assert r.status_code == 204, r.text
        for stream in removed_streams:
            _ends_revoked(stream)
        for stream in (kept_stream, *gm_streams):  # the others hear of it, on either worker, and go on
            frame = stream.next_event()
            assert (frame["event"], json.loads(frame["data"])) == ("player.deleted", {"id": pid}), frame
        _still_live(server, cid, gm, [kept_stream, *gm_streams])
        with httpx.Client(base_url=server.url, timeout=10.0) as http:
            r = http.post(f"/v1/campaigns/{cid}/gm-token/rotate", headers=bearer(gm))
            assert r.status_code == 200, r.text
            new_gm = r.json()["gm_token"]
        for stream in gm_streams:  # the old GM token's streams (which would get hidden rolls) end
            _ends_revoked(stream)
        _still_live(server, cid, new_gm, [kept_stream])


def test_issue21_item1_deleted_campaign_ends_every_stream(live):
    server = live.start(workers=2)
    cid, gm, _ = live.campaign(server, "asgard")
    with httpx.Client(base_url=server.url, timeout=10.0) as http:
        player = add_player(http, cid, gm)
    with ExitStack() as stack:
        streams = [
            _open(stack, server, cid, token, ticket=i % 2 == 1) for i, token in enumerate([gm, gm, player, player])
        ]
        with httpx.Client(base_url=server.url, timeout=10.0) as http:
            r = http.delete(f"/v1/campaigns/{cid}", headers=bearer(gm))
            assert r.status_code == 204, r.text
        for stream in streams:
            _ends_revoked(stream)
