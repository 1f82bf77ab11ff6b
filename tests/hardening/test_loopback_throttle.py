"""Issue 25 item 12: `make run` on loopback is a developer's machine. Open campaign creation
is throttled per address, but not for a loopback address unless CAMPAIGN_THROTTLE_LOOPBACK."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.main import create_app

BODY = {"name": "x", "ruleset": "asgard"}
# `db_session`: the test database, migrated and emptied (the app opens its own sessions on it)


def _statuses(settings, address: str, runs: int, **changes) -> list[int]:
    app = create_app(settings.model_copy(update={"redis_url": None, "campaigns_per_hour_per_address": 3, **changes}))
    with TestClient(app, raise_server_exceptions=False, client=(address, 40000)) as client:
        return [client.post("/v1/campaigns", json=BODY).status_code for _ in range(runs)]


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "127.8.9.10"])
def test_a_loopback_address_is_not_throttled_by_default(settings, db_session, address):
    assert _statuses(settings, address, 6) == [201] * 6


def test_a_loopback_address_is_throttled_when_the_setting_says_so(settings, db_session):
    assert _statuses(settings, "127.0.0.1", 4, campaign_throttle_loopback=True) == [201, 201, 201, 429]


def test_any_other_address_is_still_throttled(settings, db_session):
    assert _statuses(settings, "192.168.1.20", 4) == [201, 201, 201, 429]
    assert _statuses(settings, "unknown", 4) == [201, 201, 201, 429]  # no peer address: not loopback
