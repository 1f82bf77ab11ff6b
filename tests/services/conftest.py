"""Fixtures of the service-level tests."""

from __future__ import annotations

import pytest
from sqlalchemy import insert
from sqlmodel import Session

from app.models.tables import Campaign, Character, new_id, utcnow

from tests.factories import GC_MINIMAL as GC_SHEET  # noqa: E402  (the one home of test data)


@pytest.fixture
def committed(database):
    """A great-cosmos campaign and a character committed for real (sessions bound to the engine,
    as a request's are: a batch may then carry the COMMIT; `database` empties it afterwards):
    (campaign, character)."""
    cid, hero = new_id(), new_id()
    now = utcnow()
    with Session(database) as s:
        conn = s.connection()
        conn.execute(
            insert(Campaign.__table__),
            {
                "id": cid,
                "name": "Hot",
                "ruleset": "great-cosmos",
                "options": {},
                "version": 1,
                "created_at": now,
                "updated_at": now,
            },
        )
        conn.execute(
            insert(Character.__table__),
            {
                "id": hero,
                "campaign_id": cid,
                "player_id": None,
                "name": "Aiko",
                "kind": "pc",
                "sheet": GC_SHEET,
                "version": 1,
                "created_at": now,
                "updated_at": now,
            },
        )
        s.commit()
    return cid, hero
