"""Fixtures many modules share (registered by tests/conftest.py's `pytest_plugins`), built on
its factories: a campaign of the module's ruleset, its players Alice and Bob, and a hero of
that campaign. A module says only what differs, by overriding one small fixture (`ruleset`,
`campaign_options`, `hero_sheet`, `hero_owner`), instead of redefining the whole chain."""

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
