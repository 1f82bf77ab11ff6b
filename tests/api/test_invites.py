"""Joining a table with a link (API.md "Joining a table with a link"): the GM invites a player,
whoever opens the link first gets a credential of its own for that player (one per device); a
spent, expired or unknown code is the same 404; rotating the player's token or removing the
player revokes every credential it holds and its pending invitations."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy import text

from app.api.ratelimit import RateLimiter
from app.core.security import hash_token
from app.services.campaigns import qr_svg
from tests.api.support import assert_problem, bearer


def _invite(client, campaign, player, body=None) -> dict:
    r = client.post(f"/v1/campaigns/{campaign.id}/players/{player.id}/invites", json=body, headers=campaign.gm)
    assert r.status_code == 201, r.text
    return r.json()


def _accept(client, code: str):
    return client.post(f"/v1/invites/{code}/accept")


def test_an_invitation_gives_the_player_a_new_credential_once(client, campaign, player_factory, db_session, count_rows):
    alice = player_factory(campaign)
    before = datetime.now(UTC)
    invite = _invite(client, campaign, alice)
    assert set(invite) == {"code", "url", "expires_at", "qr_svg"}
    code = invite["code"]
    assert len(code) >= 43  # secrets.token_urlsafe(32): 256 random bits
    assert invite["url"] == f"http://testserver/join#{code}"  # the code in the fragment only
    expires = datetime.fromisoformat(invite["expires_at"])
    assert timedelta(minutes=59) < expires - before <= timedelta(hours=1, seconds=5)  # one hour by default
    stored = db_session.connection().execute(text("SELECT code_hash, player_id FROM invite")).all()
    assert [tuple(row) for row in stored] == [(hash_token(code), alice.id)]  # only its hash

    r = _accept(client, code)
    assert r.status_code == 201, r.text
    joined = r.json()
    assert joined["player_id"] == alice.id and joined["campaign_id"] == campaign.id
    assert joined["token"] != alice.token
    assert client.get("/v1/me", headers=bearer(joined["token"])).json() == {
        "campaign_id": campaign.id,
        "role": "player",
        "player_id": alice.id,
    }
    assert client.get("/v1/me", headers=alice.headers).status_code == 200  # the first device keeps its token
    # single use: the same link a second time is refused, as an unknown one
    spent, unknown = _accept(client, code), _accept(client, "x" * 43)
    assert_problem(spent, 404, "not-found")
    assert spent.json()["detail"] == unknown.json()["detail"]  # nothing tells a spent code from an unknown one
    assert count_rows("invite") == 0


def test_each_device_gets_its_own_credential(client, campaign, player_factory):
    alice = player_factory(campaign)
    tokens = {_accept(client, _invite(client, campaign, alice)["code"]).json()["token"] for _ in range(3)}
    assert len(tokens) == 3
    assert all(client.get("/v1/me", headers=bearer(t)).json()["player_id"] == alice.id for t in tokens)


def test_the_qr_code_is_an_svg_document(client, campaign, player_factory):
    svg = _invite(client, campaign, player_factory(campaign))["qr_svg"]
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg" and root.get("viewBox")
    assert "script" not in svg.lower()


def test_an_expired_invitation_is_the_same_404(client, campaign, player_factory, db_session):
    alice = player_factory(campaign)
    code = _invite(client, campaign, alice, {"expires_in": 60})["code"]
    db_session.connection().execute(
        text("UPDATE invite SET expires_at = :at"), {"at": datetime.now(UTC) - timedelta(seconds=1)}
    )
    db_session.commit()
    r = _accept(client, code)
    assert_problem(r, 404, "not-found")


def test_the_lifetime_is_at_most_seven_days(client, campaign, player_factory):
    alice = player_factory(campaign)
    url = f"/v1/campaigns/{campaign.id}/players/{alice.id}/invites"
    week = 7 * 24 * 3600
    invite = _invite(client, campaign, alice, {"expires_in": week})
    assert datetime.fromisoformat(invite["expires_at"]) - datetime.now(UTC) > timedelta(days=6, hours=23)
    for bad in (week + 1, 0, -5, "3600", 1.5, True):
        r = client.post(url, json={"expires_in": bad}, headers=campaign.gm)
        assert_problem(r, 422, "validation-error")
    assert_problem(client.post(url, json={"expires": 60}, headers=campaign.gm), 422, "validation-error")


def test_only_the_gm_invites_and_only_its_own_players(client, campaign, campaign_factory, player_factory):
    alice, bob = player_factory(campaign, "Alice"), player_factory(campaign, "Bob")
    url = f"/v1/campaigns/{campaign.id}/players/{alice.id}/invites"
    assert_problem(client.post(url, json={}), 401, "unauthorized")
    assert_problem(client.post(url, json={}, headers=alice.headers), 403, "forbidden")
    assert_problem(client.post(url, json={}, headers=bob.headers), 403, "forbidden")
    other = campaign_factory("great-cosmos", name="Ailleurs")
    assert_problem(client.post(url, json={}, headers=other.gm), 404, "not-found")
    stranger = player_factory(other, "Zoé")
    r = client.post(f"/v1/campaigns/{campaign.id}/players/{stranger.id}/invites", json={}, headers=campaign.gm)
    assert_problem(r, 404, "not-found")


def test_rotating_the_players_token_revokes_every_credential_and_invitation(client, campaign, player_factory):
    alice, bob = player_factory(campaign, "Alice"), player_factory(campaign, "Bob")
    phone = _accept(client, _invite(client, campaign, alice)["code"]).json()["token"]
    pending = _invite(client, campaign, alice)["code"]
    bobs = _accept(client, _invite(client, campaign, bob)["code"]).json()["token"]
    assert client.get("/v1/me", headers=bearer(phone)).status_code == 200  # remembered by this process
    r = client.post(f"/v1/campaigns/{campaign.id}/players/{alice.id}/token/rotate", headers=campaign.gm)
    assert r.status_code == 200, r.text
    assert_problem(client.get("/v1/me", headers=bearer(phone)), 401, "unauthorized")
    assert_problem(client.get("/v1/me", headers=alice.headers), 401, "unauthorized")
    assert _accept(client, pending).status_code == 404  # a pending link dies too
    assert client.get("/v1/me", headers=bearer(r.json()["token"])).json()["player_id"] == alice.id
    assert client.get("/v1/me", headers=bearer(bobs)).status_code == 200  # another player's are untouched


def test_removing_the_player_revokes_every_credential_and_invitation(client, campaign, player_factory, count_rows):
    alice = player_factory(campaign)
    phone = _accept(client, _invite(client, campaign, alice)["code"]).json()["token"]
    pending = _invite(client, campaign, alice)["code"]
    assert client.get("/v1/me", headers=bearer(phone)).status_code == 200
    assert client.delete(f"/v1/campaigns/{campaign.id}/players/{alice.id}", headers=campaign.gm).status_code == 204
    assert_problem(client.get("/v1/me", headers=bearer(phone)), 401, "unauthorized")
    assert _accept(client, pending).status_code == 404
    assert count_rows("credential", player_id=alice.id) == 0 and count_rows("invite", player_id=alice.id) == 0


def test_deleting_the_campaign_deletes_its_invitations(client, campaign, player_factory, count_rows):
    alice = player_factory(campaign)
    pending = _invite(client, campaign, alice)["code"]
    assert client.delete(f"/v1/campaigns/{campaign.id}", headers=campaign.gm).status_code == 204
    assert count_rows("invite", campaign_id=campaign.id) == 0
    assert _accept(client, pending).status_code == 404


def test_failed_accepts_count_as_failed_authentications(app, client, settings, campaign, player_factory):
    """The accept takes no token: guessing codes is throttled like guessing tokens (429 once an
    address is over AUTH_FAILURES_PER_MINUTE), and a good code from that address waits too."""
    app.state.rate_limiter = RateLimiter(settings.model_copy(update={"auth_failures_per_minute": 2}))
    code = _invite(client, campaign, player_factory(campaign))["code"]
    with TestClient(app, raise_server_exceptions=False, client=("203.0.113.8", 4000)) as guesser:
        for guess in ("a" * 43, "b" * 43):
            assert guesser.post(f"/v1/invites/{guess}/accept").status_code == 404
        r = guesser.post(f"/v1/invites/{code}/accept")
        assert r.status_code == 429, r.text
        assert guesser.get("/v1/me", headers={"Authorization": "Bearer nope"}).status_code == 429
    assert _accept(client, code).status_code == 201  # not spent by the refusal; another address is not held


def test_public_url_makes_the_invitations_link_behind_a_proxy(client, app, campaign, player_factory):
    """Behind a reverse proxy the request's own address is the proxy's view of it (an inner host,
    another scheme): PUBLIC_URL says where players reach the service, path prefix included."""
    alice = player_factory(campaign)
    app.state.settings = app.state.settings.model_copy(update={"public_url": "https://table.example/jdr"})
    invite = _invite(client, campaign, alice)
    assert invite["url"] == f"https://table.example/jdr/join#{invite['code']}"
    assert invite["qr_svg"] == qr_svg(invite["url"])  # the QR code is of that link


def test_public_url_is_an_http_address_with_no_query_nor_fragment():
    from pydantic import ValidationError

    from app.core.config import Settings

    assert Settings(public_url="https://table.example/").public_url == "https://table.example"
    assert Settings(public_url="").public_url is None
    for wrong in ("ftp://table.example", "table.example", "https://", "https://t.example/?a=1", "https://t.example/#x"):
        try:
            Settings(public_url=wrong)
        except ValidationError as e:
            assert "public_url" in str(e)
        else:
            raise AssertionError(f"{wrong!r} accepted")
