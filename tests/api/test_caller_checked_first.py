"""Issue 16: `POST …/tests` checks a remembered caller's credential in its first round trip,
with the campaign and the character (a `remembered` principal handed to `RollingWork(lock=…)`), instead
of a round trip of its own. A credential gone behind this process's back (another worker
rotated it) is still refused first: 401 before any 404, 403, 422 or idempotent replay, and
nothing is written."""

from __future__ import annotations

from sqlalchemy import delete

from app.core.security import hash_token
from app.models.tables import Credential
from tests.api.support import assert_problem
from tests.factories import GC_MINIMAL


def _revoke_elsewhere(db_session, token: str) -> None:
    """The credential deleted as another worker would: this process still remembers it."""
    db_session.execute(delete(Credential).where(Credential.token_hash == hash_token(token)))
    db_session.commit()


def test_a_test_by_a_caller_whose_credential_is_gone_is_401_and_writes_nothing(
    client, campaign, player_factory, character_factory, db_session, count_rows
):
    alice = player_factory(campaign)
    hero = character_factory(campaign, GC_MINIMAL, player=alice)
    url = f"/v1/characters/{hero['id']}/tests"
    assert client.post(url, json={"stat": "force"}, headers=alice.headers).status_code == 201  # remembered
    logged = count_rows("roll_log")
    _revoke_elsewhere(db_session, alice.token)
    assert_problem(client.post(url, json={"stat": "force"}, headers=alice.headers), 401, "unauthorized")
    assert count_rows("roll_log") == logged


def test_401_comes_before_404_403_and_422(client, campaign, player_factory, character_factory, db_session):
    alice, bob = player_factory(campaign, "Alice"), player_factory(campaign, "Bob")
    hero = character_factory(campaign, GC_MINIMAL, player=alice)
    assert (
        client.post(f"/v1/characters/{hero['id']}/tests", json={"stat": "force"}, headers=bob.headers).status_code
        == 403
    )  # bob is remembered now
    _revoke_elsewhere(db_session, bob.token)
    for character_id, body in (
        (hero["id"], {"stat": "force"}),  # not bob's: was 403
        ("0" * 32, {"stat": "force"}),  # no such character: was 404
        (hero["id"], {"stat": "nope"}),
    ):  # invalid body: was 422
        assert_problem(
            client.post(f"/v1/characters/{character_id}/tests", json=body, headers=bob.headers), 401, "unauthorized"
        )


def test_an_idempotent_replay_is_not_given_to_a_caller_whose_credential_is_gone(
    client, campaign, player_factory, character_factory, db_session
):
    alice = player_factory(campaign)
    hero = character_factory(campaign, GC_MINIMAL, player=alice)
    url, headers = f"/v1/characters/{hero['id']}/tests", {**alice.headers, "Idempotency-Key": "k-1"}
    first = client.post(url, json={"stat": "force"}, headers=headers)
    assert first.status_code == 201
    assert client.post(url, json={"stat": "force"}, headers=headers).json() == first.json()  # replayed
    _revoke_elsewhere(db_session, alice.token)
    assert_problem(client.post(url, json={"stat": "force"}, headers=headers), 401, "unauthorized")
