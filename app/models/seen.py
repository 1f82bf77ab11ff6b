"""A player's version of an encounter: the count of the changes that player was told of.

The GM's `version` counts every change. A player's counts only the changes its stream was told
of (API.md, "Input and views"): a change it may not see (a hidden combatant's action, a
sheet edit a `status` fight shows as the same word) leaves its version, hence its ETag, as they
were (a 304 to `If-None-Match`), so hidden changes cannot be counted. The encounter keeps
`player_versions = {"players": n, "owners": {player_id: m}}`: `n` counts the changes told to
every player, `m` those told to that player alone (its own hidden combatant, its own exact pools
in a fight showing the others status words); a player's version is `n + m`. Both only grow, so a
player's version does too (clients may keep the highest)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

PlayerVersions = dict[str, Any]  # {"players": int, "owners": {player_id: int}}


def starting_at(version: int) -> PlayerVersions:
    """A new fight's (1), or one imported or migrated at `version`."""
    return {"players": version, "owners": {}}


def of(versions: Mapping[str, Any] | None, player_id: str | None, fallback: int) -> int:
    """This player's version (`fallback`, the GM's, for a value kept before players had theirs)."""
    if not versions:
        return fallback
    return int(versions["players"]) + int(versions["owners"].get(player_id or "", 0))


def bumped(versions: Mapping[str, Any], *, everyone: bool = False, owners: Iterable[str] = ()) -> PlayerVersions:
    """After a change told to every player (`everyone`) or to these players alone (`owners`); a new
    dict (the fight's save writes the encounter's fields that differ from those read)."""
    mine = dict(versions["owners"])
    if not everyone:
        for player_id in owners:
            mine[player_id] = mine.get(player_id, 0) + 1
    return {"players": versions["players"] + (1 if everyone else 0), "owners": mine}
