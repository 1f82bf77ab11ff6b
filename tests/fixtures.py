"""Fixtures many modules share (registered by tests/conftest.py's `pytest_plugins`), built on
its factories: a campaign of the module's ruleset, its players Alice and Bob, and a hero of
that campaign. A module says only what differs, by overriding one small fixture (`ruleset`,
`campaign_options`, `hero_sheet`, `hero_owner`), instead of redefining the whole chain.

And the fight `table` (a campaign of a ruleset with its GM, Alice and Bob, and helpers for an
encounter's routes), shared by the encounter tests of every ruleset; a module with a `table` of
its own keeps it (a module's fixture wins over this one)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import GC, sheet


@pytest.fixture
def ruleset() -> str:
    """The campaign's ruleset: great-cosmos unless the module overrides or parametrizes it."""
    return GC


@pytest.fixture
def campaign_options() -> dict[str, Any] | None:
    """The campaign's options: the ruleset's defaults unless the module overrides this."""
    return None


@pytest.fixture
def campaign(campaign_factory, ruleset: str, campaign_options: dict[str, Any] | None):
    return campaign_factory(ruleset, campaign_options)


@pytest.fixture
def alice(campaign, player_factory):
    return player_factory(campaign, "Alice")


@pytest.fixture
def bob(campaign, player_factory):
    return player_factory(campaign, "Bob")


@pytest.fixture
def hero_sheet(ruleset: str) -> dict[str, Any]:
    """The hero's sheet: the ruleset's valid one unless the module overrides this."""
    return sheet(ruleset)


@pytest.fixture
def hero_owner():
    """The player owning the hero: none (the GM's) unless the module overrides this with `alice`."""
    return None


@pytest.fixture
def hero(campaign, hero_sheet: dict[str, Any], hero_owner, character_factory) -> dict[str, Any]:
    """A character of the campaign, as `POST …/characters` answered it."""
    return character_factory(campaign, hero_sheet, player=hero_owner)


# --- the fight table (the encounter tests of every ruleset) ----------------------------------------


class Table:
    """One campaign of one ruleset: its GM, a player `alice` (owner) and `bob`, and helpers."""

    def __init__(self, client, campaign, players):
        self.client, self.c = client, campaign
        self.alice, self.bob = players
        self.gm = campaign.gm

    def character(self, name: str, sheet: dict, kind: str = "npc", player=None) -> str:
        body = {"name": name, "kind": kind, "sheet": sheet, **({"player_id": player.id} if player else {})}
        r = self.client.post(f"/v1/campaigns/{self.c.id}/characters", json=body, headers=self.gm)
        assert r.status_code == 201, r.text
        return r.json()["id"]

    def encounter(self, combatants: list[dict], options: dict | None = None) -> dict:
        body = {"name": "Ambush", "combatants": combatants, **({"options": options} if options else {})}
        r = self.client.post(f"/v1/campaigns/{self.c.id}/encounters", json=body, headers=self.gm)
        assert r.status_code == 201, r.text
        return r.json()

    def post(self, path: str, body: dict | None = None, headers=None, status: int = 201, **kw) -> dict:
        r = self.client.post(path, json=body, headers=headers or self.gm, **kw)
        assert r.status_code == status, r.text
        return r.json()

    def state(self, eid: str, headers=None) -> dict:
        r = self.client.get(f"/v1/encounters/{eid}", headers=headers or self.gm)
        assert r.status_code == 200, r.text
        assert r.headers["ETag"] == f'"{r.json()["version"]}"'
        return r.json()

    def start(self, eid: str, dice: list[int] | None = None, **body) -> dict:
        return self.post(f"/v1/encounters/{eid}/start", {**({"dice": dice} if dice is not None else {}), **body})

    def next_turn(self, eid: str, headers=None, status: int = 201, **body) -> dict:
        return self.post(f"/v1/encounters/{eid}/next-turn", body, headers=headers, status=status)

    def act(self, eid: str, body: dict, headers=None, status: int = 201) -> dict:
        return self.post(f"/v1/encounters/{eid}/actions", body, headers=headers, status=status)

    def sheet(self, character_id: str) -> dict:
        r = self.client.get(f"/v1/characters/{character_id}", headers=self.gm)
        assert r.status_code == 200, r.text
        return r.json()


@pytest.fixture
def table(client, campaign_factory, player_factory):
    def make(ruleset: str, options: dict | None = None) -> Table:
        c = campaign_factory(ruleset, options)
        return Table(client, c, (player_factory(c, "Alice"), player_factory(c, "Bob")))

    return make


def ids(state: dict) -> dict[str, str]:
    """combatant name -> id."""
    return {c["name"]: c["id"] for c in state["combatants"]}
